// Stages `solve_static`, `relax_static` and `restitution`: projected Gauss-Seidel over each
// dynamic body's contacts with static geometry, one thread per body (exact Gauss-Seidel for that
// body, no races, no colors spent on the ground). Twins of the functions of the same names in
// src/cpu/stages.rs.

struct Motion {
    v: vec3<f32>,
    w: vec3<f32>,
    inv_mass: f32,
    inv_inertia: mat3x3<f32>,
}

fn load_motion(i: u32) -> Motion {
    let b = bodies[i];
    return Motion(b.linear_velocity, b.angular_velocity, b.inv_mass, solver_bodies[i].inv_inertia_world);
}

fn store_motion(i: u32, m: Motion) {
    bodies[i].linear_velocity = m.v;
    bodies[i].angular_velocity = m.w;
}

fn apply_impulse(m: ptr<function, Motion>, r: vec3<f32>, impulse: vec3<f32>) {
    (*m).v += (*m).inv_mass * impulse;
    (*m).w += mat3_mul((*m).inv_inertia, cross3(r, impulse));
}

struct Bias {
    bias: f32,
    mass_scale: f32,
    impulse_scale: f32,
}

// Speculative contacts close their gap within the substep; penetration is pushed out by the soft
// spring (or Baumgarte's bias) in the biased solve only. Twin of `contact_bias`.
fn contact_bias(s: f32, use_bias: bool) -> Bias {
    if s > 0.0 {
        return Bias(s * params.inv_h, 1.0, 0.0);
    }
    if use_bias {
        return Bias(max(params.static_bias_rate * min(s + params.linear_slop, 0.0), -params.max_push_velocity), params.static_mass_scale, params.static_impulse_scale);
    }
    return Bias(0.0, 1.0, 0.0);
}

// Current separation: only the core point turns with the body; the radius stays along the normal
// (the support point of a round shape is not a material point). Twin of `separation`.
fn separation(sb: SolverBody, c: StaticContact, n: vec3<f32>, radius: f32) -> f32 {
    let core = c.anchor + n * radius;
    return c.base_separation + dot3(n, sb.delta_position + rotate(sb.delta_rotation, core));
}

// The contact's current lever arm: the core point turned by the motion since the start of the
// step, minus the radius along the normal. Twin of `lever`.
fn lever(sb: SolverBody, c: StaticContact, n: vec3<f32>, radius: f32) -> vec3<f32> {
    return rotate(sb.delta_rotation, c.anchor + n * radius) - n * radius;
}

// Whether the contact takes part in the coarse correction along `n`: active with the normal `n`
// bit for bit, and loaded where only the loaded ones do.
fn on_face(c: StaticContact, n: vec3<f32>, loaded_only: bool) -> bool {
    return c.in_contact == 1u && all(c.normal == n) && !(loaded_only && c.normal_impulse <= 0.0);
}

// Centroid step of the coarse correction over the active contacts of the collider's first
// `blocks` blocks of slots (its points' surfaces: 1 for a plane, 3 for a field) whose normal is
// `n` (a plane's, or one flat face's of a field), all of them or
// only the loaded ones, the Galerkin projection of their soft system onto "the same impulse on
// each": returns (impulse per contact, smallest impulse). Twin of `coarse_correction`.
fn coarse_step(pr: BodyProps, sh: Shape, sb: SolverBody, collider_index: u32, blocks: u32, n: vec3<f32>, m: ptr<function, Motion>, use_bias: bool, loaded_only: bool) -> vec2<f32> {
    var count = 0.0;
    var r_sum = vec3<f32>(0.0);
    var residual = 0.0;
    var compliance = 0.0;
    var j_min = 3.4e38;
    for (var block = 0u; block < blocks; block++) {
        for (var k = 0u; k < sh.point_count; k++) {
            let c = contacts[surface_slot_index(pr, sh, collider_index, k, block)];
            if !on_face(c, n, loaded_only) {
                continue;
            }
            count += 1.0;
            r_sum += lever(sb, c, n, sh.radius);
            let b = contact_bias(separation(sb, c, n, sh.radius), use_bias);
            let c_i = contact_compliance(b.mass_scale, b.impulse_scale, 1.0 / c.normal_mass);
            residual += b.bias + c_i * c.normal_impulse;
            compliance += c_i;
            j_min = min(j_min, c.normal_impulse);
        }
    }
    if count < 2.0 {
        return vec2<f32>(0.0, 0.0);
    }
    let rc = r_sum / count;
    let rn = cross3(rc, n);
    let k = (*m).inv_mass + dot3(rn, mat3_mul((*m).inv_inertia, rn));
    let vn = dot3(n, (*m).v + cross3((*m).w, rc));
    return vec2<f32>(-(count * vn + residual) / (count * count * k + compliance), j_min);
}

