//! A program steering a body between steps: a 10 kg hovercraft held 1 m above uneven ground by
//! a thrust it sets every step (`Solver::set_force`), from the height a ray cast straight down
//! measures (`Solver::cast_ray`, its own collision group passed over), and flown across a
//! field of slabs and crates, into a tall crate that it shoves along. Halfway a gust strikes it from the side (`Solver::apply_impulse`); when it
//! has flown past the crates it is put back at the start (`Solver::set_pose`). Every half
//! second it prints its height above what is below it, its speed, and what it touches
//! (`Solver::contacts`): a demonstration of the calls a game or a controller makes, on the GPU
//! or the CPU alike.
//!
//! ```text
//! cargo run --release --example hover            # GPU if there is one, else CPU
//! cargo run --release --example hover -- --cpu
//! ```

mod common;

use clap::Parser;
use signorini::prelude::*;
use signorini::{Collidable, CollisionGroups};

#[derive(Parser)]
#[command(about = "A hovercraft held above uneven ground by a thrust set from a ray cast, every step")]
struct Args {
    /// Steps of 1/60 s to simulate.
    #[arg(long, default_value_t = 600)]
    steps: u32,
    /// Use the CPU reference solver even when a GPU is available.
    #[arg(long)]
    cpu: bool,
}

/// The hovercraft's own collision group, which its height ray passes over.
const CRAFT: u32 = 0b10;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    let mut world = World::new(WorldDesc::default())?;
    let g = -world.desc().gravity.y;
    world.add_plane(Plane::new(Vec3::Y, 0.0).friction(0.5))?;
    // Low static slabs to fly over, and loose crates to knock about.
    for k in 0..6 {
        let x = 4.0 + 3.0 * k as f32;
        world.add_body(
            RigidBodyDesc::fixed(Shape::cuboid(Vec3::new(0.8, 0.1 + 0.05 * k as f32, 3.0)))
                .position(Vec3::new(x, 0.0, 0.0)),
        )?;
        world.add_body(RigidBodyDesc::dynamic(Shape::cuboid(Vec3::splat(0.25))).mass(20.0).position(Vec3::new(
            x + 1.5,
            0.25,
            0.8 * (k as f32 - 2.5),
        )))?;
    }
    // And a tall one in its way, which it shoves along.
    world.add_body(
        RigidBodyDesc::dynamic(Shape::cuboid(Vec3::splat(0.6))).mass(30.0).position(Vec3::new(12.0, 0.6, 0.0)),
    )?;
    let (mass, target) = (10.0, 1.0);
    let start = Vec3::new(0.0, target + 0.1, 0.0);
    let craft = world.add_body(
        RigidBodyDesc::dynamic(Shape::cuboid(Vec3::new(0.6, 0.1, 0.4)))
            .mass(mass)
            .position(start)
            .damping(0.0, 2.0)
            .collision_groups(CollisionGroups { memberships: CRAFT, filter: u32::MAX }),
    )?;
    let (mut solver, _) = common::solver(&world, args.cpu)?;
    println!("a {mass} kg hovercraft held {target} m up on {}", solver.backend());
    let below = CollisionGroups { memberships: u32::MAX, filter: !CRAFT };
    // A stiff, well damped spring on the height: ω = 6 rad/s, damping ratio 1.
    let (stiffness, damping) = (mass * 36.0, mass * 12.0);
    let mut worst: f32 = 0.0;
    for step in 0..args.steps {
        let state = solver.body_state(craft)?;
        let height = match solver.cast_ray(state.position, -Vec3::Y, 10.0, below)? {
            Some(hit) => hit.distance,
            None => 10.0,
        };
        if step >= 60 {
            worst = worst.max((height - target).abs());
        }
        // Thrust: its weight, the spring towards the height, and a push forward to 4 m/s.
        let lift = mass * g + stiffness * (target - height) - damping * state.linear_velocity.y;
        let forward = 40.0 * (4.0 - state.linear_velocity.x);
        let sideways = -40.0 * state.linear_velocity.z - 100.0 * state.position.z;
        solver.set_force(craft, Vec3::new(forward, lift.max(0.0), sideways), Vec3::ZERO)?;
        if step == args.steps / 2 {
            println!("a gust strikes it from the side");
            solver.apply_impulse(craft, Vec3::new(0.0, 0.0, 20.0), state.position + Vec3::new(0.3, 0.05, 0.0))?;
        }
        if state.position.x > 24.0 {
            println!("past the crates: back to the start");
            solver.set_pose(craft, start, Quat::IDENTITY)?;
            solver.set_velocity(craft, Vec3::ZERO, Vec3::ZERO)?;
        }
        solver.step();
        if step % 30 == 29 {
            let mut touching: Vec<Collidable> = solver
                .contacts()?
                .iter()
                .filter(|c| c.force.length() > 0.0)
                .filter_map(|c| match (c.body == craft, c.with) {
                    (true, with) => Some(with),
                    (false, Collidable::Body(b)) if b == craft => Some(Collidable::Body(c.body)),
                    _ => None,
                })
                .collect();
            touching.sort();
            touching.dedup();
            println!(
                "t = {:4.1} s: {:.3} m above what is below, x = {:5.2} m, {:.2} m/s, touching {:?}",
                (step + 1) as f32 / 60.0,
                height,
                state.position.x,
                state.linear_velocity.length(),
                touching
            );
        }
    }
    println!("after the first second, its height strayed at most {worst:.3} m from {target} m (the tall crate)");
    Ok(())
}
