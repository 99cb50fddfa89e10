//! The CPU reference solver: the same stages as the GPU solver, in the same order, on the same
//! arrays. It checks the GPU in the comparison tests and is a real backend where no adapter is.

pub(crate) mod contacts;
mod joints;
mod lanes;
mod particle_contacts;
mod particles;
mod stages;

use glam::{Vec3, Vec4};

use crate::body::{BodyHandle, BodyState};
use crate::error::{Error, Result, check_finite};
use crate::layout::{
    BodyFrame, GpuBody, GpuBodyProps, GpuCollider, GpuParticle, GpuShape, GpuSolverBody, GpuStaticContact, GpuStats,
    KIND_STATIC, Packed, StepParams,
};
use crate::snapshot::{PendingImpulse, Snapshot};
use crate::solver::{Solver, StageTimes, StepStats};
use crate::world::World;

use contacts::{BodyView, ContactState, Pass};
use stages::Buffers;

/// `out[i] = f(i)` for `i < len`, keeping `out`'s capacity: over the current pool's threads in
/// tasks of at least `min_len` items when `parallel` (the items are independent, so the values
/// are the same), else in order on the calling thread.
pub(crate) fn fill_indexed<T, F>(out: &mut Vec<T>, len: usize, parallel: bool, min_len: usize, f: F)
where
    T: Send,
    F: Fn(usize) -> T + Sync + Send,
{
    use rayon::prelude::*;
    if parallel {
        (0..len).into_par_iter().with_min_len(min_len).map(f).collect_into_vec(out);
    } else {
        out.clear();
        out.extend((0..len).map(f));
    }
}

/// Runs `f` on the calling worker thread of a pool while the pool's other threads look for
/// work without going to sleep, so that each of the step's parallel stages finds them awake.
/// A rayon worker with nothing to do sleeps after a short spin, and waking it takes from a few
/// microseconds to tens on a virtual machine, which the dozens of short parallel stages of a
/// small scene's step each paid (pile of 1,005 on two threads, interleaved: 3.58-3.80 ->
/// 3.39-3.51 ms a step; on eight threads over two cores 3.92-5.40 -> 3.57-3.81 ms). The other
/// threads run any work the pool has while they wait (`rayon::yield_now`), spin briefly between
/// looks, then yield the processor; they go back to rayon's sleep when `f` returns or
/// unwinds. Only one `f` may run on a pool at a time (the solver's pool lock): a worker that
/// waited for one while running inside another's wait would hold both. Nothing is allocated
/// ([`on_threads`]). Where the calling thread is not one of a pool's (no pool), `f` just runs.
fn awake<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    use std::sync::atomic::{AtomicBool, Ordering};
    let Some(caller) = rayon::current_thread_index() else {
        return f();
    };
    /// Sets `done` when `f` returns or unwinds, so that the others stop waiting either way.
    struct Finish<'a>(&'a AtomicBool);
    impl Drop for Finish<'_> {
        fn drop(&mut self) {
            self.0.store(true, Ordering::Release);
        }
    }
    let done = AtomicBool::new(false);
    let wait = || {
        // A copy that the caller itself takes (one that no other thread took while `f` ran,
        // or one it picks up while `f` waits) has nothing to wait for.
        if rayon::current_thread_index() == Some(caller) {
            return;
        }
        let mut idle = 0u32;
        while !done.load(Ordering::Acquire) {
            if rayon::yield_now() == Some(rayon::Yield::Executed) {
                idle = 0;
            } else if idle < 256 {
                idle += 1;
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        }
    };
    let (out, ()) = rayon::join(
        || {
            let _finish = Finish(&done);
            f()
        },
        || on_threads(rayon::current_num_threads() - 1, &wait),
    );
    out
}

/// Runs `f` on up to `n` threads of the current pool at once: the calling thread, and through
/// nested `rayon::join`s (jobs on the stack: nothing is allocated) the threads that take the
/// rest. A part that no other thread takes, the calling thread runs after its own, so `f` must
/// not wait for a given number of threads to come.
pub(crate) fn on_threads(n: usize, f: &(impl Fn() + Sync)) {
    if n <= 1 {
        f();
    } else {
        rayon::join(f, || on_threads(n - 1, f));
    }
}

/// Adds the time since the last lap to one stage group.
struct Laps(std::time::Instant);

impl Laps {
    fn lap(&mut self, into: &mut std::time::Duration) {
        let now = std::time::Instant::now();
        *into += now - self.0;
        self.0 = now;
    }
}

