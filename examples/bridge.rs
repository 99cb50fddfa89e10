//! Joints at work: a bridge of ten planks welded end to end between two posts, with welds that
//! break under a bending moment, takes a column of crates of doubling mass falling onto its
//! middle, and gives way; beside it a lift, a platform on a slider driven up by a motor to its
//! upper limit, carries a crate. Prints each weld as it breaks, with the moment that broke it.
//!
//! ```text
//! cargo run --release --example bridge                   # GPU if there is one, else CPU
//! cargo run --release --example bridge -- --cpu
//! cargo run --release --example bridge -- --strength 6000     # weaker welds
//! ```

mod common;

use clap::Parser;
use signorini::prelude::*;
use signorini::{JointHandle, JointReaction};

#[derive(Parser)]
#[command(about = "Drop crates on a bridge of breakable welds until it gives way; lift a crate on a slider")]
struct Args {
    /// The moment each weld of the bridge bears before it breaks, N m.
    #[arg(long, default_value_t = 15_000.0)]
    strength: f32,
    /// Steps of 1/60 s to simulate.
    #[arg(long, default_value_t = 600)]
    steps: u32,
    /// Use the CPU reference solver even when a GPU is available.
    #[arg(long)]
    cpu: bool,
}

/// Planks across the gap, each 1 m long and 20 kg.
const PLANKS: usize = 10;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    env_logger::init();
    let args = Args::parse();
    let mut world = World::new(WorldDesc::default())?;
    world.add_plane(Plane::new(Vec3::Y, -6.0).friction(0.6))?;

    // The bridge: posts whose tops meet the planks' ends, and welds at every seam.
    let half_span = PLANKS as f32 / 2.0;
    let post = |world: &mut World, x: f32| {
        world.add_body(RigidBodyDesc::fixed(Shape::cuboid(Vec3::new(0.5, 3.0, 1.0))).position(Vec3::new(
            x,
            -3.0 - 0.05,
            0.0,
        )))
    };
    let (left, right) = (post(&mut world, -half_span - 0.5)?, post(&mut world, half_span + 0.5)?);
    let mut previous = left;
    let mut welds: Vec<(JointHandle, String)> = Vec::new();
    for k in 0..=PLANKS {
        let x = -half_span + k as f32;
        let next = if k == PLANKS {
            right
        } else {
            world.add_body(
                RigidBodyDesc::dynamic(Shape::cuboid(Vec3::new(0.5, 0.05, 1.0)))
                    .position(Vec3::new(x + 0.5, 0.0, 0.0))
                    .mass(20.0)
                    .friction(0.8),
            )?
        };
        let weld = JointDesc::fixed(previous, next, Vec3::new(x, 0.0, 0.0)).breaks_at(f32::INFINITY, args.strength);
        welds.push((world.add_joint(weld)?, format!("the weld at x = {x:+.0} m")));
        previous = next;
    }

    // A column of crates of 50, 100, 200, ... kg above the bridge's middle, the lowest 3 m up
    // and each 2 m above the last: they land one after another, from 0.72 s on.
    let crates: Vec<(BodyHandle, f32)> = (0..6)
        .map(|k| {
            let mass = 50.0 * 2f32.powi(k);
            let body = RigidBodyDesc::dynamic(Shape::cuboid(Vec3::splat(0.4)))
                .position(Vec3::new(0.0, 3.0 + 2.0 * k as f32, 0.0))
                .mass(mass)
                .friction(0.8);
            world.add_body(body).map(|b| (b, mass))
        })
        .collect::<Result<_, _>>()?;

    // The lift: a 10 kg platform on a vertical slider from a fixed pillar, its travel limited
    // to 0..3 m, driven up at 1 m/s with at most 2 kN; a 50 kg crate rides on it.
    let pillar =
        world.add_body(RigidBodyDesc::fixed(Shape::cuboid(Vec3::splat(0.2))).position(Vec3::new(9.0, -5.0, 0.0)))?;
    let platform_at = Vec3::new(10.0, -5.0, 0.0);
    let platform = world.add_body(
        RigidBodyDesc::dynamic(Shape::cuboid(Vec3::new(0.6, 0.05, 0.6))).position(platform_at).mass(10.0).friction(0.8),
    )?;
    let lift = world
        .add_joint(JointDesc::prismatic(pillar, platform, platform_at, Vec3::Y).limits(0.0, 3.0).motor(1.0, 2_000.0))?;
    let rider = world.add_body(
        RigidBodyDesc::dynamic(Shape::cuboid(Vec3::splat(0.3))).position(platform_at + Vec3::Y * 0.35).mass(50.0),
    )?;

    let (mut solver, _) = common::solver(&world, args.cpu)?;
    println!("backend: {}", solver.backend());
    println!(
        "a bridge of {PLANKS} planks on {} welds of {:.0} N m each, crates of 50 to 1,600 kg falling on it, and a lift",
        welds.len(),
        args.strength
    );
    let dt = world.desc().dt;
    let mut last: Vec<JointReaction> = solver.joint_reactions()?;
    let mut broken = 0;
    for step in 0..args.steps {
        let t = step as f32 * dt;
        solver.step();
        let now = solver.joint_reactions()?;
        for (joint, name) in &welds {
            let k = joint.index();
            if now[k].broken && !last[k].broken {
                broken += 1;
                println!(
                    "t = {:5.2} s: {name} broke, after a moment of {:.0} N m (its strength {:.0})",
                    t + dt,
                    last[k].torque.length(),
                    args.strength
                );
            }
        }
        last = now;
    }
    let states = solver.body_states()?;
    let height = states[platform.index()].position.y - platform_at.y;
    let rider_height = states[rider.index()].position.y - platform_at.y;
    let fell = crates.iter().filter(|(b, _)| states[b.index()].position.y < -4.0).count();
    println!(
        "after {:.1} s: {broken} of {} welds broke; {fell} of {} crates lie below the bridge",
        args.steps as f32 * dt,
        welds.len(),
        crates.len()
    );
    println!(
        "the lift's platform stands {height:.3} m up its slider (its upper limit 3 m), the crate {:.3} m above it, \
         the slider holding {:.0} N",
        rider_height - height,
        last[lift.index()].force.length()
    );
    Ok(())
}
