//! Ragdolls tumbling down a flight of stairs (`signorini::scenes::ragdolls`): eleven bodies
//! each, held by ball joints with cones and twist limits (spine, neck, shoulders, hips) and
//! hinges with limits (elbows, knees). Every second it prints how far the joints have come
//! apart and how far past its limits the worst of them stands, each measured here from the
//! bodies' poses and the joints as they were described (independently of the solver's own
//! bookkeeping), and the kinetic energy left. The joints are soft
//! (`SolverSettings::joint_hertz`, 60 Hz at 4 substeps; `--substeps` for stiffer): a limb
//! wedged under a pile gives by millimetres and some tens of milliradians until it is freed.
//!
//! ```text
//! cargo run --release --example ragdoll                   # GPU if there is one, else CPU
//! cargo run --release --example ragdoll -- --cpu --ragdolls 64 --substeps 8
//! ```

mod common;

use std::time::Instant;

use clap::Parser;
use signorini::prelude::*;
use signorini::{JointHandle, JointKind};

#[derive(Parser)]
#[command(about = "Ragdolls of ball joints with cones and twist limits, and limited hinges, falling down stairs")]
struct Args {
    /// How many ragdolls, dropped in rows of eight above the stairs.
    #[arg(long, default_value_t = 16)]
    ragdolls: usize,
    /// Steps of 1/60 s to simulate.
    #[arg(long, default_value_t = 480)]
    steps: u32,
    /// Substeps a step (`SolverSettings::substeps`). The joints' stiffness is a quarter of the
    /// substep rate (`SolverSettings::joint_hertz`, at most): a joint under a load `F` gives by
    /// about `F / (m ω²)` for `ω = 2π hertz` and the lighter side's mass `m`.
    #[arg(long, default_value_t = 4)]
    substeps: u32,
    /// Use the CPU reference solver even when a GPU is available.
    #[arg(long)]
    cpu: bool,
}

/// What a joint should hold, in its bodies' frames, to measure it from their poses.
struct Held {
    a: BodyHandle,
    b: BodyHandle,
    /// The anchor in A's and B's frames.
    anchor_a: Vec3,
    anchor_b: Vec3,
    /// The axis (a cone's or a hinge's) in A's frame and B's.
    axis_a: Vec3,
    axis_b: Vec3,
    /// B's orientation relative to A's where the joint was added, `q_a⁻¹ q_b`.
    rest: Quat,
    /// A cone's half angle (none for a hinge, whose axes stay together).
    cone: Option<f32>,
    /// The limits of the turn about the axis: a ball joint's twist, a hinge's angle.
    turn: [f32; 2],
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    env_logger::init();
    let args = Args::parse();
    let mut desc = WorldDesc::default();
    desc.solver.substeps = args.substeps;
    desc.solver.joint_hertz = 0.25 * args.substeps as f32 / desc.dt;
    let world = signorini::scenes::ragdolls(desc, args.ragdolls)?;
    let held =
        (0..world.joint_count()).map(|k| held(&world, JointHandle::from_index(k))).collect::<Result<Vec<_>, _>>()?;

    let (mut solver, _) = common::solver(&world, args.cpu)?;
    println!("backend: {}", solver.backend());
    println!(
        "{} ragdolls: {} bodies, {} joints (per ragdoll: 6 ball joints with cones and twist limits, 4 limited hinges)",
        args.ragdolls,
        world.body_count(),
        held.len()
    );
    let dt = world.desc().dt;
    let started = Instant::now();
    let mut worst = (0.0_f32, 0.0_f32);
    for step in 1..=args.steps {
        solver.step();
        if step % 60 == 0 || step == args.steps {
            let states = solver.body_states()?;
            let (apart, past) = measure(&held, &states);
            worst = (worst.0.max(apart), worst.1.max(past));
            let stats = solver.stats()?;
            println!(
                "t = {:4.1} s: joints apart by at most {:5.2} mm, past a limit by at most {:6.2} mrad; \
                 kinetic energy {:8.2} J, {} contacts",
                step as f32 * dt,
                apart * 1e3,
                past * 1e3,
                stats.kinetic_energy,
                stats.contacts
            );
        }
    }
    println!(
        "worst over the run: {:.2} mm apart, {:.2} mrad past a limit; {:.2} ms a step on {} (wall clock, with the readbacks)",
        worst.0 * 1e3,
        worst.1 * 1e3,
        started.elapsed().as_secs_f64() * 1e3 / f64::from(args.steps),
        solver.backend()
    );
    Ok(())
}

/// What joint `joint` of `world` holds, from its description and its bodies' initial poses.
fn held(world: &World, joint: JointHandle) -> Result<Held, signorini::Error> {
    let j = world.joint(joint)?;
    let (a, b) = (world.body(j.body_a)?, world.body(j.body_b)?);
    let (axis, cone, turn) = match (j.kind, j.cone) {
        (JointKind::Revolute { axis }, _) => {
            (axis, None, j.limits.unwrap_or([-std::f32::consts::PI, std::f32::consts::PI]))
        }
        (_, Some(cone)) => {
            (cone.axis, Some(cone.half_angle), j.twist.unwrap_or([-std::f32::consts::PI, std::f32::consts::PI]))
        }
        _ => (Vec3::X, Some(std::f32::consts::PI), [-std::f32::consts::PI, std::f32::consts::PI]),
    };
    Ok(Held {
        a: j.body_a,
        b: j.body_b,
        anchor_a: a.orientation.inverse() * (j.anchor - a.position),
        anchor_b: b.orientation.inverse() * (j.anchor - b.position),
        axis_a: a.orientation.inverse() * axis,
        axis_b: b.orientation.inverse() * axis,
        rest: a.orientation.inverse() * b.orientation,
        cone,
        turn,
    })
}

/// The largest distance between a joint's two anchors, m, and the largest angle by which a
/// joint stands past one of its limits (a cone's, a twist's, a hinge's; for a hinge, also how
/// far its axes have parted), rad.
fn measure(held: &[Held], states: &[BodyState]) -> (f32, f32) {
    let (mut apart, mut past) = (0.0_f32, 0.0_f32);
    for h in held {
        let (sa, sb) = (states[h.a.index()], states[h.b.index()]);
        let gap = (sa.position + sa.orientation * h.anchor_a) - (sb.position + sb.orientation * h.anchor_b);
        apart = apart.max(gap.length());
        let (axis_a, axis_b) = (sa.orientation * h.axis_a, sb.orientation * h.axis_b);
        let swing = axis_a.dot(axis_b).clamp(-1.0, 1.0).acos();
        past = past.max(swing - h.cone.unwrap_or(0.0));
        // B's turn relative to A since the joint was added, in A's frame; its twist about the
        // axis is the turn left once the swing that carries the axis is taken out.
        let turn = sa.orientation.inverse() * sb.orientation * h.rest.inverse();
        let along = turn.xyz().dot(h.axis_a);
        let mut twist = 2.0 * along.atan2(turn.w);
        if twist > std::f32::consts::PI {
            twist -= std::f32::consts::TAU;
        } else if twist < -std::f32::consts::PI {
            twist += std::f32::consts::TAU;
        }
        past = past.max(h.turn[0] - twist).max(twist - h.turn[1]);
    }
    (apart, past)
}
