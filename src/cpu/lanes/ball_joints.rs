//! Ball joints (a point held, no angular part, no limits or motor) of one color, several at
//! once, one in each lane: the warm start and the sweeps of `cpu::joints`, with the same
//! arithmetic in the same order, so the same bits as one joint at a time (tested there).
//!
//! The joints of one color share no dynamic body, so the lanes are independent. Each call takes
//! `L::N` joints and their two bodies' copies (`pairs`, A then B), reads the solver bodies by
//! the joints' indices and writes the copies' velocities and the joints' impulses; the caller
//! stores the copies of dynamic bodies back.

use glam::Vec4;

use super::{Lanes, M3, Q4, Simd, V3};
use crate::layout::{GpuBody, GpuJoint, GpuSolverBody, StepParams};

/// A joint's words: its anchors at 4..7 and 8..11, its centres' offset at 28..31 and its linear
/// impulse at 32..35, its angular impulse at 36..39.
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

/// The joints' local anchors on A and B, their centres' offset at the step's start, and their
/// linear and angular impulses with the words that share their rows (the upper limit's and the
/// motor's impulses, written back unchanged).
struct Words<L> {
    anchor_a: V3<L>,
    anchor_b: V3<L>,
    delta_center: V3<L>,
    linear_impulse: V3<L>,
    upper_impulse: L,
    angular_impulse: V3<L>,
    motor_impulse: L,
}

impl<L: Lanes> Words<L> {
    #[inline(always)]
    fn load(joints: &[GpuJoint]) -> Self {
        let anchors = L::transpose8(|l| eight(joint_words(&joints[l]), 4));
        let offset = L::transpose8(|l| eight(joint_words(&joints[l]), 28));
        let angular = L::transpose4(|l| four(joint_words(&joints[l]), 36));
        Self {
            anchor_a: V3 { x: anchors[0], y: anchors[1], z: anchors[2] },
            anchor_b: V3 { x: anchors[4], y: anchors[5], z: anchors[6] },
            delta_center: V3 { x: offset[0], y: offset[1], z: offset[2] },
            linear_impulse: V3 { x: offset[4], y: offset[5], z: offset[6] },
            upper_impulse: offset[7],
            angular_impulse: V3 { x: angular[0], y: angular[1], z: angular[2] },
            motor_impulse: angular[3],
        }
    }

    /// Writes the linear and angular impulses back.
    #[inline(always)]
    fn store(&self, joints: &mut [GpuJoint]) {
        let (li, ai) = (self.linear_impulse, self.angular_impulse);
        L::untranspose4([li.x, li.y, li.z, self.upper_impulse], |l, r| {
            joint_words_mut(&mut joints[l])[32..36].copy_from_slice(&r);
        });
        L::untranspose4([ai.x, ai.y, ai.z, self.motor_impulse], |l, r| {
            joint_words_mut(&mut joints[l])[36..40].copy_from_slice(&r);
        });
    }
}

/// Column `e` of a point's effective mass matrix, the anchors' relative velocity from a unit
/// impulse along `e`: `m e + (I_b (r_b x e)) x r_b + (I_a (r_a x e)) x r_a`. (A function, not
/// a closure: a closure would be compiled without the wider registers' features.)
#[inline(always)]
fn column<L: Lanes>(m: L, (ia, ra): (&M3<L>, V3<L>), (ib, rb): (&M3<L>, V3<L>), e: V3<L>) -> V3<L> {
    e.scale(m).add(ib.mul(rb.cross(e)).cross(rb)).add(ia.mul(ra.cross(e)).cross(ra))
}

/// `cpu::joints::warm_start_joint` for `L::N` ball joints.
#[inline(always)]
fn warm_start<L: Lanes>(joints: &mut [GpuJoint], pairs: &mut [[GpuBody; 2]], solver_bodies: &[GpuSolverBody]) {
    let (joints, pairs) = (&mut joints[..L::N], &mut pairs[..L::N]);
    let (mut a, mut b) =
        (Sides::<L>::load(pairs, joints, solver_bodies, 0), Sides::<L>::load(pairs, joints, solver_bodies, 1));
    let words = Words::<L>::load(joints);
    let (ra, rb) = (a.q.rotate(words.anchor_a), b.q.rotate(words.anchor_b));
    let (linear, angular) = (words.linear_impulse, words.angular_impulse);
    a.v = a.v.sub(linear.scale(a.inv_mass));
    a.w = a.w.sub(a.inv_inertia.mul(ra.cross(linear).add(angular)));
    b.v = b.v.add(linear.scale(b.inv_mass));
    b.w = b.w.add(b.inv_inertia.mul(rb.cross(linear).add(angular)));
    a.store(pairs, 0);
    b.store(pairs, 1);
}