/// Steps a [`World`] on the CPU.
#[derive(Clone, Debug)]
pub struct CpuSolver {
    params: StepParams,
    bodies: Vec<GpuBody>,
    props: Vec<GpuBodyProps>,
    shapes: Vec<GpuShape>,
    geometry: Vec<Vec4>,
    topology: Vec<u32>,
    colliders: Vec<GpuCollider>,
    particles: Vec<GpuParticle>,
    particle_grid: particle_contacts::ParticleGrid,
    frames: Vec<BodyFrame>,
    solver_bodies: Vec<GpuSolverBody>,
    contacts: Vec<GpuStaticContact>,
    contacts_state: ContactState,
    steps: u64,
    stage_times: StageTimes,
    /// The worker threads, when there are several (see [`crate::SolverSettings::cpu_threads`]),
    /// shared by the solver's clones, which step on it one at a time.
    pool: Option<std::sync::Arc<std::sync::Mutex<rayon::ThreadPool>>>,
    /// The lane code it runs (see [`crate::SolverSettings::cpu_lanes`]).
    simd: lanes::Simd,
    /// Whether the step runs its restitution passes ([`crate::World::bodies_can_bounce`]).
    bounces: bool,
    /// The joints, by color (solved color by color, as the GPU solves them).
    joints: Vec<crate::layout::GpuJoint>,
    /// Where each joint color starts in `joints`, and one past the last.
    joint_colors: Vec<u32>,
    /// The runs of one kind of joint in each color, found each step (room for one per joint,
    /// so that finding them never allocates).
    joint_runs: Vec<joints::KindRun>,
    /// The world's index of each of `joints`.
    joint_order: Vec<u32>,
    /// Where each of the world's joints is in `joints`, and which have motors.
    joint_slots: crate::layout::JointSlots,
    /// The impulses applied since the last step.
    impulses: crate::layout::PendingImpulses,
    /// Each of `joints`' breaking loads and no-contact entries.
    joint_breaks: Vec<crate::layout::GpuJointBreak>,
    /// The joints that can break (indices into `joints`).
    breakable: Vec<u32>,
    /// A restored snapshot's `[colors, overflow, recycled]`, which the statistics give until the
    /// next step.
    restored_coloring: Option<[u32; 3]>,
}

impl CpuSolver {
    /// Builds a solver for `world`'s current bodies and static colliders.
    pub fn new(world: &World) -> Result<Self> {
        let Packed {
            params,
            bodies,
            props,
            shapes,
            geometry,
            topology,
            colliders,
            particles,
            frames,
            slot_count,
            joints,
            joint_colors,
            joint_order,
            joint_breaks,
        } = Packed::new(world);
        let grid = contacts::GridSpec::new(&props, &shapes, &geometry, params.speculative_distance);
        let threads = match world.desc().solver.cpu_threads {
            0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
            n => n as usize,
        };
        // A pool that cannot start leaves the solver on the calling thread, with the same results.
        let pool = (threads > 1)
            .then(|| {
                rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .thread_name(|i| format!("signorini-cpu-{i}"))
                    .build()
            })
            .and_then(|built| {
                built
                    .map_err(|e| {
                        log::warn!("the CPU solver runs on one thread: its {threads} workers did not start: {e}")
                    })
                    .ok()
            })
            .map(|pool| std::sync::Arc::new(std::sync::Mutex::new(pool)));
        let mut contacts_state = ContactState::new(grid);
        contacts_state.parallel = pool.is_some();
        contacts_state.no_contact = ContactState::filters(&props);
        Ok(Self {
            solver_bodies: vec![GpuSolverBody::at_rest(); bodies.len()],
            contacts: vec![GpuStaticContact::default(); slot_count as usize],
            params,
            bodies,
            props,
            shapes,
            geometry,
            topology,
            colliders,
            particles,
            particle_grid: Default::default(),
            frames,
            contacts_state,
            steps: 0,
            stage_times: StageTimes::default(),
            pool,
            simd: lanes::Simd::new(world.desc().solver.cpu_lanes),
            bounces: world.bodies_can_bounce(),
            joint_runs: Vec::with_capacity(joints.len()),
            joint_slots: crate::layout::JointSlots::new(&joints, &joint_order),
            impulses: Default::default(),
            joints,
            joint_colors,
            joint_order,
            breakable: joints::breakable(&joint_breaks),
            joint_breaks,
            restored_coloring: None,
        })
    }

    /// Kept particle contacts: [`crate::particles::PARTICLE_CONTACT_SLOTS`] a particle where
    /// particles meet each other, else none (as the GPU's buffer holds them).
    fn kept_particle_contacts(&self) -> usize {
        let slots = crate::particles::PARTICLE_CONTACT_SLOTS as usize;
        if self.params.particle_collisions != 0 { self.particles.len() * slots } else { 0 }
    }

    /// The most lanes its contact sweeps take at once: [`crate::SolverSettings::cpu_lanes`] as
    /// far as this processor allows (16 with AVX-512F, 8 with AVX, else 4).
    pub fn cpu_lanes(&self) -> u32 {
        self.simd.widest()
    }

    /// The internal body states (centre of mass, principal frame), for comparisons with the GPU.
    pub fn raw_bodies(&self) -> &[GpuBody] {
        &self.bodies
    }

    /// Each particle's body slots of the last substep: the indices of the bodies whose contacts
    /// it keeps, ascending (at most [`PARTICLE_BODY_SLOTS`](crate::particles::PARTICLE_BODY_SLOTS),
    /// the smallest indices among the bodies touching it; for tests and debugging, empty
    /// without particle-body contacts).
    pub fn particle_body_slots(&self) -> Vec<Vec<u32>> {
        let g = &self.particle_grid;
        let slots = crate::particles::PARTICLE_BODY_SLOTS as usize;
        g.slot_counts
            .iter()
            .enumerate()
            .map(|(i, &count)| g.slots[i * slots..][..(count as usize).min(slots)].iter().map(|s| s.body).collect())
            .collect()
    }

