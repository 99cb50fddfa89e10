// Manifold stages on the GPU: compaction with warm starting (twin of the end of `collide_pairs`),
// the body -> manifolds adjacency and the coloring rounds (twin of `color_graph` in
// src/coloring.rs), bucketing by color and the Jacobi mass split (twin of `bucket_by_color`).

fn manifold_count() -> u32 {
    return work[1];
}

// Last step's manifold of pair (a, b), by binary search (manifolds are in pair order), or -1.
fn find_previous(a: u32, b: u32) -> i32 {
    var lo = 0u;
    var hi = work[4];
    while lo < hi {
        let mid = (lo + hi) / 2u;
        let m = previous[mid];
        if m.body_a < a || (m.body_a == a && m.body_b < b) {
            lo = mid + 1u;
        } else {
            hi = mid;
        }
    }
    if lo < work[4] && previous[lo].body_a == a && previous[lo].body_b == b {
        return i32(lo);
    }
    return -1;
}

// No old point seeds this one.
const NO_POINT: u32 = 0xffffffffu;

// Seeds a new manifold's impulses from last step's manifold of the pair: each point takes the
// impulses of the old point with its key, else of the nearest old point within
// WARM_START_RADIUS that no key claims and no earlier point took, when the normal barely
// turned. Twin of `warm_start` in src/cpu/contacts.rs.
fn warm_start(old: u32, m: ptr<function, Manifold>) {
    var taken = array<bool, 4>(false, false, false, false);
    var source = array<u32, 4>(NO_POINT, NO_POINT, NO_POINT, NO_POINT);
    for (var k = 0u; k < (*m).count; k++) {
        for (var j = 0u; j < previous[old].count; j++) {
            if previous[old].points[j].key == (*m).points[k].key {
                source[k] = j;
                taken[j] = true;
                break;
            }
        }
    }
    if dot3(previous[old].normal, (*m).normal) >= WARM_START_MIN_COS {
        for (var k = 0u; k < (*m).count; k++) {
            if source[k] != NO_POINT {
                continue;
            }
            var best = WARM_START_RADIUS * WARM_START_RADIUS;
            var best_j = NO_POINT;
            for (var j = 0u; j < previous[old].count; j++) {
                let d = previous[old].points[j].core_a - (*m).points[k].core_a;
                let d2 = dot3(d, d);
                if !taken[j] && d2 < best {
                    best = d2;
                    best_j = j;
                }
            }
            if best_j != NO_POINT {
                source[k] = best_j;
                taken[best_j] = true;
            }
        }
    }
    for (var k = 0u; k < (*m).count; k++) {
        let j = source[k];
        if j != NO_POINT {
            (*m).points[k].normal_impulse = params.warm_start_scale * previous[old].points[j].normal_impulse;
            let t = carry_tangent_impulse(previous[old].normal, (*m).normal, vec2<f32>(previous[old].points[j].tangent_impulse_1, previous[old].points[j].tangent_impulse_2));
            (*m).points[k].tangent_impulse_1 = params.warm_start_scale * t.x;
            (*m).points[k].tangent_impulse_2 = params.warm_start_scale * t.y;
        }
    }
}

// Whether a manifold is between two polytopes (no radius). Twin of `polytopes`.
fn polytopes(radius_a: f32, radius_b: f32) -> bool {
    return radius_a == 0.0 && radius_b == 0.0;
}

// A new contact frame for a polytope manifold (cores on each body's surface): anchors in the
// bodies' frames, both cores at the midpoint of the surface points. Twin of `fresh_frame` in
// src/cpu/contacts.rs.
fn fresh_frame(m: ptr<function, Manifold>) {
    let a = bodies[(*m).body_a];
    let b = bodies[(*m).body_b];
    let n = (*m).normal;
    for (var k = 0u; k < (*m).count; k++) {
        let c = (*m).points[k];
        let separation = c.base_separation + dot3(n, c.core_b - c.core_a);
        let half_gap = 0.5 * ((b.position - a.position) + (c.core_b - c.core_a));
        (*m).points[k].anchor_a = to_array3(rotate_inv(a.orientation, c.core_a));
        (*m).points[k].anchor_b = to_array3(rotate_inv(b.orientation, c.core_b));
        (*m).points[k].core_a = c.core_a + half_gap;
        (*m).points[k].core_b = c.core_b - half_gap;
        (*m).points[k].base_separation = separation - dot3(n, (c.core_b - half_gap) - (c.core_a + half_gap));
    }
}

