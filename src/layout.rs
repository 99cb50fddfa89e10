//! Data shared between the host and the WGSL kernels, and the packing of a [`World`] into it.
//!
//! Every struct here has a twin of the same name in `shaders/common.wgsl`; the byte sizes are
//! asserted below and `tests/shader_layout.rs` compares every field offset with naga's layout of
//! the WGSL struct. The CPU reference path works on exactly these arrays, so a CPU state and a
//! GPU state can be compared element by element.
//!
//! Internally a body is stored at its centre of mass with its orientation taken to its
//! principal frame, so its inverse inertia is diagonal in the body frame: three floats instead
//! of a symmetric matrix, and a world inverse inertia of `R diag Rᵀ`.

use std::collections::HashMap;

use bytemuck::{Pod, Zeroable};
use encase::ShaderType;
use glam::{Quat, Vec3, Vec4};

use crate::body::{BodyHandle, BodyKind, BodyState, unit_orientation};
use crate::error::{Error, Result, check_finite};
use crate::joint::{JointHandle, JointKind, JointMotor};
use crate::math::{Softness, quat_mul, quat_normalize, rotate, rotate_inv};
use crate::shape::{MassProperties, Shape};
use crate::world::{Stabilization, World};

/// `kind` value of a dynamic body.
pub const KIND_DYNAMIC: u32 = 0;
/// `kind` value of a static body.
pub const KIND_STATIC: u32 = 1;
/// `kind` value of a kinematic body.
pub const KIND_KINEMATIC: u32 = 2;

/// Hot motion state of a body: everything the solver reads and writes every substep. 64 bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct GpuBody {
    /// Centre of mass, world frame, m.
    pub position: Vec3,
    /// Inverse mass, 1/kg (0 for static and kinematic bodies).
    pub inv_mass: f32,
    /// Orientation of the principal frame.
    pub orientation: Quat,
    /// Velocity of the centre of mass, m/s.
    pub linear_velocity: Vec3,
    /// Unused; keeps `angular_velocity` on a 16-byte boundary as WGSL's `vec3` requires.
    pub _pad0: f32,
    /// Angular velocity, world frame, rad/s.
    pub angular_velocity: Vec3,
    /// Unused.
    pub _pad1: f32,
}
const _: () = assert!(size_of::<GpuBody>() == 64);

/// Properties of a body, constant but for the force, torque and collision groups a program
/// sets. 80 bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct GpuBodyProps {
    /// Inverse principal moments of inertia, 1/(kg m²) (0 for static and kinematic bodies).
    pub inv_inertia: Vec3,
    /// Index of the body's shape in the shape table.
    pub shape: u32,
    /// Index of the body's first static-contact slot.
    pub slot_offset: u32,
    /// [`KIND_DYNAMIC`], [`KIND_STATIC`] or [`KIND_KINEMATIC`].
    pub kind: u32,
    /// Where in `topology` this body's no-contact list starts: for each joint that keeps it
    /// from colliding with the body at its other side, that body, in the order the joints were
    /// added ([`NO_BODY`] once the joint has broken; a body joined twice is listed twice).
    pub no_contact_first: u32,
    /// The length of the no-contact list.
    pub no_contact_count: u32,
    /// Friction coefficient.
    pub friction: f32,
    /// Restitution coefficient.
    pub restitution: f32,
    /// Linear damping rate, 1/s.
    pub linear_damping: f32,
    /// Angular damping rate, 1/s.
    pub angular_damping: f32,
    /// A constant force through the centre of mass, world frame, N, that the program set
    /// ([`Solver::set_force`](crate::Solver::set_force)); zero by default.
    pub force: Vec3,
    /// The complement of the body's collision group memberships
    /// ([`CollisionGroups`](crate::CollisionGroups)), so that zero is every group.
    pub not_memberships: u32,
    /// A constant torque, world frame, N m, set with `force`.
    pub torque: Vec3,
    /// The complement of the body's collision filter, so that zero lets every group through.
    pub not_filter: u32,
}

impl GpuBodyProps {
    /// Stores collision groups as the record keeps them: their complements.
    pub(crate) fn set_groups(&mut self, groups: crate::CollisionGroups) {
        (self.not_memberships, self.not_filter) = (!groups.memberships, !groups.filter);
    }

    /// Whether the collision groups of bodies with these properties and `other` let them
    /// collide. Twin of `groups_interact` in shaders/broad_phase.wgsl.
    pub fn groups_interact(&self, other: &Self) -> bool {
        (!self.not_memberships & !other.not_filter) != 0 && (!other.not_memberships & !self.not_filter) != 0
    }
}
const _: () = assert!(size_of::<GpuBodyProps>() == 80);

/// `kind` of a shape whose core is one point (a sphere).
pub const SHAPE_POINT: u32 = 0;
/// `kind` of a shape whose core is a segment (a capsule).
pub const SHAPE_SEGMENT: u32 = 1;
/// `kind` of a shape whose core is a polytope with faces and edges (a hull).
pub const SHAPE_POLYTOPE: u32 = 2;
/// `kind` of a box: a polytope ([`SHAPE_POLYTOPE`] and up are polytopes) in the layout of
/// [`crate::polytope::Polytope::cuboid`], which the narrow phase's box queries read directly.
pub const SHAPE_BOX: u32 = 3;

/// A shape, shared by every body that has it, in its principal frame about its centre of mass.
/// Its data lives in two tables: `geometry` (vec4) holds the core points, then for a polytope
/// one plane (unit normal, offset) per face; `topology` (u32) holds for a polytope the face
/// loops (`face_count + 1` offsets into the index list that follows them, then the vertex
/// indices, relative to `first_point`) and, from `first_edge`, its edges as
/// `(a, b, face_a, face_b)` (relative indices). 32 bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct GpuShape {
    /// First core point in `geometry`.
    pub first_point: u32,
    /// Number of core points; the face planes follow them.
    pub point_count: u32,
    /// Number of faces (0 unless a polytope).
    pub face_count: u32,
    /// First word of the face loops in `topology`.
    pub first_topology: u32,
    /// First word of the edges in `topology`.
    pub first_edge: u32,
    /// Number of edges.
    pub edge_count: u32,
    /// Radius swept around the core, m.
    pub radius: f32,
    /// [`SHAPE_POINT`], [`SHAPE_SEGMENT`], [`SHAPE_POLYTOPE`] or [`SHAPE_BOX`].
    pub kind: u32,
}
const _: () = assert!(size_of::<GpuShape>() == 32);

/// Per-step solver scratch of a body: its world inverse inertia at its pose now and the motion
/// since the start of the step, from which substeps update contact separations. 80 bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct GpuSolverBody {
    /// World inverse inertia at the body's pose now: set at the step's start, and again after
    /// each position update (so the relax sweeps see the pose after it), as three columns
    /// (WGSL `mat3x3<f32>`).
    pub inv_inertia_world: [Vec4; 3],
    /// Displacement of the centre of mass since the start of the step, m.
    pub delta_position: Vec3,
    /// Kinetic energy at the start of the step, J (bounds the energy restitution may give back).
    pub start_kinetic_energy: f32,
    /// Rotation since the start of the step.
    pub delta_rotation: Quat,
}
const _: () = assert!(size_of::<GpuSolverBody>() == 80);

impl GpuSolverBody {
    /// The scratch of a body that has not moved: no displacement, identity rotation. Static
    /// bodies keep it for good.
    pub const fn at_rest() -> Self {
        Self {
            inv_inertia_world: [Vec4::ZERO; 3],
            delta_position: Vec3::ZERO,
            start_kinetic_energy: 0.0,
            delta_rotation: Quat::IDENTITY,
        }
    }
}

/// A static collider: a plane (`node_count == 0`) or a signed distance field, whose compiled
/// program is `node_count` nodes of [`SDF_NODE_VEC4S`](crate::sdf::SDF_NODE_VEC4S) `Vec4`s
/// in `geometry` from `first_node`. Planes come first, then SDFs, in insertion order. 32 bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct GpuCollider {
    /// Unit outward normal of a plane (unused for an SDF).
    pub normal: Vec3,
    /// Offset of a plane: points on it satisfy `normal · x = offset` (unused for an SDF).
    pub offset: f32,
    /// Friction coefficient.
    pub friction: f32,
    /// Restitution coefficient.
    pub restitution: f32,
    /// Index in `geometry` of the first `Vec4` of an SDF's program.
    pub first_node: u32,
    /// Nodes of an SDF's program; 0 for a plane.
    pub node_count: u32,
}
const _: () = assert!(size_of::<GpuCollider>() == 32);

