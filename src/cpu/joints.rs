//! Joints on the CPU: the twin of shaders/joints.wgsl, operation for operation.
//!
//! Each joint is solved as Box2D v3 solves its joints, in three dimensions: a block of
//! constraints on the relative velocity at the anchor (three rows) and on the relative angular
//! velocity (none for a ball, the two across a hinge's axis, all three for a weld), each a
//! soft constraint in the biased solve (bias from the position error of the moment, scaled
//! by [`StepParams::joint_bias_rate`]) and rigid in the relax iterations. The angular block is
//! solved first, then the point. The position error is measured from the bodies' motion
//! since the step began and their offset then, which keeps it exact far from the origin.
//! What only positions change is prepared once per position update ([`Prepared`]).
//! The joints of one color share no dynamic body, so solving them in order, or on the worker
//! threads, is the GPU's parallel sweep of that color.

use glam::{Mat3, Quat, Vec3};

use rayon::prelude::*;

use super::contacts::{PARALLEL_RUN, Shared};
use crate::layout::{GpuBody, GpuJoint, GpuSolverBody, JOINT_FIXED, JOINT_REVOLUTE, StepParams};
use crate::math::{mat3_inverse, quat_mul, rotate, tangent_basis};

/// One side of a joint while it is solved: the body's velocities, inverse mass and world
/// inverse inertia (frozen for the step).
struct Side {
    v: Vec3,
    w: Vec3,
    inv_mass: f32,
    inv_inertia: Mat3,
}

fn inverse_inertia(sb: &GpuSolverBody) -> Mat3 {
    let [c0, c1, c2] = sb.inv_inertia_world;
    Mat3::from_cols(c0.truncate(), c1.truncate(), c2.truncate())
}

fn side(b: &GpuBody, sb: &GpuSolverBody) -> Side {
    Side { v: b.linear_velocity, w: b.angular_velocity, inv_mass: b.inv_mass, inv_inertia: inverse_inertia(sb) }
}

/// Writes a side's velocities back, for a body that moves under impulses (a static or
/// kinematic side is shared by joints of one color, and none of them may change it).
fn store(b: &mut GpuBody, s: &Side) {
    if b.inv_mass > 0.0 {
        b.linear_velocity = s.v;
        b.angular_velocity = s.w;
    }
}

/// Once a step, before the substeps: each joint's centres' offset, and its impulses scaled by
/// the warm start (zero without warm starting).
pub(crate) fn prepare(p: &StepParams, joints: &mut [GpuJoint], bodies: &[GpuBody]) {
    for j in joints {
        j.delta_center = bodies[j.body_b as usize].position - bodies[j.body_a as usize].position;
        j.linear_impulse = p.warm_start_scale * j.linear_impulse;
        j.angular_impulse = p.warm_start_scale * j.angular_impulse;
    }
}

/// What a joint's warm start and sweeps read that only the bodies' positions change: the lever
/// arms, the anchors' separation and the point block's inverse, a hinge's axis, directions
/// across it, its 2 x 2 block and error along them, a weld's error and angular inverse.
/// A sweep computes it for each joint as it goes; where several sweeps run at the same
/// positions (more than one biased or relax iteration a substep: positions move only in
/// between), it is prepared once for all of them ([`prepare_positions`]). The GPU computes the
/// same values, operation for operation, in each pass (`solve_joint` in shaders/joints.wgsl).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Prepared {
    ra: Vec3,
    rb: Vec3,
    separation: Vec3,
    point_inverse: Mat3,
    axis: Vec3,
    t1: Vec3,
    t2: Vec3,
    k11: f32,
    k12: f32,
    k22: f32,
    inv_det: f32,
    e1: f32,
    e2: f32,
    error: Vec3,
    angular_inverse: Mat3,
}

/// Prepares every joint for the bodies' positions now (see [`Prepared`]).
pub(crate) fn prepare_positions(
    joints: &[GpuJoint],
    prepared: &mut Vec<Prepared>,
    bodies: &[GpuBody],
    solver_bodies: &[GpuSolverBody],
    parallel: bool,
) {
    prepared.resize(joints.len(), Prepared::default());
    let one = |(j, out): (&GpuJoint, &mut Prepared)| {
        let (ia, ib) = (j.body_a as usize, j.body_b as usize);
        let ends = Ends { a: &bodies[ia], b: &bodies[ib], solver_a: &solver_bodies[ia], solver_b: &solver_bodies[ib] };
        *out = prepare_joint(j, &ends);
    };
    if parallel && joints.len() >= 2 * PARALLEL_RUN {
        joints.par_iter().zip(prepared.par_iter_mut()).with_min_len(PARALLEL_RUN).for_each(one);
    } else {
        joints.iter().zip(prepared.iter_mut()).for_each(one);
    }
}

