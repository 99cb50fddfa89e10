//! The particle stages on the GPU (shaders/particles.wgsl, shaders/particle_contacts.wgsl): the
//! buffers, the grid's work arena with its radix sort, and the recording of a substep.

use wgpu::util::DeviceExt;

use super::kernels::{self, Radix, RadixParams, Scan, ScanParams, Slot};
use super::shaders::{RADIX_ALL, UNIFORM_SLOT, WORKGROUP_SIZE, dispatch_grid};
use crate::error::Result;
use crate::layout::{GpuParticle, StepParams};
use crate::particles::PARTICLE_BODY_SLOTS;

/// The body buffers the particle stages read (and, for velocities, write).
pub(crate) struct BodyBuffers<'a> {
    pub bodies: &'a wgpu::Buffer,
    pub props: &'a wgpu::Buffer,
    pub shapes: &'a wgpu::Buffer,
    pub topology: &'a wgpu::Buffer,
}

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
    /// The stages in which bodies find their particles, when particles meet bodies.
    bodies: Option<BodyStages>,
    /// The work arena (read for the dropped-contact count).
    work: wgpu::Buffer,
    grid: (u32, u32),
    hash_grid: (u32, u32),
    pub count: u32,
    collisions: bool,
    iterations: u32,
}

/// The particle-body stages: `body_particle_count`, the scan of the counts, `body_particle_fill`
/// (shaders/particle_bodies.wgsl), and per velocity iteration `body_particle_solve`.
struct BodyStages {
    bind_group: wgpu::BindGroup,
    count: wgpu::ComputePipeline,
    fill: wgpu::ComputePipeline,
    solve: wgpu::ComputePipeline,
    grid: (u32, u32),
    bodies: u32,
    readback: wgpu::Buffer,
}

/// Where the particle grid's regions sit in its work arena, and the radix plan over them.
pub(crate) struct ParticleArena {
    words: u32,
    histogram: u32,
    scan_sums: u32,
    plan: Vec<RadixParams>,
    /// Block sums of the scan of the bodies' particle counts.
    body_scan_sums: u32,
    /// Vec4s of particle scratch: two per particle, then three per body slot.
    scratch_vec4s: u64,
}

