//! Joints: bilateral constraints between two bodies, solved with the contacts in every substep
//! as soft constraints (the soft step of the contacts, with [`SolverSettings::joint_hertz`]
//! and [`SolverSettings::joint_damping_ratio`]) in the biased solve and as rigid ones in the
//! relax iterations, warm started from step to step. Under
//! [`Stabilization::Baumgarte`](crate::Stabilization::Baumgarte), which has no relax
//! iterations, they are soft only. A hinge measures how far its axes have parted by their
//! cross product, which pulls back hardest at a right angle and not at all when they point
//! opposite ways: it corrects the small errors a step makes, not a hinge wrenched apart.
//!
//! Each joint is a linear part and an angular part, as the joint formulations of the lecture
//! notes combine them: B's anchor held at A's (a point, 0 linear DOF), on a line through it (1)
//! or in a plane through it (2), the line and plane turning with A; and the relative rotation
//! free (3 angular DOF), about two axes whose angle is held (a universal joint, 2), about one
//! common axis only (a hinge, 1) or locked (0). A hinge may
//! have limits on its angle and a motor, a slider limits on its translation and a motor, and a
//! ball joint a cone that limits its swing and, with it, limits on its twist.
//!
//! A joint may break ([`JointDesc::breaks_at`]): one whose force or torque passed its loads
//! in a step holds nothing from the next step on, and its bodies collide again from then.
//!
//! A joint is described in the world frame at the bodies' poses as they were added: the
//! anchor is a point of both bodies there, and a hinge's axis a direction of both. Joints are
//! graph-colored once when a solver is built, so that no two joints of one color share a
//! dynamic body, and each color is one parallel sweep. Two jointed bodies do not collide with
//! each other unless the joint says so ([`JointDesc::colliding`]): the broad phase passes
//! over their pair.
//!
//! [`SolverSettings::joint_hertz`]: crate::SolverSettings::joint_hertz
//! [`SolverSettings::joint_damping_ratio`]: crate::SolverSettings::joint_damping_ratio

use glam::Vec3;

use crate::body::BodyHandle;
use crate::error::{Error, Result, check_finite, check_non_negative};

/// What a joint keeps between its two bodies.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum JointKind {
    /// Ball and socket: the bodies' anchor points stay together; they turn freely about it
    /// (three constraints), within a cone if it has one ([`JointDesc::cone`]) and twist limits
    /// about the cone's axis if it has them ([`JointDesc::twist`]).
    Spherical,
    /// Hinge: the anchor points stay together and the bodies turn relative to each other only
    /// about the axis (five constraints).
    Revolute {
        /// The hinge's axis, world frame at the bodies' initial poses (any length but zero).
        axis: Vec3,
    },
    /// Weld: the bodies keep their initial relative pose (six constraints).
    Fixed,
    /// Slider: the bodies keep their relative rotation, and B's anchor moves only along the
    /// line through A's anchor in the direction `axis`, which turns with A (five constraints).
    Prismatic {
        /// The line's direction, world frame at the bodies' initial poses (any length but zero).
        axis: Vec3,
    },
    /// Point on plane: B's anchor moves only in the plane through A's anchor with the normal
    /// `normal`, which turns with A, and the bodies turn freely (one constraint).
    PointOnPlane {
        /// The plane's normal, world frame at the bodies' initial poses (any length but zero).
        normal: Vec3,
    },
    /// Universal (Cardan) joint: the anchors stay together, and the angle between `axis_a`,
    /// which turns with A, and `axis_b`, which turns with B, stays as it was, so the bodies
    /// turn about both axes but not about the third direction (four constraints). The axes
    /// must not be parallel.
    Universal {
        /// A's axis, world frame at the bodies' initial poses (any length but zero).
        axis_a: Vec3,
        /// B's axis, world frame at the bodies' initial poses (any length but zero).
        axis_b: Vec3,
    },
}

