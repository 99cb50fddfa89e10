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

// The slot of point `point`'s contact with surface `surface` (0 its nearest, 1 its second, 2 its
// third) of collider `collider`: the first surfaces, one block per collider, then one block per
// SDF for the second surfaces, then one per SDF for the third (planes have one surface). Twin of
// `surface_slot` in src/cpu/stages.rs.
fn surface_slot_index(pr: BodyProps, sh: Shape, collider: u32, point: u32, surface: u32) -> u32 {
    var block = collider;
    if surface != 0u {
        block = params.collider_count + (surface - 1u) * (params.collider_count - params.plane_count) + collider - params.plane_count;
    }
    return pr.slot_offset + block * sh.point_count + point;
}

// One past a body's last slot: a first contact per collider and point, a second and a third per
// SDF. Twin of `static_slot_count` in src/layout.rs.
fn slot_end(pr: BodyProps, sh: Shape) -> u32 {
    return pr.slot_offset + (3u * params.collider_count - 2u * params.plane_count) * sh.point_count;
}