/// One slot of a body's static contacts: core point `k` of the body against collider `c`
/// (plane or SDF) lives in slot `slot_offset + c * point_count + k`, and its second and third
/// contacts against an SDF (`cpu::stages::second_surface`, `third_surface`) in slot
/// `slot_offset + (collider_count + (s - 1) sdf_count + c - plane_count) * point_count + k` for
/// surface `s` = 1, 2 (`cpu::stages::surface_slot`). A plane's contact is warm started from its
/// slot; a field's from whichever of the point's three slots held the same surface last step
/// (`cpu::stages::warm_sources`). The collider is body A, the body is B; the
/// normal is the plane's, or the field's gradient at the point when the contact was made
/// (pointing towards B, seed 000), and stays fixed for the step. 80 bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(deny_unknown_fields))]
pub struct GpuStaticContact {
    /// Contact point relative to the body's centre of mass at the start of the step, m.
    pub anchor: Vec3,
    /// `s0 - n · core` with `core = anchor + radius n` the body's core point: the current
    /// separation is `base_separation + n · (Δp + Δq core)`, m.
    pub base_separation: f32,
    /// Unit contact normal, from the collider towards the body.
    pub normal: Vec3,
    /// `1 / (n · K n)`, the effective mass along the normal, kg.
    pub normal_mass: f32,
    /// `1 / λmax(K_t)`, the step size of the friction update, kg (see `solve_contacts`).
    pub tangent_mass: f32,
    /// Normal impulse added by the restitution stage this step, N s.
    pub restitution_impulse: f32,
    /// Accumulated normal impulse of the current substep, N s.
    pub normal_impulse: f32,
    /// Accumulated friction impulse along the first tangent, N s.
    pub tangent_impulse_1: f32,
    /// Accumulated friction impulse along the second tangent, N s.
    pub tangent_impulse_2: f32,
    /// Largest normal impulse applied during the step (restitution needs a contact that acted).
    pub max_normal_impulse: f32,
    /// Normal velocity of approach at the moment of contact, m/s (negative when closing).
    pub approach_velocity: f32,
    /// Combined friction coefficient.
    pub friction: f32,
    /// Combined restitution coefficient.
    pub restitution: f32,
    /// 1 when the slot holds a contact this step, 0 when the point is too far from the collider.
    pub in_contact: u32,
    /// Unused.
    #[cfg_attr(feature = "serde", serde(skip))]
    pub _pad0: u32,
    /// Unused.
    #[cfg_attr(feature = "serde", serde(skip))]
    pub _pad1: u32,
}
const _: () = assert!(size_of::<GpuStaticContact>() == 80);

/// The static contact slots ([`GpuStaticContact`]) a dynamic body of shape `sh` has: a first
/// contact per collider and core point, a second and a third per SDF. Twin of `slot_end` in
/// shaders/bind_bodies.wgsl.
pub(crate) fn static_slot_count(collider_count: u32, sdf_count: u32, sh: &GpuShape) -> u32 {
    (collider_count + 2 * sdf_count) * sh.point_count
}

/// Where a body's static contact slots are: `(collider_count + 2 sdf_count) points` of them
/// from `first`; none for a body that is not dynamic (`points` 0).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct SlotRange {
    /// The body's first slot.
    pub first: u32,
    /// Its shape's core points (its slots per collider block).
    pub points: u32,
    /// Its shape's radius around the core, m.
    pub radius: f32,
}

impl SlotRange {
    /// The slot ranges of `props`' bodies, whose shapes are `shapes`.
    pub fn of(props: &[GpuBodyProps], shapes: &[GpuShape]) -> Vec<Self> {
        props
            .iter()
            .map(|p| {
                let sh = &shapes[p.shape as usize];
                let points = if p.kind == KIND_DYNAMIC { sh.point_count } else { 0 };
                Self { first: p.slot_offset, points, radius: sh.radius }
            })
            .collect()
    }
}

/// The impulses a program applied to one body between steps
/// ([`Solver::apply_impulse`](crate::Solver::apply_impulse)), summed: applied at the start of
/// the next step. 48 bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct GpuImpulse {
    /// The impulses' sum, world frame, N s.
    pub impulse: Vec3,
    /// The body's index.
    pub body: u32,
    /// The sum of their moments about `point`, `Σ (p - point) × J`, N m s (about a point near
    /// them rather than the origin, which may be far; the body's centre may move before they
    /// are applied, and the moment about it is taken then).
    pub moment: Vec3,
    /// Unused.
    pub _pad0: u32,
    /// Where the first of them was applied, world frame, m.
    pub point: Vec3,
    /// Unused.
    pub _pad1: u32,
}
const _: () = assert!(size_of::<GpuImpulse>() == 48);

impl GpuImpulse {
    /// Applies the impulses to body `b` of properties `pr`: `Δv = J / m`,
    /// `Δω = I⁻¹ (M + (p - x) × J)`. Twin of `apply_impulses` in shaders/impulses.wgsl.
    pub fn apply(&self, b: &mut GpuBody, pr: &GpuBodyProps) {
        let moment = self.moment + (self.point - b.position).cross(self.impulse);
        b.linear_velocity += b.inv_mass * self.impulse;
        b.angular_velocity += rotate(b.orientation, pr.inv_inertia * rotate_inv(b.orientation, moment));
    }
}

/// The impulses applied between steps, summed by body in the order they came, both
/// solvers' queue of them until the next step.
#[derive(Clone, Debug, Default)]
pub(crate) struct PendingImpulses {
    /// One per body that has some.
    pub entries: Vec<GpuImpulse>,
    /// Where each body's entry is, by body ([`NO_BODY`] for none); sized at the first impulse.
    slots: Vec<u32>,
}

impl PendingImpulses {
    /// Adds `impulse` at world `point` to body `body` of `bodies`, once checked (finite, and the
    /// body dynamic: `kind`).
    pub fn add(&mut self, body: BodyHandle, bodies: usize, kind: u32, impulse: Vec3, point: Vec3) -> Result<()> {
        check_finite("impulse", impulse, impulse.is_finite())?;
        check_finite("impulse point", point, point.is_finite())?;
        if kind != KIND_DYNAMIC {
            return Err(Error::NotDynamic { index: body.0 });
        }
        if self.slots.len() != bodies {
            self.slots = vec![NO_BODY; bodies];
        }
        let slot = self.slots[body.index()];
        let old = match slot {
            NO_BODY => GpuImpulse { body: body.0, point, ..GpuImpulse::default() },
            k => self.entries[k as usize],
        };
        let sum = GpuImpulse {
            impulse: old.impulse + impulse,
            moment: old.moment + (point - old.point).cross(impulse),
            ..old
        };
        check_finite("impulse sum", sum.impulse, sum.impulse.is_finite() && sum.moment.is_finite())?;
        if slot == NO_BODY {
            self.slots[body.index()] = self.entries.len() as u32;
            self.entries.push(sum);
        } else {
            self.entries[slot as usize] = sum;
        }
        Ok(())
    }

    /// Replaces the entries with `entries`, one per body of `bodies` (checked:
    /// [`crate::Snapshot`]'s).
    pub fn replace(&mut self, entries: impl IntoIterator<Item = GpuImpulse>, bodies: usize) {
        self.clear();
        if self.slots.len() != bodies {
            self.slots = vec![NO_BODY; bodies];
        }
        for e in entries {
            self.slots[e.body as usize] = self.entries.len() as u32;
            self.entries.push(e);
        }
    }

    /// Forgets the entries (once applied).
    pub fn clear(&mut self) {
        for e in &self.entries {
            self.slots[e.body as usize] = NO_BODY;
        }
        self.entries.clear();
    }
}

/// A particle as the solvers store it. 32 bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct GpuParticle {
    /// Centre, m.
    pub position: Vec3,
    /// Radius, m.
    pub radius: f32,
    /// Velocity, m/s.
    pub velocity: Vec3,
    /// Mass, kg.
    pub mass: f32,
}
const _: () = assert!(size_of::<GpuParticle>() == 32);

impl GpuParticle {
    /// Its motion, as the solvers read it back.
    pub fn state(&self) -> crate::ParticleState {
        crate::ParticleState { position: self.position, velocity: self.velocity }
    }
}

/// A particle's kept contact (see [`crate::particles::PARTICLE_CONTACT_SLOTS`]): the impulse
/// the contact gave it over the last velocity iterations, and whom it was with. 16 bytes; the
/// GPU stores the impulse's bits, as `vec4<u32>`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(deny_unknown_fields))]
pub struct GpuParticleContact {
    /// The accumulated impulse on this particle, normal and friction together, N s.
    pub impulse: Vec3,
    /// The other particle's index plus one, or
    /// [`PARTICLE_CONTACT_COLLIDER`](crate::particles::PARTICLE_CONTACT_COLLIDER) with the
    /// collider's index; zero for an empty slot.
    pub id: u32,
}
const _: () = assert!(size_of::<GpuParticleContact>() == 16);

