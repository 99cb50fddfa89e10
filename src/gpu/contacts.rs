//! Body-body contacts on the GPU: the buffers, bind groups and pipelines of the contact stages,
//! and their recording. The stages and their order are those of `CpuSolver::step` with
//! `src/cpu/contacts.rs`.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use wgpu::util::DeviceExt;

use super::kernels::{self, Radix, RadixParams, Scan, ScanParams, Slot};
use super::shaders::{FUSED_SIZE_MAX, RADIX_ALL, STATS_WORKGROUP_SIZE, UNIFORM_SLOT, WORKGROUP_SIZE, dispatch_grid};
use super::timing::{Marks, Stage};
use crate::cpu::contacts::GridSpec;
use crate::error::{Error, Result};
use crate::layout::{
    GpuManifold, GpuWorkLayout, PREPARED_BODY_WORDS, PREPARED_MANIFOLD_WORDS, PreparedRecords, StepParams,
};

/// Buffers the contact stages share with the rest of the solver.
pub(crate) struct Shared<'a> {
    pub params: &'a wgpu::Buffer,
    pub bodies: &'a wgpu::Buffer,
    pub props: &'a wgpu::Buffer,
    pub shapes: &'a wgpu::Buffer,
    pub geometry: &'a wgpu::Buffer,
    pub topology: &'a wgpu::Buffer,
    pub solver_bodies: &'a wgpu::Buffer,
    pub stats: &'a wgpu::Buffer,
}

struct Pipelines {
    contacts_begin: wgpu::ComputePipeline,
    count_pairs: wgpu::ComputePipeline,
    write_pairs: wgpu::ComputePipeline,
    grid_cells: wgpu::ComputePipeline,
    grid_pairs: wgpu::ComputePipeline,
    grid_finish: wgpu::ComputePipeline,
    grid_write: wgpu::ComputePipeline,
    /// The pairs in order by ranks instead of the radix sort (`GpuContacts::pair_ranks`).
    pair_count: wgpu::ComputePipeline,
    pair_starts: wgpu::ComputePipeline,
    pair_place: wgpu::ComputePipeline,
    pair_rank: wgpu::ComputePipeline,
    /// The ranks' dispatches in one workgroup, after `cells_fused`.
    pairs_fused: Option<wgpu::ComputePipeline>,
    /// The broad phase up to the grid's pairs in one workgroup, with the fused sweeps in a
    /// world of at most 8,192 bodies on the grid ([`GpuContacts::new`]).
    cells_fused: Option<wgpu::ComputePipeline>,
    collide_pairs: wgpu::ComputePipeline,
    recycle_pairs: wgpu::ComputePipeline,
    compact_manifolds: wgpu::ComputePipeline,
    adjacency_count: wgpu::ComputePipeline,
    adjacency_offsets: wgpu::ComputePipeline,
    adjacency_fill: wgpu::ComputePipeline,
    adjacency_sort: wgpu::ComputePipeline,
    color_resolve: wgpu::ComputePipeline,
    color_masks: wgpu::ComputePipeline,
    color_pick: wgpu::ComputePipeline,
    color_descend: wgpu::ComputePipeline,
    color_settle: wgpu::ComputePipeline,
    bucket_histogram: wgpu::ComputePipeline,
    bucket_scatter: wgpu::ComputePipeline,
    bucket_args: wgpu::ComputePipeline,
    jacobi_split: wgpu::ComputePipeline,
    /// Per sweep (solve, relax, restitution): the colored and the Jacobi kernel.
    sweeps: [(wgpu::ComputePipeline, wgpu::ComputePipeline); 3],
    /// The manifolds' records and the bodies' inertia for the current positions.
    prepare_manifolds: wgpu::ComputePipeline,
    /// The warm start: the bouncing manifolds' work, then the gather by body.
    warm_start_work: wgpu::ComputePipeline,
    warm_start_gather: wgpu::ComputePipeline,
    /// The velocities' integration and the gather in one, where nothing bounces.
    warm_start_integrate: wgpu::ComputePipeline,
    jacobi_gather: wgpu::ComputePipeline,
    manifold_stats: wgpu::ComputePipeline,
    /// Per sweep (solve, relax, restitution), the whole pass in one workgroup
    /// (`SolverSettings::gpu_fused_sweeps`); none without it.
    fused: Option<[wgpu::ComputePipeline; 3]>,
    /// The whole coloring stage (adjacency, rounds, buckets, Jacobi split) in one workgroup,
    /// with the fused sweeps.
    coloring_fused: Option<wgpu::ComputePipeline>,
    /// A whole substep in one workgroup (`substep_fused`), where the solver runs it
    /// ([`GpuContacts::new`]'s `fused_substep`).
    substep_fused: Option<wgpu::ComputePipeline>,
}

/// A manifold pass, as in the CPU path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Pass {
    WarmStart = 0,
    Solve = 1,
    Relax = 2,
    Restitution = 3,
}

/// The contact stages' state on the GPU.
pub(crate) struct GpuContacts {
    pub layout: GpuWorkLayout,
    work: wgpu::Buffer,
    manifolds: [wgpu::Buffer; 2],
    /// The prepared records, then the bodies' inertia (`prepare_manifolds`).
    prepared: wgpu::Buffer,
    args: wgpu::Buffer,
    header_readback: wgpu::Buffer,
    header_ready: Arc<AtomicBool>,
    header_mapped: bool,
    pairs_group: wgpu::BindGroup,
    manifold_groups: [wgpu::BindGroup; 2],
    solve_groups: [wgpu::BindGroup; 2],
    scan_group: wgpu::BindGroup,
    scan: Scan,
    radix: Radix,
    radix_group: wgpu::BindGroup,
    /// Radix passes of the grid items (slots `0..`), then of the pairs.
    cell_passes: u32,
    pair_passes: u32,
    /// Whether the grid's pairs are put in order by ranks within each first body's pairs
    /// (`pair_count` ... `pair_rank`: five dispatches) instead of the radix sort (three or
    /// five a pass, four passes up to 65,536 bodies): in worlds of at most
    /// [`PAIR_RANK_BODIES`] bodies and [`PAIR_RANK_PAIRS`] pairs. The same list either way.
    pub pair_ranks: bool,
    pipelines: Pipelines,
    body_grid: (u32, u32),
    /// A thread per pair slot and per body (`contacts_begin`).
    begin_grid: (u32, u32),
    pair_grid: (u32, u32),
    manifold_grid: (u32, u32),
    /// A thread per manifold and per body (`prepare_manifolds`).
    prepare_grid: (u32, u32),
    histogram_grid: (u32, u32),
    manifold_stats_grid: (u32, u32),
    max_colors: u32,
    rounds: u32,
    /// Whether the passes read prepared records (`SolverSettings::gpu_prepared_passes`).
    prepared_passes: bool,
    /// Whether anything in the world can bounce (`World::bodies_can_bounce`): without it the
    /// warm start's work on bouncing manifolds is not recorded (it would find none).
    pub bounces: bool,
    /// Pairs and manifolds wanted beyond capacity in the last step read back (0 when they fit).
    pub dropped: u32,
    /// Whether a step has already warned that the buffers are at the device's limit.
    pub at_limit_warned: bool,
}

