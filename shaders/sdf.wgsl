// Signed distance fields: a compiled program (SDF_NODE_VEC4S vec4s per node in `geometry`:
// rotation, translation with the kind in w, parameters, grid sample offset; then grid samples)
// evaluated on a small stack. Twin of
// `primitive_distance` and `evaluate_program` in src/sdf/mod.rs, operation for operation.

fn sdf_sign(x: f32) -> f32 {
    return select(1.0, -1.0, x < 0.0);
}

// Distance (w) and unit gradient (xyz) of a primitive at the local point p.
fn sdf_primitive(kind: u32, a: vec4<f32>, p: vec3<f32>) -> vec4<f32> {
    switch kind {
        case SDF_SPHERE: {
            let l = sqrt(dot3(p, p));
            var g = vec3<f32>(0.0, 1.0, 0.0);
            if l > 0.0 {
                g = p * (1.0 / l);
            }
            return vec4<f32>(g, l - a.x);
        }
        case SDF_CUBOID: {
            let inner = vec3<f32>(a.x - a.w, a.y - a.w, a.z - a.w);
            let q = vec3<f32>(abs(p.x) - inner.x, abs(p.y) - inner.y, abs(p.z) - inner.z);
            let o = vec3<f32>(max(q.x, 0.0), max(q.y, 0.0), max(q.z, 0.0));
            let lo = sqrt(dot3(o, o));
            if lo > 0.0 {
                let inv = 1.0 / lo;
                return vec4<f32>(sdf_sign(p.x) * o.x * inv, sdf_sign(p.y) * o.y * inv, sdf_sign(p.z) * o.z * inv, lo - a.w);
            }
            if q.x >= q.y && q.x >= q.z {
                return vec4<f32>(sdf_sign(p.x), 0.0, 0.0, q.x - a.w);
            }
            if q.y >= q.z {
                return vec4<f32>(0.0, sdf_sign(p.y), 0.0, q.y - a.w);
            }
            return vec4<f32>(0.0, 0.0, sdf_sign(p.z), q.z - a.w);
        }
        case SDF_CAPSULE: {
            let v = vec3<f32>(p.x, p.y - clamp(p.y, -a.x, a.x), p.z);
            let l = sqrt(dot3(v, v));
            var g = vec3<f32>(1.0, 0.0, 0.0);
            if l > 0.0 {
                g = v * (1.0 / l);
            }
            return vec4<f32>(g, l - a.y);
        }
        case SDF_CYLINDER, SDF_TORUS: {
            let rho = sqrt(p.x * p.x + p.z * p.z);
            var e = vec3<f32>(1.0, 0.0, 0.0);
            if rho > 0.0 {
                e = vec3<f32>(p.x * (1.0 / rho), 0.0, p.z * (1.0 / rho));
            }
            if kind == SDF_TORUS {
                let qx = rho - a.x;
                let qy = p.y;
                let l = sqrt(qx * qx + qy * qy);
                var g = e;
                if l > 0.0 {
                    g = (e * qx + vec3<f32>(0.0, qy, 0.0)) * (1.0 / l);
                }
                return vec4<f32>(g, l - a.y);
            }
            let dx = rho - a.y;
            let dy = abs(p.y) - a.x;
            if dx > 0.0 && dy > 0.0 {
                let l = sqrt(dx * dx + dy * dy);
                return vec4<f32>((e * dx + vec3<f32>(0.0, sdf_sign(p.y) * dy, 0.0)) * (1.0 / l), l);
            }
            if dx > dy {
                return vec4<f32>(e, dx);
            }
            return vec4<f32>(0.0, sdf_sign(p.y), 0.0, dy);
        }
        default: {
            return vec4<f32>(a.xyz, dot3(a.xyz, p) - a.w);
        }
    }
}

fn sdf_union(a: vec4<f32>, b: vec4<f32>) -> vec4<f32> {
    return select(b, a, a.w <= b.w);
}

fn sdf_intersection(a: vec4<f32>, b: vec4<f32>) -> vec4<f32> {
    return select(b, a, a.w >= b.w);
}

