//! Joints of one color, several at once, one in each lane: the warm start and the sweeps of
//! `cpu::joints` for the kinds of [`Kind`] (a point held, with no angular part, a cone, a cone
//! and twist limits, a hinge or a slider with or without a motor and limits, a universal joint,
//! a weld or a point on a plane), with the same arithmetic in the same order, so the same bits
//! as one joint at a time (tested there).
//!
//! The joints of one color share no dynamic body, so the lanes are independent. Each call takes
//! `L::N` joints of one kind and their two bodies' copies (`pairs`, A then B), reads the solver
//! bodies by the joints' indices and writes the copies' velocities and the joints' impulses;
//! the caller stores the copies of dynamic bodies back.

use glam::Vec4;

use super::{Lanes, M3, Q4, Simd, V3, quat_mul, tangent_basis_lanes};
use crate::joint::TWIST_MIN_ONE_PLUS_COS;
use crate::layout::{
    GpuBody, GpuJoint, GpuSolverBody, JOINT_ANGULAR_FREE, JOINT_ANGULAR_HINGE, JOINT_ANGULAR_LOCKED,
    JOINT_ANGULAR_TWO_AXES, JOINT_LIMITED, JOINT_LINEAR_LINE, JOINT_LINEAR_PLANE, JOINT_LINEAR_POINT, JOINT_MOTOR,
    JOINT_TWIST, StepParams,
};

/// The joints the lanes take, unbroken: those whose anchors are held together
/// (`JOINT_LINEAR_POINT`), sliders (B's anchor on a line through A's, B's orientation held)
/// and points on planes without a cone; of them hinges and sliders may have motors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(in crate::cpu) enum Kind {
    /// A ball joint: no angular part.
    Ball,
    /// A ball joint with a cone.
    Cone,
    /// A ball joint with a cone and twist limits.
    ConeTwist,
    /// A hinge without limits.
    Hinge,
    /// A hinge with limits.
    LimitedHinge,
    /// A weld: the point and B's orientation relative to A's held.
    Weld,
    /// A hinge with a motor.
    MotorHinge,
    /// A hinge with a motor and limits.
    MotorLimitedHinge,
    /// A slider without a motor or limits.
    Slider,
    /// A slider with limits.
    LimitedSlider,
    /// A slider with a motor.
    MotorSlider,
    /// A slider with a motor and limits.
    MotorLimitedSlider,
    /// A universal joint: the point, and the angle between an axis of each body held.
    Universal,
    /// A point on a plane: B's anchor on a plane turning with A, B free to turn.
    PointOnPlane,
}

impl Kind {
    /// The kind of `j`, or `None` for one the lanes do not take (other angular or linear
    /// parts, a broken joint).
    pub(in crate::cpu) fn of(j: &GpuJoint) -> Option<Self> {
        if j.linear == JOINT_LINEAR_LINE && j.angular == JOINT_ANGULAR_LOCKED {
            return match j.flags {
                0 => Some(Self::Slider),
                JOINT_LIMITED => Some(Self::LimitedSlider),
                JOINT_MOTOR => Some(Self::MotorSlider),
                f if f == JOINT_MOTOR | JOINT_LIMITED => Some(Self::MotorLimitedSlider),
                _ => None,
            };
        }
        if j.linear == JOINT_LINEAR_PLANE && j.angular == JOINT_ANGULAR_FREE && j.flags == 0 {
            return Some(Self::PointOnPlane);
        }
        if j.linear != JOINT_LINEAR_POINT {
            return None;
        }
        match (j.angular, j.flags) {
            (JOINT_ANGULAR_FREE, 0) => Some(Self::Ball),
            (JOINT_ANGULAR_FREE, JOINT_LIMITED) => Some(Self::Cone),
            (JOINT_ANGULAR_FREE, f) if f == JOINT_LIMITED | JOINT_TWIST => Some(Self::ConeTwist),
            (JOINT_ANGULAR_HINGE, 0) => Some(Self::Hinge),
            (JOINT_ANGULAR_HINGE, JOINT_LIMITED) => Some(Self::LimitedHinge),
            (JOINT_ANGULAR_LOCKED, 0) => Some(Self::Weld),
            (JOINT_ANGULAR_HINGE, JOINT_MOTOR) => Some(Self::MotorHinge),
            (JOINT_ANGULAR_HINGE, f) if f == JOINT_MOTOR | JOINT_LIMITED => Some(Self::MotorLimitedHinge),
            (JOINT_ANGULAR_TWO_AXES, 0) => Some(Self::Universal),
            _ => None,
        }
    }
}

// The kinds as the constant parameter of the generic code.
const BALL: u8 = 0;
const CONE: u8 = 1;
const CONE_TWIST: u8 = 2;
const HINGE: u8 = 3;
const LIMITED_HINGE: u8 = 4;
const WELD: u8 = 5;
const MOTOR_HINGE: u8 = 6;
const MOTOR_LIMITED_HINGE: u8 = 7;
const SLIDER: u8 = 8;
const LIMITED_SLIDER: u8 = 9;
const MOTOR_SLIDER: u8 = 10;
const MOTOR_LIMITED_SLIDER: u8 = 11;
const UNIVERSAL: u8 = 12;
const POINT_ON_PLANE: u8 = 13;