// Exact feasible line search along "the same impulse on every contact of this face".
fn coarse_correction(pr: BodyProps, sh: Shape, sb: SolverBody, collider_index: u32, blocks: u32, n: vec3<f32>, m: ptr<function, Motion>, use_bias: bool) {
    var share = coarse_step(pr, sh, sb, collider_index, blocks, n, m, use_bias, false).x;
    if share < 0.0 {
        let pull = coarse_step(pr, sh, sb, collider_index, blocks, n, m, use_bias, true);
        share = clamp(pull.x, -pull.y, 0.0);
    }
    if share == 0.0 {
        return;
    }
    for (var block = 0u; block < blocks; block++) {
        for (var k = 0u; k < sh.point_count; k++) {
            let slot = surface_slot_index(pr, sh, collider_index, k, block);
            let c = contacts[slot];
            if !on_face(c, n, share < 0.0) {
                continue;
            }
            contacts[slot].normal_impulse = c.normal_impulse + share;
            contacts[slot].max_normal_impulse = max(c.max_normal_impulse, share);
            apply_impulse(m, lever(sb, c, n, sh.radius), share * n);
        }
    }
}

// The flat faces of a field on which a body has two active contacts or more, among the first
// MAX_FIELD_FACES normals to appear (their normals in that order, and how many), and how many
// of the three blocks of slots hold the active contacts. Twin of `field_faces`.
struct Faces {
    normals: array<vec3<f32>, MAX_FIELD_FACES>,
    count: u32,
    blocks: u32,
}

fn field_faces(pr: BodyProps, sh: Shape, collider_index: u32) -> Faces {
    var faces = Faces(array<vec3<f32>, MAX_FIELD_FACES>(), 0u, 0u);
    var members = array<u32, MAX_FIELD_FACES>();
    for (var block = 0u; block < 3u; block++) {
        for (var k = 0u; k < sh.point_count; k++) {
            let c = contacts[surface_slot_index(pr, sh, collider_index, k, block)];
            if c.in_contact == 0u {
                continue;
            }
            faces.blocks = block + 1u;
            var known = MAX_FIELD_FACES;
            for (var f = 0u; f < faces.count; f++) {
                if known == MAX_FIELD_FACES && all(faces.normals[f] == c.normal) {
                    known = f;
                }
            }
            if known != MAX_FIELD_FACES {
                members[known] += 1u;
            } else if faces.count < MAX_FIELD_FACES {
                faces.normals[faces.count] = c.normal;
                members[faces.count] = 1u;
                faces.count += 1u;
            }
        }
    }
    // A face with one contact would take no step.
    let found = faces.count;
    faces.count = 0u;
    for (var f = 0u; f < found; f++) {
        if members[f] > 1u {
            faces.normals[faces.count] = faces.normals[f];
            faces.count += 1u;
        }
    }
    return faces;
}

