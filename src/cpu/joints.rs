//! Joints on the CPU: the twin of shaders/joints.wgsl, operation for operation.
//!
//! Each joint is solved as Box2D v3 solves its joints, in three dimensions: a block of
//! constraints on the relative velocity at the anchor (three rows for a point, the two across a
//! slider's line, the one along a plane's normal, with A's lever arm reaching B's anchor as the
//! line or plane turns with A) and on the relative angular velocity (none when free, the two
//! across a hinge's axis, the one across a universal joint's two axes, all three when locked),
//! each a soft constraint in the biased solve
//! (bias from the position error of the moment, scaled by [`StepParams::joint_bias_rate`]) and
//! rigid in the relax iterations. The angular block is solved first, then a hinge's motor and
//! limits about its axis, a slider's along its line or a ball joint's cone and twist limits, then the linear
//! part. The position error is measured from the bodies' motion
//! since the step began and their offset then, which keeps it exact far from the origin.
//! The joints of one color share no dynamic body, so solving them in order, or on the worker
//! threads, is the GPU's parallel sweep of that color; runs of one kind of joint (plain, coned,
//! or coned and twist-limited ball joints, hinges and sliders with or without a motor and
//! limits, universal joints, welds, points on planes: `lanes::JointKind`, every kind the API
//! builds) go through the same arithmetic several at once, in SIMD lanes (`lanes::joints`),
//! with the same bits. What is left of a run after the lanes' widths, and broken joints, run
//! one at a time.

use bytemuck::Zeroable;
use glam::{Mat3, Quat, Vec3};

use rayon::prelude::*;

use super::contacts::{PARALLEL_RUN, Shared};
use super::lanes::{self, JointKind, Simd};
use crate::layout::{
    GpuBody, GpuJoint, GpuJointBreak, GpuSolverBody, JOINT_ANGULAR_FREE, JOINT_ANGULAR_HINGE, JOINT_ANGULAR_LOCKED,
    JOINT_ANGULAR_TWO_AXES, JOINT_BROKEN, JOINT_LIMITED, JOINT_LINEAR_LINE, JOINT_LINEAR_POINT, JOINT_MOTOR,
    JOINT_TWIST, NO_BODY, StepParams,
};
use crate::math::{angle_of, mat3_inverse, quat_mul, rotate, tangent_basis};

/// One side of a joint while it is solved: the body's velocities, inverse mass and world
/// inverse inertia (at the substep's pose), orientation and displacement since the step began.
struct Side {
    v: Vec3,
    w: Vec3,
    inv_mass: f32,
    inv_inertia: Mat3,
    q: Quat,
    dp: Vec3,
}

fn side(b: &GpuBody, sb: &GpuSolverBody) -> Side {
    let [c0, c1, c2] = sb.inv_inertia_world;
    Side {
        v: b.linear_velocity,
        w: b.angular_velocity,
        inv_mass: b.inv_mass,
        inv_inertia: Mat3::from_cols(c0.truncate(), c1.truncate(), c2.truncate()),
        q: b.orientation,
        dp: sb.delta_position,
    }
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
/// the warm start (zero without warm starting); and, in the same pass, the runs of one kind
/// in each color of `colors` ([`kind_runs`]), into `runs`.
pub(crate) fn prepare(
    p: &StepParams,
    joints: &mut [GpuJoint],
    colors: &[u32],
    bodies: &[GpuBody],
    runs: &mut Vec<KindRun>,
) {
    kind_runs(joints, colors, runs, |j| prepare_joint(p, j, bodies));
}

/// Joints `start..end`, of color `color` and of one [`JointKind`] (`None`: of one kind the
/// lanes do not take).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct KindRun {
    start: u32,
    end: u32,
    kind: Option<JointKind>,
    /// The color's index.
    color: u32,
}

/// The runs of joints of one kind (the same angular and linear parts and flags) in each color
/// of `colors`, in order, into `runs` (cleared first; it holds at most a run per joint, so a
/// `runs` of that capacity never grows), after `each` on each joint in turn. A joint's kind
/// changes only when it breaks, at the start of a step, so the runs are found once a step, in
/// [`prepare`]'s pass over the joints.
pub(crate) fn kind_runs(
    joints: &mut [GpuJoint],
    colors: &[u32],
    runs: &mut Vec<KindRun>,
    mut each: impl FnMut(&mut GpuJoint),
) {
    runs.clear();
    let key = |j: &GpuJoint| (j.linear, j.angular, j.flags);
    for (color, range) in colors.windows(2).enumerate() {
        let color = color as u32;
        let mut start = range[0];
        for i in range[0]..range[1] {
            each(&mut joints[i as usize]);
            if key(&joints[i as usize]) != key(&joints[start as usize]) {
                runs.push(KindRun { start, end: i, kind: JointKind::of(&joints[start as usize]), color });
                start = i;
            }
        }
        if start < range[1] {
            runs.push(KindRun { start, end: range[1], kind: JointKind::of(&joints[start as usize]), color });
        }
    }
}

/// At the start of a step, before its broad phase: each joint of `breakable` (the joints that
/// can break) that the last step overloaded broken (see [`break_if_overloaded`]), so that its
/// bodies may collide from this step on. Joints that cannot break are not visited.
pub(crate) fn break_overloaded(
    p: &StepParams,
    joints: &mut [GpuJoint],
    (breaks, breakable): (&[GpuJointBreak], &[u32]),
    topology: &mut [u32],
    bodies: &[GpuBody],
) {
    for &k in breakable {
        break_if_overloaded(p, &mut joints[k as usize], &breaks[k as usize], topology, bodies);
    }
}

/// The joints of `breaks` that can break ([`GpuJointBreak::breakable`]).
pub(crate) fn breakable(breaks: &[GpuJointBreak]) -> Vec<u32> {
    (0..breaks.len() as u32).filter(|&k| breaks[k as usize].breakable()).collect()
}

/// Breaks a joint whose impulses over the last substep exceeded its loads (`JointBreaking`,
/// as the force and torque of `JointReaction` times the substep): marks it broken, clears its
/// impulses and takes its bodies off each other's no-contact lists.
fn break_if_overloaded(
    p: &StepParams,
    j: &mut GpuJoint,
    loads: &GpuJointBreak,
    topology: &mut [u32],
    bodies: &[GpuBody],
) {
    if !loads.breakable() || j.flags & JOINT_BROKEN != 0 {
        return;
    }
    let (qa, qb) = (bodies[j.body_a as usize].orientation, bodies[j.body_b as usize].orientation);
    let (linear, angular) = crate::joint::reaction_impulses(j, qa, qb);
    if linear.length() > loads.force * p.h || angular.length() > loads.torque * p.h {
        j.flags |= JOINT_BROKEN;
        j.linear_impulse = Vec3::ZERO;
        j.angular_impulse = Vec3::ZERO;
        (j.lower_impulse, j.upper_impulse, j.motor_impulse, j.twist_upper_impulse) = (0.0, 0.0, 0.0, 0.0);
        for entry in [loads.entry_a, loads.entry_b] {
            if entry != NO_BODY {
                topology[entry as usize] = NO_BODY;
            }
        }
    }
}

