//! A sandpile's angle of repose: a cone of particles built steeper than its angle of repose
//! slumps (or, built below it, stands); the example prints the heap's profile (its height ring
//! by ring about the axis) and its mean slope, from the apex to the rim, before and after.
//!
//! The cone is built as an ordered face-centred cubic packing, whose lowest layers interlock:
//! after a slump they still stand steeper at the rim than a disordered heap would, so the
//! profile is concave and the mean slope lies below the slope at the foot.
//!
//! ```text
//! cargo run --release --example sandpile                          # GPU if there is one, else CPU
//! cargo run --release --example sandpile -- --cpu --slope 30      # a cone below the angle stands
//! cargo run --release --example sandpile -- --cpu --friction 0.2  # less friction, a flatter heap
//! ```
//!
//! Measured on the CPU (4 s, 2,798 particles): at friction 0.5 the 45 degree cone slumps to a
//! mean slope of 31.5 degrees (apex 23.3 -> 16.3 cm), and a 30 degree cone of 1,611 stands (29.1
//! degrees, its lattice's own, nothing faster than 0.3 mm/s); at friction 0.2 the 45 degree cone
//! spreads to 18.9 degrees.

mod common;

use std::time::Instant;

use clap::Parser;
use indicatif::{ProgressBar, ProgressStyle};
use signorini::ParticleState;
use signorini::prelude::*;
use signorini::scenes::particle_cone;

#[derive(Parser)]
#[command(about = "Let a cone of particles settle and measure the slope of the heap")]
struct Args {
    /// Slope of the cone as built, degrees.
    #[arg(long, default_value_t = 45.0)]
    slope: f32,
    /// Radius of the cone's base, m (particles of radius 1 cm).
    #[arg(long, default_value_t = 0.25)]
    base: f32,
    /// Friction coefficient of the particles (the floor's is 0.6; a contact takes the geometric
    /// mean of its two sides').
    #[arg(long, default_value_t = 0.5)]
    friction: f32,
    /// Seconds to simulate.
    #[arg(long, default_value_t = 4.0)]
    seconds: f32,
    /// Use the CPU reference solver even when a GPU is available.
    #[arg(long)]
    cpu: bool,
}

/// A heap's profile: the highest particle top in each ring two radii wide about the y axis, m.
fn profile(states: &[ParticleState], r: f32) -> Vec<f32> {
    let ring = |s: &ParticleState| (s.position.x.hypot(s.position.z) / (2.0 * r)) as usize;
    let mut top = vec![0.0_f32; states.iter().map(ring).max().map_or(0, |k| k + 1)];
    for s in states {
        top[ring(s)] = top[ring(s)].max(s.position.y + r);
    }
    top
}

/// A heap's apex, rim and mean slope from the one to the other, degrees, and its profile in cm.
fn describe(states: &[ParticleState], r: f32) -> String {
    let apex = states.iter().map(|s| s.position.y + r).fold(0.0_f32, f32::max);
    let rim = states.iter().map(|s| s.position.x.hypot(s.position.z) + r).fold(0.0_f32, f32::max);
    let cm: Vec<String> = profile(states, r).iter().map(|h| format!("{:.0}", 100.0 * h)).collect();
    format!(
        "apex {apex:.3} m, rim {rim:.3} m, mean slope {:.1} degrees; height by ring of 2 cm: {} cm",
        (apex / rim).atan().to_degrees(),
        cm.join(" ")
    )
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    env_logger::init();
    let args = Args::parse();
    let r = 0.01_f32;
    let mut world = World::new(WorldDesc {
        particles: ParticleSettings { material: Material::new(args.friction, 0.0), ..ParticleSettings::default() },
        ..WorldDesc::default()
    })?;
    world.add_plane(Plane::new(Vec3::Y, 0.0))?;
    world.add_particles(particle_cone(r, args.slope, args.base))?;
    let (mut solver, _) = common::solver(&world, args.cpu)?;
    println!(
        "backend: {}; {} particles of radius {r} m, friction {}, a cone built at {} degrees:\n  {}",
        solver.backend(),
        world.particle_count(),
        args.friction,
        args.slope,
        describe(&solver.particle_states()?, r)
    );
    let steps = (args.seconds * 60.0).round() as u32;
    let bar = ProgressBar::new(steps as u64);
    bar.set_style(ProgressStyle::with_template("{bar:40} {pos}/{len} steps [{elapsed_precise}]")?);
    let clock = Instant::now();
    for done in (0..steps).step_by(30) {
        solver.step_many((steps - done).min(30));
        solver.synchronize()?;
        bar.set_position((done + 30).min(steps) as u64);
    }
    bar.finish_and_clear();
    let end = solver.particle_states()?;
    let fastest = end.iter().map(|s| s.velocity.length()).fold(0.0_f32, f32::max);
    println!(
        "after {} s ({:.1} s of wall clock), fastest particle {fastest:.4} m/s:\n  {}",
        args.seconds,
        clock.elapsed().as_secs_f64(),
        describe(&end, r)
    );
    Ok(())
}