/// Highest number of graph colors (a color mask is one `u32`).
pub const MAX_COLORS: u32 = 32;
/// `color` of a manifold that found no color: it is solved by mass-splitting Jacobi.
pub const OVERFLOW_COLOR: u32 = u32::MAX;

/// A candidate pair from the broad phase, `a < b`. 8 bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Pod, Zeroable)]
pub struct GpuPair {
    /// Lower body index.
    pub a: u32,
    /// Higher body index.
    pub b: u32,
}
const _: () = assert!(size_of::<GpuPair>() == 8);

/// One contact of a body-body manifold. The contact's current separation is
/// `base_separation + n · ((Δp_b + Δq_b core_b) - (Δp_a + Δq_a core_a))`; its lever arms reach
/// the midpoint of `Δq_a core_a + r_a n` and `Δq_b core_b - r_b n` as the bodies move, or, in a
/// kept frame ([`GpuManifold::frame_kept`]), are the cores as they are. Between polytopes (no
/// radius) the cores start at the midpoint of the two surface points, and a resting pair keeps
/// its normal, cores and anchors from step to step (see `collide::FRAME_DRIFT`). 80 bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(deny_unknown_fields))]
pub struct GpuManifoldPoint {
    /// A's core point relative to A's centre of mass at the start of the step, world axes, m
    /// (in a kept frame, as it was when the frame was taken).
    pub core_a: Vec3,
    /// `s0 - n · (core_b - core_a)`, with `s0` the separation at the start of the step, m.
    pub base_separation: f32,
    /// B's core point relative to B's centre of mass at the start of the step, world axes, m.
    pub core_b: Vec3,
    /// Accumulated normal impulse, N s.
    pub normal_impulse: f32,
    /// Accumulated friction impulse along the first tangent, N s.
    pub tangent_impulse_1: f32,
    /// Accumulated friction impulse along the second tangent, N s.
    pub tangent_impulse_2: f32,
    /// Largest normal impulse applied during the step.
    pub max_normal_impulse: f32,
    /// Relative normal velocity at impact, m/s (negative when closing).
    pub approach_velocity: f32,
    /// Normal impulse added by the restitution stage this step, N s.
    pub restitution_impulse: f32,
    /// Feature key (see `collide`).
    pub key: u32,
    /// The point on A's surface where the contact frame was taken, in A's body frame, m
    /// (WGSL `array<f32, 3>`: no padding), moved by half the anchors' slide across the normal
    /// each time the narrow phase keeps the frame (see `keep_frame`). Zero between rounded
    /// shapes, which keep no frame.
    pub anchor_a: Vec3,
    /// The point on B's surface where the contact frame was taken, in B's body frame, m, moved
    /// as `anchor_a` the other way.
    pub anchor_b: Vec3,
}
const _: () = assert!(size_of::<GpuManifoldPoint>() == 80);

/// A manifold between bodies `body_a < body_b`: up to four contacts sharing a normal. 384 bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(deny_unknown_fields))]
pub struct GpuManifold {
    /// Body A.
    pub body_a: u32,
    /// Body B.
    pub body_b: u32,
    /// Valid points.
    pub count: u32,
    /// Graph color, or [`OVERFLOW_COLOR`].
    pub color: u32,
    /// Unit normal from A towards B.
    pub normal: Vec3,
    /// Combined friction coefficient.
    pub friction: f32,
    /// Combined restitution coefficient.
    pub restitution: f32,
    /// A's radius (swept around its core), m.
    pub radius_a: f32,
    /// B's radius, m.
    pub radius_b: f32,
    /// Kinetic energy the manifold's impulses took from the pair this step (minus their work),
    /// J: restitution gives back at most `e²` of it.
    pub absorbed: f32,
    /// 1 when the manifold kept last step's contact frame (see `collide::FRAME_DRIFT`): its
    /// lever arms stay as they are through the step. 0: they follow the bodies' relative
    /// motion, meeting at one point.
    pub frame_kept: u32,
    /// 1 when the manifold was carried over from last step without the narrow phase (see
    /// [`crate::SolverSettings::recycle_contacts`]), else 0.
    pub recycled: u32,
    /// Unused.
    #[cfg_attr(feature = "serde", serde(skip))]
    pub _pad1: u32,
    /// Unused.
    #[cfg_attr(feature = "serde", serde(skip))]
    pub _pad2: u32,
    /// The contacts.
    pub points: [GpuManifoldPoint; 4],
}
const _: () = assert!(size_of::<GpuManifold>() == 384);

/// Words of a manifold's prepared record (four points of sixteen; see [`PreparedRecords`]).
pub const PREPARED_MANIFOLD_WORDS: usize = 64;
/// Words of a body's prepared world inverse inertia (three columns of four).
pub const PREPARED_BODY_WORDS: usize = 12;

/// What the passes over the body-body manifolds read that only positions change, as the last
/// preparation of a step left it (for tests and debugging; both solvers fill it the same way).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PreparedRecords {
    /// Per manifold, in the order of the solvers' `manifolds`, four points of sixteen words:
    /// the lever arm on A (3), on B (3), the separation, `k_n` (the inverse effective mass
    /// along the normal), `1 / k_n`, the inverse of the tangent block `[[k11, k12], [k12,
    /// k22]]` as its entries (1, 1), minus (1, 2) and (2, 2), `1 / λmax` of that block, then
    /// three words of the manifold's: the first tangent in point 0's, the second in point 1's,
    /// the normal in point 2's, the friction, the point count and zero in point 3's. The first
    /// thirteen words of a point past the manifold's count are zero.
    pub manifolds: Vec<[f32; PREPARED_MANIFOLD_WORDS]>,
    /// Per body, its world inverse inertia at the prepared orientation as three columns of
    /// four words (the fourth zero); zero for a body that is not dynamic.
    pub inertia: Vec<[f32; PREPARED_BODY_WORDS]>,
}

/// Where each per-step array lives in the `u32` work arena of the GPU contact stages, in words.
/// Counts the GPU produces (pairs, manifolds) sit in the header at word 0:
/// `[pair_count, manifold_count, pairs_wanted, manifolds_wanted, previous_manifold_count,
/// large_body_count]` (the last for `grid_write`).
/// 144 bytes, a uniform.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct GpuWorkLayout {
    /// Number of bodies.
    pub body_count: u32,
    /// Capacity of the pair list.
    pub pair_capacity: u32,
    /// Capacity of the manifold list.
    pub manifold_capacity: u32,
    /// Color buckets: the colors, then the overflow.
    pub buckets: u32,
    /// Groups of the bucketing histogram: its workgroups, or with the fused sweeps the fused
    /// coloring's threads (each counts a run of manifolds).
    pub histogram_groups: u32,
    /// Per body: AABB min (xyz), margin, AABB max (xyz), unused; f32 bits.
    pub aabbs: u32,
    /// Per body: pairs it heads, then (scanned) their offsets; `body_count + 1`.
    pub pair_counts: u32,
    /// The pairs, two words each.
    pub pairs: u32,
    /// Per pair: 1 when it has contacts, then (scanned) the manifold offsets; `pair_capacity + 1`.
    pub flags: u32,
    /// Per manifold: its color.
    pub colors: u32,
    /// Per manifold: the colors before the current conflict pass.
    pub before: u32,
    /// Per body: manifolds on it, then (scanned) adjacency offsets; `body_count + 1`.
    pub adjacency_counts: u32,
    /// Manifold indices per dynamic body, ascending; `2 * manifold_capacity`.
    pub adjacency: u32,
    /// Per body: the colors its manifolds hold.
    pub masks: u32,
    /// Per body: overflow manifolds on it (the Jacobi mass split).
    pub split: u32,
    /// Per bucket and histogram group: manifolds, then (scanned) offsets.
    pub histogram: u32,
    /// Manifold indices bucketed by color.
    pub colored: u32,
    /// Per bucket: first index in `colored`, then the total; `buckets + 1`.
    pub bucket_offsets: u32,
    /// Per bucket: indirect dispatch arguments (x, y, z), at this word of the separate `args`
    /// buffer (a buffer read by an indirect dispatch cannot be written by the same dispatch).
    pub args: u32,
    /// Block sums of the scans.
    pub scan_sums: u32,
    /// Words in the arena.
    pub total: u32,
    /// Edge of a broad-phase grid cell, m: bodies whose AABB is wider go to the large list.
    pub cell_size: f32,
    /// Grid hash table size minus one (a power of two minus one).
    pub hash_mask: u32,
    /// Per body: its grid item (cell hash, or `hash_mask + 1` for a large body, then the body),
    /// two words.
    pub cells: u32,
    /// The grid items sorted by cell hash (where the radix sort leaves them, or with the fused
    /// cell sort the other of its two regions).
    pub cells_sorted: u32,
    /// Per hash: the first sorted grid item with that hash, or `u32::MAX`.
    pub cell_start: u32,
    /// The bodies too large for the grid, in any order (their count is a counter).
    pub large: u32,
    /// Where the grid writes the unsorted pairs (the radix sort leaves them at `pairs`).
    pub pairs_raw: u32,
    /// 1 when the scene is small enough for the brute-force broad phase.
    pub brute_force: u32,
    /// Per radix digit and histogram group: items, then (scanned) offsets; in the fused cell
    /// sort, per grid key its items, then (scanned) offsets (`hash_mask + 3` words).
    pub radix_histogram: u32,
    /// `1 / cell_size`, 1/m.
    pub inv_cell: f32,
    /// Per pair: the face that kept it a margin apart (see `collide_cached` in the
    /// narrow phase), or `NO_FACE`.
    pub faces: u32,
    /// Last step's pair count, then its pairs (two words each), kept for this step's lookups.
    pub previous_pairs: u32,
    /// Last step's `faces`, per pair of `previous_pairs`.
    pub previous_faces: u32,
    /// Per pair: last step's manifold of the pair plus one when it is carried into this step
    /// without the narrow phase (see `recycle_pairs` in shaders/manifolds.wgsl), else 0.
    pub recycled: u32,
    /// Where the pairs are gathered by their first body before they are ranked into `pairs`
    /// (the radix sort's scratch; see `pair_place`).
    pub pairs_scratch: u32,
}
const _: () = assert!(size_of::<GpuWorkLayout>() == 144);

