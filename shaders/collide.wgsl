// Contact manifolds between two bodies for every pair of core kinds: the twin of src/collide.rs,
// function by function (same names, same order of operations, same feature keys). Needs the
// bindings `shapes`, `geometry` and `topology`.

struct Posed {
    shape: Shape,
    position: vec3<f32>,
    orientation: vec4<f32>,
}

struct Contact {
    core_a: vec3<f32>,
    core_b: vec3<f32>,
    separation: f32,
    key: u32,
}

struct Contacts {
    normal: vec3<f32>,
    count: u32,
    points: array<Contact, 4>,
}

struct WorldPlane {
    n: vec3<f32>,
    offset: f32,
}

fn local_point(p: Posed, k: u32) -> vec3<f32> {
    return geometry[p.shape.first_point + k].xyz;
}

fn world_point(p: Posed, k: u32) -> vec3<f32> {
    return p.position + rotate(p.orientation, local_point(p, k));
}

fn face_plane(p: Posed, f: u32) -> WorldPlane {
    let plane = geometry[p.shape.first_point + p.shape.point_count + f];
    let n = rotate(p.orientation, plane.xyz);
    return WorldPlane(n, plane.w + dot3(n, p.position));
}

fn local_face_normal(p: Posed, f: u32) -> vec3<f32> {
    return geometry[p.shape.first_point + p.shape.point_count + f].xyz;
}

fn face_start(p: Posed, f: u32) -> u32 {
    let t = p.shape.first_topology;
    return t + p.shape.face_count + 1u + topology[t + f];
}

fn face_len(p: Posed, f: u32) -> u32 {
    let t = p.shape.first_topology;
    return topology[t + f + 1u] - topology[t + f];
}

fn face_vertex(p: Posed, f: u32, j: u32) -> u32 {
    return topology[face_start(p, f) + j];
}

fn edge_of(p: Posed, e: u32) -> vec4<u32> {
    let w = p.shape.first_edge + 4u * e;
    return vec4<u32>(topology[w], topology[w + 1u], topology[w + 2u], topology[w + 3u]);
}

// The world bounds of the core's points: (min, max). Twin of `Posed::core_bounds`.
fn core_bounds(p: Posed) -> array<vec3<f32>, 2> {
    var lo = vec3<f32>(3.4028235e38);
    var hi = vec3<f32>(-3.4028235e38);
    for (var k = 0u; k < p.shape.point_count; k++) {
        let x = world_point(p, k);
        lo = min(lo, x);
        hi = max(hi, x);
    }
    return array<vec3<f32>, 2>(lo, hi);
}

// The smallest `d . x` over the core's points, world; a box's from its axes and half extents
// (`d . centre - sum h_k |d . e_k|`). Twin of `Posed::min_along`.
fn min_along(p: Posed, d: vec3<f32>) -> f32 {
    if p.shape.kind == SHAPE_BOX {
        let plus = p.shape.first_point + p.shape.point_count;
        let r0 = geometry[plus + 1u].w * abs(dot3(d, face_plane(p, 1u).n));
        let r1 = geometry[plus + 3u].w * abs(dot3(d, face_plane(p, 3u).n));
        let r2 = geometry[plus + 5u].w * abs(dot3(d, face_plane(p, 5u).n));
        return dot3(d, p.position) - (r0 + r1 + r2);
    }
    let local = rotate_inv(p.orientation, d);
    var best = 3.4028235e38;
    for (var k = 0u; k < p.shape.point_count; k++) {
        best = min(best, dot3(local, local_point(p, k)));
    }
    return best + dot3(d, p.position);
}

fn push_contact(m: ptr<function, Contacts>, a: Posed, b: Posed, world_a: vec3<f32>, world_b: vec3<f32>, separation: f32, key: u32) {
    if (*m).count < 4u {
        (*m).points[(*m).count] = Contact(world_a - a.position, world_b - b.position, separation, key);
        (*m).count += 1u;
    }
}

fn flipped(m: Contacts) -> Contacts {
    var out = m;
    out.normal = -m.normal;
    for (var k = 0u; k < m.count; k++) {
        out.points[k].core_a = m.points[k].core_b;
        out.points[k].core_b = m.points[k].core_a;
    }
    return out;
}

fn empty_contacts(normal: vec3<f32>) -> Contacts {
    var m: Contacts;
    m.normal = normal;
    m.count = 0u;
    return m;
}

fn direction(d: vec3<f32>, fallback: vec3<f32>) -> vec3<f32> {
    let len = length3(d);
    if len > 1e-9 {
        return d / len;
    }
    return fallback;
}

fn closest_on_segment(p: vec3<f32>, q: vec3<f32>, x: vec3<f32>) -> f32 {
    let d = q - p;
    let dd = dot3(d, d);
    if dd <= 1e-12 {
        return 0.0;
    }
    return clamp(dot3(x - p, d) / dd, 0.0, 1.0);
}