// How far a kept frame's anchors and lever arms may drift: FRAME_DRIFT, or FRAME_DRIFT_FRACTION
// of the contact's size when that is less. Twin of `frame_drift` in src/cpu/contacts.rs.
fn frame_drift(old: u32) -> f32 {
    if previous[old].count == 2u {
        let size = length3(from_array3(previous[old].points[1].anchor_a) - from_array3(previous[old].points[0].anchor_a));
        return min(FRAME_DRIFT, FRAME_DRIFT_FRACTION * size);
    }
    if previous[old].count >= 3u {
        var anchors: array<vec3<f32>, 4>;
        for (var k = 0u; k < 4u; k++) {
            anchors[k] = from_array3(previous[old].points[k].anchor_a);
        }
        return plane_drift(anchor_plane(anchors, previous[old].count));
    }
    return FRAME_DRIFT;
}

// `frame_drift` of three or four points whose anchors on A span `plane` (`anchor_plane`).
// Twin of `plane_drift` in src/cpu/contacts.rs.
fn plane_drift(plane: vec3<f32>) -> f32 {
    return min(FRAME_DRIFT, FRAME_DRIFT_FRACTION * sqrt(length3(plane)));
}

// Keeps last step's contact frame of a resting pair of polytopes (normal, lever arms in the
// cores, anchors), the separations measured between the old anchors, and says whether it did.
// Twin of `keep_frame` in src/cpu/contacts.rs.
fn keep_frame(old: u32, m: ptr<function, Manifold>) -> bool {
    if !polytopes((*m).radius_a, (*m).radius_b) || previous[old].count != (*m).count || dot3(previous[old].normal, (*m).normal) < FRAME_MIN_COS {
        return false;
    }
    let a = bodies[(*m).body_a];
    let b = bodies[(*m).body_b];
    var source = array<u32, 4>(0u, 0u, 0u, 0u);
    var taken = array<bool, 4>(false, false, false, false);
    var anchors_a: array<vec3<f32>, 4>;
    var anchors_b: array<vec3<f32>, 4>;
    let drift = frame_drift(old);
    let limit = drift * drift;
    for (var k = 0u; k < (*m).count; k++) {
        var found = NO_POINT;
        for (var j = 0u; j < previous[old].count; j++) {
            if previous[old].points[j].key == (*m).points[k].key {
                found = j;
                break;
            }
        }
        if found == NO_POINT || taken[found] {
            return false;
        }
        taken[found] = true;
        let q = previous[old].points[found];
        let c = (*m).points[k];
        let anchor_a = rotate(a.orientation, from_array3(q.anchor_a));
        let anchor_b = rotate(b.orientation, from_array3(q.anchor_b));
        let half_gap = 0.5 * ((b.position - a.position) + (c.core_b - c.core_a));
        let da = anchor_a - c.core_a;
        let db = anchor_b - c.core_b;
        let ea = q.core_a - (c.core_a + half_gap);
        let eb = q.core_b - (c.core_b - half_gap);
        if !(dot3(da, da) <= limit && dot3(db, db) <= limit && dot3(ea, ea) <= limit && dot3(eb, eb) <= limit) {
            return false;
        }
        source[k] = found;
        anchors_a[k] = anchor_a;
        anchors_b[k] = anchor_b;
    }
    let n = previous[old].normal;
    (*m).normal = n;
    (*m).frame_kept = 1u;
    for (var k = 0u; k < (*m).count; k++) {
        let q = previous[old].points[source[k]];
        let gap = (b.position - a.position) + (anchors_b[k] - anchors_a[k]);
        let separation = dot3(n, gap);
        // The anchors' slide across the normal, taken out half on each side.
        let half_slide = 0.5 * (gap - n * separation);
        (*m).points[k].core_a = q.core_a;
        (*m).points[k].core_b = q.core_b;
        (*m).points[k].anchor_a = to_array3(from_array3(q.anchor_a) + rotate_inv(a.orientation, half_slide));
        (*m).points[k].anchor_b = to_array3(from_array3(q.anchor_b) - rotate_inv(b.orientation, half_slide));
        (*m).points[k].base_separation = separation - dot3(n, q.core_b - q.core_a);
    }
    return true;
}

