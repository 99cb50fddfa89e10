//! The state of a running solver ([`Snapshot`]): what [`Solver::snapshot`](crate::Solver::snapshot)
//! takes and [`Solver::restore`](crate::Solver::restore) puts back, so that a simulation can be
//! saved and resumed (a checkpoint of a long run, a rollback to an earlier step), on either
//! backend.
//!
//! A snapshot holds everything a step reads that earlier steps or the program changed: the
//! bodies' motion, the forces, torques and collision groups set on them, gravity, the impulses
//! applied since the last step, the warm starts of every contact (static contact slots,
//! body-body manifolds with their contact frames and colors, the faces that kept pairs of
//! polytopes apart, the particles' kept contacts) and of every joint, which joints broke and
//! their motors, the particles' motion, and the step count. What it does not hold is what the
//! world describes and never changes (shapes, masses, materials, joint frames, settings): a
//! snapshot is restored into a solver of the same world, which it is checked against.
//!
//! Restored into a solver of the same backend, the steps that follow are those the solver that
//! took it would have stepped, to the bit (on the GPU, on the same adapter). Restored into the
//! other backend they are as close as the two backends' steps ever are (tests/snapshot.rs: 704
//! stacked boxes taken on the CPU and restored on the GPU, 3.6e-7 m apart ten steps later; the
//! same state without its manifolds ends 8.6 cm from the CPU's own run, as the block jolts
//! when its warm starts begin from zero).
//!
//! A snapshot holds no settings: a solver of the same bodies, joints, particles and colliders
//! built with other settings (threads, lanes, the GPU's buffer sizes or fused sweeps) restores
//! it and steps on with its own. Within one world every setting may differ but the colors
//! ([`SolverSettings::max_colors`](crate::SolverSettings::max_colors): a manifold's color must
//! be one of the solver's) and what decides whether there are manifolds and kept particle
//! contacts at all (whether bodies meet each other, whether particles do).
//!
//! A snapshot also carries a running simulation into a bigger world, with more bodies, joints
//! and particles added after the old ones ([`Snapshot::extended_to`]): the old ones keep their
//! state and warm starts.
//!
//! ```
//! use signorini::prelude::*;
//!
//! let mut world = World::new(WorldDesc::default())?;
//! world.add_plane(Plane::new(Vec3::Y, 0.0))?;
//! world.add_body(RigidBodyDesc::dynamic(Shape::cuboid(Vec3::splat(0.5))).position(Vec3::new(0.0, 0.6, 0.0)))?;
//! let mut solver = CpuSolver::new(&world)?;
//! solver.step_many(30);
//! let saved = solver.snapshot()?;
//! solver.step_many(30);
//! let ahead = solver.body_states()?;
//! // Back to step 30, and on again: the same bits.
//! solver.restore(&saved)?;
//! solver.step_many(30);
//! assert_eq!(solver.body_states()?, ahead);
//! // A solver just built resumes it too.
//! let mut resumed = CpuSolver::new(&world)?;
//! resumed.restore(&saved)?;
//! resumed.step_many(30);
//! assert_eq!(resumed.body_states()?, ahead);
//! # Ok::<(), signorini::Error>(())
//! ```

use glam::{Quat, Vec3};

use crate::body::{BodyHandle, CollisionGroups};
use crate::collide::MAX_MANIFOLD_POINTS;
use crate::error::{Error, Result};
use crate::joint::JointMotor;
use crate::layout::{
    GpuBody, GpuBodyProps, GpuImpulse, GpuJoint, GpuJointBreak, GpuManifold, GpuParticle, GpuParticleContact, GpuShape,
    GpuSolverBody, GpuStaticContact, JOINT_BROKEN, JOINT_MOTOR, KIND_DYNAMIC, KIND_STATIC, NO_BODY, OVERFLOW_COLOR,
};
use crate::particles::PARTICLE_CONTACT_COLLIDER;

