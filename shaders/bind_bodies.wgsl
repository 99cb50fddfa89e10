// Bindings of the per-body stages (static colliders, integration, statistics).

@group(0) @binding(0) var<uniform> params: StepParams;
@group(0) @binding(1) var<storage, read_write> bodies: array<Body>;
@group(0) @binding(2) var<storage, read> props: array<BodyProps>;
@group(0) @binding(3) var<storage, read> shapes: array<Shape>;
@group(0) @binding(4) var<storage, read> geometry: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read> colliders: array<Collider>;
@group(0) @binding(6) var<storage, read_write> solver_bodies: array<SolverBody>;
@group(0) @binding(7) var<storage, read_write> contacts: array<StaticContact>;
@group(0) @binding(8) var<storage, read_write> stats: array<Stats>;

fn is_dynamic(body: u32) -> bool {
    return props[body].kind == KIND_DYNAMIC;
}

fn slot_index(pr: BodyProps, sh: Shape, collider: u32, point: u32) -> u32 {
    return pr.slot_offset + collider * sh.point_count + point;
}
