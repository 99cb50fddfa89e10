//! Several manifolds (or bodies, or points) at once, one in each lane of a SIMD vector: four in
//! a `Vec4` (SSE2 on x86-64, NEON on aarch64, plain arrays elsewhere), eight in an AVX
//! register where the processor has AVX, and for the sweeps and the warm start's terms sixteen
//! in an AVX-512 register where it has AVX-512F (checked at run time by [`Simd::new`], which
//! the solver's `SolverSettings::cpu_lanes` may cap; the same code, [`Lanes`] over each
//! width). The sweeps ([`solve4`], [`solve8`], [`solve16`]) take manifolds of one color, which
//! share no dynamic body, so the lanes are independent; the preparation ([`prepare4`],
//! [`prepare8`]) takes any, since it only reads the bodies; so do the warm start's terms
//! ([`warm_terms4`], [`warm_terms8`], [`warm_terms16`]), the bodies' world inverse inertia
//! ([`world_inertia4`], [`world_inertia8`]), the velocity integration ([`integrate4`],
//! [`integrate8`]) and a polytope's world points and planes ([`polytope_world`]). A color's
//! ball joints (plain, coned, or coned and twist-limited), hinges and sliders (each with or
//! without a motor and limits), universal joints, welds and points on planes go through the
//! warm start and the sweeps in [`joints`], up to sixteen of one kind at once. Each lane does exactly the arithmetic of the one-at-a-time code, in the
//! same order (branches become selects; no fused multiply-adds): the results are bit for bit
//! those of the one-at-a-time code, whatever the width, so a run gives the same bits on a
//! machine with AVX and on one without.
//!
//! One difference is not arithmetic: where the one-manifold sweep skips a point a manifold
//! lacks in its normal and friction loops, or a coarse correction of zero, the lanes apply a
//! zero impulse. Adding zero changes nothing as long as the lever arms read for the missing
//! points are finite (the lane preparation computes them from the unused point slots of the
//! manifold's `PrepareInput`, which are zeros; the one-manifold preparation leaves last use's
//! values or zeros) and no velocity component is exactly `-0.0` (`-0.0 + 0.0` is `+0.0`); the
//! lane tests compare the two on settling piles. (The coarse correction's sum of lever arms leaves missing points out
//! in both.)
//!
//! Only the biased and the relax sweeps go through here (they are 4 of the 5 passes of a
//! substep), the preparation of lever arms, separations and effective masses after each
//! position update, and the warm start's impulses and angular changes (whose additions to the
//! velocities stay one at a time, in the order of the GPU's gather); manifolds that can
//! bounce, the work the warm start does on them, restitution and the Jacobi overflow keep the
//! manifold-at-a-time code.

use std::mem::offset_of;
use std::ops::{Add, BitAnd, BitOr, Div, Index, Mul, Neg, Not, Sub};

use glam::{BVec4A, Mat3, Mat4, Quat, Vec3, Vec4};

use super::contacts::{
    Motion, PointImpulses, PointMasses, PrepareInput, Prepared, PreparedPoint, Soft, SweepHead, WarmPoint,
};
use crate::layout::{GpuBody, GpuBodyProps, GpuSolverBody, KIND_DYNAMIC, KIND_STATIC, StepParams};
use crate::math::rotate;
use crate::world::CpuLanes;

mod joints;
pub(super) use joints::{Kind as JointKind, solve_joints, warm_start_joints};

/// A vector of `N` `f32` lanes with IEEE arithmetic lane by lane (the same bits as scalar
/// code), comparisons to masks, and selects.
trait Lanes:
    Copy + Add<Output = Self> + Sub<Output = Self> + Mul<Output = Self> + Div<Output = Self> + Neg<Output = Self>
{
    /// A lane-wise condition.
    type Mask: Copy + BitAnd<Output = Self::Mask> + BitOr<Output = Self::Mask> + Not<Output = Self::Mask>;
    /// The lanes stored in memory.
    type Array: Index<usize, Output = f32>;
    /// The number of lanes.
    const N: usize;
    fn splat(x: f32) -> Self;
    /// Lane `l` is `f(l)`.
    fn from_fn(f: impl Fn(usize) -> f32) -> Self;
    fn to_array(self) -> Self::Array;
    fn min(self, o: Self) -> Self;
    fn max(self, o: Self) -> Self;
    fn sqrt(self) -> Self;
    /// Clears the sign bit, as `f32::abs`.
    fn abs(self) -> Self;
    fn gt(self, o: Self) -> Self::Mask;
    fn ge(self, o: Self) -> Self::Mask;
    fn lt(self, o: Self) -> Self::Mask;
    fn le(self, o: Self) -> Self::Mask;
    fn eq(self, o: Self) -> Self::Mask;
    fn ne(self, o: Self) -> Self::Mask;
    /// `a` where `mask` holds, else `b`.
    fn select(mask: Self::Mask, a: Self, b: Self) -> Self;
    /// Whether `mask` holds in any lane.
    fn any(mask: Self::Mask) -> bool;
    /// Eight consecutive `f32`s of each lane, `row(l)`, as eight vectors: lane `l` of
    /// `out[e]` is `row(l)[e]` (a transpose, instead of inserting each lane's value alone).
    fn transpose8<'a>(row: impl Fn(usize) -> &'a [f32; 8]) -> [Self; 8];
    /// [`Lanes::transpose8`] for four `f32`s per lane.
    fn transpose4<'a>(row: impl Fn(usize) -> &'a [f32; 4]) -> [Self; 4];
    /// The inverse of [`Lanes::transpose4`]: `write(l, row)` with `row[e]` lane `l` of `v[e]`.
    fn untranspose4(v: [Self; 4], write: impl FnMut(usize, [f32; 4]));
    /// The inverse of [`Lanes::transpose8`]: `write(l, row)` with `row[e]` lane `l` of `v[e]`.
    fn untranspose8(v: [Self; 8], write: impl FnMut(usize, [f32; 8]));
}

impl Lanes for Vec4 {
    type Mask = BVec4A;
    type Array = [f32; 4];
    const N: usize = 4;
    #[inline(always)]
    fn splat(x: f32) -> Self {
        Vec4::splat(x)
    }
    #[inline(always)]
    fn from_fn(f: impl Fn(usize) -> f32) -> Self {
        Vec4::new(f(0), f(1), f(2), f(3))
    }
    #[inline(always)]
    fn to_array(self) -> [f32; 4] {
        Vec4::to_array(&self)
    }
    #[inline(always)]
    fn min(self, o: Self) -> Self {
        Vec4::min(self, o)
    }
    #[inline(always)]
    fn max(self, o: Self) -> Self {
        Vec4::max(self, o)
    }
    #[inline(always)]
    fn sqrt(self) -> Self {
        #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
        {
            use std::arch::x86_64::{__m128, _mm_sqrt_ps};
            // SAFETY: SSE2 is enabled at compile time (the cfg above); `Vec4` is a `__m128` there.
            unsafe { Vec4::from(_mm_sqrt_ps(__m128::from(self))) }
        }
        #[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
        Vec4::sqrt(self)
    }
    #[inline(always)]
    fn abs(self) -> Self {
        Vec4::abs(self)
    }
    #[inline(always)]
    fn gt(self, o: Self) -> BVec4A {
        self.cmpgt(o)
    }
    #[inline(always)]
    fn ge(self, o: Self) -> BVec4A {
        self.cmpge(o)
    }
    #[inline(always)]
    fn lt(self, o: Self) -> BVec4A {
        self.cmplt(o)
    }
    #[inline(always)]
    fn le(self, o: Self) -> BVec4A {
        self.cmple(o)
    }
    #[inline(always)]
    fn eq(self, o: Self) -> BVec4A {
        self.cmpeq(o)
    }
    #[inline(always)]
    fn ne(self, o: Self) -> BVec4A {
        self.cmpne(o)
    }
    #[inline(always)]
    fn select(mask: BVec4A, a: Self, b: Self) -> Self {
        Vec4::select(mask, a, b)
    }
    #[inline(always)]
    fn any(mask: BVec4A) -> bool {
        mask.any()
    }
    #[inline(always)]
    fn transpose8<'a>(row: impl Fn(usize) -> &'a [f32; 8]) -> [Self; 8] {
        let half = |h: usize| {
            let col = |l: usize| Vec4::from_slice(&row(l)[4 * h..4 * h + 4]);
            Mat4::from_cols(col(0), col(1), col(2), col(3)).transpose()
        };
        let (lo, hi) = (half(0), half(1));
        [lo.x_axis, lo.y_axis, lo.z_axis, lo.w_axis, hi.x_axis, hi.y_axis, hi.z_axis, hi.w_axis]
    }
    #[inline(always)]
    fn transpose4<'a>(row: impl Fn(usize) -> &'a [f32; 4]) -> [Self; 4] {
        let col = |l: usize| Vec4::from_array(*row(l));
        let t = Mat4::from_cols(col(0), col(1), col(2), col(3)).transpose();
        [t.x_axis, t.y_axis, t.z_axis, t.w_axis]
    }
    #[inline(always)]
    fn untranspose4(v: [Self; 4], mut write: impl FnMut(usize, [f32; 4])) {
        let t = Mat4::from_cols(v[0], v[1], v[2], v[3]).transpose();
        for (l, row) in [t.x_axis, t.y_axis, t.z_axis, t.w_axis].into_iter().enumerate() {
            write(l, row.to_array());
        }
    }
    #[inline(always)]
    fn untranspose8(v: [Self; 8], mut write: impl FnMut(usize, [f32; 8])) {
        let lo = Mat4::from_cols(v[0], v[1], v[2], v[3]).transpose();
        let hi = Mat4::from_cols(v[4], v[5], v[6], v[7]).transpose();
        let rows = [(lo.x_axis, hi.x_axis), (lo.y_axis, hi.y_axis), (lo.z_axis, hi.z_axis), (lo.w_axis, hi.w_axis)];
        for (l, (lo, hi)) in rows.into_iter().enumerate() {
            let mut row = [0.0; 8];
            lo.write_to_slice(&mut row[..4]);
            hi.write_to_slice(&mut row[4..]);
            write(l, row);
        }
    }
}

/// Eight lanes in an AVX register.
#[cfg(target_arch = "x86_64")]
mod avx {
    use std::arch::x86_64::*;
    use std::ops::{Add, BitAnd, BitOr, Div, Mul, Neg, Not, Sub};

    // SAFETY (every `unsafe` block of this module): `F8` and `M8` are only made and used inside
    // functions compiled with AVX enabled (`solve8_avx`, `prepare8_avx`, `prepare8_avx512`,
    // `warm_terms8_avx`, `world_inertia8_avx`, `integrate8_avx`, `integrate_positions8_avx`,
    // `world_avx`, and through `F16`'s halves `solve16_avx512` and `warm_terms16_avx512`), into
    // which these `#[inline(always)]` methods are inlined, and those run only where a `Simd`
    // says so, which `Simd::new` makes only after `is_x86_feature_detected!` said the processor
    // has the features (debug builds check AVX again where an `F8` is made). None of the
    // intrinsics reads or writes memory through a pointer except the loads and stores, which are
    // unaligned ones on arrays of eight `f32` (32 bytes) or of four (16 bytes, the halves of
    // `_mm256_loadu2_m128` and `_mm256_storeu2_m128`).

    /// Eight `f32` lanes.
    #[derive(Clone, Copy)]
    pub(super) struct F8(pub(super) __m256);

    /// Eight lane conditions: all bits of a lane set or clear, as AVX compares give them.
    #[derive(Clone, Copy)]
    pub(super) struct M8(__m256);

    macro_rules! binary {
        ($trait:ident, $method:ident, $ty:ident, $intrinsic:ident) => {
            impl $trait for $ty {
                type Output = $ty;
                #[inline(always)]
                fn $method(self, o: $ty) -> $ty {
                    unsafe { $ty($intrinsic(self.0, o.0)) }
                }
            }
        };
    }
    binary!(Add, add, F8, _mm256_add_ps);
    binary!(Sub, sub, F8, _mm256_sub_ps);
    binary!(Mul, mul, F8, _mm256_mul_ps);
    binary!(Div, div, F8, _mm256_div_ps);
    binary!(BitAnd, bitand, M8, _mm256_and_ps);
    binary!(BitOr, bitor, M8, _mm256_or_ps);

