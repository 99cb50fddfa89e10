// Bindings of the manifold solve stages: 8 storage buffers.

struct Index {
    value: u32,
}

@group(0) @binding(0) var<uniform> params: StepParams;
@group(0) @binding(1) var<uniform> work_layout: WorkLayout;
@group(0) @binding(2) var<uniform> bucket_index: Index;
@group(0) @binding(3) var<storage, read_write> bodies: array<Body>;
@group(0) @binding(4) var<storage, read> props: array<BodyProps>;
@group(0) @binding(5) var<storage, read_write> solver_bodies: array<SolverBody>;
@group(0) @binding(6) var<storage, read_write> manifolds: array<Manifold>;
@group(0) @binding(7) var<storage, read_write> work: array<u32>;
@group(0) @binding(8) var<storage, read_write> deltas: array<vec4<f32>>;
@group(0) @binding(9) var<storage, read_write> stats: array<Stats>;
// What the passes over a manifold read that depends on positions and masses alone, written by
// `prepare_manifolds` after each position update: per manifold sixteen vec4s (the words of
// `Prepared` in src/cpu/contacts.rs), then per body its world inverse inertia as three columns.
@group(0) @binding(10) var<storage, read_write> prepared: array<vec4<f32>>;

fn is_dynamic(body: u32) -> bool {
    return props[body].kind == KIND_DYNAMIC;
}
