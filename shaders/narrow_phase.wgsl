// Stage `narrow_phase`: every core point of a dynamic body against every static plane and SDF
// collider (seed 000; an SDF's normal is its gradient at the point, and a second surface of the
// field near the point makes a second contact, `second_surface`),
// speculative within `speculative_distance + max(0, -v_n) dt`; warm starting by slot. Twin of
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
                write_contact(slot, pr, sh, b, inv_inertia, core, n, separation, collider);
                continue;
            }
            // The field's gradient at the core point is the normal of the nearest surface.
            let x = b.position + core;
            let field = sdf_evaluate(collider.first_node, collider.node_count, x);
            write_contact(slot, pr, sh, b, inv_inertia, core, field.xyz, field.w - sh.radius, collider);
            // A second surface (a concave corner's other wall): see `second_surface`.
            let core_velocity = b.linear_velocity + cross3(b.angular_velocity, core);
            let speed = sqrt(dot3(core_velocity, core_velocity));
            let reach = params.speculative_distance + speed * params.dt;
            let second = second_slot_index(pr, sh, collider_index, k);
            let other = second_surface(collider, x, field.w - sh.radius, field.xyz, reach);
            if other.found {
                write_contact(second, pr, sh, b, inv_inertia, core, other.normal, other.distance - sh.radius, collider);
            } else if contacts[second].in_contact != 0u {
                contacts[second] = StaticContact();
            }
        }
    }
}

struct SecondSurface {
    normal: vec3<f32>,
    distance: f32,
    found: bool,
}

// A second surface of an SDF collider near core point `x` (whose nearest surface has the normal
// `n` at `separation`), from the field at `x` lifted along `n` by `reach - separation`: its
// normal and the core point's distance to it. Twin of `second_surface` in src/cpu/stages.rs.
fn second_surface(collider: Collider, x: vec3<f32>, separation: f32, n: vec3<f32>, reach: f32) -> SecondSurface {
    if separation >= reach {
        return SecondSurface(vec3<f32>(0.0), 0.0, false);
    }
    let lift = reach - separation;
    let field = sdf_evaluate(collider.first_node, collider.node_count, x + n * lift);
    let cos = dot3(field.xyz, n);
    return SecondSurface(field.xyz, field.w - lift * cos, cos < SDF_SECOND_SURFACE_COS);
}

// A contact of core point `core` along the normal `n` at `separation` (from the point's support
// `core - n radius`) in slot `slot`, or an empty slot beyond the margin. Twin of `contact` in
// `narrow_phase` (src/cpu/stages.rs).
fn write_contact(slot: u32, pr: BodyProps, sh: Shape, b: Body, inv_inertia: mat3x3<f32>, core: vec3<f32>, n: vec3<f32>, separation: f32, collider: Collider) {
    let old = contacts[slot];
    let r = core - n * sh.radius;
    let vn = dot3(n, b.linear_velocity + cross3(b.angular_velocity, r));
    let margin = params.speculative_distance + max(-vn, 0.0) * params.dt;
    if separation >= margin {
        // Most slots stay empty step after step: write only when one empties.
        if old.in_contact != 0u {
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
