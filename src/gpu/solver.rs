//! The GPU solver: buffers, pipelines and the recording of a step.

use std::sync::mpsc;

use bytemuck::Pod;
use glam::Vec3;
use wgpu::util::DeviceExt;

use super::contacts::{GpuContacts, Pass as ContactPass, Shared};
use super::joints::{GpuJoints, JointBindings};
use super::kernels::{self, Slot};
use super::particles::{BodyBuffers, GpuParticles, ParticleArena};
use super::shaders::{STATS_WORKGROUP_SIZE, WORKGROUP_SIZE, dispatch_grid};
use super::timing::{DispatchTime, Marks, Stage, StageClock};
use super::{AdapterSummary, GpuContext};
use crate::body::{BodyHandle, BodyState};
use crate::error::{Error, Result, check_finite};
use crate::layout::{
    BodyFrame, GpuBody, GpuBodyProps, GpuSolverBody, GpuStaticContact, GpuStats, KIND_STATIC, Packed, StepParams,
};
use crate::snapshot::{PendingImpulse, Snapshot};
use crate::solver::{Solver, StageTimes, StepStats};
use crate::world::World;

/// The compute pipelines of one step, one per WGSL entry point.
struct Pipelines {
    narrow_phase: wgpu::ComputePipeline,
    integrate_velocities: wgpu::ComputePipeline,
    solve_static: wgpu::ComputePipeline,
    integrate_positions: wgpu::ComputePipeline,
    relax_static: wgpu::ComputePipeline,
    restitution: wgpu::ComputePipeline,
    stats_partial: wgpu::ComputePipeline,
    stats_final: wgpu::ComputePipeline,
}

/// Steps a [`World`] on the GPU. Bodies, contacts and all solver state live in GPU buffers;
/// a step records compute dispatches and never waits for the GPU; only [`Solver::body_states`]
/// and [`Solver::stats`] read back, on request.
pub struct GpuSolver {
    device: wgpu::Device,
    queue: wgpu::Queue,
    adapter: AdapterSummary,
    params: StepParams,
    frames: Vec<BodyFrame>,
    kinds: Vec<u32>,
    bodies: wgpu::Buffer,
    stats: wgpu::Buffer,
    /// The buffers of the per-body bind group, kept to rebuild it when the stats buffer grows
    /// (in the order of [`body_slots`]).
    body_buffers: [wgpu::Buffer; 9],
    /// The bodies' properties (with the forces and groups the program set) and shapes and the
    /// static colliders, for ray casts and snapshots.
    ray_tables: crate::query::RayTables,
    /// The impulses applied since the last step, summed per body.
    pending_impulses: crate::layout::PendingImpulses,
    /// The stage that applies them, made at the first.
    impulses: Option<super::impulses::GpuImpulses>,
    /// Where each body's static contact slots are in `body_buffers[STATIC_CONTACTS]`.
    slot_ranges: Vec<crate::layout::SlotRange>,
    /// How many static contact slots there are.
    slot_count: u32,
    body_layout: wgpu::BindGroupLayout,
    topology: wgpu::Buffer,
    modules: Vec<(&'static str, wgpu::ShaderModule)>,
    contacts_stages: Option<GpuContacts>,
    particles: Option<GpuParticles>,
    joints: Option<GpuJoints>,
    /// The broad phase's grid.
    grid: crate::cpu::contacts::GridSpec,
    bodies_readback: wgpu::Buffer,
    body_readback: wgpu::Buffer,
    stats_readback: wgpu::Buffer,
    bind_group: wgpu::BindGroup,
    pipelines: Pipelines,
    body_grid: (u32, u32),
    stats_grid: (u32, u32),
    steps: u64,
    /// Timestamps between the stage groups, when [`GpuSolver::time_stages`] turned them on.
    clock: Option<StageClock>,
    /// Whether a step records its restitution passes ([`crate::World::bodies_can_bounce`]).
    bounces: bool,
    /// The threads of the one workgroup that runs each sweep, when the sweeps are fused
    /// ([`crate::SolverSettings::gpu_fused_sweeps`]).
    fused_size: Option<u32>,
    /// Whether each substep is one workgroup's dispatch (`GpuContacts::record_substep`): with
    /// the fused sweeps, in a world of bodies and contacts alone (no joints, static colliders
    /// or particles, nothing that can bounce), whose substep is then the contacts' alone.
    fused_substep: bool,
    /// What [`Solver::steps_taken`] adds to `steps`, which counts the steps this solver recorded
    /// (its parity picks the manifold buffers): a restored snapshot's count less `steps` then.
    step_offset: u64,
    /// A restored snapshot's `[colors, overflow, recycled]`, which the statistics give until the
    /// next step.
    restored_coloring: Option<[u32; 3]>,
}

/// The step's parameters as their uniform buffer holds them (encased).
fn uniform_bytes(params: &StepParams) -> Vec<u8> {
    let mut uniform = encase::UniformBuffer::new(Vec::new());
    uniform.write(params).expect("StepParams fits a uniform buffer");
    uniform.into_inner()
}

/// Where the step's parameters are among the bindings of [`body_slots`].
const PARAMS: usize = 0;
/// Where the bodies are among the bindings of [`body_slots`].
const BODIES: usize = 1;
/// Where the bodies' properties are among the bindings of [`body_slots`].
const PROPS: usize = 2;
/// Where the bodies' step scratch is among the bindings of [`body_slots`].
const SOLVER_BODIES: usize = 6;
/// Where the static contact slots are among the bindings of [`body_slots`].
const STATIC_CONTACTS: usize = 7;

/// The bindings of `shaders/bind_bodies.wgsl`: the step parameters, then (bodies, props, shapes,
/// geometry, colliders, solver_bodies, contacts, stats).
fn body_slots() -> [Slot; 9] {
    let (rw, ro) = (Slot::Storage(false), Slot::Storage(true));
    [Slot::Uniform, rw, ro, ro, ro, ro, rw, rw, rw]
}

impl GpuSolver {
    /// Uploads `world` and builds the pipelines.
    ///
    /// # Errors
    /// [`Error::BufferTooLarge`] when a buffer the scene needs exceeds the device's limits,
    /// [`Error::DeviceLimit`] when the device cannot run the kernels at all,
    /// [`Error::OutOfMemory`] when the device has not the memory for the buffers.
    pub fn new(ctx: &GpuContext, world: &World) -> Result<Self> {
        let scope = ctx.device().push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let made = Self::make(ctx, world);
        if let Some(e) = pollster::block_on(scope.pop()) {
            return Err(Error::OutOfMemory { what: "the solver's buffers", details: e.to_string() });
        }
        made
    }