    impl Neg for F8 {
        type Output = F8;
        /// Flips the sign bit, as `Vec4`'s negation does.
        #[inline(always)]
        fn neg(self) -> F8 {
            unsafe { F8(_mm256_xor_ps(_mm256_set1_ps(-0.0), self.0)) }
        }
    }

    impl Not for M8 {
        type Output = M8;
        #[inline(always)]
        fn not(self) -> M8 {
            unsafe { M8(_mm256_xor_ps(self.0, _mm256_castsi256_ps(_mm256_set1_epi32(-1)))) }
        }
    }

    impl super::Lanes for F8 {
        type Mask = M8;
        type Array = [f32; 8];
        const N: usize = 8;
        #[inline(always)]
        fn splat(x: f32) -> Self {
            debug_assert!(super::avx_detected());
            unsafe { F8(_mm256_set1_ps(x)) }
        }
        #[inline(always)]
        fn from_fn(f: impl Fn(usize) -> f32) -> Self {
            debug_assert!(super::avx_detected());
            unsafe { F8(_mm256_setr_ps(f(0), f(1), f(2), f(3), f(4), f(5), f(6), f(7))) }
        }
        #[inline(always)]
        fn to_array(self) -> [f32; 8] {
            let mut out = [0.0; 8];
            unsafe { _mm256_storeu_ps(out.as_mut_ptr(), self.0) };
            out
        }
        /// `_mm_min_ps`'s operand order, as `Vec4::min` (the second operand where either is
        /// NaN or both are zeros).
        #[inline(always)]
        fn min(self, o: Self) -> Self {
            unsafe { F8(_mm256_min_ps(self.0, o.0)) }
        }
        #[inline(always)]
        fn max(self, o: Self) -> Self {
            unsafe { F8(_mm256_max_ps(self.0, o.0)) }
        }
        #[inline(always)]
        fn sqrt(self) -> Self {
            unsafe { F8(_mm256_sqrt_ps(self.0)) }
        }
        #[inline(always)]
        fn abs(self) -> Self {
            unsafe { F8(_mm256_andnot_ps(_mm256_set1_ps(-0.0), self.0)) }
        }
        // The predicates of SSE's `cmpgt`, `cmpge`, `cmplt`, `cmple`, `cmpeq` and `cmpneq`.
        #[inline(always)]
        fn gt(self, o: Self) -> M8 {
            unsafe { M8(_mm256_cmp_ps::<_CMP_GT_OS>(self.0, o.0)) }
        }
        #[inline(always)]
        fn ge(self, o: Self) -> M8 {
            unsafe { M8(_mm256_cmp_ps::<_CMP_GE_OS>(self.0, o.0)) }
        }
        #[inline(always)]
        fn lt(self, o: Self) -> M8 {
            unsafe { M8(_mm256_cmp_ps::<_CMP_LT_OS>(self.0, o.0)) }
        }
        #[inline(always)]
        fn le(self, o: Self) -> M8 {
            unsafe { M8(_mm256_cmp_ps::<_CMP_LE_OS>(self.0, o.0)) }
        }
        #[inline(always)]
        fn eq(self, o: Self) -> M8 {
            unsafe { M8(_mm256_cmp_ps::<_CMP_EQ_OQ>(self.0, o.0)) }
        }
        #[inline(always)]
        fn ne(self, o: Self) -> M8 {
            unsafe { M8(_mm256_cmp_ps::<_CMP_NEQ_UQ>(self.0, o.0)) }
        }
        #[inline(always)]
        fn select(mask: M8, a: Self, b: Self) -> Self {
            unsafe { F8(_mm256_blendv_ps(b.0, a.0, mask.0)) }
        }
        #[inline(always)]
        fn any(mask: M8) -> bool {
            unsafe { _mm256_movemask_ps(mask.0) != 0 }
        }
        #[inline(always)]
        fn transpose8<'a>(row: impl Fn(usize) -> &'a [f32; 8]) -> [Self; 8] {
            debug_assert!(super::avx_detected());
            unsafe {
                // No closures around intrinsics here: a closure is a function of its own, compiled
                // without AVX, into which the intrinsics would not be inlined.
                let (r0, r1) = (_mm256_loadu_ps(row(0).as_ptr()), _mm256_loadu_ps(row(1).as_ptr()));
                let (r2, r3) = (_mm256_loadu_ps(row(2).as_ptr()), _mm256_loadu_ps(row(3).as_ptr()));
                let (r4, r5) = (_mm256_loadu_ps(row(4).as_ptr()), _mm256_loadu_ps(row(5).as_ptr()));
                let (r6, r7) = (_mm256_loadu_ps(row(6).as_ptr()), _mm256_loadu_ps(row(7).as_ptr()));
                // Pairs of lanes interleaved, then quadruples, within each 128-bit half...
                let (t0, t1) = (_mm256_unpacklo_ps(r0, r1), _mm256_unpackhi_ps(r0, r1));
                let (t2, t3) = (_mm256_unpacklo_ps(r2, r3), _mm256_unpackhi_ps(r2, r3));
                let (t4, t5) = (_mm256_unpacklo_ps(r4, r5), _mm256_unpackhi_ps(r4, r5));
                let (t6, t7) = (_mm256_unpacklo_ps(r6, r7), _mm256_unpackhi_ps(r6, r7));
                let (s0, s1) = (_mm256_shuffle_ps::<0x44>(t0, t2), _mm256_shuffle_ps::<0xEE>(t0, t2));
                let (s2, s3) = (_mm256_shuffle_ps::<0x44>(t1, t3), _mm256_shuffle_ps::<0xEE>(t1, t3));
                let (s4, s5) = (_mm256_shuffle_ps::<0x44>(t4, t6), _mm256_shuffle_ps::<0xEE>(t4, t6));
                let (s6, s7) = (_mm256_shuffle_ps::<0x44>(t5, t7), _mm256_shuffle_ps::<0xEE>(t5, t7));
                // ...then the halves: lanes 0-3 from `s`, lanes 4-7 from the next four.
                [
                    F8(_mm256_permute2f128_ps::<0x20>(s0, s4)),
                    F8(_mm256_permute2f128_ps::<0x20>(s1, s5)),
                    F8(_mm256_permute2f128_ps::<0x20>(s2, s6)),
                    F8(_mm256_permute2f128_ps::<0x20>(s3, s7)),
                    F8(_mm256_permute2f128_ps::<0x31>(s0, s4)),
                    F8(_mm256_permute2f128_ps::<0x31>(s1, s5)),
                    F8(_mm256_permute2f128_ps::<0x31>(s2, s6)),
                    F8(_mm256_permute2f128_ps::<0x31>(s3, s7)),
                ]
            }
        }
        #[inline(always)]
        fn transpose4<'a>(row: impl Fn(usize) -> &'a [f32; 4]) -> [Self; 4] {
            debug_assert!(super::avx_detected());
            unsafe {
                // Lane `l` in the low half, lane `l + 4` in the high one.
                let a0 = _mm256_loadu2_m128(row(4).as_ptr(), row(0).as_ptr());
                let a1 = _mm256_loadu2_m128(row(5).as_ptr(), row(1).as_ptr());
                let a2 = _mm256_loadu2_m128(row(6).as_ptr(), row(2).as_ptr());
                let a3 = _mm256_loadu2_m128(row(7).as_ptr(), row(3).as_ptr());
                let (t0, t1) = (_mm256_unpacklo_ps(a0, a1), _mm256_unpacklo_ps(a2, a3));
                let (t2, t3) = (_mm256_unpackhi_ps(a0, a1), _mm256_unpackhi_ps(a2, a3));
                [
                    F8(_mm256_shuffle_ps::<0x44>(t0, t1)),
                    F8(_mm256_shuffle_ps::<0xEE>(t0, t1)),
                    F8(_mm256_shuffle_ps::<0x44>(t2, t3)),
                    F8(_mm256_shuffle_ps::<0xEE>(t2, t3)),
                ]
            }
        }
        #[inline(always)]
        fn untranspose4(v: [Self; 4], mut write: impl FnMut(usize, [f32; 4])) {
            unsafe {
                // The same 4x4 transposes in each half: element rows become lane rows.
                let (t0, t1) = (_mm256_unpacklo_ps(v[0].0, v[1].0), _mm256_unpacklo_ps(v[2].0, v[3].0));
                let (t2, t3) = (_mm256_unpackhi_ps(v[0].0, v[1].0), _mm256_unpackhi_ps(v[2].0, v[3].0));
                let rows = [
                    _mm256_shuffle_ps::<0x44>(t0, t1),
                    _mm256_shuffle_ps::<0xEE>(t0, t1),
                    _mm256_shuffle_ps::<0x44>(t2, t3),
                    _mm256_shuffle_ps::<0xEE>(t2, t3),
                ];
                // By reference: no `__m256` passed by value through the iterator's functions.
                for (l, r) in rows.iter().enumerate() {
                    let (mut lo, mut hi) = ([0.0; 4], [0.0; 4]);
                    _mm256_storeu2_m128(hi.as_mut_ptr(), lo.as_mut_ptr(), *r);
                    write(l, lo);
                    write(l + 4, hi);
                }
            }
        }
        #[inline(always)]
        fn untranspose8(v: [Self; 8], mut write: impl FnMut(usize, [f32; 8])) {
            unsafe {
                // `transpose8`'s network: an 8x8 transpose is its own inverse.
                let (t0, t1) = (_mm256_unpacklo_ps(v[0].0, v[1].0), _mm256_unpackhi_ps(v[0].0, v[1].0));
                let (t2, t3) = (_mm256_unpacklo_ps(v[2].0, v[3].0), _mm256_unpackhi_ps(v[2].0, v[3].0));
                let (t4, t5) = (_mm256_unpacklo_ps(v[4].0, v[5].0), _mm256_unpackhi_ps(v[4].0, v[5].0));
                let (t6, t7) = (_mm256_unpacklo_ps(v[6].0, v[7].0), _mm256_unpackhi_ps(v[6].0, v[7].0));
                let (s0, s1) = (_mm256_shuffle_ps::<0x44>(t0, t2), _mm256_shuffle_ps::<0xEE>(t0, t2));
                let (s2, s3) = (_mm256_shuffle_ps::<0x44>(t1, t3), _mm256_shuffle_ps::<0xEE>(t1, t3));
                let (s4, s5) = (_mm256_shuffle_ps::<0x44>(t4, t6), _mm256_shuffle_ps::<0xEE>(t4, t6));
                let (s6, s7) = (_mm256_shuffle_ps::<0x44>(t5, t7), _mm256_shuffle_ps::<0xEE>(t5, t7));
                let rows = [
                    _mm256_permute2f128_ps::<0x20>(s0, s4),
                    _mm256_permute2f128_ps::<0x20>(s1, s5),
                    _mm256_permute2f128_ps::<0x20>(s2, s6),
                    _mm256_permute2f128_ps::<0x20>(s3, s7),
                    _mm256_permute2f128_ps::<0x31>(s0, s4),
                    _mm256_permute2f128_ps::<0x31>(s1, s5),
                    _mm256_permute2f128_ps::<0x31>(s2, s6),
                    _mm256_permute2f128_ps::<0x31>(s3, s7),
                ];
                // By reference: no `__m256` passed by value through the iterator's functions.
                for (l, r) in rows.iter().enumerate() {
                    let mut row = [0.0; 8];
                    _mm256_storeu_ps(row.as_mut_ptr(), *r);
                    write(l, row);
                }
            }
        }
    }
}

/// Sixteen lanes in an AVX-512 register.
#[cfg(target_arch = "x86_64")]
mod avx512 {
    use std::arch::x86_64::*;
    use std::ops::{Add, BitAnd, BitOr, Div, Mul, Neg, Not, Sub};

    use super::Lanes;
    use super::avx::F8;