/// Whether kind `K` has a cone; twist limits; a hinge's angular rows; a hinge's limits; a
/// hinge's motor.
const fn cone(k: u8) -> bool {
    k == CONE || k == CONE_TWIST
}
const fn twist(k: u8) -> bool {
    k == CONE_TWIST
}
const fn hinge(k: u8) -> bool {
    k == HINGE || k == LIMITED_HINGE || motor(k)
}
const fn limited_hinge(k: u8) -> bool {
    k == LIMITED_HINGE || k == MOTOR_LIMITED_HINGE
}
const fn motor(k: u8) -> bool {
    k == MOTOR_HINGE || k == MOTOR_LIMITED_HINGE
}
/// Whether kind `K` is a slider; has a slider's motor; a slider's limits.
const fn slider(k: u8) -> bool {
    k >= SLIDER && k <= MOTOR_LIMITED_SLIDER
}
const fn slider_motor(k: u8) -> bool {
    k == MOTOR_SLIDER || k == MOTOR_LIMITED_SLIDER
}
const fn slider_limits(k: u8) -> bool {
    k == LIMITED_SLIDER || k == MOTOR_LIMITED_SLIDER
}
/// Whether kind `K` holds B's anchor on a plane (a point on a plane's row).
const fn plane(k: u8) -> bool {
    k == POINT_ON_PLANE
}
/// Whether kind `K`'s linear part is a line or a plane, turning with A (A's lever arm reaching
/// B's anchor), rather than a point.
const fn line_or_plane(k: u8) -> bool {
    slider(k) || plane(k)
}
/// Whether kind `K` holds the angle between an axis of each body (a universal joint's row).
const fn universal(k: u8) -> bool {
    k == UNIVERSAL
}
/// Whether kind `K` holds B's orientation relative to A's (a weld's angular rows, which a
/// slider has too).
const fn weld(k: u8) -> bool {
    k == WELD || slider(k)
}
/// Whether kind `K` reads the joint's axes (and with them a motor's speed and effort).
const fn axes(k: u8) -> bool {
    cone(k) || hinge(k) || slider_motor(k) || universal(k)
}
/// Whether kind `K` reads the second half of the angular impulse's row: A's reference
/// direction, or a universal joint's angle.
const fn angular_row(k: u8) -> bool {
    turn_limits(k) || universal(k)
}
/// Whether kind `K` writes the lower limit's impulse.
const fn lower_limit(k: u8) -> bool {
    turn_limits(k) || slider_limits(k)
}
/// Whether kind `K` holds a turn about an axis within limits (a twist, a hinge's angle): it
/// reads the reference directions and writes the lower limit's impulse.
const fn turn_limits(k: u8) -> bool {
    twist(k) || limited_hinge(k)
}

/// A joint's words (the layout of `GpuJoint`).
fn joint_words(j: &GpuJoint) -> &[f32; 48] {
    bytemuck::cast_ref(j)
}

fn joint_words_mut(j: &mut GpuJoint) -> &mut [f32; 48] {
    bytemuck::cast_mut(j)
}

/// Eight words of `words` from `start`.
#[inline(always)]
fn eight(words: &[f32], start: usize) -> &[f32; 8] {
    words[start..start + 8].try_into().unwrap()
}

/// Four words of `words` from `start`.
#[inline(always)]
fn four(words: &[f32], start: usize) -> &[f32; 4] {
    words[start..start + 4].try_into().unwrap()
}

/// One side of `L::N` joints: `cpu::joints::Side` in each lane, with the body's velocity row
/// (`v`, a pad, `ω`, a pad) as it was read, to write back with the pads unchanged.
struct Sides<L> {
    v: V3<L>,
    w: V3<L>,
    pads: [L; 2],
    inv_mass: L,
    inv_inertia: M3<L>,
    q: Q4<L>,
    dp: V3<L>,
}

impl<L: Lanes> Sides<L> {
    /// Side `s` (0 for A, 1 for B) of the joints whose bodies' copies are `pairs`.
    #[inline(always)]
    fn load(pairs: &[[GpuBody; 2]], joints: &[GpuJoint], solver_bodies: &[GpuSolverBody], s: usize) -> Self {
        let body = |l: usize| bytemuck::cast_ref::<GpuBody, [[f32; 8]; 2]>(&pairs[l][s]);
        let index = |l: usize| if s == 0 { joints[l].body_a as usize } else { joints[l].body_b as usize };
        let solver = |l: usize| bytemuck::cast_ref::<GpuSolverBody, [f32; 20]>(&solver_bodies[index(l)]);
        // Position, inverse mass, orientation; velocity and angular velocity.
        let pose = L::transpose8(|l| &body(l)[0]);
        let motion = L::transpose8(|l| &body(l)[1]);
        // The world inverse inertia's three columns (each padded to four words), then the
        // displacement since the step began.
        let i01 = L::transpose8(|l| eight(solver(l), 0));
        let i2 = L::transpose4(|l| four(solver(l), 8));
        let dp = L::transpose4(|l| four(solver(l), 12));
        Self {
            v: V3 { x: motion[0], y: motion[1], z: motion[2] },
            w: V3 { x: motion[4], y: motion[5], z: motion[6] },
            pads: [motion[3], motion[7]],
            inv_mass: pose[3],
            inv_inertia: M3 {
                x_axis: V3 { x: i01[0], y: i01[1], z: i01[2] },
                y_axis: V3 { x: i01[4], y: i01[5], z: i01[6] },
                z_axis: V3 { x: i2[0], y: i2[1], z: i2[2] },
            },
            q: Q4 { u: V3 { x: pose[4], y: pose[5], z: pose[6] }, w: pose[7] },
            dp: V3 { x: dp[0], y: dp[1], z: dp[2] },
        }
    }

    /// Writes the velocities to side `s` of the copies.
    #[inline(always)]
    fn store(&self, pairs: &mut [[GpuBody; 2]], s: usize) {
        let row = [self.v.x, self.v.y, self.v.z, self.pads[0], self.w.x, self.w.y, self.w.z, self.pads[1]];
        L::untranspose8(row, |l, r| bytemuck::cast_mut::<GpuBody, [[f32; 8]; 2]>(&mut pairs[l][s])[1] = r);
    }
}

/// The words of `L::N` joints that kind `K` reads, by rows of `GpuJoint`: the anchors with the
/// limits (words 4..12), the axes (12..20), a slider's line or a plane's normal (20..24), a
/// weld's or a slider's
/// reference orientation (24..28), the
/// centres' offset with the lower, linear and upper impulses (28..36), the angular and motor
/// impulses with A's reference direction (36..44), B's reference direction with the upper
/// twist impulse (44..48). Rows a kind does not read are zeros; the rows written back hold the
/// impulses, with the other words of those rows as they were read.
struct Words<L> {
    anchors: [L; 8],
    axes: [L; 8],
    line: [L; 4],
    reference: [L; 4],
    impulses: [L; 8],
    angular: [L; 8],
    references: [L; 4],
}

