//! Small vector and quaternion routines shared by the CPU reference path and mirrored,
//! operation for operation, in `shaders/common.wgsl`.
//!
//! glam has equivalents for most of these, but the CPU twin of a GPU stage must round the
//! way the shader rounds, so the few formulas the solver uses are written once here in the
//! same order as in WGSL. Quaternions are stored `(x, y, z, w)` in both places.

use glam::{Mat3, Quat, Vec3};

/// Rotates `v` by the unit quaternion `q`: `v + 2w (u x v) + 2 u x (u x v)` with `u = q.xyz`.
#[inline]
pub fn rotate(q: Quat, v: Vec3) -> Vec3 {
    let u = Vec3::new(q.x, q.y, q.z);
    let t = 2.0 * u.cross(v);
    v + q.w * t + u.cross(t)
}

/// Rotates `v` by the inverse of the unit quaternion `q`.
#[inline]
pub fn rotate_inv(q: Quat, v: Vec3) -> Vec3 {
    rotate(Quat::from_xyzw(-q.x, -q.y, -q.z, q.w), v)
}

/// Hamilton product `a * b` (apply `b` first, then `a`).
#[inline]
pub fn quat_mul(a: Quat, b: Quat) -> Quat {
    Quat::from_xyzw(
        a.w * b.x + a.x * b.w + a.y * b.z - a.z * b.y,
        a.w * b.y - a.x * b.z + a.y * b.w + a.z * b.x,
        a.w * b.z + a.x * b.y - a.y * b.x + a.z * b.w,
        a.w * b.w - a.x * b.x - a.y * b.y - a.z * b.z,
    )
}

/// Normalizes a quaternion.
#[inline]
pub fn quat_normalize(q: Quat) -> Quat {
    // Summed in order, as in WGSL (glam's SIMD Vec4 dot adds pairwise).
    let inv = 1.0 / (q.x * q.x + q.y * q.y + q.z * q.z + q.w * q.w).sqrt();
    Quat::from_xyzw(q.x * inv, q.y * inv, q.z * inv, q.w * inv)
}

/// The exponential map: the unit quaternion of the rotation vector `theta` (axis times angle),
/// `exp(theta) = (sin(|theta|/2) theta/|theta|, cos(|theta|/2))`.
///
/// No `sin` or `cos`: GPUs round those differently from the CPU's libm (lavapipe differs in
/// the last bit for a sixth of all inputs), and one bit in an orientation is enough for the
/// CPU and GPU paths to part. Half-angles up to π/8 (a substep rotates at most π/4) use the
/// Taylor series of `sin(x)/x` and `cos(x)` to `x⁸`, exact in f32 there and evaluated by the
/// same Horner steps as in WGSL; larger angles (kinematic bodies) are halved until they fit
/// and the result squared back.
#[inline]
pub fn quat_exp(theta: Vec3) -> Quat {
    let mut half = 0.5 * theta.length();
    let mut halvings = 0;
    while half > EXP_MAP_MAX_HALF_ANGLE && halvings < 64 {
        half *= 0.5;
        halvings += 1;
    }
    let x2 = half * half;
    // sin(x)/x and cos(x) by Horner.
    let sinc = 1.0 + x2 * (-1.0 / 6.0 + x2 * (1.0 / 120.0 + x2 * (-1.0 / 5040.0 + x2 * (1.0 / 362_880.0))));
    let cos = 1.0 + x2 * (-0.5 + x2 * (1.0 / 24.0 + x2 * (-1.0 / 720.0 + x2 * (1.0 / 40_320.0))));
    // The vector part is sin(half) theta/|theta| = sinc(half) half theta/|theta| = sinc(half) theta/2^(k+1).
    let scale = sinc * 0.5 / (1u64 << halvings) as f32;
    let mut q = Quat::from_xyzw(theta.x * scale, theta.y * scale, theta.z * scale, cos);
    for _ in 0..halvings {
        // Squaring doubles the angle: (w, v)² = (w² - v·v, 2 w v).
        let v = Vec3::new(q.x, q.y, q.z);
        let w = q.w * q.w - v.dot(v);
        let v = 2.0 * q.w * v;
        q = Quat::from_xyzw(v.x, v.y, v.z, w);
    }
    q
}

/// Largest half-angle the exponential map's series handles directly, rad (π/8).
pub const EXP_MAP_MAX_HALF_ANGLE: f32 = std::f32::consts::FRAC_PI_8;

/// A right-handed orthonormal tangent basis `(t1, t2)` with `t1 x t2 = n`, a continuous
/// function of `n` except across `n.z = 0` (Duff et al. 2017, "Building an orthonormal basis,
/// revisited"). Deterministic, so CPU and GPU derive the same friction directions.
#[inline]
pub fn tangent_basis(n: Vec3) -> (Vec3, Vec3) {
    let sign = if n.z >= 0.0 { 1.0 } else { -1.0 };
    let a = -1.0 / (sign + n.z);
    let b = n.x * n.y * a;
    let t1 = Vec3::new(1.0 + sign * n.x * n.x * a, sign * b, -sign * n.x);
    let t2 = Vec3::new(b, sign + n.y * n.y * a, -n.y);
    (t1, t2)
}

