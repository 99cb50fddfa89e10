// Stage `integrate_positions`: x += h v, q = exp(h w) q, the motion since the start of the
// step, and the world inverse inertia at the new pose. Twin of `integrate_positions` in
// src/cpu/stages.rs.

@compute @workgroup_size(WORKGROUP_SIZE)
fn integrate_positions(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let i = thread_index(wid, nwg, lid, WORKGROUP_SIZE);
    if i >= params.body_count || props[i].kind == KIND_STATIC {
        return;
    }
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