impl<L: Lanes> Words<L> {
    #[inline(always)]
    fn load<const K: u8>(joints: &[GpuJoint]) -> Self {
        let zeros = [L::splat(0.0); 8];
        Self {
            anchors: L::transpose8(|l| eight(joint_words(&joints[l]), 4)),
            axes: if axes(K) { L::transpose8(|l| eight(joint_words(&joints[l]), 12)) } else { zeros },
            line: if line_or_plane(K) { L::transpose4(|l| four(joint_words(&joints[l]), 20)) } else { [zeros[0]; 4] },
            reference: if weld(K) { L::transpose4(|l| four(joint_words(&joints[l]), 24)) } else { [zeros[0]; 4] },
            impulses: L::transpose8(|l| eight(joint_words(&joints[l]), 28)),
            angular: if angular_row(K) {
                L::transpose8(|l| eight(joint_words(&joints[l]), 36))
            } else {
                let [x, y, z, motor] = L::transpose4(|l| four(joint_words(&joints[l]), 36));
                [x, y, z, motor, zeros[0], zeros[0], zeros[0], zeros[0]]
            },
            references: if turn_limits(K) {
                L::transpose4(|l| four(joint_words(&joints[l]), 44))
            } else {
                [L::splat(0.0); 4]
            },
        }
    }

    #[inline(always)]
    fn v3(row: &[L], at: usize) -> V3<L> {
        V3 { x: row[at], y: row[at + 1], z: row[at + 2] }
    }
    #[inline(always)]
    fn set(row: &mut [L], at: usize, v: V3<L>) {
        (row[at], row[at + 1], row[at + 2]) = (v.x, v.y, v.z);
    }

    #[inline(always)]
    fn anchor_a(&self) -> V3<L> {
        Self::v3(&self.anchors, 0)
    }
    #[inline(always)]
    fn lower(&self) -> L {
        self.anchors[3]
    }
    #[inline(always)]
    fn anchor_b(&self) -> V3<L> {
        Self::v3(&self.anchors, 4)
    }
    #[inline(always)]
    fn upper(&self) -> L {
        self.anchors[7]
    }
    #[inline(always)]
    fn axis_a(&self) -> V3<L> {
        Self::v3(&self.axes, 0)
    }
    #[inline(always)]
    fn axis_b(&self) -> V3<L> {
        Self::v3(&self.axes, 4)
    }
    #[inline(always)]
    fn line_axis(&self) -> V3<L> {
        Self::v3(&self.line, 0)
    }
    #[inline(always)]
    fn motor_speed(&self) -> L {
        self.axes[3]
    }
    #[inline(always)]
    fn max_motor_effort(&self) -> L {
        self.axes[7]
    }
    #[inline(always)]
    fn reference(&self) -> Q4<L> {
        let [x, y, z, w] = self.reference;
        Q4 { u: V3 { x, y, z }, w }
    }
    #[inline(always)]
    fn delta_center(&self) -> V3<L> {
        Self::v3(&self.impulses, 0)
    }
    #[inline(always)]
    fn linear_impulse(&self) -> V3<L> {
        Self::v3(&self.impulses, 4)
    }
    #[inline(always)]
    fn angular_impulse(&self) -> V3<L> {
        Self::v3(&self.angular, 0)
    }
    #[inline(always)]
    fn ref_a(&self) -> V3<L> {
        Self::v3(&self.angular, 4)
    }
    #[inline(always)]
    fn rest_angle(&self) -> L {
        self.angular[7]
    }
    #[inline(always)]
    fn ref_b(&self) -> V3<L> {
        Self::v3(&self.references, 0)
    }

    /// Writes the impulses back (with the unchanged words of their rows).
    #[inline(always)]
    fn store<const K: u8>(&self, joints: &mut [GpuJoint]) {
        if lower_limit(K) {
            L::untranspose8(self.impulses, |l, r| joint_words_mut(&mut joints[l])[28..36].copy_from_slice(&r));
        } else {
            let [.., x, y, z, upper] = self.impulses;
            L::untranspose4([x, y, z, upper], |l, r| joint_words_mut(&mut joints[l])[32..36].copy_from_slice(&r));
        }
        let angular = [self.angular[0], self.angular[1], self.angular[2], self.angular[3]];
        L::untranspose4(angular, |l, r| joint_words_mut(&mut joints[l])[36..40].copy_from_slice(&r));
        if twist(K) {
            L::untranspose4(self.references, |l, r| joint_words_mut(&mut joints[l])[44..48].copy_from_slice(&r));
        }
    }
}

/// The impulses' words: `impulses[3]` the lower (or lower twist) limit's, `impulses[7]` the
/// upper limit's or the cone's, `angular[3]` the motor's, `references[3]` the upper twist's.
const LOWER: usize = 3;
const UPPER: usize = 7;
const MOTOR: usize = 3;
const TWIST_UPPER: usize = 3;

/// [`crate::math::angle_of`] in each lane.
#[inline(always)]
fn angle_of<L: Lanes>(x: L, y: L) -> L {
    let zero = L::splat(0.0);
    let (ax, ay) = (x.abs(), y.abs());
    // `f32::max` and `f32::min` give the other operand where one is NaN; the lanes' give the
    // second.
    let ay_nan = ay.ne(ay);
    let (big, small) = (L::select(ay_nan, ax, ax.max(ay)), L::select(ay_nan, ax, ax.min(ay)));
    let a = L::select(big.gt(zero), small / big, zero);
    let s = a * a;
    let c = L::splat;
    let r = (((((c(-0.011_721_2) * s + c(0.052_653_32)) * s - c(0.116_432_87)) * s + c(0.193_543_46)) * s
        - c(0.332_623_47))
        * s
        + c(0.999_977_26))
        * a;
    let r = L::select(ay.gt(ax), c(std::f32::consts::FRAC_PI_2) - r, r);
    let r = L::select(x.lt(zero), c(std::f32::consts::PI) - r, r);
    L::select(y.lt(zero), -r, r)
}

/// [`crate::joint::across_axes`] in each lane, from the axes now.
#[inline(always)]
fn across_axes<L: Lanes>(axis_a: V3<L>, axis_b: V3<L>) -> (V3<L>, L) {
    let across = axis_a.cross(axis_b);
    let sin = across.dot(across).sqrt();
    let n = V3::select(sin.gt(L::splat(1e-6)), across.scale(L::splat(1.0) / sin), V3::zero());
    (n, angle_of(axis_a.dot(axis_b), sin))
}