impl ParticleArena {
    /// Lays out the arena for `n` particles and writes its offsets into `params` (before the
    /// caller uploads them): items and their sort scratch, the radix histogram and scan sums,
    /// the bucket starts, the neighbour counts.
    pub fn new(params: &mut StepParams, n: u32, bodies: u32) -> Self {
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
        // Particle-body contacts: only when both are present.
        let with_bodies = params.particle_body_contacts != 0;
        let slots = if with_bodies { n * PARTICLE_BODY_SLOTS } else { 0 };
        params.particle_body_starts = region(if with_bodies { bodies + 1 } else { 0 });
        params.particle_body_list = region(params.particle_body_capacity);
        params.particle_slot_counts = region(if with_bodies { n } else { 0 });
        params.particle_slot_bodies = region(slots);
        params.particle_body_dropped = region(1);
        let body_scan_sums = region(if with_bodies { Scan::sums_needed(bodies) } else { 0 });
        params.particle_slot_data = 2 * n;
        Self { words: at, histogram, scan_sums, plan, body_scan_sums, scratch_vec4s: 2 * n as u64 + 3 * slots as u64 }
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
        body_buffers: &BodyBuffers,
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
        let work = make("particle_work", &vec![0u8; 4 * at.max(1) as usize], storage | wgpu::BufferUsages::COPY_SRC)?;
        let scratch = make("particle_scratch", &vec![0u8; 16 * arena.scratch_vec4s.max(1) as usize], storage)?;

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
                bytemuck::bytes_of(&ScanParams {
                    offset: params.particle_body_starts,
                    len: params.body_count,
                    sums: arena.body_scan_sums,
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
        let slots = [Slot::Uniform, ro, ro, rw, rw, rw, rw, ro];
        let layout = kernels::layout(device, "particle_bindings", &slots);
        let bind_group = kernels::bind(
            device,
            "particle_bindings",
            &layout,
            &slots,
            &[params_buffer, geometry, colliders, &buffer, &work, &scratch, body_buffers.bodies, body_buffers.props],
        );
        let pipeline = |entry: &str| kernels::pipeline(device, modules, &[&layout], "particles", entry);
        let bodies = (params.particle_body_contacts != 0).then(|| {
            let slots = [Slot::Uniform, ro, ro, rw, rw, ro, ro, ro, ro];
            let body_layout = kernels::layout(device, "particle_body_bindings", &slots);
            let bind_group = kernels::bind(
                device,
                "particle_body_bindings",
                &body_layout,
                &slots,
                &[
                    params_buffer,
                    geometry,
                    &buffer,
                    &work,
                    &scratch,
                    body_buffers.bodies,
                    body_buffers.props,
                    body_buffers.shapes,
                    body_buffers.topology,
                ],
            );
            let find = |entry: &str| kernels::pipeline(device, modules, &[&body_layout], "particle_bodies", entry);
            BodyStages {
                bind_group,
                count: find("body_particle_count"),
                fill: find("body_particle_fill"),
                solve: pipeline("body_particle_solve"),
                grid: dispatch_grid(params.body_count, WORKGROUP_SIZE),
                bodies: params.body_count,
                readback: device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some("particle_body_dropped_readback"),
                    size: 4,
                    usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                    mapped_at_creation: false,
                }),
            }
        });
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
            bodies,
            work,
            grid: dispatch_grid(n, WORKGROUP_SIZE),
            hash_grid: dispatch_grid(n.max(buckets), WORKGROUP_SIZE),
            count: n,
            collisions: params.particle_collisions != 0,
            iterations: params.particle_iterations,
        })
    }

    /// Dispatches one substep records.
    pub fn dispatches_per_substep(&self) -> u32 {
        let bodies = if self.bodies.is_some() { 2 + Scan::DISPATCHES + self.iterations } else { 0 };
        if self.collisions {
            1 + Radix::dispatches(self.radix_passes) + 2 + 4 * self.iterations + 1 + bodies
        } else {
            1
        }
    }

    /// Records the contacts of one substep (when on): the grid, the particle-body contacts, the
    /// Jacobi iterations. They run after the bodies' velocity solve, before their positions.
    pub fn record_contacts(&self, pass: &mut wgpu::ComputePass) {
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
            if let Some(b) = &self.bodies {
                let find = |pass: &mut wgpu::ComputePass, stage: &str, pipeline: &wgpu::ComputePipeline| {
                    pass.push_debug_group(stage);
                    pass.set_bind_group(0, &b.bind_group, &[]);
                    pass.set_pipeline(pipeline);
                    pass.dispatch_workgroups(b.grid.0, b.grid.1, 1);
                    pass.pop_debug_group();
                };
                find(pass, "body_particle_count", &b.count);
                self.scan.record(pass, &self.scan_group, 1, b.bodies);
                find(pass, "body_particle_fill", &b.fill);
            }
            run(pass, "particle_count", &self.count_neighbours, self.grid);
            for _ in 0..self.iterations {
                run(pass, "particle_separate", &self.separate, self.grid);
                run(pass, "particle_apply_position", &self.apply_position, self.grid);
            }
            for _ in 0..self.iterations {
                run(pass, "particle_collide", &self.collide, self.grid);
                if let Some(b) = &self.bodies {
                    run(pass, "body_particle_solve", &b.solve, b.grid);
                }
                run(pass, "particle_apply_velocity", &self.apply_velocity, self.grid);
            }
        }
    }

    /// Records `advance_particles`: the particles' motion over one substep.
    pub fn record_advance(&self, pass: &mut wgpu::ComputePass) {
        pass.push_debug_group("advance_particles");
        pass.set_bind_group(0, &self.bind_group, &[]);
        pass.set_pipeline(&self.advance);
        pass.dispatch_workgroups(self.grid.0, self.grid.1, 1);
        pass.pop_debug_group();
    }
}

impl GpuParticles {
    /// Records the copy of the dropped particle-body contact count into its readback buffer;
    /// `None` when particles do not meet bodies.
    pub fn record_dropped_copy(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        params: &StepParams,
    ) -> Option<&wgpu::Buffer> {
        let b = self.bodies.as_ref()?;
        encoder.copy_buffer_to_buffer(&self.work, 4 * params.particle_body_dropped as u64, &b.readback, 0, 4);
        Some(&b.readback)
    }
}