/// A joint between two bodies of one world, at least one of them dynamic.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(deny_unknown_fields))]
pub struct JointDesc {
    /// The first body.
    pub body_a: BodyHandle,
    /// The second body.
    pub body_b: BodyHandle,
    /// The point the joint holds together, world frame at the bodies' initial poses, m.
    pub anchor: Vec3,
    /// What the joint keeps.
    pub kind: JointKind,
    /// Whether the two bodies still collide with each other. Default false: their shapes may
    /// overlap at the joint, as a chain's links or a limb's bones do. Two bodies joined by
    /// several joints collide only if every one of them that has not broken says so.
    #[cfg_attr(feature = "serde", serde(default))]
    pub collide: bool,
    /// A hinge's lowest and highest angle, rad, within `[-π, π]`: B's turn about the axis
    /// relative to A, 0 where they were added. Or a slider's lowest and highest translation,
    /// m: how far B's anchor has moved along the line from A's, 0 where they were added.
    /// Limits that leave out 0 push the joint into them, softly, from the first step. `None`
    /// (the default): no limit.
    pub limits: Option<[f32; 2]>,
    /// A hinge's or a slider's motor. `None` (the default): no motor.
    pub motor: Option<JointMotor>,
    /// The loads at which the joint breaks. `None` (the default): it never does.
    pub breaking: Option<JointBreaking>,
    /// A ball joint's swing limit ([`JointCone`]). `None` (the default): it swings freely.
    pub cone: Option<JointCone>,
    /// A ball joint's lowest and highest twist, rad, within `[-π, π]`: B's turn about the
    /// cone's axis relative to A, 0 where they were added, measured after the swing that
    /// brings B's axis onto A's is undone (a swing-twist decomposition). It needs a cone,
    /// whose axis it turns about. `None` (the default): the twist is free.
    pub twist: Option<[f32; 2]>,
}

/// A ball joint's cone: the angle between an axis of A and an axis of B, which coincide where
/// the bodies were added (a limb's bone direction, say), stays within `half_angle`. It is a
/// one-sided limit, soft once passed and speculative before it is reached, as a hinge's are;
/// the twist about the axis stays free unless limited too ([`JointDesc::twist`]).
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(deny_unknown_fields))]
pub struct JointCone {
    /// The cone's axis, world frame at the bodies' initial poses (any length but zero).
    pub axis: Vec3,
    /// The largest angle between the bodies' axes, rad, in `(0, π)`.
    pub half_angle: f32,
}

/// The loads a joint bears before it breaks: a joint whose reaction over a step's last
/// substep ([`JointReaction`]) exceeded either of them is broken for good at the start of the
/// next step, before its broad phase. It holds nothing from that step on, and its two bodies
/// collide with each other again from that step (unless another joint between them keeps them
/// apart). The GPU decides it on the GPU, with no readback, in the same arithmetic as the CPU;
/// joints without loads cost nothing for it.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(deny_unknown_fields))]
pub struct JointBreaking {
    /// The largest force on B at its anchor, N (above 0; infinite for no limit; in a scene
    /// file `null` or left out).
    #[cfg_attr(feature = "serde", serde(default = "unlimited", with = "load"))]
    pub force: f32,
    /// The largest torque on B besides, N m (above 0; infinite for no limit; in a scene file
    /// `null` or left out).
    #[cfg_attr(feature = "serde", serde(default = "unlimited", with = "load"))]
    pub torque: f32,
}

/// No limit on a load: what a scene file's missing load means.
#[cfg(feature = "serde")]
fn unlimited() -> f32 {
    f32::INFINITY
}