fn prepare_joint(p: &StepParams, j: &mut GpuJoint, bodies: &[GpuBody]) {
    j.delta_center = bodies[j.body_b as usize].position - bodies[j.body_a as usize].position;
    j.linear_impulse = p.warm_start_scale * j.linear_impulse;
    j.angular_impulse = p.warm_start_scale * j.angular_impulse;
    j.lower_impulse *= p.warm_start_scale;
    j.upper_impulse *= p.warm_start_scale;
    j.motor_impulse *= p.warm_start_scale;
    j.twist_upper_impulse *= p.warm_start_scale;
}

/// A hinge's axis on A's side, world frame, now.
fn hinge_axis(j: &GpuJoint, a: &Side) -> Vec3 {
    rotate(a.q, j.local_axis_a)
}

/// A universal joint's direction across its two axes now (unit; zero where they have come
/// parallel), along which it holds their angle, and that angle.
fn two_axes(j: &GpuJoint, a: &Side, b: &Side) -> (Vec3, f32) {
    crate::joint::across_axes(j, a.q, b.q)
}

/// The accumulated angular impulse that acts: a hinge's, less what lies along its axis (the
/// axis turns, and the hinge may not hold against turning about it); a universal joint's, only
/// what lies across its two axes.
fn acting_angular(j: &GpuJoint, a: &Side, b: &Side) -> Vec3 {
    if j.angular == JOINT_ANGULAR_HINGE {
        let axis = hinge_axis(j, a);
        j.angular_impulse - axis * axis.dot(j.angular_impulse)
    } else if j.angular == JOINT_ANGULAR_TWO_AXES {
        let (n, _) = two_axes(j, a, b);
        n * n.dot(j.angular_impulse)
    } else {
        j.angular_impulse
    }
}

/// Every substep, before the solve: the accumulated impulses applied at the anchors as they
/// are now, color by color.
pub(crate) fn warm_start(
    joints: &mut [GpuJoint],
    runs: &[KindRun],
    bodies: &mut [GpuBody],
    solver_bodies: &[GpuSolverBody],
    run: Run,
) {
    by_color(
        joints,
        runs,
        bodies,
        solver_bodies,
        run,
        &|j, a, b| warm_start_joint(j, a, b),
        &|kind, joints, pairs, simd| lanes::warm_start_joints(simd, kind, joints, pairs, solver_bodies),
    );
}

/// How the joints of a color run: on the worker threads (`parallel`), and with the kinds of
/// [`JointKind`] several at once in the SIMD lanes that `lanes` allows (the same bits as one
/// at a time).
#[derive(Clone, Copy)]
pub(crate) struct Run {
    pub(crate) parallel: bool,
    pub(crate) lanes: Option<Simd>,
}

/// Writes a copy of body `i`'s velocities back, for a body that moves under impulses (the
/// copy's inverse mass says so, before the body is borrowed to write).
///
/// # Safety
/// No other thread reads or writes body `i` while this runs, if it is dynamic.
unsafe fn store_copy(bodies: &Shared<GpuBody>, i: usize, copy: &GpuBody) {
    if copy.inv_mass > 0.0 {
        // SAFETY: the caller's.
        let b = unsafe { bodies.item_mut(i) };
        b.linear_velocity = copy.linear_velocity;
        b.angular_velocity = copy.angular_velocity;
    }
}

/// Writes side `s` of body `i` (read as `read`) back, for a body that moves under impulses.
///
/// # Safety
/// As [`store_copy`].
unsafe fn store_side(bodies: &Shared<GpuBody>, i: usize, read: &GpuBody, s: &Side) {
    if read.inv_mass > 0.0 {
        // SAFETY: the caller's.
        store(unsafe { bodies.item_mut(i) }, s);
    }
}

/// A pass over a full run of joints of one kind in lanes: the kind, the joints, copies of
/// their bodies (A, B) and the lanes to use.
type LanesFn<'a> = dyn Fn(JointKind, &mut [GpuJoint], &mut [[GpuBody; 2]], Simd) + Sync + 'a;

