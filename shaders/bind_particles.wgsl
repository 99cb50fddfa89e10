// Bindings of the particle stages: 8 storage buffers. `slots` holds the particle-body slots (normal,
// lever and impulse as three vec4 each), `deltas` each particle's position change then its
// velocity change; two buffers, so that neither outgrows a storage binding first.

@group(0) @binding(0) var<uniform> params: StepParams;
@group(0) @binding(1) var<storage, read> geometry: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> colliders: array<Collider>;
@group(0) @binding(3) var<storage, read_write> particles: array<Particle>;
@group(0) @binding(4) var<storage, read_write> work: array<u32>;
@group(0) @binding(5) var<storage, read_write> slots: array<vec4<f32>>;
@group(0) @binding(6) var<storage, read_write> bodies: array<Body>;
@group(0) @binding(7) var<storage, read> props: array<BodyProps>;
@group(0) @binding(8) var<storage, read_write> deltas: array<vec4<f32>>;