    // SAFETY (every `unsafe` block of this module): `F16` is only made and used inside
    // `#[target_feature(enable = "avx512f")]` functions (`solve16_avx512`,
    // `warm_terms16_avx512`), into which these
    // `#[inline(always)]` methods are inlined, and those run only after
    // `is_x86_feature_detected!("avx512f")` said the processor has AVX-512F (which implies
    // AVX). None of the intrinsics reads or writes memory through a pointer except the
    // unaligned loads and stores of `F8` and of arrays of sixteen `f32`.

    /// Sixteen `f32` lanes.
    #[derive(Clone, Copy)]
    pub(super) struct F16(__m512);

    /// Sixteen lane conditions, one bit each (an AVX-512 mask register).
    #[derive(Clone, Copy)]
    pub(super) struct M16(__mmask16);

    macro_rules! binary {
        ($trait:ident, $method:ident, $intrinsic:ident) => {
            impl $trait for F16 {
                type Output = F16;
                #[inline(always)]
                fn $method(self, o: F16) -> F16 {
                    unsafe { F16($intrinsic(self.0, o.0)) }
                }
            }
        };
    }
    binary!(Add, add, _mm512_add_ps);
    binary!(Sub, sub, _mm512_sub_ps);
    binary!(Mul, mul, _mm512_mul_ps);
    binary!(Div, div, _mm512_div_ps);

    impl BitAnd for M16 {
        type Output = M16;
        #[inline(always)]
        fn bitand(self, o: M16) -> M16 {
            M16(self.0 & o.0)
        }
    }

    impl BitOr for M16 {
        type Output = M16;
        #[inline(always)]
        fn bitor(self, o: M16) -> M16 {
            M16(self.0 | o.0)
        }
    }

    impl Not for M16 {
        type Output = M16;
        #[inline(always)]
        fn not(self) -> M16 {
            M16(!self.0)
        }
    }

    impl Neg for F16 {
        type Output = F16;
        /// Flips the sign bit, as `Vec4`'s negation does.
        #[inline(always)]
        fn neg(self) -> F16 {
            unsafe {
                F16(_mm512_castsi512_ps(_mm512_xor_si512(_mm512_set1_epi32(i32::MIN), _mm512_castps_si512(self.0))))
            }
        }
    }

    /// The register of lanes 0-7 (`lo`) and 8-15 (`hi`).
    #[inline(always)]
    fn join(lo: F8, hi: F8) -> F16 {
        unsafe {
            let lo = _mm512_castps_pd(_mm512_castps256_ps512(lo.0));
            F16(_mm512_castpd_ps(_mm512_insertf64x4::<1>(lo, _mm256_castps_pd(hi.0))))
        }
    }

    /// Two rows of eight in one register: `lo` in lanes 0-7, `hi` in lanes 8-15.
    #[inline(always)]
    fn rows(lo: &[f32; 8], hi: &[f32; 8]) -> __m512 {
        unsafe {
            let lo = _mm512_castps_pd(_mm512_castps256_ps512(_mm256_loadu_ps(lo.as_ptr())));
            let hi = _mm256_castps_pd(_mm256_loadu_ps(hi.as_ptr()));
            _mm512_castpd_ps(_mm512_insertf64x4::<1>(lo, hi))
        }
    }

    /// Lanes 0-7 and 8-15.
    #[inline(always)]
    fn halves(v: F16) -> (F8, F8) {
        unsafe {
            let hi = _mm512_extractf64x4_pd::<1>(_mm512_castps_pd(v.0));
            (F8(_mm512_castps512_ps256(v.0)), F8(_mm256_castpd_ps(hi)))
        }
    }

    macro_rules! compare {
        ($($method:ident: $predicate:ident),*) => {
            $(
                #[inline(always)]
                fn $method(self, o: Self) -> M16 {
                    unsafe { M16(_mm512_cmp_ps_mask::<$predicate>(self.0, o.0)) }
                }
            )*
        };
    }

    impl Lanes for F16 {
        type Mask = M16;
        type Array = [f32; 16];
        const N: usize = 16;
        #[inline(always)]
        fn splat(x: f32) -> Self {
            debug_assert!(super::avx512_detected());
            unsafe { F16(_mm512_set1_ps(x)) }
        }
        #[inline(always)]
        fn from_fn(f: impl Fn(usize) -> f32) -> Self {
            debug_assert!(super::avx512_detected());
            unsafe {
                F16(_mm512_setr_ps(
                    f(0),
                    f(1),
                    f(2),
                    f(3),
                    f(4),
                    f(5),
                    f(6),
                    f(7),
                    f(8),
                    f(9),
                    f(10),
                    f(11),
                    f(12),
                    f(13),
                    f(14),
                    f(15),
                ))
            }
        }
        #[inline(always)]
        fn to_array(self) -> [f32; 16] {
            let mut out = [0.0; 16];
            unsafe { _mm512_storeu_ps(out.as_mut_ptr(), self.0) };
            out
        }
        /// `vminps`'s operand order, as `Vec4::min` (the second operand where either is NaN
        /// or both are zeros).
        #[inline(always)]
        fn min(self, o: Self) -> Self {
            unsafe { F16(_mm512_min_ps(self.0, o.0)) }
        }
        #[inline(always)]
        fn max(self, o: Self) -> Self {
            unsafe { F16(_mm512_max_ps(self.0, o.0)) }
        }
        #[inline(always)]
        fn sqrt(self) -> Self {
            unsafe { F16(_mm512_sqrt_ps(self.0)) }
        }
        #[inline(always)]
        fn abs(self) -> Self {
            unsafe {
                F16(_mm512_castsi512_ps(_mm512_and_si512(_mm512_set1_epi32(i32::MAX), _mm512_castps_si512(self.0))))
            }
        }
        // The predicates of SSE's `cmpgt`, `cmpge`, `cmplt`, `cmple`, `cmpeq` and `cmpneq`.
        compare!(gt: _CMP_GT_OS, ge: _CMP_GE_OS, lt: _CMP_LT_OS, le: _CMP_LE_OS, eq: _CMP_EQ_OQ, ne: _CMP_NEQ_UQ);
        #[inline(always)]
        fn select(mask: M16, a: Self, b: Self) -> Self {
            unsafe { F16(_mm512_mask_blend_ps(mask.0, b.0, a.0)) }
        }
        #[inline(always)]
        fn any(mask: M16) -> bool {
            mask.0 != 0
        }
        /// `F8::transpose8`'s network on both 256-bit halves at once: register `k` holds rows
        /// `k` and `k + 8`, and the last step, which pairs 128-bit blocks, is one two-source
        /// permute per output.
        #[inline(always)]
        fn transpose8<'a>(row: impl Fn(usize) -> &'a [f32; 8]) -> [Self; 8] {
            debug_assert!(super::avx512_detected());
            unsafe {
                // (No closure: it would be a function of its own, compiled without AVX-512.)
                let (r0, r1, r2, r3) =
                    (rows(row(0), row(8)), rows(row(1), row(9)), rows(row(2), row(10)), rows(row(3), row(11)));
                let (r4, r5, r6, r7) =
                    (rows(row(4), row(12)), rows(row(5), row(13)), rows(row(6), row(14)), rows(row(7), row(15)));
                let (t0, t1) = (_mm512_unpacklo_ps(r0, r1), _mm512_unpackhi_ps(r0, r1));
                let (t2, t3) = (_mm512_unpacklo_ps(r2, r3), _mm512_unpackhi_ps(r2, r3));
                let (t4, t5) = (_mm512_unpacklo_ps(r4, r5), _mm512_unpackhi_ps(r4, r5));
                let (t6, t7) = (_mm512_unpacklo_ps(r6, r7), _mm512_unpackhi_ps(r6, r7));
                let (s0, s1) = (_mm512_shuffle_ps::<0x44>(t0, t2), _mm512_shuffle_ps::<0xEE>(t0, t2));
                let (s2, s3) = (_mm512_shuffle_ps::<0x44>(t1, t3), _mm512_shuffle_ps::<0xEE>(t1, t3));
                let (s4, s5) = (_mm512_shuffle_ps::<0x44>(t4, t6), _mm512_shuffle_ps::<0xEE>(t4, t6));
                let (s6, s7) = (_mm512_shuffle_ps::<0x44>(t5, t7), _mm512_shuffle_ps::<0xEE>(t5, t7));
                // In each half, the first 128-bit blocks of `s` and of the next four (lanes
                // 0-3 and 4-7 of that half), or their second blocks.
                let first = _mm512_setr_epi32(0, 1, 2, 3, 16, 17, 18, 19, 8, 9, 10, 11, 24, 25, 26, 27);
                let second = _mm512_setr_epi32(4, 5, 6, 7, 20, 21, 22, 23, 12, 13, 14, 15, 28, 29, 30, 31);
                [
                    F16(_mm512_permutex2var_ps(s0, first, s4)),
                    F16(_mm512_permutex2var_ps(s1, first, s5)),
                    F16(_mm512_permutex2var_ps(s2, first, s6)),
                    F16(_mm512_permutex2var_ps(s3, first, s7)),
                    F16(_mm512_permutex2var_ps(s0, second, s4)),
                    F16(_mm512_permutex2var_ps(s1, second, s5)),
                    F16(_mm512_permutex2var_ps(s2, second, s6)),
                    F16(_mm512_permutex2var_ps(s3, second, s7)),
                ]
            }
        }
        #[inline(always)]
        fn transpose4<'a>(row: impl Fn(usize) -> &'a [f32; 4]) -> [Self; 4] {
            let (lo, hi) = (F8::transpose4(&row), F8::transpose4(|l| row(l + 8)));
            [join(lo[0], hi[0]), join(lo[1], hi[1]), join(lo[2], hi[2]), join(lo[3], hi[3])]
        }
        #[inline(always)]
        fn untranspose4(v: [Self; 4], mut write: impl FnMut(usize, [f32; 4])) {
            // No `map`: its closure would be a function of its own, compiled without AVX-512.
            let ((l0, h0), (l1, h1)) = (halves(v[0]), halves(v[1]));
            let ((l2, h2), (l3, h3)) = (halves(v[2]), halves(v[3]));
            F8::untranspose4([l0, l1, l2, l3], &mut write);
            F8::untranspose4([h0, h1, h2, h3], |l, r| write(l + 8, r));
        }
        #[inline(always)]
        fn untranspose8(v: [Self; 8], mut write: impl FnMut(usize, [f32; 8])) {
            let ((l0, h0), (l1, h1), (l2, h2), (l3, h3)) = (halves(v[0]), halves(v[1]), halves(v[2]), halves(v[3]));
            let ((l4, h4), (l5, h5), (l6, h6), (l7, h7)) = (halves(v[4]), halves(v[5]), halves(v[6]), halves(v[7]));
            F8::untranspose8([l0, l1, l2, l3, l4, l5, l6, l7], &mut write);
            F8::untranspose8([h0, h1, h2, h3, h4, h5, h6, h7], |l, r| write(l + 8, r));
        }
    }
}

/// `N` `Vec3`s, one per lane.
#[derive(Clone, Copy)]
struct V3<L> {
    x: L,
    y: L,
    z: L,
}

impl<L: Lanes> V3<L> {
    #[inline(always)]
    fn zero() -> Self {
        let z = L::splat(0.0);
        Self { x: z, y: z, z }
    }

    /// Lane `l` is `f(l)`.
    #[inline(always)]
    fn gather(f: impl Fn(usize) -> Vec3) -> Self {
        Self { x: L::from_fn(|l| f(l).x), y: L::from_fn(|l| f(l).y), z: L::from_fn(|l| f(l).z) }
    }

    /// The lanes as `Vec3`s: `lanes.0[l]`, `lanes.1[l]`, `lanes.2[l]` are lane `l`'s x, y, z.
    #[inline(always)]
    fn to_arrays(self) -> (L::Array, L::Array, L::Array) {
        (self.x.to_array(), self.y.to_array(), self.z.to_array())
    }

    #[inline(always)]
    fn add(self, o: Self) -> Self {
        Self { x: self.x + o.x, y: self.y + o.y, z: self.z + o.z }
    }

    #[inline(always)]
    fn sub(self, o: Self) -> Self {
        Self { x: self.x - o.x, y: self.y - o.y, z: self.z - o.z }
    }

