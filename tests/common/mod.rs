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

/// The linear momentum (kg m/s) and the angular momentum about the origin (kg m²/s) of `bodies`
/// of `world` in `states`.
pub fn momentum(world: &World, bodies: &[BodyHandle], states: &[BodyState]) -> (Vec3, Vec3) {
    let (mut p, mut l) = (Vec3::ZERO, Vec3::ZERO);
    for &h in bodies {
        let mp = world.mass_properties(h).unwrap();
        let s = states[h.index()];
        let r = glam::Mat3::from_quat(s.orientation);
        let com = s.position + s.orientation * mp.local_center_of_mass;
        p += mp.mass * s.linear_velocity;
        l += com.cross(mp.mass * s.linear_velocity) + r * mp.local_inertia() * r.transpose() * s.angular_velocity;
    }
    (p, l)
}

/// Two GPU runs that should end alike: the same bits on a software adapter (where both
/// pipelines round alike), and on a hardware one, whose compiler may contract the same
/// arithmetic differently in two kernels, positions within `position` m and linear velocities
/// within `velocity` m/s. `what` names the comparison.
pub fn assert_gpu_runs_agree(
    ctx: &GpuContext,
    a: &[BodyState],
    b: &[BodyState],
    what: &str,
    position: f32,
    velocity: f32,
) {
    assert_eq!(a.len(), b.len(), "{what}: body counts");
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        if ctx.adapter().software {
            assert_eq!(x, y, "{what}: body {i}");
        } else {
            let (dp, dv) = (x.position.distance(y.position), x.linear_velocity.distance(y.linear_velocity));
            assert!(dp < position && dv < velocity, "{what}: body {i}: {dp} m, {dv} m/s apart");
        }
    }
}