/// Threads of the one workgroup of a fused pass (`FUSED_SIZE` in shaders/solve_contacts.wgsl
/// and shaders/joints.wgsl) on a device of `limits` and the backend named `backend`: as many as
/// the device allows in one workgroup along x, up to 1,024; at most 256 on Metal, whose
/// pipelines may allow fewer threads than the device does when their kernels use many
/// registers, as the joints' do (which wgpu does not check).
pub(crate) fn fused_size(limits: &wgpu::Limits, backend: &str) -> u32 {
    let most = if backend == "Metal" { 256 } else { FUSED_SIZE_MAX };
    limits.max_compute_invocations_per_workgroup.min(limits.max_compute_workgroup_size_x).min(most)
}

/// The most bodies, and pairs, of a world whose pairs are put in order by ranks
/// ([`GpuContacts::pair_ranks`]): a pair's rank reads every pair of its first body, so a body
/// heading thousands of pairs (a floor under a pile, added first) costs the square of their
/// number. Within these bounds the worst step (eight bodies each heading some 8,000 pairs)
/// reads some 540 million words, where a pile's floor heads hundreds of pairs; in a small
/// world, whose step is a chain of dispatches, the ranks are seven dispatches fewer (with the
/// fused sweeps, one workgroup's dispatch instead of fifteen, that worst case on one
/// workgroup). The fused cell sort (`cells_fused`) takes the same bound on bodies.
pub(crate) const PAIR_RANK_BODIES: u32 = 8_192;
pub(crate) const PAIR_RANK_PAIRS: u32 = 65_536;

/// Bytes of a manifold's prepared record and of a body's inertia.
const PREPARED_BYTES: u64 = 4 * PREPARED_MANIFOLD_WORDS as u64;
const INERTIA_BYTES: u64 = 4 * PREPARED_BODY_WORDS as u64;

/// Words of the header at the start of the arena.
const HEADER: u32 = 16;
/// Scan slots: pair counts, pair flags, adjacency counts, color histogram, the radix
/// histograms of the grid items and of the pairs.
const SCAN_PAIRS: u32 = 0;
const SCAN_FLAGS: u32 = 1;
const SCAN_ADJACENCY: u32 = 2;
const SCAN_HISTOGRAM: u32 = 3;
const SCAN_CELLS: u32 = 4;
const SCAN_PAIR_SORT: u32 = 5;

impl GpuContacts {
    /// Statistics partials the manifolds add for a manifold capacity.
    pub fn stats_groups(manifold_capacity: u32) -> u32 {
        manifold_capacity.div_ceil(STATS_WORKGROUP_SIZE)
    }