/// Partial or total step statistics produced by the `stats` kernels. 16 bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct GpuStats {
    /// Kinetic energy of dynamic bodies, J.
    pub kinetic_energy: f32,
    /// Largest penetration of any body core point (with radius) into any plane, m.
    pub max_penetration: f32,
    /// Active contacts.
    pub contacts: u32,
    /// Dynamic bodies.
    pub dynamic_bodies: u32,
}
const _: () = assert!(size_of::<GpuStats>() == 16);

/// `angular` of a joint that leaves the bodies' relative rotation free (3 angular DOF).
pub const JOINT_ANGULAR_FREE: u32 = 0;
/// `angular` of a joint that lets the bodies turn about one common axis only (a hinge).
pub const JOINT_ANGULAR_HINGE: u32 = 1;
/// `angular` of a joint that holds the bodies' relative rotation (0 angular DOF).
pub const JOINT_ANGULAR_LOCKED: u32 = 2;
/// `angular` of a joint that holds the angle between an axis of A and an axis of B, and
/// lets the bodies turn about both (2 angular DOF: a universal joint).
pub const JOINT_ANGULAR_TWO_AXES: u32 = 3;
/// `flags` bit of a hinge whose angle, or a slider whose translation, is held between `lower`
/// and `upper`.
pub const JOINT_LIMITED: u32 = 1;
/// `flags` bit of a hinge or slider driven towards `motor_speed` by at most `max_motor_effort`.
pub const JOINT_MOTOR: u32 = 2;
/// `flags` bit of a joint that has broken ([`GpuJointBreak`]): it holds nothing any more.
pub const JOINT_BROKEN: u32 = 4;
/// `flags` bit of a ball joint whose twist about its cone's axis is held within `lower` and
/// `-lower` (from the middle of its twist limits).
pub const JOINT_TWIST: u32 = 8;
/// A `topology` entry of a no-contact list that names no body (its joint broke).
pub const NO_BODY: u32 = u32::MAX;
/// A [`GpuJointBreak`] load that never breaks the joint.
pub const JOINT_NO_LOAD: f32 = f32::MAX;
/// `linear` of a joint that holds the anchors together (0 linear DOF).
pub const JOINT_LINEAR_POINT: u32 = 0;
/// `linear` of a joint that lets B's anchor move along a line through A's (1 linear DOF).
pub const JOINT_LINEAR_LINE: u32 = 1;
/// `linear` of a joint that lets B's anchor move in a plane through A's (2 linear DOF).
pub const JOINT_LINEAR_PLANE: u32 = 2;

/// A joint: its bodies and frames (constant), its centres' offset at the start of the step
/// (prepared each step) and its accumulated impulses (warm started). Anchors and axes are in
/// each body's principal frame, anchors from its centre of mass. 192 bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct GpuJoint {
    /// Index of body A.
    pub body_a: u32,
    /// Index of body B.
    pub body_b: u32,
    /// The angular part: [`JOINT_ANGULAR_FREE`], [`JOINT_ANGULAR_HINGE`],
    /// [`JOINT_ANGULAR_LOCKED`] or [`JOINT_ANGULAR_TWO_AXES`].
    pub angular: u32,
    /// The linear part: [`JOINT_LINEAR_POINT`], [`JOINT_LINEAR_LINE`] or [`JOINT_LINEAR_PLANE`].
    pub linear: u32,
    /// The anchor in A's principal frame, from A's centre of mass, m.
    pub local_anchor_a: Vec3,
    /// A hinge's lowest angle, rad, from the middle of its limits, or a slider's lowest
    /// translation, m (with [`JOINT_LIMITED`]); or a ball joint's lowest twist, rad, from the
    /// middle of its twist limits, its highest being `-lower` (with [`JOINT_TWIST`]).
    pub lower: f32,
    /// The anchor in B's principal frame, from B's centre of mass, m.
    pub local_anchor_b: Vec3,
    /// A hinge's highest angle, rad, from the middle of its limits, a slider's highest
    /// translation, m, or a ball joint's cone half angle, rad (with [`JOINT_LIMITED`]).
    pub upper: f32,
    /// A hinge's axis, a universal joint's axis on A, or a ball joint's cone axis on A, in A's
    /// principal frame.
    pub local_axis_a: Vec3,
    /// A motor's speed (with [`JOINT_MOTOR`]): a hinge's, B's turn about the axis relative to
    /// A's, rad/s; a slider's, B's anchor's along the line relative to A, m/s.
    pub motor_speed: f32,
    /// A hinge's axis, a universal joint's axis on B, or a ball joint's cone axis on B, in B's
    /// principal frame.
    pub local_axis_b: Vec3,
    /// A motor's largest torque, N m (a hinge's), or force, N (a slider's) (with
    /// [`JOINT_MOTOR`]).
    pub max_motor_effort: f32,
    /// The direction of a slider's line, or the normal of a point-on-plane joint's plane, in
    /// A's principal frame.
    pub local_linear_axis_a: Vec3,
    /// [`JOINT_LIMITED`], [`JOINT_MOTOR`], [`JOINT_BROKEN`] and [`JOINT_TWIST`], or'ed.
    pub flags: u32,
    /// B's principal frame in A's at the joint's creation, `q_a⁻¹ q_b`, which a weld holds.
    pub reference: Quat,
    /// B's centre of mass less A's at the start of the step, m.
    pub delta_center: Vec3,
    /// Accumulated impulse of a hinge's lower limit or a ball joint's lower twist limit, N m s,
    /// or of a slider's lower limit, N s.
    pub lower_impulse: f32,
    /// Accumulated linear impulse on B (its opposite on A), N s.
    pub linear_impulse: Vec3,
    /// Accumulated impulse of a hinge's upper limit or a ball joint's cone, N m s, or of a
    /// slider's upper limit, N s.
    pub upper_impulse: f32,
    /// Accumulated angular impulse on B (its opposite on A), N m s.
    pub angular_impulse: Vec3,
    /// Accumulated impulse of a hinge's motor, N m s, or a slider's, N s.
    pub motor_impulse: f32,
    /// A direction across a hinge's axis (or a ball joint's cone axis) in A's principal frame,
    /// from which its angle (or twist) is measured: turned to the middle of its limits.
    pub local_ref_a: Vec3,
    /// A universal joint's angle between its axes, held, rad.
    pub rest_angle: f32,
    /// The direction across the axis in B's principal frame that A's was at the joint's
    /// creation (before A's was turned): the angle, less the limits' middle, is 0 where the two
    /// coincide.
    pub local_ref_b: Vec3,
    /// Accumulated impulse of a ball joint's upper twist limit, N m s.
    pub twist_upper_impulse: f32,
}
const _: () = assert!(size_of::<GpuJoint>() == 192);

