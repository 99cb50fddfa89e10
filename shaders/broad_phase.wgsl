// Stages `broad_phase` and `collide_pairs` on the GPU: twins of the functions of the same names
// in src/cpu/contacts.rs. The broad phase is a hashed uniform grid over radix-sorted cell keys
// (contacts_begin, radix sort, grid_cells, grid_pairs, grid_finish, radix sort of the pairs;
// the CPU sorts the same grid by cell rather than by hash, and both list the same pairs);
// tiny scenes test every pair (a < b) per body instead (count_pairs, scan, write_pairs), which
// keeps the pair list sorted by (a, b) by construction.

fn aabb_max(i: u32) -> vec3<f32> {
    let w = work_layout.aabbs + 8u * i + 4u;
    return vec3<f32>(bitcast<f32>(work[w]), bitcast<f32>(work[w + 1u]), bitcast<f32>(work[w + 2u]));
}

// Pair `p` of last step: the pair and the face that kept it apart, kept where this step's
// narrow phase looks them up (the pair list and the faces are rewritten before it), with
// their count first. Twin of the CPU's `previous_separated`.
fn keep_face(p: u32) {
    let count = work[0];
    if p == 0u {
        work[work_layout.previous_pairs] = count;
    }
    if p >= count || p >= work_layout.pair_capacity {
        return;
    }
    work[work_layout.previous_pairs + 1u + 2u * p] = work[work_layout.pairs + 2u * p];
    work[work_layout.previous_pairs + 2u + 2u * p] = work[work_layout.pairs + 2u * p + 1u];
    work[work_layout.previous_faces + p] = work[work_layout.faces + p];
}

// The face that kept pair (a, b) apart last step, or NO_FACE: a binary search of last step's
// pairs, sorted by (a, b) like this step's.
fn previous_face(a: u32, b: u32) -> u32 {
    let base = work_layout.previous_pairs + 1u;
    var lo = 0u;
    var hi = work[work_layout.previous_pairs];
    while lo < hi {
        let mid = (lo + hi) / 2u;
        let qa = work[base + 2u * mid];
        let qb = work[base + 2u * mid + 1u];
        if qa < a || (qa == a && qb < b) {
            lo = mid + 1u;
        } else {
            hi = mid;
        }
    }
    if lo < work[work_layout.previous_pairs] && work[base + 2u * lo] == a && work[base + 2u * lo + 1u] == b {
        return work[work_layout.previous_faces + lo];
    }
    return NO_FACE;
}

// The contact stages' first dispatch, a thread per pair slot or body, whichever are more: last
// step's pairs kept (`keep_face`), and each body begun (`begin_body`). The two touch different
// words.
@compute @workgroup_size(WORKGROUP_SIZE)
fn contacts_begin(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let k = thread_index(wid, nwg, lid, WORKGROUP_SIZE);
    keep_face(k);
    if k < params.body_count {
        begin_body(k);
    }
}

// Body `i`: the AABB of its core points swept by its radius, grown by half the speculative
// distance and by how far it can travel in a step, with its spin margin (min's w) and its
// bounding sphere's radius about the centre (max's w, the CPU's `shape_reach` plus the radius);
// the per-body counters cleared.
fn begin_body(i: u32) {
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
    // The AABB grows by how far any point can move in a step; the pair margin uses the pair's
    // relative velocity and each body's spin, kept in the AABB's w.
    let spin = params.dt * (length3(b.angular_velocity) * (reach + sh.radius));
    let travel = params.dt * (length3(b.linear_velocity) + length3(b.angular_velocity) * (reach + sh.radius));
    let margin = 0.5 * params.speculative_distance + travel;
    let grow = vec3<f32>(sh.radius + margin);
    let w = work_layout.aabbs + 8u * i;
    let mn = lo - grow;
    let mx = hi + grow;
    work[w] = bitcast<u32>(mn.x);
    work[w + 1u] = bitcast<u32>(mn.y);
    work[w + 2u] = bitcast<u32>(mn.z);
    work[w + 3u] = bitcast<u32>(spin);
    work[w + 4u] = bitcast<u32>(mx.x);
    work[w + 5u] = bitcast<u32>(mx.y);
    work[w + 6u] = bitcast<u32>(mx.z);
    // The bounding sphere's radius about the centre, for `spheres_within_margin`.
    work[w + 7u] = bitcast<u32>(reach + sh.radius);
    atomicStore(&counters[i], 0u);
    atomicStore(&counters[params.body_count + i], 0u);
    if work_layout.brute_force != 0u {
        return;
    }
    // The body's grid item, or the large list; the hash table cleared (a grid-stride loop).
    var key = large_key();
    if fits_grid(mn, mx) {
        key = cell_hash(cell_of(mn));
    } else {
        let slot = atomicAdd(&counters[large_counter(params.body_count)], 1u);
        work[work_layout.large + slot] = i;
    }
    work[work_layout.cells + 2u * i] = key;
    work[work_layout.cells + 2u * i + 1u] = i;
    for (var h = i; h <= work_layout.hash_mask; h += params.body_count) {
        work[work_layout.cell_start + h] = NO_CELL;
    }
}