/// Runs `f` on every joint with its two sides, color by color (`runs`, the [`kind_runs`] of
/// the colors), and writes the sides' velocities back; with `run.lanes`, `lanes_f` instead on
/// each full chunk of that many joints of a run of one [`JointKind`] (the joints of a color
/// are ordered by kind, `layout::pack_joints`), with copies of their bodies (A, B), whose
/// velocities it updates. The joints of a color share no dynamic body, so with `run.parallel`
/// a run's joints run on the worker threads, with the same results as in order.
fn by_color(
    joints: &mut [GpuJoint],
    runs: &[KindRun],
    bodies: &mut [GpuBody],
    solver_bodies: &[GpuSolverBody],
    run: Run,
    f: &(dyn Fn(&mut GpuJoint, &mut Side, &mut Side) + Sync),
    lanes_f: &LanesFn,
) {
    let shared = Shared::new(bodies);
    let one = |j: &mut GpuJoint| {
        let (ia, ib) = (j.body_a as usize, j.body_b as usize);
        // SAFETY: within a color no other joint has `ia` or `ib` as a dynamic body, and only
        // dynamic bodies are written (`store`): a static or kinematic side is only read, by
        // every joint of the color that has it.
        let (ba, bb) = unsafe { (shared.slice(ia..ia + 1)[0], shared.slice(ib..ib + 1)[0]) };
        let (mut a, mut b) = (side(&ba, &solver_bodies[ia]), side(&bb, &solver_bodies[ib]));
        f(j, &mut a, &mut b);
        // SAFETY: as above: each dynamic side is written by this joint alone, and a static or
        // kinematic one (which other threads may be reading) is never borrowed to write.
        unsafe {
            store_side(&shared, ia, &ba, &a);
            store_side(&shared, ib, &bb, &b);
        }
    };
    let width = run.lanes.map_or(1, |simd| simd.widest() as usize);
    // A chunk of joints of kind `kind` (`None`: joints the lanes do not take).
    let chunk = |kind: Option<JointKind>, c: &mut [GpuJoint]| match (run.lanes, kind) {
        (Some(simd), Some(kind)) if c.len() == width => {
            let mut pairs = [[GpuBody::zeroed(); 2]; 16];
            for (pair, j) in pairs.iter_mut().zip(c.iter()) {
                let (ia, ib) = (j.body_a as usize, j.body_b as usize);
                // SAFETY: as in `one`.
                *pair = unsafe { [shared.slice(ia..ia + 1)[0], shared.slice(ib..ib + 1)[0]] };
            }
            lanes_f(kind, c, &mut pairs[..width], simd);
            for (pair, j) in pairs.iter().zip(c.iter()) {
                // SAFETY: as in `one`.
                unsafe {
                    store_copy(&shared, j.body_a as usize, &pair[0]);
                    store_copy(&shared, j.body_b as usize, &pair[1]);
                }
            }
        }
        _ => c.iter_mut().for_each(one),
    };
    // A joint in lanes is a few times cheaper than one alone, so a task takes more of them.
    let task =
        |kind: Option<JointKind>| if kind.is_some() && run.lanes.is_some() { 4 * PARALLEL_RUN } else { PARALLEL_RUN };
    // One run, split over the threads when it is long enough.
    let one_run = |r: &KindRun, run_of_kind: &mut [GpuJoint]| {
        let chunk = |c: &mut [GpuJoint]| chunk(r.kind, c);
        let task = task(r.kind);
        if run.parallel && run_of_kind.len() >= 2 * task {
            run_of_kind.par_chunks_mut(width).with_min_len(task.div_ceil(width)).for_each(chunk);
        } else {
            run_of_kind.chunks_mut(width).for_each(chunk);
        }
    };
    let mut rest = runs;
    while let Some(first) = rest.first() {
        let count = rest.iter().take_while(|r| r.color == first.color).count();
        let (color, next) = rest.split_at(count);
        rest = next;
        let span = &mut joints[first.start as usize..color[count - 1].end as usize];
        // The runs of a color share no dynamic body either: where the color holds work for
        // two tasks, its runs go side by side on the threads.
        // (In quarters of a joint one at a time, which a joint in lanes costs about.)
        let work: usize = color.iter().map(|r| (r.end - r.start) as usize * 4 * PARALLEL_RUN / task(r.kind)).sum();
        if run.parallel && count > 1 && work >= 4 * 2 * PARALLEL_RUN {
            side_by_side(color, span, &one_run);
        } else {
            for r in color {
                one_run(r, &mut span[(r.start - first.start) as usize..(r.end - first.start) as usize]);
            }
        }
    }
}

/// `f` on each of `runs` (consecutive runs of one color) with its joints, `joints` being those
/// of all of them, the halves of the runs on two threads, recursively.
fn side_by_side<F: Fn(&KindRun, &mut [GpuJoint]) + Sync>(runs: &[KindRun], joints: &mut [GpuJoint], f: &F) {
    if let [only] = runs {
        return f(only, joints);
    }
    let mid = runs.len() / 2;
    let (low, high) = joints.split_at_mut((runs[mid].start - runs[0].start) as usize);
    rayon::join(|| side_by_side(&runs[..mid], low, f), || side_by_side(&runs[mid..], high, f));
}

/// Where a joint's linear part acts now: A's and B's lever arms to their anchors, the anchors'
/// separation, and A's lever arm for the impulse (to its anchor for a point; to B's anchor
/// for a line or plane, which turns with A about A's centre).
fn linear_frame(j: &GpuJoint, a: &Side, b: &Side) -> (Vec3, Vec3, Vec3, Vec3) {
    let ra = rotate(a.q, j.local_anchor_a);
    let rb = rotate(b.q, j.local_anchor_b);
    let separation = ((b.dp - a.dp) + j.delta_center) + (rb - ra);
    let lever_a = if j.linear == JOINT_LINEAR_POINT { ra } else { ra + separation };
    (ra, rb, separation, lever_a)
}

/// The accumulated linear impulse that acts: a slider's, less what lies along its line; a
/// point-on-plane joint's, only what lies along its normal `u`.
fn acting_linear(j: &GpuJoint, u: Vec3) -> Vec3 {
    if j.linear == JOINT_LINEAR_POINT {
        j.linear_impulse
    } else if j.linear == JOINT_LINEAR_LINE {
        j.linear_impulse - u * u.dot(j.linear_impulse)
    } else {
        u * u.dot(j.linear_impulse)
    }
}

fn warm_start_joint(j: &mut GpuJoint, a: &mut Side, b: &mut Side) {
    if j.flags & JOINT_BROKEN != 0 {
        return;
    }
    // What acts at the anchors: the accumulated linear impulse, less what a line or plane
    // lets go, and a slider's motor and limits along its line.
    let (linear, lever_a, rb) = if j.linear == JOINT_LINEAR_POINT {
        (j.linear_impulse, rotate(a.q, j.local_anchor_a), rotate(b.q, j.local_anchor_b))
    } else {
        let (_, rb, _, lever_a) = linear_frame(j, a, b);
        let u = rotate(a.q, j.local_linear_axis_a);
        j.linear_impulse = acting_linear(j, u);
        let linear = if j.linear == JOINT_LINEAR_LINE && j.flags != 0 {
            j.linear_impulse + u * ((j.motor_impulse + j.lower_impulse) - j.upper_impulse)
        } else {
            j.linear_impulse
        };
        (linear, lever_a, rb)
    };
    let mut angular = acting_angular(j, a, b);
    j.angular_impulse = angular;
    if j.angular == JOINT_ANGULAR_HINGE {
        // A hinge's motor and limits act about its axis.
        angular += hinge_axis(j, a) * ((j.motor_impulse + j.lower_impulse) - j.upper_impulse);
    } else if j.angular == JOINT_ANGULAR_FREE && j.flags & JOINT_LIMITED != 0 {
        // A ball joint's cone pushes B's axis back towards A's.
        angular -= crate::joint::cone_direction(j, a.q, b.q).0 * j.upper_impulse;
    }
    if j.angular == JOINT_ANGULAR_FREE && j.flags & JOINT_TWIST != 0 {
        // Its twist limits turn B about the twist's direction.
        angular += crate::joint::twist_frame(j, a.q, b.q).0 * (j.lower_impulse - j.twist_upper_impulse);
    }
    a.v -= a.inv_mass * linear;
    a.w -= a.inv_inertia * (lever_a.cross(linear) + angular);
    b.v += b.inv_mass * linear;
    b.w += b.inv_inertia * (rb.cross(linear) + angular);
}

