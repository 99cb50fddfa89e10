//! The particle stages on the GPU (shaders/particles.wgsl, shaders/particle_contacts.wgsl): the
//! buffers, the grid's work arena with its radix sort, and the recording of a substep.

use wgpu::util::DeviceExt;

use super::kernels::{self, Radix, RadixParams, Scan, ScanParams, Slot};
use super::shaders::{RADIX_ALL, UNIFORM_SLOT, WORKGROUP_SIZE, dispatch_grid};
use super::timing::Marks;
use crate::error::Result;
use crate::layout::{GpuCollider, GpuParticle, GpuParticleContact, StepParams};
use crate::particles::{PARTICLE_BODY_SLOTS, PARTICLE_CONTACT_SLOTS};

/// The body buffers the particle stages read (and, for velocities, write).
pub(crate) struct BodyBuffers<'a> {
    pub bodies: &'a wgpu::Buffer,
    pub props: &'a wgpu::Buffer,
    pub shapes: &'a wgpu::Buffer,
    pub topology: &'a wgpu::Buffer,
    /// Whether any body's restitution is above zero (its particle contacts can bounce).
    pub bounce: bool,
}

/// Everything the particle stages need.
pub(crate) struct GpuParticles {
    pub buffer: wgpu::Buffer,
    /// The kept contacts, [`PARTICLE_CONTACT_SLOTS`] for each of `kept` particles.
    pub contacts: wgpu::Buffer,
    /// Particles with kept contacts (see `ParticleArena::kept`).
    pub kept: u32,
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
    warm_start: wgpu::ComputePipeline,
    collide: wgpu::ComputePipeline,
    apply_velocity: wgpu::ComputePipeline,
    /// The restitution pass over particle pairs and its application (when `bounces`).
    restitution: wgpu::ComputePipeline,
    apply_restitution: wgpu::ComputePipeline,
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
    /// Whether particles bounce off each other (restitution above zero): the restitution pass
    /// runs, over particle pairs and, when `bodies` bounce, over particle-body contacts.
    bounces: bool,
}

/// The particle-body stages: `particle_speed_bound`, `body_particle_count`, the scan of the
/// counts, `body_particle_fill`, `particle_body_settle` (shaders/particle_bodies.wgsl), per
/// velocity iteration `body_particle_solve`, and
/// `body_particle_restitution` when contacts with bodies can bounce.
struct BodyStages {
    bind_group: wgpu::BindGroup,
    speed: wgpu::ComputePipeline,
    count: wgpu::ComputePipeline,
    fill: wgpu::ComputePipeline,
    settle: wgpu::ComputePipeline,
    solve: wgpu::ComputePipeline,
    restitution: wgpu::ComputePipeline,
    /// Whether the particles' or any body's restitution is above zero.
    bounces: bool,
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
    /// Where the colliders' records start (`StepParams::particle_colliders`) and how many.
    colliders: (u32, u32),
    /// Particles with kept contacts: all of them when particles meet each other, else none.
    kept: u32,
    /// Vec4s of the particles' position and velocity changes, two per particle, and of their
    /// velocities at the start of the substep, one more when they bounce off each other.
    delta_vec4s: u64,
    /// Vec4s of the particle-body slots: three per slot (normal, lever, impulse).
    slot_vec4s: u64,
}

impl ParticleArena {
    /// Lays out the arena for `n` particles and writes its offsets into `params` (before the
    /// caller uploads them): items and their sort scratch, the radix histogram and scan sums,
    /// the bucket starts, the neighbour counts, the particle-body regions and the colliders.
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
        // Kept contacts only when particles meet each other.
        let kept = if params.particle_collisions != 0 { n } else { 0 };
        params.particle_selected = region(kept * PARTICLE_CONTACT_SLOTS);
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
        params.particle_slot_wanted = region(slots);
        params.particle_body_dropped = region(1);
        params.particle_speed_bound = region(1);
        let body_scan_sums = region(if with_bodies { Scan::sums_needed(bodies) } else { 0 });
        let collider_words = (size_of::<GpuCollider>() / 4) as u32;
        params.particle_colliders = region(collider_words * params.collider_count);
        Self {
            words: at,
            histogram,
            scan_sums,
            plan,
            body_scan_sums,
            colliders: (params.particle_colliders, params.collider_count),
            kept,
            delta_vec4s: if params.particle_restitution > 0.0 { 3 } else { 2 } * n as u64,
            slot_vec4s: 3 * slots as u64,
        }
    }
}

