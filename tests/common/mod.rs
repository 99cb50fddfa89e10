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

/// Relative size of the kicks given to a CPU ensemble (see `kicked_ensemble`): the size of the difference the
/// GPU's rounding makes to a tumbling body's angular velocity before its first impact
/// (measured on lavapipe: 2e-6 rad/s on 2.4 rad/s).
pub const KICK: f32 = 1e-6;

/// CPU solvers whose initial velocities differ from the world's by `KICK` relative, each
/// member in a different component of the linear or angular velocity of every body. Bodies on
/// which these runs part from the unkicked one amplify rounding; the CPU-vs-GPU tests allow
/// only those bodies to disagree (see `cpu_and_gpu_agree_on_1000_falling_bodies`).
pub fn kicked_ensemble(world: &World) -> Vec<CpuSolver> {
    (0..6)
        .map(|k| {
            let mut solver = CpuSolver::new(world).unwrap();
            for (i, s) in solver.body_states().unwrap().iter().enumerate() {
                let (mut v, mut w) = (s.linear_velocity, s.angular_velocity);
                let x = if k < 3 { &mut v[k] } else { &mut w[k - 3] };
                *x += KICK * x.abs().max(1.0);
                solver.set_velocity(BodyHandle::from_index(i), v, w).unwrap();
            }
            solver
        })
        .collect()
}
