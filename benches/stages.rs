//! Cost of each group of stages (broad phase, narrow phase, coloring, solve, integrate) on the
//! box pile (`scenes::box_pile`) at 10,000 and 100,000 bodies, on the CPU reference path and,
//! when the adapter has timestamp queries inside compute passes, on the GPU. A measurement is
//! the stage's own time within real steps (the CPU's wall-clock laps, the GPU's timestamps
//! between stage groups), summed over the steps criterion asks for; the scene keeps settling
//! while the stages are measured one after another. The GPU group is named after the adapter:
//! a software adapter's timings say nothing about a GPU.
//!
//! `cargo bench --bench stages`; `SIGNORINI_BENCH_SIZES=1000,10000` picks other sizes,
//! `SIGNORINI_BENCH_WARMUP=N` the steps the pile settles first (default 90: the boxes have landed).
//! Under `cargo test --all-targets` each benchmark runs once on a pile of 1,000 after 10 steps.

use std::time::Duration;

use criterion::{BenchmarkId, Criterion, SamplingMode, Throughput, criterion_group, criterion_main};
use signorini::StageTimes;
use signorini::prelude::*;
use signorini::scenes;

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// Whether criterion measures (`cargo bench` passes `--bench`) rather than checking that each
/// benchmark runs once (`cargo test --all-targets`), where a small pile is enough.
fn measuring() -> bool {
    std::env::args().any(|a| a == "--bench")
}

fn sizes() -> Vec<usize> {
    let default = if measuring() { vec![10_000, 100_000] } else { vec![1_000] };
    std::env::var("SIGNORINI_BENCH_SIZES")
        .ok()
        .map(|v| v.split(',').filter_map(|s| s.trim().parse().ok()).collect())
        .unwrap_or(default)
}

/// Settles a pile on one solver, then measures each stage group over real steps: ten samples,
/// of one step each for any stage above 10 µs (criterion sizes samples and warm-up by the
/// stage's own time, so a stage of a few microseconds takes more steps per sample).
fn bench_stages(c: &mut Criterion, name: &str, make: &dyn Fn(&World) -> signorini::Result<Box<dyn Solver>>) {
    let warmup = env_or("SIGNORINI_BENCH_WARMUP", if measuring() { 90 } else { 10 });
    for count in sizes() {
        let world = scenes::box_pile(scenes::bench_desc(), count, 1).expect("scene");
        let mut solver = match make(&world) {
            Ok(solver) => solver,
            Err(e) => {
                eprintln!("{name}/{count} skipped: {e}");
                continue;
            }
        };
        solver.step_many(warmup);
        solver.synchronize().expect("sync");
        let mut group = c.benchmark_group(format!("{name}/{count}"));
        group.sample_size(10).sampling_mode(SamplingMode::Flat).warm_up_time(Duration::from_millis(1));
        group.measurement_time(Duration::from_millis(1)).throughput(Throughput::Elements(count as u64));
        // Every group a box pile spends time in: all but the particles'.
        let groups = StageTimes::default().groups();
        for (k, &(stage, _)) in groups.iter().enumerate().filter(|(_, (stage, _))| *stage != "particles") {
            group.bench_function(BenchmarkId::from_parameter(stage), |b| {
                b.iter_custom(|steps| {
                    let mut total = Duration::ZERO;
                    for _ in 0..steps {
                        solver.step();
                        solver.synchronize().expect("sync");
                        // At least a nanosecond: criterion sizes its warm-up by the time it is
                        // given, and a stage timed at zero would keep it warming up for ever.
                        let t = solver.stage_times().expect("the solver times its stages").groups()[k].1;
                        total += t.max(Duration::from_nanos(1));
                    }
                    total
                })
            });
        }
        group.finish();
    }
}

fn benches(c: &mut Criterion) {
    bench_stages(c, "stages/cpu", &|w| Ok(Box::new(CpuSolver::new(w)?)));
    match GpuContext::new() {
        Ok(gpu) if gpu.timestamps() => {
            let kind = if gpu.adapter().software { "software" } else { "hardware" };
            let name = format!("stages/gpu ({kind}: {})", gpu.adapter().name);
            bench_stages(c, &name, &|w| {
                let mut solver = GpuSolver::new(&gpu, w)?;
                solver.time_stages(true)?;
                Ok(Box::new(solver))
            });
        }
        Ok(gpu) => eprintln!("{} has no timestamp queries inside passes: GPU stage benchmarks skipped", gpu.adapter()),
        Err(e) => eprintln!("no GPU adapter, GPU stage benchmarks skipped: {e}"),
    }
}

criterion_group!(stages, benches);
criterion_main!(stages);
