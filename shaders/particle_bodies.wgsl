// Particle-body contacts found from the bodies' side, once per substep after the particle grid
// is built: `body_particle_count` counts each body's particles, a scan turns the counts into
// starts, `body_particle_fill` lists each body's particles and offers each body to the
// particle's slots (`keep_smallest`: the PARTICLE_BODY_SLOTS bodies of smallest index among
// those touching it, whatever order the threads come in, as the CPU keeps), and
// `particle_body_settle` puts the kept bodies in the order of their indices, with their
// contacts' geometry.
// Twins of `for_each_particle_touching` and `find_body_contacts` in
// src/cpu/particle_contacts.rs.

// A slot's first vec4 in `slots`: normal, then lever, then impulse.
fn body_slot_data(j: u32, k: u32) -> u32 {
    return 3u * (j * PARTICLE_BODY_SLOTS + k);
}

// Body b as the particles see it: posed, its core bounds, its velocity, and how much faster than
// its centre its surface can move within the substep (rotation, with what a set torque adds to
// it, and the substep's gravity and set force), m/s. Twin of `surface_speedup` in
// src/cpu/particle_contacts.rs.
struct BodyView {
    posed: Posed,
    lo: vec3<f32>,
    hi: vec3<f32>,
    linear: vec3<f32>,
    spin: f32,
}

fn body_view(b: u32) -> BodyView {
    let body = bodies[b];
    let shape = shapes[props[b].shape];
    let posed = Posed(shape, body.position, body.orientation);
    let bounds = core_bounds(posed);
    let arm = length3(max(bounds[1] - body.position, body.position - bounds[0])) + shape.radius;
    let pr = props[b];
    let turn = length3(body.angular_velocity) + params.h * max(pr.inv_inertia.x, max(pr.inv_inertia.y, pr.inv_inertia.z)) * length3(pr.torque);
    let spin = turn * arm + params.h * (length3(params.gravity) + body.inv_mass * length3(pr.force));
    return BodyView(posed, bounds[0], bounds[1], body.linear_velocity, spin);
}

// Particle j against body v: the narrow phase's contacts (none when the two cannot meet within
// the substep). The bounds grown by this pair's own reach reject most particles before the
// narrow phase.
fn body_particle_contacts(v: BodyView, j: u32) -> Contacts {
    let q = particles[j];
    let margin = params.particle_margin + params.h * (length3(q.velocity - v.linear) + v.spin);
    let grow = vec3<f32>(v.posed.shape.radius + q.radius + margin);
    if any(q.position < v.lo - grow) || any(q.position > v.hi + grow) {
        return empty_contacts(vec3<f32>(0.0));
    }
    let point = Shape(params.origin_point, 1u, 0u, 0u, 0u, 0u, q.radius, SHAPE_POINT);
    let a = Posed(point, q.position, vec4<f32>(0.0, 0.0, 0.0, 1.0));
    return collide_point(a, v.posed, margin);
}

// A slot's normal (from the body to the particle) and lever (from the body's centre to its
// surface point), from the contacts of `body_particle_contacts`.
fn slot_geometry(v: BodyView, m: Contacts) -> array<vec4<f32>, 2> {
    let normal = -m.normal;
    let lever = m.points[0].core_b + normal * v.posed.shape.radius;
    return array<vec4<f32>, 2>(vec4<f32>(normal, 0.0), vec4<f32>(lever, 0.0));
}

// Body b among the PARTICLE_BODY_SLOTS smallest body indices touching particle j, by a cascade of
// atomic minima over the particle's `particle_slot_wanted` words (cleared to EMPTY_CELL): each
// word keeps the smaller of what it holds and what arrives and passes the larger on. Slot k of
// the particle then ends with the (k+1)-th smallest index, whatever order the bodies came in:
// the first word sees every index, the second every index but the smallest, and so on.
fn keep_smallest(j: u32, b: u32) {
    var carry = b;
    for (var k = 0u; k < PARTICLE_BODY_SLOTS; k++) {
        let held = atomicMin(&work[params.particle_slot_wanted + j * PARTICLE_BODY_SLOTS + k], carry);
        if held == EMPTY_CELL {
            return;
        }
        carry = max(held, carry);
    }
}