/// [`crate::joint::cone_direction`] in each lane, from the axes now.
#[inline(always)]
fn cone_direction<L: Lanes>(axis_a: V3<L>, axis_b: V3<L>) -> (V3<L>, L) {
    let zero = L::splat(0.0);
    let (n, angle) = across_axes(axis_a, axis_b);
    let opposite = n.x.eq(zero) & n.y.eq(zero) & n.z.eq(zero) & angle.gt(L::splat(1.0));
    (V3::select(opposite, tangent_basis_lanes(axis_a).0, n), angle)
}

/// [`crate::joint::twist_frame`] in each lane, from the axes and reference directions now.
#[inline(always)]
fn twist_frame<L: Lanes>(axis_a: V3<L>, axis_b: V3<L>, ref_a: V3<L>, ref_b: V3<L>) -> (V3<L>, L) {
    let cos = axis_a.dot(axis_b);
    let s = L::splat(1.0) + cos;
    let k = axis_b.cross(axis_a);
    let swung = ref_b.scale(cos).add(k.cross(ref_b)).add(k.scale(k.dot(ref_b) / s));
    let angle = angle_of(ref_a.dot(swung), axis_a.dot(ref_a.cross(swung)));
    let d = axis_a.add(axis_b).scale(L::splat(1.0) / s);
    let undefined = s.lt(L::splat(TWIST_MIN_ONE_PLUS_COS));
    (V3::select(undefined, V3::zero(), d), L::select(undefined, L::splat(0.0), angle))
}

/// `cpu::joints::limit_bias` in each lane.
#[inline(always)]
fn limit_bias<L: Lanes>(p: &StepParams, c: L, use_bias: bool) -> (L, L, L) {
    let (zero, one) = (L::splat(0.0), L::splat(1.0));
    let open = c.gt(zero);
    let reached = c * L::splat(p.inv_h);
    if use_bias {
        (
            L::select(open, reached, L::splat(p.joint_bias_rate) * c),
            L::select(open, one, L::splat(p.joint_mass_scale)),
            L::select(open, zero, L::splat(p.joint_impulse_scale)),
        )
    } else {
        (L::select(open, reached, zero), one, zero)
    }
}

/// `cpu::joints::limit_row` in each lane: returns the new accumulated impulse.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn limit_row<L: Lanes>(
    p: &StepParams,
    c: L,
    direction: V3<L>,
    accumulated: L,
    mass: L,
    a: &mut Sides<L>,
    b: &mut Sides<L>,
    use_bias: bool,
) -> L {
    let (bias, mass_scale, impulse_scale) = limit_bias(p, c, use_bias);
    let cdot = direction.dot(b.w.sub(a.w));
    let impulse = -mass * mass_scale * (cdot + bias) - impulse_scale * accumulated;
    let updated = (accumulated + impulse).max(L::splat(0.0));
    let applied = direction.scale(updated - accumulated);
    a.w = a.w.sub(a.inv_inertia.mul(applied));
    b.w = b.w.add(b.inv_inertia.mul(applied));
    updated
}

/// The angular block of a joint's rows: its two bodies' world inverse inertias summed.
#[inline(always)]
fn summed<L: Lanes>(a: &M3<L>, b: &M3<L>) -> M3<L> {
    M3 { x_axis: a.x_axis.add(b.x_axis), y_axis: a.y_axis.add(b.y_axis), z_axis: a.z_axis.add(b.z_axis) }
}

/// `1 / (d · K d)`, or zero where that is not positive.
#[inline(always)]
fn row_mass<L: Lanes>(k: &M3<L>, d: V3<L>) -> L {
    let kd = d.dot(k.mul(d));
    let zero = L::splat(0.0);
    L::select(kd.gt(zero), L::splat(1.0) / kd, zero)
}

/// Column `e` of a point's effective mass matrix, the anchors' relative velocity from a unit
/// impulse along `e`: `m e + (I_b (r_b x e)) x r_b + (I_a (r_a x e)) x r_a`. (A function, not
/// a closure: a closure would be compiled without the wider registers' features.)
#[inline(always)]
fn column<L: Lanes>(m: L, (ia, ra): (&M3<L>, V3<L>), (ib, rb): (&M3<L>, V3<L>), e: V3<L>) -> V3<L> {
    e.scale(m).add(ib.mul(rb.cross(e)).cross(rb)).add(ia.mul(ra.cross(e)).cross(ra))
}

/// A hinge's accumulated angular impulse that acts: less what lies along its axis.
#[inline(always)]
fn hinge_acting<L: Lanes>(impulse: V3<L>, axis: V3<L>) -> V3<L> {
    impulse.sub(axis.scale(axis.dot(impulse)))
}

/// `cpu::joints::warm_start_joint` for `L::N` joints of kind `K`.
#[inline(always)]
fn warm_start<const K: u8, L: Lanes>(
    joints: &mut [GpuJoint],
    pairs: &mut [[GpuBody; 2]],
    solver_bodies: &[GpuSolverBody],
) {
    let (joints, pairs) = (&mut joints[..L::N], &mut pairs[..L::N]);
    let mut words = Words::<L>::load::<K>(joints);
    let (mut a, mut b) =
        (Sides::<L>::load(pairs, joints, solver_bodies, 0), Sides::<L>::load(pairs, joints, solver_bodies, 1));
    let (ra, rb) = (a.q.rotate(words.anchor_a()), b.q.rotate(words.anchor_b()));
    let mut linear = words.linear_impulse();
    let mut lever_a = ra;
    if line_or_plane(K) {
        // What acts across the line (along the plane's normal), and the motor and limits along
        // the line; A's lever arm reaches B's anchor.
        let separation = b.dp.sub(a.dp).add(words.delta_center()).add(rb.sub(ra));
        lever_a = ra.add(separation);
        let u = a.q.rotate(words.line_axis());
        let acting = if plane(K) { u.scale(u.dot(linear)) } else { linear.sub(u.scale(u.dot(linear))) };
        Words::set(&mut words.impulses, 4, acting);
        linear = if slider_motor(K) || slider_limits(K) {
            let along = (words.angular[MOTOR] + words.impulses[LOWER]) - words.impulses[UPPER];
            acting.add(u.scale(along))
        } else {
            acting
        };
    }
    let mut angular = words.angular_impulse();
    if universal(K) {
        // What acts: the accumulated impulse's part across the two axes.
        let (n, _) = across_axes(a.q.rotate(words.axis_a()), b.q.rotate(words.axis_b()));
        angular = n.scale(n.dot(angular));
        Words::set(&mut words.angular, 0, angular);
    }
    if hinge(K) {
        let axis = a.q.rotate(words.axis_a());
        angular = hinge_acting(angular, axis);
        Words::set(&mut words.angular, 0, angular);
        let turn = (words.angular[MOTOR] + words.impulses[LOWER]) - words.impulses[UPPER];
        angular = angular.add(axis.scale(turn));
    }
    if cone(K) {
        let (axis_a, axis_b) = (a.q.rotate(words.axis_a()), b.q.rotate(words.axis_b()));
        angular = angular.sub(cone_direction(axis_a, axis_b).0.scale(words.impulses[UPPER]));
        if twist(K) {
            let (ref_a, ref_b) = (a.q.rotate(words.ref_a()), b.q.rotate(words.ref_b()));
            let d = twist_frame(axis_a, axis_b, ref_a, ref_b).0;
            angular = angular.add(d.scale(words.impulses[LOWER] - words.references[TWIST_UPPER]));
        }
    }
    a.v = a.v.sub(linear.scale(a.inv_mass));
    a.w = a.w.sub(a.inv_inertia.mul(lever_a.cross(linear).add(angular)));
    b.v = b.v.add(linear.scale(b.inv_mass));
    b.w = b.w.add(b.inv_inertia.mul(rb.cross(linear).add(angular)));
    if hinge(K) || line_or_plane(K) || universal(K) {
        words.store::<K>(joints);
    }
    a.store(pairs, 0);
    b.store(pairs, 1);
}

