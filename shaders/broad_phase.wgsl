// Stages `broad_phase` and `collide_pairs` on the GPU: twins of the functions of the same names
// in src/cpu/contacts.rs. The broad phase here tests every pair (a < b) per body, which keeps
// the pair list sorted by (a, b) by construction; it serves scenes of a few thousand bodies.

fn aabb_min(i: u32) -> vec4<f32> {
    let w = work_layout.aabbs + 8u * i;
    return vec4<f32>(bitcast<f32>(work[w]), bitcast<f32>(work[w + 1u]), bitcast<f32>(work[w + 2u]), bitcast<f32>(work[w + 3u]));
}

fn aabb_max(i: u32) -> vec3<f32> {
    let w = work_layout.aabbs + 8u * i + 4u;
    return vec3<f32>(bitcast<f32>(work[w]), bitcast<f32>(work[w + 1u]), bitcast<f32>(work[w + 2u]));
}

// Per body: the AABB of its core points swept by its radius, grown by half the speculative
// distance and by how far it can travel in a step; the per-body counters cleared.
@compute @workgroup_size(WORKGROUP_SIZE)
fn contacts_begin(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let i = thread_index(wid, nwg, lid, WORKGROUP_SIZE);
    if i >= params.body_count {
        return;
    }
    let b = bodies[i];
    let sh = shapes[props[i].shape];
    var lo = vec3<f32>(3.4028235e38);
    var hi = vec3<f32>(-3.4028235e38);
    var reach = 0.0;
    for (var k = 0u; k < sh.point_count; k++) {
        let local = geometry[sh.first_point + k].xyz;
        let x = b.position + rotate(b.orientation, local);
        lo = min(lo, x);
        hi = max(hi, x);
        reach = max(reach, length3(local));
    }
    let travel = params.dt * (length3(b.linear_velocity) + length3(b.angular_velocity) * (reach + sh.radius));
    let margin = 0.5 * params.speculative_distance + travel;
    let grow = vec3<f32>(sh.radius + margin);
    let w = work_layout.aabbs + 8u * i;
    let mn = lo - grow;
    let mx = hi + grow;
    work[w] = bitcast<u32>(mn.x);
    work[w + 1u] = bitcast<u32>(mn.y);
    work[w + 2u] = bitcast<u32>(mn.z);
    work[w + 3u] = bitcast<u32>(margin);
    work[w + 4u] = bitcast<u32>(mx.x);
    work[w + 5u] = bitcast<u32>(mx.y);
    work[w + 6u] = bitcast<u32>(mx.z);
    atomicStore(&counters[i], 0u);
    atomicStore(&counters[params.body_count + i], 0u);
}

fn overlaps(a: u32, b: u32) -> bool {
    let lo_a = aabb_min(a);
    let hi_a = aabb_max(a);
    let lo_b = aabb_min(b);
    let hi_b = aabb_max(b);
    return lo_b.x <= hi_a.x && lo_a.x <= hi_b.x && lo_b.y <= hi_a.y && lo_a.y <= hi_b.y && lo_b.z <= hi_a.z && lo_a.z <= hi_b.z;
}

fn is_pair(a: u32, b: u32) -> bool {
    return (is_dynamic(a) || is_dynamic(b)) && overlaps(a, b);
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn count_pairs(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let a = thread_index(wid, nwg, lid, WORKGROUP_SIZE);
    if a >= params.body_count {
        return;
    }
    var count = 0u;
    for (var b = a + 1u; b < params.body_count; b++) {
        if is_pair(a, b) {
            count += 1u;
        }
    }
    work[work_layout.pair_counts + a] = count;
}

// After the scan of the counts: each body writes its pairs from its offset; what does not fit
// is counted in the header (pairs_wanted) for the host to grow the list.
@compute @workgroup_size(WORKGROUP_SIZE)
fn write_pairs(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let a = thread_index(wid, nwg, lid, WORKGROUP_SIZE);
    let n = params.body_count;
    if a == 0u {
        let total = work[work_layout.pair_counts + n];
        work[0] = min(total, work_layout.pair_capacity);
        work[2] = total;
    }
    if a >= n {
        return;
    }
    var o = work[work_layout.pair_counts + a];
    for (var b = a + 1u; b < n; b++) {
        if is_pair(a, b) {
            if o < work_layout.pair_capacity {
                work[work_layout.pairs + 2u * o] = a;
                work[work_layout.pairs + 2u * o + 1u] = b;
            }
            o += 1u;
        }
    }
}

fn approach_velocity(vn: f32, separation: f32, gravity_n: f32) -> f32 {
    if separation > 0.0 && vn < 0.0 && gravity_n < 0.0 {
        return -sqrt(vn * vn - 2.0 * gravity_n * separation);
    }
    return vn;
}

// Per pair: its contacts as a candidate manifold (warm starting happens when manifolds are
// compacted), and a flag saying whether it has any.
@compute @workgroup_size(WORKGROUP_SIZE)
fn collide_pairs(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let p = thread_index(wid, nwg, lid, WORKGROUP_SIZE);
    if p >= work_layout.pair_capacity {
        return;
    }
    if p >= work[0] {
        work[work_layout.flags + p] = 0u;
        return;
    }
    let a = work[work_layout.pairs + 2u * p];
    let b = work[work_layout.pairs + 2u * p + 1u];
    let ba = bodies[a];
    let bb = bodies[b];
    let pa = Posed(shapes[props[a].shape], ba.position, ba.orientation);
    let pb = Posed(shapes[props[b].shape], bb.position, bb.orientation);
    let margin = aabb_min(a).w + aabb_min(b).w;
    let contact = collide(pa, pb, margin);
    work[work_layout.flags + p] = select(0u, 1u, contact.count > 0u);
    if contact.count == 0u {
        return;
    }
    let n = contact.normal;
    let gravity_n = dot3(n, params.gravity) * (select(0.0, 1.0, is_dynamic(b)) - select(0.0, 1.0, is_dynamic(a)));
    var m: Manifold;
    m.body_a = a;
    m.body_b = b;
    m.count = contact.count;
    m.color = NO_COLOR;
    m.normal = n;
    m.friction = sqrt(props[a].friction * props[b].friction);
    m.restitution = max(props[a].restitution, props[b].restitution);
    m.radius_a = pa.shape.radius;
    m.radius_b = pb.shape.radius;
    for (var k = 0u; k < contact.count; k++) {
        let c = contact.points[k];
        let ra = c.core_a + n * m.radius_a;
        let rb = c.core_b - n * m.radius_b;
        let vn = dot3(n, (bb.linear_velocity + cross3(bb.angular_velocity, rb)) - (ba.linear_velocity + cross3(ba.angular_velocity, ra)));
        var q: ManifoldPoint;
        q.core_a = c.core_a;
        q.base_separation = c.separation - dot3(n, c.core_b - c.core_a);
        q.core_b = c.core_b;
        q.approach_velocity = approach_velocity(vn, c.separation, gravity_n);
        q.key = c.key;
        m.points[k] = q;
    }
    candidates[p] = m;
}