// Threads of the one workgroup of the fused stages: a pipeline constant, set to what the device
// allows (at most 1,024).
override FUSED_SIZE: u32 = 256u;

// With `SolverSettings::gpu_fused_sweeps`, in a world small enough (`GpuContacts::new`), the
// broad phase up to its pairs in one workgroup, each phase swept by all its threads with a
// barrier after it: `contacts_begin` for every pair slot and body; the grid items sorted by
// (key, body) by counting, each key's items counted in `counters` (after the broad phase's),
// the counts scanned (shaders/scan_one.wgsl) in `radix_histogram`, each item placed in its
// key's run by taking its count back down (which leaves the counters at zero for the next
// step) and each run put in order of body (an insertion sort; a run holds a body or a few, but
// the large bodies' run is placed by rank);
// then where each hash's items start (`grid_cells`). The radix sort's list, and the same words
// `grid_cells` writes: eight dispatches (with keys of 9 to 16 bits) become one.
@compute @workgroup_size(FUSED_SIZE)
fn cells_fused(@builtin(local_invocation_index) t: u32) {
    let n = params.body_count;
    let slots = max(n, work_layout.pair_capacity);
    for (var k = t; k < slots; k += FUSED_SIZE) {
        keep_face(k);
        if k < n {
            begin_body(k);
        }
    }
    storageBarrier();
    // The hashes and the large key.
    let keys = large_key() + 1u;
    for (var i = t; i < n; i += FUSED_SIZE) {
        atomicAdd(&counters[cell_counter(n, work[work_layout.cells + 2u * i])], 1u);
    }
    storageBarrier();
    for (var key = t; key < keys; key += FUSED_SIZE) {
        work[work_layout.radix_histogram + key] = atomicLoad(&counters[cell_counter(n, key)]);
    }
    storageBarrier();
    scan_in_workgroup(work_layout.radix_histogram, keys, t, FUSED_SIZE);
    storageBarrier();
    for (var i = t; i < n; i += FUSED_SIZE) {
        let key = work[work_layout.cells + 2u * i];
        var slot = work[work_layout.radix_histogram + key] + atomicSub(&counters[cell_counter(n, key)], 1u) - 1u;
        if key == large_key() {
            // The large bodies' run, which may be long, straight into body order: each one's
            // rank among them (so its insertion sort below finds it sorted).
            let large_count = atomicLoad(&counters[large_counter(n)]);
            var rank = 0u;
            for (var s = 0u; s < large_count; s++) {
                if work[work_layout.large + s] < i {
                    rank += 1u;
                }
            }
            slot = work[work_layout.radix_histogram + key] + rank;
        }
        work[work_layout.cells_sorted + 2u * slot] = key;
        work[work_layout.cells_sorted + 2u * slot + 1u] = i;
    }
    storageBarrier();
    for (var key = t; key < keys; key += FUSED_SIZE) {
        let start = work[work_layout.radix_histogram + key];
        let end = work[work_layout.radix_histogram + key + 1u];
        let items = work_layout.cells_sorted + 1u;
        for (var k = start + 1u; k < end; k++) {
            let v = work[items + 2u * k];
            var j = k;
            while j > start && work[items + 2u * (j - 1u)] > v {
                work[items + 2u * j] = work[items + 2u * (j - 1u)];
                j -= 1u;
            }
            work[items + 2u * j] = v;
        }
        if key < large_key() && end > start {
            work[work_layout.cell_start + key] = start;
        }
    }
}

// The broad-phase grid, twin of `GridSpec` in src/cpu/contacts.rs.
const NO_CELL: u32 = 0xffffffffu;

fn large_key() -> u32 {
    return work_layout.hash_mask + 1u;
}

// A NaN extent fails the comparison: such a body goes to the large list, never into a cell.
fn fits_grid(lo: vec3<f32>, hi: vec3<f32>) -> bool {
    return all(hi - lo <= vec3<f32>(GRID_FIT * work_layout.cell_size));
}

