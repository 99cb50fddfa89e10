// Exclusive prefix sum in place over work[offset .. offset + len], the total written to
// work[offset + len]: `scan_blocks` scans blocks of SCAN_BLOCK in shared memory and leaves each
// block's sum in work[sums + block]; `scan_block_sums` (one workgroup) scans those sums chunk by
// chunk and writes the total; `scan_add` adds each block's offset to its elements. A region of
// at most SCAN_ONE_ITEMS elements a thread of one workgroup is scanned by `scan_one` alone, in
// one dispatch instead of three. Integer sums: exact and deterministic, and the same either way.

struct ScanParams {
    offset: u32,
    len: u32,
    sums: u32,
    _pad: u32,
}

@group(0) @binding(0) var<uniform> scan: ScanParams;
@group(0) @binding(1) var<storage, read_write> work: array<u32>;

var<workgroup> block: array<u32, SCAN_BLOCK>;

// Inclusive Hillis-Steele scan of `block` by SCAN_BLOCK / 2 threads, two elements each.
fn scan_shared(lid: u32) {
    for (var stride = 1u; stride < SCAN_BLOCK; stride *= 2u) {
        workgroupBarrier();
        let i0 = lid;
        let i1 = lid + SCAN_BLOCK / 2u;
        var a = 0u;
        var b = 0u;
        if i0 >= stride {
            a = block[i0 - stride];
        }
        if i1 >= stride {
            b = block[i1 - stride];
        }
        workgroupBarrier();
        block[i0] += a;
        block[i1] += b;
    }
    workgroupBarrier();
}

fn group_index(wid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return wid.y * nwg.x + wid.x;
}

@compute @workgroup_size(SCAN_THREADS)
fn scan_blocks(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let g = group_index(wid, nwg);
    let base = g * SCAN_BLOCK;
    for (var k = 0u; k < 2u; k++) {
        let i = base + lid + k * SCAN_THREADS;
        var v = 0u;
        if i < scan.len {
            v = work[scan.offset + i];
        }
        block[lid + k * SCAN_THREADS] = v;
    }
    scan_shared(lid);
    for (var k = 0u; k < 2u; k++) {
        let local = lid + k * SCAN_THREADS;
        let i = base + local;
        if i < scan.len {
            var before = 0u;
            if local > 0u {
                before = block[local - 1u];
            }
            work[scan.offset + i] = before;
        }
    }
    if lid == 0u {
        work[scan.sums + g] = block[SCAN_BLOCK - 1u];
    }
}

@compute @workgroup_size(SCAN_THREADS)
fn scan_block_sums(@builtin(local_invocation_index) lid: u32) {
    let blocks = (scan.len + SCAN_BLOCK - 1u) / SCAN_BLOCK;
    var carry = 0u;
    for (var chunk = 0u; chunk < blocks; chunk += SCAN_BLOCK) {
        for (var k = 0u; k < 2u; k++) {
            let i = chunk + lid + k * SCAN_THREADS;
            var v = 0u;
            if i < blocks {
                v = work[scan.sums + i];
            }
            block[lid + k * SCAN_THREADS] = v;
        }
        scan_shared(lid);
        for (var k = 0u; k < 2u; k++) {
            let local = lid + k * SCAN_THREADS;
            let i = chunk + local;
            if i < blocks {
                var before = 0u;
                if local > 0u {
                    before = block[local - 1u];
                }
                work[scan.sums + i] = carry + before;
            }
        }
        carry += block[SCAN_BLOCK - 1u];
        workgroupBarrier();
    }
    if lid == 0u {
        work[scan.offset + scan.len] = carry;
    }
}

@compute @workgroup_size(SCAN_THREADS)
fn scan_add(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let g = group_index(wid, nwg);
    let add = work[scan.sums + g];
    for (var k = 0u; k < 2u; k++) {
        let i = g * SCAN_BLOCK + lid + k * SCAN_THREADS;
        if i < scan.len {
            work[scan.offset + i] += add;
        }
    }
}

// Threads of `scan_one`'s workgroup: as many as the device allows, up to FUSED_SIZE_MAX. Each
// takes at most SCAN_ONE_ITEMS elements (both in the generated header).
override SCAN_ONE_SIZE: u32 = 256u;

// The whole scan in one workgroup (shaders/scan_one.wgsl): one tile where `len` is at most
// SCAN_ONE_SIZE * SCAN_ONE_ITEMS (as `Scan::record` uses it), tile after tile beyond.
// `work[sums ..]` is not used.
@compute @workgroup_size(SCAN_ONE_SIZE)
fn scan_one(@builtin(local_invocation_index) lid: u32) {
    scan_in_workgroup(scan.offset, scan.len, lid, SCAN_ONE_SIZE);
}