    #[inline(always)]
    fn neg(self) -> Self {
        Self { x: -self.x, y: -self.y, z: -self.z }
    }

    #[inline(always)]
    fn scale(self, s: L) -> Self {
        Self { x: self.x * s, y: self.y * s, z: self.z * s }
    }

    /// The lane-wise product of each component, as `Vec3 * Vec3`.
    #[inline(always)]
    fn times(self, o: Self) -> Self {
        Self { x: self.x * o.x, y: self.y * o.y, z: self.z * o.z }
    }

    #[inline(always)]
    fn dot(self, o: Self) -> L {
        self.x * o.x + self.y * o.y + self.z * o.z
    }

    #[inline(always)]
    fn cross(self, o: Self) -> Self {
        Self { x: self.y * o.z - o.y * self.z, y: self.z * o.x - o.z * self.x, z: self.x * o.y - o.x * self.y }
    }

    #[inline(always)]
    fn select(mask: L::Mask, a: Self, b: Self) -> Self {
        Self { x: L::select(mask, a.x, b.x), y: L::select(mask, a.y, b.y), z: L::select(mask, a.z, b.z) }
    }
}

/// `(x, y, z)` of lane `l` of three arrays from [`V3::to_arrays`].
#[inline(always)]
fn lane<A: Index<usize, Output = f32>>(v: &(A, A, A), l: usize) -> Vec3 {
    Vec3::new(v.0[l], v.1[l], v.2[l])
}

/// `N` quaternions, one per lane.
struct Q4<L> {
    u: V3<L>,
    w: L,
}

impl<L: Lanes> Q4<L> {
    #[inline(always)]
    fn gather(f: impl Fn(usize) -> Quat) -> Self {
        Self { u: V3::gather(|l| Vec3::new(f(l).x, f(l).y, f(l).z)), w: L::from_fn(|l| f(l).w) }
    }

    /// [`crate::math::rotate`] in each lane.
    #[inline(always)]
    fn rotate(&self, v: V3<L>) -> V3<L> {
        let t = self.u.cross(v).scale(L::splat(2.0));
        v.add(t.scale(self.w)).add(self.u.cross(t))
    }
}

/// `N` `Mat3`s by columns, as glam multiplies them.
#[derive(Clone, Copy)]
struct M3<L> {
    x_axis: V3<L>,
    y_axis: V3<L>,
    z_axis: V3<L>,
}

impl<L: Lanes> M3<L> {
    #[inline(always)]
    fn mul(&self, v: V3<L>) -> V3<L> {
        self.x_axis.scale(v.x).add(self.y_axis.scale(v.y)).add(self.z_axis.scale(v.z))
    }
}

/// [`Motion`] of `N` bodies.
struct Motions<L> {
    v: V3<L>,
    w: V3<L>,
    inv_mass: L,
    inv_inertia: M3<L>,
}

impl<L: Lanes> Motions<L> {
    #[inline(always)]
    fn gather<'a>(f: impl Fn(usize) -> &'a Motion) -> Self {
        // v, w, inv_mass and the inertia's first entry; then its other eight, by columns.
        let r0 = L::transpose8(|l| &bytemuck::cast_ref::<Motion, [[f32; 8]; 2]>(f(l))[0]);
        let r1 = L::transpose8(|l| &bytemuck::cast_ref::<Motion, [[f32; 8]; 2]>(f(l))[1]);
        Self {
            v: V3 { x: r0[0], y: r0[1], z: r0[2] },
            w: V3 { x: r0[3], y: r0[4], z: r0[5] },
            inv_mass: r0[6],
            inv_inertia: M3 {
                x_axis: V3 { x: r0[7], y: r1[0], z: r1[1] },
                y_axis: V3 { x: r1[2], y: r1[3], z: r1[4] },
                z_axis: V3 { x: r1[5], y: r1[6], z: r1[7] },
            },
        }
    }

    #[inline(always)]
    fn apply(&mut self, r: V3<L>, impulse: V3<L>) {
        self.v = self.v.add(impulse.scale(self.inv_mass));
        self.w = self.w.add(self.inv_inertia.mul(r.cross(impulse)));
    }

    /// `Motion::apply_sum` in each lane.
    #[inline(always)]
    fn apply_sum(&mut self, levers: V3<L>, count: L, impulse: V3<L>) {
        self.v = self.v.add(impulse.scale(count * self.inv_mass));
        self.w = self.w.add(self.inv_inertia.mul(levers.cross(impulse)));
    }

    #[inline(always)]
    fn at(&self, r: V3<L>) -> V3<L> {
        self.v.add(self.w.cross(r))
    }

    #[inline(always)]
    fn rotational(&self, r: V3<L>, d: V3<L>, e: V3<L>) -> L {
        r.cross(d).dot(self.inv_inertia.mul(r.cross(e)))
    }
}

/// One contact point of `N` manifolds.
struct Point<L: Lanes> {
    ra: V3<L>,
    rb: V3<L>,
    separation: L,
    /// `k_n`, `1 / k_n`, the inverse tangent block's three entries and the tangent step (the
    /// fields of [`PointMasses`]).
    k: [L; 6],
    normal_impulse: L,
    tangent_impulse_1: L,
    tangent_impulse_2: L,
    max_normal_impulse: L,
    /// Whether the point exists in each lane's manifold.
    active: L::Mask,
}

/// Per-lane soft-constraint coefficients, and whether the sweep pushes penetration out.
struct Softs<L> {
    bias_rate: L,
    mass_scale: L,
    impulse_scale: L,
    use_bias: bool,
}

/// `contact_bias` in each lane.
#[inline(always)]
fn contact_bias<L: Lanes>(p: &StepParams, soft: &Softs<L>, s: L) -> (L, L, L) {
    let (zero, one) = (L::splat(0.0), L::splat(1.0));
    let open = s.gt(zero);
    let (bias, mass_scale, impulse_scale) = if soft.use_bias {
        (
            (soft.bias_rate * (s + L::splat(p.linear_slop)).min(zero)).max(L::splat(-p.max_push_velocity)),
            soft.mass_scale,
            soft.impulse_scale,
        )
    } else {
        (zero, one, zero)
    };
    (
        L::select(open, s * L::splat(p.inv_h), bias),
        L::select(open, one, mass_scale),
        L::select(open, zero, impulse_scale),
    )
}

/// A point's soft coefficients for one sweep, from `contact_bias`, and its compliance
/// (`contact_compliance`).
struct PointBias<L> {
    bias: L,
    mass_scale: L,
    impulse_scale: L,
    compliance: L,
}

/// The impulse per point of one manifold's coarse correction (the Galerkin step of
/// `stages::coarse_correction`) over all its points or the loaded ones, and the smallest
/// normal impulse among them.
#[inline(always)]
fn centroid_step<L: Lanes>(
    points: &[Point<L>; 4],
    biases: &[PointBias<L>; 4],
    n: V3<L>,
    ma: &Motions<L>,
    mb: &Motions<L>,
    loaded_only: bool,
) -> (L, L) {
    let (zero, one) = (L::splat(0.0), L::splat(1.0));
    let (mut count, mut ra, mut rb, mut residual, mut compliance, mut j_min) =
        (zero, V3::zero(), V3::zero(), zero, zero, L::splat(f32::MAX));
    for (c, b) in points.iter().zip(biases) {
        let on = if loaded_only { c.active & c.normal_impulse.gt(zero) } else { c.active };
        count = count + L::select(on, one, zero);
        ra = ra.add(V3::select(on, c.ra, V3::zero()));
        rb = rb.add(V3::select(on, c.rb, V3::zero()));
        residual = residual + L::select(on, b.bias + b.compliance * c.normal_impulse, zero);
        compliance = compliance + L::select(on, b.compliance, zero);
        j_min = L::select(on, j_min.min(c.normal_impulse), j_min);
    }
    let enough = count.ge(L::splat(2.0));
    let inv_count = one / count;
    let (ra, rb) = (ra.scale(inv_count), rb.scale(inv_count));
    let k = ma.inv_mass + mb.inv_mass + ma.rotational(ra, n, n) + mb.rotational(rb, n, n);
    let vn = n.dot(mb.at(rb).sub(ma.at(ra)));
    let share = -(count * vn + residual) / (count * count * k + compliance);
    (L::select(enough, share, zero), L::select(enough, j_min, zero))
}

/// A biased (`use_bias`) or relax sweep over `L::N` manifolds of one color (their bodies,
/// `heads`, and their `impulses`, which it updates), none of which can bounce and none split,
/// with their prepared data and the soft coefficients against static geometry and between
/// bodies (`softs`); `motions` are every body's before the sweep, and `out[l]` gets lane `l`'s
/// velocities after it (v_a, ω_a, v_b, ω_b).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn solve<L: Lanes>(
    p: &StepParams,
    heads: &[SweepHead],
    impulses: &mut [PointImpulses],
    prepared: &[Prepared],
    motions: &[Motion],
    softs: (Soft, Soft),
    use_bias: bool,
    out: &mut [[Vec3; 4]],
) {
    let (heads, impulses, prepared, out) = (&heads[..L::N], &mut impulses[..L::N], &prepared[..L::N], &mut out[..L::N]);
    let (statics, contacts) = softs;
    let zero = L::splat(0.0);
    let (mut ma, mut mb) = (
        Motions::<L>::gather(|l| &motions[heads[l].a as usize]),
        Motions::<L>::gather(|l| &motions[heads[l].b as usize]),
    );
    // The manifolds' own words ride in the prepared points' last three (`PreparedPoint`).
    let q = load_prepared::<L>(prepared);
    let (t1, t2) = (V3 { x: q[13], y: q[14], z: q[15] }, V3 { x: q[29], y: q[30], z: q[31] });
    let (n, friction, count) = (V3 { x: q[45], y: q[46], z: q[47] }, q[61], q[62]);
    let mut points = [
        load_point(impulses, &q, 0, count),
        load_point(impulses, &q, 1, count),
        load_point(impulses, &q, 2, count),
        load_point(impulses, &q, 3, count),
    ];
    // Against a static or kinematic body, the stiffer coefficients.
    let fixed = ma.inv_mass.eq(zero) | mb.inv_mass.eq(zero);
    let soft = Softs {
        bias_rate: L::select(fixed, L::splat(statics.bias_rate), L::splat(contacts.bias_rate)),
        mass_scale: L::select(fixed, L::splat(statics.mass_scale), L::splat(contacts.mass_scale)),
        impulse_scale: L::select(fixed, L::splat(statics.impulse_scale), L::splat(contacts.impulse_scale)),
        use_bias,
    };

    // The coarse correction: the same impulse on every point, pulled back only as far as the
    // loaded points allow.
    // `contact_compliance` with the lanes' one division hoisted: a point's mass scale is its
    // lane's or, where its impulse scale is zero, one.
    let inv_mass_scale = L::select(fixed, L::splat(1.0 / statics.mass_scale), L::splat(1.0 / contacts.mass_scale));
    let biases = [
        point_bias(p, &soft, &points[0], inv_mass_scale),
        point_bias(p, &soft, &points[1], inv_mass_scale),
        point_bias(p, &soft, &points[2], inv_mass_scale),
        point_bias(p, &soft, &points[3], inv_mass_scale),
    ];
    let (all, j_all) = centroid_step(&points, &biases, n, &ma, &mb, false);
    let pulling = all.lt(zero);
    // The step over the loaded points is only read where a lane pulls, and differs from the
    // step over all points only where an active point carries no impulse: elsewhere it would
    // repeat the same arithmetic on the same points, so the same bits.
    let mut unloaded = points[0].active & !points[0].normal_impulse.gt(zero);
    for c in &points[1..] {
        unloaded = unloaded | (c.active & !c.normal_impulse.gt(zero));
    }
    let (pull, j_min) =
        if L::any(pulling & unloaded) { centroid_step(&points, &biases, n, &ma, &mb, true) } else { (all, j_all) };
    let share = L::select(pulling, pull.max(-j_min).min(zero), all);
    let moving = share.ne(zero);
    // The points that take the share, and the sum of their lever arms, to apply it at once.
    let (mut taking, mut ra, mut rb) = (zero, V3::zero(), V3::zero());
    for c in &mut points {
        let on = c.active & moving & !(pulling & c.normal_impulse.le(zero));
        c.normal_impulse = L::select(on, c.normal_impulse + share, c.normal_impulse);
        c.max_normal_impulse = L::select(on, c.max_normal_impulse.max(share), c.max_normal_impulse);
        taking = taking + L::select(on, L::splat(1.0), zero);
        ra = ra.add(V3::select(on, c.ra, V3::zero()));
        rb = rb.add(V3::select(on, c.rb, V3::zero()));
    }
    let impulse = n.scale(share);
    ma.apply_sum(ra, taking, impulse.neg());
    mb.apply_sum(rb, taking, impulse);

    for (c, b) in points.iter_mut().zip(&biases) {
        let (bias, mass_scale, impulse_scale) = (b.bias, b.mass_scale, b.impulse_scale);
        let vn = n.dot(mb.at(c.rb).sub(ma.at(c.ra)));
        let impulse = -mass_scale * c.k[1] * (vn + bias) - impulse_scale * c.normal_impulse;
        let new_impulse = (c.normal_impulse + impulse).max(zero);
        let applied = L::select(c.active, new_impulse - c.normal_impulse, zero);
        c.normal_impulse = L::select(c.active, new_impulse, c.normal_impulse);
        c.max_normal_impulse = L::select(c.active, c.max_normal_impulse.max(applied), c.max_normal_impulse);
        let impulse = n.scale(applied);
        ma.apply(c.ra, impulse.neg());
        mb.apply(c.rb, impulse);
    }

    for c in &mut points {
        let dv = mb.at(c.rb).sub(ma.at(c.ra));
        let (vt1, vt2) = (t1.dot(dv), t2.dot(dv));
        let [_, _, w11, w12, w22, step] = c.k;
        let (j1, j2) = (c.tangent_impulse_1, c.tangent_impulse_2);
        let max = friction * c.normal_impulse;
        // `friction_update`: the Newton step where it sticks, else the projected gradient step.
        let (n1, n2) = (j1 - (w11 * vt1 - w12 * vt2), j2 - (w22 * vt2 - w12 * vt1));
        let sticks = (n1 * n1 + n2 * n2).le(max * max);
        let (g1, g2) = (j1 - step * vt1, j2 - step * vt2);
        let len_sq = g1 * g1 + g2 * g2;
        let over = len_sq.gt(max * max);
        let scale = max / len_sq.sqrt();
        let (g1, g2) = (L::select(over, g1 * scale, g1), L::select(over, g2 * scale, g2));
        let (o1, o2) = (L::select(sticks, n1, g1), L::select(sticks, n2, g2));
        let impulse = t1.scale(o1 - j1).add(t2.scale(o2 - j2));
        c.tangent_impulse_1 = L::select(c.active, o1, j1);
        c.tangent_impulse_2 = L::select(c.active, o2, j2);
        let impulse = V3::select(c.active, impulse, V3::zero());
        ma.apply(c.ra, impulse.neg());
        mb.apply(c.rb, impulse);
    }

    // Every point's impulses go back: those a manifold lacks are unchanged, bit for bit.
    for (k, c) in points.iter().enumerate() {
        let point = [c.normal_impulse, c.tangent_impulse_1, c.tangent_impulse_2, c.max_normal_impulse];
        L::untranspose4(point, |l, row| impulses[l][k] = row);
    }
    let out = bytemuck::cast_slice_mut::<[Vec3; 4], [[f32; 4]; 3]>(out);
    let ((va, wa), (vb, wb)) = ((ma.v, ma.w), (mb.v, mb.w));
    L::untranspose4([va.x, va.y, va.z, wa.x], |l, row| out[l][0] = row);
    L::untranspose4([wa.y, wa.z, vb.x, vb.y], |l, row| out[l][1] = row);
    L::untranspose4([vb.z, wb.x, wb.y, wb.z], |l, row| out[l][2] = row);
}