// Cells are clamped to +-2^23, where f32 still holds every integer: bodies beyond (thousands of
// kilometres out) share the boundary cell, which every query near them covers.
fn cell_of(p: vec3<f32>) -> vec3<i32> {
    return vec3<i32>(clamp(floor(p * work_layout.inv_cell), vec3<f32>(-GRID_CELL_LIMIT), vec3<f32>(GRID_CELL_LIMIT)));
}

fn cell_hash(c: vec3<i32>) -> u32 {
    let u = bitcast<vec3<u32>>(c);
    return ((u.x * GRID_HASH_X) ^ (u.y * GRID_HASH_Y) ^ (u.z * GRID_HASH_Z)) & work_layout.hash_mask;
}

// After the radix sort of the grid items by hash: where each hash's items start.
@compute @workgroup_size(WORKGROUP_SIZE)
fn grid_cells(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let k = thread_index(wid, nwg, lid, WORKGROUP_SIZE);
    if k >= params.body_count {
        return;
    }
    let key = work[work_layout.cells_sorted + 2u * k];
    if key < large_key() && (k == 0u || work[work_layout.cells_sorted + 2u * k - 2u] != key) {
        work[work_layout.cell_start + key] = k;
    }
}

// `item_pairs` appends through the atomic counter.
const APPEND: u32 = 0xffffffffu;

// Pair (a, b), the item's `count`-th: appended through the atomic counter when `at` is APPEND
// (while the list has room), else written to slot `at + count`.
fn put_pair(a: u32, b: u32, at: u32, count: u32) {
    var slot = at + count;
    if at == APPEND {
        slot = atomicAdd(&counters[pair_counter(params.body_count)], 1u);
    }
    if slot < work_layout.pair_capacity {
        work[work_layout.pairs_raw + 2u * slot] = a;
        work[work_layout.pairs_raw + 2u * slot + 1u] = b;
    }
}

// The pairs sorted grid item `k`'s body heads, put from `at` (`put_pair`); returns how many.
// A body in the grid checks the bodies of the 3 x 3 x 3 cells its neighbours' min corners can
// lie in (each hash once) with a higher index, and every large body (`large_count` of them); a
// large body checks the large bodies with a higher index.
fn item_pairs(k: u32, at: u32, large_count: u32) -> u32 {
    let n = params.body_count;
    let key = work[work_layout.cells_sorted + 2u * k];
    let i = work[work_layout.cells_sorted + 2u * k + 1u];
    var count = 0u;
    if key >= large_key() {
        for (var s = 0u; s < large_count; s++) {
            let j = work[work_layout.large + s];
            if j > i && is_pair(i, j) {
                put_pair(i, j, at, count);
                count += 1u;
            }
        }
        return count;
    }
    let first = cell_of(aabb_min(i).xyz - vec3<f32>(work_layout.cell_size));
    let last = min(cell_of(aabb_max(i)), first + vec3<i32>(3));
    var seen: array<u32, 64>;
    var seen_count = 0u;
    for (var z = first.z; z <= last.z; z++) {
        for (var y = first.y; y <= last.y; y++) {
            for (var x = first.x; x <= last.x; x++) {
                let h = cell_hash(vec3<i32>(x, y, z));
                var repeated = false;
                for (var s = 0u; s < seen_count; s++) {
                    if seen[s] == h {
                        repeated = true;
                    }
                }
                if repeated {
                    continue;
                }
                seen[seen_count] = h;
                seen_count += 1u;
                var e = work[work_layout.cell_start + h];
                loop {
                    if e >= n || work[work_layout.cells_sorted + 2u * e] != h {
                        break;
                    }
                    let j = work[work_layout.cells_sorted + 2u * e + 1u];
                    if j > i && is_pair(i, j) {
                        put_pair(i, j, at, count);
                        count += 1u;
                    }
                    e += 1u;
                }
            }
        }
    }
    for (var s = 0u; s < large_count; s++) {
        let j = work[work_layout.large + s];
        if is_pair(i, j) {
            put_pair(min(i, j), max(i, j), at, count);
            count += 1u;
        }
    }
    return count;
}

// Per sorted grid item: its pairs, appended through an atomic counter (in an arbitrary order:
// the radix sort that follows makes it (a, b)), and their count, for `grid_write`.
@compute @workgroup_size(WORKGROUP_SIZE)
fn grid_pairs(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let k = thread_index(wid, nwg, lid, WORKGROUP_SIZE);
    if k >= params.body_count {
        return;
    }
    work[work_layout.pair_counts + k] = item_pairs(k, APPEND, atomicLoad(&counters[large_counter(params.body_count)]));
}

