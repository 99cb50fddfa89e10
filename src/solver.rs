//! The interface both backends implement, and the statistics they report.

use glam::{Quat, Vec3};

use crate::body::{BodyHandle, BodyState};
use crate::error::Result;

/// Physical statistics of the current state and of the last step.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(deny_unknown_fields))]
pub struct StepStats {
    /// Steps taken since the solver was built.
    pub steps: u64,
    /// Active contacts in the last step (speculative ones included).
    pub contacts: u32,
    /// Solver iterations per step: substeps x (biased + relax iterations).
    pub iterations: u32,
    /// Largest penetration of any dynamic body into any plane in the current state, m
    /// (0 when nothing penetrates).
    pub max_penetration: f32,
    /// Kinetic energy of the dynamic bodies, `Σ ½ m v² + ½ ωᵀ I ω`, J.
    pub kinetic_energy: f32,
    /// Number of dynamic bodies.
    pub dynamic_bodies: u32,
    /// Graph colors holding body-body constraints in the last step.
    pub colors: u32,
    /// Body-body constraints beyond the colors, solved by mass-splitting Jacobi, last step.
    pub overflow: u32,
    /// Body-body manifolds of the last step carried over from the step before without the
    /// narrow phase (see [`SolverSettings::recycle_contacts`](crate::SolverSettings::recycle_contacts)).
    pub recycled: u32,
    /// Pairs or manifolds that did not fit the GPU's buffers in the last step read back; the
    /// buffers grow for the next step, up to what one binding of the device holds (5,592,405
    /// pairs and manifolds where a binding is 2 GiB), and past that the steps go on without
    /// what did not fit. Always 0 on the CPU.
    pub dropped: u32,
    /// Particle-body contacts dropped in the last step because a particle touched more than
    /// [`PARTICLE_BODY_SLOTS`](crate::particles::PARTICLE_BODY_SLOTS) bodies at once.
    pub particle_body_dropped: u32,
}

/// Where one step's time went, by group of stages: wall clock on the CPU solver, GPU
/// timestamps on the GPU solver (see [`GpuSolver::time_stages`](crate::GpuSolver::time_stages)).
/// The groups interleave over the substeps; each sums its own intervals.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct StageTimes {
    /// Candidate body pairs from the grid (or every pair in tiny scenes).
    pub broad_phase: std::time::Duration,
    /// Plane contacts and body-pair manifolds with their warm starts.
    pub narrow_phase: std::time::Duration,
    /// Graph coloring, buckets and the Jacobi split.
    pub coloring: std::time::Duration,
    /// Warm starts, biased and relax passes over static colliders, manifolds and joints,
    /// restitution.
    pub solve: std::time::Duration,
    /// Velocity and position integration over all substeps.
    pub integrate: std::time::Duration,
    /// Particles: their grid, their contacts with each other and with bodies, and their motion
    /// swept against the static colliders, over all substeps.
    pub particles: std::time::Duration,
}

impl StageTimes {
    /// Every group with its name (the field's), in the order of the fields.
    pub fn groups(&self) -> [(&'static str, std::time::Duration); 6] {
        [
            ("broad_phase", self.broad_phase),
            ("narrow_phase", self.narrow_phase),
            ("coloring", self.coloring),
            ("solve", self.solve),
            ("integrate", self.integrate),
            ("particles", self.particles),
        ]
    }

    /// The sum over the groups: the step.
    pub fn total(&self) -> std::time::Duration {
        self.groups().iter().map(|&(_, d)| d).sum()
    }
}

/// A contact solver stepping a [`World`](crate::World): the GPU solver and the CPU reference
/// solver implement the same stages and are used through this one interface.
///
/// Its reads (`body_states`, `body_state`, `particle_states`, `stats`, `contacts`,
/// `joint_reactions`) never return a NaN: where finite but extreme input made a step overflow,
/// they return [`Error::Diverged`](crate::Error::Diverged) naming the first item that holds it.
pub trait Solver {
    /// A short description of the backend, e.g. `"cpu"` or `"gpu: NVIDIA H100 (Vulkan)"`.
    fn backend(&self) -> String;