/// A [`PrepareInput`] as five rows of eight words.
#[inline(always)]
fn input_rows(m: &PrepareInput) -> &[[f32; 8]; 5] {
    bytemuck::cast_ref(m)
}

/// The `L::N` manifolds' prepared data, each of its 64 words in one vector, by rows of eight
/// (built row by row, with no zeroed array to fill first).
#[inline(always)]
fn load_prepared<L: Lanes>(prepared: &[Prepared]) -> PreparedLanes<L> {
    // No closure around the transposes: it would be a function of its own, compiled without
    // the sweep's target features, unless inlined.
    let rows = |l: usize| bytemuck::cast_ref::<Prepared, [[f32; 8]; 8]>(&prepared[l]);
    PreparedLanes([
        L::transpose8(|l| &rows(l)[0]),
        L::transpose8(|l| &rows(l)[1]),
        L::transpose8(|l| &rows(l)[2]),
        L::transpose8(|l| &rows(l)[3]),
        L::transpose8(|l| &rows(l)[4]),
        L::transpose8(|l| &rows(l)[5]),
        L::transpose8(|l| &rows(l)[6]),
        L::transpose8(|l| &rows(l)[7]),
    ])
}

/// [`load_prepared`]'s vectors: word `w` of [`Prepared`] is `self[w]`.
struct PreparedLanes<L>([[L; 8]; 8]);

impl<L> Index<usize> for PreparedLanes<L> {
    type Output = L;
    #[inline(always)]
    fn index(&self, w: usize) -> &L {
        &self.0[w / 8][w % 8]
    }
}

/// Point `k` of the `L::N` manifolds with `impulses` and prepared data `q` ([`load_prepared`]):
/// sixteen words per point, its lever arms and separation, then its [`PointMasses`]; `count`
/// is each manifold's number of points.
#[inline(always)]
fn load_point<L: Lanes>(impulses: &[PointImpulses], q: &PreparedLanes<L>, k: usize, count: L) -> Point<L> {
    const _: () = assert!(offset_of!(PreparedPoint, geo) == 0 && offset_of!(PreparedPoint, masses) == 28);
    const _: () = assert!(size_of::<PointMasses>() == 24 && offset_of!(PreparedPoint, manifold) == 52);
    let (g, e) = (16 * k, 16 * k + 7);
    let [normal_impulse, tangent_impulse_1, tangent_impulse_2, max_normal_impulse] = L::transpose4(|l| &impulses[l][k]);
    Point {
        ra: V3 { x: q[g], y: q[g + 1], z: q[g + 2] },
        rb: V3 { x: q[g + 3], y: q[g + 4], z: q[g + 5] },
        separation: q[g + 6],
        k: [q[e], q[e + 1], q[e + 2], q[e + 3], q[e + 4], q[e + 5]],
        normal_impulse,
        tangent_impulse_1,
        tangent_impulse_2,
        max_normal_impulse,
        active: L::splat(k as f32).lt(count),
    }
}

/// A point's soft coefficients for one sweep (`contact_bias`) and its compliance
/// (`contact_compliance`, with the lanes' one division, `inv_mass_scale`, hoisted).
#[inline(always)]
fn point_bias<L: Lanes>(p: &StepParams, soft: &Softs<L>, c: &Point<L>, inv_mass_scale: L) -> PointBias<L> {
    let (bias, mass_scale, impulse_scale) = contact_bias(p, soft, c.separation);
    PointBias { bias, mass_scale, impulse_scale, compliance: impulse_scale * c.k[0] * inv_mass_scale }
}

/// `prepare`'s work for `L::N` manifolds at once, one per lane, from what it reads of them
/// (`ms`, five rows of eight words each, transposed whole): each point's lever arms and
/// separation (`geometry`) at the bodies' current poses and its effective masses
/// (`effective_masses`) with `motions`' inverse masses and inertia, and the manifold's own
/// words (tangent basis, normal, friction, count), written to `out` as whole rows for all
/// four points (those a manifold lacks hold what their stale cores give, which the sweeps
/// discard); for the points a manifold has, the same arithmetic in the same order as the
/// one-manifold code, so the same bits.
#[inline(always)]
fn prepare<L: Lanes>(
    ms: &[PrepareInput],
    bodies: &[GpuBody],
    solver_bodies: &[GpuSolverBody],
    motions: &[Motion],
    out: &mut [Prepared],
) {
    let (ms, out) = (&ms[..L::N], &mut out[..L::N]);
    let (a, b) = (|l: usize| ms[l].body_a as usize, |l: usize| ms[l].body_b as usize);
    let ma = Motions::<L>::gather(|l| &motions[a(l)]);
    let mb = Motions::<L>::gather(|l| &motions[b(l)]);
    let header = L::transpose8(|l| &input_rows(&ms[l])[0]);
    let (n, friction) = (V3 { x: header[4], y: header[5], z: header[6] }, header[7]);
    let (count, kept) = (header[2], header[3].ne(L::splat(0.0)));
    let (t1, t2) = tangent_basis_lanes(n);
    // The bodies' motion since the step began and their positions, as rows of eight words.
    let (sa, sb) = (
        L::transpose8(|l| step_motion_row(&solver_bodies[a(l)])),
        L::transpose8(|l| step_motion_row(&solver_bodies[b(l)])),
    );
    let (qa, qb) = (
        Q4 { u: V3 { x: sa[4], y: sa[5], z: sa[6] }, w: sa[7] },
        Q4 { u: V3 { x: sb[4], y: sb[5], z: sb[6] }, w: sb[7] },
    );
    let (da, db) = (V3 { x: sa[0], y: sa[1], z: sa[2] }, V3 { x: sb[0], y: sb[1], z: sb[2] });
    let (pa, pb) = (L::transpose8(|l| pose_row(&bodies[a(l)])), L::transpose8(|l| pose_row(&bodies[b(l)])));
    let offset = V3 { x: pb[0], y: pb[1], z: pb[2] }.sub(V3 { x: pa[0], y: pa[1], z: pa[2] });
    // The radii ride in the first two points' last words.
    let first = [L::transpose8(|l| &ms[l].points[0]), L::transpose8(|l| &ms[l].points[1])];
    let (radius_a, radius_b) = (first[0][7], first[1][7]);
    let (inv_mass, one) = (ma.inv_mass + mb.inv_mass, L::splat(1.0));
    let (t11, t12, t22) = (t1.dot(t1) * inv_mass, t1.dot(t2) * inv_mass, t2.dot(t2) * inv_mass);
    // Every point, whatever each lane's count, as two whole rows of `PreparedPoint`.
    for k in 0..4 {
        let c = match first.get(k) {
            Some(&c) => c,
            None => L::transpose8(|l| &ms[l].points[k]),
        };
        let (core_a, base, core_b) = (V3 { x: c[0], y: c[1], z: c[2] }, c[3], V3 { x: c[4], y: c[5], z: c[6] });
        let (ca, cb) = (qa.rotate(core_a), qb.rotate(core_b));
        let separation = base + n.dot(db.add(cb).sub(da.add(ca)));
        let (surface_a, surface_b) = (ca.add(n.scale(radius_a)), cb.sub(n.scale(radius_b)));
        let half_gap = offset.add(surface_b.sub(surface_a)).scale(L::splat(0.5));
        let ra = V3::select(kept, core_a, surface_a.add(half_gap));
        let rb = V3::select(kept, core_b, surface_b.sub(half_gap));
        let (ka, kb) = (rotational_entries(&ma, ra, n, t1, t2), rotational_entries(&mb, rb, n, t1, t2));
        let (k_n, k11, k12, k22) =
            (inv_mass + ka[0] + kb[0], t11 + ka[1] + kb[1], t12 + ka[2] + kb[2], t22 + ka[3] + kb[3]);
        // `point_masses`.
        let inv_det = one / (k11 * k22 - k12 * k12);
        let half_diff = L::splat(0.5) * (k11 - k22);
        let largest = L::splat(0.5) * (k11 + k22) + (half_diff * half_diff + k12 * k12).sqrt();
        // The manifold's own words (`PreparedPoint::manifold`).
        let own = match k {
            0 => [t1.x, t1.y, t1.z],
            1 => [t2.x, t2.y, t2.z],
            2 => [n.x, n.y, n.z],
            _ => [friction, count, L::splat(0.0)],
        };
        let geo = [ra.x, ra.y, ra.z, rb.x, rb.y, rb.z, separation, k_n];
        L::untranspose8(geo, |l, row| prepared_rows(&mut out[l])[2 * k] = row);
        let masses = [one / k_n, k22 * inv_det, k12 * inv_det, k11 * inv_det, one / largest, own[0], own[1], own[2]];
        L::untranspose8(masses, |l, row| prepared_rows(&mut out[l])[2 * k + 1] = row);
    }
}

