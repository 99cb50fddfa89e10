// Manifold passes on the GPU, one dispatch per color (a color's manifolds share no dynamic body)
// and the overflow by mass-splitting Jacobi: twins of `solve_manifolds`, `manifold_pass`,
// `coarse_correction`, `restitution`, `apply_at` and `jacobi` in src/cpu/contacts.rs.

const PASS_SOLVE: u32 = 1u;
const PASS_RELAX: u32 = 2u;
const PASS_RESTITUTION: u32 = 3u;

struct Motion {
    v: vec3<f32>,
    w: vec3<f32>,
    inv_mass: f32,
    inv_inertia: mat3x3<f32>,
}

// A body's motion with the inverse inertia of its current orientation; `split` scales its
// inverse mass and inertia (the Jacobi sub-body).
fn motion_of(i: u32, split: f32) -> Motion {
    let b = bodies[i];
    if !is_dynamic(i) {
        return Motion(b.linear_velocity, b.angular_velocity, 0.0, mat3x3<f32>(vec3<f32>(0.0), vec3<f32>(0.0), vec3<f32>(0.0)));
    }
    let inv = world_inverse_inertia(b.orientation, props[i].inv_inertia);
    return Motion(b.linear_velocity, b.angular_velocity, b.inv_mass * split, inv * split);
}

// Manifold `i`'s point `k` in `prepared`: four vec4s, the sixteen words of `PreparedPoint` in
// src/cpu/contacts.rs (ra, rb, separation, k_n, 1 / k_n, the tangent block's inverse, 1 / λmax,
// then three words of the manifold's: t1 in point 0's, t2 in point 1's, the normal in point 2's).
fn prepared_at(i: u32, k: u32) -> u32 {
    return PREPARED_MANIFOLD_VEC4S * i + 4u * k;
}

// Body `body`'s world inverse inertia in `prepared`, after the manifolds' records.
fn inertia_at(body: u32) -> u32 {
    return PREPARED_MANIFOLD_VEC4S * work_layout.manifold_capacity + PREPARED_BODY_VEC4S * body;
}

// Whether the passes read the prepared records (`SolverSettings::gpu_prepared_passes`) or
// compute the same words themselves: a pipeline constant, so that each pipeline holds one way
// only (a uniform branch between both cost lavapipe a quarter of the solve's time). Every solve
// pipeline sets it; the default is the setting's.
override PREPARED_PASSES: bool = false;

fn reads_prepared() -> bool {
    return PREPARED_PASSES;
}

// `motion_of` with the inverse inertia the last preparation stored (the same bits, read instead
// of computed: the orientations have not moved since), or computed when nothing is prepared.
fn pass_motion(i: u32, split: f32) -> Motion {
    if !reads_prepared() {
        return motion_of(i, split);
    }
    let b = bodies[i];
    if !is_dynamic(i) {
        return Motion(b.linear_velocity, b.angular_velocity, 0.0, mat3x3<f32>(vec3<f32>(0.0), vec3<f32>(0.0), vec3<f32>(0.0)));
    }
    let at = inertia_at(i);
    let inv = mat3x3<f32>(prepared[at].xyz, prepared[at + 1u].xyz, prepared[at + 2u].xyz);
    return Motion(b.linear_velocity, b.angular_velocity, b.inv_mass * split, inv * split);
}

// Point `k` of manifold `i` (a copy at `m`): its lever arms and separation, prepared or computed.
fn pass_geometry(i: u32, m: ptr<function, Manifold>, k: u32) -> Geometry {
    if !reads_prepared() {
        return geometry_of(m, k);
    }
    let at = prepared_at(i, k);
    let a = prepared[at];
    let b = prepared[at + 1u];
    return Geometry(a.xyz, vec3<f32>(a.w, b.x, b.y), b.z);
}

// Point `k`'s `k_n`.
fn prepared_normal_inverse_mass(i: u32, k: u32) -> f32 {
    return prepared[prepared_at(i, k) + 1u].w;
}

// Point `k`'s `1 / k_n`.
fn prepared_normal_mass(i: u32, k: u32) -> f32 {
    return prepared[prepared_at(i, k) + 2u].x;
}

// Point `k`'s friction factors (`friction_factors`).
fn prepared_friction(i: u32, k: u32) -> vec4<f32> {
    let at = prepared_at(i, k);
    return vec4<f32>(prepared[at + 2u].yzw, prepared[at + 3u].x);
}

// Manifold `i`'s tangents (of `normal`), prepared or computed.
fn pass_basis(i: u32, normal: vec3<f32>) -> Basis {
    if !reads_prepared() {
        return tangent_basis(normal);
    }
    return Basis(prepared[prepared_at(i, 0u) + 3u].yzw, prepared[prepared_at(i, 1u) + 3u].yzw);
}