fn closest_between_segments(p1: vec3<f32>, q1: vec3<f32>, p2: vec3<f32>, q2: vec3<f32>) -> vec2<f32> {
    let d1 = q1 - p1;
    let d2 = q2 - p2;
    let r = p1 - p2;
    let a = dot3(d1, d1);
    let e = dot3(d2, d2);
    let f = dot3(d2, r);
    if a <= 1e-12 && e <= 1e-12 {
        return vec2<f32>(0.0, 0.0);
    }
    if a <= 1e-12 {
        return vec2<f32>(0.0, clamp(f / e, 0.0, 1.0));
    }
    let c = dot3(d1, r);
    if e <= 1e-12 {
        return vec2<f32>(clamp(-c / a, 0.0, 1.0), 0.0);
    }
    let b = dot3(d1, d2);
    let denom = a * e - b * b;
    var s = 0.0;
    if denom > 1e-12 * a * e {
        s = clamp((b * f - c * e) / denom, 0.0, 1.0);
    }
    var t = (b * s + f) / e;
    if t < 0.0 {
        t = 0.0;
        s = clamp(-c / a, 0.0, 1.0);
    } else if t > 1.0 {
        t = 1.0;
        s = clamp((b - c) / a, 0.0, 1.0);
    }
    return vec2<f32>(s, t);
}

// A unit vector orthogonal to v (the second tangent of tangent_basis), or y for a zero v.
fn any_orthonormal(v: vec3<f32>) -> vec3<f32> {
    return tangent_basis(direction(v, vec3<f32>(0.0, 1.0, 0.0))).t2;
}

fn point_point(a: Posed, b: Posed, margin: f32) -> Contacts {
    let pa = world_point(a, 0u);
    let pb = world_point(b, 0u);
    let n = direction(pb - pa, vec3<f32>(0.0, 1.0, 0.0));
    let separation = dot3(n, pb - pa) - a.shape.radius - b.shape.radius;
    var m = empty_contacts(n);
    if separation < margin {
        push_contact(&m, a, b, pa, pb, separation, 0u);
    }
    return m;
}

fn point_segment(a: Posed, b: Posed, margin: f32) -> Contacts {
    let pa = world_point(a, 0u);
    let b0 = world_point(b, 0u);
    let b1 = world_point(b, 1u);
    let pb = mix(b0, b1, closest_on_segment(b0, b1, pa));
    let n = direction(pb - pa, any_orthonormal(b1 - b0));
    let separation = dot3(n, pb - pa) - a.shape.radius - b.shape.radius;
    var m = empty_contacts(n);
    if separation < margin {
        push_contact(&m, a, b, pa, pb, separation, 0u);
    }
    return m;
}

fn segment_segment(a: Posed, b: Posed, margin: f32) -> Contacts {
    let a0 = world_point(a, 0u);
    let a1 = world_point(a, 1u);
    let b0 = world_point(b, 0u);
    let b1 = world_point(b, 1u);
    let st = closest_between_segments(a0, a1, b0, b1);
    let pa = mix(a0, a1, st.x);
    let pb = mix(b0, b1, st.y);
    let da = a1 - a0;
    let db = b1 - b0;
    let axis_fallback = direction(cross3(da, db), any_orthonormal(da));
    let n = direction(pb - pa, axis_fallback);
    let radii = a.shape.radius + b.shape.radius;
    var m = empty_contacts(n);
    let c = cross3(da, db);
    let parallel = dot3(c, c) <= 1e-6 * dot3(da, da) * dot3(db, db);
    if parallel {
        let dd = dot3(da, da);
        let u0 = dot3(b0 - a0, da) / dd;
        let u1 = dot3(b1 - a0, da) / dd;
        let lo = max(min(u0, u1), 0.0);
        let hi = min(max(u0, u1), 1.0);
        if hi - lo > 1e-4 {
            for (var k = 0u; k < 2u; k++) {
                let u = select(lo, hi, k == 1u);
                let qa = a0 + da * u;
                let qb = mix(b0, b1, closest_on_segment(b0, b1, qa));
                let separation = dot3(n, qb - qa) - radii;
                if separation < margin {
                    push_contact(&m, a, b, qa, qb, separation, 1u + k);
                }
            }
            return m;
        }
    }
    let separation = dot3(n, pb - pa) - radii;
    if separation < margin {
        push_contact(&m, a, b, pa, pb, separation, 0u);
    }
    return m;
}

fn closest_on_polytope(b: Posed, x: vec3<f32>) -> vec3<f32> {
    var best = x;
    var best_d2 = 3.4028235e38;
    for (var f = 0u; f < b.shape.face_count; f++) {
        let plane = face_plane(b, f);
        let height = dot3(plane.n, x) - plane.offset;
        if height <= 0.0 {
            continue;
        }
        let count = face_len(b, f);
        let projected = x - plane.n * height;
        var inside = true;
        var edge_best = x;
        var edge_d2 = 3.4028235e38;
        for (var j = 0u; j < count; j++) {
            let v0 = world_point(b, face_vertex(b, f, j));
            let v1 = world_point(b, face_vertex(b, f, (j + 1u) % count));
            if dot3(cross3(v1 - v0, projected - v0), plane.n) < 0.0 {
                inside = false;
            }
            let q = mix(v0, v1, closest_on_segment(v0, v1, x));
            let d = q - x;
            let d2 = dot3(d, d);
            if d2 < edge_d2 {
                edge_d2 = d2;
                edge_best = q;
            }
        }
        var q = edge_best;
        var d2 = edge_d2;
        if inside {
            q = projected;
            d2 = height * height;
        }
        if d2 < best_d2 {
            best_d2 = d2;
            best = q;
        }
    }
    return best;
}