/// When a joint breaks, and where its bodies' no-contact entries are (read only by the
/// once-a-step preparation, so it stays out of the joint record the sweeps read). 16 bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct GpuJointBreak {
    /// The largest force on B (its linear impulses over a substep), N; [`JOINT_NO_LOAD`] for
    /// none.
    pub force: f32,
    /// The largest torque on B besides, N m; [`JOINT_NO_LOAD`] for none.
    pub torque: f32,
    /// Where in `topology` A's no-contact list names B for this joint, or [`NO_BODY`] when the
    /// bodies collide anyway: overwritten with [`NO_BODY`] when the joint breaks.
    pub entry_a: u32,
    /// Where B's list names A for this joint, or [`NO_BODY`].
    pub entry_b: u32,
}
const _: () = assert!(size_of::<GpuJointBreak>() == 16);

impl GpuJointBreak {
    /// Whether the joint can break: a load below [`JOINT_NO_LOAD`].
    pub fn breakable(&self) -> bool {
        self.force < JOINT_NO_LOAD || self.torque < JOINT_NO_LOAD
    }
}

/// Per-step constants, written when the solver is built and again when a program sets the
/// gravity (uniform buffer, encased).
#[derive(Clone, Copy, Debug, Default, PartialEq, ShaderType)]
pub struct StepParams {
    /// Gravity, m/s².
    pub gravity: Vec3,
    /// Step, s.
    pub dt: f32,
    /// Substep `h = dt / substeps`, s.
    pub h: f32,
    /// `1 / h`, 1/s.
    pub inv_h: f32,
    /// Substeps per step.
    pub substeps: u32,
    /// Biased iterations per substep.
    pub iterations: u32,
    /// Relax iterations per substep.
    pub relax_iterations: u32,
    /// Number of bodies.
    pub body_count: u32,
    /// Number of planes; the SDF colliders follow them.
    pub plane_count: u32,
    /// Number of static-contact slots.
    pub slot_count: u32,
    /// Velocity bias per metre of penetration for contacts against static geometry, 1/s.
    pub static_bias_rate: f32,
    /// Soft-constraint mass scale for contacts against static geometry.
    pub static_mass_scale: f32,
    /// Soft-constraint impulse scale for contacts against static geometry.
    pub static_impulse_scale: f32,
    /// Penetration that is not pushed out, m (Baumgarte only; 0 for soft contacts).
    pub linear_slop: f32,
    /// Largest push-out speed, m/s.
    pub max_push_velocity: f32,
    /// Approach speed above which restitution applies, m/s.
    pub restitution_threshold: f32,
    /// Speculative contact distance, m.
    pub speculative_distance: f32,
    /// 1 to warm start, 0 to start every step from zero impulses.
    pub warm_start_scale: f32,
    /// Largest rotation per substep, rad (keeps the exponential map and the contact
    /// linearization meaningful for absurd spin rates).
    pub max_rotation: f32,
    /// Velocity bias per metre of penetration for contacts between two moving bodies, 1/s.
    pub contact_bias_rate: f32,
    /// Soft-constraint mass scale for contacts between two moving bodies.
    pub contact_mass_scale: f32,
    /// Soft-constraint impulse scale for contacts between two moving bodies.
    pub contact_impulse_scale: f32,
    /// Graph colors available before constraints overflow to Jacobi.
    pub max_colors: u32,
    /// Rounds of the parallel coloring per step.
    pub coloring_rounds: u32,
    /// 1 when bodies collide with each other, else 0.
    pub body_contacts: u32,
    /// Number of static colliders: planes, then SDFs.
    pub collider_count: u32,
    /// Number of particles.
    pub particle_count: u32,
    /// Friction coefficient of particles, combined with a collider's as for bodies.
    pub particle_friction: f32,
    /// Restitution coefficient of particles, combined with a collider's as for bodies.
    pub particle_restitution: f32,
    /// 1 when particles collide with each other, else 0.
    pub particle_collisions: u32,
    /// Jacobi iterations over particle-particle contacts per substep.
    pub particle_iterations: u32,
    /// `1 / cell` of the particle grid, whose cells are `2 r_max + margin` wide, 1/m.
    pub particle_inv_cell: f32,
    /// Gap under which two particles are in contact (speculatively when positive): half the
    /// largest radius, m.
    pub particle_margin: f32,
    /// Hash buckets of the particle grid minus one (a power of two minus one).
    pub particle_hash_mask: u32,
    /// GPU work arena: the `(hash, particle)` items (and their sort scratch after them).
    pub particle_items: u32,
    /// GPU work arena: the items sorted by hash.
    pub particle_sorted: u32,
    /// GPU work arena: the first sorted item of each hash bucket.
    pub particle_cell_start: u32,
    /// GPU work arena: each particle's neighbour count.
    pub particle_counts: u32,
    /// 1 when particles and bodies meet (particle collisions on, and both present), else 0.
    pub particle_body_contacts: u32,
    /// Largest particle radius plus the particle margin: how far beyond a body's bounds a
    /// particle centre can be and still touch it, m.
    pub particle_reach: f32,
    /// Index in `geometry` of a zero point: the core of a particle posed as a sphere.
    pub origin_point: u32,
    /// GPU work arena: each body's particle-contact count, then (scanned) their starts; one
    /// more word holds the total.
    pub particle_body_starts: u32,
    /// GPU work arena: the particles touching each body, grouped by body.
    pub particle_body_list: u32,
    /// Entries the body list holds, [`crate::particles::PARTICLE_BODY_SLOTS`] per particle.
    pub particle_body_capacity: u32,
    /// GPU work arena: each particle's body-contact count (atomic while filled).
    pub particle_slot_counts: u32,
    /// GPU work arena: each particle's body slots, the body index of each: as the fill's counter
    /// handed them out, then as `particle_body_settle` leaves them (the kept bodies, ascending).
    pub particle_slot_bodies: u32,
    /// GPU work arena: one word counting the particle-body contacts dropped this step.
    pub particle_body_dropped: u32,
    /// GPU work arena: one word holding the bits of the fastest particle's speed this substep
    /// (the particle-body detection's sweep).
    pub particle_speed_bound: u32,
    /// 1 when resting manifolds skip the narrow phase (see
    /// [`crate::SolverSettings::recycle_contacts`]), else 0.
    pub recycle_contacts: u32,
    /// GPU work arena: the static colliders, eight words each (a [`GpuCollider`]), for the
    /// particle stages, which bind their kept contacts in place of the colliders' buffer.
    pub particle_colliders: u32,
    /// GPU work arena: each particle's closest pairs (found with the neighbour counts),
    /// [`PARTICLE_CONTACT_SLOTS`](crate::particles::PARTICLE_CONTACT_SLOTS) words per particle
    /// (the other's index plus one, or zero): a pair keeps its impulse when each side selected
    /// the other.
    pub particle_selected: u32,
    /// [`crate::SolverSettings::gpu_prepared_passes`]: 1 or 0 (the solve pipelines take it as
    /// their constant `PREPARED_PASSES`).
    pub prepared_passes: u32,
    /// GPU work arena: each particle's body slots, the indices of the bodies it keeps (the
    /// smallest touching it, ascending, kept by atomic minima while filled; `EMPTY_CELL` where
    /// fewer touch it).
    pub particle_slot_wanted: u32,
    /// Number of joints.
    pub joint_count: u32,
    /// Velocity bias per metre (or radian) of joint error in the biased solve, 1/s.
    pub joint_bias_rate: f32,
    /// Soft-constraint mass scale of joints in the biased solve.
    pub joint_mass_scale: f32,
    /// Soft-constraint impulse scale of joints in the biased solve.
    pub joint_impulse_scale: f32,
}