// Twice the area of the largest triangle of the first `count` of four points in a body's frame
// (of three triangles of four, the one of three), along its normal; zero for fewer than three.
// Twin of `anchor_plane` in src/cpu/contacts.rs.
fn anchor_plane(points: array<vec3<f32>, 4>, count: u32) -> vec3<f32> {
    let corners = array<vec3<u32>, 3>(vec3<u32>(0u, 1u, 2u), vec3<u32>(0u, 1u, 3u), vec3<u32>(0u, 2u, 3u));
    var triangles = 0u;
    if count == 3u {
        triangles = 1u;
    } else if count == 4u {
        triangles = 3u;
    }
    var best = vec3<f32>(0.0);
    for (var t = 0u; t < triangles; t++) {
        let i = corners[t];
        let c = cross3(points[i.y] - points[i.x], points[i.z] - points[i.x]);
        if dot3(c, c) > dot3(best, best) {
            best = c;
        }
    }
    return best;
}

// Whether the plane of a manifold's anchors on one body, `c` (from `anchor_plane`, turned to
// the world), turned from the normal `n` more than FRAME_MIN_COS allows, or is ill-defined.
fn anchors_turned(c: vec3<f32>, n: vec3<f32>) -> bool {
    let cc = dot3(c, c);
    let cn = dot3(c, n);
    return cc < RECYCLE_MIN_AREA * RECYCLE_MIN_AREA || cn * cn < FRAME_MIN_COS * FRAME_MIN_COS * cc;
}

// Last step's manifold `old` (an index in `previous`) carried into this step without the
// narrow phase: its points and normal as they were, the separations measured between the
// anchors along the normal, the approach velocities from the current velocities, no impulses. False when the narrow phase
// must run instead: fewer than four points, anchors slid RECYCLE_DRIFT (or on a small face
// RECYCLE_SLIDE_FRACTION of its size) apart across the normal or `margin` apart along it,
// lever arms `frame_drift` off the anchors' midpoint, either body's anchor plane turned. Twin of
// `recycle` in src/cpu/contacts.rs.
fn recycle(old: u32, margin: f32, m: ptr<function, Manifold>) -> bool {
    let count = previous[old].count;
    if params.recycle_contacts == 0u || !polytopes(previous[old].radius_a, previous[old].radius_b) || count < MAX_MANIFOLD_POINTS {
        return false;
    }
    let a = bodies[previous[old].body_a];
    let b = bodies[previous[old].body_b];
    let n = previous[old].normal;
    var anchors_a: array<vec3<f32>, 4>;
    var anchors_b: array<vec3<f32>, 4>;
    for (var k = 0u; k < 4u; k++) {
        anchors_a[k] = from_array3(previous[old].points[k].anchor_a);
        anchors_b[k] = from_array3(previous[old].points[k].anchor_b);
    }
    let local_a = anchor_plane(anchors_a, count);
    let plane_a = rotate(a.orientation, local_a);
    let plane_b = rotate(b.orientation, anchor_plane(anchors_b, count));
    if anchors_turned(plane_a, n) || anchors_turned(plane_b, n) {
        return false;
    }
    // The slide allowed: less on a small contact face.
    let allowed = min(RECYCLE_DRIFT, RECYCLE_SLIDE_FRACTION * sqrt(sqrt(dot3(plane_a, plane_a))));
    // `frame_drift` of four points, from the plane already at hand.
    let drift = plane_drift(local_a);
    let falls = select(0.0, 1.0, is_dynamic(previous[old].body_b)) - select(0.0, 1.0, is_dynamic(previous[old].body_a));
    let gravity_n = dot3(n, params.gravity) * falls;
    var r: Manifold;
    r.body_a = previous[old].body_a;
    r.body_b = previous[old].body_b;
    r.count = count;
    r.color = previous[old].color;
    r.normal = n;
    r.friction = previous[old].friction;
    r.restitution = previous[old].restitution;
    r.frame_kept = 1u;
    r.recycled = 1u;
    for (var k = 0u; k < count; k++) {
        let q = previous[old].points[k];
        let ra = rotate(a.orientation, anchors_a[k]);
        let rb = rotate(b.orientation, anchors_b[k]);
        let gap = (b.position - a.position) + (rb - ra);
        let separation = dot3(n, gap);
        let slide = gap - n * separation;
        let off_a = q.core_a - (ra + 0.5 * gap);
        let off_b = q.core_b - (rb - 0.5 * gap);
        let slid = allowed * allowed;
        let moved = drift * drift;
        if separation >= margin || !(dot3(slide, slide) <= slid && dot3(off_a, off_a) <= moved && dot3(off_b, off_b) <= moved) {
            return false;
        }
        let vn = dot3(n, (b.linear_velocity + cross3(b.angular_velocity, rb)) - (a.linear_velocity + cross3(a.angular_velocity, ra)));
        var c: ManifoldPoint;
        c.core_a = q.core_a;
        c.core_b = q.core_b;
        c.anchor_a = q.anchor_a;
        c.anchor_b = q.anchor_b;
        c.base_separation = separation - dot3(n, q.core_b - q.core_a);
        c.approach_velocity = approach_velocity(vn, separation, gravity_n);
        c.key = q.key;
        r.points[k] = c;
    }
    *m = r;
    return true;
}

