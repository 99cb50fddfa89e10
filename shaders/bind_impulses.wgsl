// Bindings of the stage that applies the impulses a program gave between steps.

@group(0) @binding(0) var<storage, read_write> bodies: array<Body>;
@group(0) @binding(1) var<storage, read> props: array<BodyProps>;
@group(0) @binding(2) var<storage, read> impulses: array<Impulse>;
// How many of `impulses` the dispatch applies (in `x`).
@group(0) @binding(3) var<uniform> impulse_count: vec4<u32>;