impl StepParams {
    /// The constants for a world's settings.
    pub fn new(world: &World, slot_count: u32) -> Self {
        let d = &world.desc;
        let s = &d.solver;
        let h = d.dt / s.substeps as f32;
        let r_max = world.particles.iter().map(|p| p.radius).fold(0.0_f32, f32::max).max(1e-6);
        let particle_margin = 0.5 * r_max;
        let particle_cell = 2.0 * r_max + particle_margin;
        let (soft, contact, linear_slop, relax) = match s.stabilization {
            Stabilization::Soft { contact_hertz, contact_damping_ratio, static_hertz, static_damping_ratio } => (
                Softness::new(static_hertz.min(0.5 / h), static_damping_ratio, h),
                Softness::new(contact_hertz.min(0.25 / h), contact_damping_ratio, h),
                0.0,
                s.relax_iterations,
            ),
            Stabilization::Baumgarte { beta, linear_slop } => {
                let rigid = Softness { bias_rate: beta / h, mass_scale: 1.0, impulse_scale: 0.0 };
                (rigid, rigid, linear_slop, 0)
            }
        };
        let joint = Softness::new(s.joint_hertz.min(0.25 / h), s.joint_damping_ratio, h);
        Self {
            gravity: d.gravity,
            dt: d.dt,
            h,
            inv_h: 1.0 / h,
            substeps: s.substeps,
            iterations: s.iterations,
            relax_iterations: relax,
            body_count: world.bodies.len() as u32,
            plane_count: world.planes.len() as u32,
            collider_count: (world.planes.len() + world.sdfs.len()) as u32,
            particle_count: world.particles.len() as u32,
            particle_friction: d.particles.material.friction,
            particle_restitution: d.particles.material.restitution,
            // The grid also finds the particles touching a body, so one particle meets bodies.
            particle_collisions: u32::from(
                d.particles.collisions
                    && (world.particles.len() > 1 || (!world.particles.is_empty() && !world.bodies.is_empty())),
            ),
            particle_iterations: d.particles.iterations,
            particle_inv_cell: 1.0 / particle_cell,
            particle_margin,
            particle_hash_mask: (world.particles.len().max(64) as u32).next_power_of_two() - 1,
            particle_items: 0,
            particle_sorted: 0,
            particle_cell_start: 0,
            particle_counts: 0,
            particle_body_contacts: u32::from(
                d.particles.collisions && !world.particles.is_empty() && !world.bodies.is_empty(),
            ),
            particle_reach: r_max + particle_margin,
            origin_point: 0,
            particle_body_starts: 0,
            particle_body_list: 0,
            particle_body_capacity: if d.particles.collisions && !world.bodies.is_empty() {
                (world.particles.len() as u32).saturating_mul(crate::particles::PARTICLE_BODY_SLOTS)
            } else {
                0
            },
            particle_slot_counts: 0,
            particle_slot_bodies: 0,
            particle_body_dropped: 0,
            particle_speed_bound: 0,
            recycle_contacts: u32::from(s.recycle_contacts),
            particle_colliders: 0,
            particle_selected: 0,
            prepared_passes: u32::from(s.gpu_prepared_passes),
            particle_slot_wanted: 0,
            slot_count,
            static_bias_rate: soft.bias_rate,
            static_mass_scale: soft.mass_scale,
            static_impulse_scale: soft.impulse_scale,
            linear_slop,
            max_push_velocity: s.max_push_velocity,
            restitution_threshold: s.restitution_threshold,
            speculative_distance: s.speculative_distance,
            warm_start_scale: if s.warm_starting { 1.0 } else { 0.0 },
            max_rotation: 0.25 * std::f32::consts::PI,
            contact_bias_rate: contact.bias_rate,
            contact_mass_scale: contact.mass_scale,
            contact_impulse_scale: contact.impulse_scale,
            max_colors: s.max_colors,
            // Jacobi for everything: no coloring rounds, every constraint overflows.
            coloring_rounds: if s.constraint_solver == crate::world::ConstraintSolver::Jacobi {
                0
            } else {
                s.coloring_rounds
            },
            body_contacts: s.body_contacts as u32,
            joint_count: world.joints.len() as u32,
            joint_bias_rate: joint.bias_rate,
            joint_mass_scale: joint.mass_scale,
            joint_impulse_scale: joint.impulse_scale,
        }
    }
}

/// Where a body's internal frame (centre of mass, principal axes) sits in its user frame.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct BodyFrame {
    pub local_center_of_mass: Vec3,
    pub principal_frame: Quat,
}

impl BodyFrame {
    /// The internal pose (centre of mass, principal frame's orientation) of a body whose own
    /// frame is at `position` with `orientation` (a unit quaternion).
    pub fn internal_pose(&self, position: Vec3, orientation: Quat) -> (Vec3, Quat) {
        (
            position + rotate(orientation, self.local_center_of_mass),
            quat_mul(orientation, self.principal_frame).normalize(),
        )
    }

    /// What [`Solver::set_pose`](crate::Solver::set_pose) writes for body `body` of kind
    /// `kind`: the internal pose of `position` and `orientation`, checked.
    pub fn checked_pose(&self, body: BodyHandle, kind: u32, position: Vec3, orientation: Quat) -> Result<(Vec3, Quat)> {
        check_finite("body position", position, position.is_finite())?;
        let orientation = unit_orientation(orientation)?;
        if kind == KIND_STATIC {
            return Err(Error::StaticBody { index: body.0 });
        }
        Ok(self.internal_pose(position, orientation))
    }

    /// Converts an internal state to the user's view of it.
    pub fn user_state(&self, b: &GpuBody) -> BodyState {
        let p = self.principal_frame;
        let orientation = quat_mul(b.orientation, Quat::from_xyzw(-p.x, -p.y, -p.z, p.w)).normalize();
        BodyState {
            position: b.position - rotate(orientation, self.local_center_of_mass),
            orientation,
            linear_velocity: b.linear_velocity,
            angular_velocity: b.angular_velocity,
        }
    }
}

/// What [`Solver::set_force`](crate::Solver::set_force) writes for body `body` of kind `kind`:
/// the force and torque, checked.
pub(crate) fn checked_force(body: BodyHandle, kind: u32, force: Vec3, torque: Vec3) -> Result<(Vec3, Vec3)> {
    check_finite("body force", force, force.is_finite())?;
    check_finite("body torque", torque, torque.is_finite())?;
    if kind != KIND_DYNAMIC {
        return Err(Error::NotDynamic { index: body.0 });
    }
    Ok((force, torque))
}

/// Where each joint of a world sits among the joints sorted by color, and which have a motor:
/// what [`Solver::set_joint_motor`](crate::Solver::set_joint_motor) checks and writes through.
#[derive(Clone, Debug, Default)]
pub(crate) struct JointSlots {
    /// The place in the sorted joints of each joint, by handle.
    slots: Vec<u32>,
    /// Whether each joint, by handle, has a motor.
    motors: Vec<bool>,
}

impl JointSlots {
    /// The slots of `joints`, sorted by color, the world's index of each in `order`.
    pub fn new(joints: &[GpuJoint], order: &[u32]) -> Self {
        let mut slots = vec![0; order.len()];
        let mut motors = vec![false; order.len()];
        for (k, (j, &index)) in joints.iter().zip(order).enumerate() {
            slots[index as usize] = k as u32;
            motors[index as usize] = j.flags & JOINT_MOTOR != 0;
        }
        Self { slots, motors }
    }

    /// Where `joint`'s record is among the sorted joints, once `joint` names a joint with a
    /// motor and `motor` is valid.
    pub fn motor_slot(&self, joint: JointHandle, motor: &JointMotor) -> Result<usize> {
        let count = self.slots.len() as u32;
        let i = joint.index();
        if joint.0 >= count {
            return Err(Error::InvalidHandle { what: "joint", index: joint.0, count });
        }
        if !self.motors[i] {
            return Err(Error::InvalidJoint {
                reason: format!(
                    "joint {i} has no motor to set: give it one when adding it (`.motor(0.0, 0.0)` adds one that starts off)"
                ),
            });
        }
        motor.validate()?;
        Ok(self.slots[i] as usize)
    }
}

/// A world flattened into the arrays both backends step.
#[derive(Clone, Debug)]
pub(crate) struct Packed {
    pub params: StepParams,
    pub bodies: Vec<GpuBody>,
    pub props: Vec<GpuBodyProps>,
    pub shapes: Vec<GpuShape>,
    pub geometry: Vec<Vec4>,
    pub topology: Vec<u32>,
    pub colliders: Vec<GpuCollider>,
    pub particles: Vec<GpuParticle>,
    pub frames: Vec<BodyFrame>,
    pub slot_count: u32,
    /// The joints, by color.
    pub joints: Vec<GpuJoint>,
    /// Where each joint color starts in `joints`, and one past the last.
    pub joint_colors: Vec<u32>,
    /// The world's index of each of `joints`.
    pub joint_order: Vec<u32>,
    /// Each of `joints`' breaking loads and no-contact entries.
    pub joint_breaks: Vec<GpuJointBreak>,
}