/// A breaking load in a scene file: a number, or `null` for no limit (infinity, which formats
/// such as JSON cannot write as a number).
#[cfg(feature = "serde")]
mod load {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub fn serialize<S: Serializer>(load: &f32, serializer: S) -> Result<S::Ok, S::Error> {
        (*load != f32::INFINITY).then_some(*load).serialize(serializer)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<f32, D::Error> {
        Ok(Option::<f32>::deserialize(deserializer)?.unwrap_or(f32::INFINITY))
    }
}

/// A motor: on a hinge it drives B's turn about the axis relative to A towards `speed`, with at
/// most a torque of `max_effort`; on a slider, B's anchor's speed along the line relative to A,
/// with at most a force of `max_effort`. It is a rigid constraint (no softness), solved before
/// the joint's limits, so that a limit stops what the motor drives.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(deny_unknown_fields))]
pub struct JointMotor {
    /// The relative speed it drives towards: rad/s on a hinge, m/s on a slider.
    pub speed: f32,
    /// The largest torque (N m, on a hinge) or force (N, on a slider) it applies, at least 0.
    pub max_effort: f32,
}

impl JointMotor {
    /// Checks that the speed is finite and the effort finite and not negative.
    pub(crate) fn validate(&self) -> Result<()> {
        check_finite("joint motor speed", self.speed, self.speed.is_finite())?;
        check_non_negative("joint motor effort", self.max_effort)
    }
}

impl JointDesc {
    /// A ball-and-socket joint at `anchor` (world frame).
    pub fn spherical(body_a: BodyHandle, body_b: BodyHandle, anchor: Vec3) -> Self {
        Self {
            body_a,
            body_b,
            anchor,
            kind: JointKind::Spherical,
            collide: false,
            limits: None,
            motor: None,
            breaking: None,
            cone: None,
            twist: None,
        }
    }

    /// A hinge at `anchor` turning about `axis` (world frame).
    pub fn revolute(body_a: BodyHandle, body_b: BodyHandle, anchor: Vec3, axis: Vec3) -> Self {
        Self {
            body_a,
            body_b,
            anchor,
            kind: JointKind::Revolute { axis },
            collide: false,
            limits: None,
            motor: None,
            breaking: None,
            cone: None,
            twist: None,
        }
    }

    /// A weld holding the bodies' relative pose, its anchor at `anchor` (world frame).
    pub fn fixed(body_a: BodyHandle, body_b: BodyHandle, anchor: Vec3) -> Self {
        Self {
            body_a,
            body_b,
            anchor,
            kind: JointKind::Fixed,
            collide: false,
            limits: None,
            motor: None,
            breaking: None,
            cone: None,
            twist: None,
        }
    }

    /// A slider along `axis` through `anchor` (world frame).
    pub fn prismatic(body_a: BodyHandle, body_b: BodyHandle, anchor: Vec3, axis: Vec3) -> Self {
        Self {
            body_a,
            body_b,
            anchor,
            kind: JointKind::Prismatic { axis },
            collide: false,
            limits: None,
            motor: None,
            breaking: None,
            cone: None,
            twist: None,
        }
    }

    /// A universal joint at `anchor`, A turning about `axis_a` and B about `axis_b` (world
    /// frame; usually at right angles, as in a Cardan shaft).
    pub fn universal(body_a: BodyHandle, body_b: BodyHandle, anchor: Vec3, axis_a: Vec3, axis_b: Vec3) -> Self {
        Self {
            body_a,
            body_b,
            anchor,
            kind: JointKind::Universal { axis_a, axis_b },
            collide: false,
            limits: None,
            motor: None,
            breaking: None,
            cone: None,
            twist: None,
        }
    }

    /// B's anchor held in the plane through `anchor` with the normal `normal` (world frame).
    pub fn point_on_plane(body_a: BodyHandle, body_b: BodyHandle, anchor: Vec3, normal: Vec3) -> Self {
        Self {
            body_a,
            body_b,
            anchor,
            kind: JointKind::PointOnPlane { normal },
            collide: false,
            limits: None,
            motor: None,
            breaking: None,
            cone: None,
            twist: None,
        }
    }

    /// The joint with its two bodies colliding with each other (`true`) or not (`false`, the
    /// default).
    pub fn colliding(mut self, collide: bool) -> Self {
        self.collide = collide;
        self
    }

    /// The hinge with its angle held between `lower` and `upper`, rad, or the slider with its
    /// translation held between them, m (see
    /// [`JointDesc::limits`](JointDesc#structfield.limits)).
    pub fn limits(mut self, lower: f32, upper: f32) -> Self {
        self.limits = Some([lower, upper]);
        self
    }

    /// The hinge driven towards the relative speed `speed`, rad/s, with at most the torque
    /// `max_effort`, N m; or the slider towards `speed`, m/s, with at most the force
    /// `max_effort`, N (see [`JointMotor`]).
    pub fn motor(mut self, speed: f32, max_effort: f32) -> Self {
        self.motor = Some(JointMotor { speed, max_effort });
        self
    }

