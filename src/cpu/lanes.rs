//! Four manifolds at once, one in each lane of a `Vec4` (SSE2 on x86-64, plain arrays
//! elsewhere). The sweeps ([`solve4`]) take four manifolds of one color, which share no dynamic
//! body, so the lanes are independent; the preparation ([`prepare4`]) takes any four, since it
//! only reads the bodies. Each lane does exactly the arithmetic of the one-manifold code on its
//! manifold, in the same order (branches become selects): the results are bit for bit those
//! of the manifold-at-a-time code.
//!
//! Only the biased and the relax sweeps go through here (they are 4 of the 5 passes of a
//! substep), and the preparation of lever arms, separations and effective masses after each
//! position update ([`prepare4`]); manifolds that can bounce, the warm start, restitution and
//! the Jacobi overflow keep the manifold-at-a-time code.

use glam::{BVec4A, Mat3, Quat, Vec3, Vec4};

use super::contacts::{Geometry, Motion, Prepared, Soft};
use crate::layout::{GpuBody, GpuManifold, GpuSolverBody, StepParams};
use crate::math::tangent_basis;

/// Four `Vec3`s, one per lane.
#[derive(Clone, Copy)]
struct V3 {
    x: Vec4,
    y: Vec4,
    z: Vec4,
}

impl V3 {
    const ZERO: Self = Self { x: Vec4::ZERO, y: Vec4::ZERO, z: Vec4::ZERO };

    #[inline(always)]
    fn gather(v: [Vec3; 4]) -> Self {
        Self {
            x: Vec4::new(v[0].x, v[1].x, v[2].x, v[3].x),
            y: Vec4::new(v[0].y, v[1].y, v[2].y, v[3].y),
            z: Vec4::new(v[0].z, v[1].z, v[2].z, v[3].z),
        }
    }

    #[inline(always)]
    fn lane(&self, l: usize) -> Vec3 {
        Vec3::new(self.x[l], self.y[l], self.z[l])
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
    fn scale(self, s: Vec4) -> Self {
        Self { x: self.x * s, y: self.y * s, z: self.z * s }
    }

    #[inline(always)]
    fn div(self, s: Vec4) -> Self {
        Self { x: self.x / s, y: self.y / s, z: self.z / s }
    }

    #[inline(always)]
    fn dot(self, o: Self) -> Vec4 {
        self.x * o.x + self.y * o.y + self.z * o.z
    }

    #[inline(always)]
    fn cross(self, o: Self) -> Self {
        Self { x: self.y * o.z - o.y * self.z, y: self.z * o.x - o.z * self.x, z: self.x * o.y - o.x * self.y }
    }

    #[inline(always)]
    fn select(mask: BVec4A, a: Self, b: Self) -> Self {
        Self { x: Vec4::select(mask, a.x, b.x), y: Vec4::select(mask, a.y, b.y), z: Vec4::select(mask, a.z, b.z) }
    }
}

/// Four quaternions, one per lane.
struct Q4 {
    u: V3,
    w: Vec4,
}

impl Q4 {
    #[inline(always)]
    fn gather(q: [Quat; 4]) -> Self {
        Self { u: V3::gather(q.map(|q| Vec3::new(q.x, q.y, q.z))), w: Vec4::new(q[0].w, q[1].w, q[2].w, q[3].w) }
    }

    /// [`crate::math::rotate`] in four lanes.
    #[inline(always)]
    fn rotate(&self, v: V3) -> V3 {
        let t = self.u.cross(v).scale(Vec4::splat(2.0));
        v.add(t.scale(self.w)).add(self.u.cross(t))
    }
}

/// Four `Mat3`s by columns, as glam multiplies them.
#[derive(Clone, Copy)]
struct M3 {
    x_axis: V3,
    y_axis: V3,
    z_axis: V3,
}

impl M3 {
    #[inline(always)]
    fn gather(m: [&Mat3; 4]) -> Self {
        Self {
            x_axis: V3::gather([m[0].x_axis, m[1].x_axis, m[2].x_axis, m[3].x_axis]),
            y_axis: V3::gather([m[0].y_axis, m[1].y_axis, m[2].y_axis, m[3].y_axis]),
            z_axis: V3::gather([m[0].z_axis, m[1].z_axis, m[2].z_axis, m[3].z_axis]),
        }
    }