// Only in a step whose pairs overflowed the list (one step before it grows), after the scan of
// `grid_pairs`' counts: which pairs the atomic counter let in was a race, so the list is written
// again, whole items in the sorted order of the grid, as many as fit. Each item then puts its
// pairs from its own offset; the radix sort orders them within the item. The kept pairs, and
// the step, are then the same on every run.
@compute @workgroup_size(WORKGROUP_SIZE)
fn grid_write(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let k = thread_index(wid, nwg, lid, WORKGROUP_SIZE);
    if k < params.body_count {
        write_item(k);
    }
}

// Sorted grid item `k`'s pairs from its offset, if they fit.
fn write_item(k: u32) {
    let n = params.body_count;
    let capacity = work_layout.pair_capacity;
    let start = work[work_layout.pair_counts + k];
    let end = work[work_layout.pair_counts + k + 1u];
    if k == 0u && end > capacity {
        work[0] = 0u;
    }
    if end > capacity {
        return;
    }
    // The last item that fits sets the count.
    if k + 1u == n || work[work_layout.pair_counts + k + 2u] > capacity {
        work[0] = end;
    }
    _ = item_pairs(k, start, work[5]);
}

// The pairs in (a, b) order without the radix sort, for worlds small enough (see
// `GpuContacts::new`): `pair_count` counts the grid's pairs (the `work[0]` of them that it
// kept) by first body, `pair_starts` moves the counts out of the counters (zeroing them), a
// scan turns them into each first body's start, `pair_place` gathers each body's pairs at its
// start (in any order) and `pair_rank` writes each at its start plus the number of its body's
// pairs with a lower second body. Each pair is found once, so the ranks are distinct, and the
// list is the radix sort's: the same on every run. A pair's rank costs a pass over its first
// body's pairs, so this is for worlds where no body has thousands.
@compute @workgroup_size(WORKGROUP_SIZE)
fn pair_count(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let p = thread_index(wid, nwg, lid, WORKGROUP_SIZE);
    if p < work[0] {
        count_pair(p);
    }
}

