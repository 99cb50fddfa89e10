// Stage `integrate_velocities`: gravity, damping and the gyroscopic term (implicit midpoint) for one
// substep (`integrate_velocity` in integrate.wgsl). Twin of `integrate_velocities` in src/cpu/stages.rs.

@compute @workgroup_size(WORKGROUP_SIZE)
fn integrate_velocities(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let i = thread_index(wid, nwg, lid, WORKGROUP_SIZE);
    if i >= params.body_count || !is_dynamic(i) {
        return;
    }
    integrate_velocity(i);
}