fn prepare_joint(j: &GpuJoint, ends: &Ends) -> Prepared {
    let (qa, qb) = (ends.a.orientation, ends.b.orientation);
    let (ia_inv, ib_inv) = (inverse_inertia(ends.solver_a), inverse_inertia(ends.solver_b));
    let mut out = Prepared::default();
    // The angular block.
    let k =
        Mat3::from_cols(ia_inv.x_axis + ib_inv.x_axis, ia_inv.y_axis + ib_inv.y_axis, ia_inv.z_axis + ib_inv.z_axis);
    if j.kind == JOINT_REVOLUTE {
        // The two directions across A's axis: the axes' misalignment and relative spin there.
        let axis_a = rotate(qa, j.local_axis_a);
        let axis_b = rotate(qb, j.local_axis_b);
        let (t1, t2) = tangent_basis(axis_a);
        let error = axis_a.cross(axis_b);
        let (kt1, kt2) = (k * t1, k * t2);
        let (k11, k12, k22) = (t1.dot(kt1), t1.dot(kt2), t2.dot(kt2));
        let det = k11 * k22 - k12 * k12;
        out.axis = axis_a;
        (out.t1, out.t2, out.k11, out.k12, out.k22) = (t1, t2, k11, k12, k22);
        out.inv_det = if det > 0.0 { 1.0 / det } else { 0.0 };
        (out.e1, out.e2) = (t1.dot(error), t2.dot(error));
    } else if j.kind == JOINT_FIXED {
        // B's orientation against the one the weld holds it at, as a rotation vector.
        let held = quat_mul(qa, j.reference);
        let e = quat_mul(qb, Quat::from_xyzw(-held.x, -held.y, -held.z, held.w));
        let sign = if e.w >= 0.0 { 2.0 } else { -2.0 };
        out.error = Vec3::new(sign * e.x, sign * e.y, sign * e.z);
        out.angular_inverse = mat3_inverse(k);
    }
    // The point: the lever arms, the anchors' separation, and the block's inverse, whose
    // column i is the anchors' relative velocity from a unit impulse along axis i.
    let ra = rotate(qa, j.local_anchor_a);
    let rb = rotate(qb, j.local_anchor_b);
    let (dpa, dpb) = (ends.solver_a.delta_position, ends.solver_b.delta_position);
    out.separation = ((dpb - dpa) + j.delta_center) + (rb - ra);
    let m = ends.a.inv_mass + ends.b.inv_mass;
    let column = |e: Vec3| m * e + (ib_inv * rb.cross(e)).cross(rb) + (ia_inv * ra.cross(e)).cross(ra);
    out.point_inverse = mat3_inverse(Mat3::from_cols(column(Vec3::X), column(Vec3::Y), column(Vec3::Z)));
    (out.ra, out.rb) = (ra, rb);
    out
}

/// A joint's two bodies as the step left them so far, and their step scratch.
struct Ends<'a> {
    a: &'a GpuBody,
    b: &'a GpuBody,
    solver_a: &'a GpuSolverBody,
    solver_b: &'a GpuSolverBody,
}

/// The accumulated angular impulse that acts: a hinge's, less what lies along its axis (the
/// axis turns, and the hinge may not hold against turning about it).
fn acting_angular(j: &GpuJoint, axis: Vec3) -> Vec3 {
    if j.kind == JOINT_REVOLUTE { j.angular_impulse - axis * axis.dot(j.angular_impulse) } else { j.angular_impulse }
}

/// The joints with their preparations and solver-wide inputs, for [`warm_start`] and [`solve`].
pub(crate) struct Sweep<'a> {
    pub joints: &'a mut [GpuJoint],
    /// Each joint's preparation for the positions now, or `None` for each sweep to compute it.
    pub prepared: Option<&'a [Prepared]>,
    pub colors: &'a [u32],
    pub solver_bodies: &'a [GpuSolverBody],
    pub parallel: bool,
}

/// Every substep, before the solve: the accumulated impulses applied at the anchors as they
/// are now, color by color.
pub(crate) fn warm_start(sweep: Sweep, bodies: &mut [GpuBody]) {
    by_color(sweep, bodies, &|j, _, ends, a, b| warm_start_joint(j, ends, a, b));
}

/// One sweep over the joints, color by color: with `use_bias` the soft constraints of the
/// biased solve, without it the rigid ones of the relax iterations.
pub(crate) fn solve(p: &StepParams, sweep: Sweep, bodies: &mut [GpuBody], use_bias: bool) {
    by_color(sweep, bodies, &|j, pr, ends, a, b| {
        let pr = pr.copied().unwrap_or_else(|| prepare_joint(j, ends));
        solve_joint(p, j, &pr, a, b, use_bias)
    });
}