fn apply(m: ptr<function, Motion>, r: vec3<f32>, impulse: vec3<f32>) {
    (*m).v += (*m).inv_mass * impulse;
    (*m).w += mat3_mul((*m).inv_inertia, cross3(r, impulse));
}

// `impulse` at `count` points at once, `levers` the sum of their lever arms. Twin of
// `Motion::apply_sum`.
fn apply_sum(m: ptr<function, Motion>, levers: vec3<f32>, count: f32, impulse: vec3<f32>) {
    (*m).v += (count * (*m).inv_mass) * impulse;
    (*m).w += mat3_mul((*m).inv_inertia, cross3(levers, impulse));
}

fn velocity_at(m: Motion, r: vec3<f32>) -> vec3<f32> {
    return m.v + cross3(m.w, r);
}

// Applies `impulse` to B at a contact (its opposite to A); returns its work on the pair when
// `track` (only a manifold that can bounce reads it).
fn apply_at(ma: ptr<function, Motion>, mb: ptr<function, Motion>, g: Geometry, impulse: vec3<f32>, track: bool) -> f32 {
    if !track {
        apply(ma, g.ra, -impulse);
        apply(mb, g.rb, impulse);
        return 0.0;
    }
    let before = velocity_at(*mb, g.rb) - velocity_at(*ma, g.ra);
    apply(ma, g.ra, -impulse);
    apply(mb, g.rb, impulse);
    let after = velocity_at(*mb, g.rb) - velocity_at(*ma, g.ra);
    return dot3(impulse, before + after) * 0.5;
}

fn rotational(m: Motion, r: vec3<f32>, d: vec3<f32>, e: vec3<f32>) -> f32 {
    return dot3(cross3(r, d), mat3_mul(m.inv_inertia, cross3(r, e)));
}

struct Soft {
    bias_rate: f32,
    mass_scale: f32,
    impulse_scale: f32,
}

fn softness(ma: Motion, mb: Motion) -> Soft {
    if ma.inv_mass == 0.0 || mb.inv_mass == 0.0 {
        return Soft(params.static_bias_rate, params.static_mass_scale, params.static_impulse_scale);
    }
    return Soft(params.contact_bias_rate, params.contact_mass_scale, params.contact_impulse_scale);
}

fn contact_bias(soft: Soft, s: f32, use_bias: bool) -> Soft {
    if s > 0.0 {
        return Soft(s * params.inv_h, 1.0, 0.0);
    }
    if use_bias {
        return Soft(max(soft.bias_rate * min(s + params.linear_slop, 0.0), -params.max_push_velocity), soft.mass_scale, soft.impulse_scale);
    }
    return Soft(0.0, 1.0, 0.0);
}

struct Geometry {
    ra: vec3<f32>,
    rb: vec3<f32>,
    separation: f32,
}

// The words of a manifold `geometry_of` reads besides the point.
struct Head {
    body_a: u32,
    body_b: u32,
    normal: vec3<f32>,
    radius_a: f32,
    radius_b: f32,
    frame_kept: u32,
}

// Levers to the midpoint of the two surface points as the bodies move, or, in a kept frame,
// the cores as they were when it was taken; separation from the cores' motion. Twin of
// `geometry` in src/cpu/contacts.rs. The manifold goes by pointer: a shader compiler may copy
// a struct passed by value, and a copy of its 384 bytes for each point cost lavapipe a fifth of
// the solve.
fn geometry_of(mp: ptr<function, Manifold>, k: u32) -> Geometry {
    let c = (*mp).points[k];
    let m = Head((*mp).body_a, (*mp).body_b, (*mp).normal, (*mp).radius_a, (*mp).radius_b, (*mp).frame_kept);
    let n = m.normal;
    let sa = solver_bodies[m.body_a];
    let sb = solver_bodies[m.body_b];
    let ca = rotate(sa.delta_rotation, c.core_a);
    let cb = rotate(sb.delta_rotation, c.core_b);
    let separation = c.base_separation + dot3(n, (sb.delta_position + cb) - (sa.delta_position + ca));
    if m.frame_kept != 0u {
        return Geometry(c.core_a, c.core_b, separation);
    }
    let surface_a = ca + n * m.radius_a;
    let surface_b = cb - n * m.radius_b;
    let half_gap = 0.5 * ((bodies[m.body_b].position - bodies[m.body_a].position) + (surface_b - surface_a));
    return Geometry(surface_a + half_gap, surface_b - half_gap, separation);
}

fn largest_eigenvalue(a: f32, b: f32, c: f32) -> f32 {
    let half_diff = 0.5 * (a - c);
    return 0.5 * (a + c) + sqrt(half_diff * half_diff + b * b);
}