/// [`crate::math::tangent_basis`] in each lane: the same arithmetic in the same order.
#[inline(always)]
fn tangent_basis_lanes<L: Lanes>(n: V3<L>) -> (V3<L>, V3<L>) {
    let sign = L::select(n.z.ge(L::splat(0.0)), L::splat(1.0), L::splat(-1.0));
    let a = -L::splat(1.0) / (sign + n.z);
    let b = n.x * n.y * a;
    let t1 = V3 { x: L::splat(1.0) + sign * n.x * n.x * a, y: sign * b, z: -sign * n.x };
    let t2 = V3 { x: b, y: sign + n.y * n.y * a, z: -n.y };
    (t1, t2)
}

/// A solver body's displacement since the step began, its start kinetic energy and its
/// rotation since the step began: eight consecutive words.
#[inline(always)]
fn step_motion_row(s: &GpuSolverBody) -> &[f32; 8] {
    const { assert!(offset_of!(GpuSolverBody, delta_position) == 48 && offset_of!(GpuSolverBody, delta_rotation) == 64) };
    bytemuck::cast_ref::<GpuSolverBody, [f32; 20]>(s)[12..20].try_into().unwrap()
}

/// A body's position, inverse mass and orientation: its first eight words.
#[inline(always)]
fn pose_row(b: &GpuBody) -> &[f32; 8] {
    const { assert!(offset_of!(GpuBody, position) == 0 && offset_of!(GpuBody, orientation) == 16) };
    &bytemuck::cast_ref::<GpuBody, [[f32; 8]; 2]>(b)[0]
}

/// A [`Prepared`] as eight rows of eight words, two per point.
#[inline(always)]
fn prepared_rows(q: &mut Prepared) -> &mut [[f32; 8]; 8] {
    bytemuck::cast_mut(q)
}

/// The rotational parts of `k_n`, `k11`, `k12` and `k22` at lever `r` of `m`, as
/// `effective_masses` computes them: each lever cross and inertia product once.
#[inline(always)]
fn rotational_entries<L: Lanes>(m: &Motions<L>, r: V3<L>, n: V3<L>, t1: V3<L>, t2: V3<L>) -> [L; 4] {
    let (rn, r1, r2) = (r.cross(n), r.cross(t1), r.cross(t2));
    let (i1, i2) = (m.inv_inertia.mul(r1), m.inv_inertia.mul(r2));
    [rn.dot(m.inv_inertia.mul(rn)), r1.dot(i1), r1.dot(i2), r2.dot(i2)]
}

/// Column `e` of the gyroscopic Newton step's Jacobian, `e ie + (h/2) (ie ωm x e - I ωm x e)`,
/// as `stages::integrate_velocity` computes it.
#[inline(always)]
fn jacobian_column<L: Lanes>(e: V3<L>, ie: L, wm: V3<L>, iw: V3<L>, half_h: L) -> V3<L> {
    e.scale(ie).add(wm.cross(e).scale(ie).sub(iw.cross(e)).scale(half_h))
}

/// `stages::integrate_velocity` for `L::N` bodies at once, one per lane: the same arithmetic in
/// the same order (the Newton steps' products with the unit axes included), so the same bits.
/// Only dynamic bodies are written.
#[inline(always)]
fn integrate<L: Lanes>(p: &StepParams, bodies: &mut [GpuBody], props: &[GpuBodyProps]) {
    let (bodies, props) = (&mut bodies[..L::N], &props[..L::N]);
    let (zero, one, h) = (L::splat(0.0), L::splat(1.0), L::splat(p.h));
    let g = p.gravity;
    let gravity = V3 { x: L::splat(g.x), y: L::splat(g.y), z: L::splat(g.z) };
    let inv_mass = L::from_fn(|l| bodies[l].inv_mass);
    let accel = gravity.add(V3::gather(|l| props[l].force).scale(inv_mass));
    let linear_damping = L::from_fn(|l| props[l].linear_damping);
    let angular_damping = L::from_fn(|l| props[l].angular_damping);
    let v = V3::gather(|l| bodies[l].linear_velocity).add(accel.scale(h)).scale(one / (one + h * linear_damping));
    let inv_inertia = V3::gather(|l| props[l].inv_inertia);
    let inertia = V3 { x: one / inv_inertia.x, y: one / inv_inertia.y, z: one / inv_inertia.z };
    let q = Q4::gather(|l| bodies[l].orientation);
    let q_inv = Q4 { u: q.u.neg(), w: q.w };
    // The torque's impulse first, then the gyroscopic term from the velocity it leaves.
    let kick = inv_inertia.scale(h).times(q_inv.rotate(V3::gather(|l| props[l].torque)));
    let w0 = q_inv.rotate(V3::gather(|l| bodies[l].angular_velocity)).add(kick);
    let half_h = L::splat(0.5 * p.h);
    let axes = [V3 { x: one, y: zero, z: zero }, V3 { x: zero, y: one, z: zero }, V3 { x: zero, y: zero, z: one }];
    let mut wm = w0;
    for _ in 0..2 {
        // No closures here: a closure is a function of its own, compiled without AVX.
        let iw = inertia.times(wm);
        let residual = inertia.times(wm.sub(w0)).add(wm.cross(iw).scale(half_h));
        let (jx, jy, jz) = (
            jacobian_column(axes[0], inertia.x, wm, iw, half_h),
            jacobian_column(axes[1], inertia.y, wm, iw, half_h),
            jacobian_column(axes[2], inertia.z, wm, iw, half_h),
        );
        // `mat3_inverse`: the rows are the columns' cross products over the determinant.
        let (r0, r1, r2) = (jy.cross(jz), jz.cross(jx), jx.cross(jy));
        let inv_det = one / jx.dot(r0);
        let (s0, s1, s2) = (r0.scale(inv_det), r1.scale(inv_det), r2.scale(inv_det));
        let inverse = M3 {
            x_axis: V3 { x: s0.x, y: s1.x, z: s2.x },
            y_axis: V3 { x: s0.y, y: s1.y, z: s2.y },
            z_axis: V3 { x: s0.z, y: s1.z, z: s2.z },
        };
        wm = wm.sub(inverse.mul(residual));
    }
    let w = q.rotate(wm.scale(L::splat(2.0)).sub(w0)).scale(one / (one + h * angular_damping));
    let angle = w.dot(w).sqrt() * h;
    let max = L::splat(p.max_rotation);
    let w = V3::select(angle.gt(max), w.scale(max / angle), w);
    let (v, w) = (v.to_arrays(), w.to_arrays());
    for (l, (b, pr)) in bodies.iter_mut().zip(props).enumerate() {
        if pr.kind == KIND_DYNAMIC {
            (b.linear_velocity, b.angular_velocity) = (lane(&v, l), lane(&w, l));
        }
    }
}

/// [`crate::math::quat_mul`] in each lane.
#[inline(always)]
fn quat_mul<L: Lanes>(a: &Q4<L>, b: &Q4<L>) -> Q4<L> {
    let (a, b, aw, bw) = (a.u, b.u, a.w, b.w);
    Q4 {
        u: V3 {
            x: aw * b.x + a.x * bw + a.y * b.z - a.z * b.y,
            y: aw * b.y - a.x * b.z + a.y * bw + a.z * b.x,
            z: aw * b.z + a.x * b.y - a.y * b.x + a.z * bw,
        },
        w: aw * bw - a.x * b.x - a.y * b.y - a.z * b.z,
    }
}

/// [`crate::math::quat_normalize`] in each lane.
#[inline(always)]
fn quat_normalize<L: Lanes>(q: &Q4<L>) -> Q4<L> {
    let inv = L::splat(1.0) / (q.u.x * q.u.x + q.u.y * q.u.y + q.u.z * q.u.z + q.w * q.w).sqrt();
    Q4 { u: q.u.scale(inv), w: q.w * inv }
}

/// `stages::integrate_positions` for `L::N` bodies at once, one per lane: the same arithmetic
/// in the same order, so the same bits; static bodies are not written. The exponential map
/// runs its series directly, so when a lane turns by more than its range in the substep (the
/// scalar code then halves the angle first) nothing is written and this returns `false`, for
/// the caller to move those bodies one at a time.
#[inline(always)]
fn integrate_positions<L: Lanes>(
    h: f32,
    bodies: &mut [GpuBody],
    solver_bodies: &mut [GpuSolverBody],
    props: &[GpuBodyProps],
) -> bool {
    let (bodies, solver_bodies, props) = (&mut bodies[..L::N], &mut solver_bodies[..L::N], &props[..L::N]);
    let hl = L::splat(h);
    let theta = V3::gather(|l| bodies[l].angular_velocity).scale(hl);
    let half = L::splat(0.5) * theta.dot(theta).sqrt();
    let beyond = half.gt(L::splat(crate::math::EXP_MAP_MAX_HALF_ANGLE));
    let beyond = L::select(beyond, L::splat(1.0), L::splat(0.0)).to_array();
    if (0..L::N).any(|l| beyond[l] != 0.0) {
        return false;
    }
    // `quat_exp` without halvings: sin(x)/x and cos(x) by Horner, the vector part
    // `theta * (sinc * 0.5 / 1)`.
    let x2 = half * half;
    // (No closures here: a closure is a function of its own, compiled without AVX.)
    let one = L::splat(1.0);
    let sinc = one
        + x2 * (L::splat(-1.0 / 6.0)
            + x2 * (L::splat(1.0 / 120.0) + x2 * (L::splat(-1.0 / 5040.0) + x2 * L::splat(1.0 / 362_880.0))));
    let cos = one
        + x2 * (L::splat(-0.5)
            + x2 * (L::splat(1.0 / 24.0) + x2 * (L::splat(-1.0 / 720.0) + x2 * L::splat(1.0 / 40_320.0))));
    let scale = sinc * L::splat(0.5) / one;
    let dq = Q4 { u: theta.scale(scale), w: cos };
    let dx = V3::gather(|l| bodies[l].linear_velocity).scale(hl);
    let position = V3::gather(|l| bodies[l].position).add(dx);
    let orientation = quat_normalize(&quat_mul(&dq, &Q4::gather(|l| bodies[l].orientation)));
    let delta_position = V3::gather(|l| solver_bodies[l].delta_position).add(dx);
    let delta_rotation = quat_normalize(&quat_mul(&dq, &Q4::gather(|l| solver_bodies[l].delta_rotation)));
    let (position, delta_position) = (position.to_arrays(), delta_position.to_arrays());
    let (orientation_u, delta_u) = (orientation.u.to_arrays(), delta_rotation.u.to_arrays());
    let (orientation_w, delta_w) = (orientation.w.to_array(), delta_rotation.w.to_array());
    for (l, ((b, sb), pr)) in bodies.iter_mut().zip(solver_bodies.iter_mut()).zip(props).enumerate() {
        if pr.kind == KIND_STATIC {
            continue;
        }
        let (u, du) = (lane(&orientation_u, l), lane(&delta_u, l));
        b.position = lane(&position, l);
        b.orientation = Quat::from_xyzw(u.x, u.y, u.z, orientation_w[l]);
        sb.delta_position = lane(&delta_position, l);
        sb.delta_rotation = Quat::from_xyzw(du.x, du.y, du.z, delta_w[l]);
    }
    // The world inverse inertia at the new orientations (`stages::substep_inertia`).
    let mut inertia = [Mat3::ZERO; 16];
    world_inertia::<L>(bodies, props, &mut inertia);
    for ((sb, pr), inv) in solver_bodies.iter_mut().zip(props).zip(inertia) {
        if pr.kind != KIND_STATIC {
            sb.inv_inertia_world = [inv.x_axis.extend(0.0), inv.y_axis.extend(0.0), inv.z_axis.extend(0.0)];
        }
    }
    true
}