/// The state of a running solver (see [the module](self)). Built by
/// [`Solver::snapshot`](crate::Solver::snapshot); with the `serde` feature it is written and
/// read as any serde format.
#[derive(Clone, Debug, Default, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(deny_unknown_fields))]
pub struct Snapshot {
    /// Steps the solver had taken ([`Solver::steps_taken`](crate::Solver::steps_taken)).
    pub steps: u64,
    /// Gravity, m/s² ([`Solver::set_gravity`](crate::Solver::set_gravity)).
    pub gravity: Vec3,
    /// Every body, in handle order.
    pub bodies: Vec<BodySnapshot>,
    /// The impulses applied since the last step ([`Solver::apply_impulse`](crate::Solver::apply_impulse)),
    /// summed by body, applied at the start of the next step.
    pub impulses: Vec<PendingImpulse>,
    /// The static contact slots of the last step: every dynamic body's contacts with the
    /// planes and fields, with their accumulated impulses, in the solvers' slot order.
    pub static_contacts: Vec<GpuStaticContact>,
    /// The body-body manifolds of the last step, in pair order (`(body_a, body_b)` ascending):
    /// the next step's warm starts, kept contact frames, recycled contacts and color seeds.
    pub manifolds: Vec<GpuManifold>,
    /// The pairs of polytopes that a face kept apart in the last step, `(a, b)` ascending, with
    /// that face (A's, or B's with the top bit set): the next step tries it first.
    pub separating_faces: Vec<SeparatingFace>,
    /// Every joint, in the order they were added.
    pub joints: Vec<JointSnapshot>,
    /// Every particle, in the order they were added.
    pub particles: Vec<crate::ParticleState>,
    /// The particles' kept contacts with each other and the colliders,
    /// [`PARTICLE_CONTACT_SLOTS`](crate::particles::PARTICLE_CONTACT_SLOTS) per particle
    /// (none when particles do not meet each other).
    pub particle_contacts: Vec<GpuParticleContact>,
}

/// A pair of polytopes `[a, b]` (`a < b`) that a face kept apart, and the face: A's index, or
/// B's with the top bit set.
pub type SeparatingFace = ([u32; 2], u32);

/// A body's part of a [`Snapshot`]: its motion as the solvers store it (centre of mass and
/// principal frame, so that it is restored to the bit; [`Solver::body_states`](crate::Solver::body_states)
/// gives the body frame's), and what the program set on it.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(deny_unknown_fields))]
pub struct BodySnapshot {
    /// Centre of mass, world frame, m.
    pub centre_of_mass: Vec3,
    /// Orientation of the principal frame (of unit length).
    pub principal_orientation: Quat,
    /// Velocity of the centre of mass, m/s.
    pub linear_velocity: Vec3,
    /// Angular velocity, world frame, rad/s.
    pub angular_velocity: Vec3,
    /// The force set on it ([`Solver::set_force`](crate::Solver::set_force)), N; zero but for
    /// dynamic bodies.
    pub force: Vec3,
    /// The torque set on it, N m.
    pub torque: Vec3,
    /// Its collision groups ([`Solver::set_collision_groups`](crate::Solver::set_collision_groups)).
    pub collision_groups: CollisionGroups,
    /// Its centre's displacement over the last step, m: the manifolds' separations, taken at the
    /// step's start, move by it ([`StepStats::max_penetration`](crate::StepStats::max_penetration)
    /// reads them so).
    pub step_displacement: Vec3,
    /// Its rotation over the last step (of unit length).
    pub step_rotation: Quat,
}

/// The impulses applied to one body since the last step, summed ([`Solver::apply_impulse`](crate::Solver::apply_impulse)).
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(deny_unknown_fields))]
pub struct PendingImpulse {
    /// The body (dynamic).
    pub body: BodyHandle,
    /// The impulses' sum, world frame, N s.
    pub impulse: Vec3,
    /// Where the first of them was applied, world frame, m.
    pub point: Vec3,
    /// The sum of their moments about `point`, N m s.
    pub moment: Vec3,
}

