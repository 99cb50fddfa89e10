// Stage `stats`: per-body kinetic energy, active contacts and penetration, reduced without
// atomics in a fixed tree order (deterministic): `stats_partial` leaves one Stats per workgroup
// in `stats`, `stats_final` (one workgroup) folds them into stats[0]. The per-body work is the
// twin of `body_stats` in src/cpu/stages.rs.

var<workgroup> shared_stats: array<Stats, STATS_WORKGROUP_SIZE>;

fn combine(a: Stats, b: Stats) -> Stats {
    return Stats(a.kinetic_energy + b.kinetic_energy, max(a.max_penetration, b.max_penetration), a.contacts + b.contacts, a.dynamic_bodies + b.dynamic_bodies);
}

fn body_stats(i: u32) -> Stats {
    var out = Stats(0.0, 0.0, 0u, 0u);
    if i >= params.body_count || !is_dynamic(i) {
        return out;
    }
    let b = bodies[i];
    let pr = props[i];
    let sh = shapes[pr.shape];
    out.kinetic_energy = kinetic_energy(b.inv_mass, pr.inv_inertia, b.orientation, b.linear_velocity, b.angular_velocity);
    out.dynamic_bodies = 1u;
    for (var collider_index = 0u; collider_index < params.collider_count; collider_index++) {
        let collider = colliders[collider_index];
        for (var k = 0u; k < sh.point_count; k++) {
            let x = b.position + rotate(b.orientation, geometry[sh.first_point + k].xyz);
            var s = 0.0;
            if collider.node_count == 0u {
                s = dot3(collider.normal, x) - sh.radius - collider.offset;
            } else {
                s = sdf_evaluate(collider.first_node, collider.node_count, x).w - sh.radius;
            }
            out.max_penetration = max(out.max_penetration, -s);
            var surfaces = 3u;
            if collider.node_count == 0u {
                surfaces = 1u;
            }
            for (var surface = 0u; surface < surfaces; surface++) {
                out.contacts += contacts[surface_slot_index(pr, sh, collider_index, k, surface)].in_contact;
            }
        }
    }
    return out;
}

fn reduce_shared(lid: u32) {
    for (var stride = STATS_WORKGROUP_SIZE / 2u; stride > 0u; stride /= 2u) {
        workgroupBarrier();
        if lid < stride {
            shared_stats[lid] = combine(shared_stats[lid], shared_stats[lid + stride]);
        }
    }
    workgroupBarrier();
}

@compute @workgroup_size(STATS_WORKGROUP_SIZE)
fn stats_partial(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let group = wid.y * nwg.x + wid.x;
    shared_stats[lid] = body_stats(group * STATS_WORKGROUP_SIZE + lid);
    reduce_shared(lid);
    if lid == 0u {
        stats[group] = shared_stats[0];
    }
}

@compute @workgroup_size(STATS_WORKGROUP_SIZE)
fn stats_final(@builtin(local_invocation_index) lid: u32) {
    // The bodies' partials, then (with body-body contacts) the manifolds': the buffer holds both.
    let partials = arrayLength(&stats);
    var acc = Stats(0.0, 0.0, 0u, 0u);
    for (var j = lid; j < partials; j += STATS_WORKGROUP_SIZE) {
        acc = combine(acc, stats[j]);
    }
    shared_stats[lid] = acc;
    reduce_shared(lid);
    if lid == 0u {
        stats[0] = shared_stats[0];
    }
}
