//! Headless benchmark: one standard scene on one backend, timed step by step, and optionally the
//! same scene in Rapier in the same run.
//!
//! ```text
//! cargo run --release --example bench -- --scene pile --bodies 10000 --steps 200 --backend cpu
//! cargo run --release --example bench -- --scene large-pyramid --backend gpu --json out.json
//! cargo run --release --example bench -- --scene pile --bodies 2000 --backend cpu --compare rapier
//! cargo run --release --example bench -- --scene ragdolls --bodies 704 --save-scene ragdolls.json
//! cargo run --release --example bench -- --scene-file ragdolls.json --backend cpu --steps 100
//! ```
//!
//! A scene file (JSON, `signorini::scene`) runs any world, written by `--save-scene` from a
//! standard scene or by a program of one's own (`serde_json::to_string(&world)`).
//!
//! On a GPU whose device has timestamp queries inside compute passes, a step's time is the GPU's
//! own: timestamps between its stage groups (`GpuSolver::time_stages`), taken on the last step
//! of every batch; `timing_source` is then `"gpu timestamps"`. Otherwise, and always in
//! `wall_ms_per_step_median`, steps are timed on the wall clock from their submission until the
//! device (or the CPU) has finished them: `step_many(batch)` then `synchronize()`, which waits on
//! the queue's fence; a sample is the batch's time over its steps. With `--batch 1` (the
//! default) that includes a submission and one fence wait per step, an upper bound on the GPU's
//! own time. The adapter is printed and stored: a software adapter's times say nothing about a
//! GPU.

use std::path::PathBuf;
use std::time::Instant;