struct FaceHit {
    face: u32,
    value: f32,
}

// The closest points of segment a0 a1 and polytope b, for a segment outside it.
fn closest_segment_polytope(b: Posed, a0: vec3<f32>, a1: vec3<f32>) -> array<vec3<f32>, 2> {
    var best = array<vec3<f32>, 2>(a0, closest_on_polytope(b, a0));
    var gap = best[1] - best[0];
    var best_d2 = dot3(gap, gap);
    let end = closest_on_polytope(b, a1);
    gap = end - a1;
    if dot3(gap, gap) < best_d2 {
        best = array<vec3<f32>, 2>(a1, end);
        best_d2 = dot3(gap, gap);
    }
    for (var e = 0u; e < b.shape.edge_count; e++) {
        let ed = edge_of(b, e);
        let p0 = world_point(b, ed.x);
        let p1 = world_point(b, ed.y);
        let st = closest_between_segments(a0, a1, p0, p1);
        let pa = mix(a0, a1, st.x);
        let pb = mix(p0, p1, st.y);
        gap = pb - pa;
        let d2 = dot3(gap, gap);
        if d2 < best_d2 {
            best = array<vec3<f32>, 2>(pa, pb);
            best_d2 = d2;
        }
    }
    return best;
}
fn deepest_face(b: Posed, x: vec3<f32>) -> FaceHit {
    var best = FaceHit(0u, -3.4028235e38);
    for (var f = 0u; f < b.shape.face_count; f++) {
        let plane = face_plane(b, f);
        let height = dot3(plane.n, x) - plane.offset;
        if height > best.value {
            best = FaceHit(f, height);
        }
    }
    return best;
}

fn point_polytope(a: Posed, b: Posed, margin: f32) -> Contacts {
    let pa = world_point(a, 0u);
    let radii = a.shape.radius + b.shape.radius;
    let hit = deepest_face(b, pa);
    let face_normal = face_plane(b, hit.face).n;
    var m = empty_contacts(vec3<f32>(0.0));
    if hit.value <= 0.0 {
        m.normal = -face_normal;
        let pb = pa - face_normal * hit.value;
        if hit.value - radii < margin {
            push_contact(&m, a, b, pa, pb, hit.value - radii, 0u);
        }
    } else {
        let pb = closest_on_polytope(b, pa);
        m.normal = direction(pb - pa, -face_normal);
        let separation = dot3(m.normal, pb - pa) - radii;
        if separation < margin {
            push_contact(&m, a, b, pa, pb, separation, 0u);
        }
    }
    return m;
}

fn segment_polytope(a: Posed, b: Posed, margin: f32) -> Contacts {
    let a0 = world_point(a, 0u);
    let a1 = world_point(a, 1u);
    let radii = a.shape.radius + b.shape.radius;
    var face = 0u;
    var face_sep = -3.4028235e38;
    for (var f = 0u; f < b.shape.face_count; f++) {
        let plane = face_plane(b, f);
        let s = min(dot3(plane.n, a0), dot3(plane.n, a1)) - plane.offset;
        if s > face_sep {
            face_sep = s;
            face = f;
        }
    }
    let centre = b.position;
    var edge = 0u;
    var edge_sep = -3.4028235e38;
    var edge_axis = vec3<f32>(0.0);
    for (var e = 0u; e < b.shape.edge_count; e++) {
        let ed = edge_of(b, e);
        if dot3(a1 - a0, face_plane(b, ed.z).n) * dot3(a1 - a0, face_plane(b, ed.w).n) >= 0.0 {
            continue;
        }
        let p0 = world_point(b, ed.x);
        let p1 = world_point(b, ed.y);
        let raw = cross3(a1 - a0, p1 - p0);
        let len = length3(raw);
        if len < 1e-6 * length3(a1 - a0) * length3(p1 - p0) {
            continue;
        }
        var axis = raw / len;
        if dot3(axis, p0 - centre) < 0.0 {
            axis = -axis;
        }
        let s = min(dot3(axis, a0), dot3(axis, a1)) + min_along(b, -axis);
        if s > edge_sep {
            edge_sep = s;
            edge = e;
            edge_axis = axis;
        }
    }
    var m = empty_contacts(vec3<f32>(0.0));
    let core_sep = max(face_sep, edge_sep);
    if core_sep - radii >= margin {
        return m;
    }
    if core_sep > 0.0 {
        // The cores are apart: the axes only bound their distance from below, and a rounded
        // segment needs the true distance.
        let closest = closest_segment_polytope(b, a0, a1);
        let pa = closest[0];
        let pb = closest[1];
        let distance = length3(pb - pa);
        if distance - radii >= margin {
            return m;
        }
        if face_sep + EDGE_TOLERANCE >= distance {
            let face_m = segment_face(a, b, face, margin);
            var deepest = 3.4028235e38;
            for (var k = 0u; k < face_m.count; k++) {
                deepest = min(deepest, face_m.points[k].separation);
            }
            if deepest <= distance - radii + EDGE_TOLERANCE {
                return face_m;
            }
        }
        m.normal = direction(pb - pa, -face_plane(b, face).n);
        push_contact(&m, a, b, pa, pb, distance - radii, 0xc0000000u);
        return m;
    }
    if edge_sep > face_sep + EDGE_TOLERANCE {
        let ed = edge_of(b, edge);
        let p0 = world_point(b, ed.x);
        let p1 = world_point(b, ed.y);
        let t = closest_between_segments(a0, a1, p0, p1).y;
        m.normal = -edge_axis;
        let pb = mix(p0, p1, t);
        if edge_sep - radii < margin {
            push_contact(&m, a, b, pb - m.normal * edge_sep, pb, edge_sep - radii, 0x80000000u | edge);
        }
        return m;
    }
    return segment_face(a, b, face, margin);
}