    /// Advances the world by one time step. On the GPU this records and submits work and
    /// returns without waiting for it.
    fn step(&mut self);

    /// Advances the world by `n` steps. On the GPU all of them go into one command buffer
    /// with no round trip to the CPU.
    fn step_many(&mut self, n: u32);

    /// Steps taken since the solver was built.
    fn steps_taken(&self) -> u64;

    /// Waits until every submitted step has finished (a no-op on the CPU). Timing code calls
    /// it; nothing else needs to, since reads wait by themselves.
    fn synchronize(&mut self) -> Result<()>;

    /// The state of every body, in handle order. On the GPU this waits for the queued steps
    /// and reads the bodies back.
    fn body_states(&mut self) -> Result<Vec<BodyState>>;

    /// The state of every particle, in the order they were added. On the GPU this waits for
    /// the queued steps and reads them back.
    fn particle_states(&mut self) -> Result<Vec<crate::ParticleState>>;

    /// The state of one body.
    fn body_state(&mut self, body: BodyHandle) -> Result<BodyState>;

    /// Statistics of the current state and of the last step. On the GPU the sums are
    /// reduced there and only a few bytes come back.
    fn stats(&mut self) -> Result<StepStats>;

    /// What every joint did in the last substep ([`JointReaction`](crate::JointReaction)), in
    /// the order the joints were added; empty without joints. On the GPU this waits for the
    /// queued steps and reads the joints back.
    fn joint_reactions(&mut self) -> Result<Vec<crate::JointReaction>>;

    /// Sets the velocity of a dynamic or kinematic body's centre of mass (m/s) and its angular
    /// velocity (world frame, rad/s); takes effect from the next step.
    ///
    /// # Errors
    /// [`Error::InvalidHandle`](crate::Error::InvalidHandle) for a handle of another world,
    /// [`Error::StaticBody`](crate::Error::StaticBody) for a static body,
    /// [`Error::NonFinite`](crate::Error::NonFinite) for NaN or infinite input,
    /// [`Error::OutOfRange`](crate::Error::OutOfRange) for a speed whose square overflows f32
    /// (past 1.8e19).
    fn set_velocity(&mut self, body: BodyHandle, linear: Vec3, angular: Vec3) -> Result<()>;

    /// Applies a constant force through a dynamic body's centre of mass and a constant torque
    /// (world frame, N and N m) from the next step on, in every substep as gravity is, until
    /// they are set again (zeros take them off). The force adds to the body's acceleration
    /// `F / m` beside gravity's (a force of `-m g` holds it floating); the torque turns it by
    /// `I⁻¹ τ` before the gyroscopic term. The restitution stage's energy bound counts the
    /// force's work as it counts gravity's, not the torque's; a speculative contact's estimate
    /// of the speed at which it closes (integrated to the time of contact) counts gravity
    /// alone.
    ///
    /// # Errors
    /// [`Error::InvalidHandle`](crate::Error::InvalidHandle) for a handle of another world,
    /// [`Error::NotDynamic`](crate::Error::NotDynamic) for a static or kinematic body,
    /// [`Error::NonFinite`](crate::Error::NonFinite) for NaN or infinite input.
    fn set_force(&mut self, body: BodyHandle, force: Vec3, torque: Vec3) -> Result<()>;

    /// Sets the gravitational acceleration (m/s², world frame) from the next step on, for the
    /// bodies and the particles, as [`WorldDesc::gravity`](crate::WorldDesc::gravity) set it
    /// when the solver was built (the world's description keeps the value it was built with).
    /// Everything that reads gravity reads the new value: the integration, the speculative
    /// contacts' approach speeds and the restitution stage's energy bound.
    ///
    /// # Errors
    /// [`Error::NonFinite`](crate::Error::NonFinite) for NaN or infinite input.
    fn set_gravity(&mut self, gravity: Vec3) -> Result<()>;

