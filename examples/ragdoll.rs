//! Ragdolls tumbling down a flight of stairs: eleven bodies each, held by ball joints with
//! cones and twist limits (spine, neck, shoulders, hips) and hinges with limits (elbows,
//! knees). Every second it prints how far the joints have come apart and how far past its
//! limits the worst of them stands, each measured here from the bodies' poses (independently
//! of the solver's own bookkeeping), and the kinetic energy left. The joints are soft
//! (`SolverSettings::joint_hertz`, 60 Hz at 4 substeps; `--substeps` for stiffer): a limb
//! wedged under a pile gives by millimetres and some tens of milliradians until it is freed.
//!
//! ```text
//! cargo run --release --example ragdoll                   # GPU if there is one, else CPU
//! cargo run --release --example ragdoll -- --cpu --ragdolls 64
//! ```

mod common;

use std::f32::consts::FRAC_PI_2;
use std::time::Instant;

use clap::Parser;
use signorini::prelude::*;

#[derive(Parser)]
#[command(about = "Ragdolls of ball joints with cones and twist limits, and limited hinges, falling down stairs")]
struct Args {
    /// How many ragdolls, dropped in rows of eight above the stairs.
    #[arg(long, default_value_t = 16)]
    ragdolls: u32,
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

/// What a joint should hold, kept here to measure it from the bodies' poses.
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

/// One body's initial pose, kept with its handle.
#[derive(Clone, Copy)]
struct Part {
    body: BodyHandle,
    position: Vec3,
    orientation: Quat,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    env_logger::init();
    let args = Args::parse();
    let mut desc = WorldDesc::default();
    desc.solver.substeps = args.substeps;
    desc.solver.joint_hertz = 0.25 * args.substeps as f32 / desc.dt;
    let mut world = World::new(desc)?;
    world.add_plane(Plane::new(Vec3::Y, 0.0).friction(0.7))?;
    // Ten steps, each 0.3 m high and 0.6 m deep, going down towards +z, 16 m wide.
    for k in 0..10 {
        let top = 3.0 - 0.3 * k as f32;
        world.add_body(
            RigidBodyDesc::fixed(Shape::cuboid(Vec3::new(8.0, 0.5 * top, 0.3)))
                .position(Vec3::new(0.0, 0.5 * top, 0.6 * k as f32))
                .friction(0.7),
        )?;
    }

    let mut held = Vec::new();
    for n in 0..args.ragdolls {
        let (row, column) = (n / 8, n % 8);
        let at = Vec3::new(-6.125 + 1.75 * column as f32, 4.2 + 2.2 * row as f32, 0.0);
        // A turn about the vertical and a tumble, different for each, so that they land apart.
        let spin = Vec3::new(0.5 * (n % 3) as f32 - 0.5, 0.3 * (n % 5) as f32, 1.5 + 0.25 * (n % 4) as f32);
        add_ragdoll(&mut world, &mut held, at, spin)?;
    }

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

/// Adds one ragdoll standing in a T-pose with its pelvis at `at`, facing +z, turning at `spin`.
fn add_ragdoll(world: &mut World, held: &mut Vec<Held>, at: Vec3, spin: Vec3) -> Result<(), Error> {
    let mut part = |shape: Shape, mass: f32, offset: Vec3, orientation: Quat| -> Result<Part, Error> {
        let position = at + offset;
        let body = world.add_body(
            RigidBodyDesc::dynamic(shape)
                .mass(mass)
                .position(position)
                .orientation(orientation)
                .angular_velocity(spin)
                .linear_velocity(spin.cross(offset))
                .friction(0.7),
        )?;
        Ok(Part { body, position, orientation })
    };
    let upright = Quat::IDENTITY;
    // Capsules lie along their local y: the arms are turned to lie along x.
    let sideways = Quat::from_rotation_z(FRAC_PI_2);
    let pelvis = part(Shape::cuboid(Vec3::new(0.15, 0.1, 0.1)), 10.0, Vec3::ZERO, upright)?;
    let chest = part(Shape::cuboid(Vec3::new(0.18, 0.2, 0.1)), 15.0, Vec3::new(0.0, 0.31, 0.0), upright)?;
    let head = part(Shape::sphere(0.11), 5.0, Vec3::new(0.0, 0.64, 0.0), upright)?;
    let mut joints = vec![
        // Spine and neck: swing within a cone about the vertical, little twist.
        (pelvis, chest, Vec3::new(0.0, 0.1, 0.0), Vec3::Y, Some(0.35), [-0.4, 0.4]),
        (chest, head, Vec3::new(0.0, 0.52, 0.0), Vec3::Y, Some(0.6), [-0.9, 0.9]),
    ];
    for side in [1.0_f32, -1.0] {
        let upper_arm = part(Shape::capsule(0.1, 0.05), 2.0, Vec3::new(side * 0.35, 0.45, 0.0), sideways)?;
        let forearm = part(Shape::capsule(0.1, 0.045), 1.5, Vec3::new(side * 0.66, 0.45, 0.0), sideways)?;
        let thigh = part(Shape::capsule(0.14, 0.06), 6.0, Vec3::new(side * 0.1, -0.3, 0.0), upright)?;
        let shin = part(Shape::capsule(0.15, 0.05), 4.0, Vec3::new(side * 0.1, -0.7, 0.0), upright)?;
        // Shoulder: a wide cone about the arm's line; elbow: bends forward (towards +z) only,
        // about the vertical; hip: a cone about the leg's line; knee: bends backward only.
        joints.push((chest, upper_arm, Vec3::new(side * 0.2, 0.45, 0.0), Vec3::X * side, Some(1.3), [-0.8, 0.8]));
        let elbow = if side > 0.0 { [-2.4, 0.0] } else { [0.0, 2.4] };
        joints.push((upper_arm, forearm, Vec3::new(side * 0.505, 0.45, 0.0), Vec3::Y, None, elbow));
        joints.push((pelvis, thigh, Vec3::new(side * 0.1, -0.1, 0.0), -Vec3::Y, Some(1.1), [-0.5, 0.5]));
        joints.push((thigh, shin, Vec3::new(side * 0.1, -0.5, 0.0), Vec3::X, None, [0.0, 2.4]));
    }
    for (a, b, offset, axis, cone, [lower, upper]) in joints {
        let anchor = at + offset;
        let desc = match cone {
            Some(half_angle) => JointDesc::spherical(a.body, b.body, anchor).cone(axis, half_angle).twist(lower, upper),
            None => JointDesc::revolute(a.body, b.body, anchor, axis).limits(lower, upper),
        };
        world.add_joint(desc)?;
        held.push(Held {
            a: a.body,
            b: b.body,
            anchor_a: a.orientation.inverse() * (anchor - a.position),
            anchor_b: b.orientation.inverse() * (anchor - b.position),
            axis_a: a.orientation.inverse() * axis,
            axis_b: b.orientation.inverse() * axis,
            rest: a.orientation.inverse() * b.orientation,
            cone,
            turn: [lower, upper],
        });
    }
    Ok(())
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