    /// [`Self::new`], within its error scope.
    fn make(ctx: &GpuContext, world: &World) -> Result<Self> {
        let device = ctx.device().clone();
        let queue = ctx.queue().clone();
        let mut packed = Packed::new(world);
        let limits = device.limits();
        check_kernel_limits(&limits)?;

        let stats_groups = packed.bodies.len().div_ceil(STATS_WORKGROUP_SIZE as usize).max(1);
        let make = |label: &'static str, bytes: &[u8], usage: wgpu::BufferUsages| -> Result<wgpu::Buffer> {
            storage_fits(&limits, label, bytes.len() as u64)?;
            Ok(device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some(label),
                contents: bytes,
                usage,
            }))
        };
        let storage = wgpu::BufferUsages::STORAGE;
        let copy = wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST;
        let bodies = make("bodies", non_empty(&packed.bodies), storage | copy)?;
        let props = make("props", non_empty(&packed.props), storage | wgpu::BufferUsages::COPY_DST)?;
        let shapes = make("shapes", non_empty(&packed.shapes), storage)?;
        let geometry = make("geometry", non_empty(&packed.geometry), storage)?;
        let colliders = make("colliders", non_empty(&packed.colliders), storage)?;
        // (Read and written by snapshots.)
        let solver_bodies =
            make("solver_bodies", non_empty(&vec![GpuSolverBody::at_rest(); packed.bodies.len()]), storage | copy)?;
        // (Written by a restored snapshot, as are the contact slots.)
        let topology = make("topology", non_empty(&packed.topology), storage | wgpu::BufferUsages::COPY_DST)?;
        let contacts = make(
            "contacts",
            non_empty(&vec![GpuStaticContact::default(); packed.slot_count as usize]),
            storage | copy,
        )?;
        let stats = make("stats", bytemuck::cast_slice(&vec![GpuStats::default(); stats_groups]), storage | copy)?;

        // The particle grid's arena offsets go into the parameters before they are uploaded.
        let particle_arena = (!packed.particles.is_empty())
            .then(|| ParticleArena::new(&mut packed.params, packed.particles.len() as u32, packed.bodies.len() as u32));
        let params_buffer = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("params"),
            contents: &uniform_bytes(&packed.params),
            // (Written again when the program sets the gravity.)
            usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
        });

        let readback = |label, size| {
            device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size,
                usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            })
        };
        let bodies_readback = readback("bodies_readback", bodies.size());
        let body_readback = readback("body_readback", size_of::<GpuBody>() as u64);
        let stats_readback = readback("stats_readback", size_of::<GpuStats>() as u64);

        let slots = body_slots();
        let layout = kernels::layout(&device, "step_bindings", &slots);
        let buffers =
            [&params_buffer, &bodies, &props, &shapes, &geometry, &colliders, &solver_bodies, &contacts, &stats];
        let bind_group = kernels::bind(&device, "step_bindings", &layout, &slots, &buffers);
        let modules = kernels::modules(&device);
        let pipeline = |file: &str, entry: &str| kernels::pipeline(&device, &modules, &[&layout], file, entry);
        let body_buffers = buffers.map(|b| b.clone());
        let pipelines = Pipelines {
            narrow_phase: pipeline("narrow_phase", "narrow_phase"),
            integrate_velocities: pipeline("integrate_velocities", "integrate_velocities"),
            solve_static: pipeline("solve_static", "solve_static"),
            integrate_positions: pipeline("integrate_positions", "integrate_positions"),
            relax_static: pipeline("solve_static", "relax_static"),
            restitution: pipeline("solve_static", "restitution"),
            stats_partial: pipeline("stats", "stats_partial"),
            stats_final: pipeline("stats", "stats_final"),
        };

        let particles = match particle_arena {
            Some(arena) => Some(GpuParticles::new(
                &device,
                &limits,
                &modules,
                &packed.params,
                &arena,
                &packed.particles,
                &params_buffer,
                &geometry,
                &packed.colliders,
                &BodyBuffers {
                    bodies: &bodies,
                    props: &props,
                    shapes: &shapes,
                    topology: &topology,
                    bounce: packed.props.iter().any(|p| p.restitution > 0.0),
                },
            )?),
            None => None,
        };

        let fused_size =
            world.desc().solver.gpu_fused_sweeps.then(|| super::contacts::fused_size(&limits, &ctx.adapter().backend));
        let joints = GpuJoints::new(
            &device,
            &limits,
            &modules,
            &packed.joints,
            &packed.joint_breaks,
            (&packed.joint_colors, &packed.joint_order),
            &JointBindings {
                params: &params_buffer,
                bodies: &bodies,
                solver_bodies: &solver_bodies,
                topology: &topology,
            },
            fused_size,
        )?;

        let body_count = packed.bodies.len() as u32;
        let body_contacts = packed.params.body_contacts != 0 && body_count > 1;
        let mut solver = Self {
            adapter: ctx.adapter().clone(),
            params: packed.params,
            kinds: packed.props.iter().map(|p: &GpuBodyProps| p.kind).collect(),
            slot_ranges: crate::layout::SlotRange::of(&packed.props, &packed.shapes),
            pending_impulses: Default::default(),
            ray_tables: crate::query::RayTables {
                props: packed.props.clone(),
                shapes: packed.shapes.clone(),
                geometry: packed.geometry.clone(),
                colliders: packed.colliders.clone(),
                plane_count: packed.params.plane_count,
            },
            impulses: None,
            slot_count: packed.slot_count,
            frames: packed.frames,
            body_grid: dispatch_grid(body_count, WORKGROUP_SIZE),
            stats_grid: dispatch_grid(body_count, STATS_WORKGROUP_SIZE),
            device,
            queue,
            bodies,
            stats,
            body_buffers,
            body_layout: layout,
            topology,
            modules,
            contacts_stages: None,
            particles,
            joints,
            grid: crate::cpu::contacts::GridSpec::new(
                &packed.props,
                &packed.shapes,
                &packed.geometry,
                packed.params.speculative_distance,
            ),
            bodies_readback,
            body_readback,
            stats_readback,
            bind_group,
            pipelines,
            steps: 0,
            clock: None,
            bounces: world.bodies_can_bounce(),
            fused_substep: fused_size.is_some()
                && packed.params.collider_count == 0
                && packed.joints.is_empty()
                && world.particle_count() == 0
                && !world.bodies_can_bounce(),
            fused_size,
            step_offset: 0,
            restored_coloring: None,
        };
        if body_contacts {
            // Room for `gpu_contacts_per_body` pairs and manifolds a body, as far as the device's
            // bindings allow; grown when a step fills three quarters of it.
            let capacity = world.desc.solver.gpu_contacts_per_body.saturating_mul(body_count).max(1024);
            let capacity = capacity.min(contact_capacity_limit(&solver.device.limits()));
            solver.build_contacts(capacity, capacity)?;
        }
        Ok(solver)
    }

    /// (Re)builds the contact stages with the given capacities, the statistics buffer to match,
    /// and the per-body bind group that binds it. Returns the stages replaced, if any, whose
    /// state the caller carries over (`GpuContacts::record_carry`).
    fn build_contacts(&mut self, pair_capacity: u32, manifold_capacity: u32) -> Result<Option<GpuContacts>> {
        // The buffers come to gigabytes in large scenes: running out of memory is an error here,
        // not wgpu's default panic, and a step that could not grow keeps the buffers it had.
        // The scope's errors are known on the CPU when it is popped (its future is ready at
        // once): nothing here waits for the GPU, also when a step grows the buffers.
        let scope = self.device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let built = self.make_contacts(pair_capacity, manifold_capacity);
        if let Some(e) = pollster::block_on(scope.pop()) {
            return Err(Error::OutOfMemory { what: "the contact buffers", details: e.to_string() });
        }
        let (stats, contacts) = built?;
        self.body_buffers[8] = stats.clone();
        let refs: Vec<&wgpu::Buffer> = self.body_buffers.iter().collect();
        self.bind_group = kernels::bind(&self.device, "step_bindings", &self.body_layout, &body_slots(), &refs);
        self.stats = stats;
        Ok(self.contacts_stages.replace(contacts))
    }

    /// The statistics buffer and the contact stages for [`Self::build_contacts`].
    fn make_contacts(&self, pair_capacity: u32, manifold_capacity: u32) -> Result<(wgpu::Buffer, GpuContacts)> {
        let limits = self.device.limits();
        let groups =
            self.params.body_count.div_ceil(STATS_WORKGROUP_SIZE).max(1) + GpuContacts::stats_groups(manifold_capacity);
        let stats = self.device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("stats"),
            contents: bytemuck::cast_slice(&vec![GpuStats::default(); groups as usize]),
            usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
        });
        let b = &self.body_buffers;
        let shared = Shared {
            params: &b[0],
            bodies: &b[1],
            props: &b[2],
            shapes: &b[3],
            geometry: &b[4],
            topology: &self.topology,
            solver_bodies: &b[6],
            stats: &stats,
        };
        let mut contacts = GpuContacts::new(
            &self.device,
            &self.modules,
            &limits,
            &self.params,
            &shared,
            &self.grid,
            pair_capacity,
            manifold_capacity,
            self.fused_size,
            self.fused_substep,
        )?;
        contacts.bounces = self.bounces;
        Ok((stats, contacts))
    }

    /// Grows the contact buffers when the last step read back filled more than three quarters
    /// of them, carrying the state the next step reads over into the new ones, so that the
    /// results are those of buffers large enough from the start. The header is looked at
    /// without waiting, so a step or more may pass before it has arrived: a scene whose
    /// contacts grow by more than a third of what they were within that time overflows, and
    /// what did not fit is reported as dropped in the statistics.
    fn grow_contacts(&mut self) -> Result<()> {
        let Some(contacts) = self.contacts_stages.as_mut() else { return Ok(()) };
        let _ = self.device.poll(wgpu::PollType::Poll);
        let Some((pairs, manifolds)) = contacts.poll_header() else { return Ok(()) };
        let layout = contacts.layout;
        contacts.dropped =
            pairs.saturating_sub(layout.pair_capacity).max(manifolds.saturating_sub(layout.manifold_capacity));
        let limit = contact_capacity_limit(&self.device.limits());
        let (pair_capacity, manifold_capacity) = (
            grown_capacity(pairs, layout.pair_capacity, limit),
            grown_capacity(manifolds, layout.manifold_capacity, limit),
        );
        if contacts.dropped > 0
            && pair_capacity == layout.pair_capacity
            && manifold_capacity == layout.manifold_capacity
        {
            // At the device's limit: the steps go on without what did not fit, and say so in
            // `StepStats::dropped`.
            if !contacts.at_limit_warned {
                contacts.at_limit_warned = true;
                log::warn!(
                    "{} contacts dropped: the contact buffers hold at most {limit} pairs and manifolds on this device",
                    contacts.dropped
                );
            }
        } else if pair_capacity > layout.pair_capacity || manifold_capacity > layout.manifold_capacity {
            let dropped = contacts.dropped;
            let previous = self.last_parity();
            let old = self.build_contacts(pair_capacity, manifold_capacity)?;
            if let (Some(old), Some(new)) = (old, self.contacts_stages.as_mut()) {
                new.dropped = dropped;
                let mut encoder = self
                    .device
                    .create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("carry_contacts") });
                old.record_carry(&mut encoder, new, previous);
                self.queue.submit([encoder.finish()]);
            }
        }
        Ok(())
    }

    /// Turns stage timing on or off. When on, the last step of every [`Solver::step_many`] (and
    /// every [`Solver::step`]) writes a GPU timestamp wherever one group of stages hands over to
    /// the next; after [`Solver::synchronize`], [`Solver::stage_times`] gives that step's time by
    /// group. Timing changes no result. The timestamps are read back without waiting: while one
    /// step's are being read, the next batch is not timed.
    ///
    /// # Errors
    /// [`Error::Unsupported`] when the device was created without timestamp queries inside
    /// compute passes ([`GpuContext::timestamps`]).
    pub fn time_stages(&mut self, on: bool) -> Result<()> {
        if !on {
            self.clock = None;
            return Ok(());
        }
        if !self.device.features().contains(super::timing::FEATURES) {
            return Err(Error::Unsupported {
                backend: "this device",
                feature: "timestamp queries inside compute passes (stage timing)",
            });
        }
        if self.clock.is_none() {
            // A mark at most where a group changes: 6 around the substeps, 6 in each.
            self.clock = Some(StageClock::new(&self.device, &self.queue, self.stage_marks(), false));
        }
        Ok(())
    }

    /// Timestamps a step writes at most where one group of stages hands over to the next: 6
    /// around the substeps, 6 in each.
    fn stage_marks(&self) -> u32 {
        8 + 6 * self.params.substeps
    }

    /// Turns dispatch profiling on or off (stage timing stays on; see [`Self::time_stages`],
    /// which this turns on). With it, each timed step also writes a timestamp before every
    /// dispatch, and after [`Solver::synchronize`], [`Self::dispatch_profile`] gives that
    /// step's time by kind of dispatch. The results do not change, but the timestamps between
    /// dispatches can make a step take longer: compare [`Solver::stage_times`] with profiling
    /// on and off. A step is profiled up to the query set's 4,096 timestamps (far more than
    /// the standard scenes' few hundred dispatches).
    ///
    /// # Errors
    /// As [`Self::time_stages`].
    pub fn profile_dispatches(&mut self, on: bool) -> Result<()> {
        self.time_stages(true)?;
        if self.clock.as_ref().is_some_and(|c| c.profiles() != on) {
            let capacity = self.stage_marks() + if on { self.dispatches_per_step() } else { 0 };
            if capacity > wgpu::QUERY_SET_MAX_QUERIES {
                log::warn!(
                    "a step records {capacity} timestamps with dispatch profiling, more than a query set holds \
                     ({}): its profile and stage times stop short of the step's end",
                    wgpu::QUERY_SET_MAX_QUERIES
                );
            }
            self.clock = Some(StageClock::new(&self.device, &self.queue, capacity, on));
        }
        Ok(())
    }

    /// The GPU time of the last timed step by kind of dispatch, in the order each kind first
    /// ran, when [`Self::profile_dispatches`] is on and a profiled step has been read (after
    /// [`Solver::synchronize`]). The times sum to [`Solver::stage_times`]' total of that step.
    pub fn dispatch_profile(&self) -> Option<&[DispatchTime]> {
        self.clock.as_ref().and_then(StageClock::last_profile)
    }

    /// The adapter this solver runs on.
    pub fn adapter(&self) -> &AdapterSummary {
        &self.adapter
    }

    /// The broad phase's candidate pairs `(a, b)`, `a < b`, of the last step, sorted, read back
    /// (for tests and debugging; empty without body contacts).
    pub fn candidate_pairs(&mut self) -> Result<Vec<[u32; 2]>> {
        match &self.contacts_stages {
            Some(c) => {
                let count = c.read_words(&self.device, &self.queue, 0, 1)?[0];
                let words = c.read_words(&self.device, &self.queue, c.layout.pairs, 2 * count)?;
                Ok(words.chunks_exact(2).map(|w| [w[0], w[1]]).collect())
            }
            None => Ok(Vec::new()),
        }
    }

    /// The pairs of the last step that a face kept a margin apart, with that face (A's, or B's
    /// with the top bit set), in pair order (read back; for tests and debugging). Twin of
    /// [`CpuSolver::separating_faces`](crate::CpuSolver::separating_faces).
    pub fn separating_faces(&mut self) -> Result<Vec<([u32; 2], u32)>> {
        match &self.contacts_stages {
            Some(c) => {
                let count = c.read_words(&self.device, &self.queue, 0, 1)?[0];
                let pairs = c.read_words(&self.device, &self.queue, c.layout.pairs, 2 * count)?;
                let faces = c.read_words(&self.device, &self.queue, c.layout.faces, count)?;
                Ok(pairs
                    .chunks_exact(2)
                    .zip(faces)
                    .filter(|&(_, face)| face != crate::collide::NO_FACE)
                    .map(|(w, face)| ([w[0], w[1]], face))
                    .collect())
            }
            None => Ok(Vec::new()),
        }
    }

    /// Each particle's body slots of the last substep, body indices ascending, read back (for
    /// tests and debugging; empty without particle-body contacts). Twin of
    /// [`CpuSolver::particle_body_slots`](crate::CpuSolver::particle_body_slots).
    pub fn particle_body_slots(&mut self) -> Result<Vec<Vec<u32>>> {
        let p = self.params;
        let Some(particles) = self.particles.as_ref().filter(|_| p.particle_body_contacts != 0 && self.steps > 0)
        else {
            return Ok(Vec::new());
        };
        let slots = crate::particles::PARTICLE_BODY_SLOTS;
        let counts = particles.read_words(&self.device, &self.queue, p.particle_slot_counts, p.particle_count)?;
        let bodies =
            particles.read_words(&self.device, &self.queue, p.particle_slot_bodies, p.particle_count * slots)?;
        Ok(counts
            .iter()
            .enumerate()
            .map(|(i, &count)| bodies[i * slots as usize..][..count.min(slots) as usize].to_vec())
            .collect())
    }

    /// Each body's particle contacts of the last substep, particle indices in the order the
    /// body solves them, read back (for tests and debugging; empty without particle-body
    /// contacts). Twin of [`CpuSolver::particle_body_lists`](crate::CpuSolver::particle_body_lists).
    pub fn particle_body_lists(&mut self) -> Result<Vec<Vec<u32>>> {
        let p = self.params;
        let Some(particles) = self.particles.as_ref().filter(|_| p.particle_body_contacts != 0 && self.steps > 0)
        else {
            return Ok(Vec::new());
        };
        let starts = particles.read_words(&self.device, &self.queue, p.particle_body_starts, p.body_count + 1)?;
        let total = starts[p.body_count as usize].min(p.particle_body_capacity);
        let list = particles.read_words(&self.device, &self.queue, p.particle_body_list, total)?;
        let end = |b: usize| (starts[b + 1]).min(total) as usize;
        Ok((0..p.body_count as usize).map(|b| list[(starts[b] as usize).min(end(b))..end(b)].to_vec()).collect())
    }

    /// Pairs and manifolds the contact buffers hold now, (0, 0) without body contacts. They
    /// start at [`SolverSettings::gpu_contacts_per_body`](crate::SolverSettings) a body and
    /// grow when a step fills three quarters of them.
    pub fn contact_capacity(&self) -> (u32, u32) {
        self.contacts_stages.as_ref().map_or((0, 0), |c| (c.layout.pair_capacity, c.layout.manifold_capacity))
    }

    /// The body-body manifolds of the last step, read back (empty without body contacts).
    pub fn manifolds(&mut self) -> Result<Vec<crate::layout::GpuManifold>> {
        match &self.contacts_stages {
            Some(c) => c.read_manifolds(&self.device, &self.queue, self.last_parity()),
            None => Ok(Vec::new()),
        }
    }

    /// What the last step's last preparation left for the manifold passes, per manifold of
    /// [`Self::manifolds`] and per body (read back; empty without body contacts, and when the
    /// passes compute those words themselves: `SolverSettings::gpu_prepared_passes` off).
    pub fn prepared(&mut self) -> Result<crate::layout::PreparedRecords> {
        match &self.contacts_stages {
            Some(c) => c.read_prepared(&self.device, &self.queue),
            None => Ok(Default::default()),
        }
    }

    /// The colors of the last step: for each color the manifold indices it holds, then the
    /// overflow solved by Jacobi (read back).
    pub fn color_buckets(&mut self) -> Result<(Vec<Vec<u32>>, Vec<u32>)> {
        match &self.contacts_stages {
            Some(c) => c.read_buckets(&self.device, &self.queue),
            None => Ok((vec![Vec::new(); self.params.max_colors as usize], Vec::new())),
        }
    }

    /// Compute dispatches recorded per step (mirrors `record_step`; indirect dispatches of
    /// colors that hold no constraint are counted: they are recorded all the same).
    pub fn dispatches_per_step(&self) -> u32 {
        let p = &self.params;
        let relax = p.relax_iterations > 0;
        let particles = self.particles.as_ref().map_or(0, |p| p.dispatches_per_substep());
        let statics = u32::from(p.collider_count > 0);
        let (mut once, mut per_substep) =
            (1 + u32::from(self.bounces), 2 + statics * (1 + u32::from(relax)) + particles);
        if let Some(c) = self.contacts_stages.as_ref().filter(|c| c.fuses_substeps()) {
            per_substep = 1;
            once += c.detection_dispatches();
        } else if let Some(c) = self.contacts_stages.as_ref() {
            once += c.detection_dispatches();
            if self.bounces {
                once += c.pass_dispatches(ContactPass::Restitution);
            }
            let sweeps = p.iterations + if relax { p.relax_iterations } else { 0 };
            per_substep += c.pass_dispatches(ContactPass::WarmStart) + sweeps * c.pass_dispatches(ContactPass::Solve);
            if c.integrates_velocities() {
                per_substep -= 1;
            }
            if relax {
                per_substep += c.prepare_dispatches();
            }
        }
        if let Some(j) = self.joints.as_ref() {
            once += 1 + u32::from(j.breaks());
            let sweeps = 1 + p.iterations + if relax { p.relax_iterations } else { 0 };
            per_substep += sweeps * j.sweep_dispatches();
        }
        once + p.substeps * per_substep
    }

    /// The internal body states (centre of mass, principal frame), for comparisons with the CPU.
    pub fn raw_bodies(&mut self) -> Result<Vec<GpuBody>> {
        let mut encoder =
            self.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("read_bodies") });
        encoder.copy_buffer_to_buffer(&self.bodies, 0, &self.bodies_readback, 0, self.bodies.size());
        self.queue.submit([encoder.finish()]);
        let mut out: Vec<GpuBody> = self.read(&self.bodies_readback)?;
        out.truncate(self.frames.len());
        Ok(out)
    }

    /// Records one step; the stages and their order are those of `CpuSolver::step`. `step` is
    /// the number of steps before it (its parity picks the manifold buffers).
    fn record_step(&self, pass: &mut wgpu::ComputePass, step: u64, marks: &mut Marks) {
        let p = &self.pipelines;
        let grid = self.body_grid;
        let parity = (step % 2) as usize;
        let contacts = self.contacts_stages.as_ref();
        let bodies = |pass: &mut wgpu::ComputePass| pass.set_bind_group(0, &self.bind_group, &[]);
        // Joints the last step overloaded break before the broad phase, so that their bodies
        // may collide from this step on.
        if let Some(j) = self.joints.as_ref().filter(|j| j.breaks()) {
            marks.mark(pass, Stage::Solve);
            j.record_breaking(pass, marks);
        }
        bodies(pass);
        marks.mark(pass, Stage::NarrowPhase);
        kernels::dispatch(pass, marks, "narrow_phase", &p.narrow_phase, grid);
        if let Some(c) = contacts {
            c.record_detection(pass, parity, marks);
        }
        let joints = self.joints.as_ref();
        if let Some(j) = joints {
            marks.mark(pass, Stage::Solve);
            j.record_prepare(pass, marks);
        }
        for _ in 0..self.params.substeps {
            if let Some(c) = contacts.filter(|c| c.fuses_substeps()) {
                marks.mark(pass, Stage::Solve);
                c.record_substep(pass, marks, parity);
                continue;
            }
            // Where nothing bounces the contacts' warm start integrates the velocities too.
            if !contacts.is_some_and(|c| c.integrates_velocities()) {
                bodies(pass);
                marks.mark(pass, Stage::Integrate);
                kernels::dispatch(pass, marks, "integrate_velocities", &p.integrate_velocities, grid);
            }
            marks.mark(pass, Stage::Solve);
            if let Some(c) = contacts {
                c.record_pass(pass, marks, parity, ContactPass::WarmStart);
                bodies(pass);
            }
            if let Some(j) = joints {
                j.record_warm_start(pass, marks);
                bodies(pass);
            }
            // Without static colliders the static passes would leave every body as it is.
            let statics = self.params.collider_count > 0;
            if statics {
                kernels::dispatch(pass, marks, "solve_static", &p.solve_static, grid);
            }
            // Each iteration sweeps the joints, then the manifolds.
            for _ in 0..self.params.iterations {
                if let Some(j) = joints {
                    j.record_solve(pass, marks, true);
                }
                if let Some(c) = contacts {
                    c.record_pass(pass, marks, parity, ContactPass::Solve);
                }
            }
            if contacts.is_some() || joints.is_some() {
                bodies(pass);
            }
            if let Some(particles) = &self.particles {
                marks.mark(pass, Stage::Particles);
                particles.record_contacts(pass, marks);
                bodies(pass);
            }
            marks.mark(pass, Stage::Integrate);
            kernels::dispatch(pass, marks, "integrate_positions", &p.integrate_positions, grid);
            if let Some(particles) = &self.particles {
                marks.mark(pass, Stage::Particles);
                particles.record_advance(pass, marks);
                bodies(pass);
            }
            if self.params.relax_iterations > 0 {
                marks.mark(pass, Stage::Solve);
                if statics {
                    kernels::dispatch(pass, marks, "relax_static", &p.relax_static, grid);
                }
                if let Some(c) = contacts {
                    c.record_prepare(pass, marks, parity);
                }
                for _ in 0..self.params.relax_iterations {
                    if let Some(j) = joints {
                        j.record_solve(pass, marks, false);
                    }
                    if let Some(c) = contacts {
                        c.record_pass(pass, marks, parity, ContactPass::Relax);
                    }
                }
            }
        }
        bodies(pass);
        marks.mark(pass, Stage::Solve);
        // Where nothing can bounce the restitution passes would change nothing: not recorded
        // (nor run on the CPU).
        if self.bounces {
            kernels::dispatch(pass, marks, "restitution", &p.restitution, grid);
            if let Some(c) = contacts {
                c.record_pass(pass, marks, parity, ContactPass::Restitution);
            }
        }
        marks.mark(pass, Stage::End);
    }

    /// Maps a readback buffer, waits for it and copies it out.
    fn read<T: Pod>(&self, buffer: &wgpu::Buffer) -> Result<Vec<T>> {
        read_buffer(&self.device, buffer)
    }

    /// The parity of the manifold buffer the last step wrote, which the next step reads as last
    /// step's: before the first step, the one the first step reads (where a restored snapshot
    /// puts its manifolds).
    fn last_parity(&self) -> usize {
        ((self.steps + 1) % 2) as usize
    }

    /// The first `count` records of a storage buffer, read back (waits for the GPU).
    fn read_all<T: Pod>(&self, buffer: &wgpu::Buffer, count: usize) -> Result<Vec<T>> {
        let words = (count * size_of::<T>() / 4) as u32;
        Ok(bytemuck::pod_collect_to_vec(&read_words(&self.device, &self.queue, buffer, "snapshot_readback", 0, words)?))
    }

    fn index(&self, body: BodyHandle) -> Result<usize> {
        let count = self.frames.len() as u32;
        if body.0 < count { Ok(body.index()) } else { Err(Error::InvalidHandle { what: "body", index: body.0, count }) }
    }
}