/// A polytope's world points (`position + rotate(q, p)`, `w` zero) then world face planes (the
/// turned normal and `offset + n · position`) from its `points` and `planes` in its frame,
/// `L::N` at a time, the rest one by one: `Posed::world_into`'s arithmetic, so the same bits.
#[inline(always)]
fn world<L: Lanes>(q: Quat, position: Vec3, points: &[Vec4], planes: &[Vec4], out: &mut [Vec4]) {
    let (out_points, out_planes) = out.split_at_mut(points.len());
    let turn = Q4 { u: V3 { x: L::splat(q.x), y: L::splat(q.y), z: L::splat(q.z) }, w: L::splat(q.w) };
    let at = V3 { x: L::splat(position.x), y: L::splat(position.y), z: L::splat(position.z) };
    let mut groups = points.chunks_exact(L::N).zip(out_points.chunks_exact_mut(L::N));
    for (local, world) in &mut groups {
        let [x, y, z, _] = L::transpose4(|l| local[l].as_ref());
        let p = at.add(turn.rotate(V3 { x, y, z }));
        L::untranspose4([p.x, p.y, p.z, L::splat(0.0)], |l, row| world[l] = Vec4::from_array(row));
    }
    let done = points.len() / L::N * L::N;
    for (local, world) in points[done..].iter().zip(&mut out_points[done..]) {
        *world = (position + rotate(q, local.truncate())).extend(0.0);
    }
    let mut groups = planes.chunks_exact(L::N).zip(out_planes.chunks_exact_mut(L::N));
    for (local, world) in &mut groups {
        let [x, y, z, offset] = L::transpose4(|l| local[l].as_ref());
        let n = turn.rotate(V3 { x, y, z });
        L::untranspose4([n.x, n.y, n.z, offset + n.dot(at)], |l, row| world[l] = Vec4::from_array(row));
    }
    let done = planes.len() / L::N * L::N;
    for (local, world) in planes[done..].iter().zip(&mut out_planes[done..]) {
        let n = rotate(q, local.truncate());
        *world = n.extend(local.w + n.dot(position));
    }
}

/// A biased (`use_bias`) or relax sweep over four manifolds of one color (their bodies,
/// `heads`, and their `impulses`, which it updates), none of which can bounce and none split,
/// with their `prepared` data and the soft coefficients against static geometry and between
/// bodies (`softs`); `motions` are every body's before the sweep, and `out[l]` gets manifold
/// `l`'s bodies' velocities after it (v_a, ω_a, v_b, ω_b).
#[allow(clippy::too_many_arguments)]
pub(super) fn solve4(
    p: &StepParams,
    heads: &[SweepHead],
    impulses: &mut [PointImpulses],
    prepared: &[Prepared],
    motions: &[Motion],
    softs: (Soft, Soft),
    use_bias: bool,
    out: &mut [[Vec3; 4]],
) {
    solve::<Vec4>(p, heads, impulses, prepared, motions, softs, use_bias, out);
}

/// [`solve4`] over eight manifolds: in the eight lanes of an AVX register where `simd` allows
/// (the processor has AVX), else four at a time; the same bits either way.
#[allow(clippy::too_many_arguments)]
pub(super) fn solve8(
    simd: Simd,
    p: &StepParams,
    heads: &[SweepHead],
    impulses: &mut [PointImpulses],
    prepared: &[Prepared],
    motions: &[Motion],
    softs: (Soft, Soft),
    use_bias: bool,
    out: &mut [[Vec3; 4]],
) {
    // Read only where the wider lane code exists.
    #[cfg(not(target_arch = "x86_64"))]
    let _ = simd;
    #[cfg(target_arch = "x86_64")]
    if simd.eight {
        // SAFETY: the processor has AVX (`Simd::new`).
        unsafe { solve8_avx(p, heads, impulses, prepared, motions, softs, use_bias, out) };
        return;
    }
    let (impulses, out) = (impulses.split_at_mut(4), out.split_at_mut(4));
    solve4(p, &heads[..4], impulses.0, &prepared[..4], motions, softs, use_bias, out.0);
    solve4(p, &heads[4..8], &mut impulses.1[..4], &prepared[4..8], motions, softs, use_bias, &mut out.1[..4]);
}

/// [`solve8`] over sixteen manifolds: in one AVX-512 register where `simd` allows (the
/// processor has AVX-512F), else eight at a time; the same bits either way.
#[allow(clippy::too_many_arguments)]
pub(super) fn solve16(
    simd: Simd,
    p: &StepParams,
    heads: &[SweepHead],
    impulses: &mut [PointImpulses],
    prepared: &[Prepared],
    motions: &[Motion],
    softs: (Soft, Soft),
    use_bias: bool,
    out: &mut [[Vec3; 4]],
) {
    #[cfg(target_arch = "x86_64")]
    if simd.sixteen {
        // SAFETY: the processor has AVX-512F (`Simd::new`).
        unsafe { solve16_avx512(p, heads, impulses, prepared, motions, softs, use_bias, out) };
        return;
    }
    let (impulses, out) = (impulses.split_at_mut(8), out.split_at_mut(8));
    solve8(simd, p, &heads[..8], impulses.0, &prepared[..8], motions, softs, use_bias, out.0);
    solve8(simd, p, &heads[8..16], &mut impulses.1[..8], &prepared[8..16], motions, softs, use_bias, &mut out.1[..8]);
}

#[cfg(target_arch = "x86_64")]
#[allow(clippy::too_many_arguments)]
#[target_feature(enable = "avx512f")]
fn solve16_avx512(
    p: &StepParams,
    heads: &[SweepHead],
    impulses: &mut [PointImpulses],
    prepared: &[Prepared],
    motions: &[Motion],
    softs: (Soft, Soft),
    use_bias: bool,
    out: &mut [[Vec3; 4]],
) {
    solve::<avx512::F16>(p, heads, impulses, prepared, motions, softs, use_bias, out);
}

#[cfg(target_arch = "x86_64")]
#[allow(clippy::too_many_arguments)]
#[target_feature(enable = "avx")]
fn solve8_avx(
    p: &StepParams,
    heads: &[SweepHead],
    impulses: &mut [PointImpulses],
    prepared: &[Prepared],
    motions: &[Motion],
    softs: (Soft, Soft),
    use_bias: bool,
    out: &mut [[Vec3; 4]],
) {
    solve::<avx::F8>(p, heads, impulses, prepared, motions, softs, use_bias, out);
}

/// The warm start's terms ([`WarmPoint`]) of the `L::N` manifolds at `slots` in `colored`
/// order (their `heads`, `impulses` and `prepared` data), between bodies with `motions'`
/// inverse inertia, for all four points (those a manifold lacks are never read), to `out` in
/// the order of `slots`: the arithmetic of `WarmPoint::new` in each lane, so the same bits.
#[inline(always)]
fn warm_terms<L: Lanes>(
    slots: &[u32],
    heads: &[SweepHead],
    impulses: &[PointImpulses],
    prepared: &[Prepared],
    motions: &[Motion],
    out: &mut [[WarmPoint; 4]],
) {
    let (slots, out) = (&slots[..L::N], &mut out[..L::N]);
    let slot = |l: usize| slots[l] as usize;
    let ma = Motions::<L>::gather(|l| &motions[heads[slot(l)].a as usize]);
    let mb = Motions::<L>::gather(|l| &motions[heads[slot(l)].b as usize]);
    let rows = |l: usize| bytemuck::cast_ref::<Prepared, [[f32; 8]; 8]>(&prepared[slot(l)]);
    // Point 3's masses row (its last) holds nothing read here.
    let q = PreparedLanes([
        L::transpose8(|l| &rows(l)[0]),
        L::transpose8(|l| &rows(l)[1]),
        L::transpose8(|l| &rows(l)[2]),
        L::transpose8(|l| &rows(l)[3]),
        L::transpose8(|l| &rows(l)[4]),
        L::transpose8(|l| &rows(l)[5]),
        L::transpose8(|l| &rows(l)[6]),
        [L::splat(0.0); 8],
    ]);
    let (t1, t2) = (V3 { x: q[13], y: q[14], z: q[15] }, V3 { x: q[29], y: q[30], z: q[31] });
    let n = V3 { x: q[45], y: q[46], z: q[47] };
    let zero = L::splat(0.0);
    for k in 0..4 {
        let [normal, j1, j2, _] = L::transpose4(|l| &impulses[slot(l)][k]);
        let j = n.scale(normal).add(t1.scale(j1)).add(t2.scale(j2));
        let g = 16 * k;
        let (ra, rb) = (V3 { x: q[g], y: q[g + 1], z: q[g + 2] }, V3 { x: q[g + 3], y: q[g + 4], z: q[g + 5] });
        let (wa, wb) = (ma.inv_inertia.mul(ra.cross(j.neg())), mb.inv_inertia.mul(rb.cross(j)));
        L::untranspose8([j.x, j.y, j.z, wa.x, wa.y, wa.z, wb.x, wb.y], |l, row| out[l][k].head = row);
        L::untranspose4([wb.z, zero, zero, zero], |l, row| out[l][k].tail = row);
    }
}

/// [`warm_terms`] of four manifolds.
pub(super) fn warm_terms4(
    slots: &[u32],
    heads: &[SweepHead],
    impulses: &[PointImpulses],
    prepared: &[Prepared],
    motions: &[Motion],
    out: &mut [[WarmPoint; 4]],
) {
    warm_terms::<Vec4>(slots, heads, impulses, prepared, motions, out);
}

/// [`warm_terms4`] of eight manifolds: in the eight lanes of an AVX register where `simd`
/// allows, else four at a time; the same bits either way.
pub(super) fn warm_terms8(
    simd: Simd,
    slots: &[u32],
    heads: &[SweepHead],
    impulses: &[PointImpulses],
    prepared: &[Prepared],
    motions: &[Motion],
    out: &mut [[WarmPoint; 4]],
) {
    #[cfg(not(target_arch = "x86_64"))]
    let _ = simd;
    #[cfg(target_arch = "x86_64")]
    if simd.eight {
        // SAFETY: the processor has AVX (`Simd::new`).
        unsafe { warm_terms8_avx(slots, heads, impulses, prepared, motions, out) };
        return;
    }
    let out = out.split_at_mut(4);
    warm_terms4(&slots[..4], heads, impulses, prepared, motions, out.0);
    warm_terms4(&slots[4..8], heads, impulses, prepared, motions, &mut out.1[..4]);
}

