// Bindings of the manifold stages (compaction, adjacency, coloring, bucketing): 8 storage buffers.

struct Index {
    value: u32,
}

@group(0) @binding(0) var<uniform> params: StepParams;
@group(0) @binding(1) var<uniform> work_layout: WorkLayout;
@group(0) @binding(2) var<uniform> round_index: Index;
@group(0) @binding(3) var<storage, read> props: array<BodyProps>;
@group(0) @binding(4) var<storage, read> candidates: array<Manifold>;
@group(0) @binding(5) var<storage, read> previous: array<Manifold>;
@group(0) @binding(6) var<storage, read_write> manifolds: array<Manifold>;
@group(0) @binding(7) var<storage, read_write> work: array<u32>;
@group(0) @binding(8) var<storage, read_write> counters: array<atomic<u32>>;
@group(0) @binding(9) var<storage, read_write> args: array<u32>;
@group(0) @binding(10) var<storage, read> bodies: array<Body>;

fn is_dynamic(body: u32) -> bool {
    return props[body].kind == KIND_DYNAMIC;
}