/// `cpu::joints::solve_joint` for `L::N` joints of kind `K`: with `use_bias` the soft
/// constraints of the biased solve, without it the rigid ones of the relax iterations.
#[inline(always)]
fn solve<const K: u8, L: Lanes>(
    p: &StepParams,
    joints: &mut [GpuJoint],
    pairs: &mut [[GpuBody; 2]],
    solver_bodies: &[GpuSolverBody],
    use_bias: bool,
) {
    let (joints, pairs) = (&mut joints[..L::N], &mut pairs[..L::N]);
    let (rate, mass_scale, impulse_scale) =
        if use_bias { (p.joint_bias_rate, p.joint_mass_scale, p.joint_impulse_scale) } else { (0.0, 1.0, 0.0) };
    let (rate, mass_scale, impulse_scale) = (L::splat(rate), L::splat(mass_scale), L::splat(impulse_scale));
    let (zero, one) = (L::splat(0.0), L::splat(1.0));
    let (mut a, mut b) =
        (Sides::<L>::load(pairs, joints, solver_bodies, 0), Sides::<L>::load(pairs, joints, solver_bodies, 1));
    if !hinge(K) && !weld(K) && !universal(K) {
        // No angular block: the one-joint code applies a zero angular impulse, `I 0`, which is
        // +0 in every component (a diagonal entry is positive, or all are zero): it turns a
        // -0.0 of B's angular velocity into +0.0, and leaves A's `ω - (+0)` as it is.
        b.w = b.w.add(V3::zero());
    }
    let mut words = Words::<L>::load::<K>(joints);
    if hinge(K) {
        let k = summed(&a.inv_inertia, &b.inv_inertia);
        // The two directions across A's axis: the axes' misalignment and relative spin there.
        let axis_a = a.q.rotate(words.axis_a());
        let axis_b = b.q.rotate(words.axis_b());
        let (t1, t2) = tangent_basis_lanes(axis_a);
        let error = axis_a.cross(axis_b);
        let dw = b.w.sub(a.w);
        let (kt1, kt2) = (k.mul(t1), k.mul(t2));
        let (k11, k12, k22) = (t1.dot(kt1), t1.dot(kt2), t2.dot(kt2));
        let c1 = t1.dot(dw) + rate * t1.dot(error);
        let c2 = t2.dot(dw) + rate * t2.dot(error);
        let det = k11 * k22 - k12 * k12;
        let inv_det = L::select(det.gt(zero), one / det, zero);
        let x1 = (k22 * c1 - k12 * c2) * inv_det;
        let x2 = (k11 * c2 - k12 * c1) * inv_det;
        let acting = hinge_acting(words.angular_impulse(), axis_a);
        let l1 = -mass_scale * x1 - impulse_scale * t1.dot(acting);
        let l2 = -mass_scale * x2 - impulse_scale * t2.dot(acting);
        let angular = t1.scale(l1).add(t2.scale(l2));
        Words::set(&mut words.angular, 0, acting.add(angular));
        a.w = a.w.sub(a.inv_inertia.mul(angular));
        b.w = b.w.add(b.inv_inertia.mul(angular));
        let axial_mass = if motor(K) || limited_hinge(K) { row_mass(&k, axis_a) } else { zero };
        if motor(K) {
            // Rigid, its accumulated impulse within the torque it may apply over the substep.
            let cdot = axis_a.dot(b.w.sub(a.w)) - words.motor_speed();
            let impulse = -axial_mass * cdot;
            let old = words.angular[MOTOR];
            let most = words.max_motor_effort() * L::splat(p.h);
            // `f32::clamp` to [-most, most].
            let updated = old + impulse;
            let updated = L::select(updated.lt(-most), -most, updated);
            let updated = L::select(updated.gt(most), most, updated);
            words.angular[MOTOR] = updated;
            let applied = axis_a.scale(updated - old);
            a.w = a.w.sub(a.inv_inertia.mul(applied));
            b.w = b.w.add(b.inv_inertia.mul(applied));
        }
        if limited_hinge(K) {
            // B's turn about the axis relative to A, from the directions across it; the lower
            // limit pushes it up the axis, the upper down it.
            let (ref_a, ref_b) = (a.q.rotate(words.ref_a()), b.q.rotate(words.ref_b()));
            let angle = angle_of(ref_a.dot(ref_b), axis_a.dot(ref_a.cross(ref_b)));
            let (lower, upper) = (words.lower(), words.upper());
            let accumulated = words.impulses[LOWER];
            words.impulses[LOWER] =
                limit_row(p, angle - lower, axis_a, accumulated, axial_mass, &mut a, &mut b, use_bias);
            let accumulated = words.impulses[UPPER];
            let upper_row =
                limit_row(p, upper - angle, axis_a.neg(), accumulated, axial_mass, &mut a, &mut b, use_bias);
            words.impulses[UPPER] = upper_row;
        }
    }
    if universal(K) {
        // One row across the two axes: their angle's rate is the relative spin along it.
        let k = summed(&a.inv_inertia, &b.inv_inertia);
        let (n, angle) = across_axes(a.q.rotate(words.axis_a()), b.q.rotate(words.axis_b()));
        let mass = row_mass(&k, n);
        let accumulated = words.angular_impulse();
        let acting = n.scale(n.dot(accumulated));
        let c = n.dot(b.w.sub(a.w)) + rate * (angle - words.rest_angle());
        let angular = n.scale(-mass_scale * mass * c - impulse_scale * n.dot(acting));
        Words::set(&mut words.angular, 0, acting.add(angular));
        a.w = a.w.sub(a.inv_inertia.mul(angular));
        b.w = b.w.add(b.inv_inertia.mul(angular));
    }
    if weld(K) {
        // B's orientation against the one the weld holds it at, as a rotation vector.
        let k = summed(&a.inv_inertia, &b.inv_inertia);
        let held = quat_mul(&a.q, &words.reference());
        let e = quat_mul(&b.q, &Q4 { u: held.u.neg(), w: held.w });
        let sign = L::select(e.w.ge(zero), L::splat(2.0), L::splat(-2.0));
        let error = e.u.scale(sign);
        let c = b.w.sub(a.w).add(error.scale(rate));
        // `math::mat3_inverse(k) * c`, as for the point below.
        let (r0, r1, r2) = (k.y_axis.cross(k.z_axis), k.z_axis.cross(k.x_axis), k.x_axis.cross(k.y_axis));
        let inv_det = one / k.x_axis.dot(r0);
        let x = V3 { x: r0.scale(inv_det).dot(c), y: r1.scale(inv_det).dot(c), z: r2.scale(inv_det).dot(c) };
        let accumulated = words.angular_impulse();
        let angular = x.scale(-mass_scale).sub(accumulated.scale(impulse_scale));
        Words::set(&mut words.angular, 0, accumulated.add(angular));
        a.w = a.w.sub(a.inv_inertia.mul(angular));
        b.w = b.w.add(b.inv_inertia.mul(angular));
    }
    if slider_motor(K) || slider_limits(K) {
        slider_motor_and_limits::<K, L>(p, &mut words, &mut a, &mut b, use_bias);
    }
    if cone(K) {
        // The cone pushes B's axis back towards A's, along minus the direction across them.
        let (axis_a, axis_b) = (a.q.rotate(words.axis_a()), b.q.rotate(words.axis_b()));
        let (n, angle) = cone_direction(axis_a, axis_b);
        let k = summed(&a.inv_inertia, &b.inv_inertia);
        let mass = row_mass(&k, n);
        let accumulated = words.impulses[UPPER];
        words.impulses[UPPER] =
            limit_row(p, words.upper() - angle, n.neg(), accumulated, mass, &mut a, &mut b, use_bias);
        if twist(K) {
            let (ref_a, ref_b) = (a.q.rotate(words.ref_a()), b.q.rotate(words.ref_b()));
            let (d, angle) = twist_frame(axis_a, axis_b, ref_a, ref_b);
            let mass = row_mass(&k, d);
            let lower = words.lower();
            let accumulated = words.impulses[LOWER];
            words.impulses[LOWER] = limit_row(p, angle - lower, d, accumulated, mass, &mut a, &mut b, use_bias);
            let accumulated = words.references[TWIST_UPPER];
            let upper_row = limit_row(p, -lower - angle, d.neg(), accumulated, mass, &mut a, &mut b, use_bias);
            words.references[TWIST_UPPER] = upper_row;
        }
    }
    // The point: the anchors' relative velocity, and their separation for the bias.
    let (ra, rb) = (a.q.rotate(words.anchor_a()), b.q.rotate(words.anchor_b()));
    let separation = b.dp.sub(a.dp).add(words.delta_center()).add(rb.sub(ra));
    let m = a.inv_mass + b.inv_mass;
    if line_or_plane(K) {
        line_or_plane_rows::<K, L>(&mut words, &mut a, &mut b, (ra, rb, separation), (rate, mass_scale, impulse_scale));
        words.store::<K>(joints);
        a.store(pairs, 0);
        b.store(pairs, 1);
        return;
    }
    let cdot = b.v.add(b.w.cross(rb)).sub(a.v.add(a.w.cross(ra)));
    // The columns of K, with the unit axes' products computed as the one-joint code computes
    // them.
    let c0 = column(m, (&a.inv_inertia, ra), (&b.inv_inertia, rb), V3 { x: one, y: zero, z: zero });
    let c1 = column(m, (&a.inv_inertia, ra), (&b.inv_inertia, rb), V3 { x: zero, y: one, z: zero });
    let c2 = column(m, (&a.inv_inertia, ra), (&b.inv_inertia, rb), V3 { x: zero, y: zero, z: one });
    // `math::mat3_inverse(K) * rhs`: rows of the inverse are the columns' cross products over
    // the determinant.
    let (r0, r1, r2) = (c1.cross(c2), c2.cross(c0), c0.cross(c1));
    let inv_det = one / c0.dot(r0);
    let rhs = cdot.add(separation.scale(rate));
    let x = V3 { x: r0.scale(inv_det).dot(rhs), y: r1.scale(inv_det).dot(rhs), z: r2.scale(inv_det).dot(rhs) };
    let linear = x.scale(-mass_scale).sub(words.linear_impulse().scale(impulse_scale));
    let accumulated = words.linear_impulse().add(linear);
    Words::set(&mut words.impulses, 4, accumulated);
    a.v = a.v.sub(linear.scale(a.inv_mass));
    a.w = a.w.sub(a.inv_inertia.mul(ra.cross(linear)));
    b.v = b.v.add(linear.scale(b.inv_mass));
    b.w = b.w.add(b.inv_inertia.mul(rb.cross(linear)));
    words.store::<K>(joints);
    a.store(pairs, 0);
    b.store(pairs, 1);
}

