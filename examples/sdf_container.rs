//! Rigid bodies tumbling into a signed-distance-field container: a rain of mixed shapes into a
//! hemispherical bowl, analytic or baked from a triangle mesh into a grid.
//!
//! ```text
//! cargo run --release --example sdf_container                       # GPU if there is one, else CPU
//! cargo run --release --example sdf_container -- --cpu --bodies 500
//! cargo run --release --example sdf_container -- --baked            # the bowl baked from a mesh
//! ```

mod common;

use std::time::Instant;

use clap::Parser;
use indicatif::{ProgressBar, ProgressStyle};
use signorini::scenes::{bench_desc, bowl_rain};

#[derive(Parser)]
#[command(about = "Rain mixed bodies into an SDF bowl and report speed and physics")]
struct Args {
    /// Number of bodies.
    #[arg(long, default_value_t = 2_000)]
    bodies: usize,
    /// Steps of 1/60 s to simulate.
    #[arg(long, default_value_t = 600)]
    steps: u32,
    /// Bake the bowl from a triangle mesh into a grid SDF instead of the analytic field.
    #[arg(long)]
    baked: bool,
    /// Use the CPU reference solver even when a GPU is available.
    #[arg(long)]
    cpu: bool,
    /// Steps recorded per submission.
    #[arg(long, default_value_t = 30)]
    batch: u32,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    env_logger::init();
    let args = Args::parse();
    let baking = Instant::now();
    let (world, radius) = bowl_rain(bench_desc(), args.bodies, 1, args.baked)?;
    if args.baked {
        println!("bowl baked from its mesh in {:.2} s", baking.elapsed().as_secs_f64());
    }
    let (mut solver, _) = common::solver(&world, args.cpu)?;
    println!("backend: {}", solver.backend());
    println!(
        "{} bodies into a bowl of radius {radius:.2} m ({}), {} steps",
        world.body_count(),
        if args.baked { "grid baked from a mesh" } else { "analytic" },
        args.steps
    );
    let bar = ProgressBar::new(args.steps as u64);
    bar.set_style(ProgressStyle::with_template("{bar:40} {pos}/{len} steps {msg} [{elapsed_precise}]")?);
    let start = Instant::now();
    let mut done = 0;
    let mut stats = solver.stats()?;
    while done < args.steps {
        let n = args.batch.min(args.steps - done);
        solver.step_many(n);
        done += n;
        stats = solver.stats()?;
        bar.set_position(done as u64);
        bar.set_message(format!("KE {:.1} J, {} contacts", stats.kinetic_energy, stats.contacts));
    }
    let seconds = start.elapsed().as_secs_f64();
    bar.finish_and_clear();
    println!(
        "ms/step: {:.3} (wall clock, statistics readback every {} steps)",
        1e3 * seconds / args.steps as f64,
        args.batch
    );
    println!(
        "contacts {}, colors {}, overflow {}, max penetration {:.2e} m, kinetic energy {:.3} J",
        stats.contacts, stats.colors, stats.overflow, stats.max_penetration, stats.kinetic_energy
    );
    // Every body should be in the bowl: below its rim's top and within its inner sphere.
    let states = solver.body_states()?;
    let outside = states.iter().filter(|s| s.position.length() > radius + 0.05).count();
    let settled = states.iter().filter(|s| s.position.y < 0.0).count();
    println!("{settled} bodies below the rim, {outside} outside the bowl's inner sphere (should be 0 once settled)");
    Ok(())
}
