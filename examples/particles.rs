//! Particles poured into a bowl baked from a triangle mesh: a jittered block of particles falls
//! into a hemispherical bowl whose closed mesh is baked into a grid SDF, then heaps up in it,
//! with light wooden boxes and balls dropped on top that the particles push and that push the
//! particles.
//!
//! ```text
//! cargo run --release --example particles                          # GPU if there is one, else CPU
//! cargo run --release --example particles -- --particles 1000000 --steps 300
//! cargo run --release --example particles -- --cpu --particles 20000 --bodies 0
//! ```

mod common;

use std::time::Instant;

use clap::Parser;
use indicatif::{ProgressBar, ProgressStyle};
use signorini::prelude::*;
use signorini::scenes::{Lcg, bowl_mesh};
use signorini::sdf::GridSdf;

#[derive(Parser)]
#[command(about = "Pour particles into a mesh-baked SDF bowl and report speed and physics")]
struct Args {
    /// Number of particles (radius 5 mm).
    #[arg(long, default_value_t = 100_000)]
    particles: usize,
    /// Steps of 1/60 s to simulate.
    #[arg(long, default_value_t = 240)]
    steps: u32,
    /// Use the CPU reference solver even when a GPU is available.
    #[arg(long)]
    cpu: bool,
    /// Rigid bodies (boxes and balls of wood, 2 to 4 cm) dropped onto the particles.
    #[arg(long, default_value_t = 8)]
    bodies: usize,
    /// Steps recorded per submission.
    #[arg(long, default_value_t = 30)]
    batch: u32,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    env_logger::init();
    let args = Args::parse();
    let r = 0.005_f32;
    // A bowl with room for the particles twice over, baked from its mesh into 40 cells across.
    let radius = (3.0 * args.particles as f32 * (2.0 * r).powi(3) / std::f32::consts::PI).cbrt().max(0.2);
    let baking = Instant::now();
    let (vertices, triangles) = bowl_mesh(radius, 0.05 * radius, 48, 16);
    let bowl = GridSdf::from_mesh(&vertices, &triangles, radius / 20.0)?;
    println!(
        "bowl of radius {radius:.3} m: {} triangles baked into {} samples ({:.1} MB) in {:.2} s",
        triangles.len(),
        bowl.values().len(),
        bowl.bytes() as f64 / 1e6,
        baking.elapsed().as_secs_f64()
    );
    let mut world = World::new(WorldDesc {
        particles: ParticleSettings { material: Material::new(0.5, 0.1), ..ParticleSettings::default() },
        ..WorldDesc::default()
    })?;
    world.add_sdf(SdfCollider::new(Sdf::grid(bowl)))?;
    // A square column of jittered layers over the bowl's middle.
    let spacing = 2.2 * r;
    let side = ((0.6 * radius / spacing) as usize).max(1);
    let mut rng = Lcg(1);
    world.add_particles((0..args.particles).map(|i| {
        let (layer, k) = (i / (side * side), i % (side * side));
        let x = Vec3::new(
            (k % side) as f32 * spacing - 0.3 * radius,
            0.05 + layer as f32 * spacing,
            (k / side) as f32 * spacing - 0.3 * radius,
        );
        Particle::new(x + Vec3::new(rng.next_centered(), 0.0, rng.next_centered()) * 0.2 * r, r)
    }))?;
    let column_top = 0.05 + (args.particles / (side * side)) as f32 * spacing;
    let bodies: Vec<BodyHandle> = (0..args.bodies)
        .map(|k| {
            let size = rng.range(0.01, 0.02);
            let shape = if k % 2 == 0 { Shape::cuboid(Vec3::splat(size)) } else { Shape::sphere(size) };
            let x = Vec3::new(
                rng.range(-0.25, 0.25) * radius,
                column_top + 0.1 + 0.05 * k as f32,
                rng.range(-0.25, 0.25) * radius,
            );
            world.add_body(RigidBodyDesc::dynamic(shape).density(400.0).position(x).orientation(rng.rotation()))
        })
        .collect::<Result<_, _>>()?;
    let (mut solver, _) = common::solver(&world, args.cpu)?;
    println!(
        "backend: {}; {} particles, {} bodies, {} steps",
        solver.backend(),
        world.particle_count(),
        bodies.len(),
        args.steps
    );
    let bar = ProgressBar::new(args.steps as u64);
    bar.set_style(ProgressStyle::with_template("{bar:40} {pos}/{len} steps [{elapsed_precise}]")?);
    let start = Instant::now();
    let mut done = 0;
    while done < args.steps {
        let n = args.batch.min(args.steps - done);
        solver.step_many(n);
        solver.synchronize()?;
        done += n;
        bar.set_position(done as u64);
    }
    let seconds = start.elapsed().as_secs_f64();
    bar.finish_and_clear();
    println!("ms/step: {:.3} (wall clock)", 1e3 * seconds / args.steps as f64);
    let states = solver.particle_states()?;
    let finite = states.iter().all(|s| s.position.is_finite() && s.velocity.is_finite());
    let outside = states.iter().filter(|s| s.position.length() + r > radius + 0.01 * radius).count();
    let below_rim = states.iter().filter(|s| s.position.y < 0.0).count();
    let fastest = states.iter().map(|s| s.velocity.length()).fold(0.0_f32, f32::max);
    let top = states.iter().map(|s| s.position.y).fold(f32::MIN, f32::max);
    println!(
        "{} particles: {below_rim} below the rim, {outside} outside the bowl, heap top at {top:.3} m, \
         fastest {fastest:.3} m/s, all finite: {finite}",
        states.len()
    );
    if !bodies.is_empty() {
        let heights: Vec<f32> = solver.body_states()?.iter().map(|b| b.position.y).collect();
        let (low, high) = heights.iter().fold((f32::MAX, f32::MIN), |(l, h), &y| (l.min(y), h.max(y)));
        let dropped = solver.stats()?.particle_body_dropped;
        println!(
            "{} bodies between {low:.3} m and {high:.3} m high (heap top {top:.3} m); particle-body contacts dropped: {dropped}",
            bodies.len()
        );
    }
    Ok(())
}