    /// Each body's particle contacts of the last substep, particle indices in the order the
    /// body solves them (for tests and debugging; empty without particle-body contacts).
    pub fn particle_body_lists(&self) -> Vec<Vec<u32>> {
        let g = &self.particle_grid;
        let end = |b: usize| (g.body_starts[b + 1] as usize).min(g.body_list.len());
        (0..g.body_starts.len().saturating_sub(1))
            .map(|b| g.body_list[(g.body_starts[b] as usize).min(end(b))..end(b)].to_vec())
            .collect()
    }

    fn buffers(&mut self) -> Buffers<'_> {
        Buffers {
            params: &self.params,
            bodies: &mut self.bodies,
            props: &self.props,
            shapes: &self.shapes,
            geometry: &self.geometry,
            colliders: &self.colliders,
            solver_bodies: &mut self.solver_bodies,
            contacts: &mut self.contacts,
            parallel: self.pool.is_some(),
            simd: self.simd,
        }
    }

    fn body_view(&mut self) -> BodyView<'_> {
        BodyView {
            params: &self.params,
            bodies: &mut self.bodies,
            props: &self.props,
            shapes: &self.shapes,
            geometry: &self.geometry,
            topology: &self.topology,
            solver_bodies: &self.solver_bodies,
            simd: self.simd,
        }
    }

    fn manifold_passes(&mut self, pass: Pass, times: u32) {
        let mut cs = std::mem::take(&mut self.contacts_state);
        let mut view = self.body_view();
        contacts::solve_manifolds(&mut view, &mut cs, pass, times);
        self.contacts_state = cs;
    }

    /// The pairs of the last step that a face kept a margin apart, with that face (A's, or B's
    /// with the top bit set), in pair order (for tests and debugging).
    pub fn separating_faces(&self) -> Vec<([u32; 2], u32)> {
        self.contacts_state.separated().iter().map(|&(p, face)| ([p.a, p.b], face)).collect()
    }

    /// The broad phase's candidate pairs `(a, b)`, `a < b`, of the last step, sorted (for tests
    /// and debugging).
    pub fn candidate_pairs(&self) -> Vec<[u32; 2]> {
        self.contacts_state.pairs.iter().map(|p| [p.a, p.b]).collect()
    }

    /// The body-body manifolds of the last step (for tests and debugging).
    pub fn manifolds(&self) -> &[crate::layout::GpuManifold] {
        &self.contacts_state.manifolds
    }

    /// What the last step's last preparation left for the manifold passes, per manifold of
    /// [`Self::manifolds`] and per body (empty before the first step with contacts).
    pub fn prepared(&self) -> crate::layout::PreparedRecords {
        self.contacts_state.prepared_records()
    }

    /// The colors of the last step: for each color the manifold indices it holds, then the
    /// overflow solved by Jacobi.
    pub fn color_buckets(&self) -> (Vec<Vec<u32>>, Vec<u32>) {
        let cs = &self.contacts_state;
        let colors = self.params.max_colors as usize;
        if cs.color_offsets.len() < colors + 2 {
            return (vec![Vec::new(); colors], Vec::new());
        }
        let bucket = |c: usize| cs.colored[cs.color_offsets[c] as usize..cs.color_offsets[c + 1] as usize].to_vec();
        ((0..colors).map(bucket).collect(), bucket(colors))
    }

    fn handle(&self, body: BodyHandle) -> Result<usize> {
        let count = self.bodies.len() as u32;
        if body.0 < count { Ok(body.index()) } else { Err(Error::InvalidHandle { what: "body", index: body.0, count }) }
    }

    /// How the joints run: on the worker threads where there are any, and the kinds the lanes
    /// take (ball joints, coned or not, and hinges) in the solver's lanes.
    fn joint_run(&self) -> joints::Run {
        joints::Run { parallel: self.pool.is_some(), lanes: Some(self.simd) }
    }

    /// `times` iterations of the biased solve (`use_bias`) or of the relax iterations: each
    /// sweeps the joints, then the manifolds (all of the manifolds' iterations in one call
    /// where there are no joints).
    fn sweeps(&mut self, use_bias: bool, times: u32) {
        let bodies = self.params.body_contacts != 0;
        if self.joints.is_empty() {
            if bodies {
                self.manifold_passes(Pass::Solve(use_bias), times);
            }
            return;
        }
        let run = self.joint_run();
        for _ in 0..times {
            let (runs, bodies_out) = (&self.joint_runs, &mut self.bodies);
            joints::solve(&self.params, &mut self.joints, runs, bodies_out, &self.solver_bodies, run, use_bias);
            if bodies {
                self.manifold_passes(Pass::Solve(use_bias), 1);
            }
        }
    }

    /// One step on the calling thread (inside the pool, when there is one).
    fn step_here(&mut self) {
        let p = self.params;
        let bodies = p.body_contacts != 0;
        let mut t = StageTimes::default();
        let mut laps = Laps(std::time::Instant::now());
        self.restored_coloring = None;
        // The impulses applied since the last step, first.
        for e in &self.impulses.entries {
            e.apply(&mut self.bodies[e.body as usize], &self.props[e.body as usize]);
        }
        self.impulses.clear();
        if !self.breakable.is_empty() {
            let breaks = (&self.joint_breaks[..], &self.breakable[..]);
            joints::break_overloaded(&p, &mut self.joints, breaks, &mut self.topology, &self.bodies);
        }
        stages::narrow_phase(&mut self.buffers());
        laps.lap(&mut t.narrow_phase);
        if bodies {
            let mut cs = std::mem::take(&mut self.contacts_state);
            let view = self.body_view();
            contacts::broad_phase(&view, &mut cs);
            laps.lap(&mut t.broad_phase);
            contacts::collide_pairs(&view, &mut cs);
            laps.lap(&mut t.narrow_phase);
            contacts::color(&view, &mut cs);
            laps.lap(&mut t.coloring);
            self.contacts_state = cs;
        }
        joints::prepare(&p, &mut self.joints, &self.joint_colors, &self.bodies, &mut self.joint_runs);
        for _ in 0..p.substeps {
            laps.lap(&mut t.solve);
            stages::integrate_velocities(&mut self.buffers());
            laps.lap(&mut t.integrate);
            // Every warm start precedes every solve: the manifolds' first, then the joints',
            // then the planes' inside `solve_static`, so the ground feels the weight of what
            // rests on it.
            if bodies {
                self.manifold_passes(Pass::WarmStart, 1);
            }
            let run = self.joint_run();
            joints::warm_start(&mut self.joints, &self.joint_runs, &mut self.bodies, &self.solver_bodies, run);
            // Without static colliders the static passes would leave every body as it is.
            if p.collider_count > 0 {
                stages::solve_static(&mut self.buffers());
            }
            self.sweeps(true, p.iterations);
            laps.lap(&mut t.solve);
            // Particles meet the bodies between the bodies' velocity solve and their motion.
            if p.particle_collisions != 0 {
                let mut tables = particle_contacts::BodyTables {
                    bodies: &mut self.bodies,
                    props: &self.props,
                    shapes: &self.shapes,
                    topology: &self.topology,
                };
                particle_contacts::particle_contacts(
                    &self.params,
                    &self.geometry,
                    &self.colliders,
                    &mut tables,
                    &mut self.particles,
                    &mut self.particle_grid,
                    self.pool.is_some(),
                );
            }
            laps.lap(&mut t.particles);
            stages::integrate_positions(&mut self.buffers());
            self.contacts_state.positions_moved();
            laps.lap(&mut t.integrate);
            let parallel = self.pool.is_some();
            particles::advance_particles(&self.params, &self.geometry, &self.colliders, &mut self.particles, parallel);
            laps.lap(&mut t.particles);
            if p.relax_iterations > 0 {
                if p.collider_count > 0 {
                    stages::relax_static(&mut self.buffers());
                }
                self.sweeps(false, p.relax_iterations);
            }
        }
        // Where nothing can bounce, the restitution passes would change nothing (the overflow's
        // Jacobi averaging would add zeros), and the GPU does not record them.
        if self.bounces {
            stages::restitution(&mut self.buffers());
            if bodies {
                self.manifold_passes(Pass::Restitution, 1);
            }
        }
        if bodies {
            contacts::finish_step(&mut self.contacts_state);
        }
        laps.lap(&mut t.solve);
        self.stage_times = t;
        self.steps += 1;
    }
}