// Segment core a against face `face` of polytope b: the segment clipped to the face's side planes.
fn segment_face(a: Posed, b: Posed, face: u32, margin: f32) -> Contacts {
    let a0 = world_point(a, 0u);
    let a1 = world_point(a, 1u);
    let radii = a.shape.radius + b.shape.radius;
    let plane = face_plane(b, face);
    let n = plane.n;
    var m = empty_contacts(-n);
    let count = face_len(b, face);
    var t0 = 0.0;
    var t1 = 1.0;
    for (var j = 0u; j < count; j++) {
        let v0 = world_point(b, face_vertex(b, face, j));
        let v1 = world_point(b, face_vertex(b, face, (j + 1u) % count));
        let side = cross3(v1 - v0, n);
        let d0 = dot3(side, a0 - v0);
        let d1 = dot3(side, a1 - v0);
        if d0 > 0.0 && d1 > 0.0 {
            t0 = 1.0;
            t1 = 0.0;
        } else if d0 > 0.0 {
            t0 = max(t0, d0 / (d0 - d1));
        } else if d1 > 0.0 {
            t1 = min(t1, d0 / (d0 - d1));
        }
    }
    if t0 > t1 {
        var pa = a1;
        if dot3(n, a0) < dot3(n, a1) {
            pa = a0;
        }
        let height = dot3(n, pa) - plane.offset;
        if height - radii < margin {
            push_contact(&m, a, b, pa, pa - n * height, height - radii, face << 2u);
        }
        return m;
    }
    for (var k = 0u; k < 2u; k++) {
        let t = select(t0, t1, k == 1u);
        let pa = mix(a0, a1, t);
        let height = dot3(n, pa) - plane.offset;
        if height - radii < margin && (k == 0u || t1 - t0 > 1e-5) {
            push_contact(&m, a, b, pa, pa - n * height, height - radii, (face << 2u) | (1u + k));
        }
    }
    return m;
}

// The face of `reference` that separates it most from `other`, stopping at the first face
// that keeps them `margin` apart (`value - radii >= margin`: no contact, whatever the others).
fn best_face(reference: Posed, other: Posed, radii: f32, margin: f32) -> FaceHit {
    var best = FaceHit(0u, -3.4028235e38);
    for (var f = 0u; f < reference.shape.face_count; f++) {
        let plane = face_plane(reference, f);
        // A face whose bound cannot beat the best so far (the other centre of mass is inside
        // its core) skips the support query, as on the CPU: the same answer.
        if dot3(plane.n, other.position) - plane.offset <= best.value {
            continue;
        }
        let s = min_along(other, plane.n) - plane.offset;
        if s > best.value {
            best = FaceHit(f, s);
            if s - radii >= margin {
                break;
            }
        }
    }
    return best;
}

fn is_minkowski_face(a: vec3<f32>, b: vec3<f32>, c: vec3<f32>, d: vec3<f32>) -> bool {
    let bxa = cross3(b, a);
    let dxc = cross3(d, c);
    let cba = dot3(c, bxa);
    let dba = dot3(d, bxa);
    let adc = dot3(a, dxc);
    let bdc = dot3(b, dxc);
    return cba * dba < 0.0 && adc * bdc < 0.0 && cba * bdc > 0.0;
}

struct ClipPoint {
    p: vec3<f32>,
    key: u32,
}

struct Candidate {
    p: vec3<f32>,
    key: u32,
    s: f32,
}

// Twin of the `snap` closure of `face_contact`: a distance within `tolerance` of a side is zero.
fn snap_to_side(d: f32, tolerance: f32) -> f32 {
    if abs(d) <= tolerance {
        return 0.0;
    }
    return d;
}