/// `cpu::joints::slider_motor_and_limits` for `L::N` sliders of kind `K`: the motor, then the
/// lower and upper limits, each a row on B's anchor's velocity along the line relative to the
/// point of A under it.
#[inline(always)]
fn slider_motor_and_limits<const K: u8, L: Lanes>(
    p: &StepParams,
    words: &mut Words<L>,
    a: &mut Sides<L>,
    b: &mut Sides<L>,
    use_bias: bool,
) {
    let zero = L::splat(0.0);
    let (ra, rb) = (a.q.rotate(words.anchor_a()), b.q.rotate(words.anchor_b()));
    let separation = b.dp.sub(a.dp).add(words.delta_center()).add(rb.sub(ra));
    let lever_a = ra.add(separation);
    let u = a.q.rotate(words.line_axis());
    let (ja, jb) = (lever_a.cross(u), rb.cross(u));
    let k = ((a.inv_mass + b.inv_mass) + ja.dot(a.inv_inertia.mul(ja))) + jb.dot(b.inv_inertia.mul(jb));
    let axial_mass = L::select(k.gt(zero), L::splat(1.0) / k, zero);
    if slider_motor(K) {
        let cdot = slider_speed(u, ja, jb, a, b) - words.motor_speed();
        let impulse = -axial_mass * cdot;
        let old = words.angular[MOTOR];
        let most = words.max_motor_effort() * L::splat(p.h);
        // `f32::clamp` to [-most, most].
        let updated = old + impulse;
        let updated = L::select(updated.lt(-most), -most, updated);
        let updated = L::select(updated.gt(most), most, updated);
        words.angular[MOTOR] = updated;
        slider_push(u, ja, jb, updated - old, a, b);
    }
    if slider_limits(K) {
        let translation = u.dot(separation);
        // `sign` 1 pushes B up the line (the lower limit), -1 down it (the upper).
        let limits = [(translation - words.lower(), 1.0, LOWER), (words.upper() - translation, -1.0, UPPER)];
        for (c, sign, word) in limits {
            let (bias, mass_scale, impulse_scale) = limit_bias(p, c, use_bias);
            let sign = L::splat(sign);
            let cdot = sign * slider_speed(u, ja, jb, a, b);
            let accumulated = words.impulses[word];
            let impulse = -axial_mass * mass_scale * (cdot + bias) - impulse_scale * accumulated;
            let updated = (accumulated + impulse).max(zero);
            words.impulses[word] = updated;
            slider_push(u, ja, jb, sign * (updated - accumulated), a, b);
        }
    }
}