    /// The ball joint with its swing held within `half_angle`, rad, of `axis` (world frame at
    /// the bodies' initial poses; see [`JointCone`]).
    pub fn cone(mut self, axis: Vec3, half_angle: f32) -> Self {
        self.cone = Some(JointCone { axis, half_angle });
        self
    }

    /// The ball joint with its twist about its cone's axis held between `lower` and `upper`,
    /// rad (see [`JointDesc::twist`](JointDesc#structfield.twist)); it needs a cone. Lower and
    /// upper limits, like a hinge's, each one-sided, soft once passed and speculative before
    /// they are reached.
    pub fn twist(mut self, lower: f32, upper: f32) -> Self {
        self.twist = Some([lower, upper]);
        self
    }

    /// The joint breaking once its force exceeds `force`, N, or its torque `torque`, N m (see
    /// [`JointBreaking`]; `f32::INFINITY` for no limit on one of them).
    pub fn breaks_at(mut self, force: f32, torque: f32) -> Self {
        self.breaking = Some(JointBreaking { force, torque });
        self
    }

    /// The joint with its axis normalized, after checking what does not need the world.
    pub(crate) fn validated(self) -> Result<Self> {
        check_finite("joint anchor", self.anchor, self.anchor.is_finite())?;
        if self.body_a == self.body_b {
            return Err(Error::InvalidJoint { reason: format!("both sides are body {}", self.body_a.index()) });
        }
        let direction = |what: &'static str, axis: Vec3| -> Result<Vec3> {
            check_finite(what, axis, axis.is_finite())?;
            let length = axis.length();
            if length <= 1e-6 {
                return Err(Error::InvalidJoint { reason: format!("the {what} {axis} has no direction") });
            }
            Ok(if crate::math::is_unit_length(length) { axis } else { axis / length })
        };
        let kind = match self.kind {
            JointKind::Revolute { axis } => JointKind::Revolute { axis: direction("joint axis", axis)? },
            JointKind::Prismatic { axis } => JointKind::Prismatic { axis: direction("joint axis", axis)? },
            JointKind::PointOnPlane { normal } => {
                JointKind::PointOnPlane { normal: direction("joint plane normal", normal)? }
            }
            JointKind::Universal { axis_a, axis_b } => {
                let (axis_a, axis_b) = (direction("joint axis", axis_a)?, direction("joint axis", axis_b)?);
                // The joint measures its angle across the plane of the two axes.
                if axis_a.cross(axis_b).length() < 1e-3 {
                    return Err(Error::InvalidJoint {
                        reason: format!("a universal joint's axes {axis_a} and {axis_b} are parallel"),
                    });
                }
                JointKind::Universal { axis_a, axis_b }
            }
            other => other,
        };
        let hinge = matches!(kind, JointKind::Revolute { .. });
        let slider = matches!(kind, JointKind::Prismatic { .. });
        // Limits in order, and within ±π where they are angles.
        let ordered = |what: &'static str, [lower, upper]: [f32; 2], angles: bool| -> Result<()> {
            for value in [lower, upper] {
                check_finite(what, value, value.is_finite())?;
                if angles && value.abs() > std::f32::consts::PI {
                    return Err(Error::OutOfRange { what, range: "[-pi, pi]", value });
                }
            }
            if lower > upper {
                return Err(Error::InvalidJoint {
                    reason: format!("the lower {what} {lower} is above the upper {upper}"),
                });
            }
            Ok(())
        };
        if let Some(limits) = self.limits {
            if !hinge && !slider {
                return Err(Error::InvalidJoint { reason: "limits act on a hinge or a slider only".into() });
            }
            ordered("joint limit", limits, hinge)?;
        }
        if let Some(twist) = self.twist {
            if self.cone.is_none() {
                return Err(Error::InvalidJoint {
                    reason: "a twist limit acts on a ball joint with a cone only (it turns about the cone's axis)"
                        .into(),
                });
            }
            ordered("joint twist limit", twist, true)?;
        }
        if let Some(motor) = self.motor {
            if !hinge && !slider {
                return Err(Error::InvalidJoint { reason: "a motor acts on a hinge or a slider only".into() });
            }
            motor.validate()?;
        }
        let cone = match self.cone {
            Some(cone) => {
                if !matches!(kind, JointKind::Spherical) {
                    return Err(Error::InvalidJoint { reason: "a cone limits a ball joint only".into() });
                }
                let axis = direction("joint cone axis", cone.axis)?;
                check_finite("joint cone angle", cone.half_angle, cone.half_angle.is_finite())?;
                // (At π the limit would stand at the antipode, a wall the axis could not swing
                // through: the joint without a cone is the one that swings freely.)
                if cone.half_angle <= 0.0 || cone.half_angle >= std::f32::consts::PI {
                    return Err(Error::OutOfRange {
                        what: "joint cone angle",
                        range: "(0, pi)",
                        value: cone.half_angle,
                    });
                }
                Some(JointCone { axis, ..cone })
            }
            None => None,
        };
        if let Some(breaking) = self.breaking {
            for (what, value) in [("joint breaking force", breaking.force), ("joint breaking torque", breaking.torque)]
            {
                if value.is_nan() || value <= 0.0 {
                    return Err(Error::OutOfRange { what, range: "(0, inf]", value });
                }
            }
        }
        Ok(Self { kind, cone, ..self })
    }
}

