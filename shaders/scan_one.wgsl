// An exclusive prefix sum in one workgroup, for the modules that declare `work` (a read_write
// array<u32>): `scan_one`'s, and the fused coloring's (shaders/manifolds.wgsl).

var<workgroup> run_sums: array<u32, FUSED_SIZE_MAX>;

// Exclusive prefix sum in place over work[offset .. offset + len] by the `size` threads of one
// workgroup (`lid` this thread), the total written to work[offset + len]; every thread calls it
// with the same arguments. Tiles of `size * SCAN_ONE_ITEMS` elements, one after the other (one
// tile where `len` allows, as for `scan_one`): thread `lid` takes a run of consecutive elements
// (`per` of them) into registers (a fixed trip count, so the loads issue together and the array
// stays in registers), the workgroup scans the runs' sums, and each thread writes its run's
// prefixes from its offset plus the tiles before. Integer sums, so the words are those of any
// other exact scan. The caller orders `work` around it (a storage barrier before and after, where
// other threads wrote or read the region).
fn scan_in_workgroup(offset: u32, len: u32, lid: u32, size: u32) {
    let tile = size * SCAN_ONE_ITEMS;
    var carry = 0u;
    for (var base = 0u; base < len; base += tile) {
        let count = min(len - base, tile);
        let per = (count + size - 1u) / size;
        let first = base + lid * per;
        let end = base + count;
        var values: array<u32, SCAN_ONE_ITEMS>;
        var sum = 0u;
        for (var k = 0u; k < SCAN_ONE_ITEMS; k++) {
            var v = 0u;
            if k < per && first + k < end {
                v = work[offset + first + k];
            }
            values[k] = v;
            sum += v;
        }
        run_sums[lid] = sum;
        // Inclusive Hillis-Steele scan of the runs' sums.
        for (var stride = 1u; stride < size; stride *= 2u) {
            workgroupBarrier();
            var add = 0u;
            if lid >= stride {
                add = run_sums[lid - stride];
            }
            workgroupBarrier();
            run_sums[lid] += add;
        }
        workgroupBarrier();
        var running = carry + run_sums[lid] - sum;
        for (var k = 0u; k < SCAN_ONE_ITEMS; k++) {
            if k < per && first + k < end {
                work[offset + first + k] = running;
            }
            running += values[k];
        }
        carry += run_sums[size - 1u];
        // The next tile writes `run_sums` again.
        workgroupBarrier();
    }
    if lid == 0u {
        work[offset + len] = carry;
    }
}
