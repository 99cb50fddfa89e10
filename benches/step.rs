//! Cost of a whole step (narrow phase, 4 substeps of integrate / solve / integrate / relax,
//! restitution) for the falling rain at 1,000 and 10,000 bodies, on the CPU reference path and,
//! when an adapter is present, on the GPU. The GPU group is named after the adapter: a
//! software adapter's timings say nothing about a GPU.
//!
//! `cargo bench --bench step`

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use signorini::prelude::*;
use signorini::scenes::{FallingBodies, falling_bodies};

fn world(count: usize) -> World {
    falling_bodies(WorldDesc::default(), FallingBodies { count, ramp: true, seed: 1, damping: 0.0, tumble: true })
        .expect("scene")
}

/// Steps a solver into the settled part of the scene, then times single steps.
fn bench_solver(c: &mut Criterion, group_name: &str, make: &dyn Fn(&World) -> Box<dyn Solver>) {
    let mut group = c.benchmark_group(group_name);
    group.sample_size(20);
    for count in [1_000, 10_000] {
        let w = world(count);
        let mut solver = make(&w);
        solver.step_many(120);
        solver.synchronize().expect("sync");
        group.throughput(Throughput::Elements(count as u64));
        group.bench_with_input(BenchmarkId::from_parameter(count), &count, |b, _| {
            b.iter(|| {
                solver.step();
                solver.synchronize().expect("sync");
            })
        });
    }
    group.finish();
}

fn benches(c: &mut Criterion) {
    bench_solver(c, "step/cpu", &|w| Box::new(CpuSolver::new(w).expect("cpu")));
    match GpuContext::new() {
        Ok(gpu) => {
            let kind = if gpu.adapter().software { "software" } else { "hardware" };
            let name = format!("step/gpu ({kind}: {})", gpu.adapter().name);
            bench_solver(c, &name, &|w| Box::new(GpuSolver::new(&gpu, w).expect("gpu")));
        }
        Err(e) => eprintln!("no GPU adapter, GPU benchmarks skipped: {e}"),
    }
}

criterion_group!(step, benches);
criterion_main!(step);