impl Solver for GpuSolver {
    fn backend(&self) -> String {
        format!("gpu: {}", self.adapter)
    }

    fn step(&mut self) {
        self.step_many(1);
    }

    fn step_many(&mut self, n: u32) {
        if n == 0 {
            return;
        }
        self.restored_coloring = None;
        if let Err(e) = self.grow_contacts() {
            log::error!("growing the contact buffers failed: {e}");
        }
        let mut clock = self.clock.take();
        if let Some(clock) = clock.as_mut() {
            clock.collect();
        }
        if let Some(impulses) = self.impulses.as_mut() {
            impulses.upload(&self.queue, &mut self.pending_impulses);
        }
        let mut encoder = self.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("steps") });
        {
            let mut pass = encoder
                .begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some("step"), timestamp_writes: None });
            // The impulses applied since the last step, before the first step's stages.
            if let Some(impulses) = self.impulses.as_mut() {
                impulses.record(&mut pass);
            }
            for k in 0..n - 1 {
                self.record_step(&mut pass, self.steps + k as u64, &mut Marks::off());
            }
            // The last step of the batch is the one timed.
            let mut marks = clock.as_mut().map_or_else(Marks::off, StageClock::marks);
            self.record_step(&mut pass, self.steps + (n - 1) as u64, &mut marks);
        }
        let timed = clock.as_mut().is_some_and(|c| c.resolve(&mut encoder));
        let header = self.contacts_stages.as_mut().is_some_and(|c| c.request_header(&mut encoder));
        self.queue.submit([encoder.finish()]);
        if header && let Some(c) = self.contacts_stages.as_mut() {
            c.map_header();
        }
        if timed && let Some(clock) = clock.as_mut() {
            clock.map();
        }
        self.clock = clock;
        self.steps += n as u64;
    }

    fn steps_taken(&self) -> u64 {
        self.steps.wrapping_add(self.step_offset)
    }

    fn synchronize(&mut self) -> Result<()> {
        self.device.poll(wgpu::PollType::wait_indefinitely()).map_err(|e| Error::Readback(e.to_string()))?;
        if let Some(clock) = self.clock.as_mut() {
            // The work is done, but the timings' map callback may still be running on another
            // thread that polls or submits to the same device (a shared context): wait for it,
            // up to a second.
            let start = std::time::Instant::now();
            while clock.mapping() && start.elapsed() < std::time::Duration::from_secs(1) {
                let _ = self.device.poll(wgpu::PollType::Poll);
                std::thread::yield_now();
            }
            clock.collect();
        }
        Ok(())
    }

    /// GPU timestamps of the last timed step (see [`GpuSolver::time_stages`]).
    fn stage_times(&self) -> Option<StageTimes> {
        self.clock.as_ref().and_then(StageClock::last)
    }

    fn body_states(&mut self) -> Result<Vec<BodyState>> {
        let raw = self.raw_bodies()?;
        let states = raw.iter().zip(&self.frames).map(|(b, f)| f.user_state(b)).collect();
        crate::solver::finite("body", self.steps_taken(), states)
    }

    fn particle_states(&mut self) -> Result<Vec<crate::ParticleState>> {
        let Some(particles) = &self.particles else { return Ok(Vec::new()) };
        let size = particles.count as u64 * size_of::<crate::layout::GpuParticle>() as u64;
        let readback = self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("particles_readback"),
            size,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let mut encoder =
            self.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("read_particles") });
        encoder.copy_buffer_to_buffer(&particles.buffer, 0, &readback, 0, size);
        self.queue.submit([encoder.finish()]);
        let raw: Vec<crate::layout::GpuParticle> = self.read(&readback)?;
        let states = raw.iter().map(crate::layout::GpuParticle::state);
        crate::solver::finite("particle", self.steps_taken(), states.collect())
    }

    fn body_state(&mut self, body: BodyHandle) -> Result<BodyState> {
        let i = self.index(body)?;
        let size = size_of::<GpuBody>() as u64;
        let mut encoder =
            self.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("read_body") });
        encoder.copy_buffer_to_buffer(&self.bodies, i as u64 * size, &self.body_readback, 0, size);
        self.queue.submit([encoder.finish()]);
        let raw: Vec<GpuBody> = self.read(&self.body_readback)?;
        crate::solver::finite_state(body, self.steps_taken(), self.frames[i].user_state(&raw[0]))
    }

    fn stats(&mut self) -> Result<StepStats> {
        let mut encoder = self.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("stats") });
        {
            let mut pass = encoder
                .begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some("stats"), timestamp_writes: None });
            let marks = &mut Marks::off();
            if let Some(c) = &self.contacts_stages {
                c.record_stats(&mut pass, marks, self.last_parity());
            }
            pass.set_bind_group(0, &self.bind_group, &[]);
            kernels::dispatch(&mut pass, marks, "stats_partial", &self.pipelines.stats_partial, self.stats_grid);
            kernels::dispatch(&mut pass, marks, "stats_final", &self.pipelines.stats_final, (1, 1));
        }
        encoder.copy_buffer_to_buffer(&self.stats, 0, &self.stats_readback, 0, size_of::<GpuStats>() as u64);
        let dropped = self.particles.as_ref().and_then(|p| p.record_dropped_copy(&mut encoder, &self.params)).cloned();
        self.queue.submit([encoder.finish()]);
        let total: Vec<GpuStats> = self.read(&self.stats_readback)?;
        let mut stats = crate::solver::stats_from(&self.params, self.steps_taken(), total[0]);
        if let Some(readback) = dropped {
            stats.particle_body_dropped = self.read::<u32>(&readback)?[0];
        }
        if self.contacts_stages.is_some() {
            let (colors, overflow) = self.color_buckets()?;
            stats.colors = colors.iter().filter(|c| !c.is_empty()).count() as u32;
            stats.overflow = overflow.len() as u32;
            stats.recycled =
                self.contacts_stages.as_ref().map_or(Ok(0), |c| c.read_recycled(&self.device, &self.queue))?;
            stats.dropped = self.contacts_stages.as_ref().map_or(0, |c| c.dropped);
        }
        if let Some([colors, overflow, recycled]) = self.restored_coloring {
            (stats.colors, stats.overflow, stats.recycled) = (colors, overflow, recycled);
        }
        crate::solver::finite_stats(stats)
    }

    fn joint_reactions(&mut self) -> Result<Vec<crate::JointReaction>> {
        if self.joints.is_none() {
            return Ok(Vec::new());
        }
        let bodies = self.raw_bodies()?;
        let Some(joints) = self.joints.as_ref() else { return Ok(Vec::new()) };
        let (packed, order) = joints.read(&self.device, &self.queue)?;
        let reactions = crate::joint::reactions(&packed, order, &bodies, self.params.h);
        crate::solver::finite("the reaction of joint", self.steps_taken(), reactions)
    }

    fn set_velocity(&mut self, body: BodyHandle, linear: Vec3, angular: Vec3) -> Result<()> {
        let i = self.index(body)?;
        crate::error::check_speed("linear velocity", linear)?;
        crate::error::check_speed("angular velocity", angular)?;
        if self.kinds[i] == KIND_STATIC {
            return Err(Error::StaticBody { index: body.0 });
        }
        // linear_velocity, _pad0, angular_velocity: bytes 32..60 of the body.
        let data: [f32; 7] = [linear.x, linear.y, linear.z, 0.0, angular.x, angular.y, angular.z];
        let offset = (i * size_of::<GpuBody>() + std::mem::offset_of!(GpuBody, linear_velocity)) as u64;
        self.queue.write_buffer(&self.bodies, offset, bytemuck::cast_slice(&data));
        Ok(())
    }

    fn set_force(&mut self, body: BodyHandle, force: Vec3, torque: Vec3) -> Result<()> {
        let i = self.index(body)?;
        let (force, torque) = crate::layout::checked_force(body, self.kinds[i], force, torque)?;
        // The host's copy of the properties (for snapshots), then the GPU's.
        (self.ray_tables.props[i].force, self.ray_tables.props[i].torque) = (force, torque);
        // force (bytes 48..60 of the body's properties) and torque (64..76).
        let at = |offset: usize| (i * size_of::<GpuBodyProps>() + offset) as u64;
        let props = &self.body_buffers[PROPS];
        let (force, torque): ([f32; 3], [f32; 3]) = (force.into(), torque.into());
        self.queue.write_buffer(props, at(std::mem::offset_of!(GpuBodyProps, force)), bytemuck::cast_slice(&force));
        self.queue.write_buffer(props, at(std::mem::offset_of!(GpuBodyProps, torque)), bytemuck::cast_slice(&torque));
        Ok(())
    }

    fn set_gravity(&mut self, gravity: Vec3) -> Result<()> {
        check_finite("gravity", gravity, gravity.is_finite())?;
        self.params.gravity = gravity;
        self.queue.write_buffer(&self.body_buffers[PARAMS], 0, &uniform_bytes(&self.params));
        Ok(())
    }

    fn set_collision_groups(&mut self, body: BodyHandle, groups: crate::CollisionGroups) -> Result<()> {
        let i = self.index(body)?;
        // The ray queries' copy of the properties, then the GPU's: not_memberships (bytes
        // 60..64 of the body's properties) and not_filter (76..80).
        let host = &mut self.ray_tables.props[i];
        host.set_groups(groups);
        let at = |offset: usize| (i * size_of::<GpuBodyProps>() + offset) as u64;
        let props = &self.body_buffers[PROPS];
        let (memberships, filter) = (host.not_memberships, host.not_filter);
        self.queue.write_buffer(
            props,
            at(std::mem::offset_of!(GpuBodyProps, not_memberships)),
            bytemuck::bytes_of(&memberships),
        );
        self.queue.write_buffer(props, at(std::mem::offset_of!(GpuBodyProps, not_filter)), bytemuck::bytes_of(&filter));
        Ok(())
    }

    fn cast_ray(
        &mut self,
        origin: Vec3,
        direction: Vec3,
        max_distance: f32,
        groups: crate::CollisionGroups,
    ) -> Result<Option<crate::RayHit>> {
        let ray = crate::query::checked_ray(origin, direction, max_distance)?;
        let bodies = self.raw_bodies()?;
        Ok(crate::query::cast_ray(&self.ray_tables.scene(), &bodies, ray, groups))
    }

    fn apply_impulse(&mut self, body: BodyHandle, impulse: Vec3, point: Vec3) -> Result<()> {
        let i = self.index(body)?;
        self.pending_impulses.add(body, self.frames.len(), self.kinds[i], impulse, point)?;
        if self.impulses.is_none() {
            let (bodies, props) = (&self.body_buffers[BODIES], &self.body_buffers[PROPS]);
            let count = self.frames.len() as u32;
            self.impulses = Some(super::impulses::GpuImpulses::new(&self.device, &self.modules, bodies, props, count));
        }
        Ok(())
    }

    fn set_pose(&mut self, body: BodyHandle, position: Vec3, orientation: glam::Quat) -> Result<()> {
        let i = self.index(body)?;
        let (position, orientation) = self.frames[i].checked_pose(body, self.kinds[i], position, orientation)?;
        // position (bytes 0..12, before inv_mass) and orientation (16..32) of the body.
        let at = |offset: usize| (i * size_of::<GpuBody>() + offset) as u64;
        let position: [f32; 3] = position.into();
        let orientation: [f32; 4] = orientation.into();
        let write =
            |offset, data: &[f32]| self.queue.write_buffer(&self.bodies, at(offset), bytemuck::cast_slice(data));
        write(std::mem::offset_of!(GpuBody, position), &position);
        write(std::mem::offset_of!(GpuBody, orientation), &orientation);
        Ok(())
    }

    fn contacts(&mut self) -> Result<Vec<crate::Contact>> {
        let bodies = self.raw_bodies()?;
        let manifolds = self.manifolds()?;
        let words = (size_of::<GpuStaticContact>() / 4) as u32;
        let buffer = &self.body_buffers[STATIC_CONTACTS];
        let slots = read_words(&self.device, &self.queue, buffer, "contacts_readback", 0, self.slot_count * words)?;
        let slots: Vec<GpuStaticContact> = bytemuck::pod_collect_to_vec(&slots);
        let contacts = crate::solver::contact_reports(&self.params, &bodies, &self.slot_ranges, &slots, &manifolds);
        crate::solver::finite("contact", self.steps_taken(), contacts)
    }

    fn snapshot(&mut self) -> Result<Snapshot> {
        let bodies = self.raw_bodies()?;
        let motion: Vec<GpuSolverBody> = self.read_all(&self.body_buffers[SOLVER_BODIES], bodies.len())?;
        let joints = match &self.joints {
            Some(j) => {
                let (packed, order) = j.read(&self.device, &self.queue)?;
                Snapshot::joints_of(&packed, order)
            }
            None => Vec::new(),
        };
        let (manifolds, separating_faces) = match &self.contacts_stages {
            Some(c) => c.read_state(&self.device, &self.queue, self.last_parity())?,
            None => Default::default(),
        };
        let (particles, particle_contacts) = match &self.particles {
            Some(p) => {
                let raw: Vec<crate::layout::GpuParticle> = self.read_all(&p.buffer, p.count as usize)?;
                let kept = (p.kept * crate::particles::PARTICLE_CONTACT_SLOTS) as usize;
                (raw.iter().map(crate::layout::GpuParticle::state).collect(), self.read_all(&p.contacts, kept)?)
            }
            None => Default::default(),
        };
        Ok(Snapshot {
            steps: self.steps_taken(),
            gravity: self.params.gravity,
            bodies: Snapshot::bodies_of(&bodies, &self.ray_tables.props, &motion),
            impulses: self.pending_impulses.entries.iter().map(PendingImpulse::of).collect(),
            static_contacts: self.read_all(&self.body_buffers[STATIC_CONTACTS], self.slot_count as usize)?,
            manifolds,
            separating_faces,
            joints,
            particles,
            particle_contacts,
        })
    }

    fn restore(&mut self, snapshot: &Snapshot) -> Result<()> {
        let mut bodies = self.raw_bodies()?;
        let mut motion: Vec<GpuSolverBody> = self.read_all(&self.body_buffers[SOLVER_BODIES], bodies.len())?;
        let mut joints = match &self.joints {
            Some(j) => j.read(&self.device, &self.queue)?.0,
            None => Vec::new(),
        };
        // Every read before anything is written: a restore that fails changes nothing.
        let mut particles: Vec<crate::layout::GpuParticle> = match &self.particles {
            Some(p) => self.read_all(&p.buffer, p.count as usize)?,
            None => Vec::new(),
        };
        let no_loads = Vec::new();
        let (order, loads) = self.joints.as_ref().map_or((&[][..], &no_loads), |j| (j.order(), &j.loads));
        let kept = self.particles.as_ref().map_or(0, |p| p.kept as usize);
        snapshot.check(&crate::snapshot::Expected {
            bodies: &bodies,
            props: &self.ray_tables.props,
            shapes: &self.ray_tables.shapes,
            static_slots: self.slot_count as usize,
            joints: (&joints, order, loads),
            particles: particles.len(),
            particle_contacts: kept * crate::particles::PARTICLE_CONTACT_SLOTS as usize,
            colliders: self.params.collider_count,
            max_colors: self.params.max_colors,
            body_contacts: self.contacts_stages.is_some(),
        })?;
        // Room for the snapshot's contacts first: after it nothing can fail.
        if let Some(c) = &self.contacts_stages
            && !c.holds(snapshot.manifolds.len(), snapshot.separating_faces.len())
        {
            let limit = contact_capacity_limit(&self.device.limits());
            let wanted = snapshot.manifolds.len().max(snapshot.separating_faces.len());
            let wanted = u32::try_from(wanted).ok().filter(|&w| w <= limit).ok_or(Error::BufferTooLarge {
                what: "the snapshot's manifolds",
                bytes: wanted as u64 * size_of::<crate::layout::GpuManifold>() as u64,
                limit: limit as u64 * size_of::<crate::layout::GpuManifold>() as u64,
                limit_name: "max_storage_buffer_binding_size",
            })?;
            let layout = c.layout;
            let grown = |capacity: u32| grown_capacity(wanted, capacity, limit);
            self.build_contacts(grown(layout.pair_capacity), grown(layout.manifold_capacity))?;
        }
        let props = &mut self.ray_tables.props;
        snapshot.apply_bodies(&mut bodies, props, &mut motion);
        self.queue.write_buffer(&self.bodies, 0, bytemuck::cast_slice(&bodies));
        self.queue.write_buffer(&self.body_buffers[SOLVER_BODIES], 0, bytemuck::cast_slice(&motion));
        self.queue.write_buffer(&self.body_buffers[PROPS], 0, bytemuck::cast_slice(props));
        self.params.gravity = snapshot.gravity;
        self.queue.write_buffer(&self.body_buffers[PARAMS], 0, &uniform_bytes(&self.params));
        if !snapshot.static_contacts.is_empty() {
            let slots = bytemuck::cast_slice(&snapshot.static_contacts);
            self.queue.write_buffer(&self.body_buffers[STATIC_CONTACTS], 0, slots);
        }
        if let Some(c) = &self.contacts_stages {
            c.write_state(&self.queue, self.last_parity(), &snapshot.manifolds, &snapshot.separating_faces);
        }
        if let Some(j) = &self.joints {
            snapshot.apply_joints(&mut joints, j.order(), &j.loads, |word, value| {
                self.queue.write_buffer(&self.topology, 4 * word as u64, bytemuck::bytes_of(&value));
            });
            j.write(&self.queue, &joints);
        }
        if let Some(p) = &self.particles {
            snapshot.apply_particles(&mut particles);
            self.queue.write_buffer(&p.buffer, 0, bytemuck::cast_slice(&particles));
            if !snapshot.particle_contacts.is_empty() {
                self.queue.write_buffer(&p.contacts, 0, bytemuck::cast_slice(&snapshot.particle_contacts));
            }
        }
        let n = self.frames.len();
        self.pending_impulses.replace(snapshot.impulses.iter().map(PendingImpulse::record), n);
        if !snapshot.impulses.is_empty() && self.impulses.is_none() {
            let (bodies, props) = (&self.body_buffers[BODIES], &self.body_buffers[PROPS]);
            self.impulses =
                Some(super::impulses::GpuImpulses::new(&self.device, &self.modules, bodies, props, n as u32));
        }
        self.step_offset = snapshot.steps.wrapping_sub(self.steps);
        self.restored_coloring = Some(snapshot.coloring());
        Ok(())
    }

    fn set_joint_motor(&mut self, joint: crate::JointHandle, motor: crate::JointMotor) -> Result<()> {
        match &self.joints {
            Some(joints) => joints.set_motor(&self.queue, joint, motor),
            // A world without joints: the handle names none of them.
            None => crate::layout::JointSlots::default().motor_slot(joint, &motor).map(|_| ()),
        }
    }
}