impl Solver for CpuSolver {
    fn backend(&self) -> String {
        "cpu".into()
    }

    fn step(&mut self) {
        match self.pool.clone() {
            Some(pool) => {
                // One step at a time on the pool (see `awake`); a step that panicked leaves the
                // pool as usable as before.
                let pool = pool.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                pool.install(|| awake(|| self.step_here()))
            }
            None => self.step_here(),
        }
    }

    /// Wall clock of the last step's stage groups (zero before the first step).
    fn stage_times(&self) -> Option<StageTimes> {
        Some(self.stage_times)
    }

    fn step_many(&mut self, n: u32) {
        for _ in 0..n {
            self.step();
        }
    }

    fn steps_taken(&self) -> u64 {
        self.steps
    }

    fn synchronize(&mut self) -> Result<()> {
        Ok(())
    }

    fn body_states(&mut self) -> Result<Vec<BodyState>> {
        let states = self.bodies.iter().zip(&self.frames).map(|(b, f)| f.user_state(b)).collect();
        crate::solver::finite("body", self.steps, states)
    }

    fn particle_states(&mut self) -> Result<Vec<crate::ParticleState>> {
        let states = self.particles.iter().map(GpuParticle::state);
        crate::solver::finite("particle", self.steps, states.collect())
    }

    fn body_state(&mut self, body: BodyHandle) -> Result<BodyState> {
        let i = self.handle(body)?;
        crate::solver::finite_state(body, self.steps, self.frames[i].user_state(&self.bodies[i]))
    }

    fn stats(&mut self) -> Result<StepStats> {
        let total = self.bodies.iter().zip(&self.props).fold(GpuStats::default(), |acc, (b, pr)| {
            let s =
                stages::body_stats(&self.params, b, pr, &self.shapes, &self.geometry, &self.colliders, &self.contacts);
            GpuStats {
                kinetic_energy: acc.kinetic_energy + s.kinetic_energy,
                max_penetration: acc.max_penetration.max(s.max_penetration),
                contacts: acc.contacts + s.contacts,
                dynamic_bodies: acc.dynamic_bodies + s.dynamic_bodies,
            }
        });
        let cs = std::mem::take(&mut self.contacts_state);
        let (count, deepest) = contacts::manifold_stats(&self.body_view(), &cs);
        self.contacts_state = cs;
        let total =
            GpuStats { contacts: total.contacts + count, max_penetration: total.max_penetration.max(deepest), ..total };
        let mut stats = crate::solver::stats_from(&self.params, self.steps, total);
        let (colors, overflow) = self.color_buckets();
        stats.colors = colors.iter().filter(|c| !c.is_empty()).count() as u32;
        stats.overflow = overflow.len() as u32;
        stats.recycled = self.contacts_state.manifolds.iter().map(|m| m.recycled).sum();
        if let Some([colors, overflow, recycled]) = self.restored_coloring {
            (stats.colors, stats.overflow, stats.recycled) = (colors, overflow, recycled);
        }
        stats.particle_body_dropped = self.particle_grid.dropped;
        crate::solver::finite_stats(stats)
    }

