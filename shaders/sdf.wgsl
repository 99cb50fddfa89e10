// Signed distance fields: a compiled program (SDF_NODE_VEC4S vec4s per node in `geometry`:
// rotation, translation with the kind in w, parameters) evaluated on a small stack. Twin of
// `primitive_distance` and `evaluate_program` in src/sdf.rs, operation for operation.

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
            let r = sdf_primitive(kind, geometry[base + 2u], rotate_inv(q, x - translation.xyz));
            stack[top] = vec4<f32>(rotate(q, r.xyz), r.w);
            top += 1u;
        }
    }
    return stack[0];
}