/// Maps a readback buffer, waits for the GPU and copies it out.
/// `count` words of `buffer` from word `offset`, copied to a staging buffer and read back
/// (waits for the GPU; for tests and debugging, never inside a step).
pub(crate) fn read_words(
    device: &wgpu::Device,
    queue: &wgpu::Queue,
    buffer: &wgpu::Buffer,
    label: &str,
    offset: u32,
    count: u32,
) -> Result<Vec<u32>> {
    let bytes = 4 * count.max(1) as u64;
    let staging = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some(label),
        size: bytes,
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    let mut encoder = device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some(label) });
    encoder.copy_buffer_to_buffer(buffer, 4 * offset as u64, &staging, 0, bytes);
    queue.submit([encoder.finish()]);
    let mut words: Vec<u32> = read_buffer(device, &staging)?;
    words.truncate(count as usize);
    Ok(words)
}

pub(crate) fn read_buffer<T: Pod>(device: &wgpu::Device, buffer: &wgpu::Buffer) -> Result<Vec<T>> {
    let (sender, receiver) = mpsc::channel();
    buffer.map_async(wgpu::MapMode::Read, .., move |result| {
        let _ = sender.send(result);
    });
    device.poll(wgpu::PollType::wait_indefinitely()).map_err(|e| Error::Readback(e.to_string()))?;
    receiver.recv().map_err(|e| Error::Readback(e.to_string()))?.map_err(|e| Error::Readback(e.to_string()))?;
    let data = {
        let view = buffer.get_mapped_range(..).map_err(|e| Error::Readback(e.to_string()))?;
        bytemuck::cast_slice::<u8, T>(&view).to_vec()
    };
    buffer.unmap();
    Ok(data)
}

