// Bindings of the particle stages: 8 storage buffers. `slots` holds the particle-body slots (normal,
// lever and impulse as three vec4 each), `deltas` each particle's position change then its
// velocity change; two buffers, so that neither outgrows a storage binding first. `contacts`
// holds each particle's PARTICLE_CONTACT_SLOTS kept contacts (the impulse's bits, then the id),
// in place of the colliders' buffer: the colliders' records sit in the work arena.

@group(0) @binding(0) var<uniform> params: StepParams;
@group(0) @binding(1) var<storage, read> geometry: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> contacts: array<vec4<u32>>;
@group(0) @binding(3) var<storage, read_write> particles: array<Particle>;
@group(0) @binding(4) var<storage, read_write> work: array<u32>;
@group(0) @binding(5) var<storage, read_write> slots: array<vec4<f32>>;
@group(0) @binding(6) var<storage, read_write> bodies: array<Body>;
@group(0) @binding(7) var<storage, read> props: array<BodyProps>;
@group(0) @binding(8) var<storage, read_write> deltas: array<vec4<f32>>;

// Collider i, from its eight words in the work arena (a `Collider`).
fn collider_at(i: u32) -> Collider {
    let w = params.particle_colliders + 8u * i;
    let normal = vec3<f32>(bitcast<f32>(work[w]), bitcast<f32>(work[w + 1u]), bitcast<f32>(work[w + 2u]));
    return Collider(normal, bitcast<f32>(work[w + 3u]), bitcast<f32>(work[w + 4u]), bitcast<f32>(work[w + 5u]), work[w + 6u], work[w + 7u]);
}