// Twin of `PointMasses`'s tangent part (`point_masses`): the inverse of the tangent block
// `[[k11, k12], [k12, k22]]` as its entries (1, 1), minus (1, 2) and (2, 2), and the sliding
// step `1 / λmax`.
fn friction_factors(k11: f32, k12: f32, k22: f32) -> vec4<f32> {
    let inv_det = 1.0 / (k11 * k22 - k12 * k12);
    return vec4<f32>(k22 * inv_det, k12 * inv_det, k11 * inv_det, 1.0 / largest_eigenvalue(k11, k12, k22));
}

// Twin of `friction_update`: exact Newton step when it sticks, projected gradient when it
// slides; `f` from `friction_factors`.
fn friction_update(j1: f32, j2: f32, vt1: f32, vt2: f32, f: vec4<f32>, max_friction: f32) -> vec2<f32> {
    let n1 = j1 - (f.x * vt1 - f.y * vt2);
    let n2 = j2 - (f.z * vt2 - f.y * vt1);
    if n1 * n1 + n2 * n2 <= max_friction * max_friction {
        return vec2<f32>(n1, n2);
    }
    let step = f.w;
    var g1 = j1 - step * vt1;
    var g2 = j2 - step * vt2;
    let len_sq = g1 * g1 + g2 * g2;
    if len_sq > max_friction * max_friction {
        let scale = max_friction / sqrt(len_sq);
        g1 *= scale;
        g2 *= scale;
    }
    return vec2<f32>(g1, g2);
}

// Centroid step of the coarse correction, the Galerkin projection of the points' soft system
// onto "the same impulse on each": (impulse per point, smallest impulse). `bias` and `k_n` are
// each point's coefficients and inverse effective mass.
fn coarse_step(m: ptr<function, Manifold>, geo: ptr<function, array<Geometry, 4>>, bias: ptr<function, array<Soft, 4>>, k_n: ptr<function, array<f32, 4>>, ma: Motion, mb: Motion, loaded_only: bool) -> vec2<f32> {
    let n = (*m).normal;
    var count = 0.0;
    var ra = vec3<f32>(0.0);
    var rb = vec3<f32>(0.0);
    var residual = 0.0;
    var compliance = 0.0;
    var j_min = 3.4028235e38;
    for (var k = 0u; k < (*m).count; k++) {
        let c = (*m).points[k];
        if loaded_only && c.normal_impulse <= 0.0 {
            continue;
        }
        let g = (*geo)[k];
        count += 1.0;
        ra += g.ra;
        rb += g.rb;
        let b = (*bias)[k];
        let c_k = contact_compliance(b.mass_scale, b.impulse_scale, (*k_n)[k]);
        residual += b.bias_rate + c_k * c.normal_impulse;
        compliance += c_k;
        j_min = min(j_min, c.normal_impulse);
    }
    if count < 2.0 {
        return vec2<f32>(0.0, 0.0);
    }
    let inv_count = 1.0 / count;
    ra = ra * inv_count;
    rb = rb * inv_count;
    let k = ma.inv_mass + mb.inv_mass + rotational(ma, ra, n, n) + rotational(mb, rb, n, n);
    let vn = dot3(n, velocity_at(mb, rb) - velocity_at(ma, ra));
    return vec2<f32>(-(count * vn + residual) / (count * count * k + compliance), j_min);
}

fn coarse_correction(m: ptr<function, Manifold>, geo: ptr<function, array<Geometry, 4>>, bias: ptr<function, array<Soft, 4>>, k_n: ptr<function, array<f32, 4>>, ma: ptr<function, Motion>, mb: ptr<function, Motion>) {
    let n = (*m).normal;
    let track = (*m).restitution > 0.0;
    var share = coarse_step(m, geo, bias, k_n, *ma, *mb, false).x;
    if share < 0.0 {
        let pull = coarse_step(m, geo, bias, k_n, *ma, *mb, true);
        share = clamp(pull.x, -pull.y, 0.0);
    }
    if share == 0.0 {
        return;
    }
    // The points that take the share; unless its work is counted point by point (`track`), it
    // is applied at once at the sum of their lever arms (`Motion::apply_sum`).
    var taking = 0.0;
    var ra = vec3<f32>(0.0);
    var rb = vec3<f32>(0.0);
    for (var k = 0u; k < (*m).count; k++) {
        if share < 0.0 && (*m).points[k].normal_impulse <= 0.0 {
            continue;
        }
        (*m).points[k].normal_impulse += share;
        (*m).points[k].max_normal_impulse = max((*m).points[k].max_normal_impulse, share);
        if track {
            (*m).absorbed -= apply_at(ma, mb, (*geo)[k], share * n, true);
        } else {
            taking += 1.0;
            ra += (*geo)[k].ra;
            rb += (*geo)[k].rb;
        }
    }
    if !track {
        apply_sum(ma, ra, taking, -share * n);
        apply_sum(mb, rb, taking, share * n);
    }
}

