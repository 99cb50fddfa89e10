// Bindings of the stages in which bodies find the particles touching them: 8 storage buffers.
// `work` is the particle stages' work arena, here with atomic words (slot counters).

@group(0) @binding(0) var<uniform> params: StepParams;
@group(0) @binding(1) var<storage, read> geometry: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> particles: array<Particle>;
@group(0) @binding(3) var<storage, read_write> work: array<atomic<u32>>;
@group(0) @binding(4) var<storage, read_write> slots: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read> bodies: array<Body>;
@group(0) @binding(6) var<storage, read> props: array<BodyProps>;
@group(0) @binding(7) var<storage, read> shapes: array<Shape>;
@group(0) @binding(8) var<storage, read> topology: array<u32>;