// The unchosen candidate with the largest positive score along `axis` (mode 0: squared
// distance from `origin`; 1 and 2: plus and minus the signed area with `edge` about `n`).
fn farthest(cands: ptr<function, array<Candidate, MAX_CLIP_POINTS>>, kept: u32, chosen: vec4<i32>, mode: u32, origin: vec3<f32>, edge: vec3<f32>, n: vec3<f32>) -> i32 {
    var best = -1;
    var best_score = 1e-8;
    for (var i = 0u; i < kept; i++) {
        let ii = i32(i);
        if chosen.x == ii || chosen.y == ii || chosen.z == ii || chosen.w == ii {
            continue;
        }
        let d = (*cands)[i].p - origin;
        var score = dot3(d, d);
        if mode == 1u {
            score = dot3(cross3(edge, d), n);
        } else if mode == 2u {
            score = -dot3(cross3(edge, d), n);
        }
        if score > best_score {
            best = ii;
            best_score = score;
        }
    }
    return best;
}

fn face_contact(reference: Posed, incident: Posed, face: u32, margin: f32, radii: f32) -> Contacts {
    let plane = face_plane(reference, face);
    let n = plane.n;
    // The incident face: the most anti-parallel of the faces around the incident's deepest
    // vertex. (The most anti-parallel face overall can lie away from the overlap, on a hull of
    // small faces, and clip to nothing.)
    var support = 0u;
    var support_depth = 3.4028235e38;
    for (var k = 0u; k < incident.shape.point_count; k++) {
        let d = dot3(n, world_point(incident, k));
        if d < support_depth {
            support_depth = d;
            support = k;
        }
    }
    var incident_face = 0u;
    var lowest = 3.4028235e38;
    for (var f = 0u; f < incident.shape.face_count; f++) {
        var around = false;
        for (var j = 0u; j < face_len(incident, f); j++) {
            around = around || face_vertex(incident, f, j) == support;
        }
        if !around {
            continue;
        }
        let d = dot3(face_plane(incident, f).n, n);
        if d < lowest {
            lowest = d;
            incident_face = f;
        }
    }
    var poly: array<ClipPoint, MAX_CLIP_POINTS>;
    var clipped: array<ClipPoint, MAX_CLIP_POINTS>;
    var count = min(face_len(incident, incident_face), MAX_CLIP_POINTS);
    for (var j = 0u; j < count; j++) {
        poly[j] = ClipPoint(world_point(incident, face_vertex(incident, incident_face, j)), j);
    }
    let sides = face_len(reference, face);
    for (var side = 0u; side < sides; side++) {
        let v0 = world_point(reference, face_vertex(reference, face, side));
        let v1 = world_point(reference, face_vertex(reference, face, (side + 1u) % sides));
        let out = cross3(v1 - v0, n);
        // Distances within the tolerance count as on the side: such a vertex is kept, and no
        // clipped point is made beside it.
        let tolerance = CLIP_TOLERANCE * sqrt(dot3(out, out));
        var kept = 0u;
        for (var j = 0u; j < count; j++) {
            let p = poly[j].p;
            let key_p = poly[j].key;
            let q = poly[(j + 1u) % count].p;
            let dp = snap_to_side(dot3(out, p - v0), tolerance);
            let dq = snap_to_side(dot3(out, q - v0), tolerance);
            if dp <= 0.0 && kept < MAX_CLIP_POINTS {
                clipped[kept] = ClipPoint(p, key_p);
                kept += 1u;
            }
            if ((dp < 0.0 && dq > 0.0) || (dp > 0.0 && dq < 0.0)) && kept < MAX_CLIP_POINTS {
                var edge_key = key_p;
                if (key_p & 0x4000u) != 0u {
                    edge_key = (key_p >> 7u) & 0x7fu;
                }
                clipped[kept] = ClipPoint(p + (q - p) * (dp / (dp - dq)), 0x4000u | (edge_key << 7u) | side);
                kept += 1u;
            }
        }
        for (var j = 0u; j < kept; j++) {
            poly[j] = clipped[j];
        }
        count = kept;
    }
    var cands: array<Candidate, MAX_CLIP_POINTS>;
    var kept = 0u;
    for (var j = 0u; j < count; j++) {
        let s = dot3(n, poly[j].p) - plane.offset - radii;
        if s < margin {
            cands[kept] = Candidate(poly[j].p, poly[j].key, s);
            kept += 1u;
        }
    }
    var m = empty_contacts(n);
    if kept == 0u {
        // Clipping left nothing, yet the separating axis says the bodies are within the
        // margin: one contact at the deepest vertex, so no contact is lost.
        let s = support_depth - plane.offset - radii;
        if s < margin {
            let p = world_point(incident, support);
            push_contact(&m, reference, incident, p - n * (dot3(n, p) - plane.offset), p, s, face | (incident_face << 8u) | (0x3fffu << 16u));
        }
        return m;
    }
    var chosen = vec4<i32>(-1);
    var deepest = 0u;
    for (var i = 1u; i < kept; i++) {
        if cands[i].s < cands[deepest].s {
            deepest = i;
        }
    }
    chosen.x = i32(deepest);
    let origin = cands[deepest].p;
    chosen.y = farthest(&cands, kept, chosen, 0u, origin, vec3<f32>(0.0), n);
    if chosen.y >= 0 {
        let edge = cands[u32(chosen.y)].p - origin;
        chosen.z = farthest(&cands, kept, chosen, 1u, origin, edge, n);
        chosen.w = farthest(&cands, kept, chosen, 2u, origin, edge, n);
    }
    let base_key = face | (incident_face << 8u);
    for (var k = 0u; k < 4u; k++) {
        let i = chosen[k];
        if i < 0 {
            continue;
        }
        let c = cands[u32(i)];
        let on_reference = c.p - n * (dot3(n, c.p) - plane.offset);
        push_contact(&m, reference, incident, on_reference, c.p, c.s, base_key | (c.key << 16u));
    }
    return m;
}