/// A joint's part of a [`Snapshot`]: whether it broke, its motor, and its accumulated impulses
/// (the next step's warm start).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(deny_unknown_fields))]
pub struct JointSnapshot {
    /// Whether it has broken ([`JointDesc::breaking`](crate::JointDesc::breaking)).
    pub broken: bool,
    /// Its motor as last set, for a joint added with one; `None` for the others.
    pub motor: Option<JointMotor>,
    /// Accumulated linear impulse on B (its opposite on A), N s.
    pub linear_impulse: Vec3,
    /// Accumulated angular impulse on B, N m s.
    pub angular_impulse: Vec3,
    /// Accumulated impulses of the lower limit, the upper limit (or a ball joint's cone), the
    /// motor and a ball joint's upper twist limit.
    pub limit_impulses: [f32; 4],
}

impl BodySnapshot {
    /// A body's state as the solvers store it.
    pub(crate) fn of(b: &GpuBody, pr: &GpuBodyProps, sb: &GpuSolverBody) -> Self {
        Self {
            step_displacement: sb.delta_position,
            step_rotation: sb.delta_rotation,
            centre_of_mass: b.position,
            principal_orientation: b.orientation,
            linear_velocity: b.linear_velocity,
            angular_velocity: b.angular_velocity,
            force: pr.force,
            torque: pr.torque,
            collision_groups: CollisionGroups { memberships: !pr.not_memberships, filter: !pr.not_filter },
        }
    }

    /// Writes it into a body's records (once checked).
    pub(crate) fn apply(&self, b: &mut GpuBody, pr: &mut GpuBodyProps, sb: &mut GpuSolverBody) {
        (sb.delta_position, sb.delta_rotation) = (self.step_displacement, self.step_rotation);
        b.position = self.centre_of_mass;
        b.orientation = self.principal_orientation;
        b.linear_velocity = self.linear_velocity;
        b.angular_velocity = self.angular_velocity;
        (pr.force, pr.torque) = (self.force, self.torque);
        pr.set_groups(self.collision_groups);
    }
}

impl PendingImpulse {
    pub(crate) fn of(e: &GpuImpulse) -> Self {
        Self { body: BodyHandle(e.body), impulse: e.impulse, point: e.point, moment: e.moment }
    }

    pub(crate) fn record(&self) -> GpuImpulse {
        GpuImpulse {
            impulse: self.impulse,
            body: self.body.0,
            moment: self.moment,
            point: self.point,
            ..GpuImpulse::default()
        }
    }
}

impl JointSnapshot {
    /// A joint's state.
    pub(crate) fn of(j: &GpuJoint) -> Self {
        Self {
            broken: j.flags & JOINT_BROKEN != 0,
            motor: (j.flags & JOINT_MOTOR != 0)
                .then_some(JointMotor { speed: j.motor_speed, max_effort: j.max_motor_effort }),
            linear_impulse: j.linear_impulse,
            angular_impulse: j.angular_impulse,
            limit_impulses: [j.lower_impulse, j.upper_impulse, j.motor_impulse, j.twist_upper_impulse],
        }
    }

    /// Writes it into a joint's record (once checked).
    pub(crate) fn apply(&self, j: &mut GpuJoint) {
        j.flags = if self.broken { j.flags | JOINT_BROKEN } else { j.flags & !JOINT_BROKEN };
        if let Some(m) = self.motor {
            (j.motor_speed, j.max_motor_effort) = (m.speed, m.max_effort);
        }
        j.linear_impulse = self.linear_impulse;
        j.angular_impulse = self.angular_impulse;
        [j.lower_impulse, j.upper_impulse, j.motor_impulse, j.twist_upper_impulse] = self.limit_impulses;
    }