// Particle j against body b (seen as v): 1 when the two can meet within the substep (and, when
// filling, its list entry at *e written, the body offered to the particle's slots and the
// contact's geometry stored in the slot the particle's counter gives it, if any), else 0.
fn body_particle_touch(b: u32, v: BodyView, j: u32, fill: bool, e: ptr<function, u32>) -> u32 {
    let m = body_particle_contacts(v, j);
    if m.count == 0u {
        return 0u;
    }
    if fill {
        if *e >= params.particle_body_capacity {
            atomicAdd(&work[params.particle_body_dropped], 1u);
            return 1u;
        }
        atomicStore(&work[params.particle_body_list + *e], j);
        *e += 1u;
        keep_smallest(j, b);
        let k = atomicAdd(&work[params.particle_slot_counts + j], 1u);
        if k < PARTICLE_BODY_SLOTS {
            atomicStore(&work[params.particle_slot_bodies + j * PARTICLE_BODY_SLOTS + k], b);
            let at = body_slot_data(j, k);
            let g = slot_geometry(v, m);
            slots[at] = g[0];
            slots[at + 1u] = g[1];
        } else {
            atomicAdd(&work[params.particle_body_dropped], 1u);
        }
    }
    return 1u;
}

// Body b's particles: the grid cells its bounds (grown by the particles' reach and by how far
// the body and the fastest particle can close in the substep) cover, each particle in the cell
// it lies in, or every particle when the bounds cover more cells than there are particles.
// Returns how many can touch it. One thread walks all of a body's candidates, so the loop trips
// grow with the body's size: Mesa's software drivers (llvmpipe, lavapipe) end every loop of an
// invocation after 65,535 trips in all, silently, which the CPU comparison tests must stay under.
// Twin of `for_each_particle_touching`.
fn body_particle_visit(b: u32, fill: bool) -> u32 {
    let v = body_view(b);
    let fastest = bitcast<f32>(atomicLoad(&work[params.particle_speed_bound]));
    let sweep = params.h * (fastest + length3(v.linear) + v.spin);
    let reach = v.posed.shape.radius + params.particle_reach + sweep;
    let lo = v.lo - vec3<f32>(reach);
    let hi = v.hi + vec3<f32>(reach);
    let c_lo = floor(lo * params.particle_inv_cell);
    let c_hi = floor(hi * params.particle_inv_cell);
    var e = 0u;
    if fill {
        e = atomicLoad(&work[params.particle_body_starts + b]);
    }
    var count = 0u;
    let cells = max(c_hi - c_lo + vec3<f32>(1.0), vec3<f32>(1.0));
    if cells.x * cells.y * cells.z > f32(params.particle_count) {
        for (var j = 0u; j < params.particle_count; j++) {
            count += body_particle_touch(b, v, j, fill, &e);
        }
        return count;
    }
    let l = vec3<i32>(c_lo);
    let h = vec3<i32>(c_hi);
    for (var z = l.z; z <= h.z; z++) {
        for (var y = l.y; y <= h.y; y++) {
            for (var x = l.x; x <= h.x; x++) {
                let key = ((u32(x) * GRID_HASH_X) ^ (u32(y) * GRID_HASH_Y) ^ (u32(z) * GRID_HASH_Z)) & params.particle_hash_mask;
                let start = atomicLoad(&work[params.particle_cell_start + key]);
                if start == EMPTY_CELL {
                    continue;
                }
                for (var k = start; k < params.particle_count && atomicLoad(&work[params.particle_sorted + 2u * k]) == key; k++) {
                    let j = atomicLoad(&work[params.particle_sorted + 2u * k + 1u]);
                    let c = floor(particles[j].position * params.particle_inv_cell);
                    if all(vec3<i32>(c) == vec3<i32>(x, y, z)) {
                        count += body_particle_touch(b, v, j, fill, &e);
                    }
                }
            }
        }
    }
    return count;
}