impl ParticleArena {
    /// Bytes of each particle buffer for `n` particles: the particles, the work arena, the
    /// position and velocity changes, the particle-body slots, the kept contacts (each at least
    /// one element).
    pub fn buffer_bytes(&self, n: u32) -> [(&'static str, u64); 5] {
        [
            ("particles", size_of::<GpuParticle>() as u64 * n.max(1) as u64),
            ("particle_work", 4 * self.words.max(1) as u64),
            ("particle_deltas", 16 * self.delta_vec4s.max(1)),
            ("particle_body_slots", 16 * self.slot_vec4s.max(1)),
            ("particle_contacts", self.contact_bytes()),
        ]
    }

    /// Bytes of the kept contacts (at least one element).
    fn contact_bytes(&self) -> u64 {
        (size_of::<GpuParticleContact>() as u64 * PARTICLE_CONTACT_SLOTS as u64 * self.kept as u64).max(16)
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
        colliders: &[GpuCollider],
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
        for (label, bytes) in arena.buffer_bytes(n) {
            super::solver::storage_fits(limits, label, bytes)?;
        }
        let buffer = make("particles", bytemuck::cast_slice(particles), storage | copy)?;
        // The work arena starts zeroed but for the colliders' records.
        let mut arena_words = vec![0u32; at.max(1) as usize];
        let (first, count) = arena.colliders;
        let records: &[u32] = bytemuck::cast_slice(&colliders[..count as usize]);
        arena_words[first as usize..][..records.len()].copy_from_slice(records);
        let work = make("particle_work", bytemuck::cast_slice(&arena_words), storage | wgpu::BufferUsages::COPY_SRC)?;
        let contacts = make("particle_contacts", &vec![0u8; arena.contact_bytes() as usize], storage | copy)?;
        let deltas = make("particle_deltas", &vec![0u8; 16 * arena.delta_vec4s.max(1) as usize], storage)?;
        let slots = make("particle_body_slots", &vec![0u8; 16 * arena.slot_vec4s.max(1) as usize], storage)?;

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
        let kinds = [Slot::Uniform, ro, rw, rw, rw, rw, rw, ro, rw];
        let layout = kernels::layout(device, "particle_bindings", &kinds);
        let bind_group = kernels::bind(
            device,
            "particle_bindings",
            &layout,
            &kinds,
            &[
                params_buffer,
                geometry,
                &contacts,
                &buffer,
                &work,
                &slots,
                body_buffers.bodies,
                body_buffers.props,
                &deltas,
            ],
        );
        let pipeline = |entry: &str| kernels::pipeline(device, modules, &[&layout], "particles", entry);
        let bodies = (params.particle_body_contacts != 0).then(|| {
            let kinds = [Slot::Uniform, ro, ro, rw, rw, ro, ro, ro, ro];
            let body_layout = kernels::layout(device, "particle_body_bindings", &kinds);
            let bind_group = kernels::bind(
                device,
                "particle_body_bindings",
                &body_layout,
                &kinds,
                &[
                    params_buffer,
                    geometry,
                    &buffer,
                    &work,
                    &slots,
                    body_buffers.bodies,
                    body_buffers.props,
                    body_buffers.shapes,
                    body_buffers.topology,
                ],
            );
            let find = |entry: &str| kernels::pipeline(device, modules, &[&body_layout], "particle_bodies", entry);
            BodyStages {
                bind_group,
                speed: find("particle_speed_bound"),
                count: find("body_particle_count"),
                fill: find("body_particle_fill"),
                settle: find("particle_body_settle"),
                solve: pipeline("body_particle_solve"),
                restitution: pipeline("body_particle_restitution"),
                bounces: params.particle_restitution > 0.0 || body_buffers.bounce,
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
            contacts,
            kept: arena.kept,
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
            warm_start: pipeline("particle_warm_start"),
            collide: pipeline("particle_collide"),
            apply_velocity: pipeline("particle_apply_velocity"),
            restitution: pipeline("particle_restitution"),
            apply_restitution: pipeline("particle_apply_restitution"),
            advance: pipeline("advance_particles"),
            bodies,
            work,
            grid: dispatch_grid(n, WORKGROUP_SIZE),
            hash_grid: dispatch_grid(n.max(buckets), WORKGROUP_SIZE),
            count: n,
            collisions: params.particle_collisions != 0,
            iterations: params.particle_iterations,
            bounces: params.particle_restitution > 0.0,
        })
    }

    /// Dispatches one substep records.
    pub fn dispatches_per_substep(&self) -> u32 {
        // The speed bound, the count, the fill, the settle, the scan, and a solve per iteration.
        let bodies = self.bodies.as_ref().map_or(0, |b| 4 + self.scan.dispatches(b.bodies) + self.iterations);
        if self.collisions {
            // The pairs' pass, the bodies' pass, and their application.
            let bodies_bounce = self.bodies.as_ref().is_some_and(|b| b.bounces);
            let restitution =
                u32::from(self.bounces) + u32::from(bodies_bounce) + u32::from(self.bounces || bodies_bounce);
            // The hash, the sort, the bucket starts and counts, the position iterations, the
            // warm start and its application, the velocity iterations, the motion.
            let iterations = 2 * self.iterations + 2 + 2 * self.iterations;
            1 + Radix::dispatches(self.radix_passes, self.count, &self.scan) + 2 + iterations + 1 + bodies + restitution
        } else {
            1
        }
    }

    /// Records the contacts of one substep (when on): the grid, the particle-body contacts, the
    /// Jacobi iterations. They run after the bodies' velocity solve, before their positions.
    pub fn record_contacts(&self, pass: &mut wgpu::ComputePass, marks: &mut Marks) {
        // One dispatch with the particles' bind group (`with`: another's).
        let with = |group: &wgpu::BindGroup,
                    pass: &mut wgpu::ComputePass,
                    marks: &mut Marks,
                    stage: &'static str,
                    pipeline: &wgpu::ComputePipeline,
                    grid: (u32, u32)| {
            marks.dispatch(pass, stage);
            pass.push_debug_group(stage);
            pass.set_bind_group(0, group, &[]);
            pass.set_pipeline(pipeline);
            pass.dispatch_workgroups(grid.0, grid.1, 1);
            pass.pop_debug_group();
        };
        let run = |pass: &mut wgpu::ComputePass, marks: &mut Marks, stage, pipeline, grid| {
            with(&self.bind_group, pass, marks, stage, pipeline, grid)
        };
        if self.collisions {
            run(pass, marks, "particle_hash", &self.hash, self.hash_grid);
            let scan = (&self.scan, &self.scan_group, 0);
            self.radix.record(pass, marks, "particle_sort", &self.radix_group, 0, self.radix_passes, self.count, scan);
            run(pass, marks, "particle_cell_start", &self.cell_start, self.grid);
            if let Some(b) = &self.bodies {
                let find = |pass: &mut wgpu::ComputePass, marks: &mut Marks, stage, pipeline, grid| {
                    with(&b.bind_group, pass, marks, stage, pipeline, grid)
                };
                find(pass, marks, "particle_speed_bound", &b.speed, self.grid);
                find(pass, marks, "body_particle_count", &b.count, b.grid);

                self.scan.record(pass, marks, "scan_body_particles", &self.scan_group, 1, b.bodies);
                find(pass, marks, "body_particle_fill", &b.fill, b.grid);
                find(pass, marks, "particle_body_settle", &b.settle, self.grid);
            }
            run(pass, marks, "particle_count", &self.count_neighbours, self.grid);
            for _ in 0..self.iterations {
                run(pass, marks, "particle_separate", &self.separate, self.grid);
                run(pass, marks, "particle_apply_position", &self.apply_position, self.grid);
            }
            run(pass, marks, "particle_warm_start", &self.warm_start, self.grid);
            run(pass, marks, "particle_apply_velocity", &self.apply_velocity, self.grid);
            for _ in 0..self.iterations {
                run(pass, marks, "particle_collide", &self.collide, self.grid);
                if let Some(b) = &self.bodies {
                    run(pass, marks, "body_particle_solve", &b.solve, b.grid);
                }
                run(pass, marks, "particle_apply_velocity", &self.apply_velocity, self.grid);
            }
            let bodies_bounce = self.bodies.as_ref().filter(|b| b.bounces);
            if self.bounces || bodies_bounce.is_some() {
                if self.bounces {
                    run(pass, marks, "particle_restitution", &self.restitution, self.grid);
                }
                if let Some(b) = bodies_bounce {
                    run(pass, marks, "body_particle_restitution", &b.restitution, b.grid);
                }
                run(pass, marks, "particle_apply_restitution", &self.apply_restitution, self.grid);
            }
        }
    }

    /// Records `advance_particles`: the particles' motion over one substep.
    pub fn record_advance(&self, pass: &mut wgpu::ComputePass, marks: &mut Marks) {
        marks.dispatch(pass, "advance_particles");
        pass.push_debug_group("advance_particles");
        pass.set_bind_group(0, &self.bind_group, &[]);
        pass.set_pipeline(&self.advance);
        pass.dispatch_workgroups(self.grid.0, self.grid.1, 1);
        pass.pop_debug_group();
    }
}

impl GpuParticles {
    /// `count` words of the work arena from word `offset`, read back (waits for the GPU).
    pub fn read_words(&self, device: &wgpu::Device, queue: &wgpu::Queue, offset: u32, count: u32) -> Result<Vec<u32>> {
        super::solver::read_words(device, queue, &self.work, "particle_work_readback", offset, count)
    }

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Error;

    /// The particle buffers for `n` particles among `bodies` bodies, laid out as a world's, the
    /// particles meeting each other or (`collisions` false) only the colliders.
    fn layout_with(n: u32, bodies: u32, collisions: bool) -> [(&'static str, u64); 5] {
        let mut params = StepParams {
            particle_collisions: u32::from(collisions),
            particle_hash_mask: n.max(64).next_power_of_two() - 1,
            particle_body_contacts: u32::from(bodies > 0),
            particle_body_capacity: if bodies > 0 { n * PARTICLE_BODY_SLOTS } else { 0 },
            body_count: bodies,
            ..StepParams::default()
        };
        ParticleArena::new(&mut params, n, bodies).buffer_bytes(n)
    }

    fn layout(n: u32, bodies: u32) -> [(&'static str, u64); 5] {
        layout_with(n, bodies, true)
    }

    /// 10 million particles among 10,000 bodies: every buffer fits the 2 GiB - 1 binding that
    /// wgpu allows on every backend, 5.8 GB in all (an 80 GB GPU holds it thirteen times
    /// over), 3.3 GB without bodies; 12 million do not, and get a typed error naming the
    /// buffer. Particles that only meet the colliders keep no contacts.
    #[test]
    fn ten_million_particles_with_bodies_fit_one_binding_per_buffer() {
        let limits = wgpu::Limits {
            max_storage_buffer_binding_size: (1 << 31) - 1,
            max_buffer_size: 1 << 40,
            ..wgpu::Limits::default()
        };
        let sizes = layout(10_000_000, 10_000);
        let total: u64 = sizes.iter().map(|(_, bytes)| bytes).sum();
        eprintln!("10 million particles: {sizes:?}, {total} bytes in all");
        for (label, bytes) in sizes {
            super::super::solver::storage_fits(&limits, label, bytes).unwrap();
        }
        assert!(total < 5_800_000_000, "{total} bytes");
        let without_bodies: u64 = layout(10_000_000, 0).iter().map(|(_, bytes)| bytes).sum();
        let alone: u64 = layout_with(10_000_000, 0, false).iter().map(|(_, bytes)| bytes).sum();
        eprintln!("without bodies: {without_bodies} bytes; meeting only the colliders: {alone} bytes");
        assert!(without_bodies < 3_400_000_000, "{without_bodies} bytes without bodies");
        assert!(alone < 1_000_000_000, "{alone} bytes for particles that meet only the colliders");

        let too_many = layout(12_000_000, 10_000);
        let failed =
            too_many.iter().find_map(|&(label, bytes)| super::super::solver::storage_fits(&limits, label, bytes).err());
        assert!(matches!(failed, Some(Error::BufferTooLarge { what: "particle_body_slots", .. })), "{failed:?}");
    }
}
