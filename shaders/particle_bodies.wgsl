// Particle-body contacts found from the bodies' side, once per substep after the particle grid
// is built: `body_particle_count` counts each body's particles, a scan turns the counts into
// starts, and `body_particle_fill` lists each body's particles and hands each particle one of
// its PARTICLE_BODY_SLOTS slots (an atomic counter per particle; `particle_count` then sorts a
// particle's slots by body, so the order does not depend on which thread came first). Twins of
// `for_each_particle_touching` and `find_body_contacts` in src/cpu/particle_contacts.rs.

// A slot's first vec4 in `slots`: normal, then lever, then impulse.
fn body_slot_data(j: u32, k: u32) -> u32 {
    return 3u * (j * PARTICLE_BODY_SLOTS + k);
}

// Particle j against the body posed as `body` with core bounds lo..hi, moving at `linear` and
// sweeping `spin` m/s more at its surface (rotation and the substep's gravity): 1 when the two
// can meet within the substep (and, when filling, its list entry at *e and a slot of the
// particle written), else 0. The bounds grown by this pair's own reach reject most particles
// before the narrow phase.
fn body_particle_touch(b: u32, body: Posed, linear: vec3<f32>, spin: f32, j: u32, lo: vec3<f32>, hi: vec3<f32>, fill: bool, e: ptr<function, u32>) -> u32 {
    let q = particles[j];
    let margin = params.particle_margin + params.h * (length3(q.velocity - linear) + spin);
    let grow = vec3<f32>(body.shape.radius + q.radius + margin);
    if any(q.position < lo - grow) || any(q.position > hi + grow) {
        return 0u;
    }
    let point = Shape(params.origin_point, 1u, 0u, 0u, 0u, 0u, q.radius, SHAPE_POINT);
    let a = Posed(point, q.position, vec4<f32>(0.0, 0.0, 0.0, 1.0));
    let m = collide_point(a, body, margin);
    if m.count == 0u {
        return 0u;
    }
    if fill {
        if *e >= params.particle_body_capacity {
            atomicAdd(&work[params.particle_body_dropped], 1u);
            return 1u;
        }
        let normal = -m.normal;
        let lever = m.points[0].core_b + normal * body.shape.radius;
        atomicStore(&work[params.particle_body_list + *e], j);
        *e += 1u;
        let k = atomicAdd(&work[params.particle_slot_counts + j], 1u);
        if k < PARTICLE_BODY_SLOTS {
            atomicStore(&work[params.particle_slot_bodies + j * PARTICLE_BODY_SLOTS + k], b);
            let at = body_slot_data(j, k);
            slots[at] = vec4<f32>(normal, 0.0);
            slots[at + 1u] = vec4<f32>(lever, 0.0);
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
    let body = bodies[b];
    let shape = shapes[props[b].shape];
    let posed = Posed(shape, body.position, body.orientation);
    let bounds = core_bounds(posed);
    let arm = length3(max(bounds[1] - body.position, body.position - bounds[0])) + shape.radius;
    let spin = length3(body.angular_velocity) * arm + params.h * length3(params.gravity);
    let fastest = bitcast<f32>(atomicLoad(&work[params.particle_speed_bound]));
    let sweep = params.h * (fastest + length3(body.linear_velocity) + spin);
    let reach = shape.radius + params.particle_reach + sweep;
    let lo = bounds[0] - vec3<f32>(reach);
    let hi = bounds[1] + vec3<f32>(reach);
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
            count += body_particle_touch(b, posed, body.linear_velocity, spin, j, bounds[0], bounds[1], fill, &e);
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
                        count += body_particle_touch(b, posed, body.linear_velocity, spin, j, bounds[0], bounds[1], fill, &e);
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