    fn joint_reactions(&mut self) -> Result<Vec<crate::JointReaction>> {
        let reactions = crate::joint::reactions(&self.joints, &self.joint_order, &self.bodies, self.params.h);
        crate::solver::finite("the reaction of joint", self.steps, reactions)
    }

    fn set_velocity(&mut self, body: BodyHandle, linear: Vec3, angular: Vec3) -> Result<()> {
        let i = self.handle(body)?;
        crate::error::check_speed("linear velocity", linear)?;
        crate::error::check_speed("angular velocity", angular)?;
        if self.props[i].kind == KIND_STATIC {
            return Err(Error::StaticBody { index: body.0 });
        }
        self.bodies[i].linear_velocity = linear;
        self.bodies[i].angular_velocity = angular;
        Ok(())
    }

    fn set_force(&mut self, body: BodyHandle, force: Vec3, torque: Vec3) -> Result<()> {
        let i = self.handle(body)?;
        let pr = &mut self.props[i];
        (pr.force, pr.torque) = crate::layout::checked_force(body, pr.kind, force, torque)?;
        Ok(())
    }

    fn set_gravity(&mut self, gravity: Vec3) -> Result<()> {
        check_finite("gravity", gravity, gravity.is_finite())?;
        self.params.gravity = gravity;
        Ok(())
    }

    fn set_collision_groups(&mut self, body: BodyHandle, groups: crate::CollisionGroups) -> Result<()> {
        let i = self.handle(body)?;
        self.props[i].set_groups(groups);
        // The broad phase filters its pairs once some body may refuse some.
        self.contacts_state.no_contact |= groups != crate::CollisionGroups::ALL;
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
        let scene = crate::query::RayScene {
            props: &self.props,
            shapes: &self.shapes,
            geometry: &self.geometry,
            colliders: &self.colliders,
            plane_count: self.params.plane_count,
        };
        Ok(crate::query::cast_ray(&scene, &self.bodies, ray, groups))
    }

    fn apply_impulse(&mut self, body: BodyHandle, impulse: Vec3, point: Vec3) -> Result<()> {
        let i = self.handle(body)?;
        self.impulses.add(body, self.bodies.len(), self.props[i].kind, impulse, point)
    }

    fn set_pose(&mut self, body: BodyHandle, position: Vec3, orientation: glam::Quat) -> Result<()> {
        let i = self.handle(body)?;
        let (position, orientation) = self.frames[i].checked_pose(body, self.props[i].kind, position, orientation)?;
        self.bodies[i].position = position;
        self.bodies[i].orientation = orientation;
        Ok(())
    }

    fn contacts(&mut self) -> Result<Vec<crate::Contact>> {
        let slot_ranges = crate::layout::SlotRange::of(&self.props, &self.shapes);
        let contacts =
            crate::solver::contact_reports(&self.params, &self.bodies, &slot_ranges, &self.contacts, self.manifolds());
        crate::solver::finite("contact", self.steps, contacts)
    }

    fn set_joint_motor(&mut self, joint: crate::JointHandle, motor: crate::JointMotor) -> Result<()> {
        let j = &mut self.joints[self.joint_slots.motor_slot(joint, &motor)?];
        (j.motor_speed, j.max_motor_effort) = (motor.speed, motor.max_effort);
        Ok(())
    }

    fn snapshot(&mut self) -> Result<Snapshot> {
        // Every particle has its kept slots where particles meet each other, as on the GPU,
        // also before the first step has filled them.
        let mut particle_contacts = self.particle_grid.contacts.clone();
        particle_contacts.resize(self.kept_particle_contacts(), Default::default());
        Ok(Snapshot {
            steps: self.steps,
            gravity: self.params.gravity,
            bodies: Snapshot::bodies_of(&self.bodies, &self.props, &self.solver_bodies),
            impulses: self.impulses.entries.iter().map(PendingImpulse::of).collect(),
            static_contacts: self.contacts.clone(),
            manifolds: self.contacts_state.manifolds.clone(),
            separating_faces: self.contacts_state.separated().iter().map(|&(q, face)| ([q.a, q.b], face)).collect(),
            joints: Snapshot::joints_of(&self.joints, &self.joint_order),
            particles: self.particles.iter().map(GpuParticle::state).collect(),
            particle_contacts,
        })
    }

