// One body's integration, shared by the per-body stages (integrate_velocities.wgsl,
// integrate_positions.wgsl) and the fused substep (`substep_fused` in solve_contacts.wgsl):
// twins of `integrate_velocity` and `integrate_positions` in src/cpu/stages.rs.

// Gravity and the set force and torque, damping and the gyroscopic term (implicit midpoint) for
// one substep, of dynamic body `i`.
fn integrate_velocity(i: u32) {
    let pr = props[i];
    let b = bodies[i];
    let h = params.h;
    let v = (b.linear_velocity + h * (params.gravity + b.inv_mass * pr.force)) * (1.0 / (1.0 + h * pr.linear_damping));
    let inertia = 1.0 / pr.inv_inertia;
    // The torque's impulse first, then the gyroscopic term from the velocity it leaves.
    let w0 = rotate_inv(b.orientation, b.angular_velocity) + h * pr.inv_inertia * rotate_inv(b.orientation, pr.torque);
    // Implicit midpoint for Euler's equations: I (wm - w0) + (h/2) wm x I wm = 0 by two Newton
    // steps, then w1 = 2 wm - w0. Column j of the Jacobian is I_j e_j + (h/2) (I_j (wm x e_j) - (I wm) x e_j).
    let half_h = 0.5 * h;
    let ex = vec3<f32>(1.0, 0.0, 0.0);
    let ey = vec3<f32>(0.0, 1.0, 0.0);
    let ez = vec3<f32>(0.0, 0.0, 1.0);
    var wm = w0;
    for (var newton = 0; newton < 2; newton++) {
        let iw = inertia * wm;
        let residual = inertia * (wm - w0) + half_h * cross3(wm, iw);
        let jacobian = mat3x3<f32>(
            ex * inertia.x + half_h * (inertia.x * cross3(wm, ex) - cross3(iw, ex)),
            ey * inertia.y + half_h * (inertia.y * cross3(wm, ey) - cross3(iw, ey)),
            ez * inertia.z + half_h * (inertia.z * cross3(wm, ez) - cross3(iw, ez)),
        );
        wm -= mat3_mul(mat3_inverse(jacobian), residual);
    }
    let wb_new = 2.0 * wm - w0;
    var w = rotate(b.orientation, wb_new) * (1.0 / (1.0 + h * pr.angular_damping));
    let angle = length3(w) * h;
    if angle > params.max_rotation {
        w *= params.max_rotation / angle;
    }
    bodies[i].linear_velocity = v;
    bodies[i].angular_velocity = w;
}

// x += h v, q = exp(h w) q, the motion since the start of the step, and the world inverse
// inertia at the new pose, of a body that is not static.
fn integrate_position(i: u32) {
    let b = bodies[i];
    let dx = params.h * b.linear_velocity;
    let dq = quat_exp(params.h * b.angular_velocity);
    bodies[i].position = b.position + dx;
    bodies[i].orientation = quat_normalize(quat_mul(dq, b.orientation));
    let sb = solver_bodies[i];
    solver_bodies[i].delta_position = sb.delta_position + dx;
    solver_bodies[i].delta_rotation = quat_normalize(quat_mul(dq, sb.delta_rotation));
    // The world inverse inertia at the new orientation (twin of `stages::substep_inertia`).
    var inv = mat3x3<f32>(vec3<f32>(0.0), vec3<f32>(0.0), vec3<f32>(0.0));
    if props[i].kind == KIND_DYNAMIC {
        inv = world_inverse_inertia(bodies[i].orientation, props[i].inv_inertia);
    }
    solver_bodies[i].inv_inertia_world = inv;
}