    /// Sets the collision groups of a body of any kind ([`CollisionGroups`](crate::CollisionGroups))
    /// from the next step: its broad phase finds the pairs they let meet and passes over those
    /// they keep apart, contacts carried from the last step included. A body let through
    /// another falls through it; one that meets again a body it overlaps is pushed out of it,
    /// as any overlap is. Static planes, fields and particles meet every body whatever its
    /// groups.
    ///
    /// # Errors
    /// [`Error::InvalidHandle`](crate::Error::InvalidHandle) for a handle of another world.
    fn set_collision_groups(&mut self, body: BodyHandle, groups: crate::CollisionGroups) -> Result<()>;

    /// The first body, static plane or field that a ray from `origin` along `direction` meets
    /// within `max_distance` (m; infinite for no limit), in the current state: the bodies that
    /// `groups` lets through (`groups.interact` with the body's groups; pass
    /// [`CollisionGroups::ALL`](crate::CollisionGroups::ALL) for every body), every collider.
    /// Exact for spheres, capsules, boxes, hulls and planes; a field is sphere traced to within
    /// [`RAY_FIELD_TOLERANCE`](crate::RAY_FIELD_TOLERANCE) of its surface (as exact as its
    /// distance). A ray that starts inside something hits it at distance 0. The bodies are
    /// tested one by one, each against its bounding sphere first: a query, not for millions of
    /// rays a step. On the GPU this waits for the queued steps and reads the bodies back.
    ///
    /// # Errors
    /// [`Error::NonFinite`](crate::Error::NonFinite) for a NaN or infinite origin or direction,
    /// [`Error::OutOfRange`](crate::Error::OutOfRange) for a zero direction or a length that is
    /// not positive.
    fn cast_ray(
        &mut self,
        origin: Vec3,
        direction: Vec3,
        max_distance: f32,
        groups: crate::CollisionGroups,
    ) -> Result<Option<crate::RayHit>>;

    /// Applies an impulse (world frame, N s) at a world point to a dynamic body, at the start of
    /// the next step: its velocity changes by `J / m` and its spin by `I⁻¹ (r × J)`, `r` from
    /// its centre of mass then to `point`. Impulses applied to one body before a step add up.
    /// For a push over time use [`Solver::set_force`], which acts in every substep.
    ///
    /// # Errors
    /// [`Error::InvalidHandle`](crate::Error::InvalidHandle) for a handle of another world,
    /// [`Error::NotDynamic`](crate::Error::NotDynamic) for a static or kinematic body,
    /// [`Error::NonFinite`](crate::Error::NonFinite) for NaN or infinite input.
    fn apply_impulse(&mut self, body: BodyHandle, impulse: Vec3, point: Vec3) -> Result<()>;

    /// Moves a dynamic or kinematic body to a pose: `position` and `orientation` are its own
    /// frame's, as in [`RigidBodyDesc`](crate::RigidBodyDesc) (the orientation is normalized);
    /// its velocities stay. It takes effect from the next step, which finds the body's contacts
    /// afresh where it moved (a resting pair's kept contact is dropped once its anchors part).
    /// A body moved into another is pushed out of it over the next steps, as any overlap is;
    /// a body moved away from a joint's partner is pulled back by the joint.
    ///
    /// # Errors
    /// [`Error::InvalidHandle`](crate::Error::InvalidHandle) for a handle of another world,
    /// [`Error::StaticBody`](crate::Error::StaticBody) for a static body (move a kinematic one
    /// instead), [`Error::NonFinite`](crate::Error::NonFinite) for NaN or infinite input,
    /// [`Error::DegenerateShape`](crate::Error::DegenerateShape) for a zero quaternion.
    fn set_pose(&mut self, body: BodyHandle, position: Vec3, orientation: Quat) -> Result<()>;

