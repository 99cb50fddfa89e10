// Stage `integrate_velocities`: gravity, damping and the gyroscopic term (implicit midpoint) for one
// substep. Twin of `integrate_velocities` in src/cpu/stages.rs.

@compute @workgroup_size(WORKGROUP_SIZE)
fn integrate_velocities(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let i = thread_index(wid, nwg, lid, WORKGROUP_SIZE);
    if i >= params.body_count || !is_dynamic(i) {
        return;
    }
    let pr = props[i];
    let b = bodies[i];
    let h = params.h;
    let v = (b.linear_velocity + h * params.gravity) * (1.0 / (1.0 + h * pr.linear_damping));
    let inertia = 1.0 / pr.inv_inertia;
    let w0 = rotate_inv(b.orientation, b.angular_velocity);
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