fn bounces(m: ptr<function, Manifold>) -> bool {
    if (*m).restitution <= 0.0 {
        return false;
    }
    for (var k = 0u; k < (*m).count; k++) {
        if (*m).points[k].approach_velocity <= -params.restitution_threshold {
            return true;
        }
    }
    return false;
}

fn kinetic_of(i: u32, v: vec3<f32>, w: vec3<f32>) -> f32 {
    if !is_dynamic(i) {
        return 0.0;
    }
    let b = bodies[i];
    return kinetic_energy(b.inv_mass, props[i].inv_inertia, b.orientation, v, w);
}

fn restitution_pass(m: ptr<function, Manifold>, ma: ptr<function, Motion>, mb: ptr<function, Motion>) {
    if !bounces(m) {
        return;
    }
    let n = (*m).normal;
    let a0 = *ma;
    let b0 = *mb;
    var acted = false;
    for (var k = 0u; k < (*m).count; k++) {
        let c = (*m).points[k];
        if c.approach_velocity > -params.restitution_threshold || c.max_normal_impulse == 0.0 {
            continue;
        }
        let g = geometry_of(m, k);
        let k_n = normal_inverse_mass(*ma, *mb, g, n);
        let vn = dot3(n, velocity_at(*mb, g.rb) - velocity_at(*ma, g.ra));
        let impulse = -(vn + (*m).restitution * c.approach_velocity) / k_n;
        let new_impulse = max(c.normal_impulse + impulse, 0.0);
        let applied = new_impulse - c.normal_impulse;
        (*m).points[k].normal_impulse = new_impulse;
        (*m).points[k].max_normal_impulse = max(c.max_normal_impulse, applied);
        (*m).points[k].restitution_impulse = applied;
        acted = true;
        apply(ma, g.ra, -applied * n);
        apply(mb, g.rb, applied * n);
    }
    if !acted {
        return;
    }
    let ia = (*m).body_a;
    let ib = (*m).body_b;
    let solved = kinetic_of(ia, a0.v, a0.w) + kinetic_of(ib, b0.v, b0.w);
    let budget = (*m).restitution * (*m).restitution * max((*m).absorbed, 0.0);
    let full = kinetic_of(ia, (*ma).v, (*ma).w) + kinetic_of(ib, (*mb).v, (*mb).w);
    if full - solved <= budget {
        return;
    }
    let half = kinetic_of(ia, (a0.v + (*ma).v) * 0.5, (a0.w + (*ma).w) * 0.5) + kinetic_of(ib, (b0.v + (*mb).v) * 0.5, (b0.w + (*mb).w) * 0.5);
    let qa = 2.0 * (full - solved) - 4.0 * (half - solved);
    let qb = (full - solved) - qa;
    var alpha = 1.0;
    if qa > 1e-12 {
        alpha = clamp((-qb + sqrt(max(qb * qb + 4.0 * qa * budget, 0.0))) / (2.0 * qa), 0.0, 1.0);
    } else if qb > 0.0 {
        alpha = clamp(budget / qb, 0.0, 1.0);
    }
    (*ma).v = a0.v + alpha * ((*ma).v - a0.v);
    (*ma).w = a0.w + alpha * ((*ma).w - a0.w);
    (*mb).v = b0.v + alpha * ((*mb).v - b0.v);
    (*mb).w = b0.w + alpha * ((*mb).w - b0.w);
    for (var k = 0u; k < (*m).count; k++) {
        (*m).points[k].normal_impulse -= (1.0 - alpha) * (*m).points[k].restitution_impulse;
    }
}

// The inverse effective mass along the normal of a contact between `ma` and `mb` at `g`.
fn normal_inverse_mass(ma: Motion, mb: Motion, g: Geometry, n: vec3<f32>) -> f32 {
    return ma.inv_mass + mb.inv_mass + rotational(ma, g.ra, n, n) + rotational(mb, g.rb, n, n);
}

// `friction_factors` of a contact between `ma` and `mb` at `g`, tangents `t1` and `t2`.
fn tangent_factors(ma: Motion, mb: Motion, g: Geometry, t1: vec3<f32>, t2: vec3<f32>) -> vec4<f32> {
    let inv_mass = ma.inv_mass + mb.inv_mass;
    let k11 = dot3(t1, t1) * inv_mass + rotational(ma, g.ra, t1, t1) + rotational(mb, g.rb, t1, t1);
    let k12 = dot3(t1, t2) * inv_mass + rotational(ma, g.ra, t1, t2) + rotational(mb, g.rb, t1, t2);
    let k22 = dot3(t2, t2) * inv_mass + rotational(ma, g.ra, t2, t2) + rotational(mb, g.rb, t2, t2);
    return friction_factors(k11, k12, k22);
}