/// A friction impulse `(j1, j2)` held in the [`tangent_basis`] of `old_normal`, re-expressed
/// in the basis of `normal`: through world space, less what now lies along the normal. A
/// warm start needs it because the basis is not continuous across `n.z = 0`: there it turns
/// by up to half a turn (for `n = ±x`, exactly half), and components carried over unchanged
/// pushed a contact's friction the wrong way whenever its normal dithered across the plane.
/// When the normals are equal the components are returned as they are. Twin of
/// `carry_tangent_impulse` in shaders/common.wgsl.
#[inline]
pub fn carry_tangent_impulse(old_normal: Vec3, normal: Vec3, j1: f32, j2: f32) -> (f32, f32) {
    if old_normal == normal {
        return (j1, j2);
    }
    let (o1, o2) = tangent_basis(old_normal);
    let (t1, t2) = tangent_basis(normal);
    let j = j1 * o1 + j2 * o2;
    (j.dot(t1), j.dot(t2))
}

/// The world-frame inverse inertia `R diag(inv_principal) R^T` of a body whose orientation
/// `q` maps its principal frame to the world.
#[inline]
pub fn world_inverse_inertia(q: Quat, inv_principal: Vec3) -> Mat3 {
    let c0 = rotate(q, Vec3::X);
    let c1 = rotate(q, Vec3::Y);
    let c2 = rotate(q, Vec3::Z);
    // Column j of R D R^T is sum_k d_k c_k (c_k)_j.
    let col =
        |j: usize| c0 * (inv_principal.x * c0[j]) + c1 * (inv_principal.y * c1[j]) + c2 * (inv_principal.z * c2[j]);
    Mat3::from_cols(col(0), col(1), col(2))
}

/// Inverse of a 3x3 matrix by cofactors; the caller guarantees it is invertible.
#[inline]
pub fn mat3_inverse(m: Mat3) -> Mat3 {
    let r0 = m.y_axis.cross(m.z_axis);
    let r1 = m.z_axis.cross(m.x_axis);
    let r2 = m.x_axis.cross(m.y_axis);
    let inv_det = 1.0 / m.x_axis.dot(r0);
    Mat3::from_cols(r0 * inv_det, r1 * inv_det, r2 * inv_det).transpose()
}

/// Kinetic energy `½ m v² + ½ ω_bᵀ I ω_b` of a body with inverse mass `inv_mass`, inverse
/// principal inertia `inv_inertia` and orientation `q` (its principal frame), J.
#[inline]
pub fn kinetic_energy(inv_mass: f32, inv_inertia: Vec3, q: Quat, v: Vec3, w: Vec3) -> f32 {
    let wb = rotate_inv(q, w);
    0.5 * v.dot(v) / inv_mass + 0.5 * wb.dot(wb / inv_inertia)
}

/// The angle of `(x, y)`, in `[-π, π]`, as `atan2` within 2e-6 rad (tested), from a
/// polynomial: GPUs round `atan2` differently from the CPU's libm, and the twin in
/// shaders/common.wgsl runs these operations in this order. `(0, 0)` gives 0.
#[inline]
pub fn angle_of(x: f32, y: f32) -> f32 {
    let (ax, ay) = (x.abs(), y.abs());
    let (big, small) = (ax.max(ay), ax.min(ay));
    let a = if big > 0.0 { small / big } else { 0.0 };
    let s = a * a;
    // atan(a) on [0, 1], odd, to the eleventh power.
    let mut r = (((((-0.011_721_2 * s + 0.052_653_32) * s - 0.116_432_87) * s + 0.193_543_46) * s - 0.332_623_47) * s
        + 0.999_977_26)
        * a;
    if ay > ax {
        r = std::f32::consts::FRAC_PI_2 - r;
    }
    if x < 0.0 {
        r = std::f32::consts::PI - r;
    }
    if y < 0.0 { -r } else { r }
}

/// Coefficients of a soft constraint (Catto, "Solver2D"/Box2D v3 soft step): a spring of
/// frequency `hertz` and damping ratio `zeta` integrated implicitly over a substep `h`.
///
/// With `omega = 2 pi hertz`, `a1 = 2 zeta + h omega`, `a2 = h omega a1`, `a3 = 1 / (1 + a2)`:
/// the velocity bias is `bias_rate * separation`, the solved impulse is scaled by
/// `mass_scale = a2 a3` and `impulse_scale = a3` of the accumulated impulse is bled off. A rigid
/// constraint (`hertz = 0`) has `bias_rate = 0`, `mass_scale = 1`, `impulse_scale = 0`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Softness {
    /// Velocity bias per metre of penetration, 1/s.
    pub bias_rate: f32,
    /// Fraction of the rigid impulse applied.
    pub mass_scale: f32,
    /// Fraction of the accumulated impulse removed per solve.
    pub impulse_scale: f32,
}