/// Names a joint of a [`World`](crate::World), in the order the joints were added.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct JointHandle(pub(crate) u32);

impl JointHandle {
    /// The handle of the joint with this index (the `index`-th joint added to its world).
    pub fn from_index(index: usize) -> Self {
        Self(index as u32)
    }

    /// The joint's index in its world.
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// What a joint did in the last substep, world frame: the force it applied to body B at B's
/// anchor (a slider's motor and limits included), N, and the torque it applied to B besides
/// (its angular rows, a hinge's motor and limits, a ball joint's cone and twist limits), N m. Body A received their opposites (the
/// force at A's anchor, or for a slider or a point on a plane at the point of A under B's
/// anchor). A joint's accumulated impulses over the substep, divided by the substep, which a
/// joint that breaks ([`JointBreaking`]) compares with its loads.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(deny_unknown_fields))]
pub struct JointReaction {
    /// Force on B at its anchor, N.
    pub force: Vec3,
    /// Torque on B besides the force's, N m.
    pub torque: Vec3,
    /// Whether the joint has broken ([`JointBreaking`]); a broken joint's force and torque are
    /// zero.
    pub broken: bool,
}

/// The reactions of `joints` (as packed, by color) in the order they were added (`order[k]` is
/// the world's index of packed joint `k`), from their impulses over a substep `h` and the bodies'
/// orientations now. Shared by both solvers, which keep the same joint records.
pub(crate) fn reactions(
    joints: &[crate::layout::GpuJoint],
    order: &[u32],
    bodies: &[crate::layout::GpuBody],
    h: f32,
) -> Vec<JointReaction> {
    let mut out = vec![JointReaction::default(); joints.len()];
    for (j, &index) in joints.iter().zip(order) {
        let (qa, qb) = (bodies[j.body_a as usize].orientation, bodies[j.body_b as usize].orientation);
        let (linear, angular) = reaction_impulses(j, qa, qb);
        let broken = j.flags & crate::layout::JOINT_BROKEN != 0;
        out[index as usize] = JointReaction { force: linear / h, torque: angular / h, broken };
    }
    out
}

/// A joint's impulses on B over its last substep, linear (a slider's motor and limits
/// included) and angular (a hinge's, and a ball joint's cone and twist limits), with A's and B's orientations
/// `qa` and `qb` now. The twin of
/// `reaction_impulses` in shaders/joints.wgsl, which breaks joints by it as the CPU does.
pub(crate) fn reaction_impulses(j: &crate::layout::GpuJoint, qa: glam::Quat, qb: glam::Quat) -> (Vec3, Vec3) {
    let (mut linear, mut angular) = (j.linear_impulse, j.angular_impulse);
    let axial = (j.motor_impulse + j.lower_impulse) - j.upper_impulse;
    if j.angular == crate::layout::JOINT_ANGULAR_HINGE {
        angular += crate::math::rotate(qa, j.local_axis_a) * axial;
    }
    if j.angular == crate::layout::JOINT_ANGULAR_FREE && j.flags & crate::layout::JOINT_LIMITED != 0 {
        // A ball joint's cone pushes B's axis back towards A's.
        angular -= cone_direction(j, qa, qb).0 * j.upper_impulse;
    }
    if j.angular == crate::layout::JOINT_ANGULAR_FREE && j.flags & crate::layout::JOINT_TWIST != 0 {
        // Its twist limits turn B about the twist's direction, the lower one up, the upper down.
        angular += twist_frame(j, qa, qb).0 * (j.lower_impulse - j.twist_upper_impulse);
    }
    if j.linear == crate::layout::JOINT_LINEAR_LINE {
        linear += crate::math::rotate(qa, j.local_linear_axis_a) * axial;
    }
    (linear, angular)
}

/// A universal joint's or a ball joint's cone's axes now, from A's and B's orientations `qa`
/// and `qb`: the unit direction across A's and B's axes, about which B's has turned away from
/// A's (zero where they are parallel), and the angle between them. The twin of `across_axes`
/// in shaders/joints.wgsl.
pub(crate) fn across_axes(j: &crate::layout::GpuJoint, qa: glam::Quat, qb: glam::Quat) -> (Vec3, f32) {
    let axis_a = crate::math::rotate(qa, j.local_axis_a);
    let axis_b = crate::math::rotate(qb, j.local_axis_b);
    let across = axis_a.cross(axis_b);
    let sin = across.length();
    let n = if sin > 1e-6 { across * (1.0 / sin) } else { Vec3::ZERO };
    (n, crate::math::angle_of(axis_a.dot(axis_b), sin))
}

/// A ball joint's cone now: the direction about which its limit pushes B's axis back towards
/// A's (the one across the two axes; where they point exactly opposite ways, past any cone,
/// one across A's axis), and the angle between the axes. The twin of `cone_direction` in
/// shaders/joints.wgsl.
pub(crate) fn cone_direction(j: &crate::layout::GpuJoint, qa: glam::Quat, qb: glam::Quat) -> (Vec3, f32) {
    let (n, angle) = across_axes(j, qa, qb);
    if n == Vec3::ZERO && angle > 1.0 {
        (crate::math::tangent_basis(crate::math::rotate(qa, j.local_axis_a)).0, angle)
    } else {
        (n, angle)
    }
}

/// A ball joint's twist now, from A's and B's orientations `qa` and `qb`: B's turn about the
/// cone's axis relative to A, measured between A's reference direction across A's axis and
/// B's carried back by the shortest rotation that brings B's axis onto A's, and the direction
/// `d` whose product with B's angular velocity relative to A's is the twist's rate,
/// `(a + b) / (1 + a·b)` for the axes `a` and `b`. Where the axes point (nearly) opposite ways
/// the twist is not defined, and both are zero. The twin of `twist_frame` in
/// shaders/joints.wgsl.
pub(crate) fn twist_frame(j: &crate::layout::GpuJoint, qa: glam::Quat, qb: glam::Quat) -> (Vec3, f32) {
    let axis_a = crate::math::rotate(qa, j.local_axis_a);
    let axis_b = crate::math::rotate(qb, j.local_axis_b);
    let ref_a = crate::math::rotate(qa, j.local_ref_a);
    let ref_b = crate::math::rotate(qb, j.local_ref_b);
    let cos = axis_a.dot(axis_b);
    let s = 1.0 + cos;
    if s < TWIST_MIN_ONE_PLUS_COS {
        return (Vec3::ZERO, 0.0);
    }
    // Rodrigues' rotation of B's reference about b × a by the axes' angle.
    let k = axis_b.cross(axis_a);
    let swung = (ref_b * cos + k.cross(ref_b)) + k * (k.dot(ref_b) / s);
    let angle = crate::math::angle_of(ref_a.dot(swung), axis_a.dot(ref_a.cross(swung)));
    ((axis_a + axis_b) * (1.0 / s), angle)
}

/// Below this `1 + cos` of the angle between a ball joint's axes (about 177.4°) its twist is
/// not measured and its twist limits do not act: the twist is undefined where the axes point
/// opposite ways, and its rate's direction grows as `1 / (1 + cos)` towards there.
pub(crate) const TWIST_MIN_ONE_PLUS_COS: f32 = 1e-3;

#[cfg(test)]
mod tests {
    use glam::{Quat, Vec3};