    /// Sets the motor of a hinge or a slider that was given one when it was added
    /// ([`JointDesc::motor`](crate::JointDesc::motor); `.motor(0.0, 0.0)` adds one that starts
    /// off): the relative speed it drives towards and the most torque or force it may apply,
    /// from the next step. The impulse it carries from the last substep is bounded by the new
    /// effort within the first substep (the solve clamps what it accumulates, warm start
    /// included), so lowering the effort takes effect at once. A broken joint takes the
    /// setting and does nothing with it.
    ///
    /// # Errors
    /// [`Error::InvalidHandle`](crate::Error::InvalidHandle) for a handle of another world,
    /// [`Error::InvalidJoint`](crate::Error::InvalidJoint) for a joint without a motor,
    /// [`Error::NonFinite`](crate::Error::NonFinite) for NaN or infinite input,
    /// [`Error::OutOfRange`](crate::Error::OutOfRange) for a negative effort.
    fn set_joint_motor(&mut self, joint: crate::JointHandle, motor: crate::JointMotor) -> Result<()>;

    /// The contact points the last step solved, with the force each applied ([`Contact`]): by
    /// body, then by what it touched; empty before the first step. Contacts between a body and
    /// particles are not among them. On the GPU this waits for the queued steps and reads the
    /// bodies, contact slots and manifolds back.
    fn contacts(&mut self) -> Result<Vec<Contact>>;

    /// The solver's state now ([`Snapshot`](crate::Snapshot)): the bodies' motion and what the
    /// program set on them, gravity, pending impulses, every contact's and joint's warm start,
    /// broken joints and motors, the particles, and the step count. Restored
    /// ([`Solver::restore`]) into a solver of the same world and backend, the steps that follow
    /// are this solver's to the bit. On the GPU this waits for the queued steps and reads the
    /// state back.
    fn snapshot(&mut self) -> Result<crate::Snapshot>;

    /// Puts a [`Snapshot`](crate::Snapshot) of this world back, from either backend: into a
    /// solver just built from the world (resuming a saved run) or into one that has stepped on
    /// since (going back to an earlier step), including a joint that broke after it was
    /// taken, which holds again. Everything it holds is replaced, and the reads give it back
    /// ([`Solver::contacts`] the snapshot's contacts, [`Solver::stats`] the figures of its
    /// manifolds: colors, overflow, recycled); the world and the settings stay, and so do the
    /// statistics' counts of what the solver's own last step dropped (`dropped`,
    /// `particle_body_dropped`). On the GPU
    /// this writes the state ahead of the next step, after reading the bodies, joints and
    /// particles back.
    ///
    /// # Errors
    /// [`Error::InvalidSnapshot`](crate::Error::InvalidSnapshot) for a snapshot of another world
    /// (other counts of bodies, joints, particles or contact slots, a static body elsewhere) or
    /// one holding what no step leaves (a number that is not finite, an index out of range, a
    /// list out of order, a force on a body that is not dynamic, a motor or a break the world's
    /// joint cannot have), and then the solver is as it was; on the GPU
    /// [`Error::OutOfMemory`](crate::Error::OutOfMemory) or
    /// [`Error::BufferTooLarge`](crate::Error::BufferTooLarge) where its contacts need buffers
    /// the device cannot hold, and [`Error::Readback`](crate::Error::Readback).
    fn restore(&mut self, snapshot: &crate::Snapshot) -> Result<()>;

    /// Where the last timed step's time went, by group of stages, when the backend measures it:
    /// the CPU solver always does (wall clock); the GPU solver does once
    /// [`GpuSolver::time_stages`](crate::GpuSolver::time_stages) is on (timestamps of the last
    /// step of each [`Solver::step_many`], available after [`Solver::synchronize`]).
    fn stage_times(&self) -> Option<StageTimes> {
        None
    }
}

/// A static plane, a static signed distance field or a body: what a reported [`Contact`]
/// touched besides its body (a body there has a higher handle than the contact's), or what a
/// ray hit ([`Solver::cast_ray`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum Collidable {
    /// A static plane.
    Plane(crate::PlaneHandle),
    /// A static signed distance field.
    Sdf(crate::SdfHandle),
    /// A body.
    Body(BodyHandle),
}

