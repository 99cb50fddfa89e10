//! The particle stages on the GPU (shaders/particles.wgsl, shaders/particle_contacts.wgsl): the
//! buffers, the grid's work arena with its radix sort, and the recording of a substep.

use wgpu::util::DeviceExt;

use super::kernels::{self, Radix, RadixParams, Scan, ScanParams, Slot};
use super::shaders::{RADIX_ALL, UNIFORM_SLOT, WORKGROUP_SIZE, dispatch_grid};
use crate::error::Result;
use crate::layout::{GpuParticle, StepParams};

/// Everything the particle stages need.
pub(crate) struct GpuParticles {
    pub buffer: wgpu::Buffer,
    bind_group: wgpu::BindGroup,
    radix: Radix,
    radix_group: wgpu::BindGroup,
    radix_passes: u32,
    scan: Scan,
    scan_group: wgpu::BindGroup,
    hash: wgpu::ComputePipeline,
    cell_start: wgpu::ComputePipeline,
    count_neighbours: wgpu::ComputePipeline,
    separate: wgpu::ComputePipeline,
    apply_position: wgpu::ComputePipeline,
    collide: wgpu::ComputePipeline,
    apply_velocity: wgpu::ComputePipeline,
    advance: wgpu::ComputePipeline,
    grid: (u32, u32),
    hash_grid: (u32, u32),
    pub count: u32,
    collisions: bool,
    iterations: u32,
}

/// Where the particle grid's regions sit in its work arena, and the radix plan over them.
pub(crate) struct ParticleArena {
    words: u32,
    histogram: u32,
    scan_sums: u32,
    plan: Vec<RadixParams>,
}

impl ParticleArena {
    /// Lays out the arena for `n` particles and writes its offsets into `params` (before the
    /// caller uploads them): items and their sort scratch, the radix histogram and scan sums,
    /// the bucket starts, the neighbour counts.
    pub fn new(params: &mut StepParams, n: u32) -> Self {
        let buckets = params.particle_hash_mask + 1;
        let mut at = 0u32;
        let mut region = |words: u32| {
            let start = at;
            at += words;
            start
        };
        let items = region(2 * n);
        let items_scratch = region(2 * n);
        let histogram = region(Radix::histogram_words(n));
        let scan_sums = region(Scan::sums_needed(Radix::histogram_words(n) - 1));
        params.particle_cell_start = region(buckets);
        params.particle_counts = region(n);
        let (plan, sorted) =
            Radix::plan(items, items_scratch, RADIX_ALL, n, histogram, &[(0, buckets.trailing_zeros().max(1))]);
        params.particle_items = items;
        params.particle_sorted = sorted;
        Self { words: at, histogram, scan_sums, plan }
    }
}

