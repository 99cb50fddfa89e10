//! Without an adapter, creating a GPU context is a typed error that says how to get one.
//! (Its own test binary: it changes the process environment.)

use signorini::{Error, GpuContext};

#[test]
fn no_matching_adapter_is_a_typed_error_with_advice() {
    // SAFETY: this binary has a single test and no other threads read the environment.
    unsafe { std::env::set_var("WGPU_ADAPTER_NAME", "no adapter has this name 4f1c") };
    match GpuContext::new() {
        Err(e @ Error::NoAdapter { .. }) => {
            let message = e.to_string();
            assert!(message.contains("mesa-vulkan-drivers"), "{message}");
            assert!(message.contains("WGPU_BACKEND"), "{message}");
            assert!(message.contains("CPU backend"), "{message}");
        }
        Err(e) => panic!("wrong error: {e}"),
        Ok(ctx) => panic!("found an adapter named like that: {}", ctx.adapter()),
    }
}