/// A contact point the last step solved, as [`Solver::contacts`] reports it: with a plane or
/// an SDF, one per core point of a dynamic body (and per surface of a field it meets), and
/// between two bodies the points of their manifold, speculative ones (still apart) included.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(deny_unknown_fields))]
pub struct Contact {
    /// The body: with [`Collidable::Body`], the pair's lower handle.
    pub body: BodyHandle,
    /// What it touched.
    pub with: Collidable,
    /// Where, world frame, m: midway between the two surfaces as the last step found them,
    /// carried by the bodies' centres to where they are now (not turned with them).
    pub point: Vec3,
    /// Unit normal, world frame, from what `body` touched towards `body`.
    pub normal: Vec3,
    /// The surfaces' separation along the normal when the last step found the contact, m
    /// (negative where they overlapped; positive for a speculative contact, which acts only
    /// if the gap closes within the step).
    pub separation: f32,
    /// The force the contact applied to `body` over the last substep (its normal and friction
    /// impulses over the substep's length, as [`Solver::joint_reactions`] reports joints), N:
    /// its normal part along `normal`, at least 0, zero for a contact that did not act. `with`
    /// received its opposite. A bounce's restitution impulse, which the restitution stage adds
    /// after the substeps, is in it too, over the same substep length: at an impact that
    /// bounces the force spikes accordingly.
    pub force: Vec3,
}

/// The contacts of a step's static contact slots and body manifolds, by body and then by what
/// each touched (the order of [`Collidable`]), in slot and point order within one pair: what
/// both solvers report from the same records. `slot_ranges[i]` is where body `i`'s slots are;
/// `bodies` are the states now.
pub(crate) fn contact_reports(
    params: &crate::layout::StepParams,
    bodies: &[crate::layout::GpuBody],
    slot_ranges: &[crate::layout::SlotRange],
    slots: &[crate::layout::GpuStaticContact],
    manifolds: &[crate::layout::GpuManifold],
) -> Vec<Contact> {
    let h = params.h;
    let mut out = Vec::new();
    let sdfs = params.collider_count - params.plane_count;
    for (i, (b, &crate::layout::SlotRange { first, points, radius })) in bodies.iter().zip(slot_ranges).enumerate() {
        let count = points * (params.collider_count + 2 * sdfs);
        for (k, c) in slots[first as usize..][..count as usize].iter().enumerate() {
            if c.in_contact == 0 {
                continue;
            }
            // The slots: one block of `points` per collider, then one per field for its
            // second surfaces, one per field for its third (`cpu::stages::surface_slot`).
            let block = k as u32 / points;
            let collider = if block < params.collider_count {
                block
            } else {
                params.plane_count + (block - params.collider_count) % sdfs
            };
            let with = if collider < params.plane_count {
                Collidable::Plane(crate::PlaneHandle::from_index(collider as usize))
            } else {
                Collidable::Sdf(crate::SdfHandle::from_index((collider - params.plane_count) as usize))
            };
            let n = c.normal;
            let (t1, t2) = crate::math::tangent_basis(n);
            // `base_separation` is the separation less the core point's `anchor + radius n`
            // along the normal.
            let separation = c.base_separation + n.dot(c.anchor) + radius;
            out.push(Contact {
                body: BodyHandle(i as u32),
                with,
                point: b.position + c.anchor - 0.5 * separation * n,
                normal: n,
                separation,
                force: (c.normal_impulse * n + c.tangent_impulse_1 * t1 + c.tangent_impulse_2 * t2) / h,
            });
        }
    }
    for m in manifolds {
        let (a, b, n) = (&bodies[m.body_a as usize], &bodies[m.body_b as usize], m.normal);
        let (t1, t2) = crate::math::tangent_basis(n);
        for q in m.points.iter().take(m.count as usize) {
            let on_a = a.position + q.core_a + m.radius_a * n;
            let on_b = b.position + q.core_b - m.radius_b * n;
            let impulse = q.normal_impulse * n + q.tangent_impulse_1 * t1 + q.tangent_impulse_2 * t2;
            out.push(Contact {
                body: BodyHandle(m.body_a),
                with: Collidable::Body(BodyHandle(m.body_b)),
                point: 0.5 * (on_a + on_b),
                // From B towards A, and the impulse's opposite: what A received.
                normal: -n,
                separation: q.base_separation + n.dot(q.core_b - q.core_a),
                force: -impulse / h,
            });
        }
    }
    // Stable: within one pair the slots' and points' order stays.
    out.sort_by_key(|c| (c.body, c.with));
    out
}