impl Softness {
    /// The soft-constraint coefficients for a spring of `hertz` and damping ratio `zeta` over a substep `h`.
    pub fn new(hertz: f32, zeta: f32, h: f32) -> Self {
        if hertz == 0.0 {
            return Self { bias_rate: 0.0, mass_scale: 1.0, impulse_scale: 0.0 };
        }
        let omega = 2.0 * std::f32::consts::PI * hertz;
        let a1 = 2.0 * zeta + h * omega;
        let a2 = h * omega * a1;
        let a3 = 1.0 / (1.0 + a2);
        Self { bias_rate: omega / a1, mass_scale: a2 * a3, impulse_scale: a3 }
    }
}

/// Whether a length is 1 to f32's precision (within four machine epsilons): what normalizing a
/// vector or quaternion leaves. Inputs that are already unit are stored as given, so that a
/// world's descriptions, normalized once when they were added, are unchanged when added again.
pub(crate) fn is_unit_length(length: f32) -> bool {
    (length - 1.0).abs() <= 4.0 * f32::EPSILON
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rotate_matches_glam() {
        let q = Quat::from_axis_angle(Vec3::new(1.0, 2.0, -0.5).normalize(), 1.3);
        let v = Vec3::new(0.3, -2.0, 5.0);
        assert!((rotate(q, v) - q * v).length() < 1e-5);
        assert!((rotate_inv(q, rotate(q, v)) - v).length() < 1e-5);
        let p = Quat::from_axis_angle(Vec3::Z, 0.4);
        assert!((quat_mul(q, p) - q * p).length() < 1e-6);
    }

    #[test]
    fn exp_map_is_axis_angle() {
        let axis = Vec3::new(0.2, -0.7, 0.4).normalize();
        for angle in [0.0_f32, 1e-6, 1e-3, 0.5, 0.785, 3.0, 10.0, 100.0] {
            let q = quat_exp(axis * angle);
            let r = Quat::from_axis_angle(axis, angle);
            // f32 carries the angle itself only to 6e-8 relative, so the tolerance grows with it.
            let tol = 1e-6 * angle.max(1.0);
            assert!((q - r).length() < tol || (q + r).length() < tol, "angle {angle}: {q} vs {r}");
            assert!((q.length() - 1.0).abs() < tol, "angle {angle}: |q| = {}", q.length());
        }
    }

    #[test]
    fn tangent_basis_is_orthonormal_and_right_handed() {
        for n in [Vec3::Y, -Vec3::Y, Vec3::Z, -Vec3::Z, Vec3::new(0.3, 0.9, -0.2).normalize()] {
            let (t1, t2) = tangent_basis(n);
            assert!((t1.length() - 1.0).abs() < 1e-6 && (t2.length() - 1.0).abs() < 1e-6);
            assert!(t1.dot(n).abs() < 1e-6 && t2.dot(n).abs() < 1e-6 && t1.dot(t2).abs() < 1e-6);
            assert!((t1.cross(t2) - n).length() < 1e-5, "n = {n}");
        }
    }

    #[test]
    fn world_inertia_and_inverse() {
        let q = Quat::from_axis_angle(Vec3::new(1.0, 1.0, 0.0).normalize(), 0.7);
        let d = Vec3::new(1.0, 2.0, 4.0);
        let m = world_inverse_inertia(q, d);
        let r = Mat3::from_quat(q);
        let expect = r * Mat3::from_diagonal(d) * r.transpose();
        assert!((m - expect).to_cols_array().iter().all(|e| e.abs() < 1e-5));
        let inv = mat3_inverse(m);
        assert!(((inv * m) - Mat3::IDENTITY).to_cols_array().iter().all(|e| e.abs() < 1e-5));
    }

    #[test]
    fn angle_of_is_atan2() {
        let mut worst = 0.0_f64;
        for i in 0..20_000 {
            let t = i as f64 / 20_000.0 * std::f64::consts::TAU - std::f64::consts::PI;
            for r in [1e-3_f64, 1.0, 7.5] {
                let (x, y) = ((r * t.cos()) as f32, (r * t.sin()) as f32);
                let exact = (y as f64).atan2(x as f64);
                worst = worst.max((angle_of(x, y) as f64 - exact).abs());
            }
        }
        assert!(worst < 2e-6, "worst error {worst} rad");
        assert_eq!(angle_of(0.0, 0.0), 0.0);
        assert_eq!(angle_of(1.0, 0.0), 0.0);
    }

    #[test]
    fn softness_limits() {
        let rigid = Softness::new(0.0, 1.0, 0.01);
        assert_eq!(rigid, Softness { bias_rate: 0.0, mass_scale: 1.0, impulse_scale: 0.0 });
        let s = Softness::new(30.0, 10.0, 1.0 / 240.0);
        assert!(s.mass_scale > 0.0 && s.mass_scale < 1.0);
        assert!((s.mass_scale + s.impulse_scale - 1.0).abs() < 1e-6);
    }
}
