// Stable least-significant-digit radix sort of two-word items in the u32 work arena, eight bits
// per pass: `radix_histogram` counts each workgroup's digits, the scan (scan.wgsl) turns the
// digit-major histogram into offsets, `radix_scatter` moves each item to its digit's offset for
// its workgroup plus the number of lower lanes of the workgroup with the same digit. Integer
// counts only: the result is the same on every run and every adapter.

struct RadixParams {
    // Items read from work[src ..], written to work[dst ..], two words each.
    src: u32,
    dst: u32,
    // Word of the header holding the item count (clamped to `capacity`), or RADIX_ALL when
    // the count is `capacity`.
    count_word: u32,
    capacity: u32,
    // The word of the item the digit is taken from, and its shift.
    word: u32,
    shift: u32,
    // The histogram: RADIX_DIGITS rows of `groups` counts, then the total.
    histogram: u32,
    groups: u32,
}

@group(0) @binding(0) var<uniform> radix: RadixParams;
@group(0) @binding(1) var<storage, read_write> work: array<u32>;

var<workgroup> digit_counts: array<atomic<u32>, RADIX_DIGITS>;
var<workgroup> lane_digit: array<u32, RADIX_DIGITS>;

fn radix_count() -> u32 {
    if radix.count_word == RADIX_ALL {
        return radix.capacity;
    }
    return min(work[radix.count_word], radix.capacity);
}

fn digit_of(i: u32) -> u32 {
    return (work[radix.src + 2u * i + radix.word] >> radix.shift) & (RADIX_DIGITS - 1u);
}

@compute @workgroup_size(RADIX_DIGITS)
fn radix_histogram(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let group = wid.y * nwg.x + wid.x;
    let i = group * RADIX_DIGITS + lid;
    atomicStore(&digit_counts[lid], 0u);
    workgroupBarrier();
    if i < radix_count() {
        atomicAdd(&digit_counts[digit_of(i)], 1u);
    }
    workgroupBarrier();
    if group < radix.groups {
        work[radix.histogram + lid * radix.groups + group] = atomicLoad(&digit_counts[lid]);
    }
}

@compute @workgroup_size(RADIX_DIGITS)
fn radix_scatter(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let group = wid.y * nwg.x + wid.x;
    let i = group * RADIX_DIGITS + lid;
    let valid = i < radix_count();
    var digit = RADIX_DIGITS;
    if valid {
        digit = digit_of(i);
    }
    lane_digit[lid] = digit;
    workgroupBarrier();
    if !valid {
        return;
    }
    var rank = 0u;
    for (var k = 0u; k < lid; k++) {
        if lane_digit[k] == digit {
            rank += 1u;
        }
    }
    let at = work[radix.histogram + digit * radix.groups + group] + rank;
    work[radix.dst + 2u * at] = work[radix.src + 2u * i];
    work[radix.dst + 2u * at + 1u] = work[radix.src + 2u * i + 1u];
}
