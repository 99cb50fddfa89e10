// Bindings of the particle stages: 7 storage buffers.

@group(0) @binding(0) var<uniform> params: StepParams;
@group(0) @binding(1) var<storage, read> geometry: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> colliders: array<Collider>;
@group(0) @binding(3) var<storage, read_write> particles: array<Particle>;
@group(0) @binding(4) var<storage, read_write> work: array<u32>;
@group(0) @binding(5) var<storage, read_write> scratch: array<vec4<f32>>;
@group(0) @binding(6) var<storage, read_write> bodies: array<Body>;
@group(0) @binding(7) var<storage, read> props: array<BodyProps>;