// A solve or relax pass over manifold `i` (copied to `m`) between `ma` and `mb`. Positions do not
// change within a pass: each point's geometry, and unless the bodies are `split` (the Jacobi
// overflow's sub-bodies), its effective masses come prepared (`prepare_manifolds`), as in
// `manifold_pass` in src/cpu/contacts.rs; or, with `prepared_passes` off, the pass computes
// the same words itself.
fn manifold_pass(i: u32, m: ptr<function, Manifold>, ma: ptr<function, Motion>, mb: ptr<function, Motion>, which: u32, split: bool) {
    let n = (*m).normal;
    let basis = pass_basis(i, n);
    let computed = split || !reads_prepared();
    let t1 = basis.t1;
    let t2 = basis.t2;
    let track = (*m).restitution > 0.0;
    // Each point's soft coefficients and inverse effective mass along the normal.
    var geo: array<Geometry, 4>;
    var bias: array<Soft, 4>;
    var k_n: array<f32, 4>;
    let use_bias = which == PASS_SOLVE;
    let soft = softness(*ma, *mb);
    for (var k = 0u; k < (*m).count; k++) {
        let g = pass_geometry(i, m, k);
        geo[k] = g;
        bias[k] = contact_bias(soft, g.separation, use_bias);
        if computed {
            k_n[k] = normal_inverse_mass(*ma, *mb, g, n);
        } else {
            k_n[k] = prepared_normal_inverse_mass(i, k);
        }
    }
    coarse_correction(m, &geo, &bias, &k_n, ma, mb);
    for (var k = 0u; k < (*m).count; k++) {
        let g = geo[k];
        let b = bias[k];
        let vn = dot3(n, velocity_at(*mb, g.rb) - velocity_at(*ma, g.ra));
        let c = (*m).points[k];
        var normal_mass = 0.0;
        if computed {
            normal_mass = 1.0 / k_n[k];
        } else {
            normal_mass = prepared_normal_mass(i, k);
        }
        let impulse = -b.mass_scale * normal_mass * (vn + b.bias_rate) - b.impulse_scale * c.normal_impulse;
        let new_impulse = max(c.normal_impulse + impulse, 0.0);
        let applied = new_impulse - c.normal_impulse;
        (*m).points[k].normal_impulse = new_impulse;
        (*m).points[k].max_normal_impulse = max(c.max_normal_impulse, applied);
        (*m).absorbed -= apply_at(ma, mb, g, applied * n, track);
    }
    for (var k = 0u; k < (*m).count; k++) {
        let g = geo[k];
        let dv = velocity_at(*mb, g.rb) - velocity_at(*ma, g.ra);
        let c = (*m).points[k];
        var f = vec4<f32>(0.0);
        if computed {
            f = tangent_factors(*ma, *mb, g, t1, t2);
        } else {
            f = prepared_friction(i, k);
        }
        let j = friction_update(c.tangent_impulse_1, c.tangent_impulse_2, dot3(t1, dv), dot3(t2, dv), f, (*m).friction * c.normal_impulse);
        let impulse = (j.x - c.tangent_impulse_1) * t1 + (j.y - c.tangent_impulse_2) * t2;
        (*m).points[k].tangent_impulse_1 = j.x;
        (*m).points[k].tangent_impulse_2 = j.y;
        (*m).absorbed -= apply_at(ma, mb, g, impulse, track);
    }
}

// A body's motion for a pass of kind `which`: restitution, once a step after the last position
// update, computes its inertia (with no relax sweeps nothing was prepared since); the other passes
// take `pass_motion`.
fn sweep_motion(i: u32, split: f32, which: u32) -> Motion {
    if which == PASS_RESTITUTION {
        return motion_of(i, split);
    }
    return pass_motion(i, split);
}

// One pass of kind `which` over manifold `i` (copied to `m`).
fn sweep(i: u32, m: ptr<function, Manifold>, ma: ptr<function, Motion>, mb: ptr<function, Motion>, which: u32, split: bool) {
    if which == PASS_RESTITUTION {
        restitution_pass(m, ma, mb);
    } else {
        manifold_pass(i, m, ma, mb, which, split);
    }
}

fn store(i: u32, m: Motion) {
    if is_dynamic(i) {
        bodies[i].linear_velocity = m.v;
        bodies[i].angular_velocity = m.w;
    }
}

// The manifold that thread `k` of a dispatch over bucket `bucket` handles, or NO_COLOR past the
// bucket's end.
fn bucket_manifold(bucket: u32, k: u32) -> u32 {
    let start = work[work_layout.bucket_offsets + bucket];
    let end = work[work_layout.bucket_offsets + bucket + 1u];
    if start + k >= end {
        return NO_COLOR;
    }
    return work[work_layout.colored + start + k];
}

// The manifolds of bucket `bucket`.
fn bucket_size(bucket: u32) -> u32 {
    return work[work_layout.bucket_offsets + bucket + 1u] - work[work_layout.bucket_offsets + bucket];
}