/// One sweep over the joints, color by color: with `use_bias` the soft constraints of the
/// biased solve, without it the rigid ones of the relax iterations.
pub(crate) fn solve(
    p: &StepParams,
    joints: &mut [GpuJoint],
    runs: &[KindRun],
    bodies: &mut [GpuBody],
    solver_bodies: &[GpuSolverBody],
    run: Run,
    use_bias: bool,
) {
    by_color(
        joints,
        runs,
        bodies,
        solver_bodies,
        run,
        &|j, a, b| solve_joint(p, j, a, b, use_bias),
        &|kind, joints, pairs, simd| lanes::solve_joints(simd, kind, p, joints, pairs, solver_bodies, use_bias),
    );
}

fn solve_joint(p: &StepParams, j: &mut GpuJoint, a: &mut Side, b: &mut Side, use_bias: bool) {
    if j.flags & JOINT_BROKEN != 0 {
        return;
    }
    let (rate, mass_scale, impulse_scale) =
        if use_bias { (p.joint_bias_rate, p.joint_mass_scale, p.joint_impulse_scale) } else { (0.0, 1.0, 0.0) };
    // The angular block.
    let k = Mat3::from_cols(
        a.inv_inertia.x_axis + b.inv_inertia.x_axis,
        a.inv_inertia.y_axis + b.inv_inertia.y_axis,
        a.inv_inertia.z_axis + b.inv_inertia.z_axis,
    );
    let mut angular = Vec3::ZERO;
    if j.angular == JOINT_ANGULAR_HINGE {
        // The two directions across A's axis: the axes' misalignment and relative spin there.
        let axis_a = hinge_axis(j, a);
        let axis_b = rotate(b.q, j.local_axis_b);
        let (t1, t2) = tangent_basis(axis_a);
        let error = axis_a.cross(axis_b);
        let dw = b.w - a.w;
        let (kt1, kt2) = (k * t1, k * t2);
        let (k11, k12, k22) = (t1.dot(kt1), t1.dot(kt2), t2.dot(kt2));
        let c1 = t1.dot(dw) + rate * t1.dot(error);
        let c2 = t2.dot(dw) + rate * t2.dot(error);
        let det = k11 * k22 - k12 * k12;
        let inv_det = if det > 0.0 { 1.0 / det } else { 0.0 };
        let x1 = (k22 * c1 - k12 * c2) * inv_det;
        let x2 = (k11 * c2 - k12 * c1) * inv_det;
        let acting = acting_angular(j, a, b);
        let l1 = -mass_scale * x1 - impulse_scale * t1.dot(acting);
        let l2 = -mass_scale * x2 - impulse_scale * t2.dot(acting);
        angular = t1 * l1 + t2 * l2;
        j.angular_impulse = acting + angular;
    } else if j.angular == JOINT_ANGULAR_TWO_AXES {
        // One row across the two axes: their angle's rate is the relative spin along it.
        let (n, angle) = two_axes(j, a, b);
        let kn = n.dot(k * n);
        let mass = if kn > 0.0 { 1.0 / kn } else { 0.0 };
        let acting = acting_angular(j, a, b);
        let c = n.dot(b.w - a.w) + rate * (angle - j.rest_angle);
        angular = n * (-mass_scale * mass * c - impulse_scale * n.dot(acting));
        j.angular_impulse = acting + angular;
    } else if j.angular == JOINT_ANGULAR_LOCKED {
        // B's orientation against the one the weld holds it at, as a rotation vector.
        let held = quat_mul(a.q, j.reference);
        let e = quat_mul(b.q, Quat::from_xyzw(-held.x, -held.y, -held.z, held.w));
        let sign = if e.w >= 0.0 { 2.0 } else { -2.0 };
        let error = Vec3::new(sign * e.x, sign * e.y, sign * e.z);
        let c = (b.w - a.w) + rate * error;
        let x = mat3_inverse(k) * c;
        angular = -mass_scale * x - impulse_scale * j.angular_impulse;
        j.angular_impulse += angular;
    }
    a.w -= a.inv_inertia * angular;
    b.w += b.inv_inertia * angular;
    if j.angular == JOINT_ANGULAR_HINGE && j.flags != 0 {
        hinge_motor_and_limits(p, j, a, b, k, use_bias);
    }
    if j.linear == JOINT_LINEAR_LINE && j.flags != 0 {
        slider_motor_and_limits(p, j, a, b, use_bias);
    }
    if j.angular == JOINT_ANGULAR_FREE && j.flags & JOINT_LIMITED != 0 {
        cone_limit(p, j, a, b, k, use_bias);
    }
    if j.angular == JOINT_ANGULAR_FREE && j.flags & JOINT_TWIST != 0 {
        twist_limits(p, j, a, b, k, use_bias);
    }
    // The linear part: the anchors' relative velocity, and their separation for the bias.
    let (ra, rb, separation, lever_a) = linear_frame(j, a, b);
    let m = a.inv_mass + b.inv_mass;
    let linear = if j.linear == JOINT_LINEAR_POINT {
        // A point: all three directions. Column i of K is the anchors' relative velocity from
        // a unit impulse along axis i.
        let cdot = (b.v + b.w.cross(rb)) - (a.v + a.w.cross(ra));
        let column =
            |e: Vec3| m * e + (b.inv_inertia * rb.cross(e)).cross(rb) + (a.inv_inertia * ra.cross(e)).cross(ra);
        let k = Mat3::from_cols(column(Vec3::X), column(Vec3::Y), column(Vec3::Z));
        let x = mat3_inverse(k) * (cdot + rate * separation);
        let linear = -mass_scale * x - impulse_scale * j.linear_impulse;
        j.linear_impulse += linear;
        linear
    } else {
        // A line (the two directions across it) or a plane (its normal), turning with A.
        let u = rotate(a.q, j.local_linear_axis_a);
        let acting = acting_linear(j, u);
        let line = j.linear == JOINT_LINEAR_LINE;
        let (t1, t2) = if line { tangent_basis(u) } else { (u, Vec3::ZERO) };
        // Row t's angular parts on A and B, and its effective mass.
        let (ja1, jb1, ja2, jb2) = (lever_a.cross(t1), rb.cross(t1), lever_a.cross(t2), rb.cross(t2));
        let (ia1, ib1, ia2, ib2) = (a.inv_inertia * ja1, b.inv_inertia * jb1, a.inv_inertia * ja2, b.inv_inertia * jb2);
        let dv = b.v - a.v;
        let c1 = (t1.dot(dv) + jb1.dot(b.w) - ja1.dot(a.w)) + rate * t1.dot(separation);
        let k11 = m + ja1.dot(ia1) + jb1.dot(ib1);
        let linear = if line {
            let c2 = (t2.dot(dv) + jb2.dot(b.w) - ja2.dot(a.w)) + rate * t2.dot(separation);
            let k12 = ja1.dot(ia2) + jb1.dot(ib2);
            let k22 = m + ja2.dot(ia2) + jb2.dot(ib2);
            let det = k11 * k22 - k12 * k12;
            let inv_det = if det > 0.0 { 1.0 / det } else { 0.0 };
            let x1 = (k22 * c1 - k12 * c2) * inv_det;
            let x2 = (k11 * c2 - k12 * c1) * inv_det;
            let l1 = -mass_scale * x1 - impulse_scale * t1.dot(acting);
            let l2 = -mass_scale * x2 - impulse_scale * t2.dot(acting);
            t1 * l1 + t2 * l2
        } else {
            let x = if k11 > 0.0 { c1 / k11 } else { 0.0 };
            t1 * (-mass_scale * x - impulse_scale * t1.dot(acting))
        };
        j.linear_impulse = acting + linear;
        linear
    };
    a.v -= a.inv_mass * linear;
    a.w -= a.inv_inertia * lever_a.cross(linear);
    b.v += b.inv_mass * linear;
    b.w += b.inv_inertia * rb.cross(linear);
}