// Counts pair `p` on its first body.
fn count_pair(p: u32) {
    atomicAdd(&counters[work[work_layout.pairs_raw + 2u * p]], 1u);
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn pair_starts(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let i = thread_index(wid, nwg, lid, WORKGROUP_SIZE);
    if i < params.body_count {
        take_count(work_layout.pair_counts, i);
    }
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn pair_place(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let p = thread_index(wid, nwg, lid, WORKGROUP_SIZE);
    if p < work[0] {
        place_pair(p);
    }
}

// Pair `p` into its first body's run, at a slot the counters hand out.
fn place_pair(p: u32) {
    let a = work[work_layout.pairs_raw + 2u * p];
    let b = work[work_layout.pairs_raw + 2u * p + 1u];
    let at = work[work_layout.pair_counts + a] + atomicAdd(&counters[params.body_count + a], 1u);
    work[work_layout.pairs_scratch + 2u * at] = a;
    work[work_layout.pairs_scratch + 2u * at + 1u] = b;
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn pair_rank(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let p = thread_index(wid, nwg, lid, WORKGROUP_SIZE);
    if p < work[0] {
        rank_pair(p);
    }
}

// Placed pair `p` to its rank in its first body's run.
fn rank_pair(p: u32) {
    let a = work[work_layout.pairs_scratch + 2u * p];
    let b = work[work_layout.pairs_scratch + 2u * p + 1u];
    let start = work[work_layout.pair_counts + a];
    let end = work[work_layout.pair_counts + a + 1u];
    var rank = 0u;
    for (var q = start; q < end; q++) {
        if work[work_layout.pairs_scratch + 2u * q + 1u] < b {
            rank += 1u;
        }
    }
    work[work_layout.pairs + 2u * (start + rank)] = a;
    work[work_layout.pairs + 2u * (start + rank) + 1u] = b;
    // The placing counters back to zero, for the adjacency's use of them.
    if rank == 0u {
        atomicStore(&counters[params.body_count + a], 0u);
    }
}

var<workgroup> pairs_found: u32;

// With `SolverSettings::gpu_fused_sweeps`, after `grid_pairs`, in one workgroup: the pairs'
// count (`finish_pairs`), in a step whose pairs overflowed the list its scan and `grid_write`,
// then the ranks' five phases (the counts, their scan in shaders/scan_one.wgsl, the placing and
// the ranks), each phase swept by all the workgroup's threads with a barrier after it. Eight
// dispatches become one, with the same list.
@compute @workgroup_size(FUSED_SIZE)
fn pairs_fused(@builtin(local_invocation_index) t: u32) {
    if t == 0u {
        pairs_found = finish_pairs();
    }
    storageBarrier();
    if workgroupUniformLoad(&pairs_found) > work_layout.pair_capacity {
        scan_in_workgroup(work_layout.pair_counts, params.body_count, t, FUSED_SIZE);
        storageBarrier();
        for (var k = t; k < params.body_count; k += FUSED_SIZE) {
            write_item(k);
        }
        storageBarrier();
    }
    let pairs = work[0];
    for (var p = t; p < pairs; p += FUSED_SIZE) {
        count_pair(p);
    }
    storageBarrier();
    for (var i = t; i < params.body_count; i += FUSED_SIZE) {
        take_count(work_layout.pair_counts, i);
    }
    storageBarrier();
    scan_in_workgroup(work_layout.pair_counts, params.body_count, t, FUSED_SIZE);
    storageBarrier();
    for (var p = t; p < pairs; p += FUSED_SIZE) {
        place_pair(p);
    }
    storageBarrier();
    for (var p = t; p < pairs; p += FUSED_SIZE) {
        rank_pair(p);
    }
}

fn overlaps(a: u32, b: u32) -> bool {
    let lo_a = aabb_min(a);
    let hi_a = aabb_max(a);
    let lo_b = aabb_min(b);
    let hi_b = aabb_max(b);
    return lo_b.x <= hi_a.x && lo_a.x <= hi_b.x && lo_b.y <= hi_a.y && lo_a.y <= hi_b.y && lo_b.z <= hi_a.z && lo_a.z <= hi_b.z;
}

// Whether two bodies' bounding spheres come within their pair margin (past it no contact can
// be, however their grown boxes overlap). Twin of `spheres_within_margin`.
fn spheres_within_margin(a: u32, b: u32) -> bool {
    let ba = bodies[a];
    let bb = bodies[b];
    let sphere_a = bitcast<f32>(work[work_layout.aabbs + 8u * a + 7u]);
    let sphere_b = bitcast<f32>(work[work_layout.aabbs + 8u * b + 7u]);
    return length3(bb.position - ba.position) - (sphere_a + sphere_b) < pair_margin(ba, bb, aabb_min(a).w, aabb_min(b).w);
}

// Whether a joint keeps bodies a and b from colliding: b in a's list. Twin of `no_contact`.
fn no_contact(a: u32, b: u32) -> bool {
    let pr = props[a];
    for (var k = 0u; k < pr.no_contact_count; k++) {
        if topology[pr.no_contact_first + k] == b {
            return true;
        }
    }
    return false;
}

// Whether the collision groups of bodies a and b let them collide (each stores the complements
// of its memberships and filter). Twin of `GpuBodyProps::groups_interact`.
fn groups_interact(a: u32, b: u32) -> bool {
    let pa = props[a];
    let pb = props[b];
    return (~pa.not_memberships & ~pb.not_filter) != 0u && (~pb.not_memberships & ~pa.not_filter) != 0u;
}

fn is_pair(a: u32, b: u32) -> bool {
    return (is_dynamic(a) || is_dynamic(b)) && overlaps(a, b) && spheres_within_margin(a, b) && !no_contact(a, b)
        && groups_interact(a, b);
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

// Per pair: its contacts as a candidate manifold (warm starting happens when manifolds are
// compacted), a flag saying whether it has any, and the face that kept it apart (tried first
// next step).
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
    // A resting manifold carried over (see `recycle_pairs`): compaction rebuilds it.
    if work[work_layout.recycled + p] != 0u {
        work[work_layout.faces + p] = NO_FACE;
        work[work_layout.flags + p] = 1u;
        return;
    }
    let a = work[work_layout.pairs + 2u * p];
    let b = work[work_layout.pairs + 2u * p + 1u];
    let ba = bodies[a];
    let bb = bodies[b];
    let pa = Posed(shapes[props[a].shape], ba.position, ba.orientation);
    let pb = Posed(shapes[props[b].shape], bb.position, bb.orientation);
    let margin = pair_margin(ba, bb, aabb_min(a).w, aabb_min(b).w);
    // Only pairs of polytopes remember a face.
    var face = NO_FACE;
    if pa.shape.kind >= SHAPE_POLYTOPE && pb.shape.kind >= SHAPE_POLYTOPE {
        face = previous_face(a, b);
    }
    let contact = collide_cached(pa, pb, margin, face);
    work[work_layout.faces + p] = separating_face;
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