    /// Contact stages for `params.body_count` bodies on broad-phase grid `grid`, with room for
    /// `pair_capacity` pairs and `manifold_capacity` manifolds; with `fused_size`, the passes,
    /// the coloring stage and (in a world small enough) the broad phase before the grid's pairs
    /// and the pairs' order after them fused into one workgroup of that many threads each, and
    /// with `fused_substep` too, each substep ([`Self::record_substep`]).
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        device: &wgpu::Device,
        modules: &[(&'static str, wgpu::ShaderModule)],
        limits: &wgpu::Limits,
        params: &StepParams,
        shared: &Shared,
        grid: &GridSpec,
        pair_capacity: u32,
        manifold_capacity: u32,
        fused_size: Option<u32>,
        fused_substep: bool,
    ) -> Result<Self> {
        let n = params.body_count;
        let buckets = params.max_colors + 1;
        // With the fused sweeps, a small world's broad phase up to its pairs is one workgroup's
        // dispatch (`cells_fused`), as its pairs' ranks are.
        let cells_fused = fused_size.is_some() && !grid.brute_force && n <= PAIR_RANK_BODIES;
        // The grid's keys: the hashes and the large key.
        let grid_keys = grid.hash_mask + 2;
        // Groups of the buckets' histogram: workgroups of STATS_WORKGROUP_SIZE manifolds, or the
        // fused coloring's threads, each with a run of manifolds.
        let histogram_groups = fused_size.unwrap_or(manifold_capacity.div_ceil(STATS_WORKGROUP_SIZE));
        // Lay the arena out.
        let mut at = HEADER;
        let mut region = |words: u32| {
            let start = at;
            at += words;
            start
        };
        let mut layout = GpuWorkLayout {
            body_count: n,
            pair_capacity,
            manifold_capacity,
            buckets,
            histogram_groups,
            aabbs: region(8 * n),
            pair_counts: region(n + 1),
            pairs: region(2 * pair_capacity),
            flags: region(pair_capacity + 1),
            colors: region(manifold_capacity),
            before: region(manifold_capacity),
            adjacency_counts: region(n + 1),
            adjacency: region(2 * manifold_capacity),
            masks: region(n),
            split: region(n),
            histogram: region(buckets * histogram_groups + 1),
            colored: region(manifold_capacity),
            bucket_offsets: region(buckets + 1),
            args: 0,
            cell_size: grid.cell_size,
            inv_cell: grid.inv_cell,
            hash_mask: grid.hash_mask,
            brute_force: grid.brute_force as u32,
            cells: region(2 * n),
            cell_start: region(grid.hash_mask + 1),
            large: region(n),
            // The radix sorts' histograms, or the fused cell sort's offsets by key.
            radix_histogram: region(Radix::histogram_words(n.max(pair_capacity)).max(grid_keys + 1)),
            faces: region(pair_capacity),
            previous_pairs: region(1 + 2 * pair_capacity),
            previous_faces: region(pair_capacity),
            recycled: region(pair_capacity),
            ..GpuWorkLayout::default()
        };
        let cells_scratch = region(2 * n);
        let pairs_scratch = region(2 * pair_capacity);
        // The grid items sort by hash (the large key included), the pairs by b then a; the pair
        // passes start where they end at `pairs`.
        let bits = |max: u32| 32 - max.leading_zeros();
        let (cell_plan, cells_sorted) = Radix::plan(
            layout.cells,
            cells_scratch,
            RADIX_ALL,
            n,
            layout.radix_histogram,
            &[(0, bits(grid.hash_mask + 1))],
        );
        let index_bits = bits(n.saturating_sub(1)).max(1);
        let pair_keys = [(1, index_bits), (0, index_bits)];
        let pair_plan_len = Radix::plan(0, 0, 0, pair_capacity, 0, &pair_keys).0.len();
        layout.pairs_raw = if pair_plan_len.is_multiple_of(2) { layout.pairs } else { pairs_scratch };
        let other = if pair_plan_len.is_multiple_of(2) { pairs_scratch } else { layout.pairs };
        // The ranks gather into the other buffer and write into `pairs`, which must then be
        // where the grid wrote them (an even number of passes, as two keys give).
        layout.pairs_scratch = other;
        let (pair_plan, pairs_sorted) =
            Radix::plan(layout.pairs_raw, other, 0, pair_capacity, layout.radix_histogram, &pair_keys);
        debug_assert_eq!(pairs_sorted, layout.pairs);
        // The fused cell sort places the items from `cells` into the other region.
        layout.cells_sorted = if cells_fused { cells_scratch } else { cells_sorted };
        let scans = [
            (SCAN_PAIRS, layout.pair_counts, n),
            (SCAN_FLAGS, layout.flags, pair_capacity),
            (SCAN_ADJACENCY, layout.adjacency_counts, n),
            (SCAN_HISTOGRAM, layout.histogram, buckets * histogram_groups),
            (SCAN_CELLS, layout.radix_histogram, Radix::histogram_words(n) - 1),
            (SCAN_PAIR_SORT, layout.radix_histogram, Radix::histogram_words(pair_capacity) - 1),
        ];
        let sums_words = scans.iter().map(|&(_, _, len)| Scan::sums_needed(len)).max().unwrap_or(1);
        layout.scan_sums = region(sums_words);
        layout.total = at;

        let storage = wgpu::BufferUsages::STORAGE;
        let make = |label: &'static str, bytes: u64, usage: wgpu::BufferUsages| -> Result<wgpu::Buffer> {
            super::solver::storage_fits(limits, label, bytes)?;
            Ok(device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size: bytes.max(16),
                usage,
                mapped_at_creation: false,
            }))
        };
        // Copied from and into when the buffers grow (`record_carry`).
        let carried = storage | wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST;
        let work = make("work", 4 * layout.total as u64, carried)?;
        // Per bucket its dispatch, then the Jacobi gather's, then `grid_write`'s.
        let args = make("dispatch_args", 12 * (buckets as u64 + 2), storage | wgpu::BufferUsages::INDIRECT)?;
        let manifold_bytes = size_of::<GpuManifold>() as u64;
        let candidates = make("candidates", manifold_bytes * pair_capacity as u64, storage)?;
        let readable = storage | wgpu::BufferUsages::COPY_SRC;
        let manifolds = [
            make("manifolds_even", manifold_bytes * manifold_capacity as u64, carried)?,
            make("manifolds_odd", manifold_bytes * manifold_capacity as u64, carried)?,
        ];
        let deltas = make("jacobi_deltas", 64 * manifold_capacity as u64, storage)?;
        // Per manifold its prepared record (sixteen vec4s), then per body three (its inertia).
        let prepared_bytes = if params.prepared_passes != 0 {
            PREPARED_BYTES * manifold_capacity as u64 + INERTIA_BYTES * n as u64
        } else {
            0
        };
        let prepared = make("prepared", prepared_bytes, readable)?;
        // Per body two counters, then the raw pair count and the large-body count, then for the
        // fused cell sort one per grid key.
        let cell_counters = if cells_fused { grid_keys } else { 0 };
        let counters = make("counters", 4 * (2 * n as u64 + 2 + cell_counters as u64), storage)?;
        let header_readback = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("header_readback"),
            size: 4 * HEADER as u64,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let layout_buffer = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("work_layout"),
            contents: bytemuck::bytes_of(&layout),
            usage: wgpu::BufferUsages::UNIFORM,
        });
        // One 256-byte slot per scan, and an index uniform whose slot k holds k (the coloring
        // round, or the color bucket, of a dispatch).
        let mut scan_bytes = vec![0u8; scans.len() * UNIFORM_SLOT as usize];
        for (slot, offset, len) in scans {
            let p = ScanParams { offset, len, sums: layout.scan_sums, _pad: 0 };
            let at = (slot as u64 * UNIFORM_SLOT) as usize;
            scan_bytes[at..at + 16].copy_from_slice(bytemuck::bytes_of(&p));
        }
        let scan_params = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("scan_params"),
            contents: &scan_bytes,
            usage: wgpu::BufferUsages::UNIFORM,
        });
        let mut radix_bytes = vec![0u8; (cell_plan.len() + pair_plan.len()).max(1) * UNIFORM_SLOT as usize];
        for (k, p) in cell_plan.iter().chain(&pair_plan).enumerate() {
            let at = k * UNIFORM_SLOT as usize;
            radix_bytes[at..at + size_of::<RadixParams>()].copy_from_slice(bytemuck::bytes_of(p));
        }
        let radix_params = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("radix_params"),
            contents: &radix_bytes,
            usage: wgpu::BufferUsages::UNIFORM,
        });
        let index_slots = buckets.max(params.coloring_rounds).max(1);
        let mut index_bytes = vec![0u8; (index_slots as u64 * UNIFORM_SLOT) as usize];
        for k in 0..index_slots {
            let at = (k as u64 * UNIFORM_SLOT) as usize;
            index_bytes[at..at + 4].copy_from_slice(&k.to_le_bytes());
        }
        let index = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("index_slots"),
            contents: &index_bytes,
            usage: wgpu::BufferUsages::UNIFORM,
        });

        let (ro, rw) = (Slot::Storage(true), Slot::Storage(false));
        let pairs_slots = [Slot::Uniform, Slot::Uniform, ro, ro, ro, ro, ro, rw, rw, rw];
        let manifold_slots = [Slot::Uniform, Slot::Uniform, Slot::UniformDynamic, ro, ro, ro, rw, rw, rw, rw, ro];
        let solve_slots = [Slot::Uniform, Slot::Uniform, Slot::UniformDynamic, rw, ro, rw, rw, rw, rw, rw, rw];
        let pairs_layout = kernels::layout(device, "pairs", &pairs_slots);
        let manifold_layout = kernels::layout(device, "manifolds", &manifold_slots);
        let solve_layout = kernels::layout(device, "solve_contacts", &solve_slots);
        let s = shared;
        let pairs_group = kernels::bind(
            device,
            "pairs",
            &pairs_layout,
            &pairs_slots,
            &[
                s.params,
                &layout_buffer,
                s.bodies,
                s.props,
                s.shapes,
                s.geometry,
                s.topology,
                &work,
                &candidates,
                &counters,
            ],
        );
        let parity = |k: usize| (&manifolds[k], &manifolds[1 - k]);
        let manifold_groups = [0, 1].map(|k| {
            let (current, previous) = parity(k);
            kernels::bind(
                device,
                "manifolds",
                &manifold_layout,
                &manifold_slots,
                &[
                    s.params,
                    &layout_buffer,
                    &index,
                    s.props,
                    &candidates,
                    previous,
                    current,
                    &work,
                    &counters,
                    &args,
                    s.bodies,
                ],
            )
        });
        let solve_groups = [0, 1].map(|k| {
            kernels::bind(
                device,
                "solve_contacts",
                &solve_layout,
                &solve_slots,
                &[
                    s.params,
                    &layout_buffer,
                    &index,
                    s.bodies,
                    s.props,
                    s.solver_bodies,
                    parity(k).0,
                    &work,
                    &deltas,
                    s.stats,
                    &prepared,
                ],
            )
        });
        let scan = Scan::new(device, modules);
        let scan_group = kernels::bind(device, "scan", &scan.layout, &scan.slots, &[&scan_params, &work]);
        let radix = Radix::new(device, modules);
        let radix_group = kernels::bind(device, "radix", &radix.layout, &radix.slots, &[&radix_params, &work]);

        let p = |layout: &wgpu::BindGroupLayout, file: &str, entry: &str| {
            kernels::pipeline(device, modules, &[layout], file, entry)
        };
        let m = |entry: &str| p(&manifold_layout, "manifolds", entry);
        let prepared_passes = [("PREPARED_PASSES", f64::from(params.prepared_passes))];
        let v = |entry: &str| {
            kernels::pipeline_with(device, modules, &[&solve_layout], "solve_contacts", entry, &prepared_passes)
        };
        let pipelines = Pipelines {
            contacts_begin: p(&pairs_layout, "broad_phase", "contacts_begin"),
            count_pairs: p(&pairs_layout, "broad_phase", "count_pairs"),
            write_pairs: p(&pairs_layout, "broad_phase", "write_pairs"),
            grid_cells: p(&pairs_layout, "broad_phase", "grid_cells"),
            grid_pairs: p(&pairs_layout, "broad_phase", "grid_pairs"),
            grid_finish: m("grid_finish"),
            grid_write: p(&pairs_layout, "broad_phase", "grid_write"),
            pair_count: p(&pairs_layout, "broad_phase", "pair_count"),
            pair_starts: p(&pairs_layout, "broad_phase", "pair_starts"),
            pair_place: p(&pairs_layout, "broad_phase", "pair_place"),
            pair_rank: p(&pairs_layout, "broad_phase", "pair_rank"),
            cells_fused: fused_size.filter(|_| cells_fused).map(|size| {
                let constants = [("FUSED_SIZE", f64::from(size))];
                kernels::pipeline_with(device, modules, &[&pairs_layout], "broad_phase", "cells_fused", &constants)
            }),
            pairs_fused: fused_size.filter(|_| cells_fused).map(|size| {
                let constants = [("FUSED_SIZE", f64::from(size))];
                kernels::pipeline_with(device, modules, &[&pairs_layout], "broad_phase", "pairs_fused", &constants)
            }),
            collide_pairs: p(&pairs_layout, "broad_phase", "collide_pairs"),
            recycle_pairs: m("recycle_pairs"),
            compact_manifolds: m("compact_manifolds"),
            adjacency_count: m("adjacency_count"),
            adjacency_offsets: m("adjacency_offsets"),
            adjacency_fill: m("adjacency_fill"),
            adjacency_sort: m("adjacency_sort"),
            color_resolve: m("color_resolve"),
            color_masks: m("color_masks"),
            color_pick: m("color_pick"),
            color_descend: m("color_descend"),
            color_settle: m("color_settle"),
            bucket_histogram: m("bucket_histogram"),
            bucket_scatter: m("bucket_scatter"),
            bucket_args: m("bucket_args"),
            jacobi_split: m("jacobi_split"),
            prepare_manifolds: v("prepare_manifolds"),
            warm_start_work: v("warm_start_work"),
            warm_start_gather: v("warm_start_gather"),
            warm_start_integrate: v("warm_start_integrate"),
            sweeps: [
                (v("solve_color"), v("jacobi_solve")),
                (v("relax_color"), v("jacobi_relax")),
                (v("restitution_color"), v("jacobi_restitution")),
            ],
            jacobi_gather: v("jacobi_gather"),
            manifold_stats: v("manifold_stats"),
            coloring_fused: fused_size.map(|size| {
                kernels::pipeline_with(
                    device,
                    modules,
                    &[&manifold_layout],
                    "manifolds",
                    "coloring_fused",
                    &[("FUSED_SIZE", f64::from(size))],
                )
            }),
            fused: fused_size.map(|size| {
                let constants = [prepared_passes[0], ("FUSED_SIZE", f64::from(size))];
                ["solve_fused", "relax_fused", "restitution_fused"].map(|entry| {
                    kernels::pipeline_with(device, modules, &[&solve_layout], "solve_contacts", entry, &constants)
                })
            }),
            substep_fused: fused_size.filter(|_| fused_substep).map(|size| {
                let constants = [prepared_passes[0], ("FUSED_SIZE", f64::from(size))];
                kernels::pipeline_with(device, modules, &[&solve_layout], "solve_contacts", "substep_fused", &constants)
            }),
        };
        Ok(Self {
            layout,
            work,
            manifolds,
            prepared,
            args,
            header_readback,
            header_ready: Arc::new(AtomicBool::new(false)),
            header_mapped: false,
            pairs_group,
            manifold_groups,
            solve_groups,
            scan_group,
            scan,
            radix,
            radix_group,
            cell_passes: cell_plan.len() as u32,
            pair_passes: pair_plan.len() as u32,
            pair_ranks: n <= PAIR_RANK_BODIES && pair_capacity <= PAIR_RANK_PAIRS && layout.pairs_raw == layout.pairs,
            pipelines,
            body_grid: dispatch_grid(n, WORKGROUP_SIZE),
            begin_grid: dispatch_grid(n.max(pair_capacity), WORKGROUP_SIZE),
            pair_grid: dispatch_grid(pair_capacity, WORKGROUP_SIZE),
            manifold_grid: dispatch_grid(manifold_capacity, WORKGROUP_SIZE),
            prepare_grid: dispatch_grid(manifold_capacity.max(n), WORKGROUP_SIZE),
            histogram_grid: dispatch_grid(histogram_groups * STATS_WORKGROUP_SIZE, STATS_WORKGROUP_SIZE),
            manifold_stats_grid: dispatch_grid(manifold_capacity, STATS_WORKGROUP_SIZE),
            max_colors: params.max_colors,
            rounds: params.coloring_rounds,
            prepared_passes: params.prepared_passes != 0,
            bounces: true,
            dropped: 0,
            at_limit_warned: false,
        })
    }

    /// Records `broad_phase`, `collide_pairs` (with compaction and warm starting) and `color`
    /// (adjacency, rounds, buckets, Jacobi split) for the step of parity `parity`.
    pub fn record_detection(&self, pass: &mut wgpu::ComputePass, parity: usize, marks: &mut Marks) {
        let p = &self.pipelines;
        marks.mark(pass, Stage::BroadPhase);
        pass.set_bind_group(0, &self.pairs_group, &[]);
        let l = &self.layout;
        if let Some(fused) = &p.cells_fused {
            kernels::dispatch(pass, marks, "cells_fused", fused, (1, 1));
            kernels::dispatch(pass, marks, "grid_pairs", &p.grid_pairs, self.body_grid);
            if let Some(fused) = p.pairs_fused.as_ref().filter(|_| self.pair_ranks) {
                // The count, the list written again where it overflowed, and the ranks.
                kernels::dispatch(pass, marks, "pairs_fused", fused, (1, 1));
            } else {
                self.record_pair_order(pass, marks, parity);
            }
        } else if l.brute_force != 0 {
            kernels::dispatch(pass, marks, "contacts_begin", &p.contacts_begin, self.begin_grid);
            kernels::dispatch(pass, marks, "count_pairs", &p.count_pairs, self.body_grid);
            self.scan.record(pass, marks, "scan_pairs", &self.scan_group, SCAN_PAIRS, l.body_count);
            pass.set_bind_group(0, &self.pairs_group, &[]);
            kernels::dispatch(pass, marks, "write_pairs", &p.write_pairs, self.body_grid);
        } else {
            kernels::dispatch(pass, marks, "contacts_begin", &p.contacts_begin, self.begin_grid);
            let (scan, scan_group) = (&self.scan, &self.scan_group);
            let cells = (scan, scan_group, SCAN_CELLS);
            self.radix.record(pass, marks, "cell_sort", &self.radix_group, 0, self.cell_passes, l.body_count, cells);
            pass.set_bind_group(0, &self.pairs_group, &[]);
            kernels::dispatch(pass, marks, "grid_cells", &p.grid_cells, self.body_grid);
            kernels::dispatch(pass, marks, "grid_pairs", &p.grid_pairs, self.body_grid);
            // (With the fused sweeps the ranks imply the fused cells above.)
            self.record_pair_order(pass, marks, parity);
        }
        marks.mark(pass, Stage::NarrowPhase);
        let group = &self.manifold_groups[parity];
        pass.set_bind_group(0, group, &[0]);
        kernels::dispatch(pass, marks, "recycle_pairs", &p.recycle_pairs, self.pair_grid);
        pass.set_bind_group(0, &self.pairs_group, &[]);
        kernels::dispatch(pass, marks, "collide_pairs", &p.collide_pairs, self.pair_grid);
        self.scan.record(pass, marks, "scan_flags", &self.scan_group, SCAN_FLAGS, self.layout.pair_capacity);
        pass.set_bind_group(0, group, &[0]);
        kernels::dispatch(pass, marks, "compact_manifolds", &p.compact_manifolds, self.pair_grid);
        marks.mark(pass, Stage::Coloring);
        if let Some(fused) = &p.coloring_fused {
            kernels::dispatch(pass, marks, "coloring_fused", fused, (1, 1));
            return;
        }
        kernels::dispatch(pass, marks, "adjacency_count", &p.adjacency_count, self.manifold_grid);
        kernels::dispatch(pass, marks, "adjacency_offsets", &p.adjacency_offsets, self.body_grid);
        self.scan.record(pass, marks, "scan_adjacency", &self.scan_group, SCAN_ADJACENCY, self.layout.body_count);
        pass.set_bind_group(0, group, &[0]);
        kernels::dispatch(pass, marks, "adjacency_fill", &p.adjacency_fill, self.manifold_grid);
        kernels::dispatch(pass, marks, "adjacency_sort", &p.adjacency_sort, self.body_grid);
        if self.rounds > 0 {
            kernels::dispatch(pass, marks, "color_resolve", &p.color_resolve, self.manifold_grid);
            kernels::dispatch(pass, marks, "color_masks", &p.color_masks, self.body_grid);
            kernels::dispatch(pass, marks, "color_descend", &p.color_descend, self.manifold_grid);
            kernels::dispatch(pass, marks, "color_settle", &p.color_settle, self.manifold_grid);
            for round in 0..self.rounds {
                pass.set_bind_group(0, group, &[(round as u64 * UNIFORM_SLOT) as u32]);
                kernels::dispatch(pass, marks, "color_masks", &p.color_masks, self.body_grid);
                kernels::dispatch(pass, marks, "color_pick", &p.color_pick, self.manifold_grid);
                kernels::dispatch(pass, marks, "color_resolve", &p.color_resolve, self.manifold_grid);
            }
            pass.set_bind_group(0, group, &[0]);
        }
        kernels::dispatch(pass, marks, "bucket_histogram", &p.bucket_histogram, self.histogram_grid);
        let buckets = self.layout.buckets * self.layout.histogram_groups;
        self.scan.record(pass, marks, "scan_buckets", &self.scan_group, SCAN_HISTOGRAM, buckets);
        pass.set_bind_group(0, group, &[0]);
        kernels::dispatch(pass, marks, "bucket_scatter", &p.bucket_scatter, self.histogram_grid);
        kernels::dispatch(pass, marks, "bucket_args", &p.bucket_args, (1, 1));
        kernels::dispatch(pass, marks, "jacobi_split", &p.jacobi_split, self.body_grid);
    }

    /// Records what follows `grid_pairs` in dispatches apart: the count (`grid_finish`), in a
    /// step whose pairs overflowed the list that list again (whole items in grid order, so that
    /// which pairs fit is no race; `grid_write`, sized by `grid_finish`), then the pairs in
    /// `(a, b)` order by ranks or by the radix sort.
    fn record_pair_order(&self, pass: &mut wgpu::ComputePass, marks: &mut Marks, parity: usize) {
        let (p, l) = (&self.pipelines, &self.layout);
        let (scan, scan_group) = (&self.scan, &self.scan_group);
        pass.set_bind_group(0, &self.manifold_groups[parity], &[0]);
        kernels::dispatch(pass, marks, "grid_finish", &p.grid_finish, (1, 1));
        scan.record(pass, marks, "scan_pairs", scan_group, SCAN_PAIRS, l.body_count);
        pass.set_bind_group(0, &self.pairs_group, &[]);
        marks.dispatch(pass, "grid_write");
        pass.push_debug_group("grid_write");
        pass.set_pipeline(&p.grid_write);
        pass.dispatch_workgroups_indirect(&self.args, 12 * (l.buckets as u64 + 1));
        pass.pop_debug_group();
        if self.pair_ranks {
            kernels::dispatch(pass, marks, "pair_count", &p.pair_count, self.pair_grid);
            kernels::dispatch(pass, marks, "pair_starts", &p.pair_starts, self.body_grid);
            scan.record(pass, marks, "scan_pair_starts", scan_group, SCAN_PAIRS, l.body_count);
            pass.set_bind_group(0, &self.pairs_group, &[]);
            kernels::dispatch(pass, marks, "pair_place", &p.pair_place, self.pair_grid);
            kernels::dispatch(pass, marks, "pair_rank", &p.pair_rank, self.pair_grid);
        } else {
            let (first, passes) = (self.cell_passes, self.pair_passes);
            let pairs = (scan, scan_group, SCAN_PAIR_SORT);
            self.radix.record(pass, marks, "pair_sort", &self.radix_group, first, passes, l.pair_capacity, pairs);
            pass.set_bind_group(0, &self.pairs_group, &[]);
        }
    }

    /// Dispatches [`Self::record_detection`] records (mirrors it).
    pub fn detection_dispatches(&self) -> u32 {
        let l = &self.layout;
        let scan = |len| self.scan.dispatches(len);
        // `pairs_fused` follows `cells_fused` alone (which the fused sweeps give wherever the
        // ranks are).
        let order = if self.pair_ranks && self.pipelines.pairs_fused.is_some() {
            1
        } else if self.pair_ranks {
            1 + scan(l.body_count) + 1 + 4 + scan(l.body_count)
        } else {
            1 + scan(l.body_count) + 1 + Radix::dispatches(self.pair_passes, l.pair_capacity, &self.scan)
        };
        let pairs = if l.brute_force != 0 {
            1 + 2 + scan(l.body_count)
        } else if self.pipelines.cells_fused.is_some() {
            // The cells, the grid's pairs, their order.
            1 + 1 + order
        } else {
            1 + Radix::dispatches(self.cell_passes, l.body_count, &self.scan) + 2 + order
        };
        let flags = scan(l.pair_capacity);
        let coloring = if self.pipelines.coloring_fused.is_some() {
            1
        } else {
            let (adjacency, buckets) = (scan(l.body_count), scan(l.buckets * l.histogram_groups));
            let rounds = if self.rounds == 0 { 0 } else { 4 + 3 * self.rounds };
            (2 + adjacency + 2) + rounds + (1 + buckets + 3)
        };
        pairs + (2 + flags + 1) + coloring
    }

    /// Dispatches one [`Self::record_pass`] of kind `which` records: for the warm start the
    /// preparation's, the work of bouncing manifolds (where any can bounce) and the gather by
    /// body, else one per color, the overflow and its gather (colors beyond those in use still
    /// cost an empty indirect dispatch), or one when the passes are fused.
    pub fn pass_dispatches(&self, which: Pass) -> u32 {
        match which {
            Pass::WarmStart => self.prepare_dispatches() + 1 + u32::from(self.bounces),
            _ if self.pipelines.fused.is_some() => 1,
            _ => self.max_colors + 2,
        }
    }

    /// Records the preparation ([`Self::prepare_dispatches`]): each manifold's lever arms,
    /// separations and effective masses, and each body's world inverse inertia, for the
    /// current positions, which the warm start and the solve and relax passes then read (the
    /// CPU's `prepare`). Positions move between the solve passes and the relax passes of a
    /// substep, so each substep prepares twice. Nothing when the passes compute those words
    /// themselves (`SolverSettings::gpu_prepared_passes` off).
    pub fn record_prepare(&self, pass: &mut wgpu::ComputePass, marks: &mut Marks, parity: usize) {
        if !self.prepared_passes {
            return;
        }
        marks.dispatch(pass, "prepare_manifolds");
        pass.push_debug_group("prepare_manifolds");
        pass.set_bind_group(0, &self.solve_groups[parity], &[0]);
        pass.set_pipeline(&self.pipelines.prepare_manifolds);
        pass.dispatch_workgroups(self.prepare_grid.0.max(1), self.prepare_grid.1, 1);
        pass.pop_debug_group();
    }

    /// Whether the warm start ([`Self::record_pass`] of [`Pass::WarmStart`]) integrates the
    /// velocities too (`warm_start_integrate`), so that the substep records no
    /// `integrate_velocities`: where nothing can bounce, since the bouncing manifolds' work
    /// reads the velocities after the integration and before the gather. Recorded after the
    /// preparation, which reads no velocity.
    pub fn integrates_velocities(&self) -> bool {
        !self.bounces
    }

    /// Dispatches of [`Self::record_prepare`]: one, or none.
    pub fn prepare_dispatches(&self) -> u32 {
        u32::from(self.prepared_passes)
    }

    /// Records one manifold pass: every color in order (indirect dispatches sized on the GPU),
    /// then the overflow by Jacobi and the gather (both empty when nothing overflowed); or,
    /// with `SolverSettings::gpu_fused_sweeps`, all of it in one dispatch of one workgroup.
    pub fn record_pass(&self, pass: &mut wgpu::ComputePass, marks: &mut Marks, parity: usize, which: Pass) {
        let p = &self.pipelines;
        let group = &self.solve_groups[parity];
        let ((colored, jacobi), name, labels) = match which {
            Pass::WarmStart => {
                // For the positions at the substep's start; then by body (`warm_start_bodies`):
                // the bouncing manifolds' work, then the gather; or where nothing bounces the
                // velocities' integration and the gather in one ([`Self::integrates_velocities`]).
                self.record_prepare(pass, marks, parity);
                pass.push_debug_group("warm_start");
                pass.set_bind_group(0, group, &[0]);
                if self.bounces {
                    marks.dispatch(pass, "warm_start_work");
                    pass.set_pipeline(&p.warm_start_work);
                    pass.dispatch_workgroups(self.manifold_grid.0.max(1), self.manifold_grid.1, 1);
                    marks.dispatch(pass, "warm_start_gather");
                    pass.set_pipeline(&p.warm_start_gather);
                } else {
                    marks.dispatch(pass, "warm_start_integrate");
                    pass.set_pipeline(&p.warm_start_integrate);
                }
                pass.dispatch_workgroups(self.body_grid.0.max(1), self.body_grid.1, 1);
                pass.pop_debug_group();
                return;
            }
            Pass::Solve => (&p.sweeps[0], "solve_colors", ["solve_color", "solve_jacobi", "solve_jacobi_gather"]),
            Pass::Relax => (&p.sweeps[1], "relax_colors", ["relax_color", "relax_jacobi", "relax_jacobi_gather"]),
            Pass::Restitution => (
                &p.sweeps[2],
                "restitution_colors",
                ["restitution_color", "restitution_jacobi", "restitution_jacobi_gather"],
            ),
        };
        if let Some(fused) = &p.fused {
            marks.dispatch(pass, name);
            pass.push_debug_group(name);
            pass.set_bind_group(0, group, &[0]);
            pass.set_pipeline(&fused[which as usize - 1]);
            pass.dispatch_workgroups(1, 1, 1);
            pass.pop_debug_group();
            return;
        }
        pass.push_debug_group(name);
        pass.set_pipeline(colored);
        for color in 0..self.max_colors {
            pass.set_bind_group(0, group, &[(color as u64 * UNIFORM_SLOT) as u32]);
            marks.dispatch(pass, labels[0]);
            pass.dispatch_workgroups_indirect(&self.args, 12 * color as u64);
        }
        let overflow = self.max_colors;
        pass.set_bind_group(0, group, &[(overflow as u64 * UNIFORM_SLOT) as u32]);
        pass.set_pipeline(jacobi);
        marks.dispatch(pass, labels[1]);
        pass.dispatch_workgroups_indirect(&self.args, 12 * overflow as u64);
        marks.dispatch(pass, labels[2]);
        pass.set_pipeline(&p.jacobi_gather);
        pass.dispatch_workgroups_indirect(&self.args, 12 * (overflow as u64 + 1));
        pass.pop_debug_group();
    }

    /// Whether each substep is one dispatch ([`Self::record_substep`]).
    pub fn fuses_substeps(&self) -> bool {
        self.pipelines.substep_fused.is_some()
    }

    /// Records a whole substep as one workgroup's dispatch (`substep_fused`): the velocities,
    /// the preparation, the warm start, the solve sweeps, the positions, the relax sweeps. Only
    /// where [`Self::fuses_substeps`].
    pub fn record_substep(&self, pass: &mut wgpu::ComputePass, marks: &mut Marks, parity: usize) {
        let Some(pipeline) = &self.pipelines.substep_fused else { return };
        marks.dispatch(pass, "substep_fused");
        pass.push_debug_group("substep_fused");
        pass.set_bind_group(0, &self.solve_groups[parity], &[0]);
        pass.set_pipeline(pipeline);
        pass.dispatch_workgroups(1, 1, 1);
        pass.pop_debug_group();
    }

    /// Records the manifolds' statistics partials.
    pub fn record_stats(&self, pass: &mut wgpu::ComputePass, marks: &mut Marks, parity: usize) {
        pass.set_bind_group(0, &self.solve_groups[parity], &[0]);
        kernels::dispatch(pass, marks, "manifold_stats", &self.pipelines.manifold_stats, self.manifold_stats_grid);
    }

    /// Records the copies that carry what the next step reads of the last one from these
    /// stages into `into`, their grown successor: the header (last step's counts), last
    /// step's pairs and the faces that kept them apart (`keep_face`), and its manifolds, in
    /// the buffer of parity `previous` (warm starting, recycling, the coloring's seed). The
    /// next step then runs as it would have in buffers that were large enough from the start.
    /// The copies run on the GPU, in queue order: nothing waits.
    pub fn record_carry(&self, encoder: &mut wgpu::CommandEncoder, into: &GpuContacts, previous: usize) {
        let (from, to) = (&self.layout, &into.layout);
        debug_assert!(to.pair_capacity >= from.pair_capacity && to.manifold_capacity >= from.manifold_capacity);
        // The per-body `counters` need no carrying: every step leaves them at zero, as a new
        // buffer starts.
        let copy_words = |encoder: &mut wgpu::CommandEncoder, at: u32, to_at: u32, count: u32| {
            encoder.copy_buffer_to_buffer(&self.work, 4 * at as u64, &into.work, 4 * to_at as u64, 4 * count as u64);
        };
        copy_words(encoder, 0, 0, HEADER);
        copy_words(encoder, from.pairs, to.pairs, 2 * from.pair_capacity);
        copy_words(encoder, from.faces, to.faces, from.pair_capacity);
        let bytes = size_of::<GpuManifold>() as u64 * from.manifold_capacity as u64;
        encoder.copy_buffer_to_buffer(&self.manifolds[previous], 0, &into.manifolds[previous], 0, bytes);
    }

    /// After a submission: copy the header (counts wanted) for an asynchronous look, unless one
    /// is still in flight.
    pub fn request_header(&mut self, encoder: &mut wgpu::CommandEncoder) -> bool {
        if self.header_mapped {
            return false;
        }
        encoder.copy_buffer_to_buffer(&self.work, 0, &self.header_readback, 0, 4 * HEADER as u64);
        true
    }

    /// Starts mapping the header copied by the last submission.
    pub fn map_header(&mut self) {
        let ready = self.header_ready.clone();
        self.header_mapped = true;
        self.header_readback.map_async(wgpu::MapMode::Read, .., move |r| {
            if r.is_ok() {
                ready.store(true, Ordering::Release);
            }
        });
    }

    /// The counts of the last header read back, if it has arrived: (pairs wanted, manifolds
    /// wanted). Never waits.
    pub fn poll_header(&mut self) -> Option<(u32, u32)> {
        if !self.header_ready.swap(false, Ordering::Acquire) {
            return None;
        }
        let words: Vec<u32> = match self.header_readback.get_mapped_range(..) {
            Ok(view) => bytemuck::cast_slice(&view).to_vec(),
            Err(_) => return None,
        };
        self.header_readback.unmap();
        self.header_mapped = false;
        Some((words[2], words[3]))
    }

    /// Reads `count` words of the arena from word `offset`, waiting for the GPU.
    pub fn read_words(&self, device: &wgpu::Device, queue: &wgpu::Queue, offset: u32, count: u32) -> Result<Vec<u32>> {
        super::solver::read_words(device, queue, &self.work, "work_readback", offset, count)
    }

    /// The manifolds of the step of parity `parity`, read back.
    pub fn read_manifolds(
        &self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        parity: usize,
    ) -> Result<Vec<GpuManifold>> {
        let count = self.read_words(device, queue, 1, 1)?[0];
        let bytes = (count.max(1) as u64) * size_of::<GpuManifold>() as u64;
        let staging = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("manifolds_readback"),
            size: bytes,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let mut encoder =
            device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("manifolds_readback") });
        encoder.copy_buffer_to_buffer(&self.manifolds[parity], 0, &staging, 0, bytes);
        queue.submit([encoder.finish()]);
        let mut out: Vec<GpuManifold> = super::solver::read_buffer(device, &staging)?;
        out.truncate(count as usize);
        Ok(out)
    }

    /// What the next step reads of the last (of parity `parity`): its manifolds, and the pairs a
    /// face kept apart with that face, in pair order ([`crate::Snapshot`]'s).
    pub fn read_state(
        &self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        parity: usize,
    ) -> Result<(Vec<GpuManifold>, Vec<crate::snapshot::SeparatingFace>)> {
        let manifolds = self.read_manifolds(device, queue, parity)?;
        let pairs = self.read_words(device, queue, 0, 1)?[0].min(self.layout.pair_capacity);
        let words = self.read_words(device, queue, self.layout.pairs, 2 * pairs)?;
        let faces = self.read_words(device, queue, self.layout.faces, pairs)?;
        let separated = words.chunks_exact(2).zip(faces).filter(|&(_, face)| face != crate::collide::NO_FACE);
        Ok((manifolds, separated.map(|(pair, face)| ([pair[0], pair[1]], face)).collect()))
    }

    /// Whether a snapshot's manifolds and separated pairs fit the buffers.
    pub fn holds(&self, manifolds: usize, separated: usize) -> bool {
        manifolds <= self.layout.manifold_capacity as usize && separated <= self.layout.pair_capacity as usize
    }

    /// Writes a snapshot's manifolds and separated pairs (checked, and [`Self::holds`]) as the
    /// last step's, ahead of the next submission, whose step reads manifold buffer `previous`
    /// as last step's: the pair list holds the separated pairs alone, which is all the next
    /// step looks up in it (`keep_face`).
    pub fn write_state(
        &self,
        queue: &wgpu::Queue,
        previous: usize,
        manifolds: &[GpuManifold],
        separated: &[crate::snapshot::SeparatingFace],
    ) {
        let (m, p) = (manifolds.len() as u32, separated.len() as u32);
        // The pairs and the manifolds of the step, those it wanted room for, and its manifolds
        // as the next step's previous ones.
        queue.write_buffer(&self.work, 0, bytemuck::cast_slice(&[p, m, p, m, m]));
        if p > 0 {
            let pairs: Vec<u32> = separated.iter().flat_map(|&(pair, _)| pair).collect();
            let faces: Vec<u32> = separated.iter().map(|&(_, face)| face).collect();
            queue.write_buffer(&self.work, 4 * self.layout.pairs as u64, bytemuck::cast_slice(&pairs));
            queue.write_buffer(&self.work, 4 * self.layout.faces as u64, bytemuck::cast_slice(&faces));
        }
        if m > 0 {
            queue.write_buffer(&self.manifolds[previous], 0, bytemuck::cast_slice(manifolds));
        }
    }

    /// The last preparation's records, per manifold of [`Self::read_manifolds`], and its
    /// bodies' inertia, per body (see `GpuSolver::prepared`).
    pub fn read_prepared(&self, device: &wgpu::Device, queue: &wgpu::Queue) -> Result<PreparedRecords> {
        if !self.prepared_passes {
            return Ok(PreparedRecords::default());
        }
        let count = self.read_words(device, queue, 1, 1)?[0];
        let (record_words, inertia_words) = (PREPARED_MANIFOLD_WORDS as u32, PREPARED_BODY_WORDS as u32);
        let read = |offset: u32, words: u32| -> Result<Vec<f32>> {
            let words = super::solver::read_words(device, queue, &self.prepared, "prepared_readback", offset, words)?;
            Ok(words.into_iter().map(f32::from_bits).collect())
        };
        let records = read(0, record_words * count)?;
        let inertia = read(record_words * self.layout.manifold_capacity, inertia_words * self.layout.body_count)?;
        Ok(PreparedRecords {
            manifolds: records.chunks_exact(PREPARED_MANIFOLD_WORDS).map(|r| r.try_into().expect("a record")).collect(),
            inertia: inertia.chunks_exact(PREPARED_BODY_WORDS).map(|r| r.try_into().expect("an inertia")).collect(),
        })
    }

    /// How many manifolds of the last step were carried over without the narrow phase: the
    /// pairs `recycle_pairs` marked, read back (4 bytes per pair, not the manifolds).
    pub fn read_recycled(&self, device: &wgpu::Device, queue: &wgpu::Queue) -> Result<u32> {
        let pairs = self.read_words(device, queue, 0, 1)?[0];
        let marks = self.read_words(device, queue, self.layout.recycled, pairs)?;
        Ok(marks.iter().filter(|&&w| w != 0).count() as u32)
    }

    /// The color buckets of the last step: manifold indices per color, then the overflow.
    pub fn read_buckets(&self, device: &wgpu::Device, queue: &wgpu::Queue) -> Result<(Vec<Vec<u32>>, Vec<u32>)> {
        let l = &self.layout;
        let offsets = self.read_words(device, queue, l.bucket_offsets, l.buckets + 1)?;
        let total = offsets[l.buckets as usize];
        let colored = self.read_words(device, queue, l.colored, total)?;
        let bucket = |b: usize| colored[offsets[b] as usize..offsets[b + 1] as usize].to_vec();
        Ok(((0..self.max_colors as usize).map(bucket).collect(), bucket(self.max_colors as usize)))
    }
}

impl From<wgpu::BufferAsyncError> for Error {
    fn from(e: wgpu::BufferAsyncError) -> Self {
        Error::Readback(e.to_string())
    }
}