/// The velocity bias, mass scale and impulse scale of a hinge's, slider's or cone's limit
/// that the joint is `c` inside (an angle or a translation): a limit not yet reached (`c > 0`) lets the
/// joint close the gap within the substep and no further; one passed is pushed back softly in
/// the biased solve, as the joint is.
fn limit_bias(p: &StepParams, c: f32, use_bias: bool) -> (f32, f32, f32) {
    if c > 0.0 {
        (c * p.inv_h, 1.0, 0.0)
    } else if use_bias {
        (p.joint_bias_rate * c, p.joint_mass_scale, p.joint_impulse_scale)
    } else {
        (0.0, 1.0, 0.0)
    }
}

/// A hinge's motor (rigid, its accumulated impulse within the torque it may apply over the
/// substep) and then its lower and upper limits (each pushing one way only), about its axis;
/// `k` is the two bodies' world inverse inertias summed. As Box2D v3 solves a revolute joint's.
fn hinge_motor_and_limits(p: &StepParams, j: &mut GpuJoint, a: &mut Side, b: &mut Side, k: Mat3, use_bias: bool) {
    let axis = hinge_axis(j, a);
    let ka = axis.dot(k * axis);
    let axial_mass = if ka > 0.0 { 1.0 / ka } else { 0.0 };
    if j.flags & JOINT_MOTOR != 0 {
        let cdot = axis.dot(b.w - a.w) - j.motor_speed;
        let impulse = -axial_mass * cdot;
        let old = j.motor_impulse;
        let most = j.max_motor_effort * p.h;
        j.motor_impulse = (old + impulse).clamp(-most, most);
        let applied = axis * (j.motor_impulse - old);
        a.w -= a.inv_inertia * applied;
        b.w += b.inv_inertia * applied;
    }
    if j.flags & JOINT_LIMITED != 0 {
        // B's turn about the axis relative to A, from the directions across it.
        let ref_a = rotate(a.q, j.local_ref_a);
        let ref_b = rotate(b.q, j.local_ref_b);
        let angle = angle_of(ref_a.dot(ref_b), axis.dot(ref_a.cross(ref_b)));
        // The lower limit pushes B's turn up the axis, the upper down it.
        j.lower_impulse = limit_row(p, angle - j.lower, axis, j.lower_impulse, axial_mass, a, b, use_bias);
        j.upper_impulse = limit_row(p, j.upper - angle, -axis, j.upper_impulse, axial_mass, a, b, use_bias);
    }
}

/// One angular limit that the joint is `c` inside, pushing B's turn relative to A along
/// `direction` (and A the other way) with the effective mass `mass`: applies its impulse to
/// the sides and returns its new accumulated impulse (never below zero).
#[allow(clippy::too_many_arguments)]
fn limit_row(
    p: &StepParams,
    c: f32,
    direction: Vec3,
    accumulated: f32,
    mass: f32,
    a: &mut Side,
    b: &mut Side,
    use_bias: bool,
) -> f32 {
    let (bias, mass_scale, impulse_scale) = limit_bias(p, c, use_bias);
    let cdot = direction.dot(b.w - a.w);
    let impulse = -mass * mass_scale * (cdot + bias) - impulse_scale * accumulated;
    let updated = (accumulated + impulse).max(0.0);
    let applied = direction * (updated - accumulated);
    a.w -= a.inv_inertia * applied;
    b.w += b.inv_inertia * applied;
    updated
}

/// A ball joint's twist limits: a lower and an upper row along the twist's rate direction
/// (`joint::twist_frame`), with their accumulated impulses in `lower_impulse` and
/// `twist_upper_impulse`; `k` is the two bodies' world inverse inertias summed. Where the
/// axes point opposite ways the direction is zero and the rows do nothing.
fn twist_limits(p: &StepParams, j: &mut GpuJoint, a: &mut Side, b: &mut Side, k: Mat3, use_bias: bool) {
    let (d, angle) = crate::joint::twist_frame(j, a.q, b.q);
    let kd = d.dot(k * d);
    let mass = if kd > 0.0 { 1.0 / kd } else { 0.0 };
    j.lower_impulse = limit_row(p, angle - j.lower, d, j.lower_impulse, mass, a, b, use_bias);
    j.twist_upper_impulse = limit_row(p, -j.lower - angle, -d, j.twist_upper_impulse, mass, a, b, use_bias);
}

/// A ball joint's cone: one row about the direction across A's and B's axes, which pushes B's
/// axis back towards A's once their angle has passed the half angle (`upper`), with the
/// accumulated impulse in `upper_impulse`; `k` is the two bodies' world inverse inertias
/// summed. Where the axes are parallel the row has no direction, and the cone is far from its
/// limit; where they are opposite, it pushes about a direction across A's axis.
fn cone_limit(p: &StepParams, j: &mut GpuJoint, a: &mut Side, b: &mut Side, k: Mat3, use_bias: bool) {
    let (n, angle) = crate::joint::cone_direction(j, a.q, b.q);
    let kn = n.dot(k * n);
    let mass = if kn > 0.0 { 1.0 / kn } else { 0.0 };
    let (bias, mass_scale, impulse_scale) = limit_bias(p, j.upper - angle, use_bias);
    // The angle grows at n · (ω_b - ω_a); the limit pushes along -n.
    let direction = -n;
    let cdot = direction.dot(b.w - a.w);
    let impulse = -mass * mass_scale * (cdot + bias) - impulse_scale * j.upper_impulse;
    let old = j.upper_impulse;
    j.upper_impulse = (old + impulse).max(0.0);
    let applied = direction * (j.upper_impulse - old);
    a.w -= a.inv_inertia * applied;
    b.w += b.inv_inertia * applied;
}