impl GpuParticles {
    /// Uploads the particles, the grid's work arena and the pipelines.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        device: &wgpu::Device,
        limits: &wgpu::Limits,
        modules: &[(&'static str, wgpu::ShaderModule)],
        params: &StepParams,
        arena: &ParticleArena,
        particles: &[GpuParticle],
        params_buffer: &wgpu::Buffer,
        geometry: &wgpu::Buffer,
        colliders: &wgpu::Buffer,
    ) -> Result<Self> {
        let n = particles.len() as u32;
        let buckets = params.particle_hash_mask + 1;
        let (at, histogram, scan_sums, plan) = (arena.words, arena.histogram, arena.scan_sums, &arena.plan);
        let make = |label: &'static str, bytes: &[u8], usage: wgpu::BufferUsages| -> Result<wgpu::Buffer> {
            super::solver::storage_fits(limits, label, bytes.len() as u64)?;
            Ok(device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some(label),
                contents: bytes,
                usage,
            }))
        };
        let storage = wgpu::BufferUsages::STORAGE;
        let copy = wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST;
        let buffer = make("particles", bytemuck::cast_slice(particles), storage | copy)?;
        let work = make("particle_work", &vec![0u8; 4 * at.max(1) as usize], storage)?;
        let scratch = make("particle_scratch", &vec![0u8; 32 * n.max(1) as usize], storage)?;

        let slotted = |label: &'static str, slots: Vec<Vec<u8>>| {
            let mut bytes = vec![0u8; slots.len().max(1) * UNIFORM_SLOT as usize];
            for (k, slot) in slots.iter().enumerate() {
                bytes[k * UNIFORM_SLOT as usize..][..slot.len()].copy_from_slice(slot);
            }
            device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some(label),
                contents: &bytes,
                usage: wgpu::BufferUsages::UNIFORM,
            })
        };
        let radix_params = slotted(
            "particle_radix_params",
            plan.iter().map(|p: &RadixParams| bytemuck::bytes_of(p).to_vec()).collect(),
        );
        let scan_params = slotted(
            "particle_scan_params",
            vec![
                bytemuck::bytes_of(&ScanParams {
                    offset: histogram,
                    len: Radix::histogram_words(n) - 1,
                    sums: scan_sums,
                    _pad: 0,
                })
                .to_vec(),
            ],
        );
        let radix = Radix::new(device, modules);
        let radix_group = kernels::bind(device, "particle_radix", &radix.layout, &radix.slots, &[&radix_params, &work]);
        let scan = Scan::new(device, modules);
        let scan_group = kernels::bind(device, "particle_scan", &scan.layout, &scan.slots, &[&scan_params, &work]);

        let (ro, rw) = (Slot::Storage(true), Slot::Storage(false));
        let slots = [Slot::Uniform, ro, ro, rw, rw, rw];
        let layout = kernels::layout(device, "particle_bindings", &slots);
        let bind_group = kernels::bind(
            device,
            "particle_bindings",
            &layout,
            &slots,
            &[params_buffer, geometry, colliders, &buffer, &work, &scratch],
        );
        let pipeline = |entry: &str| kernels::pipeline(device, modules, &[&layout], "particles", entry);
        Ok(Self {
            buffer,
            bind_group,
            radix,
            radix_group,
            radix_passes: plan.len() as u32,
            scan,
            scan_group,
            hash: pipeline("particle_hash"),
            cell_start: pipeline("particle_cell_start"),
            count_neighbours: pipeline("particle_count"),
            separate: pipeline("particle_separate"),
            apply_position: pipeline("particle_apply_position"),
            collide: pipeline("particle_collide"),
            apply_velocity: pipeline("particle_apply_velocity"),
            advance: pipeline("advance_particles"),
            grid: dispatch_grid(n, WORKGROUP_SIZE),
            hash_grid: dispatch_grid(n.max(buckets), WORKGROUP_SIZE),
            count: n,
            collisions: params.particle_collisions != 0,
            iterations: params.particle_iterations,
        })
    }

    /// Dispatches one substep records.
    pub fn dispatches_per_substep(&self) -> u32 {
        if self.collisions { 1 + Radix::dispatches(self.radix_passes) + 2 + 4 * self.iterations + 1 } else { 1 }
    }

    /// Records one substep of the particles: their contacts (when on), then `advance_particles`.
    pub fn record_substep(&self, pass: &mut wgpu::ComputePass) {
        let run = |pass: &mut wgpu::ComputePass, stage: &str, pipeline: &wgpu::ComputePipeline, grid: (u32, u32)| {
            pass.push_debug_group(stage);
            pass.set_bind_group(0, &self.bind_group, &[]);
            pass.set_pipeline(pipeline);
            pass.dispatch_workgroups(grid.0, grid.1, 1);
            pass.pop_debug_group();
        };
        if self.collisions {
            run(pass, "particle_hash", &self.hash, self.hash_grid);
            self.radix.record(
                pass,
                &self.radix_group,
                0,
                self.radix_passes,
                self.count,
                &self.scan,
                &self.scan_group,
                0,
            );
            run(pass, "particle_cell_start", &self.cell_start, self.grid);
            run(pass, "particle_count", &self.count_neighbours, self.grid);
            for _ in 0..self.iterations {
                run(pass, "particle_separate", &self.separate, self.grid);
                run(pass, "particle_apply_position", &self.apply_position, self.grid);
            }
            for _ in 0..self.iterations {
                run(pass, "particle_collide", &self.collide, self.grid);
                run(pass, "particle_apply_velocity", &self.apply_velocity, self.grid);
            }
        }
        run(pass, "advance_particles", &self.advance, self.grid);
    }
}
