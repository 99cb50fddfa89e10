//! Rigid bodies: descriptors, handles, materials and the state read back from a solver.

use glam::{Quat, Vec3, Vec4};

use crate::error::{Error, Result, check_finite, check_non_negative, check_positive};
use crate::shape::Shape;

/// How a body takes part in the simulation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum BodyKind {
    /// Moved by gravity and contacts.
    #[default]
    Dynamic,
    /// Never moves; infinite mass.
    Static,
    /// Moved by the user at its own velocity; infinite mass to everything it touches.
    Kinematic,
}

/// Surface properties of a body or a static plane.
///
/// Two materials in contact combine by [`Material::combine`]: friction is the geometric mean
/// `sqrt(μa μb)` (so a frictionless surface makes any contact frictionless, and equal
/// coefficients keep their value) and restitution is the larger `max(ea, eb)` (a bouncy ball
/// bounces on a dead floor). These are the rules of Box2D and Rapier's defaults.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(default, deny_unknown_fields))]
pub struct Material {
    /// Coulomb friction coefficient μ, dimensionless, `>= 0`. Default 0.6.
    pub friction: f32,
    /// Newton restitution coefficient e, in `[0, 1]`. Default 0.
    pub restitution: f32,
}

impl Default for Material {
    fn default() -> Self {
        Self { friction: 0.6, restitution: 0.0 }
    }
}

impl Material {
    /// A material with friction `friction` and restitution `restitution`.
    pub const fn new(friction: f32, restitution: f32) -> Self {
        Self { friction, restitution }
    }

    /// The material of a contact between `a` and `b`: `μ = sqrt(μa μb)`, `e = max(ea, eb)`.
    pub fn combine(a: Material, b: Material) -> Material {
        Material { friction: (a.friction * b.friction).sqrt(), restitution: a.restitution.max(b.restitution) }
    }

    pub(crate) fn validate(&self) -> Result<()> {
        check_non_negative("friction", self.friction)?;
        check_finite("restitution", self.restitution, self.restitution.is_finite())?;
        if !(0.0..=1.0).contains(&self.restitution) {
            return Err(Error::OutOfRange { what: "restitution", range: "[0, 1]", value: self.restitution });
        }
        Ok(())
    }
}

/// How a body's mass is given.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum MassSpec {
    /// Uniform density, kg/m³; mass and inertia follow from the shape.
    Density(f32),
    /// Total mass, kg; inertia follows from the shape at the matching uniform density.
    Mass(f32),
}

impl Default for MassSpec {
    /// The density of water, 1000 kg/m³.
    fn default() -> Self {
        Self::Density(1000.0)
    }
}

/// Everything needed to create a body. Build one with [`RigidBodyDesc::dynamic`],
/// [`RigidBodyDesc::fixed`] or [`RigidBodyDesc::kinematic`] and the builder methods.
///
/// ```
/// use signorini::prelude::*;
/// let desc = RigidBodyDesc::dynamic(Shape::cuboid(Vec3::splat(0.5)))
///     .position(Vec3::new(0.0, 2.0, 0.0))
///     .density(500.0)
///     .friction(0.4);
/// ```
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(deny_unknown_fields))]
pub struct RigidBodyDesc {
    /// Dynamic, static or kinematic.
    #[cfg_attr(feature = "serde", serde(default))]
    pub kind: BodyKind,
    /// Collision shape, in the body frame.
    pub shape: Shape,
    /// Position of the body-frame origin, m. Default zero.
    #[cfg_attr(feature = "serde", serde(default))]
    pub position: Vec3,
    /// Orientation of the body frame. Default identity. Normalized on insertion.
    #[cfg_attr(feature = "serde", serde(default))]
    pub orientation: Quat,
    /// Velocity of the centre of mass, m/s. Default zero.
    #[cfg_attr(feature = "serde", serde(default))]
    pub linear_velocity: Vec3,
    /// Angular velocity, world frame, rad/s. Default zero.
    #[cfg_attr(feature = "serde", serde(default))]
    pub angular_velocity: Vec3,
    /// Mass from density or given directly. Default density 1000 kg/m³ (water).
    #[cfg_attr(feature = "serde", serde(default))]
    pub mass: MassSpec,
    /// Friction and restitution. Default [`Material::default`].
    #[cfg_attr(feature = "serde", serde(default))]
    pub material: Material,
    /// Linear velocity damping rate, 1/s: `v *= 1 / (1 + h c)` per substep. Default 0.
    #[cfg_attr(feature = "serde", serde(default))]
    pub linear_damping: f32,
    /// Angular velocity damping rate, 1/s. Default 0.
    #[cfg_attr(feature = "serde", serde(default))]
    pub angular_damping: f32,
    /// Which other bodies it may collide with. Default [`CollisionGroups::ALL`].
    #[cfg_attr(feature = "serde", serde(default))]
    pub collision_groups: CollisionGroups,
}