    /// The words of `topology` that say whether the joint's bodies skip each other's contacts,
    /// with what they hold when it is `broken` or not: `(index, value)`, none for a joint whose
    /// bodies collide anyway (`break_if_overloaded` writes [`NO_BODY`] into them).
    pub(crate) fn topology_words(j: &GpuJoint, loads: &GpuJointBreak, broken: bool) -> [Option<(u32, u32)>; 2] {
        let word = |entry: u32, other: u32| (entry != NO_BODY).then_some((entry, if broken { NO_BODY } else { other }));
        [word(loads.entry_a, j.body_b), word(loads.entry_b, j.body_a)]
    }
}

/// What a solver checks a snapshot against: its own world, as it stores it.
pub(crate) struct Expected<'a> {
    /// The bodies now (a static body's state must be the snapshot's).
    pub bodies: &'a [GpuBody],
    pub props: &'a [GpuBodyProps],
    pub shapes: &'a [GpuShape],
    pub static_slots: usize,
    /// The joints by color, the world's index of each, and their breaking loads.
    pub joints: (&'a [GpuJoint], &'a [u32], &'a [GpuJointBreak]),
    pub particles: usize,
    /// Kept particle contacts (slots).
    pub particle_contacts: usize,
    pub colliders: u32,
    pub max_colors: u32,
    /// Whether the bodies meet each other (else a snapshot has no manifolds).
    pub body_contacts: bool,
}

/// An item of a snapshot rejected: `item` and why.
fn bad(item: String, reason: impl Into<String>) -> Error {
    Error::InvalidSnapshot { item, reason: reason.into() }
}

fn count(what: &str, expected: usize, found: usize) -> Result<()> {
    if expected == found {
        return Ok(());
    }
    Err(bad(format!("the {what}"), format!("the solver's world has {expected}, the snapshot {found}")))
}

fn finite(item: impl FnOnce() -> String, words: &[f32]) -> Result<()> {
    if words.iter().all(|w| w.is_finite()) { Ok(()) } else { Err(bad(item(), "a number is NaN or infinite")) }
}

/// Numbers whose squares are finite (below 1.8e19): impulses, speeds and offsets, which the
/// stages square and multiply (a body's position may be anything finite).
fn bounded(item: impl FnOnce() -> String, words: &[f32]) -> Result<()> {
    if words.iter().all(|w| (w * w).is_finite()) {
        Ok(())
    } else {
        Err(bad(item(), "a number that is NaN, infinite or past 1.8e19 (its square overflows f32)"))
    }
}

/// A contact's combined friction (at least 0) and restitution (in `[0, 1]`).
fn material(item: impl FnOnce() -> String, friction: f32, restitution: f32) -> Result<()> {
    if friction >= 0.0 && (0.0..=1.0).contains(&restitution) {
        Ok(())
    } else {
        Err(bad(item(), format!("friction {friction} or restitution {restitution} out of range")))
    }
}

/// A contact normal of unit length.
fn unit(item: impl FnOnce() -> String, n: Vec3) -> Result<()> {
    if (n.length() - 1.0).abs() <= 1e-3 {
        Ok(())
    } else {
        Err(bad(item(), format!("a normal of length {} (not a unit vector)", n.length())))
    }
}

/// A speed whose square is finite, as the inputs must have (`error::check_speed`).
fn speed(item: impl Fn() -> String, v: Vec3) -> Result<()> {
    if v.length_squared().is_finite() { Ok(()) } else { Err(bad(item(), "a speed whose square overflows f32")) }
}

/// Sorted strictly by pair, each pair `a < b < bodies`.
fn pairs_in_order(what: &str, pairs: impl Iterator<Item = (u32, u32)>, bodies: u32) -> Result<()> {
    let mut last = None;
    for (k, (a, b)) in pairs.enumerate() {
        if a >= b || b >= bodies {
            return Err(bad(format!("{what} {k}"), format!("bodies ({a}, {b}): not a < b < {bodies}")));
        }
        if last.is_some_and(|l| l >= (a, b)) {
            return Err(bad(format!("{what} {k}"), "not in pair order, or a pair twice"));
        }
        last = Some((a, b));
    }
    Ok(())
}