impl Packed {
    pub fn new(world: &World) -> Self {
        let mut tables = ShapeTables::default();
        let collider_count = world.collider_count() as u32;
        let mut slot_count = 0u32;
        let mut bodies = Vec::with_capacity(world.bodies.len());
        let mut props = Vec::with_capacity(world.bodies.len());
        let mut frames = Vec::with_capacity(world.bodies.len());
        for record in &world.bodies {
            let (desc, mp) = (&record.desc, &record.mass);
            let shape = tables.add(&desc.shape, mp);
            let dynamic = desc.kind == BodyKind::Dynamic;
            let slot_offset = slot_count;
            if dynamic {
                // A first contact per collider, a second and a third per SDF (see
                // `cpu::stages::surface_slot`).
                slot_count +=
                    static_slot_count(collider_count, world.sdfs.len() as u32, &tables.shapes[shape as usize]);
            }
            let frame =
                BodyFrame { local_center_of_mass: mp.local_center_of_mass, principal_frame: mp.principal_frame };
            let (position, orientation) = frame.internal_pose(desc.position, desc.orientation);
            let (linear_velocity, angular_velocity) = match desc.kind {
                BodyKind::Static => (Vec3::ZERO, Vec3::ZERO),
                _ => (desc.linear_velocity, desc.angular_velocity),
            };
            bodies.push(GpuBody {
                position,
                inv_mass: if dynamic { 1.0 / mp.mass } else { 0.0 },
                orientation,
                linear_velocity,
                angular_velocity,
                ..GpuBody::default()
            });
            let mut pr = GpuBodyProps {
                inv_inertia: if dynamic { mp.principal_inertia.recip() } else { Vec3::ZERO },
                shape,
                slot_offset,
                kind: match desc.kind {
                    BodyKind::Dynamic => KIND_DYNAMIC,
                    BodyKind::Static => KIND_STATIC,
                    BodyKind::Kinematic => KIND_KINEMATIC,
                },
                friction: desc.material.friction,
                restitution: desc.material.restitution,
                linear_damping: desc.linear_damping,
                angular_damping: desc.angular_damping,
                ..GpuBodyProps::default()
            };
            pr.set_groups(desc.collision_groups);
            props.push(pr);
            frames.push(frame);
        }
        let mut colliders: Vec<GpuCollider> = world
            .planes
            .iter()
            .map(|p| GpuCollider {
                normal: p.normal,
                offset: p.offset,
                friction: p.material.friction,
                restitution: p.material.restitution,
                ..GpuCollider::default()
            })
            .collect();
        // SDF programs follow the shapes in `geometry`.
        for sdf in &world.sdfs {
            colliders.push(GpuCollider {
                friction: sdf.collider.material.friction,
                restitution: sdf.collider.material.restitution,
                first_node: tables.geometry.len() as u32,
                node_count: sdf.program.node_count,
                ..GpuCollider::default()
            });
            tables.geometry.extend_from_slice(&sdf.program.data);
        }
        // A zero point: the core of a particle posed as a sphere for the narrow phase.
        let origin_point = tables.geometry.len() as u32;
        tables.geometry.push(Vec4::ZERO);
        let ShapeTables { shapes, geometry, mut topology, .. } = tables;
        let (joints, joint_colors, joint_order) = pack_joints(world, &bodies);
        // Each body's list of the bodies a joint keeps it from colliding with, after the shapes'
        // topology: one entry per joint (a joint that breaks clears its own, and two bodies
        // joined twice stay apart while either joint holds).
        let mut no_contact: Vec<Vec<(u32, usize)>> = vec![Vec::new(); world.bodies.len()];
        for (index, joint) in world.joints.iter().enumerate().filter(|(_, j)| !j.collide) {
            no_contact[joint.body_a.index()].push((joint.body_b.0, index));
            no_contact[joint.body_b.index()].push((joint.body_a.0, index));
        }
        // Each joint's entries in A's list and in B's, by the world's order.
        let mut entries = vec![[NO_BODY; 2]; world.joints.len()];
        for (body, (list, pr)) in no_contact.iter().zip(&mut props).enumerate() {
            pr.no_contact_first = topology.len() as u32;
            pr.no_contact_count = list.len() as u32;
            for &(other, index) in list {
                let side = usize::from(world.joints[index].body_a.index() != body);
                entries[index][side] = topology.len() as u32;
                topology.push(other);
            }
        }
        let joint_breaks = joint_order
            .iter()
            .map(|&index| {
                let joint = &world.joints[index as usize];
                // A load beyond any f32 never breaks the joint; the GPU compares finite numbers.
                let most = |x: f32| x.min(JOINT_NO_LOAD);
                let none = (JOINT_NO_LOAD, JOINT_NO_LOAD);
                let (force, torque) = joint.breaking.map_or(none, |b| (most(b.force), most(b.torque)));
                let [entry_a, entry_b] = entries[index as usize];
                GpuJointBreak { force, torque, entry_a, entry_b }
            })
            .collect();
        Self {
            params: StepParams { origin_point, ..StepParams::new(world, slot_count) },
            bodies,
            props,
            shapes,
            geometry,
            topology,
            colliders,
            particles: world
                .particles
                .iter()
                .map(|p| GpuParticle { position: p.position, radius: p.radius, velocity: p.velocity, mass: p.mass })
                .collect(),
            joints,
            joint_colors,
            joint_order,
            joint_breaks,
            frames,
            slot_count,
        }
    }
}

/// The world's joints in the frames of the packed `bodies`, graph-colored greedily in the order
/// they were added (each takes the lowest color neither of its dynamic bodies has yet, so a
/// joint needs at most one more color than the most joints on one of its bodies; static and
/// kinematic bodies take no impulse, so they bind nothing) and sorted by color, with where
/// each color starts and one past the last, and each packed joint's index in the world.
fn pack_joints(world: &World, bodies: &[GpuBody]) -> (Vec<GpuJoint>, Vec<u32>, Vec<u32>) {
    // Each dynamic body's colors taken so far, 64 to a word.
    let mut body_colors: HashMap<u32, Vec<u64>> = HashMap::new();
    let mut colored: Vec<(u32, u32, GpuJoint)> = Vec::with_capacity(world.joints.len());
    for (index, joint) in world.joints.iter().enumerate() {
        let (ia, ib) = (joint.body_a.0, joint.body_b.0);
        let (a, b) = (&bodies[ia as usize], &bodies[ib as usize]);
        let moving = |i: u32| world.bodies[i as usize].desc.kind == BodyKind::Dynamic;
        let taken = |i: u32, word: usize| {
            if moving(i) { body_colors.get(&i).and_then(|w| w.get(word)).copied().unwrap_or(0) } else { 0 }
        };
        let (word, free) = (0..)
            .map(|word| (word, !(taken(ia, word) | taken(ib, word))))
            .find(|&(_, free)| free != 0)
            .expect("a body has finitely many joints");
        let color = 64 * word as u32 + free.trailing_zeros();
        for i in [ia, ib].into_iter().filter(|&i| moving(i)) {
            let words = body_colors.entry(i).or_default();
            if words.len() <= word {
                words.resize(word + 1, 0);
            }
            words[word] |= 1 << (color % 64);
        }
        let mut axis_b = Vec3::ZERO;
        let ((angular, axis), (linear, linear_axis)) = match joint.kind {
            // A ball joint's cone axis is an axis of both bodies.
            JointKind::Spherical => {
                ((JOINT_ANGULAR_FREE, joint.cone.map_or(Vec3::ZERO, |c| c.axis)), (JOINT_LINEAR_POINT, Vec3::ZERO))
            }
            JointKind::Revolute { axis } => ((JOINT_ANGULAR_HINGE, axis), (JOINT_LINEAR_POINT, Vec3::ZERO)),
            JointKind::Fixed => ((JOINT_ANGULAR_LOCKED, Vec3::ZERO), (JOINT_LINEAR_POINT, Vec3::ZERO)),
            JointKind::Prismatic { axis } => ((JOINT_ANGULAR_LOCKED, Vec3::ZERO), (JOINT_LINEAR_LINE, axis)),
            JointKind::PointOnPlane { normal } => ((JOINT_ANGULAR_FREE, Vec3::ZERO), (JOINT_LINEAR_PLANE, normal)),
            JointKind::Universal { axis_a, axis_b: b } => {
                axis_b = b;
                ((JOINT_ANGULAR_TWO_AXES, axis_a), (JOINT_LINEAR_POINT, Vec3::ZERO))
            }
        };
        // A hinge's axis is one axis of both bodies; a universal joint has one of each.
        if angular != JOINT_ANGULAR_TWO_AXES {
            axis_b = axis;
        }
        let rest_angle = if angular == JOINT_ANGULAR_TWO_AXES {
            crate::math::angle_of(axis.dot(axis_b), axis.cross(axis_b).length())
        } else {
            0.0
        };
        let (qa, qb) = (a.orientation, b.orientation);
        // A hinge's angle is measured about its axis from a direction across it, on A's side
        // turned to the middle of the limits: the angle wraps at ±π from there, as far from
        // both limits as it can be, and the limits are kept relative to it.
        let across = if axis == Vec3::ZERO { Vec3::ZERO } else { crate::math::tangent_basis(axis).0 };
        // (A slider's limits are translations from where its anchors were together, as given.)
        // A ball joint's twist is measured alike, about its cone's axis.
        let hinge = angular == JOINT_ANGULAR_HINGE;
        let turn_limits = joint.limits.filter(|_| hinge).or(joint.twist);
        let middle = turn_limits.map_or(0.0, |l| 0.5 * (l[0] + l[1]));
        let reference_direction_a = if middle == 0.0 { across } else { Quat::from_axis_angle(axis, middle) * across };
        let reference_direction_b = across;
        let (lower, upper) = match (joint.limits, joint.cone) {
            (Some(l), _) => (l[0] - middle, l[1] - middle),
            // A cone's half angle is its upper limit, and its twist's lowest angle the lower.
            (None, Some(cone)) => (joint.twist.map_or(0.0, |l| l[0] - middle), cone.half_angle),
            (None, None) => (0.0, 0.0),
        };
        let (motor_speed, max_motor_effort) = joint.motor.map_or((0.0, 0.0), |m| (m.speed, m.max_effort));
        let flags = if joint.limits.is_some() || joint.cone.is_some() { JOINT_LIMITED } else { 0 }
            | if joint.motor.is_some() { JOINT_MOTOR } else { 0 }
            | if joint.twist.is_some() { JOINT_TWIST } else { 0 };
        colored.push((
            color,
            index as u32,
            GpuJoint {
                body_a: ia,
                body_b: ib,
                angular,
                linear,
                local_linear_axis_a: rotate_inv(qa, linear_axis),
                local_ref_a: rotate_inv(qa, reference_direction_a),
                rest_angle,
                local_ref_b: rotate_inv(qb, reference_direction_b),
                lower,
                upper,
                motor_speed,
                max_motor_effort,
                flags,
                local_anchor_a: rotate_inv(qa, joint.anchor - a.position),
                local_anchor_b: rotate_inv(qb, joint.anchor - b.position),
                local_axis_a: rotate_inv(qa, axis),
                local_axis_b: rotate_inv(qb, axis_b),
                reference: quat_normalize(quat_mul(Quat::from_xyzw(-qa.x, -qa.y, -qa.z, qa.w), qb)),
                ..GpuJoint::default()
            },
        ));
    }
    // Color by color; within a color, the joints of one kind side by side, for the CPU's
    // lanes (the order within a color changes no result: its joints share no dynamic body).
    colored.sort_by_key(|&(color, _, ref j)| (color, j.linear, j.angular, j.flags));
    let mut starts = Vec::new();
    for (i, &(color, _, _)) in colored.iter().enumerate() {
        if i == 0 || colored[i - 1].0 != color {
            starts.push(i as u32);
        }
    }
    starts.push(colored.len() as u32);
    let order = colored.iter().map(|&(_, index, _)| index).collect();
    (colored.into_iter().map(|(_, _, j)| j).collect(), starts, order)
}