    #[inline(always)]
    fn mul(&self, v: V3) -> V3 {
        self.x_axis.scale(v.x).add(self.y_axis.scale(v.y)).add(self.z_axis.scale(v.z))
    }
}

/// [`Motion`] of four bodies.
struct Motions {
    v: V3,
    w: V3,
    inv_mass: Vec4,
    inv_inertia: M3,
}

impl Motions {
    #[inline(always)]
    fn gather(m: [&Motion; 4]) -> Self {
        Self {
            v: V3::gather([m[0].v, m[1].v, m[2].v, m[3].v]),
            w: V3::gather([m[0].w, m[1].w, m[2].w, m[3].w]),
            inv_mass: Vec4::new(m[0].inv_mass, m[1].inv_mass, m[2].inv_mass, m[3].inv_mass),
            inv_inertia: M3::gather([&m[0].inv_inertia, &m[1].inv_inertia, &m[2].inv_inertia, &m[3].inv_inertia]),
        }
    }

    #[inline(always)]
    fn apply(&mut self, r: V3, impulse: V3) {
        self.v = self.v.add(impulse.scale(self.inv_mass));
        self.w = self.w.add(self.inv_inertia.mul(r.cross(impulse)));
    }

    #[inline(always)]
    fn at(&self, r: V3) -> V3 {
        self.v.add(self.w.cross(r))
    }