/// Runs `f` on every joint with its preparation and its two sides, color by color, and writes
/// the sides' velocities back. The joints of a color share no dynamic body, so with `parallel`
/// a color's joints run on the worker threads, with the same results as in order.
fn by_color(
    sweep: Sweep,
    bodies: &mut [GpuBody],
    f: &(dyn Fn(&mut GpuJoint, Option<&Prepared>, &Ends, &mut Side, &mut Side) + Sync),
) {
    let Sweep { joints, prepared, colors, solver_bodies, parallel } = sweep;
    let shared = Shared::new(bodies);
    let one = |(j, pr): (&mut GpuJoint, Option<&Prepared>)| {
        let (ia, ib) = (j.body_a as usize, j.body_b as usize);
        // SAFETY: within a color no other joint has `ia` or `ib` as a dynamic body, and only
        // dynamic bodies are written (`store`): a static or kinematic side is only read, by
        // every joint of the color that has it.
        let (ba, bb) = unsafe { (shared.slice(ia..ia + 1)[0], shared.slice(ib..ib + 1)[0]) };
        let (mut a, mut b) = (side(&ba, &solver_bodies[ia]), side(&bb, &solver_bodies[ib]));
        let ends = Ends { a: &ba, b: &bb, solver_a: &solver_bodies[ia], solver_b: &solver_bodies[ib] };
        f(j, pr, &ends, &mut a, &mut b);
        // SAFETY: as above; each is written by this joint alone.
        unsafe {
            store(shared.item_mut(ia), &a);
            store(shared.item_mut(ib), &b);
        }
    };
    for range in colors.windows(2) {
        let (first, last) = (range[0] as usize, range[1] as usize);
        let color = &mut joints[first..last];
        let prepared = |k: usize| prepared.map(|p| &p[first + k]);
        if parallel && color.len() >= 2 * PARALLEL_RUN {
            color.par_iter_mut().enumerate().with_min_len(PARALLEL_RUN).for_each(|(k, j)| one((j, prepared(k))));
        } else {
            color.iter_mut().enumerate().for_each(|(k, j)| one((j, prepared(k))));
        }
    }
}

/// The warm start needs only the lever arms and a hinge's axis, computed here as
/// [`prepare_joint`] computes them.
fn warm_start_joint(j: &mut GpuJoint, ends: &Ends, a: &mut Side, b: &mut Side) {
    let ra = rotate(ends.a.orientation, j.local_anchor_a);
    let rb = rotate(ends.b.orientation, j.local_anchor_b);
    let axis = if j.kind == JOINT_REVOLUTE { rotate(ends.a.orientation, j.local_axis_a) } else { Vec3::ZERO };
    let linear = j.linear_impulse;
    let angular = acting_angular(j, axis);
    j.angular_impulse = angular;
    a.v -= a.inv_mass * linear;
    a.w -= a.inv_inertia * (ra.cross(linear) + angular);
    b.v += b.inv_mass * linear;
    b.w += b.inv_inertia * (rb.cross(linear) + angular);
}

fn solve_joint(p: &StepParams, j: &mut GpuJoint, pr: &Prepared, a: &mut Side, b: &mut Side, use_bias: bool) {
    let (rate, mass_scale, impulse_scale) =
        if use_bias { (p.joint_bias_rate, p.joint_mass_scale, p.joint_impulse_scale) } else { (0.0, 1.0, 0.0) };
    // The angular block.
    let mut angular = Vec3::ZERO;
    if j.kind == JOINT_REVOLUTE {
        let dw = b.w - a.w;
        let c1 = pr.t1.dot(dw) + rate * pr.e1;
        let c2 = pr.t2.dot(dw) + rate * pr.e2;
        let x1 = (pr.k22 * c1 - pr.k12 * c2) * pr.inv_det;
        let x2 = (pr.k11 * c2 - pr.k12 * c1) * pr.inv_det;
        let acting = acting_angular(j, pr.axis);
        let l1 = -mass_scale * x1 - impulse_scale * pr.t1.dot(acting);
        let l2 = -mass_scale * x2 - impulse_scale * pr.t2.dot(acting);
        angular = pr.t1 * l1 + pr.t2 * l2;
        j.angular_impulse = acting + angular;
    } else if j.kind == JOINT_FIXED {
        let c = (b.w - a.w) + rate * pr.error;
        let x = pr.angular_inverse * c;
        angular = -mass_scale * x - impulse_scale * j.angular_impulse;
        j.angular_impulse += angular;
    }
    a.w -= a.inv_inertia * angular;
    b.w += b.inv_inertia * angular;
    // The point: the anchors' relative velocity, and their separation for the bias.
    let (ra, rb) = (pr.ra, pr.rb);
    let cdot = (b.v + b.w.cross(rb)) - (a.v + a.w.cross(ra));
    let x = pr.point_inverse * (cdot + rate * pr.separation);
    let linear = -mass_scale * x - impulse_scale * j.linear_impulse;
    j.linear_impulse += linear;
    a.v -= a.inv_mass * linear;
    a.w -= a.inv_inertia * ra.cross(linear);
    b.v += b.inv_mass * linear;
    b.w += b.inv_inertia * rb.cross(linear);
}
