// Stage `integrate_positions`: x += h v, q = exp(h w) q, the motion since the start of the
// step, and the world inverse inertia at the new pose (`integrate_position` in integrate.wgsl).
// Twin of `integrate_positions` in src/cpu/stages.rs.

@compute @workgroup_size(WORKGROUP_SIZE)
fn integrate_positions(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let i = thread_index(wid, nwg, lid, WORKGROUP_SIZE);
    if i >= params.body_count || props[i].kind == KIND_STATIC {
        return;
    }
    integrate_position(i);
}
