// Stage `apply_impulses`: at the start of a step, the impulses a program applied to bodies since
// the last one, summed per body, one body per thread (no two threads write one body):
// `dv = J / m`, `dw = I^-1 (M + (p - x) × J)` with `M` their moments about `p`, where the
// first was applied. Twin of `GpuImpulse::apply` in src/layout.rs.

@compute @workgroup_size(WORKGROUP_SIZE)
fn apply_impulses(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let k = thread_index(wid, nwg, lid, WORKGROUP_SIZE);
    if k >= impulse_count.x {
        return;
    }
    let e = impulses[k];
    let i = e.body;
    let b = bodies[i];
    let moment = e.moment + cross3(e.point - b.position, e.impulse);
    bodies[i].linear_velocity = b.linear_velocity + b.inv_mass * e.impulse;
    bodies[i].angular_velocity = b.angular_velocity + rotate(b.orientation, props[i].inv_inertia * rotate_inv(b.orientation, moment));
}