/// Collision groups: two bodies collide only if each is in a group the other's filter
/// lets through, `a.memberships & b.filter != 0` and `b.memberships & a.filter != 0` (as
/// Rapier's interaction groups). Between bodies only: every body meets the static planes and
/// fields, and particles, whatever its groups.
///
/// ```
/// use signorini::prelude::*;
/// use signorini::CollisionGroups;
/// // Debris: in group 2, colliding with everything but other debris.
/// let debris = CollisionGroups { memberships: 0b10, filter: !0b10 };
/// let desc = RigidBodyDesc::dynamic(Shape::sphere(0.05)).collision_groups(debris);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(default, deny_unknown_fields))]
pub struct CollisionGroups {
    /// The groups the body is in, one bit each.
    pub memberships: u32,
    /// The groups whose bodies it may collide with.
    pub filter: u32,
}

impl CollisionGroups {
    /// In every group, colliding with every group: the default.
    pub const ALL: Self = Self { memberships: u32::MAX, filter: u32::MAX };

    /// Whether bodies with these groups and `other` may collide.
    pub fn interact(self, other: Self) -> bool {
        self.memberships & other.filter != 0 && other.memberships & self.filter != 0
    }
}

impl Default for CollisionGroups {
    fn default() -> Self {
        Self::ALL
    }
}

impl RigidBodyDesc {
    /// A body of the given kind and shape with every other field at its default.
    pub fn new(kind: BodyKind, shape: Shape) -> Self {
        Self {
            kind,
            shape,
            position: Vec3::ZERO,
            orientation: Quat::IDENTITY,
            linear_velocity: Vec3::ZERO,
            angular_velocity: Vec3::ZERO,
            mass: MassSpec::default(),
            material: Material::default(),
            linear_damping: 0.0,
            angular_damping: 0.0,
            collision_groups: CollisionGroups::ALL,
        }
    }

    /// A dynamic body.
    pub fn dynamic(shape: Shape) -> Self {
        Self::new(BodyKind::Dynamic, shape)
    }

    /// A static body (named `fixed` because `static` is a keyword).
    pub fn fixed(shape: Shape) -> Self {
        Self::new(BodyKind::Static, shape)
    }

    /// A kinematic body.
    pub fn kinematic(shape: Shape) -> Self {
        Self::new(BodyKind::Kinematic, shape)
    }

    /// Sets the position of the body origin, m.
    #[must_use]
    pub fn position(mut self, position: Vec3) -> Self {
        self.position = position;
        self
    }

    /// Sets the orientation.
    #[must_use]
    pub fn orientation(mut self, orientation: Quat) -> Self {
        self.orientation = orientation;
        self
    }

    /// Sets the velocity of the centre of mass, m/s.
    #[must_use]
    pub fn linear_velocity(mut self, v: Vec3) -> Self {
        self.linear_velocity = v;
        self
    }

    /// Sets the angular velocity, world frame, rad/s.
    #[must_use]
    pub fn angular_velocity(mut self, w: Vec3) -> Self {
        self.angular_velocity = w;
        self
    }