/// A slider's motor (rigid, its accumulated impulse within the force it may apply over the
/// substep) and then its lower and upper limits (each pushing one way only), along its line,
/// as Box2D v3 solves a prismatic joint's. Each is one row on B's anchor's velocity along the
/// line relative to the point of A under it (A's lever arm reaches B's anchor, as for the rows
/// across the line), and a limit's position is B's anchor's translation along the line.
fn slider_motor_and_limits(p: &StepParams, j: &mut GpuJoint, a: &mut Side, b: &mut Side, use_bias: bool) {
    let (_, rb, separation, lever_a) = linear_frame(j, a, b);
    let u = rotate(a.q, j.local_linear_axis_a);
    let (ja, jb) = (lever_a.cross(u), rb.cross(u));
    let k = (a.inv_mass + b.inv_mass) + ja.dot(a.inv_inertia * ja) + jb.dot(b.inv_inertia * jb);
    let axial_mass = if k > 0.0 { 1.0 / k } else { 0.0 };
    let speed = |a: &Side, b: &Side| (u.dot(b.v - a.v) + jb.dot(b.w)) - ja.dot(a.w);
    // Pushes B along the line by `impulse`, and A the other way.
    let push = |impulse: f32, a: &mut Side, b: &mut Side| {
        let along = u * impulse;
        a.v -= a.inv_mass * along;
        a.w -= a.inv_inertia * (ja * impulse);
        b.v += b.inv_mass * along;
        b.w += b.inv_inertia * (jb * impulse);
    };
    if j.flags & JOINT_MOTOR != 0 {
        let cdot = speed(a, b) - j.motor_speed;
        let impulse = -axial_mass * cdot;
        let old = j.motor_impulse;
        let most = j.max_motor_effort * p.h;
        j.motor_impulse = (old + impulse).clamp(-most, most);
        push(j.motor_impulse - old, a, b);
    }
    if j.flags & JOINT_LIMITED != 0 {
        let translation = u.dot(separation);
        // `sign` 1 pushes B up the line (the lower limit), -1 down it (the upper).
        let limit = |c: f32, sign: f32, accumulated: &mut f32, a: &mut Side, b: &mut Side| {
            let (bias, mass_scale, impulse_scale) = limit_bias(p, c, use_bias);
            let cdot = sign * speed(a, b);
            let impulse = -axial_mass * mass_scale * (cdot + bias) - impulse_scale * *accumulated;
            let old = *accumulated;
            *accumulated = (old + impulse).max(0.0);
            push(sign * (*accumulated - old), a, b);
        };
        limit(translation - j.lower, 1.0, &mut j.lower_impulse, a, b);
        limit(j.upper - translation, -1.0, &mut j.upper_impulse, a, b);
    }
}

#[cfg(test)]
mod tests {
    use glam::Vec4;

    use super::*;
    use crate::layout::{JOINT_LINEAR_PLANE, StepParams};
    use crate::world::CpuLanes;

    /// A coned, twist-limited ball joint between two unturned bodies with every accumulated
    /// impulse set.
    fn loaded_joint() -> (GpuJoint, Vec<GpuBody>) {
        let body = |x: f32| GpuBody {
            position: Vec3::new(x, 0.0, 0.0),
            inv_mass: 1.0,
            orientation: Quat::IDENTITY,
            ..GpuBody::zeroed()
        };
        let joint = GpuJoint {
            body_a: 0,
            body_b: 1,
            angular: JOINT_ANGULAR_FREE,
            linear: JOINT_LINEAR_POINT,
            local_axis_a: Vec3::X,
            local_axis_b: Vec3::X,
            local_ref_a: Vec3::Y,
            local_ref_b: Vec3::Y,
            lower: -0.3,
            upper: 0.5,
            flags: JOINT_LIMITED | JOINT_TWIST,
            linear_impulse: Vec3::splat(1.0),
            angular_impulse: Vec3::splat(1.0),
            lower_impulse: 1.0,
            upper_impulse: 1.0,
            motor_impulse: 1.0,
            twist_upper_impulse: 1.0,
            ..GpuJoint::default()
        };
        (joint, vec![body(0.0), body(1.0)])
    }

    /// Every accumulated impulse of a joint: (linear, angular, the scalar rows').
    fn impulses(j: &GpuJoint) -> (Vec3, Vec3, [f32; 4]) {
        (
            j.linear_impulse,
            j.angular_impulse,
            [j.lower_impulse, j.upper_impulse, j.motor_impulse, j.twist_upper_impulse],
        )
    }

    #[test]
    fn preparing_without_warm_starting_clears_every_impulse() {
        let (mut joint, bodies) = loaded_joint();
        let p = StepParams { warm_start_scale: 0.0, ..StepParams::default() };
        prepare(&p, std::slice::from_mut(&mut joint), &[0, 1], &bodies, &mut Vec::new());
        assert_eq!(impulses(&joint), (Vec3::ZERO, Vec3::ZERO, [0.0; 4]));
        let (mut joint, bodies) = loaded_joint();
        let p = StepParams { warm_start_scale: 0.5, ..StepParams::default() };
        prepare(&p, std::slice::from_mut(&mut joint), &[0, 1], &bodies, &mut Vec::new());
        assert_eq!(impulses(&joint), (Vec3::splat(0.5), Vec3::splat(0.5), [0.5; 4]));
    }

    #[test]
    fn a_broken_joint_keeps_no_impulse() {
        let (mut joint, bodies) = loaded_joint();
        let p = StepParams { h: 1.0 / 240.0, ..StepParams::default() };
        let loads = GpuJointBreak { force: 1.0, torque: 1.0, entry_a: NO_BODY, entry_b: NO_BODY };
        break_if_overloaded(&p, &mut joint, &loads, &mut [], &bodies);
        assert_ne!(joint.flags & JOINT_BROKEN, 0);
        assert_eq!(impulses(&joint), (Vec3::ZERO, Vec3::ZERO, [0.0; 4]));
        let (qa, qb) = (bodies[0].orientation, bodies[1].orientation);
        assert_eq!(crate::joint::reaction_impulses(&joint, qa, qb), (Vec3::ZERO, Vec3::ZERO));
    }

    /// A generator of the same numbers every run.
    struct Numbers(u64);

    impl Numbers {
        /// In [-1, 1).
        fn next(&mut self) -> f32 {
            self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((self.0 >> 40) as f32 / (1u64 << 23) as f32) - 1.0
        }

        fn vec3(&mut self) -> Vec3 {
            Vec3::new(self.next(), self.next(), self.next())
        }
    }

