//! Helpers shared by the integration tests: the GPU context and running a check on both backends.
#![allow(dead_code)]

use std::sync::OnceLock;

use signorini::prelude::*;

/// The shared GPU context, or `None` on a machine without an adapter. With
/// `SIGNORINI_REQUIRE_GPU=1` (CI sets it) a missing adapter fails the test instead.
pub fn gpu() -> Option<&'static GpuContext> {
    static CONTEXT: OnceLock<Option<GpuContext>> = OnceLock::new();
    CONTEXT
        .get_or_init(|| match GpuContext::new() {
            Ok(ctx) => {
                eprintln!("GPU tests run on {}", ctx.adapter());
                Some(ctx)
            }
            Err(e) => {
                if std::env::var("SIGNORINI_REQUIRE_GPU").is_ok_and(|v| v == "1") {
                    panic!("SIGNORINI_REQUIRE_GPU=1 but no GPU adapter: {e}");
                }
                eprintln!("\n!!!!!!!! GPU TESTS SKIPPED: no adapter ({e}) !!!!!!!!\n");
                None
            }
        })
        .as_ref()
}

/// Solvers for `world` on every available backend: the CPU always, the GPU when there is one.
pub fn solvers(world: &World) -> Vec<Box<dyn Solver>> {
    let mut out: Vec<Box<dyn Solver>> = vec![Box::new(CpuSolver::new(world).expect("cpu solver"))];
    if let Some(ctx) = gpu() {
        out.push(Box::new(GpuSolver::new(ctx, world).expect("gpu solver")));
    }
    out
}

/// A world with default settings and the given gravity.
pub fn world_with(gravity: Vec3) -> World {
    World::new(WorldDesc { gravity, ..WorldDesc::default() }).expect("valid settings")
}
