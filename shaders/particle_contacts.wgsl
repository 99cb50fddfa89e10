// Stages of particle-particle contacts, once per substep before `advance_particles`: a hashed grid
// over radix-sorted cell keys, then mass-splitting Jacobi over each particle's neighbours (first
// positions, pushing overlaps apart, then velocities, with the colliders),
// gathered (each particle computes every impulse it takes part in from its own side; the two
// sides compute it bit for bit alike, so momentum is conserved without atomics). Twins of the
// functions of src/cpu/particle_contacts.rs. The work arena holds the items (hash, particle) at
// `particle_items` (and their sort scratch), the sorted items at `particle_sorted`, the bucket
// starts at `particle_cell_start`, the neighbour counts at `particle_counts`, each particle's
// closest pairs at `particle_selected` and the colliders' records at `particle_colliders`; the
// kept contacts are in `contacts`.

fn particle_cell_key(x: i32, y: i32, z: i32) -> u32 {
    return ((u32(x) * GRID_HASH_X) ^ (u32(y) * GRID_HASH_Y) ^ (u32(z) * GRID_HASH_Z)) & params.particle_hash_mask;
}

fn particle_cell(x: vec3<f32>) -> vec3<i32> {
    let c = floor(x * params.particle_inv_cell);
    return vec3<i32>(i32(c.x), i32(c.y), i32(c.z));
}