/// What a read returns, checked for numbers that are not finite (never a silent NaN).
pub(crate) trait Finite {
    /// Whether every number of it is finite.
    fn finite(&self) -> bool;
}

// A state's speeds must also have finite squares, as its inputs must
// (`error::check_speed`): past that the solver's measures of speed overflow.
impl Finite for BodyState {
    fn finite(&self) -> bool {
        self.is_finite()
            && self.linear_velocity.length_squared().is_finite()
            && self.angular_velocity.length_squared().is_finite()
    }
}

impl Finite for crate::ParticleState {
    fn finite(&self) -> bool {
        self.is_finite() && self.velocity.length_squared().is_finite()
    }
}

impl Finite for Contact {
    fn finite(&self) -> bool {
        self.point.is_finite() && self.normal.is_finite() && self.separation.is_finite() && self.force.is_finite()
    }
}

impl Finite for crate::JointReaction {
    fn finite(&self) -> bool {
        self.force.is_finite() && self.torque.is_finite()
    }
}

/// `items` as read after `step` steps, or [`Error::Diverged`](crate::Error::Diverged) naming the
/// first that is not finite (`what` and its index: `"body"` gives `"body 17"`).
pub(crate) fn finite<T: Finite>(what: &str, step: u64, items: Vec<T>) -> Result<Vec<T>> {
    match items.iter().position(|x| !x.finite()) {
        Some(i) => Err(crate::Error::Diverged { what: format!("{what} {i}"), step }),
        None => Ok(items),
    }
}

/// One body's state, or [`Error::Diverged`](crate::Error::Diverged) where it is not finite.
pub(crate) fn finite_state(body: BodyHandle, step: u64, state: BodyState) -> Result<BodyState> {
    if state.finite() {
        return Ok(state);
    }
    Err(crate::Error::Diverged { what: format!("body {}", body.index()), step })
}

/// Step statistics, or [`Error::Diverged`](crate::Error::Diverged) where the bodies' kinetic
/// energy or deepest penetration is not finite.
pub(crate) fn finite_stats(stats: StepStats) -> Result<StepStats> {
    if stats.kinetic_energy.is_finite() && stats.max_penetration.is_finite() {
        return Ok(stats);
    }
    let what = if stats.kinetic_energy.is_finite() { "the deepest penetration" } else { "the bodies' kinetic energy" };
    Err(crate::Error::Diverged { what: what.into(), step: stats.steps })
}

/// Step statistics from the reduced per-body sums.
pub(crate) fn stats_from(params: &crate::layout::StepParams, steps: u64, total: crate::layout::GpuStats) -> StepStats {
    StepStats {
        steps,
        contacts: total.contacts,
        iterations: params.substeps * (params.iterations + params.relax_iterations),
        max_penetration: total.max_penetration,
        kinetic_energy: total.kinetic_energy,
        dynamic_bodies: total.dynamic_bodies,
        ..StepStats::default()
    }
}