    /// Bodies 0..4 static, the rest dynamic with random poses, velocities and inertias.
    fn bodies(n: usize, r: &mut Numbers) -> (Vec<GpuBody>, Vec<GpuSolverBody>) {
        (0..n)
            .map(|i| {
                let dynamic = i >= 4;
                let q = Quat::from_xyzw(r.next(), r.next(), r.next(), r.next() + 2.0).normalize();
                let body = GpuBody {
                    position: r.vec3() * 10.0,
                    inv_mass: if dynamic { 1.5 + r.next() } else { 0.0 },
                    orientation: q,
                    linear_velocity: r.vec3() * 3.0,
                    angular_velocity: r.vec3() * 3.0,
                    ..GpuBody::zeroed()
                };
                // Some exact -0.0 components, which an impulse of +0 turns to +0.0.
                let body = if i.is_multiple_of(3) {
                    GpuBody { angular_velocity: body.angular_velocity * Vec3::new(-0.0, 1.0, -0.0), ..body }
                } else {
                    body
                };
                // Not quite symmetric, as a world inverse inertia's rounding leaves it: code that
                // read a row for a column would not give the same bits.
                let inertia = if dynamic {
                    let (d, o) = (r.vec3() * 0.5 + Vec3::splat(2.0), r.vec3() * 0.3);
                    let t = o * (1.0 + 1e-5);
                    [Vec4::new(d.x, o.x, o.y, 0.0), Vec4::new(t.x, d.y, o.z, 0.0), Vec4::new(t.y, t.z, d.z, 0.0)]
                } else {
                    [Vec4::ZERO; 3]
                };
                let solver = GpuSolverBody {
                    inv_inertia_world: inertia,
                    delta_position: if dynamic { r.vec3() * 0.01 } else { Vec3::ZERO },
                    ..GpuSolverBody::at_rest()
                };
                (body, solver)
            })
            .unzip()
    }

    /// The kinds of joint the tests build: those the lanes take, and one they do not (a point
    /// on a plane with a cone, which the API does not build: built here by hand, to run the
    /// one-joint code in runs beside the lanes').
    #[derive(Clone, Copy, PartialEq)]
    enum Built {
        Ball,
        Plane,
        ConedPlane,
        Cone,
        ConeTwist,
        Hinge,
        LimitedHinge,
        Weld,
        MotorHinge,
        MotorLimitedHinge,
        Slider,
        LimitedSlider,
        MotorSlider,
        MotorLimitedSlider,
        Universal,
    }

    /// A joint of kind `kind` between `a` and `b` with random anchors (B's at its centre for
    /// every third B), axes, reference directions, limits, offset and impulses; for every fifth
    /// coned joint, B's axis set opposite A's in `bodies` (where the twist is undefined and the
    /// cone pushes about a direction across A's axis), and for every fifth universal joint
    /// parallel to it (where the row has no direction).
    fn joint(a: usize, b: usize, kind: Built, bodies: &[GpuBody], r: &mut Numbers) -> GpuJoint {
        let (angular, flags) = match kind {
            Built::Ball | Built::Plane => (JOINT_ANGULAR_FREE, 0),
            Built::ConedPlane => (JOINT_ANGULAR_FREE, JOINT_LIMITED),
            Built::Cone => (JOINT_ANGULAR_FREE, JOINT_LIMITED),
            Built::ConeTwist => (JOINT_ANGULAR_FREE, JOINT_LIMITED | JOINT_TWIST),
            Built::Hinge => (JOINT_ANGULAR_HINGE, 0),
            Built::LimitedHinge => (JOINT_ANGULAR_HINGE, JOINT_LIMITED),
            Built::Weld => (JOINT_ANGULAR_LOCKED, 0),
            Built::MotorHinge => (JOINT_ANGULAR_HINGE, JOINT_MOTOR),
            Built::MotorLimitedHinge => (JOINT_ANGULAR_HINGE, JOINT_LIMITED | JOINT_MOTOR),
            Built::Slider => (JOINT_ANGULAR_LOCKED, 0),
            Built::LimitedSlider => (JOINT_ANGULAR_LOCKED, JOINT_LIMITED),
            Built::MotorSlider => (JOINT_ANGULAR_LOCKED, JOINT_MOTOR),
            Built::MotorLimitedSlider => (JOINT_ANGULAR_LOCKED, JOINT_LIMITED | JOINT_MOTOR),
            Built::Universal => (JOINT_ANGULAR_TWO_AXES, 0),
        };
        let slider =
            matches!(kind, Built::Slider | Built::LimitedSlider | Built::MotorSlider | Built::MotorLimitedSlider);
        let unit = |r: &mut Numbers| (r.vec3() + Vec3::new(0.0, 0.0, 1.5)).normalize();
        let axis_a = unit(r);
        let opposite = flags & JOINT_LIMITED != 0 && angular == JOINT_ANGULAR_FREE && r.next() > 0.6;
        // Every fifth universal joint's axes parallel in `bodies`, where the row has no direction.
        let parallel = kind == Built::Universal && r.next() > 0.6;
        let (qa, qb) = (bodies[a].orientation, bodies[b].orientation);
        let axis_b = if opposite {
            crate::math::rotate_inv(qb, -rotate(qa, axis_a))
        } else if parallel {
            crate::math::rotate_inv(qb, rotate(qa, axis_a))
        } else {
            unit(r)
        };
        let across = |axis: Vec3, r: &mut Numbers| (r.vec3() - axis * axis.dot(r.vec3())).normalize();
        GpuJoint {
            body_a: a as u32,
            body_b: b as u32,
            angular,
            linear: match kind {
                Built::Plane | Built::ConedPlane => JOINT_LINEAR_PLANE,
                _ if slider => JOINT_LINEAR_LINE,
                _ => JOINT_LINEAR_POINT,
            },
            flags,
            local_anchor_a: r.vec3() * 0.5,
            // Anchors at B's centre leave B's angular velocity to the `+ I_b 0` alone.
            local_anchor_b: if b.is_multiple_of(3) { Vec3::ZERO } else { r.vec3() * 0.5 },
            local_linear_axis_a: if slider || kind == Built::Plane { unit(r) } else { Vec3::Y },
            local_axis_a: axis_a,
            local_axis_b: axis_b,
            local_ref_a: across(axis_a, r),
            local_ref_b: across(axis_b, r),
            lower: -0.8 * r.next().abs(),
            upper: if angular == JOINT_ANGULAR_FREE { 0.2 + 1.2 * r.next().abs() } else { 0.8 * r.next().abs() },
            motor_speed: r.next(),
            // Some motors that reach their torque within the substep, some that do not.
            max_motor_effort: 200.0 * r.next().abs(),
            delta_center: r.vec3(),
            linear_impulse: r.vec3() * 0.1,
            angular_impulse: r.vec3() * 0.01,
            lower_impulse: 0.05 * r.next().abs(),
            upper_impulse: 0.05 * r.next().abs(),
            motor_impulse: 0.05 * r.next(),
            twist_upper_impulse: 0.05 * r.next().abs(),
            // What a universal joint holds (the others do not read it).
            rest_angle: 1.5 * r.next().abs(),
            reference: if kind == Built::Weld || slider {
                Quat::from_axis_angle(unit(r), 2.0 * r.next())
            } else {
                Quat::IDENTITY
            },
        }
    }