/// A slice's bytes, or one zeroed element's when it is empty (a binding cannot be empty).
fn non_empty<T: Pod + Default>(data: &[T]) -> &[u8] {
    if data.is_empty() { bytemuck::bytes_of(zeroed_ref::<T>()) } else { bytemuck::cast_slice(data) }
}

fn zeroed_ref<T: Pod>() -> &'static T {
    // 256 zero bytes, 16-aligned, cover every element type used here.
    #[repr(C, align(16))]
    struct Zeros([u8; 256]);
    static ZEROS: Zeros = Zeros([0; 256]);
    assert!(size_of::<T>() <= 256);
    bytemuck::from_bytes(&ZEROS.0[..size_of::<T>()])
}

/// Storage buffers a kernel binds at most (WebGPU's default limit; every family is built to it).
const MAX_STORAGE_BUFFERS: u64 = 8;

/// Checks the limits every kernel relies on, whatever the scene.
fn check_kernel_limits(limits: &wgpu::Limits) -> Result<()> {
    let needs: [(&'static str, u64, u64); 4] = [
        (
            "max_storage_buffers_per_shader_stage",
            MAX_STORAGE_BUFFERS,
            limits.max_storage_buffers_per_shader_stage as u64,
        ),
        (
            "max_compute_invocations_per_workgroup",
            STATS_WORKGROUP_SIZE as u64,
            limits.max_compute_invocations_per_workgroup as u64,
        ),
        ("max_compute_workgroup_size_x", STATS_WORKGROUP_SIZE as u64, limits.max_compute_workgroup_size_x as u64),
        (
            "max_compute_workgroup_storage_size",
            (STATS_WORKGROUP_SIZE as usize * size_of::<GpuStats>()) as u64,
            limits.max_compute_workgroup_storage_size as u64,
        ),
    ];
    for (limit_name, required, available) in needs {
        if available < required {
            return Err(Error::DeviceLimit { limit_name, required, available });
        }
    }
    Ok(())
}

/// The most pairs, and manifolds, the contact stages can hold on a device with `limits`: each
/// pair has a manifold-sized candidate, and all of them are one storage binding, of at most
/// 2 GiB - 1 whatever the device says (Metal reports far larger bindings, but passes the shaders
/// their sizes as 32-bit numbers, and the work arena counts words in 32 bits).
pub(crate) fn contact_capacity_limit(limits: &wgpu::Limits) -> u32 {
    let bytes = limits.max_storage_buffer_binding_size.min(limits.max_buffer_size).min(i32::MAX as u64);
    u32::try_from(bytes / size_of::<crate::layout::GpuManifold>() as u64).unwrap_or(u32::MAX)
}

/// The capacity for `wanted` items where `capacity` are held and the device allows `limit`:
/// unchanged while three quarters of it hold them, else half as much again as wanted (at
/// least double), no more than the limit, never less than held.
fn grown_capacity(wanted: u32, capacity: u32, limit: u32) -> u32 {
    if wanted <= capacity - capacity / 4 {
        return capacity;
    }
    wanted.saturating_add(wanted / 2).max(capacity.saturating_mul(2)).min(limit).max(capacity)
}

/// Checks a storage buffer against the device's binding and buffer size limits.
pub(crate) fn storage_fits(limits: &wgpu::Limits, what: &'static str, bytes: u64) -> Result<()> {
    if bytes > limits.max_storage_buffer_binding_size {
        return Err(Error::BufferTooLarge {
            what,
            bytes,
            limit: limits.max_storage_buffer_binding_size,
            limit_name: "max_storage_buffer_binding_size",
        });
    }
    if bytes > limits.max_buffer_size {
        return Err(Error::BufferTooLarge {
            what,
            bytes,
            limit: limits.max_buffer_size,
            limit_name: "max_buffer_size",
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The grid's pairs put in order by ranks within each first body's pairs
    /// (`GpuContacts::pair_ranks`, the default in a world this small) and by the radix sort
    /// are the same list, step after step, and so the steps are the same bits. The rain falls
    /// into an open box whose floor and walls come first, so the bodies too large for the grid
    /// are the first bodies of many pairs that other bodies' threads find. Both with the ranks'
    /// five dispatches and with their one workgroup's (`pairs_fused`, the fused sweeps).
    #[test]
    fn pairs_ranked_or_radix_sorted_are_the_same_list() {
        let Some(ctx) = crate::gpu::kernels::tests::context() else { return };
        // The ranks in five dispatches, and with the fused sweeps in one workgroup's.
        for fused in [false, true] {
            let mut desc = crate::scenes::bench_desc();
            desc.solver.gpu_fused_sweeps = fused;
            let world = crate::scenes::rain(desc, 300, 7).unwrap();
            let mut ranked = GpuSolver::new(&ctx, &world).unwrap();
            let mut sorted = GpuSolver::new(&ctx, &world).unwrap();
            let contacts = |s: &mut GpuSolver| s.contacts_stages.as_mut().unwrap().pair_ranks;
            assert!(contacts(&mut ranked), "a world of 305 bodies puts its pairs in order by ranks");
            sorted.contacts_stages.as_mut().unwrap().pair_ranks = false;
            // Four radix passes of three dispatches, against five; or with the count and the
            // writing again after an overflow (three dispatches) too, against one.
            let fewer = if fused { 3 + 12 - 1 } else { 7 };
            assert_eq!(sorted.dispatches_per_step(), ranked.dispatches_per_step() + fewer, "fused {fused}");
            let mut large = 0;
            for step in 0..60 {
                ranked.step();
                sorted.step();
                if step % 10 == 9 {
                    let pairs = ranked.candidate_pairs().unwrap();
                    assert_eq!(pairs, sorted.candidate_pairs().unwrap(), "fused {fused}, step {step}");
                    assert!(pairs.windows(2).all(|w| w[0] < w[1]), "fused {fused}, step {step}: not in (a, b) order");
                    large = large.max(pairs.iter().filter(|p| p[0] < 5).count());
                }
            }
            assert!(large > 50, "the floor and walls are the first body of {large} pairs");
            grid_items_are_sorted(&ranked, fused);
            assert!(!contacts(&mut sorted), "the buffers grew, and the sorted run ranked its pairs");
            let bits = |s: &mut GpuSolver| bytemuck::cast_slice::<_, u8>(&s.raw_bodies().unwrap()).to_vec();
            assert!(bits(&mut ranked) == bits(&mut sorted), "fused {fused}: the states differ");
        }
    }

    /// The grid's items after a step, sorted by the radix sort or (fused) by counting: every
    /// body once, in (key, body) order, and each hash's items starting where `cell_start` says
    /// (`NO_CELL` for the hashes of no body).
    fn grid_items_are_sorted(solver: &GpuSolver, fused: bool) {
        let contacts = solver.contacts_stages.as_ref().unwrap();
        let l = contacts.layout;
        let read = |at: u32, count: u32| contacts.read_words(&solver.device, &solver.queue, at, count).unwrap();
        let items = read(l.cells_sorted, 2 * l.body_count);
        let items: Vec<[u32; 2]> = items.chunks_exact(2).map(|c| [c[0], c[1]]).collect();
        assert!(items.windows(2).all(|w| w[0] < w[1]), "fused {fused}: grid items not in (key, body) order");
        let mut bodies: Vec<u32> = items.iter().map(|i| i[1]).collect();
        bodies.sort_unstable();
        assert!(bodies.iter().copied().eq(0..l.body_count), "fused {fused}: not every body once");
        let starts = read(l.cell_start, l.hash_mask + 1);
        let shared = items.windows(2).filter(|w| w[0][0] == w[1][0] && w[0][0] <= l.hash_mask).count();
        assert!(
            shared > 10,
            "fused {fused}: only {shared} grid cells hold two bodies: the order within one is untested"
        );
        for (key, &start) in starts.iter().enumerate() {
            let first = items.iter().position(|i| i[0] == key as u32).map_or(u32::MAX, |k| k as u32);
            assert_eq!(start, first, "fused {fused}: where hash {key} starts");
        }
    }

    #[test]
    fn contact_capacity_stops_at_the_binding_limit() {
        let limits = wgpu::Limits { max_storage_buffer_binding_size: 2_147_483_644, ..wgpu::Limits::default() };
        let limit = contact_capacity_limit(&wgpu::Limits { max_buffer_size: u64::MAX, ..limits });
        let manifold = size_of::<crate::layout::GpuManifold>() as u64;
        assert_eq!(limit as u64, 2_147_483_644 / manifold);
        // The smaller of the two limits binds.
        let small = contact_capacity_limit(&wgpu::Limits { max_buffer_size: 1 << 20, ..limits });
        assert_eq!(small as u64, (1 << 20) / manifold);
    }

    #[test]
    fn capacities_grow_by_half_again_up_to_the_limit_and_never_shrink() {
        // Three quarters full or less: unchanged.
        assert_eq!(grown_capacity(75, 100, 1_000), 100);
        // Fuller (not yet overflowing): half as much again as wanted, at least double.
        assert_eq!(grown_capacity(76, 100, 1_000), 200);
        assert_eq!(grown_capacity(300, 100, 1_000), 450);
        assert_eq!(grown_capacity(120, 100, 1_000), 200);
        // Never past the limit, and once there it stays (the caller then reports the drops).
        assert_eq!(grown_capacity(900, 400, 1_000), 1_000);
        assert_eq!(grown_capacity(5_000, 1_000, 1_000), 1_000);
        // A capacity already above a smaller limit is not shrunk.
        assert_eq!(grown_capacity(5_000, 2_000, 1_000), 2_000);
        // No overflow near u32::MAX.
        assert_eq!(grown_capacity(u32::MAX, 10, u32::MAX), u32::MAX);
    }
}
