//! Cost of baking a grid SDF from a closed triangle mesh (`GridSdf::from_mesh`): UV spheres of
//! radius 0.5 m with more and more triangles, and the bowl of the baked-bowl scene, each into
//! a grid of 1/24 m cells (about 31,000 samples for the sphere), on every core.
//!
//! `cargo bench --bench sdf_bake`. Under `cargo test --all-targets` each benchmark runs once on
//! the coarsest sphere.

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use signorini::scenes;
use signorini::sdf::GridSdf;

/// Whether criterion measures (`cargo bench` passes `--bench`) rather than checking that each
/// benchmark runs once (`cargo test --all-targets`).
fn measuring() -> bool {
    std::env::args().any(|a| a == "--bench")
}

fn benches(c: &mut Criterion) {
    let mut group = c.benchmark_group("sdf_bake");
    group.sample_size(10);
    let cell = 1.0 / 24.0;
    let segments: &[u32] = if measuring() { &[24, 48, 96, 192] } else { &[24] };
    let mut meshes: Vec<(String, _)> =
        segments.iter().map(|&s| (format!("sphere_{s}x{}", s / 2), scenes::uv_sphere_mesh(0.5, s, s / 2))).collect();
    if measuring() {
        meshes.push(("bowl_48x16".into(), scenes::bowl_mesh(0.5, 0.125, 48, 16)));
    }
    for (name, (vertices, triangles)) in &meshes {
        let samples = GridSdf::from_mesh(vertices, triangles, cell).expect("a closed mesh").values().len();
        group.throughput(Throughput::Elements(samples as u64));
        group.bench_function(BenchmarkId::new(name.as_str(), triangles.len()), |b| {
            b.iter(|| GridSdf::from_mesh(vertices, triangles, cell).expect("a closed mesh"))
        });
    }
    group.finish();
}

criterion_group!(sdf_bake, benches);
criterion_main!(sdf_bake);