// The largest `u . w` over unit vectors `u` on the shorter great arc from `n0` to `n1`, or `|w|`
// when the normals are nearly equal or nearly opposed. Twin of `arc_max`.
fn arc_max(n0: vec3<f32>, n1: vec3<f32>, w: vec3<f32>) -> f32 {
    let m = cross3(n0, n1);
    let mm = dot3(m, m);
    if mm < EDGE_PARALLEL_SIN * EDGE_PARALLEL_SIN {
        return length3(w);
    }
    let wp = w - m * (dot3(w, m) / mm);
    if dot3(cross3(n0, wp), m) >= 0.0 && dot3(cross3(wp, n1), m) >= 0.0 {
        return length3(wp);
    }
    return max(dot3(n0, w), dot3(n1, w));
}

// Whether no edge pair with A's edge from `p` between face normals `n0` and `n1` can separate
// by more than `floor`, judged from two points inside B's core. Twin of `EdgeFloor::rules_out`,
// in the world frame where the CPU's works in A's: the two differ only by rounding, far below
// the slack, and either rules out only edges that cannot decide the contact.
fn edge_ruled_out(p: vec3<f32>, n0: vec3<f32>, n1: vec3<f32>, inside0: vec3<f32>, inside1: vec3<f32>, floor: f32) -> bool {
    let w0 = inside0 - p;
    let w1 = inside1 - p;
    return arc_max(n0, n1, w0) + (EDGE_FLOOR_SLACK * length3(w0) + EDGE_FLOOR_MIN_SLACK) <= floor
        || arc_max(n0, n1, w1) + (EDGE_FLOOR_SLACK * length3(w1) + EDGE_FLOOR_MIN_SLACK) <= floor;
}

// The edge pair of A and B that separates most: (edge of A, edge of B), separation, and axis
// from A towards B; separation -3.4028235e38 when none builds a Minkowski face.
struct EdgeHit {
    pair: vec2<u32>,
    separation: f32,
    axis: vec3<f32>,
}

// The separation of A's edge `pa0`-`pa1` from B's edge `pb0`-`pb1` along their common normal
// (pointing away from A's centre), and that normal, as an EdgeHit for `pair`; separation
// -3.4028235e38 for near-parallel edges. Twin of `edge_separation`.
fn edge_separation(a: Posed, pair: vec2<u32>, pa0: vec3<f32>, pa1: vec3<f32>, pb0: vec3<f32>, pb1: vec3<f32>) -> EdgeHit {
    let raw = cross3(pa1 - pa0, pb1 - pb0);
    let len = length3(raw);
    if len < EDGE_PARALLEL_SIN * length3(pa1 - pa0) * length3(pb1 - pb0) {
        return EdgeHit(pair, -3.4028235e38, vec3<f32>(0.0));
    }
    var axis = raw / len;
    if dot3(axis, pa0 - a.position) < 0.0 {
        axis = -axis;
    }
    return EdgeHit(pair, dot3(axis, pb0 - pa0), axis);
}