/// `cpu::joints::solve_joint` for `L::N` ball joints: with `use_bias` the soft constraint of
/// the biased solve, without it the rigid one of the relax iterations.
#[inline(always)]
fn solve<L: Lanes>(
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
    let (mut a, mut b) =
        (Sides::<L>::load(pairs, joints, solver_bodies, 0), Sides::<L>::load(pairs, joints, solver_bodies, 1));
    // The one-joint code adds B's (zero) angular impulse, `I_b 0`, which is +0 in every
    // component: it turns a -0.0 of B's angular velocity into +0.0 (A's `ω - (+0)` keeps it).
    b.w = b.w.add(V3::zero());
    let mut words = Words::<L>::load(joints);
    let (ra, rb) = (a.q.rotate(words.anchor_a), b.q.rotate(words.anchor_b));
    let separation = b.dp.sub(a.dp).add(words.delta_center).add(rb.sub(ra));
    let m = a.inv_mass + b.inv_mass;
    let cdot = b.v.add(b.w.cross(rb)).sub(a.v.add(a.w.cross(ra)));
    // The columns of K, with the unit axes' products computed as the one-joint code computes
    // them.
    let (zero, one) = (L::splat(0.0), L::splat(1.0));
    let c0 = column(m, (&a.inv_inertia, ra), (&b.inv_inertia, rb), V3 { x: one, y: zero, z: zero });
    let c1 = column(m, (&a.inv_inertia, ra), (&b.inv_inertia, rb), V3 { x: zero, y: one, z: zero });
    let c2 = column(m, (&a.inv_inertia, ra), (&b.inv_inertia, rb), V3 { x: zero, y: zero, z: one });
    // `math::mat3_inverse(K) * rhs`: rows of the inverse are the columns' cross products over
    // the determinant.
    let (r0, r1, r2) = (c1.cross(c2), c2.cross(c0), c0.cross(c1));
    let inv_det = one / c0.dot(r0);
    let rhs = cdot.add(separation.scale(rate));
    let x = V3 { x: r0.scale(inv_det).dot(rhs), y: r1.scale(inv_det).dot(rhs), z: r2.scale(inv_det).dot(rhs) };
    let linear = x.scale(-mass_scale).sub(words.linear_impulse.scale(impulse_scale));
    words.linear_impulse = words.linear_impulse.add(linear);
    a.v = a.v.sub(linear.scale(a.inv_mass));
    a.w = a.w.sub(a.inv_inertia.mul(ra.cross(linear)));
    b.v = b.v.add(linear.scale(b.inv_mass));
    b.w = b.w.add(b.inv_inertia.mul(rb.cross(linear)));
    words.store(joints);
    a.store(pairs, 0);
    b.store(pairs, 1);
}

/// The warm start of `simd.widest()` ball joints of one color and their bodies' copies `pairs`,
/// in the widest lanes the processor has.
pub(in crate::cpu) fn warm_start_balls(
    simd: Simd,
    joints: &mut [GpuJoint],
    pairs: &mut [[GpuBody; 2]],
    solver_bodies: &[GpuSolverBody],
) {
    #[cfg(target_arch = "x86_64")]
    {
        if simd.sixteen {
            // SAFETY: the processor has AVX-512F (`Simd::new`).
            unsafe { x86::warm_start16(joints, pairs, solver_bodies) };
            return;
        }
        if simd.eight {
            // SAFETY: the processor has AVX (`Simd::new`).
            unsafe { x86::warm_start8(joints, pairs, solver_bodies) };
            return;
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = simd;
    warm_start::<Vec4>(joints, pairs, solver_bodies);
}

/// One sweep (biased with `use_bias`, else relax) over `simd.widest()` ball joints of one
/// color and their bodies' copies `pairs`, in the widest lanes the processor has.
pub(in crate::cpu) fn solve_balls(
    simd: Simd,
    p: &StepParams,
    joints: &mut [GpuJoint],
    pairs: &mut [[GpuBody; 2]],
    solver_bodies: &[GpuSolverBody],
    use_bias: bool,
) {
    #[cfg(target_arch = "x86_64")]
    {
        if simd.sixteen {
            // SAFETY: the processor has AVX-512F (`Simd::new`).
            unsafe { x86::solve16(p, joints, pairs, solver_bodies, use_bias) };
            return;
        }
        if simd.eight {
            // SAFETY: the processor has AVX (`Simd::new`).
            unsafe { x86::solve8(p, joints, pairs, solver_bodies, use_bias) };
            return;
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = simd;
    solve::<Vec4>(p, joints, pairs, solver_bodies, use_bias);
}

/// The generic code compiled with the wider registers' features.
#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::super::{avx::F8, avx512::F16};
    use super::{GpuBody, GpuJoint, GpuSolverBody, StepParams, solve, warm_start};

    #[target_feature(enable = "avx512f")]
    pub(super) fn warm_start16(joints: &mut [GpuJoint], pairs: &mut [[GpuBody; 2]], solver_bodies: &[GpuSolverBody]) {
        warm_start::<F16>(joints, pairs, solver_bodies);
    }

    #[target_feature(enable = "avx")]
    pub(super) fn warm_start8(joints: &mut [GpuJoint], pairs: &mut [[GpuBody; 2]], solver_bodies: &[GpuSolverBody]) {
        warm_start::<F8>(joints, pairs, solver_bodies);
    }

    #[target_feature(enable = "avx512f")]
    pub(super) fn solve16(
        p: &StepParams,
        joints: &mut [GpuJoint],
        pairs: &mut [[GpuBody; 2]],
        solver_bodies: &[GpuSolverBody],
        use_bias: bool,
    ) {
        solve::<F16>(p, joints, pairs, solver_bodies, use_bias);
    }

    #[target_feature(enable = "avx")]
    pub(super) fn solve8(
        p: &StepParams,
        joints: &mut [GpuJoint],
        pairs: &mut [[GpuBody; 2]],
        solver_bodies: &[GpuSolverBody],
        use_bias: bool,
    ) {
        solve::<F8>(p, joints, pairs, solver_bodies, use_bias);
    }
}