    #[inline(always)]
    fn rotational(&self, r: V3, d: V3, e: V3) -> Vec4 {
        r.cross(d).dot(self.inv_inertia.mul(r.cross(e)))
    }
}

/// One contact point of four manifolds.
struct Point {
    ra: V3,
    rb: V3,
    separation: Vec4,
    /// `k_n`, `k11`, `k12`, `k22`.
    k: [Vec4; 4],
    normal_impulse: Vec4,
    tangent_impulse_1: Vec4,
    tangent_impulse_2: Vec4,
    max_normal_impulse: Vec4,
    /// Whether the point exists in each lane's manifold.
    active: BVec4A,
}

/// Per-lane soft-constraint coefficients, and whether the sweep pushes penetration out.
struct Softs {
    bias_rate: Vec4,
    mass_scale: Vec4,
    impulse_scale: Vec4,
    use_bias: bool,
}

/// `contact_bias` in four lanes.
#[inline(always)]
fn contact_bias(p: &StepParams, soft: &Softs, s: Vec4) -> (Vec4, Vec4, Vec4) {
    let open = s.cmpgt(Vec4::ZERO);
    let (bias, mass_scale, impulse_scale) = if soft.use_bias {
        (
            (soft.bias_rate * (s + Vec4::splat(p.linear_slop)).min(Vec4::ZERO)).max(Vec4::splat(-p.max_push_velocity)),
            soft.mass_scale,
            soft.impulse_scale,
        )
    } else {
        (Vec4::ZERO, Vec4::ONE, Vec4::ZERO)
    };
    (
        Vec4::select(open, s * Vec4::splat(p.inv_h), bias),
        Vec4::select(open, Vec4::ONE, mass_scale),
        Vec4::select(open, Vec4::ZERO, impulse_scale),
    )
}

/// A point's soft coefficients for one sweep, from `contact_bias`, and its compliance
/// (`contact_compliance`).
struct PointBias {
    bias: Vec4,
    mass_scale: Vec4,
    impulse_scale: Vec4,
    compliance: Vec4,
}

/// The impulse per point of one manifold's coarse correction (the Galerkin step of
/// `stages::coarse_correction`) over all its points or the loaded ones, and the smallest
/// normal impulse among them.
#[inline(always)]
fn centroid_step(
    points: &[Point; 4],
    biases: &[PointBias; 4],
    n: V3,
    ma: &Motions,
    mb: &Motions,
    loaded_only: bool,
) -> (Vec4, Vec4) {
    let (mut count, mut ra, mut rb, mut residual, mut compliance, mut j_min) =
        (Vec4::ZERO, V3::ZERO, V3::ZERO, Vec4::ZERO, Vec4::ZERO, Vec4::splat(f32::MAX));
    for (c, b) in points.iter().zip(biases) {
        let on = if loaded_only { c.active & c.normal_impulse.cmpgt(Vec4::ZERO) } else { c.active };
        count += Vec4::select(on, Vec4::ONE, Vec4::ZERO);
        ra = ra.add(V3::select(on, c.ra, V3::ZERO));
        rb = rb.add(V3::select(on, c.rb, V3::ZERO));
        residual += Vec4::select(on, b.bias + b.compliance * c.normal_impulse, Vec4::ZERO);
        compliance += Vec4::select(on, b.compliance, Vec4::ZERO);
        j_min = Vec4::select(on, j_min.min(c.normal_impulse), j_min);
    }
    let enough = count.cmpge(Vec4::splat(2.0));
    let (ra, rb) = (ra.div(count), rb.div(count));
    let k = ma.inv_mass + mb.inv_mass + ma.rotational(ra, n, n) + mb.rotational(rb, n, n);
    let vn = n.dot(mb.at(rb).sub(ma.at(ra)));
    let share = -(count * vn + residual) / (count * count * k + compliance);
    (Vec4::select(enough, share, Vec4::ZERO), Vec4::select(enough, j_min, Vec4::ZERO))
}

/// A biased (`use_bias`) or relax sweep over four manifolds of one color, none of which can
/// bounce and none split, with their prepared data and the soft coefficients against static
/// geometry and between bodies (`softs`); `motions` are every body's before the sweep, and
/// `out[l]` gets lane `l`'s velocities after it (v_a, ω_a, v_b, ω_b).
pub(super) fn solve4(
    p: &StepParams,
    manifolds: [&mut GpuManifold; 4],
    prepared: [&Prepared; 4],
    motions: &[Motion],
    softs: (Soft, Soft),
    use_bias: bool,
    out: &mut [[Vec3; 4]],
) {
    let (statics, contacts) = softs;
    let [m0, m1, m2, m3] = manifolds;
    let ms = [m0, m1, m2, m3];
    let (a, b) = (ms.each_ref().map(|m| m.body_a as usize), ms.each_ref().map(|m| m.body_b as usize));
    let mut ma = Motions::gather(a.map(|i| &motions[i]));
    let mut mb = Motions::gather(b.map(|i| &motions[i]));
    let n = V3::gather(ms.each_ref().map(|m| m.normal));
    let t1 = V3::gather(prepared.map(|q| q.t1));
    let t2 = V3::gather(prepared.map(|q| q.t2));
    let friction = Vec4::from_array(ms.each_ref().map(|m| m.friction));
    let counts = ms.each_ref().map(|m| m.count as usize);
    let point = |k: usize| {
        let [q0, q1, q2, q3] = prepared;
        let (g0, g1, g2, g3) = (&q0.geo[k], &q1.geo[k], &q2.geo[k], &q3.geo[k]);
        let (k0, k1, k2, k3) = (&q0.k[k], &q1.k[k], &q2.k[k], &q3.k[k]);
        let (c0, c1, c2, c3) = (&ms[0].points[k], &ms[1].points[k], &ms[2].points[k], &ms[3].points[k]);
        let entry = |e: usize| Vec4::new(k0[e], k1[e], k2[e], k3[e]);
        Point {
            ra: V3::gather([g0.ra, g1.ra, g2.ra, g3.ra]),
            rb: V3::gather([g0.rb, g1.rb, g2.rb, g3.rb]),
            separation: Vec4::new(g0.separation, g1.separation, g2.separation, g3.separation),
            k: [entry(0), entry(1), entry(2), entry(3)],
            normal_impulse: Vec4::new(c0.normal_impulse, c1.normal_impulse, c2.normal_impulse, c3.normal_impulse),
            tangent_impulse_1: Vec4::new(
                c0.tangent_impulse_1,
                c1.tangent_impulse_1,
                c2.tangent_impulse_1,
                c3.tangent_impulse_1,
            ),
            tangent_impulse_2: Vec4::new(
                c0.tangent_impulse_2,
                c1.tangent_impulse_2,
                c2.tangent_impulse_2,
                c3.tangent_impulse_2,
            ),
            max_normal_impulse: Vec4::new(
                c0.max_normal_impulse,
                c1.max_normal_impulse,
                c2.max_normal_impulse,
                c3.max_normal_impulse,
            ),
            active: BVec4A::new(k < counts[0], k < counts[1], k < counts[2], k < counts[3]),
        }
    };
    let mut points = [point(0), point(1), point(2), point(3)];
    // Against a static or kinematic body, the stiffer coefficients.
    let fixed = ma.inv_mass.cmpeq(Vec4::ZERO) | mb.inv_mass.cmpeq(Vec4::ZERO);
    let soft = Softs {
        bias_rate: Vec4::select(fixed, Vec4::splat(statics.bias_rate), Vec4::splat(contacts.bias_rate)),
        mass_scale: Vec4::select(fixed, Vec4::splat(statics.mass_scale), Vec4::splat(contacts.mass_scale)),
        impulse_scale: Vec4::select(fixed, Vec4::splat(statics.impulse_scale), Vec4::splat(contacts.impulse_scale)),
        use_bias,
    };

    // The coarse correction: the same impulse on every point, pulled back only as far as the
    // loaded points allow.
    // `contact_compliance` with the lanes' one division hoisted: a point's mass scale is its
    // lane's or, where its impulse scale is zero, one.
    let inv_mass_scale = Vec4::ONE / soft.mass_scale;
    let biases = points.each_ref().map(|c| {
        let (bias, mass_scale, impulse_scale) = contact_bias(p, &soft, c.separation);
        PointBias { bias, mass_scale, impulse_scale, compliance: impulse_scale * c.k[0] * inv_mass_scale }
    });
    let (all, _) = centroid_step(&points, &biases, n, &ma, &mb, false);
    let (pull, j_min) = centroid_step(&points, &biases, n, &ma, &mb, true);
    let pulling = all.cmplt(Vec4::ZERO);
    let share = Vec4::select(pulling, pull.max(-j_min).min(Vec4::ZERO), all);
    let moving = share.cmpne(Vec4::ZERO);
    for c in &mut points {
        let on = c.active & moving & !(pulling & c.normal_impulse.cmple(Vec4::ZERO));
        c.normal_impulse = Vec4::select(on, c.normal_impulse + share, c.normal_impulse);
        c.max_normal_impulse = Vec4::select(on, c.max_normal_impulse.max(share), c.max_normal_impulse);
        let impulse = n.scale(Vec4::select(on, share, Vec4::ZERO));
        ma.apply(c.ra, impulse.neg());
        mb.apply(c.rb, impulse);
    }

    for (c, b) in points.iter_mut().zip(&biases) {
        let (bias, mass_scale, impulse_scale) = (b.bias, b.mass_scale, b.impulse_scale);
        let vn = n.dot(mb.at(c.rb).sub(ma.at(c.ra)));
        let impulse = -mass_scale / c.k[0] * (vn + bias) - impulse_scale * c.normal_impulse;
        let new_impulse = (c.normal_impulse + impulse).max(Vec4::ZERO);
        let applied = Vec4::select(c.active, new_impulse - c.normal_impulse, Vec4::ZERO);
        c.normal_impulse = Vec4::select(c.active, new_impulse, c.normal_impulse);
        c.max_normal_impulse = Vec4::select(c.active, c.max_normal_impulse.max(applied), c.max_normal_impulse);
        let impulse = n.scale(applied);
        ma.apply(c.ra, impulse.neg());
        mb.apply(c.rb, impulse);
    }

    for c in &mut points {
        let dv = mb.at(c.rb).sub(ma.at(c.ra));
        let (vt1, vt2) = (t1.dot(dv), t2.dot(dv));
        let [_, k11, k12, k22] = c.k;
        let (j1, j2) = (c.tangent_impulse_1, c.tangent_impulse_2);
        let max = friction * c.normal_impulse;
        // `friction_update`: the Newton step where it sticks, else the projected gradient step.
        let det = k11 * k22 - k12 * k12;
        let (n1, n2) = (j1 - (k22 * vt1 - k12 * vt2) / det, j2 - (k11 * vt2 - k12 * vt1) / det);
        let sticks = (n1 * n1 + n2 * n2).cmple(max * max);
        let half_diff = Vec4::splat(0.5) * (k11 - k22);
        let largest = Vec4::splat(0.5) * (k11 + k22) + (half_diff * half_diff + k12 * k12).sqrt();
        let step = Vec4::ONE / largest;
        let (g1, g2) = (j1 - step * vt1, j2 - step * vt2);
        let len_sq = g1 * g1 + g2 * g2;
        let over = len_sq.cmpgt(max * max);
        let scale = max / len_sq.sqrt();
        let (g1, g2) = (Vec4::select(over, g1 * scale, g1), Vec4::select(over, g2 * scale, g2));
        let (o1, o2) = (Vec4::select(sticks, n1, g1), Vec4::select(sticks, n2, g2));
        let impulse = t1.scale(o1 - j1).add(t2.scale(o2 - j2));
        c.tangent_impulse_1 = Vec4::select(c.active, o1, j1);
        c.tangent_impulse_2 = Vec4::select(c.active, o2, j2);
        let impulse = V3::select(c.active, impulse, V3::ZERO);
        ma.apply(c.ra, impulse.neg());
        mb.apply(c.rb, impulse);
    }

    for (l, m) in ms.into_iter().enumerate() {
        for (k, c) in points.iter().enumerate().take(m.count as usize) {
            let q = &mut m.points[k];
            q.normal_impulse = c.normal_impulse[l];
            q.tangent_impulse_1 = c.tangent_impulse_1[l];
            q.tangent_impulse_2 = c.tangent_impulse_2[l];
            q.max_normal_impulse = c.max_normal_impulse[l];
        }
        out[l] = [ma.v.lane(l), ma.w.lane(l), mb.v.lane(l), mb.w.lane(l)];
    }
}

/// `prepare`'s work for four manifolds at once, one per lane: each point's lever arms and
/// separation (`geometry`) at the bodies' current poses and its effective masses
/// (`effective_masses`) with `motion`'s inverse masses and inertia, and the tangent basis,
/// written to `out` for the points each manifold has; the same arithmetic in the same order,
/// so the same bits.
pub(super) fn prepare4(
    ms: [&GpuManifold; 4],
    bodies: &[GpuBody],
    solver_bodies: &[GpuSolverBody],
    motion: impl Fn(usize) -> Motion,
    out: [&mut Prepared; 4],
) {
    let (a, b) = (ms.map(|m| m.body_a as usize), ms.map(|m| m.body_b as usize));
    let (mas, mbs) = (a.map(&motion), b.map(&motion));
    let ma = Motions::gather(mas.each_ref());
    let mb = Motions::gather(mbs.each_ref());
    let n = V3::gather(ms.map(|m| m.normal));
    let bases = ms.map(|m| tangent_basis(m.normal));
    let (t1, t2) = (V3::gather(bases.map(|t| t.0)), V3::gather(bases.map(|t| t.1)));
    let (qa, qb) = (
        Q4::gather(a.map(|i| solver_bodies[i].delta_rotation)),
        Q4::gather(b.map(|i| solver_bodies[i].delta_rotation)),
    );
    let (da, db) = (
        V3::gather(a.map(|i| solver_bodies[i].delta_position)),
        V3::gather(b.map(|i| solver_bodies[i].delta_position)),
    );
    let offset = V3::gather(b.map(|i| bodies[i].position)).sub(V3::gather(a.map(|i| bodies[i].position)));
    let (radius_a, radius_b) = (Vec4::from_array(ms.map(|m| m.radius_a)), Vec4::from_array(ms.map(|m| m.radius_b)));
    let kept = BVec4A::new(ms[0].frame_kept != 0, ms[1].frame_kept != 0, ms[2].frame_kept != 0, ms[3].frame_kept != 0);
    let inv_mass = ma.inv_mass + mb.inv_mass;
    let (t11, t12, t22) = (t1.dot(t1) * inv_mass, t1.dot(t2) * inv_mass, t2.dot(t2) * inv_mass);
    let rotational = |m: &Motions, r: V3| {
        let (rn, r1, r2) = (r.cross(n), r.cross(t1), r.cross(t2));
        let (i1, i2) = (m.inv_inertia.mul(r1), m.inv_inertia.mul(r2));
        [rn.dot(m.inv_inertia.mul(rn)), r1.dot(i1), r1.dot(i2), r2.dot(i2)]
    };
    let [o0, o1, o2, o3] = out;
    let mut out = [o0, o1, o2, o3];
    for (q, (t1, t2)) in out.iter_mut().zip(bases) {
        (q.t1, q.t2) = (t1, t2);
    }
    let points = ms.map(|m| m.count as usize).into_iter().max().unwrap_or(0);
    for k in 0..points {
        let c = ms.map(|m| &m.points[k]);
        let (core_a, core_b) = (V3::gather(c.map(|c| c.core_a)), V3::gather(c.map(|c| c.core_b)));
        let (ca, cb) = (qa.rotate(core_a), qb.rotate(core_b));
        let base = Vec4::from_array(c.map(|c| c.base_separation));
        let separation = base + n.dot(db.add(cb).sub(da.add(ca)));
        let (surface_a, surface_b) = (ca.add(n.scale(radius_a)), cb.sub(n.scale(radius_b)));
        let half_gap = offset.add(surface_b.sub(surface_a)).scale(Vec4::splat(0.5));
        let ra = V3::select(kept, core_a, surface_a.add(half_gap));
        let rb = V3::select(kept, core_b, surface_b.sub(half_gap));
        let (ka, kb) = (rotational(&ma, ra), rotational(&mb, rb));
        let masses = [inv_mass + ka[0] + kb[0], t11 + ka[1] + kb[1], t12 + ka[2] + kb[2], t22 + ka[3] + kb[3]];
        for (l, q) in out.iter_mut().enumerate() {
            if k < ms[l].count as usize {
                q.geo[k] = Geometry { ra: ra.lane(l), rb: rb.lane(l), separation: separation[l] };
                q.k[k] = masses.map(|m| m[l]);
            }
        }
    }
}
