// Bindings of the particle stages: 3 storage buffers.

@group(0) @binding(0) var<uniform> params: StepParams;
@group(0) @binding(1) var<storage, read> geometry: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> colliders: array<Collider>;
@group(0) @binding(3) var<storage, read_write> particles: array<Particle>;
