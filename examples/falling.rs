//! Runs a standard scene, by default 10,000 mixed bodies dropped onto a floor, and reports speed
//! and physics.
//!
//! ```text
//! cargo run --release --example falling                  # GPU if there is one, else CPU
//! cargo run --release --example falling -- --cpu         # the CPU reference solver
//! cargo run --release --example falling -- --bodies 100000 --steps 600
//! cargo run --release --example falling -- --scene large-pyramid        # 5,050 boxes
//! cargo run --release --example falling -- --scene rain --bodies 100000 # mixed shapes into a box
//! cargo run --release --example falling -- --steps 300 --save-snapshot run.json
//! cargo run --release --example falling -- --steps 300 --resume run.json   # on to step 602
//! ```

mod common;

use std::time::Instant;

use clap::Parser;
use indicatif::{ProgressBar, ProgressStyle};
use signorini::prelude::*;
use signorini::scenes::{FallingBodies, bench_desc, falling_bodies, joint_grid, pyramid, rain};

/// The scenes this example runs.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
enum Scene {
    /// `--bodies` mixed bodies dropped onto a floor from a grid.
    Falling,
    /// The pyramid of base 100: 5,050 boxes (`--bodies` ignored).
    LargePyramid,
    /// A rain of `--bodies` mixed shapes into a walled box.
    Rain,
    /// A 100 x 100 net of spheres on 19,701 ball joints, hanging from its top row
    /// (`--bodies` ignored).
    JointGrid,
}

#[derive(Parser)]
#[command(about = "Run a standard scene and report steps per second and physical statistics")]
struct Args {
    /// The scene.
    #[arg(long, value_enum, default_value_t = Scene::Falling)]
    scene: Scene,
    /// Number of bodies.
    #[arg(long, default_value_t = 10_000)]
    bodies: usize,
    /// Bodies meet only the planes, not each other.
    #[arg(long)]
    planes_only: bool,
    /// Steps of 1/60 s to simulate.
    #[arg(long, default_value_t = 300)]
    steps: u32,
    /// Use the CPU reference solver even when a GPU is available.
    #[arg(long)]
    cpu: bool,
    /// Worker threads of the CPU solver (default: one per core).
    #[arg(long)]
    cpu_threads: Option<u32>,
    /// Steps recorded per submission (the GPU runs them without a round trip to the CPU).
    #[arg(long, default_value_t = 30)]
    batch: u32,
    /// Also write the results as a JSON object to this file.
    #[arg(long)]
    json: Option<std::path::PathBuf>,
    /// A label stored in the JSON (e.g. the commit measured).
    #[arg(long, default_value = "")]
    label: String,
    /// Writes the solver's state at the end (a `signorini::Snapshot`, as JSON) to this file, to
    /// go on from with `--resume`.
    #[arg(long)]
    save_snapshot: Option<std::path::PathBuf>,
    /// Goes on from a state written by `--save-snapshot` for the same scene and size (restored
    /// after the warm-up): on the same backend the steps are those the run that wrote it would
    /// have taken next, to the bit.
    #[arg(long)]
    resume: Option<std::path::PathBuf>,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    env_logger::init();
    let args = Args::parse();
    let mut desc = match args.scene {
        Scene::Falling => WorldDesc::default(),
        Scene::LargePyramid | Scene::Rain | Scene::JointGrid => bench_desc(),
    };
    desc.solver.body_contacts = !args.planes_only;
    if let Some(n) = args.cpu_threads {
        desc.solver.cpu_threads = n;
    }
    let world = match args.scene {
        Scene::Falling => falling_bodies(
            desc,
            FallingBodies { count: args.bodies, ramp: false, seed: 1, damping: 0.0, tumble: true },
        )?,
        Scene::LargePyramid => pyramid(desc, 100)?.0,
        Scene::Rain => rain(desc, args.bodies, 1)?,
        Scene::JointGrid => joint_grid(desc)?,
    };
    let (mut solver, software) = common::solver(&world, args.cpu)?;
    println!("backend: {}", solver.backend());
    println!(
        "scene: {:?}, bodies: {}, planes: {}, steps: {} of {:.4} s",
        args.scene,
        world.body_count(),
        world.plane_count(),
        args.steps,
        world.desc().dt
    );

    // Warm-up: pipelines compile and caches fill before the clock starts.
    solver.step_many(2);
    solver.stats()?;
    if let Some(path) = &args.resume {
        let snapshot: signorini::Snapshot = serde_json::from_str(&std::fs::read_to_string(path)?)?;
        solver.restore(&snapshot)?;
        println!("resumed from {} after step {}", path.display(), snapshot.steps);
    }

    let bar = ProgressBar::new(args.steps as u64);
    bar.set_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} steps {msg} [{elapsed_precise}]").expect("valid template"),
    );
    let start = Instant::now();
    let mut done = 0;
    let mut stats = solver.stats()?;
    while done < args.steps {
        let n = args.batch.min(args.steps - done);
        solver.step_many(n);
        done += n;
        // Reading the statistics waits for the batch, so the bar shows finished steps.
        stats = solver.stats()?;
        bar.set_position(done as u64);
        bar.set_message(format!("KE {:.1} J, {} contacts", stats.kinetic_energy, stats.contacts));
    }
    let seconds = start.elapsed().as_secs_f64();
    bar.finish_and_clear();

    let per_step = seconds / args.steps as f64;
    println!("wall time: {seconds:.3} s (one statistics readback per {} steps included)", args.batch);
    println!(
        "steps/s: {:.1}   ms/step: {:.3}   body-steps/s: {:.3e}",
        1.0 / per_step,
        per_step * 1e3,
        world.body_count() as f64 / per_step
    );
    println!(
        "after {} steps: contacts {}, colors {}, overflow {}, dropped {}, iterations/step {}, max penetration {:.2e} m, \
         kinetic energy {:.3} J ({} dynamic bodies)",
        stats.steps,
        stats.contacts,
        stats.colors,
        stats.overflow,
        stats.dropped,
        stats.iterations,
        stats.max_penetration,
        stats.kinetic_energy,
        stats.dynamic_bodies
    );
    let states = solver.body_states()?;
    let lowest = states.iter().map(|s| s.position.y).fold(f32::INFINITY, f32::min);
    let finite = states.iter().all(|s| s.position.is_finite() && s.linear_velocity.is_finite());
    println!("lowest body origin: {lowest:.3} m; all states finite: {finite}");
    if let Some(path) = &args.save_snapshot {
        std::fs::write(path, serde_json::to_string(&solver.snapshot()?)?)?;
        println!("state after step {} written to {}", stats.steps, path.display());
    }
    if let Some(path) = &args.json {
        let json = format!(
            "{{\"label\": {:?}, \"backend\": {:?}, \"software_adapter\": {software}, \"scene\": \"{:?}\", \"bodies\": {}, \
             \"steps\": {}, \"batch\": {}, \"wall_seconds\": {seconds:.6}, \"ms_per_step\": {:.6}, \"contacts\": {}, \
             \"iterations_per_step\": {}, \"colors\": {}, \"overflow\": {}, \"max_penetration\": {:e}, \
             \"kinetic_energy\": {:e}, \"all_finite\": {finite}}}\n",
            args.label,
            solver.backend(),
            args.scene,
            world.body_count(),
            args.steps,
            args.batch,
            per_step * 1e3,
            stats.contacts,
            stats.iterations,
            stats.colors,
            stats.overflow,
            stats.max_penetration,
            stats.kinetic_energy,
        );
        std::fs::write(path, json)?;
    }
    Ok(())
}