    use super::twist_frame;
    use crate::layout::GpuJoint;

    /// A joint whose axis is z and reference x in both bodies' frames, as one between bodies
    /// added unturned.
    fn joint() -> GpuJoint {
        GpuJoint {
            local_axis_a: Vec3::Z,
            local_axis_b: Vec3::Z,
            local_ref_a: Vec3::X,
            local_ref_b: Vec3::X,
            ..GpuJoint::default()
        }
    }

    #[test]
    fn twist_is_the_turn_left_after_the_swing() {
        let j = joint();
        for &frame in &[Quat::IDENTITY, Quat::from_euler(glam::EulerRot::XYZ, 0.7, -1.9, 2.4)] {
            for &twist in &[-3.0_f32, -1.2, -0.3, 0.0, 0.4, 2.0, 3.1] {
                for &(swing_axis, swing) in &[(Vec3::X, 0.0_f32), (Vec3::X, 0.8), (Vec3::new(1.0, -2.0, 0.0), 2.5)] {
                    // B swung about a direction across the axis after its twist about it.
                    let s = Quat::from_axis_angle(swing_axis.normalize(), swing);
                    let qb = frame * s * Quat::from_axis_angle(Vec3::Z, twist);
                    let (_, angle) = twist_frame(&j, frame, qb);
                    assert!((angle - twist).abs() < 2e-4, "twist {twist}, swing {swing}: measured {angle}");
                }
            }
        }
    }

