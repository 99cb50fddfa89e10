//! What the examples share: the solver they run on.

use signorini::prelude::*;

/// The solver for `world`: the GPU's when there is an adapter and `cpu` is false (saying so
/// when the adapter is a software one, whose timings say nothing about a GPU), else the CPU
/// reference solver. Returns it and whether it runs on a software adapter.
pub fn solver(world: &World, cpu: bool) -> Result<(Box<dyn Solver>, bool), Box<dyn std::error::Error>> {
    if cpu {
        return Ok((Box::new(CpuSolver::new(world)?), false));
    }
    match GpuContext::new() {
        Ok(gpu) => {
            let software = gpu.adapter().software;
            if software {
                println!(
                    "note: {} is a software adapter: correct, but its timings say nothing about a GPU",
                    gpu.adapter()
                );
            }
            Ok((Box::new(GpuSolver::new(&gpu, world)?), software))
        }
        Err(e) => {
            println!("no GPU adapter ({e})\nrunning on the CPU reference solver instead");
            Ok((Box::new(CpuSolver::new(world)?), false))
        }
    }
}