    /// Sets a uniform density, kg/m³.
    #[must_use]
    pub fn density(mut self, density: f32) -> Self {
        self.mass = MassSpec::Density(density);
        self
    }

    /// Sets the total mass, kg.
    #[must_use]
    pub fn mass(mut self, mass: f32) -> Self {
        self.mass = MassSpec::Mass(mass);
        self
    }

    /// Sets the material.
    #[must_use]
    pub fn material(mut self, material: Material) -> Self {
        self.material = material;
        self
    }

    /// Sets the friction coefficient.
    #[must_use]
    pub fn friction(mut self, friction: f32) -> Self {
        self.material.friction = friction;
        self
    }

    /// Sets the restitution coefficient.
    #[must_use]
    pub fn restitution(mut self, restitution: f32) -> Self {
        self.material.restitution = restitution;
        self
    }

    /// Sets the collision groups ([`CollisionGroups`]).
    #[must_use]
    pub fn collision_groups(mut self, groups: CollisionGroups) -> Self {
        self.collision_groups = groups;
        self
    }

    /// Sets linear and angular damping rates, 1/s.
    #[must_use]
    pub fn damping(mut self, linear: f32, angular: f32) -> Self {
        self.linear_damping = linear;
        self.angular_damping = angular;
        self
    }

    /// Checks every field; returns the normalized orientation.
    pub(crate) fn validate(&self) -> Result<Quat> {
        self.shape.validate()?;
        check_finite("body position", self.position, self.position.is_finite())?;
        let orientation = unit_orientation(self.orientation)?;
        crate::error::check_speed("body linear velocity", self.linear_velocity)?;
        crate::error::check_speed("body angular velocity", self.angular_velocity)?;
        match self.mass {
            MassSpec::Density(d) => check_positive("body density", d)?,
            MassSpec::Mass(m) => check_positive("body mass", m)?,
        }
        self.material.validate()?;
        check_non_negative("linear damping", self.linear_damping)?;
        check_non_negative("angular damping", self.angular_damping)?;
        Ok(orientation)
    }
}

/// A body's orientation normalized, or the error for a non-finite or zero quaternion.
pub(crate) fn unit_orientation(orientation: Quat) -> Result<Quat> {
    check_finite("body orientation", orientation, orientation.is_finite())?;
    let len = orientation.length();
    if !len.is_finite() {
        // A length past f32's range: scaled by the largest component first.
        let scaled = orientation / Vec4::from(orientation).abs().max_element();
        return Ok(scaled / scaled.length());
    }
    if len < 1e-6 {
        return Err(Error::DegenerateShape { reason: "body orientation is a zero quaternion".into() });
    }
    if crate::math::is_unit_length(len) {
        // Already unit to f32's precision: kept as given, so that normalizing twice (a world
        // written to a scene and read back) changes no bit.
        return Ok(orientation);
    }
    Ok(orientation / len)
}

/// Names a body of a [`World`](crate::World); valid for every solver built from that world.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct BodyHandle(pub(crate) u32);

impl BodyHandle {
    /// The handle of the body with this index (the `index`-th body added to its world).
    pub fn from_index(index: usize) -> Self {
        Self(index as u32)
    }

    /// The body's index: bodies are numbered in insertion order from 0, and
    /// [`Solver::body_states`](crate::Solver::body_states) returns them in that order.
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// The motion state of a body, as read back from a solver.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(deny_unknown_fields))]
pub struct BodyState {
    /// Position of the body-frame origin, m.
    pub position: Vec3,
    /// Orientation of the body frame.
    pub orientation: Quat,
    /// Velocity of the centre of mass, m/s.
    pub linear_velocity: Vec3,
    /// Angular velocity, world frame, rad/s.
    pub angular_velocity: Vec3,
}

impl BodyState {
    /// Whether every number of the state is finite.
    pub fn is_finite(&self) -> bool {
        self.position.is_finite()
            && self.orientation.is_finite()
            && self.linear_velocity.is_finite()
            && self.angular_velocity.is_finite()
    }
}