/// B's anchor's speed along a slider's line `u` relative to the point of A under it, with the
/// rows' angular parts `ja` and `jb`.
#[inline(always)]
fn slider_speed<L: Lanes>(u: V3<L>, ja: V3<L>, jb: V3<L>, a: &Sides<L>, b: &Sides<L>) -> L {
    (u.dot(b.v.sub(a.v)) + jb.dot(b.w)) - ja.dot(a.w)
}

/// Pushes B along a slider's line `u` by `impulse`, and A the other way.
#[inline(always)]
fn slider_push<L: Lanes>(u: V3<L>, ja: V3<L>, jb: V3<L>, impulse: L, a: &mut Sides<L>, b: &mut Sides<L>) {
    let along = u.scale(impulse);
    a.v = a.v.sub(along.scale(a.inv_mass));
    a.w = a.w.sub(a.inv_inertia.mul(ja.scale(impulse)));
    b.v = b.v.add(along.scale(b.inv_mass));
    b.w = b.w.add(b.inv_inertia.mul(jb.scale(impulse)));
}

/// The linear part of `cpu::joints::solve_joint` for `L::N` sliders or points on planes of
/// kind `K`: the two rows across the line, or the one along the plane's normal, turning with
/// A, from the lever arms and the anchors' separation (`frame`) and the soft constraint's rate,
/// mass scale and impulse scale (`soft`).
#[inline(always)]
fn line_or_plane_rows<const K: u8, L: Lanes>(
    words: &mut Words<L>,
    a: &mut Sides<L>,
    b: &mut Sides<L>,
    (ra, rb, separation): (V3<L>, V3<L>, V3<L>),
    (rate, mass_scale, impulse_scale): (L, L, L),
) {
    let zero = L::splat(0.0);
    let m = a.inv_mass + b.inv_mass;
    let lever_a = ra.add(separation);
    let u = a.q.rotate(words.line_axis());
    let accumulated = words.linear_impulse();
    let dv = b.v.sub(a.v);
    if plane(K) {
        let acting = u.scale(u.dot(accumulated));
        let (ja1, jb1) = (lever_a.cross(u), rb.cross(u));
        let (ia1, ib1) = (a.inv_inertia.mul(ja1), b.inv_inertia.mul(jb1));
        let c1 = ((u.dot(dv) + jb1.dot(b.w)) - ja1.dot(a.w)) + rate * u.dot(separation);
        let k11 = (m + ja1.dot(ia1)) + jb1.dot(ib1);
        let x = L::select(k11.gt(zero), c1 / k11, zero);
        let linear = u.scale(-mass_scale * x - impulse_scale * u.dot(acting));
        Words::set(&mut words.impulses, 4, acting.add(linear));
        a.v = a.v.sub(linear.scale(a.inv_mass));
        a.w = a.w.sub(a.inv_inertia.mul(lever_a.cross(linear)));
        b.v = b.v.add(linear.scale(b.inv_mass));
        b.w = b.w.add(b.inv_inertia.mul(rb.cross(linear)));
        return;
    }
    let acting = accumulated.sub(u.scale(u.dot(accumulated)));
    let (t1, t2) = tangent_basis_lanes(u);
    // Row t's angular parts on A and B, and its effective mass.
    let (ja1, jb1, ja2, jb2) = (lever_a.cross(t1), rb.cross(t1), lever_a.cross(t2), rb.cross(t2));
    let (ia1, ib1) = (a.inv_inertia.mul(ja1), b.inv_inertia.mul(jb1));
    let (ia2, ib2) = (a.inv_inertia.mul(ja2), b.inv_inertia.mul(jb2));
    let c1 = ((t1.dot(dv) + jb1.dot(b.w)) - ja1.dot(a.w)) + rate * t1.dot(separation);
    let k11 = (m + ja1.dot(ia1)) + jb1.dot(ib1);
    let c2 = ((t2.dot(dv) + jb2.dot(b.w)) - ja2.dot(a.w)) + rate * t2.dot(separation);
    let k12 = ja1.dot(ia2) + jb1.dot(ib2);
    let k22 = (m + ja2.dot(ia2)) + jb2.dot(ib2);
    let det = k11 * k22 - k12 * k12;
    let inv_det = L::select(det.gt(zero), L::splat(1.0) / det, zero);
    let x1 = (k22 * c1 - k12 * c2) * inv_det;
    let x2 = (k11 * c2 - k12 * c1) * inv_det;
    let l1 = -mass_scale * x1 - impulse_scale * t1.dot(acting);
    let l2 = -mass_scale * x2 - impulse_scale * t2.dot(acting);
    let linear = t1.scale(l1).add(t2.scale(l2));
    Words::set(&mut words.impulses, 4, acting.add(linear));
    a.v = a.v.sub(linear.scale(a.inv_mass));
    a.w = a.w.sub(a.inv_inertia.mul(lever_a.cross(linear)));
    b.v = b.v.add(linear.scale(b.inv_mass));
    b.w = b.w.add(b.inv_inertia.mul(rb.cross(linear)));
}