// Distance (w) and unit gradient (xyz) at the world point x of the program of `count` nodes
// starting at geometry[first].
fn sdf_evaluate(first: u32, count: u32, x: vec3<f32>) -> vec4<f32> {
    var stack: array<vec4<f32>, SDF_STACK_DEPTH>;
    var top = 0u;
    for (var k = 0u; k < count; k++) {
        let base = first + k * SDF_NODE_VEC4S;
        let translation = geometry[base + 1u];
        let kind = u32(translation.w);
        if kind == SDF_UNION || kind == SDF_INTERSECTION || kind == SDF_SUBTRACTION {
            let a = stack[top - 2u];
            let b = stack[top - 1u];
            if kind == SDF_UNION {
                stack[top - 2u] = sdf_union(a, b);
            } else if kind == SDF_INTERSECTION {
                stack[top - 2u] = sdf_intersection(a, b);
            } else {
                stack[top - 2u] = sdf_intersection(a, -b);
            }
            top -= 1u;
        } else if kind == SDF_INVERT {
            stack[top - 1u] = -stack[top - 1u];
        } else {
            let q = geometry[base];
            let p = rotate_inv(q, x - translation.xyz);
            var r: vec4<f32>;
            if kind == SDF_GRID {
                r = sdf_grid(first + u32(geometry[base + 3u].x), geometry[base + 2u], p);
            } else {
                r = sdf_primitive(kind, geometry[base + 2u], p);
            }
            stack[top] = vec4<f32>(rotate(q, r.xyz), r.w);
            top += 1u;
        }
    }
    return stack[0];
}

// One sample of a grid whose samples start at geometry[base] (four per vec4).
fn sdf_grid_value(base: u32, i: u32) -> f32 {
    return geometry[base + i / 4u][i % 4u];
}

// Trilinear distance (w) and unit gradient (xyz) at p (relative to sample (0, 0, 0)) of a grid of
// a.xyz samples a.w apart. Twin of `grid_sample` in src/sdf/grid.rs.
fn sdf_grid(base: u32, a: vec4<f32>, p: vec3<f32>) -> vec4<f32> {
    let dims = vec3<u32>(u32(a.x), u32(a.y), u32(a.z));
    let h = a.w;
    let extent = vec3<f32>(f32(dims.x - 1u) * h, f32(dims.y - 1u) * h, f32(dims.z - 1u) * h);
    let clamped = vec3<f32>(clamp(p.x, 0.0, extent.x), clamp(p.y, 0.0, extent.y), clamp(p.z, 0.0, extent.z));
    let g = clamped * (1.0 / h);
    let cell = vec3<u32>(min(u32(g.x), dims.x - 2u), min(u32(g.y), dims.y - 2u), min(u32(g.z), dims.z - 2u));
    let f = vec3<f32>(g.x - f32(cell.x), g.y - f32(cell.y), g.z - f32(cell.z));
    let row = dims.x;
    let slice = dims.x * dims.y;
    let i000 = (cell.z * dims.y + cell.y) * dims.x + cell.x;
    let c000 = sdf_grid_value(base, i000);
    let c100 = sdf_grid_value(base, i000 + 1u);
    let c010 = sdf_grid_value(base, i000 + row);
    let c110 = sdf_grid_value(base, i000 + row + 1u);
    let c001 = sdf_grid_value(base, i000 + slice);
    let c101 = sdf_grid_value(base, i000 + slice + 1u);
    let c011 = sdf_grid_value(base, i000 + slice + row);
    let c111 = sdf_grid_value(base, i000 + slice + row + 1u);
    let c00 = c000 + f.x * (c100 - c000);
    let c10 = c010 + f.x * (c110 - c010);
    let c01 = c001 + f.x * (c101 - c001);
    let c11 = c011 + f.x * (c111 - c011);
    let c0 = c00 + f.y * (c10 - c00);
    let c1 = c01 + f.y * (c11 - c01);
    let d = c0 + f.z * (c1 - c0);
    let gy0 = (1.0 - f.x) * (c010 - c000) + f.x * (c110 - c100);
    let gy1 = (1.0 - f.x) * (c011 - c001) + f.x * (c111 - c101);
    let gx0 = (1.0 - f.y) * (c100 - c000) + f.y * (c110 - c010);
    let gx1 = (1.0 - f.y) * (c101 - c001) + f.y * (c111 - c011);
    let grad = vec3<f32>(gx0 + f.z * (gx1 - gx0), gy0 + f.z * (gy1 - gy0), c1 - c0);
    let outside = p - clamped;
    let lo = sqrt(dot3(outside, outside));
    if lo > 0.0 {
        if d < 0.0 {
            return vec4<f32>(outside * (1.0 / lo), d + lo);
        }
        let along = vec3<f32>(
            select(0.0, grad.x, outside.x == 0.0),
            select(0.0, grad.y, outside.y == 0.0),
            select(0.0, grad.z, outside.z == 0.0),
        );
        let n = outside + d * along;
        return vec4<f32>(n * (1.0 / sqrt(dot3(n, n))), sqrt(d * d + lo * lo));
    }
    let lg = sqrt(dot3(grad, grad));
    if lg > 0.0 {
        return vec4<f32>(grad * (1.0 / lg), d);
    }
    return vec4<f32>(0.0, 1.0, 0.0, d);
}