impl Snapshot {
    /// Checks that it is a state of the world `world` describes: as many bodies, slots, joints,
    /// particles and kept contacts, static bodies where they are, every number finite, every
    /// index in range, lists in the order the solvers keep them, and only what the world allows
    /// (forces on dynamic bodies, motors on joints with one, breaks of breakable joints). What
    /// passes is safe to step (no index the stages follow leaves its table).
    pub(crate) fn check(&self, world: &Expected) -> Result<()> {
        let n = world.bodies.len();
        count("bodies", n, self.bodies.len())?;
        count("static contact slots", world.static_slots, self.static_contacts.len())?;
        count("joints", world.joints.1.len(), self.joints.len())?;
        count("particles", world.particles, self.particles.len())?;
        count("kept particle contacts", world.particle_contacts, self.particle_contacts.len())?;
        finite(|| "gravity".into(), &self.gravity.to_array())?;
        for (i, (s, (b, pr))) in self.bodies.iter().zip(world.bodies.iter().zip(world.props)).enumerate() {
            let item = || format!("body {i}");
            let q = s.principal_orientation;
            let mut words = flat(&[s.centre_of_mass, s.linear_velocity, s.angular_velocity, s.force, s.torque]);
            words.extend(q.to_array());
            finite(item, &words)?;
            speed(item, s.linear_velocity)?;
            speed(item, s.angular_velocity)?;
            let mut motion = s.step_displacement.to_array().to_vec();
            motion.extend(s.step_rotation.to_array());
            bounded(item, &motion)?;
            for q in [q, s.step_rotation] {
                if (q.length() - 1.0).abs() > 1e-3 {
                    return Err(bad(item(), format!("a rotation of length {} (not a unit quaternion)", q.length())));
                }
            }
            if pr.kind != KIND_DYNAMIC && (s.force != Vec3::ZERO || s.torque != Vec3::ZERO) {
                return Err(bad(item(), "a force on a body that is not dynamic"));
            }
            let moved = s.centre_of_mass != b.position
                || s.principal_orientation != b.orientation
                || s.linear_velocity != Vec3::ZERO
                || s.angular_velocity != Vec3::ZERO
                || s.step_displacement != Vec3::ZERO
                || s.step_rotation != Quat::IDENTITY;
            if pr.kind == KIND_STATIC && moved {
                return Err(bad(item(), "a static body elsewhere than in the solver's world, or moving"));
            }
        }
        let mut seen = vec![false; n];
        for (k, e) in self.impulses.iter().enumerate() {
            let item = || format!("impulse {k}");
            let i = e.body.index();
            if i >= n || world.props[i].kind != KIND_DYNAMIC {
                return Err(bad(item(), format!("body {i} is not a dynamic body of the world")));
            }
            if std::mem::replace(&mut seen[i], true) {
                return Err(bad(item(), format!("a second entry for body {i} (they are summed by body)")));
            }
            finite(item, &e.point.to_array())?;
            bounded(item, &flat(&[e.impulse, e.moment]))?;
        }
        for (k, c) in self.static_contacts.iter().enumerate() {
            let item = || format!("static contact slot {k}");
            bounded(item, &static_words(c))?;
            if c.in_contact > 1 {
                return Err(bad(item(), "in_contact is neither 0 nor 1"));
            }
            material(item, c.friction, c.restitution)?;
            if c.in_contact == 1 {
                unit(item, c.normal)?;
            }
        }
        let none = self.manifolds.is_empty() && self.separating_faces.is_empty();
        if !world.body_contacts && !none {
            return Err(bad("the manifolds".into(), "contacts between bodies in a world whose bodies do not meet"));
        }
        pairs_in_order("manifold", self.manifolds.iter().map(|m| (m.body_a, m.body_b)), n as u32)?;
        for (k, m) in self.manifolds.iter().enumerate() {
            let item = || format!("manifold {k}");
            if m.count as usize > MAX_MANIFOLD_POINTS || m.frame_kept > 1 || m.recycled > 1 {
                return Err(bad(item(), "a point count past 4, or a flag neither 0 nor 1"));
            }
            if m.color >= world.max_colors && m.color != OVERFLOW_COLOR {
                return Err(bad(item(), format!("color {} past the world's {} colors", m.color, world.max_colors)));
            }
            bounded(item, &manifold_words(m))?;
            // What the narrow phase gives the pair, which a carried manifold keeps.
            let (a, b) = (&world.props[m.body_a as usize], &world.props[m.body_b as usize]);
            if a.kind != KIND_DYNAMIC && b.kind != KIND_DYNAMIC {
                return Err(bad(item(), "a pair of bodies of which neither is dynamic"));
            }
            let radii = (world.shapes[a.shape as usize].radius, world.shapes[b.shape as usize].radius);
            let friction = (a.friction * b.friction).sqrt();
            let fits = (m.radius_a, m.radius_b) == radii
                && m.restitution == a.restitution.max(b.restitution)
                && (m.friction - friction).abs() <= 1e-5 * friction + 1e-18;
            if !fits {
                return Err(bad(item(), "radii, friction or restitution other than the world's for its bodies"));
            }
            if m.count > 0 {
                unit(item, m.normal)?;
            }
        }
        let faces = self.separating_faces.iter().map(|&([a, b], _)| (a, b));
        pairs_in_order("separating face", faces, n as u32)?;
        let (joints, order, loads) = world.joints;
        for (k, (j, &index)) in joints.iter().zip(order).enumerate() {
            let s = &self.joints[index as usize];
            let item = || format!("joint {index}");
            let mut impulses = flat(&[s.linear_impulse, s.angular_impulse]);
            impulses.extend(s.limit_impulses);
            bounded(item, &impulses)?;
            match (s.motor, j.flags & JOINT_MOTOR != 0) {
                (Some(m), true) => m.validate().map_err(|e| bad(item(), e.to_string()))?,
                (None, false) => {}
                _ => return Err(bad(item(), "a motor where the world's joint has none, or none where it has one")),
            }
            if s.broken && !loads[k].breakable() {
                return Err(bad(item(), "broken, but the world's joint cannot break"));
            }
        }
        for (k, p) in self.particles.iter().enumerate() {
            let item = || format!("particle {k}");
            finite(item, &[p.position.to_array(), p.velocity.to_array()].concat())?;
            speed(item, p.velocity)?;
        }
        let particles = world.particles as u32;
        for (k, c) in self.particle_contacts.iter().enumerate() {
            let item = || format!("kept particle contact {k}");
            bounded(item, &c.impulse.to_array())?;
            let valid = match c.id {
                0 => true,
                id if id & PARTICLE_CONTACT_COLLIDER != 0 => id & !PARTICLE_CONTACT_COLLIDER < world.colliders,
                id => id <= particles,
            };
            if !valid {
                return Err(bad(item(), format!("id {:#x} names no particle or collider of the world", c.id)));
            }
        }
        Ok(())
    }