// Per pair, before the narrow phase: last step's manifold plus one when it is carried over
// (`recycle`), else 0, in `work_layout.recycled`. Twin of the start of `collide_pair` in
// src/cpu/contacts.rs.
@compute @workgroup_size(WORKGROUP_SIZE)
fn recycle_pairs(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let p = thread_index(wid, nwg, lid, WORKGROUP_SIZE);
    if p >= work[0] || p >= work_layout.pair_capacity {
        return;
    }
    var carried = 0u;
    if params.recycle_contacts != 0u {
        let a = work[work_layout.pairs + 2u * p];
        let b = work[work_layout.pairs + 2u * p + 1u];
        let old = find_previous(a, b);
        if old >= 0 {
            let margin = pair_margin(bodies[a], bodies[b], aabb_min(a).w, aabb_min(b).w);
            var m: Manifold;
            if recycle(u32(old), margin, &m) {
                carried = u32(old) + 1u;
            }
        }
    }
    work[work_layout.recycled + p] = carried;
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn compact_manifolds(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let p = thread_index(wid, nwg, lid, WORKGROUP_SIZE);
    let cap = work_layout.pair_capacity;
    if p == 0u {
        let total = work[work_layout.flags + cap];
        work[1] = min(total, work_layout.manifold_capacity);
        work[3] = total;
    }
    if p >= cap {
        return;
    }
    let o = work[work_layout.flags + p];
    if work[work_layout.flags + p + 1u] == o || o >= work_layout.manifold_capacity {
        return;
    }
    let carried = work[work_layout.recycled + p];
    var m: Manifold;
    var old = -1;
    if carried != 0u {
        // `recycle_pairs` checked it on the same poses and velocities: from the same inputs
        // (the margin aside, which only rules out) it returns true again.
        old = i32(carried - 1u);
        recycle(u32(old), 3.4028235e38, &m);
    } else {
        m = candidates[p];
        old = find_previous(m.body_a, m.body_b);
        var kept = false;
        if old >= 0 {
            kept = keep_frame(u32(old), &m);
        }
        if !kept && polytopes(m.radius_a, m.radius_b) {
            fresh_frame(&m);
        }
    }
    if old >= 0 {
        m.color = previous[u32(old)].color;
        warm_start(u32(old), &m);
    }
    if m.color >= params.max_colors || params.coloring_rounds == 0u {
        m.color = NO_COLOR;
    }
    manifolds[o] = m;
    work[work_layout.colors + o] = m.color;
    work[work_layout.before + o] = m.color;
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn adjacency_count(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let i = thread_index(wid, nwg, lid, WORKGROUP_SIZE);
    if i < manifold_count() {
        count_adjacency(i);
    }
}

// Counts manifold `i` on each of its dynamic bodies.
fn count_adjacency(i: u32) {
    let m = manifolds[i];
    if is_dynamic(m.body_a) {
        atomicAdd(&counters[m.body_a], 1u);
    }
    if is_dynamic(m.body_b) {
        atomicAdd(&counters[m.body_b], 1u);
    }
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn adjacency_offsets(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let i = thread_index(wid, nwg, lid, WORKGROUP_SIZE);
    if i < params.body_count {
        take_adjacency_count(i);
    }
}

// Body `body`'s count out of the counters (zeroed for the next step), to be scanned.
fn take_adjacency_count(body: u32) {
    if body == 0u {
        // This step's manifolds are next step's previous ones.
        work[4] = work[1];
    }
    take_count(work_layout.adjacency_counts, body);
}

fn adjacency_start(body: u32) -> u32 {
    return work[work_layout.adjacency_counts + body];
}

fn adjacency_end(body: u32) -> u32 {
    return work[work_layout.adjacency_counts + body + 1u];
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn adjacency_fill(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let i = thread_index(wid, nwg, lid, WORKGROUP_SIZE);
    if i < manifold_count() {
        fill_adjacency(i);
    }
}

// Manifold `i` into each of its dynamic bodies' lists, at a slot the counters hand out.
fn fill_adjacency(i: u32) {
    let m = manifolds[i];
    let n = params.body_count;
    if is_dynamic(m.body_a) {
        let slot = atomicAdd(&counters[n + m.body_a], 1u);
        work[work_layout.adjacency + adjacency_start(m.body_a) + slot] = i;
    }
    if is_dynamic(m.body_b) {
        let slot = atomicAdd(&counters[n + m.body_b], 1u);
        work[work_layout.adjacency + adjacency_start(m.body_b) + slot] = i;
    }
}

// The atomic fill leaves each body's list in any order: sort it (lists are short).
@compute @workgroup_size(WORKGROUP_SIZE)
fn adjacency_sort(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let body = thread_index(wid, nwg, lid, WORKGROUP_SIZE);
    if body < params.body_count {
        sort_adjacency(body);
    }
}

// Body `body`'s list in increasing order (an insertion sort), its fill counter zeroed.
fn sort_adjacency(body: u32) {
    atomicStore(&counters[params.body_count + body], 0u);
    let start = work_layout.adjacency + adjacency_start(body);
    let end = work_layout.adjacency + adjacency_end(body);
    for (var i = start + 1u; i < end; i++) {
        let v = work[i];
        var j = i;
        while j > start && work[j - 1u] > v {
            work[j] = work[j - 1u];
            j -= 1u;
        }
        work[j] = v;
    }
}

// Whether a manifold of lower index than `i` on one of manifold `i`'s dynamic bodies has `c` in
// the snapshot `before`.
fn lower_has(i: u32, c: u32) -> bool {
    let bodies = vec2<u32>(manifolds[i].body_a, manifolds[i].body_b);
    for (var side = 0u; side < 2u; side++) {
        let body = bodies[side];
        if !is_dynamic(body) {
            continue;
        }
        for (var k = adjacency_start(body); k < adjacency_end(body); k++) {
            let j = work[work_layout.adjacency + k];
            if j >= i {
                break;
            }
            if work[work_layout.before + j] == c {
                return true;
            }
        }
    }
    return false;
}

// A manifold loses its color when a lower-indexed manifold on one of its dynamic bodies had the
// same color in the snapshot `before`.
@compute @workgroup_size(WORKGROUP_SIZE)
fn color_resolve(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let i = thread_index(wid, nwg, lid, WORKGROUP_SIZE);
    if i < manifold_count() {
        resolve_color(i);
    }
}

fn resolve_color(i: u32) {
    let c = work[work_layout.before + i];
    if c != NO_COLOR && lower_has(i, c) {
        work[work_layout.colors + i] = NO_COLOR;
    }
}

// The colors held on manifold `i`'s dynamic bodies, by `color_masks` (twin of `held_on` in
// src/coloring.rs).
fn held_on_bodies(i: u32) -> u32 {
    let a = manifolds[i].body_a;
    let b = manifolds[i].body_b;
    var used = 0u;
    if is_dynamic(a) {
        used |= work[work_layout.masks + a];
    }
    if is_dynamic(b) {
        used |= work[work_layout.masks + b];
    }
    return used;
}

// The descent's proposals (twin of the first half of `descend` in src/coloring.rs): in `before`,
// the lowest color below a colored manifold's own that neither of its dynamic bodies holds (by
// `color_masks`), else its own color.
@compute @workgroup_size(WORKGROUP_SIZE)
fn color_descend(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let i = thread_index(wid, nwg, lid, WORKGROUP_SIZE);
    if i < manifold_count() {
        descend_color(i);
    }
}

fn descend_color(i: u32) {
    let c = work[work_layout.colors + i];
    var proposal = c;
    if c != NO_COLOR {
        let used = held_on_bodies(i);
        let below = ~used & ((1u << c) - 1u);
        if below != 0u {
            proposal = countTrailingZeros(below);
        }
    }
    work[work_layout.before + i] = proposal;
}

// The descent's outcome (the second half of `descend`): a manifold takes its proposal unless a
// lower-indexed manifold on one of its dynamic bodies proposes the same color; else it keeps its
// own, which no neighbour can have proposed (it was held on their shared body).
@compute @workgroup_size(WORKGROUP_SIZE)
fn color_settle(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let i = thread_index(wid, nwg, lid, WORKGROUP_SIZE);
    if i < manifold_count() {
        settle_color(i);
    }
}

fn settle_color(i: u32) {
    let x = work[work_layout.before + i];
    if x != work[work_layout.colors + i] && !lower_has(i, x) {
        work[work_layout.colors + i] = x;
    }
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn color_masks(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let body = thread_index(wid, nwg, lid, WORKGROUP_SIZE);
    if body < params.body_count {
        body_mask(body);
    }
}

// The colors held on `body`'s manifolds, as a mask.
fn body_mask(body: u32) {
    var mask = 0u;
    for (var k = adjacency_start(body); k < adjacency_end(body); k++) {
        let c = work[work_layout.colors + work[work_layout.adjacency + k]];
        if c != NO_COLOR {
            mask |= 1u << c;
        }
    }
    work[work_layout.masks + body] = mask;
}

// One of the lowest COLOR_SPREAD set bits of `free`, by a hash of the manifold and the round
// (twin of `pick` in src/coloring.rs).
fn pick(free: u32, constraint: u32, round: u32) -> u32 {
    let hash = (constraint ^ (round * 0x9e3779b9u)) * 0x85ebca6bu;
    let skip = (hash >> 16u) % min(COLOR_SPREAD, countOneBits(free));
    var bits = free;
    for (var k = 0u; k < skip; k++) {
        bits &= bits - 1u;
    }
    return countTrailingZeros(bits);
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn color_pick(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let i = thread_index(wid, nwg, lid, WORKGROUP_SIZE);
    if i < manifold_count() {
        pick_color(i, round_index.value);
    }
}

fn pick_color(i: u32, round: u32) {
    var c = work[work_layout.colors + i];
    if c == NO_COLOR {
        let used = held_on_bodies(i);
        var palette = 0xffffffffu;
        if params.max_colors < 32u {
            palette = (1u << params.max_colors) - 1u;
        }
        let free = ~used & palette;
        if free != 0u {
            c = pick(free, i, round);
        }
    }
    work[work_layout.colors + i] = c;
    work[work_layout.before + i] = c;
}

// Threads of the one workgroup of the fused coloring: a pipeline constant, set to what the
// device allows (at most 1,024).
override FUSED_SIZE: u32 = 256u;

// With `SolverSettings::gpu_fused_sweeps`, the whole of the coloring stage in one workgroup:
// the adjacency, the coloring, the buckets and the Jacobi split, as the dispatches of each phase
// run them, each phase swept by all the workgroup's threads with a barrier after it. The same
// work in the same order of phases, so the same words; only the buckets' stable counting sort
// takes its manifolds by thread instead of by workgroup (`bucket_runs`), with the same result.
@compute @workgroup_size(FUSED_SIZE)
fn coloring_fused(@builtin(local_invocation_index) t: u32) {
    let n = manifold_count();
    let bodies = params.body_count;
    for (var i = t; i < n; i += FUSED_SIZE) {
        count_adjacency(i);
    }
    storageBarrier();
    for (var body = t; body < bodies; body += FUSED_SIZE) {
        take_adjacency_count(body);
    }
    storageBarrier();
    scan_in_workgroup(work_layout.adjacency_counts, bodies, t, FUSED_SIZE);
    storageBarrier();
    for (var i = t; i < n; i += FUSED_SIZE) {
        fill_adjacency(i);
    }
    storageBarrier();
    for (var body = t; body < bodies; body += FUSED_SIZE) {
        sort_adjacency(body);
    }
    storageBarrier();
    if params.coloring_rounds > 0u {
        color_rounds(t);
    }
    bucket_runs(t, n);
    storageBarrier();
    scan_in_workgroup(work_layout.histogram, work_layout.buckets * work_layout.histogram_groups, t, FUSED_SIZE);
    storageBarrier();
    place_runs(t, n);
    storageBarrier();
    for (var k = t; k < MAX_COLORS + 1u; k += FUSED_SIZE) {
        bucket_arg(k);
    }
    for (var body = t; body < bodies; body += FUSED_SIZE) {
        split_body(body);
    }
}

// The coloring by the fused workgroup's threads: the seed's resolve, the masks, the descent and
// its settling, then each round's masks, picks and resolve, with a barrier after each phase.
fn color_rounds(t: u32) {
    let n = manifold_count();
    for (var i = t; i < n; i += FUSED_SIZE) {
        resolve_color(i);
    }
    storageBarrier();
    for (var body = t; body < params.body_count; body += FUSED_SIZE) {
        body_mask(body);
    }
    storageBarrier();
    for (var i = t; i < n; i += FUSED_SIZE) {
        descend_color(i);
    }
    storageBarrier();
    for (var i = t; i < n; i += FUSED_SIZE) {
        settle_color(i);
    }
    storageBarrier();
    for (var round = 0u; round < params.coloring_rounds; round++) {
        for (var body = t; body < params.body_count; body += FUSED_SIZE) {
            body_mask(body);
        }
        storageBarrier();
        for (var i = t; i < n; i += FUSED_SIZE) {
            pick_color(i, round);
        }
        storageBarrier();
        for (var i = t; i < n; i += FUSED_SIZE) {
            resolve_color(i);
        }
        storageBarrier();
    }
}

// The fused coloring's histogram groups are its threads (`histogram_groups` is FUSED_SIZE), each
// taking a run of consecutive manifolds: the runs of `bucket_runs` and `place_runs`.
fn run_of(t: u32, n: u32) -> vec2<u32> {
    let per = (n + FUSED_SIZE - 1u) / FUSED_SIZE;
    return vec2<u32>(min(t * per, n), min((t + 1u) * per, n));
}

// Thread `t`'s run counted by bucket into the histogram (bucket-major, as `bucket_histogram`
// lays its groups out).
fn bucket_runs(t: u32, n: u32) {
    var counts: array<u32, MAX_COLORS + 1u>;
    let run = run_of(t, n);
    for (var i = run.x; i < run.y; i++) {
        counts[bucket_of(i)] += 1u;
    }
    for (var b = 0u; b < work_layout.buckets; b++) {
        work[work_layout.histogram + b * work_layout.histogram_groups + t] = counts[b];
    }
}

// After the scan of the histogram, thread `t`'s run placed in order: a manifold's place is its
// bucket's offset for the run plus the run's earlier manifolds in that bucket. Runs are in
// manifold order and the histogram bucket-major, so this is the stable counting sort that
// `bucket_scatter` does by workgroup: the same list.
fn place_runs(t: u32, n: u32) {
    var next: array<u32, MAX_COLORS + 1u>;
    for (var b = 0u; b < work_layout.buckets; b++) {
        next[b] = work[work_layout.histogram + b * work_layout.histogram_groups + t];
    }
    let run = run_of(t, n);
    for (var i = run.x; i < run.y; i++) {
        let b = bucket_of(i);
        work[work_layout.colored + next[b]] = i;
        next[b] += 1u;
        // The final color, kept with the manifold: next step's seed.
        manifolds[i].color = work[work_layout.colors + i];
    }
}

var<workgroup> bucket_counts: array<atomic<u32>, MAX_COLORS + 1u>;
var<workgroup> lane_bucket: array<u32, STATS_WORKGROUP_SIZE>;

fn bucket_of(i: u32) -> u32 {
    let c = work[work_layout.colors + i];
    return select(c, params.max_colors, c == NO_COLOR);
}

@compute @workgroup_size(STATS_WORKGROUP_SIZE)
fn bucket_histogram(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let group = wid.y * nwg.x + wid.x;
    let i = group * STATS_WORKGROUP_SIZE + lid;
    if lid < work_layout.buckets {
        atomicStore(&bucket_counts[lid], 0u);
    }
    workgroupBarrier();
    if i < manifold_count() {
        atomicAdd(&bucket_counts[bucket_of(i)], 1u);
    }
    workgroupBarrier();
    if lid < work_layout.buckets && group < work_layout.histogram_groups {
        work[work_layout.histogram + lid * work_layout.histogram_groups + group] = atomicLoad(&bucket_counts[lid]);
    }
}

// After the scan of the histogram: each manifold's place is its bucket's offset for its group
// plus the number of lower lanes of its group in the same bucket (a stable counting sort).
@compute @workgroup_size(STATS_WORKGROUP_SIZE)
fn bucket_scatter(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let group = wid.y * nwg.x + wid.x;
    let i = group * STATS_WORKGROUP_SIZE + lid;
    let valid = i < manifold_count();
    var bucket = NO_COLOR;
    if valid {
        bucket = bucket_of(i);
    }
    lane_bucket[lid] = bucket;
    workgroupBarrier();
    if !valid {
        return;
    }
    var rank = 0u;
    for (var k = 0u; k < lid; k++) {
        if lane_bucket[k] == bucket {
            rank += 1u;
        }
    }
    let at = work[work_layout.histogram + bucket * work_layout.histogram_groups + group] + rank;
    work[work_layout.colored + at] = i;
    // The final color, kept with the manifold: next step's seed.
    manifolds[i].color = work[work_layout.colors + i];
}

@compute @workgroup_size(64)
fn bucket_args(@builtin(local_invocation_index) lid: u32) {
    bucket_arg(lid);
}

// Thread `lid` (of at least MAX_COLORS + 1) of the buckets' offsets and dispatch arguments, from
// the scanned histogram.
fn bucket_arg(lid: u32) {
    let buckets = work_layout.buckets;
    let total = work[work_layout.histogram + buckets * work_layout.histogram_groups];
    if lid == 0u {
        work[work_layout.bucket_offsets + buckets] = total;
        // The Jacobi gather, after the last bucket's (the overflow's) arguments: one thread per
        // body as `dispatch_grid` lays them out, or nothing when no constraint overflowed.
        let overflow = total - work[work_layout.histogram + (buckets - 1u) * work_layout.histogram_groups];
        var groups = (params.body_count + WORKGROUP_SIZE - 1u) / WORKGROUP_SIZE;
        if overflow == 0u {
            groups = 0u;
        }
        write_grid(buckets, groups);
    }
    if lid >= buckets {
        return;
    }
    let start = work[work_layout.histogram + lid * work_layout.histogram_groups];
    var end = total;
    if lid + 1u < buckets {
        end = work[work_layout.histogram + (lid + 1u) * work_layout.histogram_groups];
    }
    work[work_layout.bucket_offsets + lid] = start;
    write_grid(lid, (end - start + WORKGROUP_SIZE - 1u) / WORKGROUP_SIZE);
}

// Indirect arguments `slot` for `groups` workgroups, laid out as `dispatch_grid` lays them (a
// second dimension once one would pass MAX_WORKGROUPS_PER_DIMENSION): no argument ever exceeds
// the limit, which lets the device skip wgpu's validation of indirect calls (`GpuContext::new`).
fn write_grid(slot: u32, groups: u32) {
    let grid = grid_args(groups);
    args[work_layout.args + 3u * slot] = grid.x;
    args[work_layout.args + 3u * slot + 1u] = grid.y;
    args[work_layout.args + 3u * slot + 2u] = grid.z;
}

// One thread, after `grid_pairs`: `finish_pairs`, and the arguments of `grid_write` (the body
// grid in a step whose pairs overflowed the list, none otherwise; in the slot after the
// buckets' and the Jacobi gather's).
@compute @workgroup_size(1)
fn grid_finish() {
    var groups = 0u;
    if finish_pairs() > work_layout.pair_capacity {
        groups = (params.body_count + WORKGROUP_SIZE - 1u) / WORKGROUP_SIZE;
    }
    write_grid(work_layout.buckets + 1u, groups);
}

// Per dynamic body: how many overflow manifolds touch it (the Jacobi mass split).
@compute @workgroup_size(WORKGROUP_SIZE)
fn jacobi_split(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let body = thread_index(wid, nwg, lid, WORKGROUP_SIZE);
    if body < params.body_count {
        split_body(body);
    }
}

fn split_body(body: u32) {
    var count = 0u;
    for (var k = adjacency_start(body); k < adjacency_end(body); k++) {
        if work[work_layout.colors + work[work_layout.adjacency + k]] == NO_COLOR {
            count += 1u;
        }
    }
    work[work_layout.split + body] = count;
}