// The edge pairs that build Minkowski faces, found in B's frame; with `may_rule` and past
// EDGE_FLOOR_MIN_EDGES edges on B, edges of A that cannot hold one separating more than `floor`
// are passed over (judged from B's centre and its deepest point below A's face `face_a`). Twin of
// `edge_query_dispatch` with `EdgeFloor` (the CPU also passes over B's edges that cannot hold
// one, and tests A's edges by a cheaper bound first: the same answer whenever it decides).
fn edge_query(a: Posed, b: Posed, face_a: u32, floor: f32, may_rule: bool) -> EdgeHit {
    let ruling = may_rule && b.shape.edge_count > EDGE_FLOOR_MIN_EDGES;
    var deepest = b.position;
    if ruling {
        let n = face_plane(a, face_a).n;
        var depth = 3.4028235e38;
        for (var k = 0u; k < b.shape.point_count; k++) {
            let x = world_point(b, k);
            if dot3(n, x) < depth {
                deepest = x;
                depth = dot3(n, x);
            }
        }
    }
    var best = EdgeHit(vec2<u32>(0u), -3.4028235e38, vec3<f32>(0.0));
    for (var ea = 0u; ea < a.shape.edge_count; ea++) {
        let eda = edge_of(a, ea);
        let pa0 = world_point(a, eda.x);
        let wa0 = face_plane(a, eda.z).n;
        let wa1 = face_plane(a, eda.w).n;
        if ruling && edge_ruled_out(pa0, wa0, wa1, b.position, deepest, floor) {
            continue;
        }
        let pa1 = world_point(a, eda.y);
        let na0 = rotate_inv(b.orientation, wa0);
        let na1 = rotate_inv(b.orientation, wa1);
        for (var eb = 0u; eb < b.shape.edge_count; eb++) {
            let edb = edge_of(b, eb);
            let nb0 = local_face_normal(b, edb.z);
            let nb1 = local_face_normal(b, edb.w);
            if !is_minkowski_face(na0, na1, -nb0, -nb1) {
                continue;
            }
            let hit = edge_separation(a, vec2<u32>(ea, eb), pa0, pa1, world_point(b, edb.x), world_point(b, edb.y));
            if hit.separation > best.separation {
                best = hit;
            }
        }
    }
    return best;
}

// Half of a box's extent along its axis `k` (the offset of its face `2k + 1`, `+e_k`).
fn box_half(p: Posed, k: u32) -> f32 {
    return geometry[p.shape.first_point + p.shape.point_count + 2u * k + 1u].w;
}

// How far a box reaches along the unit `l`, perpendicular to its axis `i`, from its centre.
fn box_reach(p: Posed, i: u32, l: vec3<f32>) -> f32 {
    let q = (i + 1u) % 3u;
    let r = (i + 2u) % 3u;
    return box_half(p, q) * abs(dot3(l, face_plane(p, 2u * q + 1u).n)) + box_half(p, r) * abs(dot3(l, face_plane(p, 2u * r + 1u).n));
}

// The edge of a box along its axis `i` furthest along `w`: edge `4 i + b_p + 2 b_q`, with
// `b_p`, `b_q` 1 on the plus side of axes `i + 1` and `i + 2` (`Polytope::cuboid`).
fn box_edge_along(p: Posed, i: u32, w: vec3<f32>) -> u32 {
    let bp = select(0u, 1u, dot3(w, face_plane(p, 2u * ((i + 1u) % 3u) + 1u).n) > 0.0);
    let bq = select(0u, 1u, dot3(w, face_plane(p, 2u * ((i + 2u) % 3u) + 1u).n) > 0.0);
    return 4u * i + bp + 2u * bq;
}

// The edge query of two boxes from the nine axes of their edge directions: the best axis's
// edge pair through `edge_separation`, or the general query when that pair is too nearly
// parallel. Twin of `box_edge_query`.
fn box_edge_query(a: Posed, b: Posed) -> EdgeHit {
    let d = b.position - a.position;
    var best_i = 0u;
    var best_k = 0u;
    var best_s = -3.4028235e38;
    var best_l = vec3<f32>(0.0);
    // Each axis unnormalized: the separation along `raw` is `len` times that along the unit
    // axis, so comparing with `len` times the best so far divides only for the best.
    for (var i = 0u; i < 3u; i++) {
        for (var k = 0u; k < 3u; k++) {
            let raw = cross3(face_plane(a, 2u * i + 1u).n, face_plane(b, 2u * k + 1u).n);
            let len = length3(raw);
            if len < BOX_PARALLEL_SIN {
                continue;
            }
            let along = dot3(raw, d);
            let s_raw = abs(along) - box_reach(a, i, raw) - box_reach(b, k, raw);
            if best_s == -3.4028235e38 || s_raw > best_s * len {
                let l = raw / len;
                best_i = i;
                best_k = k;
                best_s = s_raw / len;
                best_l = select(l, -l, along < 0.0);
            }
        }
    }
    if best_s == -3.4028235e38 {
        return EdgeHit(vec2<u32>(0u), best_s, vec3<f32>(0.0));
    }
    let pair = vec2<u32>(box_edge_along(a, best_i, best_l), box_edge_along(b, best_k, -best_l));
    let eda = edge_of(a, pair.x);
    let edb = edge_of(b, pair.y);
    let hit = edge_separation(a, pair, world_point(a, eda.x), world_point(a, eda.y), world_point(b, edb.x), world_point(b, edb.y));
    if hit.separation == -3.4028235e38 {
        return edge_query(a, b, 0u, 3.4028235e38, false);
    }
    return hit;
}

// The face that kept the last `polytope_polytope` or `collide_cached` pair a margin apart (A's,
// or B's with FACE_OF_B), or NO_FACE: set only when the caller cleared it.
var<private> separating_face: u32 = NO_FACE;