    /// This snapshot, of a solver of `from`, made for a solver of `to`: a world that holds
    /// `from`'s bodies, joints and particles first, with more of each after them, and the same
    /// planes and fields (built from a clone of `from` by more `add_body`, `add_joint` and
    /// `add_particles`). What `from` had keeps its state, warm starts included; what was added
    /// starts as `to` describes it (its pose and velocities, no contacts or warm starts yet,
    /// its joints with no impulse). A solver of `to` that restores it goes on with what was
    /// added: so a running simulation gains bodies, joints and particles without its resting
    /// contacts starting over. Where nothing added reaches the old items they step on as they
    /// would have without it, to the bit, unless an addition changes a size the whole world
    /// shares (a particle larger than the others changes the particles' grid). A joint added
    /// between two old bodies that keeps them from colliding drops their manifold.
    ///
    /// The manifolds and kept particle contacts follow `to`'s settings (none where its bodies or
    /// its particles do not meet); other settings may differ as
    /// [`Solver::restore`](crate::Solver::restore) allows.
    ///
    /// # Errors
    /// [`Error::InvalidSnapshot`] when `to` does not extend `from` (a body, joint, particle,
    /// plane or field of `from` other or missing in `to`, or other planes or fields), or the
    /// snapshot is not of `from`'s size.
    pub fn extended_to(&self, from: &crate::World, to: &crate::World) -> Result<Snapshot> {
        let refuse = |item: String| Err(bad(item, "not the same in the world the snapshot is extended to"));
        if from.planes != to.planes || !from.sdfs.iter().map(|r| &r.collider).eq(to.sdfs.iter().map(|r| &r.collider)) {
            return refuse("the planes and fields".into());
        }
        let prefix = |what: &str, old: usize, new: usize| match new >= old {
            true => Ok(()),
            false => Err(bad(format!("the {what}"), format!("{new} in the world it is extended to, fewer than {old}"))),
        };
        prefix("bodies", from.bodies.len(), to.bodies.len())?;
        prefix("joints", from.joints.len(), to.joints.len())?;
        prefix("particles", from.particles.len(), to.particles.len())?;
        if let Some(i) = (0..from.bodies.len()).find(|&i| from.bodies[i].desc != to.bodies[i].desc) {
            return refuse(format!("body {i}"));
        }
        if let Some(i) = (0..from.joints.len()).find(|&i| from.joints[i] != to.joints[i]) {
            return refuse(format!("joint {i}"));
        }
        if let Some(i) = (0..from.particles.len()).find(|&i| from.particles[i] != to.particles[i]) {
            return refuse(format!("particle {i}"));
        }
        count("bodies", from.bodies.len(), self.bodies.len())?;
        count("joints", from.joints.len(), self.joints.len())?;
        count("particles", from.particles.len(), self.particles.len())?;
        let packed = crate::layout::Packed::new(to);
        let (n, slots) = (self.bodies.len(), self.static_contacts.len());
        // The bodies' slots follow each other in body order: the old ones' come first.
        let first_new_slot = packed.props.get(n).map_or(packed.slot_count, |p| p.slot_offset);
        if first_new_slot as usize != slots {
            return Err(bad(
                "the static contact slots".into(),
                format!("{slots}, where the world's first bodies have {first_new_slot}"),
            ));
        }
        let mut out = self.clone();
        let at_rest = GpuSolverBody::at_rest();
        let added = packed.bodies[n..].iter().zip(&packed.props[n..]);
        out.bodies.extend(added.map(|(b, pr)| BodySnapshot::of(b, pr, &at_rest)));
        out.static_contacts.resize(packed.slot_count as usize, GpuStaticContact::default());
        out.joints.extend_from_slice(&Self::joints_of(&packed.joints, &packed.joint_order)[self.joints.len()..]);
        let particles = packed.particles[self.particles.len()..].iter();
        out.particles.extend(particles.map(GpuParticle::state));
        // Pairs that `to`'s bodies may not form: none where bodies do not meet, and none kept
        // apart by a joint it adds.
        let apart: std::collections::HashSet<(u32, u32)> = to.joints[self.joints.len()..]
            .iter()
            .filter(|j| !j.collide)
            .map(|j| (j.body_a.0.min(j.body_b.0), j.body_a.0.max(j.body_b.0)))
            .collect();
        let meet = packed.params.body_contacts != 0 && to.bodies.len() > 1;
        out.manifolds.retain(|m| meet && !apart.contains(&(m.body_a, m.body_b)));
        out.separating_faces.retain(|&([a, b], _)| meet && !apart.contains(&(a, b)));
        let kept = if packed.params.particle_collisions != 0 { to.particles.len() } else { 0 };
        out.particle_contacts.resize(kept * crate::particles::PARTICLE_CONTACT_SLOTS as usize, Default::default());
        Ok(out)
    }