fn color_pass(bucket: u32, k: u32, which: u32) {
    let i = bucket_manifold(bucket, k);
    if i == NO_COLOR {
        return;
    }
    var m = manifolds[i];
    var ma = sweep_motion(m.body_a, 1.0, which);
    var mb = sweep_motion(m.body_b, 1.0, which);
    sweep(i, &m, &ma, &mb, which, false);
    manifolds[i] = m;
    store(m.body_a, ma);
    store(m.body_b, mb);
}

fn jacobi_pass(bucket: u32, k: u32, which: u32) {
    let i = bucket_manifold(bucket, k);
    if i == NO_COLOR {
        return;
    }
    var m = manifolds[i];
    let split_a = f32(max(work[work_layout.split + m.body_a], 1u));
    let split_b = f32(max(work[work_layout.split + m.body_b], 1u));
    let a0 = sweep_motion(m.body_a, split_a, which);
    let b0 = sweep_motion(m.body_b, split_b, which);
    var ma = a0;
    var mb = b0;
    sweep(i, &m, &ma, &mb, which, true);
    manifolds[i] = m;
    deltas[4u * i] = vec4<f32>(ma.v - a0.v, 0.0);
    deltas[4u * i + 1u] = vec4<f32>(ma.w - a0.w, 0.0);
    deltas[4u * i + 2u] = vec4<f32>(mb.v - b0.v, 0.0);
    deltas[4u * i + 3u] = vec4<f32>(mb.w - b0.w, 0.0);
}

fn thread_of(wid: vec3<u32>, nwg: vec3<u32>, lid: u32) -> u32 {
    return thread_index(wid, nwg, lid, WORKGROUP_SIZE);
}

// The preparation, after each position update (twin of `prepare` in src/cpu/contacts.rs):
// thread `t` stores body `t`'s world inverse inertia and manifold `t`'s record, every point's
// words (zeros past the manifold's count, the manifold's own words whatever the count). Both
// come from the same function of the same orientation, so a pass that reads them gets the bits
// `motion_of` and `geometry_of` would compute.
@compute @workgroup_size(WORKGROUP_SIZE)
fn prepare_manifolds(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    prepare_item(thread_of(wid, nwg, lid));
}

// `prepare_manifolds`' work for thread `t`: body `t`'s inertia, manifold `t`'s record.
fn prepare_item(t: u32) {
    if t < params.body_count {
        var inv = mat3x3<f32>(vec3<f32>(0.0), vec3<f32>(0.0), vec3<f32>(0.0));
        if is_dynamic(t) {
            inv = world_inverse_inertia(bodies[t].orientation, props[t].inv_inertia);
        }
        let at = inertia_at(t);
        prepared[at] = vec4<f32>(inv[0], 0.0);
        prepared[at + 1u] = vec4<f32>(inv[1], 0.0);
        prepared[at + 2u] = vec4<f32>(inv[2], 0.0);
    }
    if t >= work[1] {
        return;
    }
    var m = manifolds[t];
    let ma = motion_of(m.body_a, 1.0);
    let mb = motion_of(m.body_b, 1.0);
    let basis = tangent_basis(m.normal);
    let words = array<vec3<f32>, 4>(basis.t1, basis.t2, m.normal, vec3<f32>(m.friction, f32(m.count), 0.0));
    for (var k = 0u; k < 4u; k++) {
        var a = vec4<f32>(0.0);
        var b = vec4<f32>(0.0);
        var c = vec4<f32>(0.0);
        var step = 0.0;
        if k < m.count {
            let g = geometry_of(&m, k);
            let k_n = normal_inverse_mass(ma, mb, g, m.normal);
            let f = tangent_factors(ma, mb, g, basis.t1, basis.t2);
            a = vec4<f32>(g.ra, g.rb.x);
            b = vec4<f32>(g.rb.y, g.rb.z, g.separation, k_n);
            c = vec4<f32>(1.0 / k_n, f.xyz);
            step = f.w;
        }
        let at = prepared_at(t, k);
        prepared[at] = a;
        prepared[at + 1u] = b;
        prepared[at + 2u] = c;
        prepared[at + 3u] = vec4<f32>(step, words[k]);
    }
}

// Point `k`'s accumulated impulse on B (A takes its opposite), `basis` the normal's tangents.
fn warm_impulse(m: ptr<function, Manifold>, basis: Basis, k: u32) -> vec3<f32> {
    let c = (*m).points[k];
    return c.normal_impulse * (*m).normal + c.tangent_impulse_1 * basis.t1 + c.tangent_impulse_2 * basis.t2;
}