    fn restore(&mut self, snapshot: &Snapshot) -> Result<()> {
        snapshot.check(&crate::snapshot::Expected {
            bodies: &self.bodies,
            props: &self.props,
            shapes: &self.shapes,
            static_slots: self.contacts.len(),
            joints: (&self.joints, &self.joint_order, &self.joint_breaks),
            particles: self.particles.len(),
            particle_contacts: self.kept_particle_contacts(),
            colliders: self.params.collider_count,
            max_colors: self.params.max_colors,
            body_contacts: self.params.body_contacts != 0 && self.bodies.len() > 1,
        })?;
        snapshot.apply_bodies(&mut self.bodies, &mut self.props, &mut self.solver_bodies);
        self.contacts_state.no_contact = ContactState::filters(&self.props);
        self.params.gravity = snapshot.gravity;
        self.impulses.replace(snapshot.impulses.iter().map(PendingImpulse::record), self.bodies.len());
        self.contacts.copy_from_slice(&snapshot.static_contacts);
        self.contacts_state.restore(&snapshot.manifolds, &snapshot.separating_faces);
        let topology = &mut self.topology;
        snapshot.apply_joints(&mut self.joints, &self.joint_order, &self.joint_breaks, |word, value| {
            topology[word as usize] = value;
        });
        snapshot.apply_particles(&mut self.particles);
        self.particle_grid.contacts.clone_from(&snapshot.particle_contacts);
        self.steps = snapshot.steps;
        self.restored_coloring = Some(snapshot.coloring());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::GpuPair;
    use crate::scenes::{bench_desc, rain};

    fn pairs(solver: &mut CpuSolver, brute_force: bool) -> Vec<GpuPair> {
        let mut cs = std::mem::take(&mut solver.contacts_state);
        cs.grid.brute_force = brute_force;
        contacts::broad_phase(&solver.body_view(), &mut cs);
        let out = cs.pairs.clone();
        cs.grid.brute_force = false;
        solver.contacts_state = cs;
        out
    }

    #[test]
    fn stage_times_split_the_step_and_do_not_change_it() {
        let world = rain(bench_desc(), 300, 3).expect("scene");
        let (mut timed, mut reference) = (CpuSolver::new(&world).expect("cpu"), CpuSolver::new(&world).expect("cpu"));
        assert_eq!(timed.stage_times(), Some(StageTimes::default()));
        for _ in 0..40 {
            timed.step();
            reference.step();
        }
        let t = timed.stage_times().expect("the CPU times its stages");
        // A rain without particles: every group but the particles' takes time.
        for (name, d) in t.groups().into_iter().filter(|&(name, _)| name != "particles") {
            assert!(d > std::time::Duration::ZERO, "{name} took no time");
        }
        assert_eq!(t.total(), t.broad_phase + t.narrow_phase + t.coloring + t.solve + t.integrate + t.particles);
        assert_eq!(timed.raw_bodies(), reference.raw_bodies(), "timing must not change the step");
    }

    /// 1,100 mixed shapes (spheres, boxes, capsules, hulls), every fifth bouncy, rained into an
    /// open box with a tilted plane across it, stepped on `threads` worker threads with at most
    /// `lanes` lanes.
    fn mixed_shapes_in_a_box(threads: u32, lanes: crate::CpuLanes) -> crate::World {
        let mut desc = bench_desc();
        desc.solver.cpu_threads = threads;
        desc.solver.cpu_lanes = lanes;
        let mut world = crate::World::new(desc).expect("world");
        let side = crate::scenes::add_container(&mut world, 1100).expect("container");
        world.add_plane(crate::Plane::new(Vec3::new(0.1, 1.0, 0.0), 0.3).restitution(0.3)).expect("plane");
        let mut rng = crate::scenes::Lcg(5);
        for i in 0..1100 {
            let e = if i % 5 == 0 { 0.6 } else { 0.0 };
            let body = crate::scenes::mixed_body(&mut rng, i).position(crate::scenes::rain_cell(i, side));
            world.add_body(body.restitution(e)).expect("body");
        }
        world
    }

    /// The joints of one color run on the worker threads with the same bits as on one: the
    /// benchmark's net of 10,000 spheres on 19,701 ball joints (4 colors of up to some 5,000
    /// joints), 20 steps on one, two and four threads.
    #[test]
    fn joint_colors_split_over_threads_with_the_same_bits() {
        let run = |threads: u32| {
            let mut desc = bench_desc();
            desc.solver.cpu_threads = threads;
            let mut solver = CpuSolver::new(&crate::scenes::joint_grid(desc).expect("grid")).expect("cpu");
            assert!(solver.joint_colors.windows(2).any(|c| c[1] - c[0] >= 2 * contacts::PARALLEL_RUN as u32));
            solver.step_many(20);
            solver.raw_bodies().to_vec()
        };
        let one = run(1);
        assert!(one.iter().any(|b| b.linear_velocity.length() > 0.1), "the net did not move");
        assert_eq!(run(2), one);
        assert_eq!(run(4), one);
    }

    /// Every stage that splits its work over threads splits independent items, so any thread
    /// count gives the same bits: 1,100 mixed shapes, some bouncy (the manifold-at-a-time
    /// passes), in an open box with a tilted plane across it (the per-body plane stages split
    /// their bodies), with runs of 8 so that every color's passes split, on up to eight threads.
    #[test]
    fn thread_counts_give_the_same_bits() {
        let run = |threads: u32| {
            let mut solver = CpuSolver::new(&mixed_shapes_in_a_box(threads, crate::CpuLanes::Sixteen)).expect("cpu");
            assert_eq!(solver.contacts_state.parallel, threads > 1);
            solver.contacts_state.run = 8;
            solver.step_many(60);
            // The colored passes split over the threads (`solve_colors_shared`).
            assert!(solver.contacts_state.colors_disjoint);
            let colors = solver.color_buckets().0.iter().map(Vec::len).max().unwrap_or(0);
            let on_plane = solver.contacts.iter().filter(|c| c.in_contact != 0).count();
            (solver.raw_bodies().to_vec(), solver.manifolds().to_vec(), colors, on_plane)
        };
        let (one, manifolds, largest_color, on_plane) = run(1);
        assert!(
            manifolds.len() > 2048 && largest_color >= 16 && on_plane > 300,
            "{} manifolds, largest color {largest_color}, {on_plane} plane contacts",
            manifolds.len()
        );
        // Eight threads on fewer cores: threads that wait for others to finish their runs.
        for threads in [2, 3, 8] {
            let (bodies, m, _, _) = run(threads);
            assert!(bodies == one, "{threads} threads: body states differ");
            assert!(
                bytemuck::cast_slice::<_, u32>(&m) == bytemuck::cast_slice::<_, u32>(&manifolds),
                "{threads} threads: manifolds differ"
            );
        }
    }

    /// Where nothing can bounce the step leaves its restitution passes out. Forced back in,
    /// they change nothing: 90 steps of a pile of 300 boxes with three colors (so that a
    /// Jacobi overflow, whose averaging still runs in the restitution pass, is never empty)
    /// end in equal states (as numbers: adding the overflow's zeros can turn a -0 into 0).
    #[test]
    fn restitution_passes_change_nothing_where_nothing_bounces() {
        let mut desc = crate::scenes::bench_desc();
        desc.solver.max_colors = 3;
        let world = crate::scenes::box_pile(desc, 300, 5).unwrap();
        assert!(!world.bodies_can_bounce());
        let mut left_out = CpuSolver::new(&world).unwrap();
        let mut forced = left_out.clone();
        forced.bounces = true;
        left_out.step_many(90);
        forced.step_many(90);
        let stats = forced.stats().unwrap();
        assert!(
            stats.overflow > 20 && stats.contacts > 1000,
            "overflow {}, contacts {}",
            stats.overflow,
            stats.contacts
        );
        for (i, (a, b)) in left_out.raw_bodies().iter().zip(forced.raw_bodies()).enumerate() {
            assert!(
                a.position == b.position
                    && a.orientation == b.orientation
                    && a.linear_velocity == b.linear_velocity
                    && a.angular_velocity == b.angular_velocity,
                "body {i}: {a:?} against {b:?}"
            );
        }
        // A bouncy body, plane or SDF collider turns the passes on.
        let mut bouncy = world.clone();
        let material = crate::Material { restitution: 0.3, ..Default::default() };
        bouncy.add_plane(crate::Plane { material, ..crate::Plane::new(Vec3::Y, -5.0) }).unwrap();
        assert!(bouncy.bodies_can_bounce());
    }

    /// Clones share the worker threads: two stepped at once from two threads both finish (one
    /// step at a time holds the pool), each with the bits of a clone stepped alone.
    #[test]
    fn clones_step_at_once() {
        let solver = CpuSolver::new(&mixed_shapes_in_a_box(2, crate::CpuLanes::Sixteen)).expect("cpu");
        let (mut a, mut b) = (solver.clone(), solver.clone());
        let (sent, finished) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let a = std::thread::spawn(move || {
                a.step_many(20);
                a
            });
            let b = std::thread::spawn(move || {
                b.step_many(20);
                b
            });
            let _ = sent.send((a.join().expect("a"), b.join().expect("b")));
        });
        let (a, b) = finished.recv_timeout(std::time::Duration::from_secs(300)).expect("both clones finished");
        let mut alone = solver;
        alone.step_many(20);
        assert!(a.raw_bodies() == alone.raw_bodies() && b.raw_bodies() == alone.raw_bodies());
    }

    /// A panic inside a step kept awake comes back out of the pool instead of leaving the other
    /// workers waiting for the step to end.
    #[test]
    fn a_panic_in_an_awake_step_comes_out() {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(3).build().expect("pool");
        let (sent, finished) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let caught = pool.install(|| {
                std::panic::catch_unwind(|| {
                    awake(|| {
                        // Work for the others first, so that they are in their waiting loop.
                        rayon::prelude::ParallelIterator::for_each(
                            rayon::prelude::IntoParallelIterator::into_par_iter(0..64),
                            |_| {
                                std::hint::black_box(());
                            },
                        );
                        panic!("inside the step")
                    })
                })
            });
            let _ = sent.send(caught.is_err());
        });
        let panicked = finished.recv_timeout(std::time::Duration::from_secs(60)).expect("the pool came back");
        assert!(panicked);
    }

    /// Every lane width gives the same bits over a whole run: the mixed shapes (spheres, boxes,
    /// capsules, hulls, some bouncy) of `thread_counts_give_the_same_bits` for 60 steps on one
    /// thread with [`crate::CpuLanes`] four, eight and sixteen. (A processor without AVX-512 or
    /// AVX runs the widest it has for the wider settings, and the test says so.)
    #[test]
    fn every_lane_width_gives_the_same_bits() {
        let run = |max: crate::CpuLanes| {
            let mut solver = CpuSolver::new(&mixed_shapes_in_a_box(1, max)).expect("cpu");
            assert!(solver.cpu_lanes() <= max.count());
            solver.step_many(60);
            (solver.cpu_lanes(), solver.raw_bodies().to_vec(), solver.manifolds().to_vec())
        };
        let (_, four, four_manifolds) = run(crate::CpuLanes::Four);
        assert!(four_manifolds.len() > 2048, "{} manifolds", four_manifolds.len());
        for max in [crate::CpuLanes::Eight, crate::CpuLanes::Sixteen] {
            let (lanes, bodies, manifolds) = run(max);
            if lanes < max.count() {
                eprintln!("at most {lanes} lanes on this processor");
            }
            assert!(bodies == four, "{lanes} lanes: body states differ");
            assert!(
                bytemuck::cast_slice::<_, u32>(&manifolds) == bytemuck::cast_slice::<_, u32>(&four_manifolds),
                "{lanes} lanes: manifolds differ"
            );
        }
    }

    /// The particle stages split particles over threads the same way: 3,000 bouncy particles
    /// poured into a bowl with 12 boxes dropped on them, the same bits on 1 and 2 threads.
    #[test]
    fn particle_thread_counts_give_the_same_bits() {
        let run = |threads: u32| {
            let mut desc = bench_desc();
            desc.solver.cpu_threads = threads;
            desc.particles.material = crate::Material::new(0.4, 0.3);
            let world = crate::scenes::particle_bowl_with_bodies(desc, 3000, 12, 3).expect("scene");
            let mut solver = CpuSolver::new(&world).expect("cpu");
            solver.step_many(90);
            let touching = solver.particle_body_lists().iter().map(Vec::len).sum::<usize>();
            (solver.particles.clone(), solver.raw_bodies().to_vec(), touching)
        };
        let (particles, bodies, touching) = run(1);
        assert!(touching > 20, "{touching} particle-body contacts: the boxes must land on the particles");
        let (p2, b2, _) = run(2);
        assert!(bytemuck::cast_slice::<_, u32>(&p2) == bytemuck::cast_slice::<_, u32>(&particles), "particles differ");
        assert!(b2 == bodies, "bodies differ");
    }

    /// The grid scan is exact where cells clamp and when its items are split in runs: a cloud
    /// of boxes straddling the cell limit (`GRID_CELL_LIMIT` cells out, where every body
    /// beyond shares the boundary cells, and f32 positions are half a metre apart), and a rain
    /// scanned in runs over the threads (each run with its own row cursors), both against
    /// every pair.
    #[test]
    fn grid_broad_phase_is_exact_at_the_cell_limit_and_in_runs() {
        let mut rng = crate::scenes::Lcg(5);
        let boxes: Vec<(Vec3, Vec3)> = (0..600)
            .map(|_| {
                let offset = Vec3::new(rng.range(-4.0, 4.0), rng.range(-3.0, 3.0), rng.range(-4.0, 4.0));
                (offset, Vec3::new(rng.range(0.15, 0.28), rng.range(0.15, 0.28), rng.range(0.15, 0.28)))
            })
            .collect();
        let cloud = |centre: Vec3| {
            let mut world = crate::World::new(bench_desc()).unwrap();
            for &(offset, half) in &boxes {
                let body = crate::RigidBodyDesc::dynamic(crate::Shape::cuboid(half)).position(centre + offset);
                world.add_body(body).unwrap();
            }
            world
        };
        // The grid depends on the shapes only: the same at the origin as far out.
        let cell_size = CpuSolver::new(&cloud(Vec3::ZERO)).unwrap().contacts_state.grid.cell_size;
        let edge = contacts::GRID_CELL_LIMIT * cell_size;
        let mut solver = CpuSolver::new(&cloud(Vec3::new(edge, 0.0, -edge))).unwrap();
        let grid = solver.contacts_state.grid;
        assert!(!grid.brute_force);
        let clamped = solver.bodies.iter().filter(|b| grid.cell(b.position)[0] == contacts::GRID_CELL_LIMIT as i32);
        assert!((100..500).contains(&clamped.count()), "some bodies in the boundary cells, some within");
        let (grid, all) = (pairs(&mut solver, false), pairs(&mut solver, true));
        assert!(grid.len() > 100, "{} pairs", grid.len());
        assert_eq!(grid, all);

        let mut solver = CpuSolver::new(&rain(bench_desc(), 3000, 9).unwrap()).unwrap();
        solver.step_many(30);
        let one_run = pairs(&mut solver, false);
        solver.contacts_state.parallel = true;
        let runs = pairs(&mut solver, false);
        solver.contacts_state.parallel = false;
        assert!(one_run.len() > 1000, "{} pairs", one_run.len());
        assert_eq!(runs, one_run);
        assert_eq!(runs, pairs(&mut solver, true));
    }

    #[test]
    fn grid_broad_phase_finds_exactly_the_overlapping_pairs() {
        let (mixed, big) = crate::scenes::mixed_sizes(bench_desc(), 2000, 3).unwrap();
        let big = big.0;
        for (world, big) in [(rain(bench_desc(), 3000, 9).unwrap(), None), (mixed, Some(big))] {
            let mut solver = CpuSolver::new(&world).unwrap();
            assert!(!solver.contacts_state.grid.brute_force);
            for _ in 0..3 {
                solver.step_many(30);
                let (grid, all) = (pairs(&mut solver, false), pairs(&mut solver, true));
                assert!(grid.len() > 100, "{} pairs", grid.len());
                assert_eq!(grid, all);
                if let Some(big) = big {
                    assert!(grid.iter().filter(|p| p.a == big || p.b == big).count() > 50);
                }
            }
        }
    }
}