fn polytope_polytope(a: Posed, b: Posed, margin: f32) -> Contacts {
    let radii = a.shape.radius + b.shape.radius;
    // A face plane that keeps the shapes a margin apart: no contact (and no edge search).
    let fa = best_face(a, b, radii, margin);
    if fa.value - radii >= margin {
        separating_face = fa.face;
        return empty_contacts(vec3<f32>(0.0));
    }
    let fb = best_face(b, a, radii, margin);
    if fb.value - radii >= margin {
        separating_face = fb.face | FACE_OF_B;
        return empty_contacts(vec3<f32>(0.0));
    }
    // Only an edge pair that separates more than `floor` replaces the face contact.
    let floor = max(fa.value, fb.value) + EDGE_TOLERANCE;
    var hit: EdgeHit;
    if a.shape.kind == SHAPE_BOX && b.shape.kind == SHAPE_BOX {
        hit = box_edge_query(a, b);
    } else {
        hit = edge_query(a, b, fa.face, floor, true);
    }
    let pair = hit.pair;
    let sep_e = hit.separation;
    let axis_e = hit.axis;
    if sep_e > floor {
        var m = empty_contacts(axis_e);
        let eda = edge_of(a, pair.x);
        let edb = edge_of(b, pair.y);
        let pa0 = world_point(a, eda.x);
        let pa1 = world_point(a, eda.y);
        let pb0 = world_point(b, edb.x);
        let pb1 = world_point(b, edb.y);
        let st = closest_between_segments(pa0, pa1, pb0, pb1);
        let pa = mix(pa0, pa1, st.x);
        let pb = mix(pb0, pb1, st.y);
        let separation = dot3(axis_e, pb - pa) - radii;
        if separation < margin {
            push_contact(&m, a, b, pa, pb, separation, 0x80000000u | (pair.x << 12u) | pair.y);
        }
        return m;
    }
    if fb.value > fa.value + FACE_TOLERANCE {
        return flipped(face_contact(b, a, fb.face, margin, radii));
    }
    return face_contact(a, b, fa.face, margin, radii);
}

fn collide_ordered(a: Posed, b: Posed, margin: f32) -> Contacts {
    let ka = min(a.shape.kind, SHAPE_POLYTOPE);
    let kb = min(b.shape.kind, SHAPE_POLYTOPE);
    if ka == SHAPE_POINT && kb == SHAPE_POINT {
        return point_point(a, b, margin);
    }
    if ka == SHAPE_POINT && kb == SHAPE_SEGMENT {
        return point_segment(a, b, margin);
    }
    if ka == SHAPE_SEGMENT && kb == SHAPE_SEGMENT {
        return segment_segment(a, b, margin);
    }
    if ka == SHAPE_POINT && kb == SHAPE_POLYTOPE {
        return point_polytope(a, b, margin);
    }
    if ka == SHAPE_SEGMENT && kb == SHAPE_POLYTOPE {
        return segment_polytope(a, b, margin);
    }
    return polytope_polytope(a, b, margin);
}

// `collide` for a point core `a` (a particle): the same contacts through only the three
// functions a point can meet, so the particle loops do not inline the pair kernels (on
// llvmpipe that made every candidate cost what a box pair costs). Twin of `collide_point`.
fn collide_point(a: Posed, b: Posed, margin: f32) -> Contacts {
    if b.shape.kind == SHAPE_POINT {
        return point_point(a, b, margin);
    }
    if b.shape.kind == SHAPE_SEGMENT {
        return point_segment(a, b, margin);
    }
    return point_polytope(a, b, margin);
}

fn collide(a: Posed, b: Posed, margin: f32) -> Contacts {
    // Ordered by the kind of core: a box and a hull stay in their order. Twin of `core_kind`.
    if min(a.shape.kind, SHAPE_POLYTOPE) > min(b.shape.kind, SHAPE_POLYTOPE) {
        return flipped(collide_ordered(b, a, margin));
    }
    return collide_ordered(a, b, margin);
}

// `collide` for a pair whose last step may have found a face that kept it a margin apart
// (`face`: A's, or B's with FACE_OF_B, or NO_FACE): that face is tried first. Any face that
// keeps two polytopes a margin apart means no contact, so the contacts are `collide`'s. Leaves
// the face that kept the pair apart now, or NO_FACE, in `separating_face`. Twin of
// `collide_cached`.
fn collide_cached(a: Posed, b: Posed, margin: f32, face: u32) -> Contacts {
    separating_face = NO_FACE;
    if face != NO_FACE && a.shape.kind >= SHAPE_POLYTOPE && b.shape.kind >= SHAPE_POLYTOPE {
        var reference = a;
        var other = b;
        if (face & FACE_OF_B) != 0u {
            reference = b;
            other = a;
        }
        let f = face & ~FACE_OF_B;
        if f < reference.shape.face_count {
            let plane = face_plane(reference, f);
            if min_along(other, plane.n) - plane.offset - (a.shape.radius + b.shape.radius) >= margin {
                separating_face = face;
                return empty_contacts(vec3<f32>(0.0));
            }
        }
    }
    // Two polytopes go to `polytope_polytope` (equal core kinds: no flip), which sets the face.
    return collide(a, b, margin);
}