// The warm start's work on each manifold that can bounce: its own impulses applied to copies of
// its bodies' motions from before any warm start. Twin of the first loop of `warm_start_bodies`
// in src/cpu/contacts.rs.
@compute @workgroup_size(WORKGROUP_SIZE)
fn warm_start_work(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let i = thread_of(wid, nwg, lid);
    if i >= work[1] {
        return;
    }
    var m = manifolds[i];
    if m.restitution <= 0.0 {
        return;
    }
    var ma = pass_motion(m.body_a, 1.0);
    var mb = pass_motion(m.body_b, 1.0);
    let basis = pass_basis(i, m.normal);
    for (var k = 0u; k < m.count; k++) {
        m.absorbed -= apply_at(&ma, &mb, pass_geometry(i, &m, k), warm_impulse(&m, basis, k), true);
    }
    manifolds[i].absorbed = m.absorbed;
}

// The warm start by body: each dynamic body adds the impulses of its manifolds, ascending,
// point by point (the impulses are known, so no manifold waits for another: one dispatch
// instead of one per color). Twin of the second loop of `warm_start_bodies`.
@compute @workgroup_size(WORKGROUP_SIZE)
fn warm_start_gather(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let body = thread_of(wid, nwg, lid);
    if body >= params.body_count || !is_dynamic(body) {
        return;
    }
    warm_start_body(body);
}

// `integrate_velocities` and `warm_start_gather` in one dispatch, where nothing can bounce (the
// bouncing manifolds' work reads the velocities between the two): each dynamic body's velocity
// integrated, then its warm start gathered. A thread writes only its own body's velocities, and
// the gather reads no other body's (only their poses, which neither changes).
@compute @workgroup_size(WORKGROUP_SIZE)
fn warm_start_integrate(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let body = thread_of(wid, nwg, lid);
    if body >= params.body_count || !is_dynamic(body) {
        return;
    }
    integrate_velocity(body);
    warm_start_body(body);
}