var<workgroup> fastest_here: atomic<u32>;

// The largest finite particle speed of the substep, as the maximum of the speeds' bit patterns
// (for non-negative floats the same order, and exact whatever order the threads come in): a
// workgroup maximum, then one atomic per workgroup on the word `particle_hash` cleared. Twin of
// `fastest_particle`.
@compute @workgroup_size(WORKGROUP_SIZE)
fn particle_speed_bound(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let i = thread_index(wid, nwg, lid, WORKGROUP_SIZE);
    if i < params.particle_count {
        let speed = length3(particles[i].velocity);
        if speed <= 3.4028235e38 {
            atomicMax(&fastest_here, bitcast<u32>(speed));
        }
    }
    workgroupBarrier();
    if lid == 0u {
        atomicMax(&work[params.particle_speed_bound], atomicLoad(&fastest_here));
    }
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn body_particle_count(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let b = thread_index(wid, nwg, lid, WORKGROUP_SIZE);
    if b < params.body_count {
        atomicStore(&work[params.particle_body_starts + b], body_particle_visit(b, false));
    }
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn body_particle_fill(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let b = thread_index(wid, nwg, lid, WORKGROUP_SIZE);
    if b < params.body_count {
        _ = body_particle_visit(b, true);
    }
}

// Particle j's slots settled: the bodies of the PARTICLE_BODY_SLOTS smallest indices touching
// it, in that order (as `keep_smallest` left them), each with its contact's geometry. When no
// more bodies touched the particle than it has slots, each holds one, and the geometry is
// copied from it. Otherwise which of the kept bodies got a slot from the fill's counter was a
// race, so the geometry of every kept body is found again, by the same functions: which way a
// slot gets its geometry then depends on the count alone, so also a compiler that rounds the
// fill's arithmetic differently from this kernel's gives the same bits on every run. Twin of
// the slots' filling in `find_body_contacts`, where the bodies come in index order.
@compute @workgroup_size(WORKGROUP_SIZE)
fn particle_body_settle(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let j = thread_index(wid, nwg, lid, WORKGROUP_SIZE);
    if j >= params.particle_count {
        return;
    }
    let count = atomicLoad(&work[params.particle_slot_counts + j]);
    let used = min(count, PARTICLE_BODY_SLOTS);
    if used == 0u {
        return;
    }
    let first = j * PARTICLE_BODY_SLOTS;
    var held: array<u32, PARTICLE_BODY_SLOTS>;
    for (var s = 0u; s < used; s++) {
        held[s] = atomicLoad(&work[params.particle_slot_bodies + first + s]);
    }
    var wanted: array<u32, PARTICLE_BODY_SLOTS>;
    var geometry_of: array<array<vec4<f32>, 2>, PARTICLE_BODY_SLOTS>;
    for (var k = 0u; k < used; k++) {
        let b = atomicLoad(&work[params.particle_slot_wanted + first + k]);
        wanted[k] = b;
        if count > PARTICLE_BODY_SLOTS {
            let v = body_view(b);
            geometry_of[k] = slot_geometry(v, body_particle_contacts(v, j));
        } else {
            // Every body touching the particle holds a slot.
            var s = 0u;
            while s + 1u < used && held[s] != b {
                s++;
            }
            let at = body_slot_data(j, s);
            geometry_of[k] = array<vec4<f32>, 2>(slots[at], slots[at + 1u]);
        }
    }
    for (var k = 0u; k < used; k++) {
        atomicStore(&work[params.particle_slot_bodies + first + k], wanted[k]);
        let at = body_slot_data(j, k);
        slots[at] = geometry_of[k][0];
        slots[at + 1u] = geometry_of[k][1];
    }
}