/// Runs `$w16::<K>($args)`, `$w8::<K>($args)` or `$f::<K>($args)`, the code for kind `$kind`
/// in the widest lanes the processor has, and returns.
macro_rules! by_kind {
    ($simd:expr, $kind:expr, $f:ident, $w16:ident, $w8:ident, ($($arg:expr),*)) => {{
        macro_rules! call {
            ($k:ident) => {{
                #[cfg(target_arch = "x86_64")]
                {
                    if $simd.sixteen {
                        // SAFETY: the processor has AVX-512F (`Simd::new`).
                        unsafe { x86::$w16::<$k>($($arg),*) };
                        return;
                    }
                    if $simd.eight {
                        // SAFETY: the processor has AVX (`Simd::new`).
                        unsafe { x86::$w8::<$k>($($arg),*) };
                        return;
                    }
                }
                $f::<$k>($($arg),*)
            }};
        }
        match $kind {
            Kind::Ball => call!(BALL),
            Kind::Cone => call!(CONE),
            Kind::ConeTwist => call!(CONE_TWIST),
            Kind::Hinge => call!(HINGE),
            Kind::LimitedHinge => call!(LIMITED_HINGE),
            Kind::Weld => call!(WELD),
            Kind::MotorHinge => call!(MOTOR_HINGE),
            Kind::MotorLimitedHinge => call!(MOTOR_LIMITED_HINGE),
            Kind::Slider => call!(SLIDER),
            Kind::LimitedSlider => call!(LIMITED_SLIDER),
            Kind::MotorSlider => call!(MOTOR_SLIDER),
            Kind::MotorLimitedSlider => call!(MOTOR_LIMITED_SLIDER),
            Kind::Universal => call!(UNIVERSAL),
            Kind::PointOnPlane => call!(POINT_ON_PLANE),
        }
    }};
}

/// The warm start of `simd.widest()` joints of kind `kind` of one color and their bodies'
/// copies `pairs`, in the widest lanes the processor has.
pub(in crate::cpu) fn warm_start_joints(
    simd: Simd,
    kind: Kind,
    joints: &mut [GpuJoint],
    pairs: &mut [[GpuBody; 2]],
    solver_bodies: &[GpuSolverBody],
) {
    #[cfg(not(target_arch = "x86_64"))]
    let _ = simd;
    by_kind!(simd, kind, warm_start4, warm_start16, warm_start8, (joints, pairs, solver_bodies))
}

/// One sweep (biased with `use_bias`, else relax) over `simd.widest()` joints of kind `kind`
/// of one color and their bodies' copies `pairs`, in the widest lanes the processor has.
pub(in crate::cpu) fn solve_joints(
    simd: Simd,
    kind: Kind,
    p: &StepParams,
    joints: &mut [GpuJoint],
    pairs: &mut [[GpuBody; 2]],
    solver_bodies: &[GpuSolverBody],
    use_bias: bool,
) {
    #[cfg(not(target_arch = "x86_64"))]
    let _ = simd;
    by_kind!(simd, kind, solve4, solve16, solve8, (p, joints, pairs, solver_bodies, use_bias))
}

/// The generic code in four lanes (kept out of the dispatch, which stays small).
#[inline(never)]
fn warm_start4<const K: u8>(joints: &mut [GpuJoint], pairs: &mut [[GpuBody; 2]], solver_bodies: &[GpuSolverBody]) {
    warm_start::<K, Vec4>(joints, pairs, solver_bodies);
}

#[inline(never)]
fn solve4<const K: u8>(
    p: &StepParams,
    joints: &mut [GpuJoint],
    pairs: &mut [[GpuBody; 2]],
    solver_bodies: &[GpuSolverBody],
    use_bias: bool,
) {
    solve::<K, Vec4>(p, joints, pairs, solver_bodies, use_bias);
}

/// The generic code compiled with the wider registers' features.
#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::super::{avx::F8, avx512::F16};
    use super::{GpuBody, GpuJoint, GpuSolverBody, StepParams, solve, warm_start};

    #[target_feature(enable = "avx512f")]
    pub(super) fn warm_start16<const K: u8>(
        joints: &mut [GpuJoint],
        pairs: &mut [[GpuBody; 2]],
        solver_bodies: &[GpuSolverBody],
    ) {
        warm_start::<K, F16>(joints, pairs, solver_bodies);
    }

    #[target_feature(enable = "avx")]
    pub(super) fn warm_start8<const K: u8>(
        joints: &mut [GpuJoint],
        pairs: &mut [[GpuBody; 2]],
        solver_bodies: &[GpuSolverBody],
    ) {
        warm_start::<K, F8>(joints, pairs, solver_bodies);
    }

    #[target_feature(enable = "avx512f")]
    pub(super) fn solve16<const K: u8>(
        p: &StepParams,
        joints: &mut [GpuJoint],
        pairs: &mut [[GpuBody; 2]],
        solver_bodies: &[GpuSolverBody],
        use_bias: bool,
    ) {
        solve::<K, F16>(p, joints, pairs, solver_bodies, use_bias);
    }

    #[target_feature(enable = "avx")]
    pub(super) fn solve8<const K: u8>(
        p: &StepParams,
        joints: &mut [GpuJoint],
        pairs: &mut [[GpuBody; 2]],
        solver_bodies: &[GpuSolverBody],
        use_bias: bool,
    ) {
        solve::<K, F8>(p, joints, pairs, solver_bodies, use_bias);
    }
}