use clap::{Parser, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;
use signorini::ParticleState;
use signorini::prelude::*;
use signorini::scenes;
use signorini::{ConstraintSolver, CpuLanes, StageTimes};

/// The scenes of the benchmark (built by `signorini::scenes`).
#[derive(Clone, Copy, Debug, ValueEnum, Serialize)]
#[serde(rename_all = "kebab-case")]
enum Scene {
    /// `--bodies` boxes rained into an open box, where they pile up.
    Pile,
    /// `--bodies` mixed shapes (spheres, boxes, capsules, hulls) rained into an open box.
    Rain,
    /// The pyramid of base 100: 5,050 boxes (`--bodies` ignored).
    LargePyramid,
    /// A pyramid of base `--bodies` (1 to 1,000), one box thick: base (base + 1) / 2 boxes.
    Pyramid,
    /// 14 x 14 pyramids of base 10: 10,780 boxes (`--bodies` ignored).
    ManyPyramids,
    /// 5,120 copies of a 32-point hull dropped in a column (`--bodies` ignored).
    ConvexPile,
    /// A 100 x 100 net of spheres on 19,701 ball joints hanging from its top row (`--bodies`
    /// ignored).
    JointGrid,
    /// The joint grid with welds instead of ball joints (not in the benchmark set; `--bodies`
    /// ignored).
    WeldGrid,
    /// `--bodies` / 9 robot arms (at least one), each on a motorized, limited slider with six
    /// links on motorized, limited hinges and a hand on a universal joint (not in the benchmark
    /// set).
    Arms,
    /// `--bodies` / 11 ragdolls (at least one) of eleven bodies and ten joints each (ball
    /// joints with cones and twist limits, limited hinges) falling down a flight of stairs.
    Ragdolls,
    /// `--bodies` particles of radius 1 cm poured into an SDF bowl (no rigid bodies).
    ParticleBowl,
    /// The particle bowl with one wooden box per 100 particles dropped on top, meeting them.
    ParticleBodies,
}

/// Which solver steps the scene.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "kebab-case")]
enum Backend {
    /// The GPU solver (wgpu compute); fails when there is no adapter.
    Gpu,
    /// The CPU reference solver.
    Cpu,
}

/// How body-body constraints are solved.
#[derive(Clone, Copy, Debug, ValueEnum, Serialize)]
#[serde(rename_all = "kebab-case")]
enum SolverKind {
    /// Graph-colored Gauss-Seidel, overflow by mass-splitting Jacobi.
    Colored,
    /// Mass-splitting Jacobi for everything.
    Jacobi,
}

/// Engines to run side by side.
#[derive(Clone, Copy, Debug, ValueEnum)]
enum Compare {
    /// rapier3d with its parallel feature, on the same scene and settings.
    Rapier,
}

#[derive(Parser)]
#[command(about = "Time a standard scene step by step, optionally beside Rapier, and report it")]
struct Args {
    /// The scene.
    #[arg(long, value_enum, default_value_t = Scene::Pile)]
    scene: Scene,
    /// Reads the world from this scene file (JSON, as `--save-scene` writes it; see
    /// `signorini::scene`) instead of building `--scene`: its own settings, with those given
    /// on the command line over them (`--bodies` is ignored).
    #[arg(long, conflicts_with = "scene")]
    scene_file: Option<PathBuf>,
    /// Writes the world as it would run (the scene or scene file, the command line's settings
    /// and `--tilt` applied) to this scene file as JSON, and exits without running it.
    #[arg(long)]
    save_scene: Option<PathBuf>,
    /// Bodies, for the scenes whose size is free.
    #[arg(long, default_value_t = 10_000)]
    bodies: usize,
    /// Measured steps of 1/60 s.
    #[arg(long, default_value_t = 200)]
    steps: u32,
    /// Steps per timed submission: the time of a batch over its steps is one sample. 1 times
    /// every step on its own, including a submission and a fence wait each (about 0.5 ms on an
    /// H100); larger batches measure the steps without that round trip.
    #[arg(long, default_value_t = 1)]
    batch: u32,
    /// Steps run before the clock starts (pipelines compile, buffers grow, caches fill).
    #[arg(long, default_value_t = 20)]
    warmup: u32,
    /// The solver.
    #[arg(long, value_enum, default_value_t = Backend::Gpu)]
    backend: Backend,
    /// How body-body constraints are solved (default: colored, or the scene file's).
    #[arg(long, value_enum)]
    solver: Option<SolverKind>,
    /// Substeps per step (default: the standard scenes' 4). Both engines use it.
    #[arg(long)]
    substeps: Option<u32>,
    /// Biased iterations per substep (default 3). Both engines use it.
    #[arg(long)]
    iterations: Option<u32>,
    /// Stiffness of body-body contacts, Hz (default 60; clamped to a quarter of the substep
    /// rate). Both engines use it. Tall stacks need stiff contacts: the large pyramid stands
    /// with `--substeps 16 --iterations 1 --contact-hertz 240`, not with the defaults.
    #[arg(long)]
    contact_hertz: Option<f32>,
    /// Write the results as a JSON object to this file.
    #[arg(long)]
    json: Option<PathBuf>,
    /// After the measured steps, profile this many more steps on the GPU (each the last of a
    /// batch of `--batch`): a timestamp before every dispatch, the median time of each kind of
    /// dispatch over them in the table and in the JSON (`dispatch_profile`). The measured
    /// steps are not profiled.
    #[arg(long, default_value_t = 0)]
    profile_dispatches: u32,
    /// After the measured steps, measure what a dispatch costs on the GPU
    /// (`GpuContext::measure_dispatches`): a dependent dispatch, and a scan of 1,024 to
    /// 600,000 elements in one workgroup's dispatch and in three. In the table and in the JSON
    /// (`dispatch_costs`).
    #[arg(long)]
    dispatch_costs: bool,
    /// After the measured steps, measure what a snapshot of the state costs
    /// (`Solver::snapshot` and `Solver::restore`, the median of five calls each, wall clock,
    /// on the GPU its readbacks included) and its size as JSON. In the table and in the JSON
    /// (`snapshot_cost`).
    #[arg(long)]
    snapshot_cost: bool,
    /// Write each engine's warm-up, step by step, to this CSV file: the height along gravity of
    /// the lowest dynamic body and the mechanical energy (how a scene settles or sways in
    /// each engine). The warm-up is not timed, so reading the states there costs the timings
    /// nothing. On the GPU a traced warm-up runs step by step, so the contact buffers may grow
    /// between its steps rather than once before it: a scene whose contacts outgrow them can
    /// run differently from an untraced one.
    #[arg(long)]
    trace: Option<PathBuf>,
    /// Also run the scene in another engine, in the same process.
    #[arg(long, value_enum)]
    compare: Option<Compare>,
    /// Threads of Rapier's pool (default: one per core).
    #[arg(long)]
    rapier_threads: Option<usize>,
    /// Worker threads of signorini's CPU solver (default: one per core). The results are the
    /// same bits for every count.
    #[arg(long)]
    cpu_threads: Option<u32>,
    /// The widest SIMD lanes signorini's CPU solver may use: 4, 8 (AVX) or 16 (AVX-512F, the
    /// default; a processor without it takes the widest it has). The results are the same bits
    /// for every width: this shows what a processor without AVX-512 gets.
    #[arg(long, value_parser = ["4", "8", "16"])]
    cpu_lanes: Option<String>,
    /// Tilts the dynamic bodies rigidly about the x axis through the origin by this angle,
    /// rad, before the run: a seeded disturbance for stability tests (both engines).
    #[arg(long, default_value_t = 0.0)]
    tilt: f32,
    /// Runs the narrow phase on every pair every step: no contact recycling (see
    /// `SolverSettings::recycle_contacts`).
    #[arg(long)]
    no_recycle: bool,
    /// The GPU's manifold passes read each point's lever arms and effective masses from
    /// records prepared once per position update instead of computing them (see
    /// `SolverSettings::gpu_prepared_passes`; the same results).
    #[arg(long)]
    prepared_passes: bool,
    /// The GPU runs each manifold pass as one dispatch of one workgroup sweeping the colors
    /// in order (see `SolverSettings::gpu_fused_sweeps`; the same results).
    #[arg(long)]
    fused_sweeps: bool,
    /// A label stored in the JSON (e.g. the commit measured).
    #[arg(long, default_value = "")]
    label: String,
}

/// Per-step times, ms.
#[derive(Serialize)]
struct Timing {
    ms_per_step_median: f64,
    ms_per_step_min: f64,
    ms_per_step_max: f64,
}

impl Timing {
    fn of(mut samples: Vec<f64>) -> Self {
        samples.sort_by(f64::total_cmp);
        let n = samples.len();
        let median = match n {
            0 => f64::NAN,
            _ if n % 2 == 1 => samples[n / 2],
            _ => 0.5 * (samples[n / 2 - 1] + samples[n / 2]),
        };
        Timing {
            ms_per_step_median: median,
            ms_per_step_min: samples.first().copied().unwrap_or(f64::NAN),
            ms_per_step_max: samples.last().copied().unwrap_or(f64::NAN),
        }
    }
}

/// Median ms per step of each group of stages.
#[derive(Serialize)]
struct StagesMs {
    broad_phase: f64,
    narrow_phase: f64,
    coloring: f64,
    solve: f64,
    integrate: f64,
    particles: f64,
}

impl StagesMs {
    fn of(samples: &[StageTimes]) -> Option<Self> {
        if samples.is_empty() {
            return None;
        }
        let median = |f: &dyn Fn(&StageTimes) -> std::time::Duration| {
            Timing::of(samples.iter().map(|t| f(t).as_secs_f64() * 1e3).collect()).ms_per_step_median
        };
        Some(StagesMs {
            broad_phase: median(&|t| t.broad_phase),
            narrow_phase: median(&|t| t.narrow_phase),
            coloring: median(&|t| t.coloring),
            solve: median(&|t| t.solve),
            integrate: median(&|t| t.integrate),
            particles: median(&|t| t.particles),
        })
    }
}

/// The other engine's figures, from the same run.
#[derive(Serialize)]
struct OtherEngine {
    engine: String,
    threads: usize,
    #[serde(flatten)]
    timing: Timing,
    contacts: usize,
    max_penetration: f32,
    energy_drift: f64,
    max_displacement: f32,
    /// `--trace` rows of the warm-up.
    #[serde(skip)]
    trace: Vec<String>,
}

/// The JSON report.
#[derive(Serialize)]
struct Report {
    label: String,
    adapter: String,
    backend: String,
    software_adapter: bool,
    /// The host's processor (`model name` of /proc/cpuinfo) and the logical CPUs this process
    /// may run on: CPU-path times and Rapier's depend on them.
    host_cpu: String,
    /// The standard scene's name, or `file PATH` for a `--scene-file`.
    scene: String,
    /// The `--tilt` disturbance, rad (0: the scene as built).
    tilt: f32,
    /// Whether resting manifolds skipped the narrow phase (`--no-recycle` turns it off).
    recycle_contacts: bool,
    /// Whether the GPU's manifold passes read prepared records (`--prepared-passes`; the CPU
    /// path always prepares).
    prepared_passes: bool,
    /// Whether the GPU's manifold passes ran in one workgroup each (`--fused-sweeps`).
    fused_sweeps: bool,
    solver: SolverKind,
    bodies: usize,
    particles: usize,
    steps: u32,
    warmup_steps: u32,
    steps_per_sample: u32,
    substeps: u32,
    iterations: u32,
    relax_iterations: u32,
    /// Worker threads of the CPU solver (absent on the GPU).
    cpu_threads: Option<usize>,
    /// The most lanes the CPU solver's contact sweeps took at once (absent on the GPU).
    cpu_lanes: Option<u32>,
    /// Stiffness of body-body contacts as given, Hz (before the clamp to a quarter of the
    /// substep rate); absent under Baumgarte stabilization.
    contact_hertz: Option<f32>,
    #[serde(flatten)]
    timing: Timing,
    /// Where `ms_per_step_*` come from: `"gpu timestamps"` or `"wall clock"`.
    timing_source: &'static str,
    /// The wall clock's median over the same batches, ms per step.
    wall_ms_per_step_median: f64,
    contacts: u32,
    colors: u32,
    overflow: u32,
    /// Manifolds of the last step carried over without the narrow phase.
    recycled: u32,
    dropped: u32,
    iterations_per_step: u32,
    dispatches_per_step: Option<u32>,
    /// Median ms per step of each stage group, for backends that time their stages.
    #[serde(skip_serializing_if = "Option::is_none")]
    stages_ms_median: Option<StagesMs>,
    bytes_moved_per_step_estimate: Option<u64>,
    max_penetration: f32,
    energy_drift: f64,
    max_displacement: f32,
    kinetic_energy: f32,
    all_finite: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    rapier: Option<OtherEngine>,
    /// With `--profile-dispatches`: each kind of dispatch's median GPU time over the profiled
    /// steps, the most costly first.
    #[serde(skip_serializing_if = "Option::is_none")]
    dispatch_profile: Option<Vec<DispatchMs>>,
    /// With `--profile-dispatches`: the median total of the profiled steps (against
    /// `ms_per_step_median`: what the timestamps between dispatches cost).
    #[serde(skip_serializing_if = "Option::is_none")]
    dispatch_profile_total_ms_median: Option<f64>,
    /// With `--dispatch-costs`: what a dispatch and a scan cost on the adapter.
    #[serde(skip_serializing_if = "Option::is_none")]
    dispatch_costs: Option<DispatchCostsUs>,
    /// With `--snapshot-cost`: what a snapshot of the final state costs.
    #[serde(skip_serializing_if = "Option::is_none")]
    snapshot_cost: Option<SnapshotCost>,
}

/// What `Solver::snapshot` and `Solver::restore` cost on the final state (wall clock, median of
/// five calls each), and the snapshot's size.
#[derive(Serialize)]
struct SnapshotCost {
    snapshot_ms: f64,
    restore_ms: f64,
    /// Its JSON, compact, bytes.
    json_bytes: usize,
    manifolds: usize,
    static_contacts: usize,
}

impl SnapshotCost {
    /// Takes five snapshots (all kept until the end, so that no free of one is timed in the
    /// next) and restores the last five times, timing each.
    fn measure(solver: &mut dyn Solver) -> signorini::Result<Self> {
        let (mut taken, mut took) = (Vec::new(), Vec::new());
        for _ in 0..5 {
            let start = Instant::now();
            taken.push(solver.snapshot()?);
            took.push(start.elapsed().as_secs_f64() * 1e3);
        }
        let snapshot = taken.pop().unwrap_or_default();
        let mut restored = Vec::new();
        for _ in 0..5 {
            let start = Instant::now();
            solver.restore(&snapshot)?;
            solver.synchronize()?;
            restored.push(start.elapsed().as_secs_f64() * 1e3);
        }
        Ok(Self {
            snapshot_ms: Timing::of(took).ms_per_step_median,
            restore_ms: Timing::of(restored).ms_per_step_median,
            json_bytes: serde_json::to_vec(&snapshot).map_or(0, |v| v.len()),
            manifolds: snapshot.manifolds.len(),
            static_contacts: snapshot.static_contacts.len(),
        })
    }
}

/// `GpuContext::measure_dispatches`' figures, µs.
#[derive(Serialize)]
struct DispatchCostsUs {
    timing_source: &'static str,
    /// One more dependent dispatch in a chain.
    dependent_dispatch_us: f64,
    /// The longest region one workgroup scans alone.
    one_workgroup_scan_max: u32,
    scans: Vec<ScanUs>,
}

/// One scan of `len` elements, each way.
#[derive(Serialize)]
struct ScanUs {
    len: u32,
    /// In one workgroup's dispatch, where it fits.
    one_workgroup_us: Option<f64>,
    /// In three dispatches.
    three_dispatches_us: f64,
}

impl DispatchCostsUs {
    fn of(c: &signorini::DispatchCosts) -> Self {
        let us = |d: std::time::Duration| d.as_secs_f64() * 1e6;
        Self {
            timing_source: c.timing_source,
            dependent_dispatch_us: us(c.dependent_dispatch),
            one_workgroup_scan_max: c.one_workgroup_scan_max,
            scans: c
                .scans
                .iter()
                .map(|s| ScanUs {
                    len: s.len,
                    one_workgroup_us: s.one_workgroup.map(us),
                    three_dispatches_us: us(s.three_dispatches),
                })
                .collect(),
        }
    }
}

/// One kind of dispatch in the profiled steps.
#[derive(Serialize)]
struct DispatchMs {
    /// The dispatch's entry point or pass (`GpuSolver::dispatch_profile`).
    label: String,
    /// The group of stages it ran in.
    stage: String,
    /// How many a step records.
    dispatches: u32,
    /// Median over the profiled steps of its time in a step, ms.
    ms_median: f64,
}

/// The solver the run times.
enum Engine {
    Cpu(Box<CpuSolver>),
    Gpu(Box<GpuSolver>),
}

impl Engine {
    fn solver(&mut self) -> &mut dyn Solver {
        match self {
            Engine::Cpu(s) => s.as_mut(),
            Engine::Gpu(s) => s.as_mut(),
        }
    }
}

/// Runs `steps` more steps on `solver`, each the last of a batch of `batch` and profiled by
/// dispatch, and returns each kind's median time over them, the most costly first, and the
/// median total.
fn profile_dispatches(
    solver: &mut GpuSolver,
    steps: u32,
    batch: u32,
) -> Result<(Vec<DispatchMs>, f64), Box<dyn std::error::Error>> {
    solver.profile_dispatches(true)?;
    let mut runs: Vec<Vec<signorini::DispatchTime>> = Vec::new();
    // A batch whose timestamps were not read by `synchronize` leaves the last profile in place:
    // it is taken once, and a device that never gives one ends the loop.
    let mut batches = 0;
    while runs.len() < steps as usize && batches < 4 * steps {
        batches += 1;
        solver.step_many(batch.max(1));
        solver.synchronize()?;
        if let Some(profile) = solver.dispatch_profile()
            && runs.last().is_none_or(|last| last.as_slice() != profile)
        {
            runs.push(profile.to_vec());
        }
    }
    if runs.is_empty() {
        return Err("no dispatch profile came back from the GPU".into());
    }
    let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
    let totals = Timing::of(runs.iter().map(|r| r.iter().map(|t| ms(t.time)).sum()).collect()).ms_per_step_median;
    let mut kinds: Vec<DispatchMs> = runs[0]
        .iter()
        .map(|first| {
            let times = runs
                .iter()
                .map(|r| {
                    r.iter().find(|t| t.label == first.label && t.stage == first.stage).map_or(0.0, |t| ms(t.time))
                })
                .collect();
            DispatchMs {
                label: if first.label.is_empty() { "(before the first dispatch)".into() } else { first.label.into() },
                stage: first.stage.into(),
                dispatches: first.dispatches,
                ms_median: Timing::of(times).ms_per_step_median,
            }
        })
        .collect();
    kinds.sort_by(|a, b| b.ms_median.total_cmp(&a.ms_median));
    Ok((kinds, totals))
}

/// The host's processor as /proc/cpuinfo names it (`"unknown processor"` where it names none,
/// or there is no such file), and how many logical CPUs this process may run on.
fn host_cpu() -> String {
    let info = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = info
        .lines()
        .find_map(|l| l.strip_prefix("model name").and_then(|r| r.split_once(':')).map(|(_, m)| m.trim().to_owned()))
        .unwrap_or_else(|| "unknown processor".into());
    let count = std::thread::available_parallelism().map_or(1, |n| n.get());
    format!("{model} ({count} logical CPUs)")
}

/// The settings given on the command line, over `desc`.
fn override_settings(desc: &mut WorldDesc, args: &Args) {
    if let Some(kind) = args.solver {
        desc.solver.constraint_solver = match kind {
            SolverKind::Colored => ConstraintSolver::Colored,
            SolverKind::Jacobi => ConstraintSolver::Jacobi,
        };
    }
    if let Some(n) = args.substeps {
        desc.solver.substeps = n;
    }
    if let Some(n) = args.iterations {
        desc.solver.iterations = n;
    }
    if args.no_recycle {
        desc.solver.recycle_contacts = false;
    }
    if args.prepared_passes {
        desc.solver.gpu_prepared_passes = true;
    }
    if args.fused_sweeps {
        desc.solver.gpu_fused_sweeps = true;
    }
    if let Some(n) = args.cpu_threads {
        desc.solver.cpu_threads = n;
    }
    match args.cpu_lanes.as_deref() {
        Some("4") => desc.solver.cpu_lanes = CpuLanes::Four,
        Some("8") => desc.solver.cpu_lanes = CpuLanes::Eight,
        Some(_) => desc.solver.cpu_lanes = CpuLanes::Sixteen,
        None => {}
    }
    if let (Some(hz), Stabilization::Soft { contact_hertz, .. }) = (args.contact_hertz, &mut desc.solver.stabilization)
    {
        *contact_hertz = hz;
    }
}

/// The world to run: the scene file's, or the standard scene's, with the command line's
/// settings and tilt.
fn build(args: &Args) -> Result<World, Box<dyn std::error::Error>> {
    let world = match &args.scene_file {
        Some(path) => {
            let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
            let mut scene: signorini::Scene =
                serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
            override_settings(&mut scene.settings, args);
            World::from_scene(scene).map_err(|e| format!("{}: {e}", path.display()))?
        }
        None => standard_scene(args)?,
    };
    if args.tilt == 0.0 {
        return Ok(world);
    }
    Ok(scenes::tilted(&world, args.tilt)?)
}

/// The standard scene `--scene` with the command line's settings.
fn standard_scene(args: &Args) -> Result<World, signorini::Error> {
    let mut desc = scenes::bench_desc();
    override_settings(&mut desc, args);
    match args.scene {
        Scene::Pile => scenes::box_pile(desc, args.bodies, 1),
        Scene::Rain => scenes::rain(desc, args.bodies, 1),
        Scene::LargePyramid => Ok(scenes::pyramid(desc, 100)?.0),
        Scene::Pyramid => match args.bodies {
            base @ 1..=1000 => Ok(scenes::pyramid(desc, base)?.0),
            base => Err(signorini::Error::OutOfRange { what: "pyramid base", range: "[1, 1000]", value: base as f32 }),
        },
        Scene::ManyPyramids => scenes::many_pyramids(desc),
        Scene::ConvexPile => scenes::convex_pile(desc),
        Scene::JointGrid => scenes::joint_grid(desc),
        Scene::WeldGrid => scenes::weld_grid(desc),
        Scene::Arms => scenes::arms(desc, args.bodies),
        Scene::Ragdolls => scenes::ragdolls(desc, args.bodies.div_ceil(11).max(1)),
        Scene::ParticleBowl => scenes::particle_bowl(desc, args.bodies, 1),
        Scene::ParticleBodies => scenes::particle_bowl_with_bodies(desc, args.bodies, args.bodies / 100, 1),
    }
}

/// Total mechanical energy of the dynamic bodies and particles (kinetic plus potential in
/// `gravity`), and the part of it available above the lowest centre of mass, J.
fn energy(world: &World, states: &[BodyState], particles: &[ParticleState]) -> (f64, f64) {
    let g = world.desc().gravity.as_dvec3();
    let (mut total, mut lowest, mut mass_sum, mut potential_sum) = (0.0, f64::INFINITY, 0.0, 0.0);
    for (p, s) in world.particles().iter().zip(particles) {
        let m = p.mass as f64;
        let potential = -m * g.dot(s.position.as_dvec3());
        total += 0.5 * m * s.velocity.as_dvec3().length_squared() + potential;
        mass_sum += m;
        potential_sum += potential;
        lowest = lowest.min(-g.dot(s.position.as_dvec3()));
    }
    for (i, s) in states.iter().enumerate() {
        let handle = BodyHandle::from_index(i);
        let Ok(desc) = world.body(handle) else { continue };
        if desc.kind != BodyKind::Dynamic {
            continue;
        }
        let Ok(mp) = world.mass_properties(handle) else { continue };
        let com = (s.position + s.orientation * mp.local_center_of_mass).as_dvec3();
        let m = mp.mass as f64;
        let w_body = (s.orientation * mp.principal_frame).inverse() * s.angular_velocity;
        let rotational = 0.5 * (mp.principal_inertia * w_body * w_body).as_dvec3().element_sum();
        let potential = -m * g.dot(com);
        total += 0.5 * m * s.linear_velocity.as_dvec3().length_squared() + rotational + potential;
        mass_sum += m;
        potential_sum += potential;
        lowest = lowest.min(-g.dot(com));
    }
    let floor = if mass_sum > 0.0 { mass_sum * lowest } else { 0.0 };
    (total, (total - potential_sum) + (potential_sum - floor))
}

/// One `--trace` row: the engine, the warm-up step (from 1), the height along gravity of the
/// lowest dynamic body's origin, m, and the mechanical energy ([`energy`]), J.
fn trace_row(world: &World, engine: &str, step: u32, states: &[BodyState], particles: &[ParticleState]) -> String {
    let up = -world.desc().gravity.normalize_or(Vec3::NEG_Y);
    let lowest = states
        .iter()
        .enumerate()
        .filter(|(i, _)| world.body(BodyHandle::from_index(*i)).is_ok_and(|b| b.kind == BodyKind::Dynamic))
        .map(|(_, s)| up.dot(s.position))
        .fold(f32::INFINITY, f32::min);
    format!("{engine},{step},{lowest},{}", energy(world, states, particles).0)
}

/// How far the dynamic body that moved most during the measured steps moved, m (the standing
/// test of the pyramids: a few millimetres at most).
fn max_displacement(world: &World, start: &[BodyState], end: &[BodyState]) -> f32 {
    start
        .iter()
        .zip(end)
        .enumerate()
        .filter(|(i, _)| world.body(BodyHandle::from_index(*i)).is_ok_and(|b| b.kind == BodyKind::Dynamic))
        .map(|(_, (a, b))| (b.position - a.position).length())
        .fold(0.0, f32::max)
}

fn progress(steps: u32, what: &str) -> ProgressBar {
    let bar = ProgressBar::new(steps as u64);
    bar.set_style(
        ProgressStyle::with_template(&format!("{what} {{bar:40}} {{pos}}/{{len}} steps [{{elapsed_precise}}]"))
            .expect("valid template"),
    );
    bar
}

/// A rough count of the bytes the GPU step reads and writes: every stage reads and writes its
/// records once per dispatch that touches them (bodies and solver bodies once per body stage,
/// each manifold and its two bodies once per manifold pass, with `gpu_prepared_passes` also its
/// prepared record per pass and per preparation, each plane contact once per static
/// pass). Manifolds are taken as a quarter of the contact points (a resting box face has four).
fn bytes_estimate(world: &World, stats: &StepStats) -> u64 {
    use signorini::layout::{GpuBody, GpuManifold, GpuSolverBody, GpuStaticContact};
    let s = world.desc().solver;
    let bodies = world.body_count() as u64;
    let body = (std::mem::size_of::<GpuBody>() + std::mem::size_of::<GpuSolverBody>()) as u64;
    let manifolds = (stats.contacts as u64).div_ceil(4);
    let prepared = s.gpu_prepared_passes;
    let record = 4 * signorini::layout::PREPARED_MANIFOLD_WORDS as u64;
    let manifold = std::mem::size_of::<GpuManifold>() as u64 + if prepared { record } else { 0 };
    let prepares = if prepared { 1 + u64::from(s.relax_iterations > 0) } else { 0 };
    let per_substep_manifold_passes = prepares + 1 + s.iterations as u64 + s.relax_iterations as u64;
    let body_stages = 4 + 3 * s.substeps as u64;
    // A slot per point and plane, three per point and SDF.
    let plane_contacts = bodies * (world.plane_count() + 3 * world.sdf_count()) as u64 * 8;
    let contact = std::mem::size_of::<GpuStaticContact>() as u64;
    2 * (bodies * body * body_stages
        + manifolds * (manifold + 2 * body) * (s.substeps as u64 * per_substep_manifold_passes + 3)
        + plane_contacts * contact * (2 * s.substeps as u64 + 1))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    env_logger::init();
    let args = Args::parse();
    let world = build(&args)?;
    if let Some(path) = &args.save_scene {
        std::fs::write(path, serde_json::to_string_pretty(&world)?).map_err(|e| format!("{}: {e}", path.display()))?;
        println!(
            "wrote {} ({} bodies, {} joints, {} particles)",
            path.display(),
            world.body_count(),
            world.joint_count(),
            world.particle_count()
        );
        return Ok(());
    }
    let settings = world.desc().solver;
    let scene_name = match &args.scene_file {
        Some(path) => format!("file {}", path.display()),
        None => args.scene.to_possible_value().map_or_else(|| format!("{:?}", args.scene), |v| v.get_name().to_owned()),
    };
    if world.particle_count() > 0 && args.compare.is_some() {
        return Err("the particle scenes have no Rapier counterpart: run them without --compare".into());
    }

    if args.profile_dispatches > 0 && args.backend != Backend::Gpu {
        return Err("--profile-dispatches profiles the GPU's dispatches: run it with --backend gpu".into());
    }
    if args.dispatch_costs && args.backend != Backend::Gpu {
        return Err("--dispatch-costs measures the GPU's dispatches: run it with --backend gpu".into());
    }
    type Made = (Engine, String, String, bool, Option<u32>);
    let mut context = None;
    let (mut gpu_timed, mut cpu_lanes) = (false, None);
    let (mut engine, adapter, backend, software, dispatches): Made = match args.backend {
        Backend::Cpu => {
            let solver = CpuSolver::new(&world)?;
            cpu_lanes = Some(solver.cpu_lanes());
            (Engine::Cpu(Box::new(solver)), "cpu".into(), "cpu".into(), false, None)
        }
        Backend::Gpu => {
            let gpu = context.insert(GpuContext::new()?);
            let summary = gpu.adapter().clone();
            let mut solver = GpuSolver::new(gpu, &world)?;
            if gpu.timestamps() {
                solver.time_stages(true)?;
                gpu_timed = true;
            }
            let dispatches = solver.dispatches_per_step();
            (Engine::Gpu(Box::new(solver)), summary.name, summary.backend, summary.software, Some(dispatches))
        }
    };
    if args.profile_dispatches > 0 && !gpu_timed {
        return Err("--profile-dispatches needs timestamp queries inside passes, which this device lacks".into());
    }
    let solver = engine.solver();
    println!("adapter: {adapter}{}", if software { " (software adapter: its times are not GPU times)" } else { "" });
    let host = host_cpu();
    println!("host: {host}");
    if let Some(lanes) = cpu_lanes {
        println!("CPU solver: up to {lanes} SIMD lanes");
    }
    println!(
        "scene: {}, bodies: {}, particles: {}, planes: {}, warm-up {} + {} steps of {:.4} s, {} substeps x ({} + {} relax) iterations",
        scene_name,
        world.body_count(),
        world.particle_count(),
        world.plane_count(),
        args.warmup,
        args.steps,
        world.desc().dt,
        settings.substeps,
        settings.iterations,
        settings.relax_iterations
    );

    let mut trace = Vec::new();
    if args.trace.is_some() {
        for step in 1..=args.warmup {
            solver.step();
            trace.push(trace_row(&world, "signorini", step, &solver.body_states()?, &solver.particle_states()?));
        }
    } else {
        solver.step_many(args.warmup);
    }
    solver.synchronize()?;
    let states_start = solver.body_states()?;
    let (energy_start, energy_scale) = energy(&world, &states_start, &solver.particle_states()?);
    let bar = progress(args.steps, "signorini");
    let mut samples = Vec::with_capacity(args.steps as usize);
    let mut stage_samples: Vec<StageTimes> = Vec::new();
    // The GPU times the last step of each batch by timestamps when it can; the CPU times every
    // step on the wall clock.
    let mut done = 0;
    while done < args.steps {
        let n = args.batch.clamp(1, args.steps - done);
        let start = Instant::now();
        if args.backend == Backend::Cpu {
            // Nothing to batch on the CPU, and every step's split is kept.
            for _ in 0..n {
                solver.step();
                stage_samples.extend(solver.stage_times());
            }
        } else {
            solver.step_many(n);
        }
        solver.synchronize()?;
        samples.push(start.elapsed().as_secs_f64() * 1e3 / n as f64);
        if gpu_timed {
            stage_samples.extend(solver.stage_times());
        }
        done += n;
        bar.inc(n as u64);
    }
    let (timing, timing_source) = if gpu_timed {
        (Timing::of(stage_samples.iter().map(|t| t.total().as_secs_f64() * 1e3).collect()), "gpu timestamps")
    } else {
        (Timing::of(samples.clone()), "wall clock")
    };
    bar.finish_and_clear();
    let stats = solver.stats()?;
    let states = solver.body_states()?;
    let particles = solver.particle_states()?;
    let (energy_end, _) = energy(&world, &states, &particles);
    let all_finite = states.iter().all(|s| s.position.is_finite() && s.linear_velocity.is_finite())
        && particles.iter().all(|p| p.position.is_finite() && p.velocity.is_finite());
    let profiled = match &mut engine {
        Engine::Gpu(gpu) if args.profile_dispatches > 0 => {
            Some(profile_dispatches(gpu, args.profile_dispatches, args.batch)?)
        }
        _ => None,
    };
    let (dispatch_profile, dispatch_profile_total_ms_median) = profiled.unzip();
    // A failed measurement costs the run its `dispatch_costs`, not its other figures.
    let dispatch_costs = match &context {
        Some(gpu) if args.dispatch_costs => match gpu.measure_dispatches() {
            Ok(costs) => Some(DispatchCostsUs::of(&costs)),
            Err(e) => {
                eprintln!("dispatch costs not measured: {e}");
                None
            }
        },
        _ => None,
    };

    let snapshot_cost = if args.snapshot_cost { Some(SnapshotCost::measure(engine.solver())?) } else { None };

    let rapier = match args.compare {
        Some(Compare::Rapier) => Some(rapier_side::run(&world, &args)?),
        None => None,
    };
    if let Some(path) = &args.trace {
        let rows = trace.iter().chain(rapier.iter().flat_map(|r| &r.trace));
        let text: String = std::iter::once("engine,step,lowest_height_m,energy_j")
            .chain(rows.map(String::as_str))
            .flat_map(|r| [r, "\n"])
            .collect();
        std::fs::write(path, text)?;
        println!("wrote {}", path.display());
    }

    let report = Report {
        label: args.label.clone(),
        adapter,
        backend,
        software_adapter: software,
        host_cpu: host,
        scene: scene_name,
        tilt: args.tilt,
        recycle_contacts: settings.recycle_contacts,
        prepared_passes: settings.gpu_prepared_passes,
        fused_sweeps: settings.gpu_fused_sweeps,
        solver: match settings.constraint_solver {
            ConstraintSolver::Colored => SolverKind::Colored,
            ConstraintSolver::Jacobi => SolverKind::Jacobi,
        },
        bodies: world.body_count(),
        particles: world.particle_count(),
        steps: args.steps,
        warmup_steps: args.warmup,
        steps_per_sample: if gpu_timed { 1 } else { args.batch.max(1) },
        substeps: settings.substeps,
        iterations: settings.iterations,
        relax_iterations: settings.relax_iterations,
        cpu_threads: (args.backend == Backend::Cpu).then(|| match settings.cpu_threads {
            0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
            n => n as usize,
        }),
        cpu_lanes,
        contact_hertz: match settings.stabilization {
            Stabilization::Soft { contact_hertz, .. } => Some(contact_hertz),
            Stabilization::Baumgarte { .. } => None,
        },
        wall_ms_per_step_median: Timing::of(samples).ms_per_step_median,
        timing,
        timing_source,
        contacts: stats.contacts,
        colors: stats.colors,
        overflow: stats.overflow,
        recycled: stats.recycled,
        dropped: stats.dropped,
        iterations_per_step: stats.iterations,
        dispatches_per_step: dispatches,
        stages_ms_median: StagesMs::of(&stage_samples),
        bytes_moved_per_step_estimate: dispatches.map(|_| bytes_estimate(&world, &stats)),
        max_penetration: stats.max_penetration,
        energy_drift: (energy_end - energy_start) / energy_scale.max(f64::MIN_POSITIVE),
        max_displacement: max_displacement(&world, &states_start, &states),
        kinetic_energy: stats.kinetic_energy,
        all_finite,
        rapier,
        dispatch_profile,
        dispatch_profile_total_ms_median,
        dispatch_costs,
        snapshot_cost,
    };
    print_table(&report);
    if let Some(path) = &args.json {
        std::fs::write(path, serde_json::to_string_pretty(&report)? + "\n")?;
        println!("wrote {}", path.display());
    }
    Ok(())
}

fn print_table(r: &Report) {
    let row = |name: &str, t: &Timing, contacts: String, penetration: f32, drift: f64, moved: f32| {
        println!(
            "{name:<16} {:>10.3} {:>10.3} {:>10.3} {contacts:>10} {:>12.2e} {:>12.2e} {:>11.2e}",
            t.ms_per_step_median, t.ms_per_step_min, t.ms_per_step_max, penetration, drift, moved
        )
    };
    println!(
        "{:<16} {:>10} {:>10} {:>10} {:>10} {:>12} {:>12} {:>11}",
        "engine", "median ms", "min ms", "max ms", "contacts", "max pen. m", "energy drift", "moved m"
    );
    row(
        &match r.cpu_threads {
            Some(n) => format!("signorini/cpu x{n}"),
            None => "signorini/gpu".into(),
        },
        &r.timing,
        r.contacts.to_string(),
        r.max_penetration,
        r.energy_drift,
        r.max_displacement,
    );
    if let Some(o) = &r.rapier {
        row(
            &format!("{} x{}", o.engine, o.threads),
            &o.timing,
            o.contacts.to_string(),
            o.max_penetration,
            o.energy_drift,
            o.max_displacement,
        );
        // Rapier is timed on the wall clock: compare it with signorini's wall clock.
        println!(
            "ratio of wall-clock medians, rapier / signorini: {:.2}",
            o.timing.ms_per_step_median / r.wall_ms_per_step_median
        );
    }
    println!("signorini's times: {} (wall clock median {:.3} ms/step)", r.timing_source, r.wall_ms_per_step_median);
    if let Some(st) = &r.stages_ms_median {
        println!(
            "stages, median ms/step: broad phase {:.3}, narrow phase {:.3}, coloring {:.3}, solve {:.3}, integrate {:.3}, \
             particles {:.3}",
            st.broad_phase, st.narrow_phase, st.coloring, st.solve, st.integrate, st.particles
        );
    }
    println!(
        "colors {}, overflow {}, recycled {}, dropped {}, iterations/step {}, dispatches/step {}, ~bytes/step {}, KE {:.3} J, finite {}",
        r.colors,
        r.overflow,
        r.recycled,
        r.dropped,
        r.iterations_per_step,
        r.dispatches_per_step.map_or("-".into(), |d| d.to_string()),
        r.bytes_moved_per_step_estimate.map_or("-".into(), |b| format!("{:.3e}", b as f64)),
        r.kinetic_energy,
        r.all_finite
    );
    if let (Some(kinds), Some(total)) = (&r.dispatch_profile, r.dispatch_profile_total_ms_median) {
        println!("dispatch profile, median of the profiled steps: {total:.3} ms a step, the most costly first");
        println!("{:<32} {:<13} {:>10} {:>10} {:>8}", "dispatch", "stage", "dispatches", "ms", "share");
        for k in kinds {
            let share = if total > 0.0 { 100.0 * k.ms_median / total } else { 0.0 };
            println!("{:<32} {:<13} {:>10} {:>10.4} {:>7.1}%", k.label, k.stage, k.dispatches, k.ms_median, share);
        }
    }
    if let Some(c) = &r.snapshot_cost {
        println!(
            "snapshot of the final state: taken in {:.2} ms, restored in {:.2} ms, {} manifolds and {} static slots, {:.1} MB as JSON",
            c.snapshot_ms,
            c.restore_ms,
            c.manifolds,
            c.static_contacts,
            c.json_bytes as f64 / 1e6
        );
    }
    if let Some(c) = &r.dispatch_costs {
        println!(
            "dispatch costs ({}): a dependent dispatch {:.2} µs; one workgroup scans up to {} elements",
            c.timing_source, c.dependent_dispatch_us, c.one_workgroup_scan_max
        );
        println!("{:>10} {:>22} {:>22}", "scan of", "one workgroup, µs", "three dispatches, µs");
        for scan in &c.scans {
            let one = scan.one_workgroup_us.map_or("-".into(), |us| format!("{us:.2}"));
            println!("{:>10} {:>22} {:>22.2}", scan.len, one, scan.three_dispatches_us);
        }
    }
}

/// The same world in rapier3d: same shapes, poses, velocities, masses, materials, time step,
/// substeps (Rapier's solver iterations), iterations per substep and contact softness.
mod rapier_side {
    use super::{Args, OtherEngine, Timing, progress};
    use rapier3d::prelude as rp;
    use signorini::prelude::*;
    use signorini::{MassSpec, PlaneHandle};
    use std::time::Instant;

    fn v(x: Vec3) -> rp::Vector {
        rp::Vector::new(x.x, x.y, x.z)
    }

    fn collider(desc: &RigidBodyDesc) -> Option<rp::ColliderBuilder> {
        let builder = match &desc.shape {
            Shape::Sphere { radius } => rp::ColliderBuilder::ball(*radius),
            Shape::Cuboid { half_extents } => {
                rp::ColliderBuilder::cuboid(half_extents.x, half_extents.y, half_extents.z)
            }
            Shape::Capsule { half_height, radius } => rp::ColliderBuilder::capsule_y(*half_height, *radius),
            Shape::ConvexHull(hull) => {
                let points: Vec<rp::Vector> = hull.vertices().iter().map(|&p| v(p)).collect();
                rp::ColliderBuilder::convex_hull(&points)?
            }
        };
        let builder = match desc.mass {
            MassSpec::Density(d) => builder.density(d),
            MassSpec::Mass(m) => builder.mass(m),
        };
        // The material rules of `Material::combine`: geometric mean of frictions, larger restitution.
        Some(
            builder
                .friction(desc.material.friction)
                .friction_combine_rule(rp::CoefficientCombineRule::GeometricMean)
                .restitution(desc.material.restitution)
                .restitution_combine_rule(rp::CoefficientCombineRule::Max),
        )
    }

    pub(super) fn run(world: &World, args: &Args) -> Result<OtherEngine, Box<dyn std::error::Error>> {
        let threads =
            args.rapier_threads.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
        let pool = rapier3d::rayon::ThreadPoolBuilder::new().num_threads(threads).build()?;
        let desc = world.desc();
        let mut w = rp::PhysicsWorld { gravity: v(desc.gravity), ..Default::default() };
        let p = &mut w.integration_parameters;
        p.dt = desc.dt;
        p.num_solver_iterations = desc.solver.substeps as usize;
        p.num_internal_pgs_iterations = desc.solver.iterations as usize;
        p.num_internal_stabilization_iterations = desc.solver.relax_iterations as usize;
        if let Stabilization::Soft { contact_hertz, contact_damping_ratio, static_hertz, static_damping_ratio } =
            desc.solver.stabilization
        {
            p.contact_softness = rp::SpringCoefficients::new(contact_hertz, contact_damping_ratio);
            p.static_contact_softness = rp::SpringCoefficients::new(static_hertz, static_damping_ratio);
        }
        if world.sdf_count() > 0 {
            return Err("the Rapier side builds no SDF colliders: run this scene without --compare".into());
        }
        let mut handles = Vec::with_capacity(world.body_count());
        for i in 0..world.body_count() {
            let body = world.body(BodyHandle::from_index(i))?;
            if body.collision_groups != signorini::CollisionGroups::ALL {
                return Err("the Rapier side builds no collision groups: run this scene without --compare".into());
            }
            let builder = match body.kind {
                BodyKind::Dynamic => rp::RigidBodyBuilder::dynamic(),
                BodyKind::Static => rp::RigidBodyBuilder::fixed(),
                BodyKind::Kinematic => rp::RigidBodyBuilder::kinematic_velocity_based(),
            };
            let (axis, angle) = body.orientation.to_axis_angle();
            let rb = builder
                .translation(v(body.position))
                .rotation(v(axis * angle))
                .linvel(v(body.linear_velocity))
                .angvel(v(body.angular_velocity))
                .linear_damping(body.linear_damping)
                .angular_damping(body.angular_damping)
                .can_sleep(false);
            let mut collider = collider(body).ok_or("rapier could not build a convex hull")?;
            if !desc.solver.body_contacts {
                // Bodies meet the planes only, as signorini's `body_contacts: false` has it.
                collider = collider.collision_groups(rp::InteractionGroups::new(
                    rp::Group::GROUP_1,
                    rp::Group::GROUP_2,
                    rp::InteractionTestMode::And,
                ));
            }
            handles.push((w.insert(rb, collider).0, i));
        }
        for k in 0..world.joint_count() {
            let joint = world.joint(signorini::JointHandle::from_index(k))?;
            if joint.breaking.is_some() {
                return Err("the Rapier side builds no breaking loads".into());
            }
            let (a, b) = (world.body(joint.body_a)?, world.body(joint.body_b)?);
            let local = |body: &RigidBodyDesc| v(body.orientation.inverse() * (joint.anchor - body.position));
            let softness = rp::SpringCoefficients::new(desc.solver.joint_hertz, desc.solver.joint_damping_ratio);
            let (h1, h2) = (handles[joint.body_a.index()].0, handles[joint.body_b.index()].0);
            // A ball joint with a cone, or a hinge: Rapier's generic joint with frames whose x
            // axis is the cone's or the hinge's axis, the same in the world when the joint is
            // made (so its angles start at zero, as signorini's do). The cone is Rapier's
            // coupled swing limit (the angle between the frames' x axes), the twist and the
            // hinge's limits its limits about x.
            let framed_by = |dx: Vec3, dy: Vec3, locked: rp::JointAxesMask| {
                let world_frame = Quat::from_mat3(&glam::Mat3::from_cols(dx, dy, dx.cross(dy)));
                let frame = |body: &RigidBodyDesc| {
                    let q = body.orientation.inverse() * world_frame;
                    rp::Pose::from_parts(local(body), rp::Rotation::from_xyzw(q.x, q.y, q.z, q.w))
                };
                rp::GenericJointBuilder::new(locked)
                    .local_frame1(frame(a))
                    .local_frame2(frame(b))
                    .contacts_enabled(joint.collide)
                    .softness(softness)
            };
            let framed = |axis: Vec3, locked: rp::JointAxesMask| {
                let dx = axis.normalize();
                framed_by(dx, signorini::math::tangent_basis(dx).0, locked)
            };
            // A hinge (about x) or a slider (along x), `on` that axis its limits and its motor.
            // Signorini's motor is a rigid velocity row within its torque or force; Rapier's
            // nearest is a force-based velocity motor with a damping so large that it is rigid,
            // within the same effort.
            let along = |axis: Vec3, locked: rp::JointAxesMask, on: rp::JointAxis| {
                let builder = framed(axis, locked);
                let builder = match joint.limits {
                    Some(limits) => builder.limits(on, limits),
                    None => builder,
                };
                match joint.motor {
                    Some(m) => builder
                        .motor_model(on, rp::MotorModel::ForceBased)
                        .motor_velocity(on, m.speed, 1e9)
                        .motor_max_force(on, m.max_effort),
                    None => builder,
                }
            };
            let generic = match (joint.kind, joint.cone) {
                (signorini::JointKind::Spherical, None) => {
                    let ball = rp::SphericalJointBuilder::new()
                        .contacts_enabled(joint.collide)
                        .local_anchor1(local(a))
                        .local_anchor2(local(b))
                        .softness(softness);
                    w.impulse_joints.insert(h1, h2, ball, true);
                    continue;
                }
                (signorini::JointKind::Spherical, Some(cone)) => {
                    let mut ball = framed(cone.axis, rp::JointAxesMask::LOCKED_SPHERICAL_AXES)
                        .coupled_axes(rp::JointAxesMask::ANG_Y | rp::JointAxesMask::ANG_Z)
                        // (A lower bound of zero would hold the swing at zero, where it starts.)
                        .limits(rp::JointAxis::AngY, [-cone.half_angle, cone.half_angle]);
                    if let Some(twist) = joint.twist {
                        ball = ball.limits(rp::JointAxis::AngX, twist);
                    }
                    ball
                }
                (signorini::JointKind::Revolute { axis }, None) => {
                    along(axis, rp::JointAxesMask::LOCKED_REVOLUTE_AXES, rp::JointAxis::AngX)
                }
                (signorini::JointKind::Prismatic { axis }, None) => {
                    along(axis, rp::JointAxesMask::LOCKED_PRISMATIC_AXES, rp::JointAxis::LinX)
                }
                // A universal joint: the point held, and the turn about the direction across
                // the two axes (the frames' z) locked.
                (signorini::JointKind::Universal { axis_a, axis_b }, None) => {
                    let dx = axis_a.normalize();
                    let dz = axis_a.cross(axis_b).normalize();
                    framed_by(dx, dz.cross(dx), rp::JointAxesMask::LOCKED_SPHERICAL_AXES | rp::JointAxesMask::ANG_Z)
                }
                // A weld: every axis locked, holding the frames' relative pose at creation.
                (signorini::JointKind::Fixed, _) => framed(Vec3::X, rp::JointAxesMask::LOCKED_FIXED_AXES),
                _ => {
                    return Err(
                        "the Rapier side builds ball joints (with cones and twists), hinges, sliders, universal joints and welds only"
                            .into()
                    );
                }
            };
            w.impulse_joints.insert(h1, h2, generic.build(), true);
        }
        for k in 0..world.plane_count() {
            let plane = world.plane(PlaneHandle::from_index(k))?;
            let shape = rp::SharedShape::halfspace(v(plane.normal));
            w.colliders.insert(
                rp::ColliderBuilder::new(shape)
                    .translation(v(plane.normal * plane.offset))
                    .friction(plane.material.friction)
                    .restitution(plane.material.restitution)
                    .collision_groups(rp::InteractionGroups::new(
                        rp::Group::GROUP_2,
                        rp::Group::ALL,
                        rp::InteractionTestMode::And,
                    )),
            );
        }
        let states = |w: &rp::PhysicsWorld| -> Vec<BodyState> {
            handles
                .iter()
                .map(|&(h, _)| {
                    let b = &w.bodies[h];
                    let t = b.translation();
                    let r = b.rotation();
                    let (lv, av) = (b.linvel(), b.angvel());
                    BodyState {
                        position: Vec3::new(t.x, t.y, t.z),
                        orientation: Quat::from_xyzw(r.x, r.y, r.z, r.w),
                        linear_velocity: Vec3::new(lv.x, lv.y, lv.z),
                        angular_velocity: Vec3::new(av.x, av.y, av.z),
                    }
                })
                .collect()
        };
        let mut trace = Vec::new();
        pool.install(|| {
            for step in 1..=args.warmup {
                w.step();
                if args.trace.is_some() {
                    trace.push(super::trace_row(world, "rapier3d", step, &states(&w), &[]));
                }
            }
        });
        let states_start = states(&w);
        let (energy_start, energy_scale) = super::energy(world, &states_start, &[]);
        let bar = progress(args.steps, "rapier");
        let mut samples = Vec::with_capacity(args.steps as usize);
        pool.install(|| {
            for _ in 0..args.steps {
                let start = Instant::now();
                w.step();
                samples.push(start.elapsed().as_secs_f64() * 1e3);
                bar.inc(1);
            }
        });
        bar.finish_and_clear();
        let states_end = states(&w);
        let (energy_end, _) = super::energy(world, &states_end, &[]);
        // Rapier finds contacts at the start of a step: find them at the final positions, as
        // signorini's statistics do.
        w.detect_collisions(&(), &());
        let (mut contacts, mut max_penetration) = (0, 0.0_f32);
        for pair in w.narrow_phase.contact_pairs() {
            for manifold in pair.manifolds() {
                // Every manifold point, speculative ones included, as signorini counts them.
                contacts += manifold.points.len();
                for point in &manifold.points {
                    max_penetration = max_penetration.max(-point.dist);
                }
            }
        }
        Ok(OtherEngine {
            engine: "rapier3d 0.36".into(),
            threads,
            timing: Timing::of(samples),
            contacts,
            max_penetration,
            energy_drift: (energy_end - energy_start) / energy_scale.max(f64::MIN_POSITIVE),
            max_displacement: super::max_displacement(world, &states_start, &states_end),
            trace,
        })
    }
}
