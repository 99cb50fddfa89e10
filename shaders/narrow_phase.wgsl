// Stage `narrow_phase`: every core point of a dynamic body against every static plane and SDF
// collider (seed 000; an SDF's normal is its gradient at the point, and a second or third surface
// of the field near the point makes a contact each, `second_surface`, `third_surface`),
// speculative within `speculative_distance + max(0, -v_n) dt`; warm starting by slot (a field's
// surfaces by their normals, `warm_sources`). Twin of
// `narrow_phase` in src/cpu/stages.rs.

// The larger eigenvalue of the symmetric 2x2 matrix [[a, b], [b, c]].
fn largest_eigenvalue(a: f32, b: f32, c: f32) -> f32 {
    let half_diff = 0.5 * (a - c);
    return 0.5 * (a + c) + sqrt(half_diff * half_diff + b * b);
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn narrow_phase(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let i = thread_index(wid, nwg, lid, WORKGROUP_SIZE);
    if i >= params.body_count || props[i].kind == KIND_STATIC {
        return;
    }
    let pr = props[i];
    let sh = shapes[pr.shape];
    let b = bodies[i];
    let inv_inertia = world_inverse_inertia(b.orientation, pr.inv_inertia);
    let dynamic = pr.kind == KIND_DYNAMIC;
    var start_energy = 0.0;
    if dynamic {
        start_energy = kinetic_energy(b.inv_mass, pr.inv_inertia, b.orientation, b.linear_velocity, b.angular_velocity);
    }
    solver_bodies[i] = SolverBody(inv_inertia, vec3<f32>(0.0), start_energy, vec4<f32>(0.0, 0.0, 0.0, 1.0));
    if !dynamic {
        return;
    }
    for (var collider_index = 0u; collider_index < params.collider_count; collider_index++) {
        let collider = colliders[collider_index];
        for (var k = 0u; k < sh.point_count; k++) {
            let slot = slot_index(pr, sh, collider_index, k);
            let core = rotate(b.orientation, geometry[sh.first_point + k].xyz);
            if collider.node_count == 0u {
                let n = collider.normal;
                let separation = dot3(n, b.position + (core - n * sh.radius)) - collider.offset;
                write_contact(slot, contacts[slot], pr, sh, b, inv_inertia, core, n, separation, collider);
                continue;
            }
            // The field's gradient at the core point is the normal of the nearest surface; a
            // concave corner's other walls are found from the point lifted off it
            // (`second_surface`, `third_surface`).
            let x = b.position + core;
            let field = sdf_evaluate(collider.first_node, collider.node_count, x);
            let core_velocity = b.linear_velocity + cross3(b.angular_velocity, core);
            let speed = sqrt(dot3(core_velocity, core_velocity));
            let reach = params.speculative_distance + speed * params.dt;
            var surfaces: array<FieldSurface, 3>;
            surfaces[0] = FieldSurface(field.xyz, field.w, true);
            surfaces[1] = second_surface(collider, x, field.w - sh.radius, field.xyz, reach);
            if surfaces[1].found {
                surfaces[2] = third_surface(collider, x, field.xyz, field.w - sh.radius, surfaces[1].normal, surfaces[1].distance - sh.radius, reach, core_velocity * params.dt);
            }
            // Only the slots in contact warm start (the others stay zeros, out of contact):
            // far from the field a point reads three words, not three contacts.
            var old: array<StaticContact, 3>;
            for (var surface = 0u; surface < 3u; surface++) {
                let at = surface_slot_index(pr, sh, collider_index, k, surface);
                if contacts[at].in_contact != 0u {
                    old[surface] = contacts[at];
                }
            }
            var sources = warm_sources(&old, &surfaces);
            for (var surface = 0u; surface < 3u; surface++) {
                let at = surface_slot_index(pr, sh, collider_index, k, surface);
                if surfaces[surface].found {
                    var warm = StaticContact();
                    if sources[surface] != NO_WARM_SOURCE {
                        warm = old[sources[surface]];
                    }
                    let s = surfaces[surface];
                    write_contact(at, warm, pr, sh, b, inv_inertia, core, s.normal, s.distance - sh.radius, collider);
                } else if contacts[at].in_contact != 0u {
                    contacts[at] = StaticContact();
                }
            }
        }
    }
}

// A surface of an SDF near a core point: its normal and the point's distance to it.
struct FieldSurface {
    normal: vec3<f32>,
    distance: f32,
    found: bool,
}

// A second surface of an SDF collider near core point `x` (whose nearest surface has the normal
// `n` at `separation`), from the field at `x` lifted along `n` by `reach - separation`: its
// normal and the core point's distance to it. Twin of `second_surface` in src/cpu/stages.rs.
fn second_surface(collider: Collider, x: vec3<f32>, separation: f32, n: vec3<f32>, reach: f32) -> FieldSurface {
    if separation >= reach {
        return FieldSurface(vec3<f32>(0.0), 0.0, false);
    }
    let lift = reach - separation;
    let field = sdf_evaluate(collider.first_node, collider.node_count, x + n * lift);
    let cos = dot3(field.xyz, n);
    return FieldSurface(field.xyz, field.w - lift * cos, cos < SDF_SECOND_SURFACE_COS);
}

// A third surface of an SDF collider near core point `x` (whose first two surfaces have the
// normals `n1`, `n2` at separations `s1`, `s2`), from the field at `x` lifted off both: in a
// corner, along both normals until the support point is `reach` above both planes; in a narrow
// gap (the normals within about 18° of opposite), along `n1` to where the point is as far from
// both, then by its `travel` over a step along the gap (`along_gap`). Twin of `third_surface`
// in src/cpu/stages.rs.
fn third_surface(collider: Collider, x: vec3<f32>, n1: vec3<f32>, s1: f32, n2: vec3<f32>, s2: f32, reach: f32, travel: vec3<f32>) -> FieldSurface {
    let c = dot3(n1, n2);
    if s2 >= reach || c >= SDF_SECOND_SURFACE_COS {
        return FieldSurface(vec3<f32>(0.0), 0.0, false);
    }
    var lift: vec3<f32>;
    var ahead = vec3<f32>(0.0);
    if c > -SDF_SECOND_SURFACE_COS {
        let l1 = reach - s1;
        let l2 = reach - s2;
        let det = 1.0 - c * c;
        lift = n1 * ((l1 - c * l2) / det) + n2 * ((l2 - c * l1) / det);
    } else {
        ahead = along_gap(travel, n1, n2);
        lift = n1 * ((s2 - s1) / (1.0 - c)) + ahead;
    }
    let field = sdf_evaluate(collider.first_node, collider.node_count, x + lift);
    // In a gap, a surface facing along the travel is one it went past: not taken.
    let found = dot3(field.xyz, n1) < SDF_SECOND_SURFACE_COS && dot3(field.xyz, n2) < SDF_SECOND_SURFACE_COS && dot3(field.xyz, ahead) <= 0.0;
    return FieldSurface(field.xyz, field.w - dot3(lift, field.xyz), found);
}

// The part of `travel` along a narrow gap whose floor and ceiling have the normals `n1` and
// `n2`: `travel` less its part across the gap, along `n1 - n2`. Twin of `along_gap` in
// src/cpu/stages.rs.
fn along_gap(travel: vec3<f32>, n1: vec3<f32>, n2: vec3<f32>) -> vec3<f32> {
    let across = n1 - n2;
    return travel - across * (dot3(travel, across) / dot3(across, across));
}

// `warm_sources` names no old contact.
const NO_WARM_SOURCE: u32 = 3u;

// Which of a point's last contacts with a field (`old`, its slots' contents) warm starts each of
// its new contacts: for each in turn, the unused old contact whose normal is nearest its own, if
// within SDF_SECOND_SURFACE_COS (the first of equals). Twin of `warm_sources` in
// src/cpu/stages.rs.
fn warm_sources(old: ptr<function, array<StaticContact, 3>>, surfaces: ptr<function, array<FieldSurface, 3>>) -> array<u32, 3> {
    var sources = array<u32, 3>(NO_WARM_SOURCE, NO_WARM_SOURCE, NO_WARM_SOURCE);
    var used = array<bool, 3>(false, false, false);
    for (var s = 0u; s < 3u; s++) {
        if !(*surfaces)[s].found {
            continue;
        }
        var best = NO_WARM_SOURCE;
        var best_cos = 0.0;
        for (var j = 0u; j < 3u; j++) {
            let c = (*old)[j];
            let cos = dot3(c.normal, (*surfaces)[s].normal);
            if c.in_contact != 0u && !used[j] && cos >= SDF_SECOND_SURFACE_COS && (best == NO_WARM_SOURCE || cos > best_cos) {
                best = j;
                best_cos = cos;
            }
        }
        if best != NO_WARM_SOURCE {
            used[best] = true;
            sources[s] = best;
        }
    }
    return sources;
}

// A contact of core point `core` along the normal `n` at `separation` (from the point's support
// `core - n radius`) in slot `slot`, warm started from `old` (last step's contact of that
// surface), or an empty slot beyond the margin. Twin of `contact` in `narrow_phase`
// (src/cpu/stages.rs).
fn write_contact(slot: u32, old: StaticContact, pr: BodyProps, sh: Shape, b: Body, inv_inertia: mat3x3<f32>, core: vec3<f32>, n: vec3<f32>, separation: f32, collider: Collider) {
    let r = core - n * sh.radius;
    let vn = dot3(n, b.linear_velocity + cross3(b.angular_velocity, r));
    let margin = params.speculative_distance + max(-vn, 0.0) * params.dt;
    if separation >= margin {
        // Most slots stay empty step after step: write only when one empties.
        if contacts[slot].in_contact != 0u {
            contacts[slot] = StaticContact();
        }
        return;
    }
    var warm = 0.0;
    if old.in_contact == 1u {
        warm = params.warm_start_scale;
    }
    let carried = carry_tangent_impulse(old.normal, n, vec2<f32>(old.tangent_impulse_1, old.tangent_impulse_2));
    let rn = cross3(r, n);
    let basis = tangent_basis(n);
    let k_normal = b.inv_mass + dot3(rn, mat3_mul(inv_inertia, rn));
    let rt1 = cross3(r, basis.t1);
    let rt2 = cross3(r, basis.t2);
    let k11 = b.inv_mass + dot3(rt1, mat3_mul(inv_inertia, rt1));
    let k12 = dot3(rt1, mat3_mul(inv_inertia, rt2));
    let k22 = b.inv_mass + dot3(rt2, mat3_mul(inv_inertia, rt2));
    contacts[slot] = StaticContact(
        r,
        separation - dot3(n, core),
        n,
        1.0 / k_normal,
        1.0 / largest_eigenvalue(k11, k12, k22),
        0.0,
        warm * old.normal_impulse,
        warm * carried.x,
        warm * carried.y,
        0.0,
        approach_velocity(vn, separation, dot3(n, params.gravity)),
        sqrt(pr.friction * collider.friction),
        max(pr.restitution, collider.restitution),
        1u,
        0u,
        0u,
    );
}