    /// Every body's part, from its records.
    pub(crate) fn bodies_of(bodies: &[GpuBody], props: &[GpuBodyProps], motion: &[GpuSolverBody]) -> Vec<BodySnapshot> {
        bodies.iter().zip(props).zip(motion).map(|((b, pr), sb)| BodySnapshot::of(b, pr, sb)).collect()
    }

    /// Every joint's part in the order they were added, from the records sorted by color and
    /// the world's index of each.
    pub(crate) fn joints_of(joints: &[GpuJoint], order: &[u32]) -> Vec<JointSnapshot> {
        let mut out = vec![JointSnapshot::default(); joints.len()];
        for (j, &index) in joints.iter().zip(order) {
            out[index as usize] = JointSnapshot::of(j);
        }
        out
    }

    /// The bodies' parts into their records (once checked).
    pub(crate) fn apply_bodies(
        &self,
        bodies: &mut [GpuBody],
        props: &mut [GpuBodyProps],
        motion: &mut [GpuSolverBody],
    ) {
        for (((b, pr), sb), s) in bodies.iter_mut().zip(props).zip(motion).zip(&self.bodies) {
            s.apply(b, pr, sb);
        }
    }

    /// The joints' parts into their records (once checked; sorted by color, `order` the world's
    /// index of each, `loads` their breaking loads), and each word of the topology that says
    /// whether a joint's bodies skip each other's contacts to `topology(word, value)`.
    pub(crate) fn apply_joints(
        &self,
        joints: &mut [GpuJoint],
        order: &[u32],
        loads: &[GpuJointBreak],
        mut topology: impl FnMut(u32, u32),
    ) {
        for ((j, &index), loads) in joints.iter_mut().zip(order).zip(loads) {
            let s = &self.joints[index as usize];
            s.apply(j);
            for (word, value) in JointSnapshot::topology_words(j, loads, s.broken).into_iter().flatten() {
                topology(word, value);
            }
        }
    }