// `warm_start_gather`'s work for dynamic body `body`.
fn warm_start_body(body: u32) {
    var motion = pass_motion(body, 1.0);
    for (var k = adjacency_start(body); k < adjacency_end(body); k++) {
        let i = work[work_layout.adjacency + k];
        var m = manifolds[i];
        let basis = pass_basis(i, m.normal);
        for (var p = 0u; p < m.count; p++) {
            let g = pass_geometry(i, &m, p);
            let j = warm_impulse(&m, basis, p);
            if m.body_a == body {
                apply(&motion, g.ra, -j);
            } else {
                apply(&motion, g.rb, j);
            }
        }
    }
    store(body, motion);
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn solve_color(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    color_pass(bucket_index.value, thread_of(wid, nwg, lid), PASS_SOLVE);
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn relax_color(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    color_pass(bucket_index.value, thread_of(wid, nwg, lid), PASS_RELAX);
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn restitution_color(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    color_pass(bucket_index.value, thread_of(wid, nwg, lid), PASS_RESTITUTION);
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn jacobi_solve(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    jacobi_pass(bucket_index.value, thread_of(wid, nwg, lid), PASS_SOLVE);
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn jacobi_relax(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    jacobi_pass(bucket_index.value, thread_of(wid, nwg, lid), PASS_RELAX);
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn jacobi_restitution(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    jacobi_pass(bucket_index.value, thread_of(wid, nwg, lid), PASS_RESTITUTION);
}

fn adjacency_start(body: u32) -> u32 {
    return work[work_layout.adjacency_counts + body];
}

fn adjacency_end(body: u32) -> u32 {
    return work[work_layout.adjacency_counts + body + 1u];
}

// Each dynamic body averages its Jacobi sub-bodies: a gather over its manifolds.
@compute @workgroup_size(WORKGROUP_SIZE)
fn jacobi_gather(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    gather_body(thread_of(wid, nwg, lid));
}

fn gather_body(body: u32) {
    if body >= params.body_count || !is_dynamic(body) {
        return;
    }
    let split = work[work_layout.split + body];
    if split == 0u {
        return;
    }
    var dv = vec3<f32>(0.0);
    var dw = vec3<f32>(0.0);
    for (var k = adjacency_start(body); k < adjacency_end(body); k++) {
        let i = work[work_layout.adjacency + k];
        if work[work_layout.colors + i] != NO_COLOR {
            continue;
        }
        if manifolds[i].body_a == body {
            dv += deltas[4u * i].xyz;
            dw += deltas[4u * i + 1u].xyz;
        } else {
            dv += deltas[4u * i + 2u].xyz;
            dw += deltas[4u * i + 3u].xyz;
        }
    }
    let n = f32(split);
    bodies[body].linear_velocity += dv / n;
    bodies[body].angular_velocity += dw / n;
}

// Threads of the one workgroup of a fused pass: a pipeline constant, set to what the device
// allows (at most 1,024).
override FUSED_SIZE: u32 = 256u;

// A whole manifold pass in one workgroup (`SolverSettings::gpu_fused_sweeps`): the colors in
// order, each swept by all the workgroup's threads (thread `t` takes the bucket's manifolds
// `t`, `t + FUSED_SIZE`, ...), a barrier between colors so that each color sees the velocities
// the last one left; then the overflow by Jacobi, a barrier, and the gather by body. The same
// manifold work as the per-color dispatches in the same order of colors, so the same bits;
// one dispatch instead of one per color, the overflow and the gather.
fn fused_pass(t: u32, which: u32) {
    let overflow = work_layout.buckets - 1u;
    for (var bucket = 0u; bucket < overflow; bucket++) {
        let count = bucket_size(bucket);
        for (var k = t; k < count; k += FUSED_SIZE) {
            color_pass(bucket, k, which);
        }
        storageBarrier();
    }
    let count = bucket_size(overflow);
    for (var k = t; k < count; k += FUSED_SIZE) {
        jacobi_pass(overflow, k, which);
    }
    storageBarrier();
    if count > 0u {
        for (var body = t; body < params.body_count; body += FUSED_SIZE) {
            gather_body(body);
        }
    }
}

@compute @workgroup_size(FUSED_SIZE)
fn solve_fused(@builtin(local_invocation_index) lid: u32) {
    fused_pass(lid, PASS_SOLVE);
}

@compute @workgroup_size(FUSED_SIZE)
fn relax_fused(@builtin(local_invocation_index) lid: u32) {
    fused_pass(lid, PASS_RELAX);
}

@compute @workgroup_size(FUSED_SIZE)
fn restitution_fused(@builtin(local_invocation_index) lid: u32) {
    fused_pass(lid, PASS_RESTITUTION);
}

// `prepare_manifolds` in the fused substep, with a barrier after it; nothing when the passes
// compute their words.
fn fused_prepare(t: u32) {
    if !reads_prepared() {
        return;
    }
    for (var i = t; i < max(params.body_count, work[1]); i += FUSED_SIZE) {
        prepare_item(i);
    }
    storageBarrier();
}

// A whole substep in one workgroup, for a world of bodies and their contacts alone (no joints,
// static colliders or particles, and nothing that can bounce; see `GpuSolver`'s
// `fused_substep`), with `SolverSettings::gpu_fused_sweeps`: the velocities integrated, the
// records prepared (with prepared passes), the warm start gathered by body, the solve sweeps,
// the positions integrated, the records prepared again and the relax sweeps, a barrier after
// each. Each body's and manifold's work is that of the per-stage dispatches, in the same
// order: the same bits, in one dispatch where the fused sweeps took seven a substep (nine with
// prepared passes) at the default three iterations and one relax iteration.
@compute @workgroup_size(FUSED_SIZE)
fn substep_fused(@builtin(local_invocation_index) t: u32) {
    let n = params.body_count;
    for (var i = t; i < n; i += FUSED_SIZE) {
        if is_dynamic(i) {
            integrate_velocity(i);
        }
    }
    storageBarrier();
    fused_prepare(t);
    for (var body = t; body < n; body += FUSED_SIZE) {
        if is_dynamic(body) {
            warm_start_body(body);
        }
    }
    storageBarrier();
    for (var k = 0u; k < params.iterations; k++) {
        fused_pass(t, PASS_SOLVE);
        storageBarrier();
    }
    for (var i = t; i < n; i += FUSED_SIZE) {
        if props[i].kind != KIND_STATIC {
            integrate_position(i);
        }
    }
    storageBarrier();
    if params.relax_iterations > 0u {
        fused_prepare(t);
        for (var k = 0u; k < params.relax_iterations; k++) {
            fused_pass(t, PASS_RELAX);
            storageBarrier();
        }
    }
}

var<workgroup> shared_manifold_stats: array<Stats, STATS_WORKGROUP_SIZE>;

// Contacts and deepest penetration of the manifolds, one partial per workgroup, stored after the
// bodies' partials.
@compute @workgroup_size(STATS_WORKGROUP_SIZE)
fn manifold_stats(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let group = wid.y * nwg.x + wid.x;
    let i = group * STATS_WORKGROUP_SIZE + lid;
    var out = Stats(0.0, 0.0, 0u, 0u);
    if i < work[1] {
        var m = manifolds[i];
        out.contacts = m.count;
        for (var k = 0u; k < m.count; k++) {
            out.max_penetration = max(out.max_penetration, -geometry_of(&m, k).separation);
        }
    }
    shared_manifold_stats[lid] = out;
    for (var stride = STATS_WORKGROUP_SIZE / 2u; stride > 0u; stride /= 2u) {
        workgroupBarrier();
        if lid < stride {
            let a = shared_manifold_stats[lid];
            let b = shared_manifold_stats[lid + stride];
            shared_manifold_stats[lid] = Stats(0.0, max(a.max_penetration, b.max_penetration), a.contacts + b.contacts, 0u);
        }
    }
    workgroupBarrier();
    if lid == 0u {
        stats[(params.body_count + STATS_WORKGROUP_SIZE - 1u) / STATS_WORKGROUP_SIZE + group] = shared_manifold_stats[0];
    }
}
