// Pair helpers shared by the broad phase and the manifold stages (both bind `work`).

fn aabb_min(i: u32) -> vec4<f32> {
    let w = work_layout.aabbs + 8u * i;
    return vec4<f32>(bitcast<f32>(work[w]), bitcast<f32>(work[w + 1u]), bitcast<f32>(work[w + 2u]), bitcast<f32>(work[w + 3u]));
}

// The distance within which a pair gets speculative contacts: the speculative distance, each
// one's spin, and how far the two can close in a step: the larger of their relative speed and
// each one's speed along the line between their centres (either may be stopped by another
// contact within the step). Twin of `pair_margin` in src/cpu/contacts.rs.
fn pair_margin(a: Body, b: Body, spin_a: f32, spin_b: f32) -> f32 {
    let d = b.position - a.position;
    let len = length3(d);
    var u = vec3<f32>(0.0);
    if len > 0.0 {
        u = d / len;
    }
    let alone = max(abs(dot3(a.linear_velocity, u)), abs(dot3(b.linear_velocity, u)));
    let closing = max(length3(b.linear_velocity - a.linear_velocity), alone);
    return params.speculative_distance + params.dt * closing + (spin_a + spin_b);
}

// Per-body counter `i` out of the counters into work[to + i], to be scanned, and zeroed for its
// next use (the pairs' ranks, the adjacency).
fn take_count(to: u32, i: u32) {
    work[to + i] = atomicLoad(&counters[i]);
    atomicStore(&counters[i], 0u);
}

// After `grid_pairs`, by one thread: the pair count into the header (at most the list's
// capacity; word 2 counts what did not fit, for the host to grow the list), the large bodies'
// count (word 5, for `grid_write`), and the counters zeroed for the next step. Returns the pairs
// the grid found.
fn finish_pairs() -> u32 {
    let total = atomicLoad(&counters[pair_counter(params.body_count)]);
    work[0] = min(total, work_layout.pair_capacity);
    work[2] = total;
    work[5] = atomicLoad(&counters[large_counter(params.body_count)]);
    atomicStore(&counters[pair_counter(params.body_count)], 0u);
    atomicStore(&counters[large_counter(params.body_count)], 0u);
    return total;
}