    /// The figures of the last step's coloring it holds, which a restored solver's statistics
    /// give until its next step: `[colors, overflow, recycled]` as in
    /// [`StepStats`](crate::StepStats).
    pub(crate) fn coloring(&self) -> [u32; 3] {
        let mut colors = 0u64;
        let (mut overflow, mut recycled) = (0, 0);
        for m in &self.manifolds {
            match m.color {
                OVERFLOW_COLOR => overflow += 1,
                c => colors |= 1 << c,
            }
            recycled += m.recycled;
        }
        [colors.count_ones(), overflow, recycled]
    }

    /// The particles' states into their records (once checked).
    pub(crate) fn apply_particles(&self, particles: &mut [GpuParticle]) {
        for (p, s) in particles.iter_mut().zip(&self.particles) {
            (p.position, p.velocity) = (s.position, s.velocity);
        }
    }
}

/// The coordinates of `vs`, one after another.
fn flat(vs: &[Vec3]) -> Vec<f32> {
    vs.iter().flat_map(|v| v.to_array()).collect()
}

/// The floats of a static contact slot.
fn static_words(c: &GpuStaticContact) -> Vec<f32> {
    let mut w = flat(&[c.anchor, c.normal]);
    w.extend([c.base_separation, c.normal_mass, c.tangent_mass, c.restitution_impulse, c.normal_impulse]);
    w.extend([c.tangent_impulse_1, c.tangent_impulse_2, c.max_normal_impulse, c.approach_velocity]);
    w.extend([c.friction, c.restitution]);
    w
}

/// The floats of a manifold.
fn manifold_words(m: &GpuManifold) -> Vec<f32> {
    let mut w = m.normal.to_array().to_vec();
    w.extend([m.friction, m.restitution, m.radius_a, m.radius_b, m.absorbed]);
    for q in &m.points {
        w.extend(flat(&[q.core_a, q.core_b, q.anchor_a, q.anchor_b]));
        w.extend([q.base_separation, q.normal_impulse, q.tangent_impulse_1, q.tangent_impulse_2]);
        w.extend([q.max_normal_impulse, q.approach_velocity, q.restitution_impulse]);
    }
    w
}