    #[test]
    fn opposite_axes_have_a_cone_direction_and_no_twist() {
        // B turned half a turn about y: its axis (z) points opposite A's.
        let j = joint();
        let qb = Quat::from_rotation_y(std::f32::consts::PI);
        let (n, angle) = super::cone_direction(&j, Quat::IDENTITY, qb);
        assert!((n.length() - 1.0).abs() < 1e-6 && n.dot(Vec3::Z).abs() < 1e-6, "direction {n}");
        assert!((angle - std::f32::consts::PI).abs() < 1e-3, "angle {angle}");
        assert_eq!(twist_frame(&j, Quat::IDENTITY, qb), (Vec3::ZERO, 0.0));
        // Just short of opposite (177°), the twist is still measured.
        let qb = Quat::from_rotation_y(177.0_f32.to_radians());
        let (d, _) = twist_frame(&j, Quat::IDENTITY, qb);
        assert!(d.length() > 1.0, "direction {d}");
    }

    #[test]
    fn twist_rate_is_its_direction_dot_the_relative_spin() {
        // Central differences of the measured twist along random spins, against d · (ω_b - ω_a).
        let j = joint();
        let mut seed = 7_u32;
        let mut next = || {
            seed = seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            (seed >> 8) as f32 / (1u32 << 24) as f32 * 2.0 - 1.0
        };
        let mut worst = 0.0_f32;
        for _ in 0..500 {
            let mut vec = || Vec3::new(next(), next(), next());
            let (qa, qb) = (Quat::from_scaled_axis(vec() * 2.0), Quat::from_scaled_axis(vec() * 2.0));
            let (wa, wb) = (vec(), vec());
            let (d, angle) = twist_frame(&j, qa, qb);
            let (a, b) = (qa * Vec3::Z, qb * Vec3::Z);
            if 1.0 + a.dot(b) < 0.3 || angle.abs() > 3.0 {
                continue; // near the antipode, or the twist wrapping within the difference
            }
            let h = 1e-3;
            let turned = |sign: f32| {
                let qa = Quat::from_scaled_axis(wa * (sign * h)) * qa;
                let qb = Quat::from_scaled_axis(wb * (sign * h)) * qb;
                twist_frame(&j, qa, qb).1
            };
            let rate = (turned(1.0) - turned(-1.0)) / (2.0 * h);
            let expected = d.dot(wb - wa);
            worst = worst.max((rate - expected).abs() / (1.0 + expected.abs()));
        }
        assert!(worst < 2e-3, "twist rate off by {worst} relative");
    }
}