/// The shape tables under construction; bodies with the same shape share one entry.
#[derive(Default)]
struct ShapeTables {
    shapes: Vec<GpuShape>,
    geometry: Vec<Vec4>,
    topology: Vec<u32>,
    index: HashMap<Vec<u32>, u32>,
}

impl ShapeTables {
    /// The index of `shape` (in the principal frame of `mp`), adding it if it is new.
    fn add(&mut self, shape: &Shape, mp: &MassProperties) -> u32 {
        let p = mp.principal_frame;
        let to_principal = Quat::from_xyzw(-p.x, -p.y, -p.z, p.w);
        let core: Vec<Vec3> =
            shape.core_points().iter().map(|v| rotate(to_principal, *v - mp.local_center_of_mass)).collect();
        let mut key: Vec<u32> = core.iter().flat_map(|v| v.to_array().map(f32::to_bits)).collect();
        key.push(shape.radius().to_bits());
        // A box and a hull of the same corners differ in layout (`SHAPE_BOX`).
        key.push(u32::from(matches!(shape, Shape::Cuboid { .. })));
        if let Some(&index) = self.index.get(&key) {
            return index;
        }
        let polytope =
            shape.polytope().map(|poly| poly.mapped(to_principal, rotate(to_principal, -mp.local_center_of_mass)));
        let first_point = self.geometry.len() as u32;
        let first_topology = self.topology.len() as u32;
        let kind = match (&polytope, core.len()) {
            (Some(_), _) if matches!(shape, Shape::Cuboid { .. }) => SHAPE_BOX,
            (Some(_), _) => SHAPE_POLYTOPE,
            (None, 1) => SHAPE_POINT,
            (None, _) => SHAPE_SEGMENT,
        };
        let (mut face_count, mut edge_count, mut point_count) = (0, 0, core.len() as u32);
        match &polytope {
            Some(poly) => {
                point_count = poly.vertices.len() as u32;
                face_count = poly.faces.len() as u32;
                edge_count = poly.edges.len() as u32;
                self.geometry.extend(poly.vertices.iter().map(|v| v.extend(0.0)));
                self.geometry.extend(poly.faces.iter().map(|f| f.normal.extend(f.offset)));
                let mut start = 0u32;
                for f in &poly.faces {
                    self.topology.push(start);
                    start += f.vertices.len() as u32;
                }
                self.topology.push(start);
                for f in &poly.faces {
                    self.topology.extend(&f.vertices);
                }
            }
            None => self.geometry.extend(core.iter().map(|v| v.extend(0.0))),
        }
        let first_edge = self.topology.len() as u32;
        for e in polytope.iter().flat_map(|poly| &poly.edges) {
            self.topology.extend([e.a, e.b, e.faces[0], e.faces[1]]);
        }
        let index = self.shapes.len() as u32;
        self.shapes.push(GpuShape {
            first_point,
            point_count,
            face_count,
            first_topology,
            first_edge,
            edge_count,
            radius: shape.radius(),
            kind,
        });
        self.index.insert(key, index);
        index
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{JointDesc, RigidBodyDesc, Shape, WorldDesc};

    /// The joint coloring: no two joints of a color share a dynamic body, and those of one kind
    /// stand side by side; joints on a static body share colors, a body in more than 64 joints (a word of colors) takes colors past
    /// the first word, and each joint's frames put its anchor on both bodies.
    #[test]
    fn joint_colors_share_no_dynamic_body() {
        let mut world = World::new(WorldDesc::default()).unwrap();
        let ground = world.add_body(RigidBodyDesc::fixed(Shape::sphere(0.1))).unwrap();
        let hub = world.add_body(RigidBodyDesc::dynamic(Shape::sphere(0.1)).position(Vec3::Y)).unwrap();
        let mut spokes = Vec::new();
        for i in 0..70 {
            let at = Vec3::new(i as f32, 2.0, 0.0);
            let spoke = world.add_body(RigidBodyDesc::dynamic(Shape::sphere(0.1)).position(at)).unwrap();
            world.add_joint(JointDesc::spherical(hub, spoke, at)).unwrap();
            spokes.push(spoke);
        }
        for pair in spokes.windows(2) {
            world.add_joint(JointDesc::revolute(pair[0], pair[1], Vec3::ZERO, Vec3::X)).unwrap();
        }
        for &spoke in &spokes[..10] {
            world.add_joint(JointDesc::fixed(ground, spoke, Vec3::ZERO)).unwrap();
        }
        let packed = Packed::new(&world);
        let (joints, colors) = (&packed.joints, &packed.joint_colors);
        assert_eq!(joints.len(), world.joint_count());
        assert_eq!(*colors.last().unwrap() as usize, joints.len());
        for range in colors.windows(2) {
            let mut bodies = std::collections::HashSet::new();
            for j in &joints[range[0] as usize..range[1] as usize] {
                for body in [j.body_a, j.body_b] {
                    if body != ground.0 {
                        assert!(bodies.insert(body), "body {body} twice in the color from {}", range[0]);
                    }
                }
            }
            // The joints of one kind side by side (for the CPU's lanes).
            let color = &joints[range[0] as usize..range[1] as usize];
            assert!(color.is_sorted_by_key(|j| (j.linear, j.angular, j.flags)), "color from {}", range[0]);
        }
        let mixed = |r: &[u32]| {
            let color = &joints[r[0] as usize..r[1] as usize];
            color.iter().any(|j| (j.angular, j.flags) != (color[0].angular, color[0].flags))
        };
        assert!(colors.windows(2).any(mixed), "no color holds joints of two kinds");
        // The hub's 70 joints take 70 colors; the spokes' chain and the ground's welds fit in
        // those (each spoke is in at most four joints).
        assert_eq!(colors.len() - 1, 70);
        for j in joints {
            let (a, b) = (&packed.bodies[j.body_a as usize], &packed.bodies[j.body_b as usize]);
            let (on_a, on_b) = (
                a.position + rotate(a.orientation, j.local_anchor_a),
                b.position + rotate(b.orientation, j.local_anchor_b),
            );
            assert!((on_a - on_b).length() < 1e-5, "anchors {on_a} and {on_b}");
        }
    }
}