// The particle's (hash, index) item, and the bucket starts, the dropped count, the fastest speed
// and the particle's body-slot words cleared.
@compute @workgroup_size(WORKGROUP_SIZE)
fn particle_hash(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let i = thread_index(wid, nwg, lid, WORKGROUP_SIZE);
    if i <= params.particle_hash_mask {
        work[params.particle_cell_start + i] = EMPTY_CELL;
    }
    if i == 0u && params.particle_body_contacts != 0u {
        work[params.particle_body_dropped] = 0u;
        work[params.particle_speed_bound] = 0u;
    }
    if i < params.particle_count {
        if params.particle_body_contacts != 0u {
            work[params.particle_slot_counts + i] = 0u;
            for (var k = 0u; k < PARTICLE_BODY_SLOTS; k++) {
                work[params.particle_slot_wanted + i * PARTICLE_BODY_SLOTS + k] = EMPTY_CELL;
            }
        }
        let c = particle_cell(particles[i].position);
        work[params.particle_items + 2u * i] = particle_cell_key(c.x, c.y, c.z);
        work[params.particle_items + 2u * i + 1u] = i;
    }
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn particle_cell_start(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let k = thread_index(wid, nwg, lid, WORKGROUP_SIZE);
    if k >= params.particle_count {
        return;
    }
    let key = work[params.particle_sorted + 2u * k];
    if k == 0u || work[params.particle_sorted + 2u * k - 2u] != key {
        work[params.particle_cell_start + key] = k;
    }
}

const GATHER_COUNT: u32 = 0u;
const GATHER_POSITION: u32 = 1u;
const GATHER_VELOCITY: u32 = 2u;
const GATHER_RESTITUTION: u32 = 3u;
const GATHER_WARM_START: u32 = 4u;

// A normal impulse plus the Coulomb friction impulse that takes at most `max_friction` off the
// tangential relative velocity vt of a contact of effective mass `mass`. Twin of `friction_impulse`.
fn particle_friction_impulse(normal: vec3<f32>, vt: vec3<f32>, max_friction: f32, mass: f32) -> vec3<f32> {
    let speed_t = sqrt(dot3(vt, vt));
    if speed_t > 0.0 {
        return normal - vt * (min(max_friction, mass * speed_t) / speed_t);
    }
    return normal;
}

// Inserts pair `id` at gap `s` into the closest pairs so far, kept sorted by (gap, id), if it
// is among them. Twin of `select`.
fn particle_select_pair(nearest_s: ptr<function, array<f32, PARTICLE_CONTACT_SLOTS>>, nearest_id: ptr<function, array<u32, PARTICLE_CONTACT_SLOTS>>, s: f32, id: u32) {
    let last = PARTICLE_CONTACT_SLOTS - 1u;
    if !(s < (*nearest_s)[last] || (s == (*nearest_s)[last] && id < (*nearest_id)[last])) {
        return;
    }
    var k = last;
    while k > 0u && (s < (*nearest_s)[k - 1u] || (s == (*nearest_s)[k - 1u] && id < (*nearest_id)[k - 1u])) {
        (*nearest_s)[k] = (*nearest_s)[k - 1u];
        (*nearest_id)[k] = (*nearest_id)[k - 1u];
        k -= 1u;
    }
    (*nearest_s)[k] = s;
    (*nearest_id)[k] = id;
}

// Whether particle a selected particle b among its closest pairs.
fn particle_selected(a: u32, b: u32) -> bool {
    for (var k = 0u; k < PARTICLE_CONTACT_SLOTS; k++) {
        if work[params.particle_selected + a * PARTICLE_CONTACT_SLOTS + k] == b + 1u {
            return true;
        }
    }
    return false;
}

// `impulse` with its normal part along n no less than zero and its friction within `friction`
// times that. Twin of `within_cone`.
fn particle_within_cone(impulse: vec3<f32>, n: vec3<f32>, friction: f32) -> vec3<f32> {
    let normal = dot3(impulse, n);
    let lambda = max(normal, 0.0);
    var tangent = impulse - normal * n;
    let max_friction = friction * lambda;
    let len_sq = dot3(tangent, tangent);
    if len_sq > max_friction * max_friction {
        tangent = tangent * (max_friction / sqrt(len_sq));
    }
    return lambda * n + tangent;
}

// Keeps contact `id` in kept slot `at`, with its impulse of the last substep if `last` holds
// it, within the cone of the new normal; returns that impulse. Twin of `warm_impulse`.
fn particle_warm_impulse(at: u32, last: ptr<function, array<vec4<u32>, PARTICLE_CONTACT_SLOTS>>, id: u32, n: vec3<f32>, friction: f32) -> vec3<f32> {
    var impulse = vec3<f32>(0.0);
    for (var k = 0u; k < PARTICLE_CONTACT_SLOTS; k++) {
        if (*last)[k].w == id {
            impulse = particle_within_cone(bitcast<vec3<f32>>((*last)[k].xyz), n, friction);
            break;
        }
    }
    contacts[at] = vec4<u32>(bitcast<vec3<u32>>(impulse), id);
    return impulse;
}

// One velocity iteration of the kept contact in slot `at`: the accumulated impulse takes the
// step that stops the contact, then is clamped as a whole; returns its change. Twin of
// `accumulate`.
fn particle_accumulate(at: u32, n: vec3<f32>, vn: f32, vt: vec3<f32>, bias: f32, friction: f32, mass: f32) -> vec3<f32> {
    let slot = contacts[at];
    let old = bitcast<vec3<f32>>(slot.xyz);
    let normal = dot3(old, n);
    let lambda = max(normal - mass * (vn + bias), 0.0);
    var tangent = (old - normal * n) - vt * mass;
    let max_friction = friction * lambda;
    let len_sq = dot3(tangent, tangent);
    if len_sq > max_friction * max_friction {
        tangent = tangent * (max_friction / sqrt(len_sq));
    }
    let impulse = lambda * n + tangent;
    contacts[at] = vec4<u32>(bitcast<vec3<u32>>(impulse), slot.w);
    return impulse - old;
}

// A kept contact's impulse change in slot `at`: for the warm start it keeps contact `id` and
// returns last substep's impulse, for a velocity iteration one iteration's change. Twin of
// `kept_impulse`.
fn particle_kept_impulse(mode: u32, at: u32, last: ptr<function, array<vec4<u32>, PARTICLE_CONTACT_SLOTS>>, id: u32, n: vec3<f32>, vn: f32, vt: vec3<f32>, bias: f32, friction: f32, mass: f32) -> vec3<f32> {
    if mode == GATHER_WARM_START {
        return particle_warm_impulse(at, last, id, n, friction);
    }
    return particle_accumulate(at, n, vn, vt, bias, friction, mass);
}

// The static colliders' hold on particle `me` (index i) against its pushes of a position
// iteration, from particles above it and the rest: the part that would take it into a collider
// it touches beyond contact removed, the pushes from above along it held back by Coulomb
// friction, up to mu times their removed part plus the friction the contact had to spare in
// the last substep's velocity iterations, shared out over the position iterations. Twin of
// `hold`.
fn particle_hold(i: u32, me: Particle, from_above: vec3<f32>, others: vec3<f32>) -> vec3<f32> {
    var change = from_above;
    var rest = others;
    for (var ci = 0u; ci < params.collider_count; ci++) {
        let c = collider_at(ci);
        let field = particle_collider_distance(c, me.position);
        let gap = field.w - me.radius;
        if gap >= params.particle_margin {
            continue;
        }
        let n = field.xyz;
        let friction = sqrt(params.particle_friction * c.friction);
        var spare = 0.0;
        for (var k = 0u; k < PARTICLE_CONTACT_SLOTS; k++) {
            let slot = contacts[i * PARTICLE_CONTACT_SLOTS + k];
            if slot.w == (PARTICLE_CONTACT_COLLIDER | ci) {
                let impulse = bitcast<vec3<f32>>(slot.xyz);
                let normal = dot3(impulse, n);
                let tangent = impulse - normal * n;
                let share = (params.h / me.mass) / f32(params.particle_iterations);
                spare = max(friction * max(normal, 0.0) - sqrt(dot3(tangent, tangent)), 0.0) * share;
                break;
            }
        }
        let held = max(-(dot3(n, change) + max(gap, 0.0)), 0.0);
        change += held * n;
        let tangent = change - dot3(n, change) * n;
        let len = sqrt(dot3(tangent, tangent));
        if len > 0.0 {
            change -= tangent * (min(len, friction * held + spare) / len);
        }
        rest += max(-(dot3(n, change + rest) + max(gap, 0.0)), 0.0) * n;
    }
    return change + rest;
}

// Over the 27 cells around particle i (each bucket once, in a fixed order), then the colliders:
// the change `mode` asks for (xyz) and the number of contacts within reach (w); a count of 0
// (a contact that came within reach after counting) is taken as 1. The count also selects the
// particle's closest pairs; the warm start and the velocity iterations keep the close pairs
// that both sides selected, then the colliders while slots last, in the particle's slots of
// `contacts`. Twin of `gather`.
fn particle_gather(i: u32, mode: u32) -> vec4<f32> {
    let me = particles[i];
    let kept = mode == GATHER_WARM_START || mode == GATHER_VELOCITY;
    let base = i * PARTICLE_CONTACT_SLOTS;
    var last: array<vec4<u32>, PARTICLE_CONTACT_SLOTS>;
    if mode == GATHER_WARM_START {
        for (var k = 0u; k < PARTICLE_CONTACT_SLOTS; k++) {
            last[k] = contacts[base + k];
            contacts[base + k] = vec4<u32>(0u);
        }
    }
    var slot = 0u;
    // The closest pairs so far, by (gap, id); id zero where there is none.
    var nearest_s: array<f32, PARTICLE_CONTACT_SLOTS>;
    var nearest_id: array<u32, PARTICLE_CONTACT_SLOTS>;
    for (var k = 0u; k < PARTICLE_CONTACT_SLOTS; k++) {
        nearest_s[k] = 0x1.fffffep+127f;
    }
    let c = particle_cell(me.position);
    var my_share = 0.0;
    if mode != GATHER_COUNT {
        my_share = f32(max(work[params.particle_counts + i], 1u)) / me.mass;
    }
    var seen: array<u32, 27>;
    var change = vec3<f32>(0.0);
    var from_above = vec3<f32>(0.0);
    var count = 0u;
    var cell = 0u;
    for (var dz = -1; dz <= 1; dz++) {
        for (var dy = -1; dy <= 1; dy++) {
            for (var dx = -1; dx <= 1; dx++) {
                let key = particle_cell_key(c.x + dx, c.y + dy, c.z + dz);
                var repeated = false;
                for (var s = 0u; s < cell; s++) {
                    repeated = repeated || seen[s] == key;
                }
                seen[cell] = key;
                cell += 1u;
                let start = work[params.particle_cell_start + key];
                if repeated || start == EMPTY_CELL {
                    continue;
                }
                for (var k = start; k < params.particle_count && work[params.particle_sorted + 2u * k] == key; k++) {
                    let j = work[params.particle_sorted + 2u * k + 1u];
                    if j == i {
                        continue;
                    }
                    let other = particles[j];
                    let d_vec = me.position - other.position;
                    let d_sq = dot3(d_vec, d_vec);
                    let reach = me.radius + other.radius;
                    // Out of reach before the square root, with room for its rounding.
                    let bound = reach + params.particle_margin;
                    if d_sq > bound * bound * PARTICLE_FAR {
                        continue;
                    }
                    let d = sqrt(d_sq);
                    if d >= bound {
                        continue;
                    }
                    let close = d - reach < PARTICLE_KEEP_GAP * min(me.radius, other.radius);
                    count += 1u;
                    if mode == GATHER_COUNT {
                        if close {
                            particle_select_pair(&nearest_s, &nearest_id, d - reach, j + 1u);
                        }
                        continue;
                    }
                    var n = d_vec * (1.0 / d);
                    if !(d > 0.0) {
                        n = select(vec3<f32>(0.0, -1.0, 0.0), vec3<f32>(0.0, 1.0, 0.0), i < j);
                    }
                    let s = d - reach;
                    let mass = 1.0 / (my_share + f32(max(work[params.particle_counts + j], 1u)) / other.mass);
                    let dvel = me.velocity - other.velocity;
                    if mode == GATHER_RESTITUTION {
                        // Velocities at the start of the substep: deltas[2 N + i].
                        let first = 2u * params.particle_count;
                        let vn0 = dot3(deltas[first + i].xyz - deltas[first + j].xyz, n);
                        if vn0 < -params.restitution_threshold && vn0 * params.h + s < 0.0 {
                            let lambda = max(-mass * (dot3(dvel, n) + params.particle_restitution * vn0), 0.0);
                            change += n * (lambda / me.mass);
                        }
                        continue;
                    }
                    if mode == GATHER_POSITION {
                        if s < 0.0 {
                            let push = -s * mass;
                            let vt = dvel - dot3(dvel, n) * n;
                            let limit = params.particle_friction * push * params.inv_h;
                            let delta = n * (push / me.mass) + particle_friction_impulse(vec3<f32>(0.0), vt, limit, mass) * (params.h / me.mass);
                            // The pushes from particles above (along gravity) apart from the
                            // others: the colliders hold only those back by friction.
                            if dot3(n, params.gravity) > 0.0 {
                                from_above += delta;
                            } else {
                                change += delta;
                            }
                        }
                        continue;
                    }
                    let vn = dot3(dvel, n);
                    let bias = max(s, 0.0) * params.inv_h;
                    // A pair keeps its impulse when each side selected the other; the velocity
                    // iterations meet the contacts the warm start kept in the same order.
                    var keep = false;
                    if mode == GATHER_WARM_START {
                        keep = slot < PARTICLE_CONTACT_SLOTS && close && particle_selected(i, j) && particle_selected(j, i);
                    } else if mode == GATHER_VELOCITY && slot < PARTICLE_CONTACT_SLOTS {
                        keep = contacts[base + slot].w == j + 1u;
                    }
                    if keep {
                        change += particle_kept_impulse(mode, base + slot, &last, j + 1u, n, vn, dvel - vn * n, bias, params.particle_friction, mass) * (1.0 / me.mass);
                        slot += 1u;
                        continue;
                    }
                    if mode == GATHER_WARM_START {
                        continue;
                    }
                    let lambda = max(-mass * (vn + bias), 0.0);
                    change += particle_friction_impulse(lambda * n, dvel - vn * n, params.particle_friction * lambda, mass) * (1.0 / me.mass);
                }
            }
        }
    }
    if mode == GATHER_COUNT {
        for (var k = 0u; k < PARTICLE_CONTACT_SLOTS; k++) {
            work[params.particle_selected + base + k] = nearest_id[k];
        }
    }
    if mode == GATHER_RESTITUTION {
        return vec4<f32>(change, f32(count));
    }
    if mode == GATHER_POSITION {
        return vec4<f32>(particle_hold(i, me, from_above, change), f32(count));
    }
    for (var ci = 0u; ci < params.collider_count; ci++) {
        let col = collider_at(ci);
        let field = particle_collider_distance(col, me.position);
        let gap = field.w - me.radius;
        if gap >= params.particle_margin {
            continue;
        }
        count += 1u;
        if mode == GATHER_COUNT {
            continue;
        }
        let n = field.xyz;
        let mass = 1.0 / my_share;
        let vn = dot3(me.velocity, n);
        let bias = max(gap, 0.0) * params.inv_h;
        let friction = sqrt(params.particle_friction * col.friction);
        // The warm start keeps the colliders while slots last; the velocity iterations meet them
        // in the same order.
        let id = PARTICLE_CONTACT_COLLIDER | ci;
        if kept && slot < PARTICLE_CONTACT_SLOTS && (mode == GATHER_WARM_START || contacts[base + slot].w == id) {
            change += particle_kept_impulse(mode, base + slot, &last, id, n, vn, me.velocity - vn * n, bias, friction, mass) * (1.0 / me.mass);
            slot += 1u;
            continue;
        }
        if mode == GATHER_WARM_START {
            continue;
        }
        let lambda = max(-mass * (vn + bias), 0.0);
        change += particle_friction_impulse(lambda * n, me.velocity - vn * n, friction * lambda, mass) * (1.0 / me.mass);
    }
    return vec4<f32>(change, f32(count));
}

// The particle that thread `k` of a gather handles: the k-th in the grid's sorted order. Threads
// side by side then handle particles of the same cell and read the same neighbours, instead of
// particles scattered over the heap; each particle's gather is its own, so the order changes no
// result.
fn particle_in_cell_order(k: u32) -> u32 {
    return work[params.particle_sorted + 2u * k + 1u];
}

// The neighbour counts, and gravity (which the velocity iterations then see).
@compute @workgroup_size(WORKGROUP_SIZE)
fn particle_count(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let k = thread_index(wid, nwg, lid, WORKGROUP_SIZE);
    if k < params.particle_count {
        let i = particle_in_cell_order(k);
        var count = u32(particle_gather(i, GATHER_COUNT).w);
        if params.particle_body_contacts != 0u {
            count += slots_used(i);
        }
        work[params.particle_counts + i] = count;
        if params.particle_restitution > 0.0 {
            deltas[2u * params.particle_count + i] = vec4<f32>(particles[i].velocity, 0.0);
        }
        particles[i].velocity = particles[i].velocity + params.h * params.gravity;
        if params.particle_body_contacts != 0u {
            // Each slot's approach velocity at the start of the substep, both sides after
            // gravity, in the lever's w.
            let used = slots_used(i);
            for (var k = 0u; k < used; k++) {
                let b = work[slot_word(i, k)];
                let n = slots[slot_at(i, k)].xyz;
                let lever = slots[slot_at(i, k) + 1u].xyz;
                let v = bodies[b].linear_velocity + cross3(bodies[b].angular_velocity, lever);
                slots[slot_at(i, k) + 1u] = vec4<f32>(lever, dot3(particles[i].velocity - v, n));
            }
        }
    }
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn particle_separate(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let k = thread_index(wid, nwg, lid, WORKGROUP_SIZE);
    if k < params.particle_count {
        let i = particle_in_cell_order(k);
        // The position change, and after the particles the velocity change it brings (written
        // out, so no compiler fuses the product into the sum that applies it).
        let dx = particle_gather(i, GATHER_POSITION).xyz;
        deltas[i] = vec4<f32>(dx, 0.0);
        deltas[params.particle_count + i] = vec4<f32>(dx * params.inv_h, 0.0);
    }
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn particle_apply_position(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let i = thread_index(wid, nwg, lid, WORKGROUP_SIZE);
    if i < params.particle_count {
        particles[i].position = particles[i].position + deltas[i].xyz;
        particles[i].velocity = particles[i].velocity + deltas[params.particle_count + i].xyz;
    }
}

// The warm start: each particle's kept contacts found again and their last impulses applied
// (by `particle_apply_velocity`).
@compute @workgroup_size(WORKGROUP_SIZE)
fn particle_warm_start(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let k = thread_index(wid, nwg, lid, WORKGROUP_SIZE);
    if k < params.particle_count {
        let i = particle_in_cell_order(k);
        deltas[i] = vec4<f32>(particle_gather(i, GATHER_WARM_START).xyz, 0.0);
    }
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn particle_collide(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let k = thread_index(wid, nwg, lid, WORKGROUP_SIZE);
    if k < params.particle_count {
        let i = particle_in_cell_order(k);
        deltas[i] = vec4<f32>(particle_gather(i, GATHER_VELOCITY).xyz, 0.0);
    }
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn particle_apply_velocity(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let i = thread_index(wid, nwg, lid, WORKGROUP_SIZE);
    if i < params.particle_count {
        apply_change(i, deltas[i].xyz);
    }
}

// Adds particle i's Jacobi change and the impulses its body slots hold (then zeroes them).
// Twin of `apply_changes`.
fn apply_change(i: u32, change: vec3<f32>) {
    var dv = change;
    if params.particle_body_contacts != 0u {
        let used = slots_used(i);
        for (var k = 0u; k < used; k++) {
            dv += slots[slot_at(i, k) + 2u].xyz * (1.0 / particles[i].mass);
            slots[slot_at(i, k) + 2u] = vec4<f32>(0.0);
        }
    }
    particles[i].velocity = particles[i].velocity + dv;
}

// The restitution pass over the particle pairs, after the velocity iterations (when the
// particles' restitution is above zero): the changes, then their application.
@compute @workgroup_size(WORKGROUP_SIZE)
fn particle_restitution(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let k = thread_index(wid, nwg, lid, WORKGROUP_SIZE);
    if k < params.particle_count {
        let i = particle_in_cell_order(k);
        deltas[i] = vec4<f32>(particle_gather(i, GATHER_RESTITUTION).xyz, 0.0);
    }
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn particle_apply_restitution(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let i = thread_index(wid, nwg, lid, WORKGROUP_SIZE);
    if i < params.particle_count {
        // The pairs' change when particles bounce off each other (else particle_restitution
        // did not run), then the body slots'.
        var change = vec3<f32>(0.0);
        if params.particle_restitution > 0.0 {
            change = deltas[i].xyz;
        }
        apply_change(i, change);
    }
}

// Particle-body slots (filled by shaders/particle_bodies.wgsl): the body index in the work
// arena, then normal, lever and impulse as three vec4 of `slots`. Twins of the functions of
// src/cpu/particle_contacts.rs named in each comment.

fn slot_word(i: u32, k: u32) -> u32 {
    return params.particle_slot_bodies + i * PARTICLE_BODY_SLOTS + k;
}

fn slot_at(i: u32, k: u32) -> u32 {
    return 3u * (i * PARTICLE_BODY_SLOTS + k);
}

fn slots_used(i: u32) -> u32 {
    return min(work[params.particle_slot_counts + i], PARTICLE_BODY_SLOTS);
}

// The normal of a static collider that holds particle `me` against a push along n, or zero.
// Twin of `support_normal`.
fn particle_support(me: Particle, n: vec3<f32>) -> vec3<f32> {
    for (var ci = 0u; ci < params.collider_count; ci++) {
        let field = particle_collider_distance(collider_at(ci), me.position);
        if field.w - me.radius < params.particle_margin && dot3(field.xyz, n) < -0.5 {
            return field.xyz;
        }
    }
    return vec3<f32>(0.0);
}

// One Gauss-Seidel pass of body b over its particle contacts, in the order of its list: each
// impulse applied to the body at once and stored in the particle's slot (zero for a supported
// particle, whose push goes to the static geometry). A velocity iteration removes contact
// velocities, pushes overlaps out by a velocity bias and applies friction; the restitution
// pass (`restitution_pass`) gives a contact whose particle approached faster than the
// threshold at the start of the substep (the lever's w) and would have reached the body within
// it the impulse that makes it leave at e times that speed. Twin of `body_contacts_pass`.
fn body_particle_pass(b: u32, restitution_pass: bool) {
    let pr = props[b];
    let restitution = max(params.particle_restitution, pr.restitution);
    if restitution_pass && !(restitution > 0.0) {
        return;
    }
    let dynamic = pr.kind == KIND_DYNAMIC;
    let position = bodies[b].position;
    var linear = bodies[b].linear_velocity;
    var angular = bodies[b].angular_velocity;
    var inv_mass = 0.0;
    var inv_inertia = mat3x3<f32>(vec3<f32>(0.0), vec3<f32>(0.0), vec3<f32>(0.0));
    if dynamic {
        inv_mass = bodies[b].inv_mass;
        inv_inertia = world_inverse_inertia(bodies[b].orientation, pr.inv_inertia);
    }
    let friction = sqrt(params.particle_friction * pr.friction);
    let end = min(work[params.particle_body_starts + b + 1u], params.particle_body_capacity);
    for (var e = work[params.particle_body_starts + b]; e < end; e++) {
        let j = work[params.particle_body_list + e];
        let used = slots_used(j);
        var k = 0u;
        for (; k < used; k++) {
            if work[slot_word(j, k)] == b {
                break;
            }
        }
        if k == used {
            continue;
        }
        let me = particles[j];
        let n = slots[slot_at(j, k)].xyz;
        let lever_w = slots[slot_at(j, k) + 1u];
        let lever = lever_w.xyz;
        let approach = lever_w.w;
        let s = dot3(n, me.position - (position + lever)) - me.radius;
        if restitution_pass && !(approach < -params.restitution_threshold && approach * params.h + s < 0.0) {
            continue;
        }
        let rn = cross3(lever, n);
        let body_share = inv_mass + dot3(rn, mat3_mul(inv_inertia, rn));
        let support = particle_support(me, n);
        let supported = any(support != vec3<f32>(0.0));
        var impulse = vec3<f32>(0.0);
        if !(supported && body_share == 0.0) {
            var my_share = 0.0;
            if !supported {
                my_share = f32(max(work[params.particle_counts + j], 1u)) / me.mass;
            }
            let mass = 1.0 / (my_share + body_share);
            let velocity = me.velocity - support * min(dot3(me.velocity, support), 0.0);
            let dvel = velocity - (linear + cross3(angular, lever));
            let vn = dot3(dvel, n);
            if restitution_pass {
                impulse = n * max(-mass * (vn + restitution * approach), 0.0);
            } else {
                var bias = s * params.inv_h;
                if !(s > 0.0) {
                    bias = max(s * params.contact_bias_rate, -params.max_push_velocity);
                }
                let lambda = max(-mass * (vn + bias), 0.0);
                impulse = particle_friction_impulse(lambda * n, dvel - vn * n, friction * lambda, mass);
            }
            linear = linear - inv_mass * impulse;
            angular = angular - mat3_mul(inv_inertia, cross3(lever, impulse));
        }
        if supported {
            impulse = vec3<f32>(0.0);
        }
        slots[slot_at(j, k) + 2u] = vec4<f32>(impulse, 0.0);
    }
    if dynamic {
        bodies[b].linear_velocity = linear;
        bodies[b].angular_velocity = angular;
    }
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn body_particle_solve(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let b = thread_index(wid, nwg, lid, WORKGROUP_SIZE);
    if b < params.body_count {
        body_particle_pass(b, false);
    }
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn body_particle_restitution(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let b = thread_index(wid, nwg, lid, WORKGROUP_SIZE);
    if b < params.body_count {
        body_particle_pass(b, true);
    }
}