/// [`warm_terms8`] of sixteen manifolds: in one AVX-512 register where `simd` allows, else
/// eight at a time; the same bits either way.
pub(super) fn warm_terms16(
    simd: Simd,
    slots: &[u32],
    heads: &[SweepHead],
    impulses: &[PointImpulses],
    prepared: &[Prepared],
    motions: &[Motion],
    out: &mut [[WarmPoint; 4]],
) {
    #[cfg(target_arch = "x86_64")]
    if simd.sixteen {
        // SAFETY: the processor has AVX-512F (`Simd::new`).
        unsafe { warm_terms16_avx512(slots, heads, impulses, prepared, motions, out) };
        return;
    }
    let out = out.split_at_mut(8);
    warm_terms8(simd, &slots[..8], heads, impulses, prepared, motions, out.0);
    warm_terms8(simd, &slots[8..16], heads, impulses, prepared, motions, &mut out.1[..8]);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
fn warm_terms16_avx512(
    slots: &[u32],
    heads: &[SweepHead],
    impulses: &[PointImpulses],
    prepared: &[Prepared],
    motions: &[Motion],
    out: &mut [[WarmPoint; 4]],
) {
    warm_terms::<avx512::F16>(slots, heads, impulses, prepared, motions, out);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx")]
fn warm_terms8_avx(
    slots: &[u32],
    heads: &[SweepHead],
    impulses: &[PointImpulses],
    prepared: &[Prepared],
    motions: &[Motion],
    out: &mut [[WarmPoint; 4]],
) {
    warm_terms::<avx::F8>(slots, heads, impulses, prepared, motions, out);
}

/// `prepare`'s work for four manifolds (what it reads of them, `ms`), one per lane: each
/// point's lever arms and separation (`geometry`) at the bodies' current poses and its effective masses
/// (`effective_masses`) with `motions`' inverse masses and inertia, and the manifold's own
/// words, written to `out` (see [`prepare`]); the same bits as the one-manifold code.
pub(super) fn prepare4(
    ms: &[PrepareInput],
    bodies: &[GpuBody],
    solver_bodies: &[GpuSolverBody],
    motions: &[Motion],
    out: &mut [Prepared],
) {
    prepare::<Vec4>(ms, bodies, solver_bodies, motions, out);
}

/// [`prepare4`] over eight manifolds: in the eight lanes of an AVX register where `simd`
/// allows (with AVX-512's registers where it allows sixteen lanes and AVX-512VL), else four at
/// a time; the same bits either way.
pub(super) fn prepare8(
    simd: Simd,
    ms: &[PrepareInput],
    bodies: &[GpuBody],
    solver_bodies: &[GpuSolverBody],
    motions: &[Motion],
    out: &mut [Prepared],
) {
    // Read only where the wider lane code exists.
    #[cfg(not(target_arch = "x86_64"))]
    let _ = simd;
    #[cfg(target_arch = "x86_64")]
    if simd.sixteen_vl {
        // SAFETY: the processor has AVX-512F and AVX-512VL (`Simd::new`).
        unsafe { prepare8_avx512(ms, bodies, solver_bodies, motions, out) };
        return;
    }
    #[cfg(target_arch = "x86_64")]
    if simd.eight {
        // SAFETY: the processor has AVX (`Simd::new`).
        unsafe { prepare8_avx(ms, bodies, solver_bodies, motions, out) };
        return;
    }
    let out = out.split_at_mut(4);
    prepare4(&ms[..4], bodies, solver_bodies, motions, out.0);
    prepare4(&ms[4..8], bodies, solver_bodies, motions, out.1);
}

/// [`prepare8_avx`] with AVX-512's thirty-two vector registers (the same instructions on
/// eight lanes, fewer of them spilled to the stack).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx,avx512f,avx512vl")]
fn prepare8_avx512(
    ms: &[PrepareInput],
    bodies: &[GpuBody],
    solver_bodies: &[GpuSolverBody],
    motions: &[Motion],
    out: &mut [Prepared],
) {
    prepare::<avx::F8>(ms, bodies, solver_bodies, motions, out);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx")]
fn prepare8_avx(
    ms: &[PrepareInput],
    bodies: &[GpuBody],
    solver_bodies: &[GpuSolverBody],
    motions: &[Motion],
    out: &mut [Prepared],
) {
    prepare::<avx::F8>(ms, bodies, solver_bodies, motions, out);
}

/// The world inverse inertia of `L::N` bodies, `crate::math::world_inverse_inertia` of each
/// dynamic one's orientation and principal inverse inertia (zero for the others), in each lane
/// with the same arithmetic in the same order: the same bits.
#[inline(always)]
fn world_inertia<L: Lanes>(bodies: &[GpuBody], props: &[GpuBodyProps], out: &mut [Mat3]) {
    let (bodies, props, out) = (&bodies[..L::N], &props[..L::N], &mut out[..L::N]);
    let (zero, one) = (L::splat(0.0), L::splat(1.0));
    let q = Q4::<L>::gather(|l| bodies[l].orientation);
    let d = V3::<L>::gather(|l| props[l].inv_inertia);
    let dynamic = L::from_fn(|l| if props[l].kind == KIND_DYNAMIC { 1.0 } else { 0.0 }).ne(zero);
    // The rotated axes, then column `j` of `R D R^T`, `sum_k d_k c_k (c_k)_j`.
    let c0 = q.rotate(V3 { x: one, y: zero, z: zero });
    let c1 = q.rotate(V3 { x: zero, y: one, z: zero });
    let c2 = q.rotate(V3 { x: zero, y: zero, z: one });
    let (x, y, z) = (
        c0.scale(d.x * c0.x).add(c1.scale(d.y * c1.x)).add(c2.scale(d.z * c2.x)),
        c0.scale(d.x * c0.y).add(c1.scale(d.y * c1.y)).add(c2.scale(d.z * c2.y)),
        c0.scale(d.x * c0.z).add(c1.scale(d.y * c1.z)).add(c2.scale(d.z * c2.z)),
    );
    // No closure here: it would be a function of its own, compiled without AVX.
    let (x, y, z) = (
        V3::select(dynamic, x, V3::zero()).to_arrays(),
        V3::select(dynamic, y, V3::zero()).to_arrays(),
        V3::select(dynamic, z, V3::zero()).to_arrays(),
    );
    for (l, out) in out.iter_mut().enumerate() {
        *out = Mat3::from_cols(lane(&x, l), lane(&y, l), lane(&z, l));
    }
}

/// [`world_inertia`] of four bodies.
pub(super) fn world_inertia4(bodies: &[GpuBody], props: &[GpuBodyProps], out: &mut [Mat3]) {
    world_inertia::<Vec4>(bodies, props, out);
}

/// [`world_inertia4`] of eight bodies: in the eight lanes of an AVX register where `simd`
/// allows, else four at a time; the same bits either way.
pub(super) fn world_inertia8(simd: Simd, bodies: &[GpuBody], props: &[GpuBodyProps], out: &mut [Mat3]) {
    // Read only where the wider lane code exists.
    #[cfg(not(target_arch = "x86_64"))]
    let _ = simd;
    #[cfg(target_arch = "x86_64")]
    if simd.eight {
        // SAFETY: the processor has AVX (`Simd::new`).
        unsafe { world_inertia8_avx(bodies, props, out) };
        return;
    }
    let (low, high) = out.split_at_mut(4);
    world_inertia4(&bodies[..4], &props[..4], low);
    world_inertia4(&bodies[4..8], &props[4..8], &mut high[..4]);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx")]
fn world_inertia8_avx(bodies: &[GpuBody], props: &[GpuBodyProps], out: &mut [Mat3]) {
    world_inertia::<avx::F8>(bodies, props, out);
}

/// [`integrate`] of four bodies.
pub(super) fn integrate4(p: &StepParams, bodies: &mut [GpuBody], props: &[GpuBodyProps]) {
    integrate::<Vec4>(p, bodies, props);
}

/// [`integrate`] of eight bodies: in the eight lanes of an AVX register where `simd` allows,
/// else four at a time; the same bits either way.
pub(super) fn integrate8(simd: Simd, p: &StepParams, bodies: &mut [GpuBody], props: &[GpuBodyProps]) {
    // Read only where the wider lane code exists.
    #[cfg(not(target_arch = "x86_64"))]
    let _ = simd;
    #[cfg(target_arch = "x86_64")]
    if simd.eight {
        // SAFETY: the processor has AVX (`Simd::new`).
        unsafe { integrate8_avx(p, bodies, props) };
        return;
    }
    let (low, high) = bodies.split_at_mut(4);
    integrate4(p, low, &props[..4]);
    integrate4(p, &mut high[..4], &props[4..8]);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx")]
fn integrate8_avx(p: &StepParams, bodies: &mut [GpuBody], props: &[GpuBodyProps]) {
    integrate::<avx::F8>(p, bodies, props);
}

/// [`integrate_positions`] of four bodies.
pub(super) fn integrate_positions4(
    h: f32,
    bodies: &mut [GpuBody],
    solver_bodies: &mut [GpuSolverBody],
    props: &[GpuBodyProps],
) -> bool {
    integrate_positions::<Vec4>(h, bodies, solver_bodies, props)
}

/// [`integrate_positions`] of eight bodies: in the eight lanes of an AVX register where
/// `simd` allows, else four at a time; the same bits either way.
pub(super) fn integrate_positions8(
    simd: Simd,
    h: f32,
    bodies: &mut [GpuBody],
    solver_bodies: &mut [GpuSolverBody],
    props: &[GpuBodyProps],
) -> bool {
    // Read only where the wider lane code exists.
    #[cfg(not(target_arch = "x86_64"))]
    let _ = simd;
    #[cfg(target_arch = "x86_64")]
    if simd.eight {
        // SAFETY: the processor has AVX (`Simd::new`).
        return unsafe { integrate_positions8_avx(h, bodies, solver_bodies, props) };
    }
    // Both halves or neither: the caller moves all eight one at a time on `false`.
    let in_range = |b: &GpuBody| 0.5 * (h * b.angular_velocity).length() <= crate::math::EXP_MAP_MAX_HALF_ANGLE;
    if !bodies[..8].iter().all(in_range) {
        return false;
    }
    let ((low, high), (low_s, high_s)) = (bodies.split_at_mut(4), solver_bodies.split_at_mut(4));
    integrate_positions4(h, low, low_s, &props[..4]) && integrate_positions4(h, high, high_s, &props[4..8])
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx")]
fn integrate_positions8_avx(
    h: f32,
    bodies: &mut [GpuBody],
    solver_bodies: &mut [GpuSolverBody],
    props: &[GpuBodyProps],
) -> bool {
    integrate_positions::<avx::F8>(h, bodies, solver_bodies, props)
}

/// [`world`]: eight at a time in an AVX register where `simd` allows, else four in a `Vec4`;
/// the same bits either way.
pub(super) fn polytope_world(simd: Simd, q: Quat, position: Vec3, points: &[Vec4], planes: &[Vec4], out: &mut [Vec4]) {
    // Read only where the wider lane code exists.
    #[cfg(not(target_arch = "x86_64"))]
    let _ = simd;
    #[cfg(target_arch = "x86_64")]
    if simd.eight {
        // SAFETY: the processor has AVX (`Simd::new`).
        unsafe { world_avx(q, position, points, planes, out) };
        return;
    }
    world::<Vec4>(q, position, points, planes, out);
}

/// [`world`] in four lanes (for the tests: [`polytope_world`] picks the widest).
#[cfg(test)]
pub(super) fn polytope_world4(q: Quat, position: Vec3, points: &[Vec4], planes: &[Vec4], out: &mut [Vec4]) {
    world::<Vec4>(q, position, points, planes, out);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx")]
fn world_avx(q: Quat, position: Vec3, points: &[Vec4], planes: &[Vec4], out: &mut [Vec4]) {
    world::<avx::F8>(q, position, points, planes, out);
}

/// Which of the wider lane codes a CPU solver runs: [`CpuLanes`] as far as this processor
/// allows. Made only by [`Simd::new`], which checks the processor, so that the functions
/// compiled for AVX and AVX-512 run only where those instructions exist.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Simd {
    /// Eight lanes in one AVX register ([`solve8`], [`prepare8`], [`warm_terms8`],
    /// [`world_inertia8`], [`integrate8`], [`integrate_positions8`], [`polytope_world`], the
    /// joints of [`JointKind`]), else four at a time.
    eight: bool,
    /// Sixteen lanes in one AVX-512 register ([`solve16`], [`warm_terms16`], the joints of
    /// [`JointKind`]), else eight at a time.
    sixteen: bool,
    /// The eight-lane preparation with AVX-512's 32 registers (AVX-512F and AVX-512VL).
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    sixteen_vl: bool,
}

impl Simd {
    /// The widest lane code, up to `max`, that this processor runs.
    pub(crate) fn new(max: CpuLanes) -> Self {
        let eight = max >= CpuLanes::Eight && avx_detected();
        let sixteen = eight && max >= CpuLanes::Sixteen && avx512_detected();
        Self { eight, sixteen, sixteen_vl: sixteen && avx512vl_detected() }
    }

    /// The most manifolds (or joints) one sweep takes at once.
    pub(crate) fn widest(self) -> u32 {
        if self.sixteen {
            16
        } else if self.eight {
            8
        } else {
            4
        }
    }
}

/// Whether the processor has AVX-512F.
fn avx512_detected() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::is_x86_feature_detected!("avx512f")
    }
    #[cfg(not(target_arch = "x86_64"))]
    false
}

/// Whether the processor has AVX-512VL.
fn avx512vl_detected() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::is_x86_feature_detected!("avx512vl")
    }
    #[cfg(not(target_arch = "x86_64"))]
    false
}

/// Whether the processor has AVX.
fn avx_detected() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::is_x86_feature_detected!("avx")
    }
    #[cfg(not(target_arch = "x86_64"))]
    false
}