    /// Colors of joints that share no dynamic body, of the bodies `bodies(n, ..)` makes: a run
    /// of pairs of each length up to past the widest lanes, of every kind in runs of 17 and
    /// (in the last) one at a time; runs long enough to split over threads, of a kind the lanes
    /// take and of one they do not; a run of static anchors (each static body shared by many
    /// joints); and a color with a joint of another kind among ball joints.
    fn scene(r: &mut Numbers) -> (Vec<GpuJoint>, Vec<u32>, Vec<GpuBody>, Vec<GpuSolverBody>) {
        use Built::*;
        let lane_kinds = [
            Ball,
            Cone,
            ConeTwist,
            Hinge,
            LimitedHinge,
            Weld,
            MotorHinge,
            MotorLimitedHinge,
            Slider,
            LimitedSlider,
            MotorSlider,
            MotorLimitedSlider,
            Universal,
            Plane,
        ];
        // The lane kinds, then the one the lanes do not take.
        let kind_at = |i: usize| lane_kinds.get(i).copied().unwrap_or(ConedPlane);
        let n = 4 + 2 * 500;
        let (bodies, solver_bodies) = bodies(n, r);
        let mut joints = Vec::new();
        let mut colors = vec![0];
        for (c, count) in [1, 3, 4, 7, 8, 16, 17, 33, 170, 170, 170, 220].into_iter().enumerate() {
            for k in 0..count {
                let kind = if c == 11 {
                    kind_at(k % (lane_kinds.len() + 1))
                } else {
                    kind_at((k / 17 + c) % lane_kinds.len())
                };
                joints.push(joint(4 + 2 * k, 5 + 2 * k, kind, &bodies, r));
            }
            colors.push(joints.len() as u32);
        }
        for k in 0..500 {
            joints.push(joint(4 + 2 * k, 5 + 2 * k, if k < 400 { ConeTwist } else { ConedPlane }, &bodies, r));
        }
        colors.push(joints.len() as u32);
        // Static anchors for every lane kind, seventeen of each.
        for k in 0..17 * lane_kinds.len() {
            joints.push(joint(k % 4, 4 + k, lane_kinds[k / 17], &bodies, r));
        }
        colors.push(joints.len() as u32);
        for k in 0..40 {
            joints.push(joint(5 + 2 * k, 4 + 2 * k, if k == 9 { ConedPlane } else { Ball }, &bodies, r));
        }
        colors.push(joints.len() as u32);
        (joints, colors, bodies, solver_bodies)
    }

    fn params() -> StepParams {
        StepParams {
            joint_bias_rate: 30.0,
            joint_mass_scale: 0.8,
            joint_impulse_scale: 0.1,
            h: 1.0 / 240.0,
            inv_h: 240.0,
            ..StepParams::default()
        }
    }

    /// The bits of the bodies' velocities and the joints.
    fn bits(bodies: &[GpuBody], joints: &[GpuJoint]) -> (Vec<u32>, Vec<u32>) {
        (bytemuck::cast_slice::<GpuBody, u32>(bodies).to_vec(), bytemuck::cast_slice::<GpuJoint, u32>(joints).to_vec())
    }

    /// The warm start, a biased and a relax sweep give the same bits with joints of every
    /// kind the lanes take in lanes of every width (in order and on the threads) as one joint
    /// at a time.
    #[test]
    fn joints_in_lanes_match_one_at_a_time() {
        let mut r = Numbers(7);
        let (joints, colors, bodies, solver_bodies) = scene(&mut r);
        let (mut joints, mut runs) = (joints, Vec::new());
        kind_runs(&mut joints, &colors, &mut runs, |_| {});
        // Every kind the lanes take has a run of 17 in some color, and no run crosses a color.
        use JointKind::*;
        let lane_kinds = [
            Ball,
            Cone,
            ConeTwist,
            Hinge,
            LimitedHinge,
            Weld,
            MotorHinge,
            MotorLimitedHinge,
            Slider,
            LimitedSlider,
            MotorSlider,
            MotorLimitedSlider,
            Universal,
            PointOnPlane,
        ];
        for kind in lane_kinds {
            assert!(runs.iter().any(|r| r.kind == Some(kind) && r.end - r.start >= 17), "no run of {kind:?}");
        }
        assert!(runs.iter().all(|r| colors.iter().all(|&c| c <= r.start || c >= r.end)));
        // Runs that split over threads, in lanes (past 2 x 4 x PARALLEL_RUN) and one at a time
        // (past 2 x PARALLEL_RUN).
        let long = |kind: Option<JointKind>, len: u32| runs.iter().any(|r| r.kind == kind && r.end - r.start >= len);
        let task = super::PARALLEL_RUN as u32;
        assert!(long(Some(JointKind::ConeTwist), 8 * task) && long(None, 2 * task));
        assert!(runs.windows(2).all(|w| w[0].end == w[1].start) && runs.last().unwrap().end == *colors.last().unwrap());
        let p = params();
        let sweep = |run: Run| {
            let (mut joints, mut bodies) = (joints.clone(), bodies.clone());
            warm_start(&mut joints, &runs, &mut bodies, &solver_bodies, run);
            solve(&p, &mut joints, &runs, &mut bodies, &solver_bodies, run, true);
            solve(&p, &mut joints, &runs, &mut bodies, &solver_bodies, run, false);
            bits(&bodies, &joints)
        };
        let expected = sweep(Run { parallel: false, lanes: None });
        assert_ne!(expected, bits(&bodies, &joints), "the sweeps changed nothing");
        let pool = rayon::ThreadPoolBuilder::new().num_threads(3).build().unwrap();
        for lanes in [CpuLanes::Four, CpuLanes::Eight, CpuLanes::Sixteen] {
            let simd = Simd::new(lanes);
            assert_eq!(sweep(Run { parallel: false, lanes: Some(simd) }), expected, "{lanes:?}");
            let threaded = pool.install(|| sweep(Run { parallel: true, lanes: Some(simd) }));
            assert_eq!(threaded, expected, "{lanes:?} on threads");
        }
    }
}