// The normal impulse of the contact in `slot`, if it is active.
fn normal_row(slot: u32, sh: Shape, sb: SolverBody, m: ptr<function, Motion>, use_bias: bool) {
    let c = contacts[slot];
    if c.in_contact == 0u {
        return;
    }
    let n = c.normal;
    let r = lever(sb, c, n, sh.radius);
    let b = contact_bias(separation(sb, c, n, sh.radius), use_bias);
    let vn = dot3(n, (*m).v + cross3((*m).w, r));
    let impulse = -c.normal_mass * b.mass_scale * (vn + b.bias) - b.impulse_scale * c.normal_impulse;
    let new_impulse = max(c.normal_impulse + impulse, 0.0);
    let applied = new_impulse - c.normal_impulse;
    contacts[slot].normal_impulse = new_impulse;
    contacts[slot].max_normal_impulse = max(c.max_normal_impulse, applied);
    apply_impulse(m, r, applied * n);
}

// One sweep: per collider the coarse correction (a plane's contacts, and a field's on each of
// its flat faces: it needs one normal), then every
// normal impulse; then every friction impulse clamped to the disk |j_t| <= mu j_n. Twin of
// `solve_contacts`.
fn solve_contacts(i: u32, m: ptr<function, Motion>, use_bias: bool) {
    let pr = props[i];
    let sh = shapes[pr.shape];
    let sb = solver_bodies[i];
    for (var collider_index = 0u; collider_index < params.collider_count; collider_index++) {
        let collider = colliders[collider_index];
        if collider.node_count == 0u {
            coarse_correction(pr, sh, sb, collider_index, 1u, collider.normal, m, use_bias);
        } else {
            let faces = field_faces(pr, sh, collider_index);
            for (var f = 0u; f < faces.count; f++) {
                coarse_correction(pr, sh, sb, collider_index, faces.blocks, faces.normals[f], m, use_bias);
            }
        }
        for (var k = 0u; k < sh.point_count; k++) {
            normal_row(slot_index(pr, sh, collider_index, k), sh, sb, m, use_bias);
        }
        // A field's second and third contacts (`second_surface`, `third_surface`), point by
        // point.
        if collider.node_count != 0u {
            for (var surface = 1u; surface < 3u; surface++) {
                for (var k = 0u; k < sh.point_count; k++) {
                    normal_row(surface_slot_index(pr, sh, collider_index, k, surface), sh, sb, m, use_bias);
                }
            }
        }
    }
    let end = slot_end(pr, sh);
    for (var slot = pr.slot_offset; slot < end; slot++) {
        let c = contacts[slot];
        if c.in_contact == 0u {
            continue;
        }
        let n = c.normal;
        let basis = tangent_basis(n);
        let r = lever(sb, c, n, sh.radius);
        let dv = (*m).v + cross3((*m).w, r);
        // Projected gradient toward maximum dissipation (see solve_contacts in src/cpu/stages.rs).
        var j1 = c.tangent_impulse_1 - c.tangent_mass * dot3(basis.t1, dv);
        var j2 = c.tangent_impulse_2 - c.tangent_mass * dot3(basis.t2, dv);
        let max_friction = c.friction * c.normal_impulse;
        let len_sq = j1 * j1 + j2 * j2;
        if len_sq > max_friction * max_friction {
            let scale = max_friction / sqrt(len_sq);
            j1 *= scale;
            j2 *= scale;
        }
        let d1 = j1 - c.tangent_impulse_1;
        let d2 = j2 - c.tangent_impulse_2;
        contacts[slot].tangent_impulse_1 = j1;
        contacts[slot].tangent_impulse_2 = j2;
        apply_impulse(m, r, d1 * basis.t1 + d2 * basis.t2);
    }
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn solve_static(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let i = thread_index(wid, nwg, lid, WORKGROUP_SIZE);
    if i >= params.body_count || !is_dynamic(i) {
        return;
    }
    let pr = props[i];
    let sh = shapes[pr.shape];
    let sb = solver_bodies[i];
    var m = load_motion(i);
    // Warm start with the accumulated impulses of the last substep (or step).
    let end = slot_end(pr, sh);
    for (var slot = pr.slot_offset; slot < end; slot++) {
        let c = contacts[slot];
        if c.in_contact == 0u {
            continue;
        }
        let n = c.normal;
        let basis = tangent_basis(n);
        apply_impulse(&m, lever(sb, c, n, sh.radius), c.normal_impulse * n + c.tangent_impulse_1 * basis.t1 + c.tangent_impulse_2 * basis.t2);
    }
    for (var iteration = 0u; iteration < params.iterations; iteration++) {
        solve_contacts(i, &m, true);
    }
    store_motion(i, m);
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn relax_static(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let i = thread_index(wid, nwg, lid, WORKGROUP_SIZE);
    if i >= params.body_count || !is_dynamic(i) {
        return;
    }
    var m = load_motion(i);
    for (var iteration = 0u; iteration < params.relax_iterations; iteration++) {
        solve_contacts(i, &m, false);
    }
    store_motion(i, m);
}

// Newton restitution bounded by Stronge's energy hypothesis; see `restitution` in src/cpu/stages.rs.
@compute @workgroup_size(WORKGROUP_SIZE)
fn restitution(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let i = thread_index(wid, nwg, lid, WORKGROUP_SIZE);
    if i >= params.body_count || !is_dynamic(i) {
        return;
    }
    let pr = props[i];
    let sh = shapes[pr.shape];
    let sb = solver_bodies[i];
    var m = load_motion(i);
    let v_solved = m.v;
    let w_solved = m.w;
    var max_restitution = 0.0;
    let end = slot_end(pr, sh);
    for (var slot = pr.slot_offset; slot < end; slot++) {
        let c = contacts[slot];
        if c.in_contact == 0u || c.restitution == 0.0 || c.approach_velocity > -params.restitution_threshold || c.max_normal_impulse == 0.0 {
            continue;
        }
        let n = c.normal;
        let r = lever(sb, c, n, sh.radius);
        let vn = dot3(n, m.v + cross3(m.w, r));
        let impulse = -c.normal_mass * (vn + c.restitution * c.approach_velocity);
        let new_impulse = max(c.normal_impulse + impulse, 0.0);
        let applied = new_impulse - c.normal_impulse;
        contacts[slot].normal_impulse = new_impulse;
        contacts[slot].max_normal_impulse = max(c.max_normal_impulse, applied);
        contacts[slot].restitution_impulse = applied;
        max_restitution = max(max_restitution, c.restitution);
        apply_impulse(&m, r, applied * n);
    }
    if max_restitution == 0.0 {
        return;
    }
    let b = bodies[i];
    let q = b.orientation;
    let ke_solved = kinetic_energy(b.inv_mass, pr.inv_inertia, q, v_solved, w_solved);
    // The energy at the start of the step and the work of gravity and of a set force since
    // (not a set torque's).
    let ke_start = sb.start_kinetic_energy + dot3(params.gravity, sb.delta_position) / b.inv_mass
        + dot3(pr.force, sb.delta_position);
    let budget = max_restitution * max_restitution * max(ke_start - ke_solved, 0.0);
    let dv = m.v - v_solved;
    let dw = rotate_inv(q, m.w - w_solved);
    let wb = rotate_inv(q, w_solved);
    let a = 0.5 * dot3(dv, dv) / b.inv_mass + 0.5 * dot3(dw, dw / pr.inv_inertia);
    let bb = dot3(v_solved, dv) / b.inv_mass + dot3(wb, dw / pr.inv_inertia);
    if a > 0.0 && a + bb > budget {
        let alpha = clamp((-bb + sqrt(max(bb * bb + 4.0 * a * budget, 0.0))) / (2.0 * a), 0.0, 1.0);
        m.v = v_solved + alpha * (m.v - v_solved);
        m.w = w_solved + alpha * (m.w - w_solved);
        for (var slot = pr.slot_offset; slot < end; slot++) {
            contacts[slot].normal_impulse -= (1.0 - alpha) * contacts[slot].restitution_impulse;
        }
    }
    store_motion(i, m);
}
