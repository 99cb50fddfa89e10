//! Contact manifolds between two bodies (seed 001: vertex-face and edge-edge contacts), for every
//! pair of core kinds: point (sphere), segment (capsule) and polytope (box, hull), each swept by
//! its radius. Written the way its WGSL twin runs: bounded loops, fixed-size arrays, no
//! allocation, the shape tables read through indices.
//!
//! Conventions (seed 000): the normal points from body A towards body B; the separation of a
//! point is `n · (core_b - core_a) - radius_a - radius_b`, negative when penetrating. Each
//! contact keeps its *core points*: the material points of the two cores that touch, as offsets
//! from each body's centre of mass. The solver tracks the separation from how those points move
//! during the step, and rotates only the cores, never the radius (see `separation`).

use glam::{Quat, Vec3, Vec4};

use crate::layout::{GpuShape, SHAPE_BOX, SHAPE_POINT, SHAPE_POLYTOPE, SHAPE_SEGMENT};
use crate::math::{rotate, rotate_inv};

/// Most contacts in a manifold.
pub const MAX_MANIFOLD_POINTS: usize = 4;
/// Most vertices of a clipped polygon (an incident face clipped by a reference face).
pub const MAX_CLIP_POINTS: usize = 64;
/// A face contact is preferred over an edge contact unless the edge axis separates by this much
/// more, m (keeps resting boxes on face manifolds instead of flickering edge contacts).
pub const EDGE_TOLERANCE: f32 = 0.5 * 0.005;
/// The reference face is on A unless B's face separates by this much more, m.
pub const FACE_TOLERANCE: f32 = 0.1 * 0.005;
/// An incident vertex this close outside a side of the reference face is kept as it is, m.
/// Faces flush with each other (a box on a box of the same width) put vertices right on the
/// clipping planes; without it rounding decides, step by step, whether a corner is the vertex
/// itself or a clipped point beside it, its feature key flips and its warm start is lost.
pub const CLIP_TOLERANCE: f32 = 0.1 * 0.005;
/// Edges whose directions make an angle with a sine below this are parallel to the edge query
/// (as in Gregorius, "The Separating Axis Test between Convex Polyhedra"). Their common
/// normal comes from a short cross product and rounding decides the Minkowski-face test for
/// them: with 1e-5, boxes side by side in the large pyramid, 30 m from the origin and a
/// twentieth of a milliradian apart, found edge pairs "separating" by 17 cm, and the pair's
/// manifold came from that edge pair, its normal 10 degrees off, instead of from its faces
/// (about four pairs a step). Parallel edges meet in face contacts.
pub const EDGE_PARALLEL_SIN: f32 = 0.005;
/// The box query's parallel test on unit axes: a little below [`EDGE_PARALLEL_SIN`], so that it
/// keeps every axis whose edge pair the general test, on the edges' own lengths, would keep
/// (the best axis's pair then meets the general test itself).
pub const BOX_PARALLEL_SIN: f32 = 0.99 * EDGE_PARALLEL_SIN;
/// [`EdgeFloor`]'s allowance for rounding, as a fraction of the distance from A's edge to the
/// point inside B: generous, because near-parallel edges' axes come from short cross products
/// and carry relative errors up to about 1e-2.
pub const EDGE_FLOOR_SLACK: f32 = 0.05;
/// [`EdgeFloor`]'s allowance for rounding at any distance, m.
pub const EDGE_FLOOR_MIN_SLACK: f32 = 1e-4;
/// The edge query rules edges out ([`EdgeFloor`]) only when B has more edges than this: up to
/// a box's 12, ruling out costs about what testing costs.
pub const EDGE_FLOOR_MIN_EDGES: u32 = 12;
/// A new contact whose feature key last step's manifold of the pair lacks takes the impulses
/// of the nearest unclaimed old point within this distance, m (measured from body A's centre,
/// and only while the normal turned less than [`WARM_START_MIN_COS`] allows). Keys change when
/// faces flush with each other shift by more than [`CLIP_TOLERANCE`] (a clipped point becomes
/// a vertex), or when the reference face or the incident face changes; the point itself moved
/// by about as much, and starting it from zero made a large pyramid tremble: 2.9 % of its
/// 60,000 contacts lost their impulses each step.
pub const WARM_START_RADIUS: f32 = 0.01;
/// Cosine of the largest turn of the normal across which [`WARM_START_RADIUS`] matches points.
pub const WARM_START_MIN_COS: f32 = 0.9;
/// A manifold of two polytopes keeps last step's contact frame (normal, lever arms, anchors)
/// while each point's anchors are within this distance of the surface points the narrow phase
/// finds now, and its lever arms within it of the new frame's, m: the pair rests, up to slips
/// and turns this small (a lever arm of 0.87 m, a unit cube's corner, turns 6 mrad before it
/// moves this far). On contacts under 5 cm, [`FRAME_DRIFT_FRACTION`] of their size.
pub const FRAME_DRIFT: f32 = 0.005;
/// On a contact smaller than [`FRAME_DRIFT`] over this, a kept frame's anchors and lever arms
/// may drift this fraction of its size instead (see `frame_drift` in src/cpu/contacts.rs): 1 mm
/// on a 1 cm face, where 5 mm would leave the lever arms half the face off.
pub const FRAME_DRIFT_FRACTION: f32 = 0.1;
/// Cosine of the largest turn of the normal across which a manifold keeps its frame.
pub const FRAME_MIN_COS: f32 = 0.9998;
/// A resting four-point manifold is carried into the next step without the narrow phase
/// ("contact recycling", see `recycle` in src/cpu/contacts.rs) while each point's two anchors
/// have slid less than this apart across the normal since the last narrow phase, which takes
/// the slide out of a kept frame's anchors, m: the bodies moved too little against each other
/// for the narrow phase to find other features.
pub const RECYCLE_DRIFT: f32 = 0.2 * FRAME_DRIFT;
/// On a contact face smaller than [`RECYCLE_DRIFT`] over this, the slide a recycled manifold
/// allows is this fraction of the face's size instead (the square root of twice the area of
/// the largest triangle of its anchors on body A): 0.2 mm on a face of 1 cm, where a
/// millimetre would carry contact points well past the edge of the overlap.
pub const RECYCLE_SLIDE_FRACTION: f32 = 0.02;
/// The smallest area spanned by a recycled manifold's anchors on either body, m² (twice the
/// area of their largest triangle): below it the plane through them, which tells how far each
/// side turned, is ill-defined.
pub const RECYCLE_MIN_AREA: f32 = 1e-6;

/// A shape in the world: its record in the shape table, its body's pose, and the tables.
#[derive(Clone, Copy)]
pub(crate) struct Posed<'a> {
    pub shape: &'a GpuShape,
    pub position: Vec3,
    pub orientation: Quat,
    pub geometry: &'a [Vec4],
    pub topology: &'a [u32],
    /// The core points in the world and the face planes (unit normal, offset), as
    /// [`Posed::point`] and [`Posed::face_plane`] compute them, when the caller computed them
    /// once for all of a body's pairs ([`Posed::world_into`]); else empty.
    pub world: &'a [Vec4],
    /// The core points in the body's frame four at a time, as (x, y, z) of four points, the
    /// last group padded with the last point ([`Posed::local_groups`]); else empty.
    pub groups: &'a [Vec4],
    /// The edges four at a time in the body's frame, as [`EdgeFloor`] reads them
    /// ([`Posed::local_edge_groups`]); else empty.
    pub edge_groups: &'a [EdgeGroup],
}

impl<'a> Posed<'a> {
    /// A shape at a pose, computing world points and planes where they are used.
    pub fn new(
        shape: &'a GpuShape,
        position: Vec3,
        orientation: Quat,
        geometry: &'a [Vec4],
        topology: &'a [u32],
    ) -> Self {
        Self { shape, position, orientation, geometry, topology, world: &[], groups: &[], edge_groups: &[] }
    }

    /// Appends a polytope's edges to `out` four at a time, in its frame ([`EdgeGroup`]).
    pub fn local_edge_groups(&self, out: &mut Vec<EdgeGroup>) {
        out.extend((0..self.shape.edge_count).step_by(4).map(|first| EdgeGroup::new(self, first)));
    }

    /// Appends a shape's core points in its frame to `out` four at a time: per group the x,
    /// then the y, then the z of four points, the last group padded with the last point (the
    /// minimum over them is unchanged).
    pub fn local_groups(shape: &GpuShape, geometry: &[Vec4], out: &mut Vec<Vec4>) {
        let first = shape.first_point as usize;
        let points = &geometry[first..first + shape.point_count as usize];
        for group in points.chunks(4) {
            let p = |i: usize| group[i.min(group.len() - 1)];
            let (p0, p1, p2, p3) = (p(0), p(1), p(2), p(3));
            out.extend([
                Vec4::new(p0.x, p1.x, p2.x, p3.x),
                Vec4::new(p0.y, p1.y, p2.y, p3.y),
                Vec4::new(p0.z, p1.z, p2.z, p3.z),
            ]);
        }
    }

    /// How many entries [`Posed::world_into`] writes for `shape`.
    pub fn world_len(shape: &GpuShape) -> u32 {
        if is_polytope(shape) { shape.point_count + shape.face_count } else { 0 }
    }

    /// The world points, then the world face planes, of a polytope into `out`, which holds
    /// [`Posed::world_len`] entries: bit for bit what [`Posed::point`] and
    /// [`Posed::face_plane`] compute (nothing for other shapes). The CPU solver computes them
    /// in SIMD lanes with the same arithmetic (`cpu::lanes`); this is the reference its test
    /// compares against.
    #[cfg_attr(not(test), allow(dead_code))]
    pub fn world_into(&self, out: &mut [Vec4]) {
        if !is_polytope(self.shape) {
            return;
        }
        let (points, planes) = out.split_at_mut(self.shape.point_count as usize);
        for (k, x) in points.iter_mut().enumerate() {
            *x = self.point(k as u32).extend(0.0);
        }
        for (f, x) in planes.iter_mut().enumerate() {
            let (n, offset) = self.face_plane(f as u32);
            *x = n.extend(offset);
        }
    }
    /// Core point `k` in the body's frame (principal, about the centre of mass).
    fn local_point(&self, k: u32) -> Vec3 {
        self.geometry[(self.shape.first_point + k) as usize].truncate()
    }

    /// Core point `k` in the world.
    #[inline]
    fn point(&self, k: u32) -> Vec3 {
        if let Some(p) = self.world.get(k as usize) {
            return p.truncate();
        }
        self.position + rotate(self.orientation, self.local_point(k))
    }

    /// Plane of face `f` in the world: (unit normal, offset).
    #[inline]
    fn face_plane(&self, f: u32) -> (Vec3, f32) {
        if let Some(p) = self.world.get((self.shape.point_count + f) as usize) {
            return (p.truncate(), p.w);
        }
        let plane = self.geometry[(self.shape.first_point + self.shape.point_count + f) as usize];
        let n = rotate(self.orientation, plane.truncate());
        (n, plane.w + n.dot(self.position))
    }

    /// Unit normal of face `f` in the body's frame.
    fn local_face_normal(&self, f: u32) -> Vec3 {
        self.geometry[(self.shape.first_point + self.shape.point_count + f) as usize].truncate()
    }

    /// The range of face `f`'s vertex loop in `topology`.
    fn face_loop(&self, f: u32) -> (usize, usize) {
        let t = self.shape.first_topology as usize;
        let indices = t + self.shape.face_count as usize + 1;
        (indices + self.topology[t + f as usize] as usize, indices + self.topology[t + f as usize + 1] as usize)
    }

    /// Vertex number `j` of face `f`'s loop, as a core point index.
    fn face_vertex(&self, f: u32, j: usize) -> u32 {
        self.topology[self.face_loop(f).0 + j]
    }

    /// Edge `e`: (vertex a, vertex b, face 0, face 1).
    fn edge(&self, e: u32) -> [u32; 4] {
        let w = (self.shape.first_edge + 4 * e) as usize;
        [self.topology[w], self.topology[w + 1], self.topology[w + 2], self.topology[w + 3]]
    }

    /// The world bounds of the core's points (not swept by the radius): (min, max). Twin of
    /// `core_bounds`.
    pub(crate) fn core_bounds(&self) -> (Vec3, Vec3) {
        let (mut lo, mut hi) = (Vec3::splat(f32::MAX), Vec3::splat(f32::MIN));
        for k in 0..self.shape.point_count {
            let x = self.point(k);
            lo = lo.min(x);
            hi = hi.max(x);
        }
        (lo, hi)
    }

    /// The smallest `d · x` over the core's points (its support in direction `-d`), world. A
    /// box's is `d · centre - Σ h_k |d · e_k|` over its axes `e_k` and half extents `h_k`.
    fn min_along(&self, d: Vec3) -> f32 {
        if self.shape.kind == SHAPE_BOX {
            let plus = self.shape.first_point + self.shape.point_count;
            let reach =
                |k: u32| self.geometry[(plus + 2 * k + 1) as usize].w * d.dot(self.face_plane(2 * k + 1).0).abs();
            return d.dot(self.position) - (reach(0) + reach(1) + reach(2));
        }
        let local = rotate_inv(self.orientation, d);
        if !self.groups.is_empty() {
            // The same products, four points per lane group, in two running minima (the
            // minimum is exact in any order), so that consecutive groups do not wait on each
            // other.
            let (x, y, z) = (Vec4::splat(local.x), Vec4::splat(local.y), Vec4::splat(local.z));
            let (mut even, mut odd) = (Vec4::splat(f32::MAX), Vec4::splat(f32::MAX));
            let mut pairs = self.groups.chunks_exact(6);
            for g in &mut pairs {
                even = even.min(x * g[0] + y * g[1] + z * g[2]);
                odd = odd.min(x * g[3] + y * g[4] + z * g[5]);
            }
            if let [gx, gy, gz] = pairs.remainder() {
                even = even.min(x * *gx + y * *gy + z * *gz);
            }
            let lanes = even.min(odd);
            return lanes.x.min(lanes.y).min(lanes.z.min(lanes.w)) + d.dot(self.position);
        }
        let first = self.shape.first_point as usize;
        let points = &self.geometry[first..first + self.shape.point_count as usize];
        // Four running minima (the minimum is exact in any order, so this is the WGSL loop's
        // value), which the compiler can keep in one register.
        let mut lanes = [f32::MAX; 4];
        let mut chunks = points.chunks_exact(4);
        for c in &mut chunks {
            for (lane, p) in lanes.iter_mut().zip(c) {
                *lane = lane.min(local.dot(p.truncate()));
            }
        }
        for p in chunks.remainder() {
            lanes[0] = lanes[0].min(local.dot(p.truncate()));
        }
        lanes[0].min(lanes[1]).min(lanes[2].min(lanes[3])) + d.dot(self.position)
    }
}

/// One contact of a manifold.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct ContactPoint {
    /// A's core point relative to A's centre of mass, world frame, m.
    pub core_a: Vec3,
    /// B's core point relative to B's centre of mass, world frame, m.
    pub core_b: Vec3,
    /// Separation at detection, m.
    pub separation: f32,
    /// Feature key: equal keys in consecutive steps name the same contact.
    pub key: u32,
}

/// Up to four contacts sharing one normal.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct Manifold {
    /// Unit normal from A towards B.
    pub normal: Vec3,
    /// Number of valid points.
    pub count: usize,
    /// The contacts.
    pub points: [ContactPoint; MAX_MANIFOLD_POINTS],
}

impl Manifold {
    fn push(&mut self, a: &Posed, b: &Posed, world_a: Vec3, world_b: Vec3, separation: f32, key: u32) {
        if self.count < MAX_MANIFOLD_POINTS {
            self.points[self.count] =
                ContactPoint { core_a: world_a - a.position, core_b: world_b - b.position, separation, key };
            self.count += 1;
        }
    }

    /// The same contacts seen from B: normal reversed, core points swapped.
    fn flipped(mut self) -> Self {
        self.normal = -self.normal;
        for p in &mut self.points[..self.count] {
            std::mem::swap(&mut p.core_a, &mut p.core_b);
        }
        self
    }
}

/// Whether a shape's core is a polytope (a hull or a box).
pub(crate) fn is_polytope(shape: &GpuShape) -> bool {
    shape.kind >= SHAPE_POLYTOPE
}

/// A shape's kind of core: [`SHAPE_POINT`], [`SHAPE_SEGMENT`] or [`SHAPE_POLYTOPE`] (boxes
/// too). Pairs are ordered by it; a box and a hull stay in their order.
fn core_kind(shape: &GpuShape) -> u32 {
    shape.kind.min(SHAPE_POLYTOPE)
}

/// The contacts between two shapes whose separation is below `margin`.
pub(crate) fn collide(a: &Posed, b: &Posed, margin: f32) -> Manifold {
    if core_kind(a.shape) > core_kind(b.shape) {
        return collide_ordered(b, a, margin).flipped();
    }
    collide_ordered(a, b, margin)
}

/// No face kept the pair apart (see [`collide_cached`]).
pub(crate) const NO_FACE: u32 = u32::MAX;
/// Marks a separating face as B's in [`collide_cached`]'s face (else it is A's).
pub(crate) const FACE_OF_B: u32 = 0x8000_0000;

/// [`collide`] for a pair whose last step may have found a face that kept it a margin apart
/// (`face`: A's face, or B's with `FACE_OF_B`, or [`NO_FACE`]): that face is tried first, and
/// when it still keeps the pair apart there is no contact without the rest of the search.
/// Any face that keeps a pair of polytopes `margin` apart means no contact, whichever the full
/// search would meet first, so the result is exactly [`collide`]'s. Returns the contacts and
/// the face that kept them apart now, or [`NO_FACE`] (always for pairs other than two
/// polytopes).
pub(crate) fn collide_cached(a: &Posed, b: &Posed, margin: f32, face: u32) -> (Manifold, u32) {
    if !is_polytope(a.shape) || !is_polytope(b.shape) {
        return (collide(a, b, margin), NO_FACE);
    }
    let radii = a.shape.radius + b.shape.radius;
    if face != NO_FACE {
        let (reference, other) = if face & FACE_OF_B != 0 { (b, a) } else { (a, b) };
        let f = face & !FACE_OF_B;
        if f < reference.shape.face_count {
            let (n, offset) = reference.face_plane(f);
            if other.min_along(n) - offset - radii >= margin {
                return (Manifold::default(), face);
            }
        }
    }
    polytope_polytope(a, b, margin)
}

/// [`collide`] for a point core `a` (a particle): the same contacts, through only the three
/// functions a point can meet. Its WGSL twin keeps the pair kernels out of the particle loops,
/// where inlining the whole of `collide` made every candidate cost what a box pair costs.
pub(crate) fn collide_point(a: &Posed, b: &Posed, margin: f32) -> Manifold {
    debug_assert_eq!(a.shape.kind, SHAPE_POINT);
    match b.shape.kind {
        SHAPE_POINT => point_point(a, b, margin),
        SHAPE_SEGMENT => point_segment(a, b, margin),
        _ => point_polytope(a, b, margin),
    }
}

fn collide_ordered(a: &Posed, b: &Posed, margin: f32) -> Manifold {
    match (core_kind(a.shape), core_kind(b.shape)) {
        (SHAPE_POINT, SHAPE_POINT) => point_point(a, b, margin),
        (SHAPE_POINT, SHAPE_SEGMENT) => point_segment(a, b, margin),
        (SHAPE_SEGMENT, SHAPE_SEGMENT) => segment_segment(a, b, margin),
        (SHAPE_POINT, SHAPE_POLYTOPE) => point_polytope(a, b, margin),
        (SHAPE_SEGMENT, SHAPE_POLYTOPE) => segment_polytope(a, b, margin),
        _ => polytope_polytope(a, b, margin).0,
    }
}

/// A unit vector along `d`, or `fallback` when `d` is too short to have a direction.
fn direction(d: Vec3, fallback: Vec3) -> Vec3 {
    let len = d.length();
    if len > 1e-9 { d / len } else { fallback }
}

/// A unit vector orthogonal to `v` (the second tangent of `tangent_basis`), or y for a zero `v`.
fn any_orthonormal(v: Vec3) -> Vec3 {
    crate::math::tangent_basis(direction(v, Vec3::Y)).1
}

/// The point of segment `[p, q]` closest to `x`, as its parameter in `[0, 1]`.
fn closest_on_segment(p: Vec3, q: Vec3, x: Vec3) -> f32 {
    let d = q - p;
    let dd = d.dot(d);
    if dd <= 1e-12 { 0.0 } else { ((x - p).dot(d) / dd).clamp(0.0, 1.0) }
}

/// Closest points of segments `[p1, q1]` and `[p2, q2]` as parameters `(s, t)` (Ericson,
/// Real-Time Collision Detection, 5.1.9).
fn closest_between_segments(p1: Vec3, q1: Vec3, p2: Vec3, q2: Vec3) -> (f32, f32) {
    let (d1, d2, r) = (q1 - p1, q2 - p2, p1 - p2);
    let (a, e, f) = (d1.dot(d1), d2.dot(d2), d2.dot(r));
    if a <= 1e-12 && e <= 1e-12 {
        return (0.0, 0.0);
    }
    if a <= 1e-12 {
        return (0.0, (f / e).clamp(0.0, 1.0));
    }
    let c = d1.dot(r);
    if e <= 1e-12 {
        return ((-c / a).clamp(0.0, 1.0), 0.0);
    }
    let b = d1.dot(d2);
    let denom = a * e - b * b;
    let mut s = if denom > 1e-12 * a * e { ((b * f - c * e) / denom).clamp(0.0, 1.0) } else { 0.0 };
    let mut t = (b * s + f) / e;
    if t < 0.0 {
        t = 0.0;
        s = (-c / a).clamp(0.0, 1.0);
    } else if t > 1.0 {
        t = 1.0;
        s = ((b - c) / a).clamp(0.0, 1.0);
    }
    (s, t)
}

fn point_point(a: &Posed, b: &Posed, margin: f32) -> Manifold {
    let (pa, pb) = (a.point(0), b.point(0));
    let n = direction(pb - pa, Vec3::Y);
    let separation = n.dot(pb - pa) - a.shape.radius - b.shape.radius;
    let mut m = Manifold { normal: n, ..Manifold::default() };
    if separation < margin {
        m.push(a, b, pa, pb, separation, 0);
    }
    m
}

fn point_segment(a: &Posed, b: &Posed, margin: f32) -> Manifold {
    let pa = a.point(0);
    let (b0, b1) = (b.point(0), b.point(1));
    let pb = b0.lerp(b1, closest_on_segment(b0, b1, pa));
    let n = direction(pb - pa, any_orthonormal(b1 - b0));
    let separation = n.dot(pb - pa) - a.shape.radius - b.shape.radius;
    let mut m = Manifold { normal: n, ..Manifold::default() };
    if separation < margin {
        m.push(a, b, pa, pb, separation, 0);
    }
    m
}

fn segment_segment(a: &Posed, b: &Posed, margin: f32) -> Manifold {
    let (a0, a1, b0, b1) = (a.point(0), a.point(1), b.point(0), b.point(1));
    let (s, t) = closest_between_segments(a0, a1, b0, b1);
    let (pa, pb) = (a0.lerp(a1, s), b0.lerp(b1, t));
    let (da, db) = (a1 - a0, b1 - b0);
    let axis_fallback = direction(da.cross(db), any_orthonormal(da));
    let n = direction(pb - pa, axis_fallback);
    let radii = a.shape.radius + b.shape.radius;
    let mut m = Manifold { normal: n, ..Manifold::default() };
    // Nearly parallel and overlapping: two contacts at the ends of the common stretch, so a
    // capsule lying on another does not rock on one point.
    let parallel = da.cross(db).length_squared() <= 1e-6 * da.length_squared() * db.length_squared();
    if parallel {
        let dd = da.dot(da);
        let (u0, u1) = ((b0 - a0).dot(da) / dd, (b1 - a0).dot(da) / dd);
        let (lo, hi) = (u0.min(u1).max(0.0), u0.max(u1).min(1.0));
        if hi - lo > 1e-4 {
            for (k, u) in [lo, hi].into_iter().enumerate() {
                let qa = a0 + da * u;
                let qb = b0.lerp(b1, closest_on_segment(b0, b1, qa));
                let separation = n.dot(qb - qa) - radii;
                if separation < margin {
                    m.push(a, b, qa, qb, separation, 1 + k as u32);
                }
            }
            return m;
        }
    }
    let separation = n.dot(pb - pa) - radii;
    if separation < margin {
        m.push(a, b, pa, pb, separation, 0);
    }
    m
}

/// The point of polytope `b`'s surface closest to `x`, for `x` outside it, and that point's
/// squared distance. Each face that `x` is in front of is tried: the projection if it falls in
/// the face, else the closest point of the face's boundary.
fn closest_on_polytope(b: &Posed, x: Vec3) -> Vec3 {
    let mut best = x;
    let mut best_d2 = f32::MAX;
    for f in 0..b.shape.face_count {
        let (n, offset) = b.face_plane(f);
        let height = n.dot(x) - offset;
        if height <= 0.0 {
            continue;
        }
        let (start, end) = b.face_loop(f);
        let count = end - start;
        let projected = x - n * height;
        let mut inside = true;
        let mut edge_best = x;
        let mut edge_d2 = f32::MAX;
        for j in 0..count {
            let v0 = b.point(b.face_vertex(f, j));
            let v1 = b.point(b.face_vertex(f, (j + 1) % count));
            if (v1 - v0).cross(projected - v0).dot(n) < 0.0 {
                inside = false;
            }
            let q = v0.lerp(v1, closest_on_segment(v0, v1, x));
            let d2 = (q - x).length_squared();
            if d2 < edge_d2 {
                edge_d2 = d2;
                edge_best = q;
            }
        }
        let (q, d2) = if inside { (projected, height * height) } else { (edge_best, edge_d2) };
        if d2 < best_d2 {
            best_d2 = d2;
            best = q;
        }
    }
    best
}

/// The closest points of segment `a0 a1` and polytope `b`, for a segment outside it: an end of
/// the segment against the polytope, or the segment against one of its edges.
fn closest_segment_polytope(b: &Posed, a0: Vec3, a1: Vec3) -> (Vec3, Vec3) {
    let mut best = (a0, closest_on_polytope(b, a0));
    let mut best_d2 = (best.1 - best.0).length_squared();
    let end = closest_on_polytope(b, a1);
    if (end - a1).length_squared() < best_d2 {
        best = (a1, end);
        best_d2 = (end - a1).length_squared();
    }
    for e in 0..b.shape.edge_count {
        let [v0, v1, _, _] = b.edge(e);
        let (p0, p1) = (b.point(v0), b.point(v1));
        let (s, t) = closest_between_segments(a0, a1, p0, p1);
        let (pa, pb) = (a0.lerp(a1, s), p0.lerp(p1, t));
        let d2 = (pb - pa).length_squared();
        if d2 < best_d2 {
            best = (pa, pb);
            best_d2 = d2;
        }
    }
    best
}

/// The face of polytope `b` that `x` is most in front of: (face, height of `x` above it).
fn deepest_face(b: &Posed, x: Vec3) -> (u32, f32) {
    let mut best = (0, f32::MIN);
    for f in 0..b.shape.face_count {
        let (n, offset) = b.face_plane(f);
        let height = n.dot(x) - offset;
        if height > best.1 {
            best = (f, height);
        }
    }
    best
}

fn point_polytope(a: &Posed, b: &Posed, margin: f32) -> Manifold {
    let pa = a.point(0);
    let radii = a.shape.radius + b.shape.radius;
    let (face, height) = deepest_face(b, pa);
    let (face_normal, _) = b.face_plane(face);
    let mut m = Manifold::default();
    if height <= 0.0 {
        // The core point is inside: push it out through the nearest face.
        m.normal = -face_normal;
        let pb = pa - face_normal * height;
        if height - radii < margin {
            m.push(a, b, pa, pb, height - radii, 0);
        }
    } else {
        let pb = closest_on_polytope(b, pa);
        m.normal = direction(pb - pa, -face_normal);
        let separation = m.normal.dot(pb - pa) - radii;
        if separation < margin {
            m.push(a, b, pa, pb, separation, 0);
        }
    }
    m
}

fn segment_polytope(a: &Posed, b: &Posed, margin: f32) -> Manifold {
    let (a0, a1) = (a.point(0), a.point(1));
    let radii = a.shape.radius + b.shape.radius;
    // Face axes of B: the segment's deepest end against each face.
    let (mut face, mut face_sep) = (0, f32::MIN);
    for f in 0..b.shape.face_count {
        let (n, offset) = b.face_plane(f);
        let s = n.dot(a0).min(n.dot(a1)) - offset;
        if s > face_sep {
            face_sep = s;
            face = f;
        }
    }
    // Edge axes: the segment against each edge of B whose faces lie on both sides of the
    // plane across the segment (the pair builds a face of the Minkowski difference).
    let centre = b.position;
    let (mut edge, mut edge_sep, mut edge_axis) = (0, f32::MIN, Vec3::ZERO);
    for e in 0..b.shape.edge_count {
        let [v0, v1, f0, f1] = b.edge(e);
        if (a1 - a0).dot(b.face_plane(f0).0) * (a1 - a0).dot(b.face_plane(f1).0) >= 0.0 {
            continue;
        }
        let (p0, p1) = (b.point(v0), b.point(v1));
        let axis = (a1 - a0).cross(p1 - p0);
        let len = axis.length();
        if len < 1e-6 * (a1 - a0).length() * (p1 - p0).length() {
            continue;
        }
        let mut axis = axis / len;
        if axis.dot(p0 - centre) < 0.0 {
            axis = -axis;
        }
        // B's extent along the axis against the segment's nearest end.
        let s = axis.dot(a0).min(axis.dot(a1)) + b.min_along(-axis);
        if s > edge_sep {
            edge_sep = s;
            edge = e;
            edge_axis = axis;
        }
    }
    let mut m = Manifold::default();
    let core_sep = face_sep.max(edge_sep);
    if core_sep - radii >= margin {
        return m;
    }
    if core_sep > 0.0 {
        // The cores are apart. The axes above then only bound their distance from below (the
        // closest features may be the segment and one vertex of B), and a rounded segment
        // needs the true distance: a bound could show a capsule beside a box as deep inside.
        let (pa, pb) = closest_segment_polytope(b, a0, a1);
        let distance = (pb - pa).length();
        if distance - radii >= margin {
            return m;
        }
        if face_sep + EDGE_TOLERANCE >= distance {
            // Over a face of B: both ends from clipping, unless clipping misses the closest
            // points (the segment dips beside the face).
            let face_m = segment_face(a, b, face, margin);
            let deepest = face_m.points[..face_m.count].iter().fold(f32::MAX, |d, p| d.min(p.separation));
            if deepest <= distance - radii + EDGE_TOLERANCE {
                return face_m;
            }
        }
        // One contact between the closest points.
        m.normal = direction(pb - pa, -b.face_plane(face).0);
        m.push(a, b, pa, pb, distance - radii, 0xc000_0000);
        return m;
    }
    if edge_sep > face_sep + EDGE_TOLERANCE {
        let [v0, v1, _, _] = b.edge(edge);
        let (p0, p1) = (b.point(v0), b.point(v1));
        // B's point on the edge, A's at the axis' separation from it (the closest point of the
        // segment, up to rounding).
        let t = closest_between_segments(a0, a1, p0, p1).1;
        m.normal = -edge_axis;
        let pb = p0.lerp(p1, t);
        if edge_sep - radii < margin {
            m.push(a, b, pb - m.normal * edge_sep, pb, edge_sep - radii, 0x8000_0000 | edge);
        }
        return m;
    }
    segment_face(a, b, face, margin)
}

/// Segment core `a` against face `face` of polytope `b`: the segment clipped to the face's side
/// planes, a contact at each end, or at the deepest end if the segment passes beside the face.
fn segment_face(a: &Posed, b: &Posed, face: u32, margin: f32) -> Manifold {
    let (a0, a1) = (a.point(0), a.point(1));
    let radii = a.shape.radius + b.shape.radius;
    let (n, offset) = b.face_plane(face);
    let mut m = Manifold { normal: -n, ..Manifold::default() };
    let (start, end) = b.face_loop(face);
    let count = end - start;
    let (mut t0, mut t1) = (0.0_f32, 1.0_f32);
    for j in 0..count {
        let v0 = b.point(b.face_vertex(face, j));
        let v1 = b.point(b.face_vertex(face, (j + 1) % count));
        let side = (v1 - v0).cross(n);
        let (d0, d1) = (side.dot(a0 - v0), side.dot(a1 - v0));
        // Keep the part with side · (x - v0) <= 0.
        if d0 > 0.0 && d1 > 0.0 {
            t0 = 1.0;
            t1 = 0.0;
        } else if d0 > 0.0 {
            t0 = t0.max(d0 / (d0 - d1));
        } else if d1 > 0.0 {
            t1 = t1.min(d0 / (d0 - d1));
        }
    }
    if t0 > t1 {
        // The segment passes beside the face: one contact at its deepest end.
        let pa = if n.dot(a0) < n.dot(a1) { a0 } else { a1 };
        let height = n.dot(pa) - offset;
        if height - radii < margin {
            m.push(a, b, pa, pa - n * height, height - radii, face << 2);
        }
        return m;
    }
    for (k, t) in [t0, t1].into_iter().enumerate() {
        let pa = a0.lerp(a1, t);
        let height = n.dot(pa) - offset;
        if height - radii < margin && (k == 0 || t1 - t0 > 1e-5) {
            m.push(a, b, pa, pa - n * height, height - radii, face << 2 | (1 + k as u32));
        }
    }
    m
}

/// The face of `reference` that separates it most from `other`: (face, separation), stopping
/// at the first face that keeps them `margin` apart (`separation - radii >= margin`: no
/// contact, whatever the other faces say), so a separated pair costs part of a scan.
///
/// A face whose separation cannot beat the best so far is passed over without its support
/// query: `other`'s centre of mass is inside its core, so some core point lies at or below it
/// along `n` and the separation is at most `n · centre - offset` (in floating point too: the
/// query adds a minimum of at most zero to the same `n · centre`, and rounding is monotonic).
/// A face passed over would change nothing, so the result is the full scan's, bit for bit.
fn best_face(reference: &Posed, other: &Posed, radii: f32, margin: f32) -> (u32, f32) {
    let mut best = (0, f32::MIN);
    for f in 0..reference.shape.face_count {
        let (n, offset) = reference.face_plane(f);
        if n.dot(other.position) - offset <= best.1 {
            continue;
        }
        let s = other.min_along(n) - offset;
        if s > best.1 {
            best = (f, s);
            if s - radii >= margin {
                break;
            }
        }
    }
    best
}

/// `|e_k · f_j|` for A's world axes `e_k` and B's `f_j`, two boxes (the normals of faces
/// `2k + 1`): the products both boxes' face queries take ([`box_best_face`]), computed once
/// for the pair. A dot product's terms commute, so `f_j · e_k` is the same number.
fn box_axis_dots(a: &Posed, b: &Posed) -> [[f32; 3]; 3] {
    let axes = |p: &Posed| [p.face_plane(1).0, p.face_plane(3).0, p.face_plane(5).0];
    let (ea, eb) = (axes(a), axes(b));
    std::array::from_fn(|k| std::array::from_fn(|j| ea[k].dot(eb[j]).abs()))
}

/// [`best_face`] of a box against a box, with `dots(k, j)` the reference's axis `k` dotted
/// with the other's axis `j`, in absolute value ([`box_axis_dots`]): the same faces and
/// separations bit for bit, since the other's support along face `2k` or `2k + 1` (normals
/// `∓e_k`, each the other's exact negation) is `Posed::min_along`'s sum of its half extents
/// times these products, in the same order. All six separations are computed (three supports)
/// and the scan's choices made as selections, not branches: a face [`best_face`] passes over
/// could not have been taken, and after the face that keeps the pair apart nothing is.
fn box_best_face(
    reference: &Posed,
    other: &Posed,
    radii: f32,
    margin: f32,
    dots: impl Fn(usize, usize) -> f32,
) -> (u32, f32) {
    let plus = other.shape.first_point + other.shape.point_count;
    let half = |j: u32| other.geometry[(plus + 2 * j + 1) as usize].w;
    let (h0, h1, h2) = (half(0), half(1), half(2));
    let support: [f32; 3] = std::array::from_fn(|k| h0 * dots(k, 0) + h1 * dots(k, 1) + h2 * dots(k, 2));
    let (mut best, mut done) = ((0, f32::MIN), false);
    for f in 0..6 {
        let (n, offset) = reference.face_plane(f);
        let s = n.dot(other.position) - support[(f / 2) as usize] - offset;
        let take = !done && s > best.1;
        best = if take { (f, s) } else { best };
        done |= take && s - radii >= margin;
    }
    best
}

/// Whether edges with adjacent face normals `(a, b)` on A and `(c, d)` on B (already negated)
/// build a face of the Minkowski difference, i.e. their arcs cross on the Gauss map
/// (Gregorius, "The Separating Axis Test between Convex Polyhedra", GDC 2013). Only those edge
/// pairs can give a separating axis, which cuts the edge test from all pairs to a few. `bxa`
/// is `b x a` and `dxc` is `d x c`, each computed once per edge.
fn is_minkowski_face(a: Vec3, b: Vec3, bxa: Vec3, c: Vec3, d: Vec3, dxc: Vec3) -> bool {
    let cba = c.dot(bxa);
    let dba = d.dot(bxa);
    let adc = a.dot(dxc);
    let bdc = b.dot(dxc);
    cba * dba < 0.0 && adc * bdc < 0.0 && cba * bdc > 0.0
}

/// The edge pair with the largest separation among those that build a face of the Minkowski
/// difference: ((edge of A, edge of B), separation, axis from A towards B), or separation
/// `f32::MIN` when none does. Found in B's frame: A's face normals are turned once each, B's
/// are read as stored and negated. With at most `F` faces on A and `E = 4 G` edges on B, B's
/// edges are laid out once per pair in groups of four, and for each edge of A
/// [`is_minkowski_face`] runs on four edges of B at once without a branch; only the few edge
/// pairs that build a face go on one by one. The same products in the same order, so the same
/// pairs as [`edge_query_uncached`], bit for bit.
///
/// With floors, edges that cannot hold a pair separating more than the floor are passed over:
/// A's by `floor` (an [`EdgeFloor`] of A against B), B's by `floor_b` (of B against A: along
/// `-u`, on the arc of B's edge, the separation is at most `-u · (x - q)` for `q` on B's edge
/// and `x` inside A), so that only B's remaining edges are laid out and scanned, in their
/// order. The answer is then the full query's whenever it separates more than the floor.
fn edge_query<const F: usize, const E: usize, const G: usize>(
    a: &Posed,
    b: &Posed,
    floor: Option<EdgeFloor>,
    floor_b: Option<EdgeFloor>,
) -> ((u32, u32), f32, Vec3) {
    let (a_faces, b_edges) = (a.shape.face_count as usize, b.shape.edge_count as usize);
    let mut a_normals = [Vec3::ZERO; F];
    for (f, n) in a_normals[..a_faces].iter_mut().enumerate() {
        *n = rotate_inv(b.orientation, a.face_plane(f as u32).0);
    }
    // Per group of four kept edges of B: the x, y and z of the negated normals of their first
    // faces (`c`), of their second faces (`d`) and of their arcs `d x c`. Lanes past the last
    // kept edge stay zero, so their products are zero and they never pass.
    let mut lanes = [[Vec4::ZERO; 9]; G];
    // B's kept edges: their numbers, and in the world their first point, direction and
    // length, read once each.
    let (mut b_numbers, mut b_segments) = ([0_u32; E], [(Vec3::ZERO, Vec3::ZERO, 0.0_f32); E]);
    let (mut kept, mut ruled_out) = (0, 0);
    for eb in 0..b_edges {
        if let Some(floor_b) = &floor_b
            && eb % 4 == 0
        {
            ruled_out = floor_b.rules_out4(b, eb as u32);
        }
        if ruled_out >> (eb % 4) & 1 == 1 {
            continue;
        }
        let [b0, b1, fb0, fb1] = b.edge(eb as u32);
        let (c, d) = (-b.local_face_normal(fb0), -b.local_face_normal(fb1));
        let arc = d.cross(c);
        let (group, lane) = (&mut lanes[kept / 4], kept % 4);
        for (axis, (x, y, z)) in [(c.x, d.x, arc.x), (c.y, d.y, arc.y), (c.z, d.z, arc.z)].into_iter().enumerate() {
            group[axis][lane] = x;
            group[3 + axis][lane] = y;
            group[6 + axis][lane] = z;
        }
        let (pb0, pb1) = (b.point(b0), b.point(b1));
        (b_numbers[kept], b_segments[kept]) = (eb as u32, (pb0, pb1 - pb0, (pb1 - pb0).length()));
        kept += 1;
    }
    let mut best = ((0, 0), f32::MIN, Vec3::ZERO);
    let mut batch = EdgeBatch::default();
    // Which of A's edges `4 (ea / 4)` to `4 (ea / 4) + 3` the floor rules out, by bits.
    let mut ruled_out = 0;
    for ea in 0..a.shape.edge_count {
        if let Some(floor) = &floor
            && ea % 4 == 0
        {
            ruled_out = floor.rules_out4(a, ea);
        }
        if ruled_out >> (ea % 4) & 1 == 1 {
            continue;
        }
        let [a0, a1, fa0, fa1] = a.edge(ea);
        let (na0, na1) = (a_normals[fa0 as usize], a_normals[fa1 as usize]);
        let na1xna0 = na1.cross(na0);
        let splat = |v: Vec3| (Vec4::splat(v.x), Vec4::splat(v.y), Vec4::splat(v.z));
        let ((vx, vy, vz), (ax, ay, az), (bx, by, bz)) = (splat(na1xna0), splat(na0), splat(na1));
        let (mut pa0, mut pa1, mut len_a) = (Vec3::ZERO, Vec3::ZERO, 0.0);
        let mut points_read = false;
        for (g, [cx, cy, cz, dx, dy, dz, ex, ey, ez]) in lanes[..kept.div_ceil(4)].iter().enumerate() {
            // `is_minkowski_face` on four edges of B at once, each dot product as `Vec3::dot`
            // computes it: `c · (b x a)`, `d · (b x a)`, `a · (d x c)`, `b · (d x c)`.
            let cba = *cx * vx + *cy * vy + *cz * vz;
            let dba = *dx * vx + *dy * vy + *dz * vz;
            let adc = ax * *ex + ay * *ey + az * *ez;
            let bdc = bx * *ex + by * *ey + bz * *ez;
            let faces = (cba * dba).cmplt(Vec4::ZERO) & (adc * bdc).cmplt(Vec4::ZERO) & (cba * bdc).cmpgt(Vec4::ZERO);
            let mut faces = faces.bitmask();
            while faces != 0 {
                let lane = faces.trailing_zeros() as usize;
                faces &= faces - 1;
                let slot = 4 * g + lane;
                if !points_read {
                    (pa0, pa1) = (a.point(a0), a.point(a1));
                    len_a = (pa1 - pa0).length();
                    points_read = true;
                }
                let (pb0, along_b, len_b) = b_segments[slot];
                batch.push(EdgeCandidate {
                    pair: (ea, b_numbers[slot]),
                    pa0,
                    da: pa1 - pa0,
                    len_a,
                    pb0,
                    along_b,
                    len_b,
                });
                if batch.count == 4 {
                    batch.flush(a, &mut best);
                }
            }
        }
    }
    batch.flush(a, &mut best);
    best
}

/// An edge pair that builds a face of the Minkowski difference, waiting for its separation:
/// A's edge from `pa0` along `da` (length `len_a`), B's from `pb0` along `along_b`.
#[derive(Clone, Copy, Default)]
struct EdgeCandidate {
    pair: (u32, u32),
    pa0: Vec3,
    da: Vec3,
    len_a: f32,
    pb0: Vec3,
    along_b: Vec3,
    len_b: f32,
}

/// Up to four [`EdgeCandidate`]s, in the order the query found them.
#[derive(Default)]
struct EdgeBatch {
    items: [EdgeCandidate; 4],
    count: usize,
}

impl EdgeBatch {
    fn push(&mut self, c: EdgeCandidate) {
        self.items[self.count] = c;
        self.count += 1;
    }

    /// [`edge_separation`] of the waiting pairs in the lanes of a `Vec4` (the same operations,
    /// so the same bits), then, in the order found, each that is not near-parallel and
    /// separates more than `best` replaces it (pair, separation, axis).
    fn flush(&mut self, a: &Posed, best: &mut ((u32, u32), f32, Vec3)) {
        if self.count == 0 {
            return;
        }
        let c = &self.items;
        let lanes = |f: &dyn Fn(&EdgeCandidate) -> f32| Vec4::new(f(&c[0]), f(&c[1]), f(&c[2]), f(&c[3]));
        let (dx, dy, dz) = (lanes(&|c| c.da.x), lanes(&|c| c.da.y), lanes(&|c| c.da.z));
        let (bx, by, bz) = (lanes(&|c| c.along_b.x), lanes(&|c| c.along_b.y), lanes(&|c| c.along_b.z));
        // `(pa1 - pa0).cross(along_b)`, its length, the parallel test, as `Vec3` computes them.
        let (x, y, z) = (dy * bz - by * dz, dz * bx - bz * dx, dx * by - bx * dy);
        let len = (x * x + y * y + z * z).sqrt();
        let parallel = len.cmplt(Vec4::splat(EDGE_PARALLEL_SIN) * lanes(&|c| c.len_a) * lanes(&|c| c.len_b));
        let (x, y, z) = (x / len, y / len, z / len);
        // Pointing away from A's centre.
        let (wx, wy, wz) = (
            lanes(&|c| c.pa0.x - a.position.x),
            lanes(&|c| c.pa0.y - a.position.y),
            lanes(&|c| c.pa0.z - a.position.z),
        );
        let flip = (x * wx + y * wy + z * wz).cmplt(Vec4::ZERO);
        let (x, y, z) = (Vec4::select(flip, -x, x), Vec4::select(flip, -y, y), Vec4::select(flip, -z, z));
        let (gx, gy, gz) =
            (lanes(&|c| c.pb0.x - c.pa0.x), lanes(&|c| c.pb0.y - c.pa0.y), lanes(&|c| c.pb0.z - c.pa0.z));
        let s = x * gx + y * gy + z * gz;
        let parallel = parallel.bitmask();
        for (l, item) in c.iter().enumerate().take(self.count) {
            if parallel & (1 << l) == 0 && s[l] > best.1 {
                *best = (item.pair, s[l], Vec3::new(x[l], y[l], z[l]));
            }
        }
        self.count = 0;
    }
}

/// What lets [`edge_query`] pass over an edge of A without testing it against B's edges: the
/// separation an edge pair must exceed to matter (`floor`), and two points inside B's core
/// (its centre, and its deepest point below A's best face). The same with the shapes swapped
/// passes over B's edges (see [`edge_query`]). Along an edge pair's axis `u`,
/// which lies on the arc of A's edge between its two face normals, the pair separates by
/// `u · (b - p)` for the point `b` of B that is lowest along `u` and `p` on A's edge, so by at
/// most `u · (x - p)` for any point `x` of B's core: when the largest of those over the arc is
/// below the floor for either point, no pair of that edge can matter, and the result is the
/// full search's whenever an edge pair replaces the face contact.
struct EdgeFloor {
    floor: f32,
    /// The two points inside B, in A's frame (the frame of the edges it rules on).
    inside: [Vec3; 2],
}

/// Four of a polytope's edges in its frame, as lanes of `Vec4`s (the last edge repeated past
/// the end): each edge's first point and the normals of its two faces, and what
/// [`EdgeFloor`]'s bounds compute from the normals alone, which no pose changes. Computed once
/// per shape ([`Posed::local_edge_groups`]), so a floor reads four edges with a few loads
/// instead of gathering twelve vectors, and turns only its two inside points into the frame.
#[derive(Clone, Copy, Debug)]
pub(crate) struct EdgeGroup {
    p: [Vec4; 3],
    n0: [Vec4; 3],
    n1: [Vec4; 3],
    /// `n0 x n1`.
    m: [Vec4; 3],
    /// `|n0 x n1|²`.
    mm: Vec4,
    /// `1 / cos(α / 2)`, `α` the angle between the normals.
    secant: Vec4,
}

impl EdgeGroup {
    /// Edges `first` to `first + 3` of `a`, in its frame.
    fn new(a: &Posed, first: u32) -> Self {
        let last = a.shape.edge_count - 1;
        let edges: [[u32; 4]; 4] = std::array::from_fn(|l| a.edge((first + l as u32).min(last)));
        let gather = |f: &dyn Fn([u32; 4]) -> Vec3| {
            let v = edges.map(f);
            [
                Vec4::new(v[0].x, v[1].x, v[2].x, v[3].x),
                Vec4::new(v[0].y, v[1].y, v[2].y, v[3].y),
                Vec4::new(v[0].z, v[1].z, v[2].z, v[3].z),
            ]
        };
        let p = gather(&|[a0, ..]| a.local_point(a0));
        let n0 = gather(&|[_, _, f0, _]| a.local_face_normal(f0));
        let n1 = gather(&|[_, _, _, f1]| a.local_face_normal(f1));
        let m = lane_cross(&n0, &n1);
        // 1 / cos(α / 2) = 1 / sqrt((1 + n0 · n1) / 2).
        let secant = Vec4::ONE / (Vec4::splat(0.5) * (Vec4::ONE + lane_dot(&n0, &n1))).sqrt();
        Self { p, n0, n1, m, mm: lane_dot(&m, &m), secant }
    }
}

impl EdgeFloor {
    fn new(a: &Posed, b: &Posed, face_a: u32, floor: f32) -> Self {
        let n = a.face_plane(face_a).0;
        let (mut deepest, mut depth) = (b.position, f32::MAX);
        for k in 0..b.shape.point_count {
            let x = b.point(k);
            if n.dot(x) < depth {
                (deepest, depth) = (x, n.dot(x));
            }
        }
        let local = |x: Vec3| rotate_inv(a.orientation, x - a.position);
        Self { floor, inside: [local(b.position), local(deepest)] }
    }

    /// Whether the floor rules out A's edges `first` to `first + 3` (`first` a multiple of
    /// four), as bits (bit `l` for edge `first + l`; bits past the last edge mean nothing):
    /// first by the cheap bound ([`EdgeFloor::rules_out4_cheap`]), then, unless that rules out
    /// all four, by the exact one ([`EdgeFloor::rules_out4_exact`]). In A's frame, from its
    /// precomputed [`EdgeGroup`] where the caller has them.
    fn rules_out4(&self, a: &Posed, first: u32) -> u32 {
        let computed;
        let group = match a.edge_groups.get(first as usize / 4) {
            Some(g) => g,
            None => {
                computed = EdgeGroup::new(a, first);
                &computed
            }
        };
        let cheap = self.rules_out4_cheap(group);
        if cheap == 0b1111 { cheap } else { cheap | self.rules_out4_exact(group) }
    }

    /// A cheaper, looser test than `arc_max`'s, four edges at a time: on the arc from `n0`
    /// to `n1` (the angle `α` between them), `u = a n0 + b n1` with `a, b >= 0` and
    /// `1 <= a + b <= 1 / cos(α / 2)`, so `u · w` is at most `max(n0 · w, n1 · w)` when that is
    /// not positive, and at most it over `cos(α / 2)` when it is. Edges whose normals are
    /// nearly equal or nearly opposed (where `arc_max` falls back to `|w|`, and the arc of
    /// nearly opposed normals is not their span) are left to the exact bound, so this rules out
    /// only edges that the exact bound rules out (up to rounding, far below the slack).
    fn rules_out4_cheap(&self, g: &EdgeGroup) -> u32 {
        let dot = lane_dot;
        let well_defined = g.mm.cmpge(Vec4::splat(EDGE_PARALLEL_SIN * EDGE_PARALLEL_SIN)).bitmask();
        let mut ruled = 0;
        for x in self.inside {
            let w = [Vec4::splat(x.x) - g.p[0], Vec4::splat(x.y) - g.p[1], Vec4::splat(x.z) - g.p[2]];
            let ends = dot(&g.n0, &w).max(dot(&g.n1, &w));
            let arc = Vec4::select(ends.cmpgt(Vec4::ZERO), ends * g.secant, ends);
            let bound = arc + (Vec4::splat(EDGE_FLOOR_SLACK) * dot(&w, &w).sqrt() + Vec4::splat(EDGE_FLOOR_MIN_SLACK));
            ruled |= bound.cmple(Vec4::splat(self.floor)).bitmask();
        }
        ruled & well_defined
    }

    /// `EdgeFloor::rules_out` on four edges at once (see [`EdgeFloor::rules_out4`]), each
    /// lane with `arc_max`'s operations in the same order, both branches then a select, so
    /// each bit is `rules_out`'s.
    fn rules_out4_exact(&self, g: &EdgeGroup) -> u32 {
        let (dot, cross) = (lane_dot, lane_cross);
        let (n0, n1, m, mm) = (&g.n0, &g.n1, &g.m, g.mm);
        let ill_defined = mm.cmplt(Vec4::splat(EDGE_PARALLEL_SIN * EDGE_PARALLEL_SIN));
        let mut ruled = 0;
        for x in self.inside {
            let w = [Vec4::splat(x.x) - g.p[0], Vec4::splat(x.y) - g.p[1], Vec4::splat(x.z) - g.p[2]];
            let length = dot(&w, &w).sqrt();
            let t = dot(&w, m) / mm;
            let wp = [w[0] - m[0] * t, w[1] - m[1] * t, w[2] - m[2] * t];
            let between = dot(&cross(n0, &wp), m).cmpge(Vec4::ZERO) & dot(&cross(&wp, n1), m).cmpge(Vec4::ZERO);
            let arc = Vec4::select(between, dot(&wp, &wp).sqrt(), dot(n0, &w).max(dot(n1, &w)));
            let arc = Vec4::select(ill_defined, length, arc);
            let bound = arc + (Vec4::splat(EDGE_FLOOR_SLACK) * length + Vec4::splat(EDGE_FLOOR_MIN_SLACK));
            ruled |= bound.cmple(Vec4::splat(self.floor)).bitmask();
        }
        ruled
    }

    /// Whether no edge pair with A's edge from `a0` between faces `fa0` and `fa1` can separate
    /// by more than the floor (in A's frame, as the lanes test it).
    #[cfg(test)]
    fn rules_out(&self, a: &Posed, a0: u32, fa0: u32, fa1: u32) -> bool {
        let (p, n0, n1) = (a.local_point(a0), a.local_face_normal(fa0), a.local_face_normal(fa1));
        self.inside.iter().any(|&x| {
            let w = x - p;
            arc_max(n0, n1, w) + (EDGE_FLOOR_SLACK * w.length() + EDGE_FLOOR_MIN_SLACK) <= self.floor
        })
    }
}

/// `Vec3::dot` in each lane of `Vec4`s holding x, y and z.
fn lane_dot(u: &[Vec4; 3], v: &[Vec4; 3]) -> Vec4 {
    u[0] * v[0] + u[1] * v[1] + u[2] * v[2]
}

/// `Vec3::cross` in each lane of `Vec4`s holding x, y and z.
fn lane_cross(u: &[Vec4; 3], v: &[Vec4; 3]) -> [Vec4; 3] {
    [u[1] * v[2] - v[1] * u[2], u[2] * v[0] - v[2] * u[0], u[0] * v[1] - v[0] * u[1]]
}

/// The largest `u · w` over unit vectors `u` on the shorter great arc from `n0` to `n1`, or
/// `|w|` (a bound over every direction) when the normals are nearly equal or nearly opposed
/// and the arc's plane is ill-defined. The edge query computes it four edges at a time
/// ([`EdgeFloor::rules_out4`]); this is the reference its test compares against.
#[cfg(test)]
fn arc_max(n0: Vec3, n1: Vec3, w: Vec3) -> f32 {
    let m = n0.cross(n1);
    let mm = m.length_squared();
    if mm < EDGE_PARALLEL_SIN * EDGE_PARALLEL_SIN {
        return w.length();
    }
    // The direction of `w` within the arc's plane, if it falls between the ends.
    let wp = w - m * (w.dot(m) / mm);
    if n0.cross(wp).dot(m) >= 0.0 && wp.cross(n1).dot(m) >= 0.0 { wp.length() } else { n0.dot(w).max(n1.dot(w)) }
}

/// [`edge_query`] with the smallest arrays that hold A's faces and B's edges (a box: 6 and
/// 12; two boxes go to [`box_edge_query`] first), or [`edge_query_uncached`] past the largest.
fn edge_query_dispatch(
    a: &Posed,
    b: &Posed,
    floor: Option<EdgeFloor>,
    floor_b: Option<EdgeFloor>,
) -> ((u32, u32), f32, Vec3) {
    let (faces, edges) = (a.shape.face_count, b.shape.edge_count);
    if faces <= 8 && edges <= 12 {
        edge_query::<8, 12, 3>(a, b, floor, floor_b)
    } else if faces <= 32 && edges <= 48 {
        edge_query::<32, 48, 12>(a, b, floor, floor_b)
    } else if faces <= 64 && edges <= 96 {
        edge_query::<64, 96, 24>(a, b, floor, floor_b)
    } else if faces <= 128 && edges <= 192 {
        edge_query::<128, 192, 48>(a, b, floor, floor_b)
    } else {
        edge_query_uncached(a, b)
    }
}

/// The edge query of two boxes ([`SHAPE_BOX`]): the same answer as [`edge_query_dispatch`],
/// found from the nine axes `u_i x v_k` of their edge directions instead of from their 144
/// edge pairs.
///
/// On each axis `L` (oriented from A's centre towards B's) the two boxes separate by
/// `|L · (c_B - c_A)| - r_A(L) - r_B(L)`, and the edge pair that realizes it is A's edge of
/// direction `u_i` furthest along `L` and B's edge of direction `v_k` furthest along `-L`:
/// the pair whose arcs cross at `L` on the Gauss map, which the general query finds by its
/// Minkowski-face test. The best axis's pair then goes through [`edge_separation`], so the
/// separation and axis are the general query's bit for bit; only near-ties between two axes
/// (within rounding) may pick the other pair. Axes down to [`BOX_PARALLEL_SIN`], a little
/// more nearly parallel than [`EDGE_PARALLEL_SIN`], are kept, and when the best one's pair
/// fails [`edge_separation`]'s own test the general query answers.
fn box_edge_query(a: &Posed, b: &Posed) -> ((u32, u32), f32, Vec3) {
    let frame = |p: &Posed| -> ([Vec3; 3], [f32; 3]) {
        let plus = |k: usize| p.shape.first_point + p.shape.point_count + 2 * k as u32 + 1;
        (
            std::array::from_fn(|k| p.face_plane(2 * k as u32 + 1).0),
            std::array::from_fn(|k| p.geometry[plus(k) as usize].w),
        )
    };
    let ((ua, ha), (ub, hb)) = (frame(a), frame(b));
    let d = b.position - a.position;
    // The nine axes three at a time: for A's axis `i`, lane `k` of each `Vec4` holds the axis
    // `raw = u_i x v_k` (the fourth lane is zero and never kept), with `Vec3::cross`'s,
    // `dot`'s and `length`'s products and sums in their order, so each lane is the one-axis
    // value bit for bit. B's axes are also read in lanes as `v_(k+1)` and `v_(k+2)` (mod 3).
    let lanes = |f: &dyn Fn(usize) -> f32| Vec4::new(f(0), f(1), f(2), 0.0);
    let b_axes = |m: usize| {
        let axis = |c: usize| lanes(&|k| ub[(k + m) % 3][c]);
        ([axis(0), axis(1), axis(2)], lanes(&|k| hb[(k + m) % 3]))
    };
    let (([bx, by, bz], _), ([px, py, pz], hp), ([qx, qy, qz], hq)) = (b_axes(0), b_axes(1), b_axes(2));
    let dot = |x: Vec4, y: Vec4, z: Vec4, v: Vec3| x * v.x + y * v.y + z * v.z;
    let (mut s_raw, mut len) = ([0.0; 12], [0.0; 12]);
    for i in 0..3 {
        let (ax, ay, az) = (Vec4::splat(ua[i].x), Vec4::splat(ua[i].y), Vec4::splat(ua[i].z));
        let (x, y, z) = (ay * bz - by * az, az * bx - bz * ax, ax * by - bx * ay);
        let along = dot(x, y, z, d).abs();
        let (p, q) = ((i + 1) % 3, (i + 2) % 3);
        let reach_a = dot(x, y, z, ua[p]).abs() * ha[p] + dot(x, y, z, ua[q]).abs() * ha[q];
        let reach_b = hp * (x * px + y * py + z * pz).abs() + hq * (x * qx + y * qy + z * qz).abs();
        s_raw[4 * i..4 * i + 4].copy_from_slice(&(along - reach_a - reach_b).to_array());
        len[4 * i..4 * i + 4].copy_from_slice(&(x * x + y * y + z * z).to_array().map(f32::sqrt));
    }
    // Each axis unnormalized: the separation along `raw` is `len` times that along the unit
    // axis, so comparing `s_raw` with `len` times the best so far divides only for the best.
    // The comparisons of one axis at a time, in its order, as selections rather than branches
    // (which axis wins is nothing a branch predictor can learn).
    let mut best = (0, f32::MIN);
    for i in 0..3 {
        for k in 0..3 {
            let (s, l) = (s_raw[4 * i + k], len[4 * i + k]);
            let take = l >= BOX_PARALLEL_SIN && (best.1 == f32::MIN || s > best.1 * l);
            best = if take { (4 * i + k, s / l) } else { best };
        }
    }
    let (i, k, s) = (best.0 / 4, best.0 % 4, best.1);
    if s == f32::MIN {
        return ((0, 0), f32::MIN, Vec3::ZERO);
    }
    let raw = ua[i].cross(ub[k]);
    let unit = raw / raw.length();
    let l = if raw.dot(d) < 0.0 { -unit } else { unit };
    // Edge `4 i + b_p + 2 b_q` of a box runs along its axis `i` on the plus side of axes
    // `p = i + 1` and `q = i + 2` (mod 3) where `b_p` and `b_q` are 1 (`Polytope::cuboid`).
    let edge = |axes: &[Vec3; 3], i: usize, w: Vec3| {
        let side = |m: usize| u32::from(w.dot(axes[(i + m) % 3]) > 0.0);
        4 * i as u32 + side(1) + 2 * side(2)
    };
    let (ea, eb) = (edge(&ua, i, l), edge(&ub, k, -l));
    let ([a0, a1, _, _], [b0, b1, _, _]) = (a.edge(ea), b.edge(eb));
    let (pa0, pa1, pb0, pb1) = (a.point(a0), a.point(a1), b.point(b0), b.point(b1));
    match edge_separation(a, pa0, pa1, (pa1 - pa0).length(), pb0, pb1 - pb0, (pb1 - pb0).length()) {
        Some((s, axis)) => ((ea, eb), s, axis),
        None => edge_query_dispatch(a, b, None, None),
    }
}

/// [`edge_query`] for shapes too large for its arrays: every product where it is used.
fn edge_query_uncached(a: &Posed, b: &Posed) -> ((u32, u32), f32, Vec3) {
    let (mut edge_pair, mut sep_e, mut axis_e) = ((0, 0), f32::MIN, Vec3::ZERO);
    for ea in 0..a.shape.edge_count {
        let [a0, a1, fa0, fa1] = a.edge(ea);
        let (pa0, pa1) = (a.point(a0), a.point(a1));
        let (na0, na1) =
            (rotate_inv(b.orientation, a.face_plane(fa0).0), rotate_inv(b.orientation, a.face_plane(fa1).0));
        let na1xna0 = na1.cross(na0);
        for eb in 0..b.shape.edge_count {
            let [_, _, fb0, fb1] = b.edge(eb);
            let (c, d) = (-b.local_face_normal(fb0), -b.local_face_normal(fb1));
            if !is_minkowski_face(na0, na1, na1xna0, c, d, d.cross(c)) {
                continue;
            }
            let [b0, b1, _, _] = b.edge(eb);
            let (pb0, pb1) = (b.point(b0), b.point(b1));
            let len_a = (pa1 - pa0).length();
            if let Some((s, axis)) = edge_separation(a, pa0, pa1, len_a, pb0, pb1 - pb0, (pb1 - pb0).length())
                && s > sep_e
            {
                sep_e = s;
                edge_pair = (ea, eb);
                axis_e = axis;
            }
        }
    }
    (edge_pair, sep_e, axis_e)
}

/// The separation of A's edge `pa0`-`pa1` (length `len_a`) from B's edge from `pb0` along
/// `along_b` (length `len_b`) along their common normal (pointing away from A's centre), and
/// that normal; `None` for near-parallel edges.
#[inline]
fn edge_separation(
    a: &Posed,
    pa0: Vec3,
    pa1: Vec3,
    len_a: f32,
    pb0: Vec3,
    along_b: Vec3,
    len_b: f32,
) -> Option<(f32, Vec3)> {
    let axis = (pa1 - pa0).cross(along_b);
    let len = axis.length();
    if len < EDGE_PARALLEL_SIN * len_a * len_b {
        return None;
    }
    let mut axis = axis / len;
    if axis.dot(pa0 - a.position) < 0.0 {
        axis = -axis;
    }
    Some((axis.dot(pb0 - pa0), axis))
}

/// The contacts of two polytopes, and the face that keeps them `margin` apart (A's, or B's
/// with `FACE_OF_B`) or [`NO_FACE`].
fn polytope_polytope(a: &Posed, b: &Posed, margin: f32) -> (Manifold, u32) {
    let radii = a.shape.radius + b.shape.radius;
    let dots = (a.shape.kind == SHAPE_BOX && b.shape.kind == SHAPE_BOX).then(|| box_axis_dots(a, b));
    // A face plane that keeps the shapes a margin apart: no contact (and no edge search).
    let (face_a, sep_a) = match &dots {
        Some(d) => box_best_face(a, b, radii, margin, |k, j| d[k][j]),
        None => best_face(a, b, radii, margin),
    };
    if sep_a - radii >= margin {
        return (Manifold::default(), face_a);
    }
    let (face_b, sep_b) = match &dots {
        Some(d) => box_best_face(b, a, radii, margin, |k, j| d[j][k]),
        None => best_face(b, a, radii, margin),
    };
    if sep_b - radii >= margin {
        return (Manifold::default(), face_b | FACE_OF_B);
    }
    (polytope_contacts(a, b, margin, radii, (face_a, sep_a), (face_b, sep_b)), NO_FACE)
}

/// The contacts of two polytopes that no face keeps `margin` apart, from A's and B's best
/// faces and their separations.
fn polytope_contacts(
    a: &Posed,
    b: &Posed,
    margin: f32,
    radii: f32,
    best_a: (u32, f32),
    best_b: (u32, f32),
) -> Manifold {
    let ((face_a, sep_a), (face_b, sep_b)) = (best_a, best_b);
    // Only an edge pair that separates more than this replaces the face contact.
    let floor = sep_a.max(sep_b) + EDGE_TOLERANCE;
    let (edge_pair, sep_e, axis_e) = if a.shape.kind == SHAPE_BOX && b.shape.kind == SHAPE_BOX {
        box_edge_query(a, b)
    } else {
        let ruling = (b.shape.edge_count > EDGE_FLOOR_MIN_EDGES).then(|| EdgeFloor::new(a, b, face_a, floor));
        let ruling_b = (a.shape.edge_count > EDGE_FLOOR_MIN_EDGES && b.shape.edge_count > EDGE_FLOOR_MIN_EDGES)
            .then(|| EdgeFloor::new(b, a, face_b, floor));
        edge_query_dispatch(a, b, ruling, ruling_b)
    };
    let mut m = Manifold::default();

    if sep_e > sep_a.max(sep_b) + EDGE_TOLERANCE {
        let [a0, a1, _, _] = a.edge(edge_pair.0);
        let [b0, b1, _, _] = b.edge(edge_pair.1);
        let (pa0, pa1, pb0, pb1) = (a.point(a0), a.point(a1), b.point(b0), b.point(b1));
        let (s, t) = closest_between_segments(pa0, pa1, pb0, pb1);
        let (pa, pb) = (pa0.lerp(pa1, s), pb0.lerp(pb1, t));
        m.normal = axis_e;
        let separation = axis_e.dot(pb - pa) - radii;
        if separation < margin {
            m.push(a, b, pa, pb, separation, 0x8000_0000 | edge_pair.0 << 12 | edge_pair.1);
        }
        return m;
    }
    if sep_b > sep_a + FACE_TOLERANCE {
        face_contact(b, a, face_b, margin, radii).flipped()
    } else {
        face_contact(a, b, face_a, margin, radii)
    }
}

/// Contacts of `incident`'s face most anti-parallel to `reference`'s face `face`, among the
/// faces around its deepest vertex, clipped against that face (Sutherland-Hodgman) and reduced
/// to four; when clipping leaves nothing within the margin, one contact at the deepest vertex.
/// The normal is the reference face's. Twin of `face_contact` in shaders/collide.wgsl.
fn face_contact(reference: &Posed, incident: &Posed, face: u32, margin: f32, radii: f32) -> Manifold {
    let n = reference.face_plane(face).0;
    // The incident face: the most anti-parallel of the faces around the incident's deepest
    // vertex. (The most anti-parallel face overall can lie away from the overlap, on a hull of
    // small faces, and clip to nothing.)
    let (mut support, mut support_depth) = (0, f32::MAX);
    for k in 0..incident.shape.point_count {
        let d = n.dot(incident.point(k));
        if d < support_depth {
            support_depth = d;
            support = k;
        }
    }
    let mut incident_face = 0;
    let mut lowest = f32::MAX;
    let mut consider = |f: u32| {
        let d = incident.face_plane(f).0.dot(n);
        if d < lowest {
            lowest = d;
            incident_face = f;
        }
    };
    if incident.shape.kind == SHAPE_BOX {
        // A box's vertex `v` lies on faces `2k + (bit k of v)`, ascending in `k` (the layout of
        // `Polytope::cuboid`): the faces the loop below would find, in its order.
        (0..3).for_each(|k| consider(2 * k + (support >> k & 1)));
    } else {
        for f in 0..incident.shape.face_count {
            let (start, end) = incident.face_loop(f);
            if (0..end - start).any(|j| incident.face_vertex(f, j) == support) {
                consider(f);
            }
        }
    }
    // Clipping a convex polygon of `k` vertices against `s` sides leaves at most `k + s`: the
    // common small faces (boxes: 4 + 4) clip in short arrays, which cost less to set up.
    let (start, end) = incident.face_loop(incident_face);
    let (ref_start, ref_end) = reference.face_loop(face);
    let faces = FaceClip { reference, incident, face, incident_face, support, support_depth };
    if (end - start) + (ref_end - ref_start) <= SHORT_CLIP_POINTS {
        faces.contacts::<SHORT_CLIP_POINTS>(margin, radii)
    } else {
        faces.contacts::<MAX_CLIP_POINTS>(margin, radii)
    }
}

/// The most points a face clip holds in its short arrays (see [`face_contact`]).
const SHORT_CLIP_POINTS: usize = 16;

/// [`face_contact`]'s faces: the reference face, the incident face, and the incident's deepest
/// vertex along the reference normal with its depth.
struct FaceClip<'a, 'b> {
    reference: &'a Posed<'b>,
    incident: &'a Posed<'b>,
    face: u32,
    incident_face: u32,
    support: u32,
    support_depth: f32,
}

impl FaceClip<'_, '_> {
    /// [`face_contact`]'s clip and reduction, in arrays of `N` points (at most
    /// [`MAX_CLIP_POINTS`]).
    fn contacts<const N: usize>(&self, margin: f32, radii: f32) -> Manifold {
        let FaceClip { reference, incident, face, incident_face, support, support_depth } = *self;
        let (n, offset) = reference.face_plane(face);
        // The incident polygon; keys are the incident vertex, or for a point made by clipping,
        // 0x4000 | incident edge << 7 | reference side.
        let mut poly = [(Vec3::ZERO, 0u32); N];
        let mut count = 0;
        let (start, end) = incident.face_loop(incident_face);
        for j in 0..(end - start).min(N) {
            let v = incident.face_vertex(incident_face, j);
            poly[count] = (incident.point(v), j as u32);
            count += 1;
        }
        let (ref_start, ref_end) = reference.face_loop(face);
        let sides = ref_end - ref_start;
        let mut clipped = [(Vec3::ZERO, 0u32); N];
        for side in 0..sides {
            let v0 = reference.point(reference.face_vertex(face, side));
            let v1 = reference.point(reference.face_vertex(face, (side + 1) % sides));
            let out = (v1 - v0).cross(n);
            // Distances within the tolerance count as on the side: such a vertex is kept, and no
            // clipped point is made beside it.
            let tolerance = CLIP_TOLERANCE * out.dot(out).sqrt();
            let snap = |d: f32| if d.abs() <= tolerance { 0.0 } else { d };
            let mut kept = 0;
            for j in 0..count {
                let (p, key_p) = poly[j];
                let (q, _) = poly[(j + 1) % count];
                let (dp, dq) = (snap(out.dot(p - v0)), snap(out.dot(q - v0)));
                if dp <= 0.0 && kept < N {
                    clipped[kept] = (p, key_p);
                    kept += 1;
                }
                if ((dp < 0.0 && dq > 0.0) || (dp > 0.0 && dq < 0.0)) && kept < N {
                    let edge_key = if key_p & 0x4000 != 0 { (key_p >> 7) & 0x7f } else { key_p };
                    clipped[kept] = (p + (q - p) * (dp / (dp - dq)), 0x4000 | edge_key << 7 | side as u32);
                    kept += 1;
                }
            }
            poly[..kept].copy_from_slice(&clipped[..kept]);
            count = kept;
        }
        // Keep the points below the reference face (within the margin), then reduce to four:
        // the deepest, the farthest from it, and the two that span the largest area with them.
        let mut candidates = [(Vec3::ZERO, 0u32, 0.0_f32); N];
        let mut kept = 0;
        for &(p, key) in &poly[..count] {
            let s = n.dot(p) - offset - radii;
            if s < margin {
                candidates[kept] = (p, key, s);
                kept += 1;
            }
        }
        let mut m = Manifold { normal: n, ..Manifold::default() };
        if kept == 0 {
            // Clipping left nothing, yet the separating axis says the bodies are within the
            // margin: one contact at the deepest vertex, so no contact is lost.
            let s = support_depth - offset - radii;
            if s < margin {
                let p = incident.point(support);
                m.push(
                    reference,
                    incident,
                    p - n * (n.dot(p) - offset),
                    p,
                    s,
                    face | incident_face << 8 | 0x3fff << 16,
                );
            }
            return m;
        }
        let mut chosen = [usize::MAX; MAX_MANIFOLD_POINTS];
        chosen[0] = (0..kept).min_by(|&i, &j| candidates[i].2.total_cmp(&candidates[j].2)).unwrap_or(0);
        let origin = candidates[chosen[0]].0;
        chosen[1] = farthest(&candidates[..kept], |p| (p - origin).length_squared(), &chosen);
        if chosen[1] != usize::MAX {
            let edge = candidates[chosen[1]].0 - origin;
            chosen[2] = farthest(&candidates[..kept], |p| edge.cross(p - origin).dot(n), &chosen);
            chosen[3] = farthest(&candidates[..kept], |p| -edge.cross(p - origin).dot(n), &chosen);
        }
        let base_key = face | incident_face << 8;
        for &i in chosen.iter().filter(|&&i| i != usize::MAX) {
            let (p, key, s) = candidates[i];
            let on_reference = p - n * (n.dot(p) - offset);
            m.push(reference, incident, on_reference, p, s, base_key | key << 16);
        }
        m
    }
}

/// The unchosen candidate with the largest positive `score`, or `usize::MAX`.
fn farthest(
    candidates: &[(Vec3, u32, f32)],
    score: impl Fn(Vec3) -> f32,
    chosen: &[usize; MAX_MANIFOLD_POINTS],
) -> usize {
    let mut best = (usize::MAX, 1e-8_f32);
    for (i, c) in candidates.iter().enumerate() {
        if chosen.contains(&i) {
            continue;
        }
        let s = score(c.0);
        if s > best.1 {
            best = (i, s);
        }
    }
    best.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::Packed;
    use crate::prelude::*;

    /// Contacts between two shapes at the given poses (body-origin positions).
    fn contacts(sa: Shape, pa: Vec3, qa: Quat, sb: Shape, pb: Vec3, qb: Quat) -> Manifold {
        contacts_and(sa, pa, qa, sb, pb, qb, |_, _| ()).0
    }

    /// [`contacts`], and `f` applied to the two posed shapes.
    fn contacts_and<R>(
        sa: Shape,
        pa: Vec3,
        qa: Quat,
        sb: Shape,
        pb: Vec3,
        qb: Quat,
        f: impl FnOnce(&Posed, &Posed) -> R,
    ) -> (Manifold, R) {
        let mut world = World::new(WorldDesc::default()).unwrap();
        world.add_body(RigidBodyDesc::dynamic(sa).position(pa).orientation(qa)).unwrap();
        world.add_body(RigidBodyDesc::dynamic(sb).position(pb).orientation(qb)).unwrap();
        let packed = Packed::new(&world);
        let posed = |i: usize| {
            Posed::new(
                &packed.shapes[packed.props[i].shape as usize],
                packed.bodies[i].position,
                packed.bodies[i].orientation,
                &packed.geometry,
                &packed.topology,
            )
        };
        let m = collide(&posed(0), &posed(1), 0.02);
        // World points and planes computed once per body give the same contacts bit for bit.
        let (mut world_a, mut world_b) = (Vec::new(), Vec::new());
        world_a.resize(Posed::world_len(posed(0).shape) as usize, Vec4::ZERO);
        world_b.resize(Posed::world_len(posed(1).shape) as usize, Vec4::ZERO);
        posed(0).world_into(&mut world_a);
        posed(1).world_into(&mut world_b);
        let (mut groups_a, mut groups_b) = (Vec::new(), Vec::new());
        Posed::local_groups(posed(0).shape, &packed.geometry, &mut groups_a);
        Posed::local_groups(posed(1).shape, &packed.geometry, &mut groups_b);
        let cached = collide(
            &Posed { world: &world_a, groups: &groups_a, ..posed(0) },
            &Posed { world: &world_b, groups: &groups_b, ..posed(1) },
            0.02,
        );
        assert_eq!(format!("{m:?}"), format!("{cached:?}"));
        // Every contact's core points are where the geometry says, up to the separation.
        for p in &m.points[..m.count] {
            let (wa, wb) = (packed.bodies[0].position + p.core_a, packed.bodies[1].position + p.core_b);
            let gap = m.normal.dot(wb - wa) - posed(0).shape.radius - posed(1).shape.radius;
            assert!((gap - p.separation).abs() < 1e-5, "{gap} vs {}", p.separation);
        }
        let r = f(&posed(0), &posed(1));
        (m, r)
    }

    /// The signed distance of two posed shapes by brute force: the largest gap
    /// `min_B d - max_A d` over unit directions `d` (the distance when apart, minus the
    /// penetration depth when overlapping), from 4,000 directions, the best eight refined by a
    /// random search that shrinks its steps (the gap has kinks and ridges at every face).
    fn signed_distance(a: &Posed, b: &Posed) -> f32 {
        let gap = |d: Vec3| b.min_along(d) + a.min_along(-d) - a.shape.radius - b.shape.radius;
        let golden = std::f32::consts::PI * (3.0 - 5.0_f32.sqrt());
        let mut coarse: Vec<(f32, Vec3)> = (0..4000)
            .map(|i| {
                let y = 1.0 - 2.0 * (i as f32 + 0.5) / 4000.0;
                let r = (1.0 - y * y).sqrt();
                let d = Vec3::new(r * (golden * i as f32).cos(), y, r * (golden * i as f32).sin());
                (gap(d), d)
            })
            .collect();
        coarse.sort_by(|x, y| y.0.total_cmp(&x.0));
        let mut rng = crate::scenes::Lcg(5);
        let mut best = coarse[0];
        for &start in &coarse[..8] {
            let mut here = start;
            let mut step = 0.06;
            while step > 1e-6 {
                let mut improved = false;
                for _ in 0..48 {
                    let jitter = Vec3::new(rng.next_centered(), rng.next_centered(), rng.next_centered());
                    let d = (here.1 + jitter.normalize_or_zero() * step).normalize();
                    if gap(d) > here.0 {
                        here = (gap(d), d);
                        improved = true;
                    }
                }
                if !improved {
                    step *= 0.6;
                }
            }
            if here.0 > best.0 {
                best = here;
            }
        }
        best.0
    }

    /// Over 800 random pairs of every shape kind near touching: a pair closer than the margin
    /// always has a contact, and the deepest contact's separation is the signed distance
    /// (within 3 mm, the face tolerance) down to 5 cm of overlap, except where two sharp
    /// polytopes are apart, where the separating axes give a lower bound (an early speculative
    /// contact, never a false depth). Deeper, the reported depth is at least 90 % of the truth.
    #[test]
    fn deepest_contact_is_the_signed_distance() {
        let mut rng = crate::scenes::Lcg(17);
        let hull_points: Vec<Vec3> =
            (0..10).map(|_| Vec3::new(rng.next_centered(), rng.next_centered(), rng.next_centered()) * 0.6).collect();
        let shape = |rng: &mut crate::scenes::Lcg, kind: u32| match kind {
            0 => Shape::sphere(rng.range(0.1, 0.3)),
            1 => Shape::cuboid(Vec3::new(rng.range(0.1, 0.4), rng.range(0.1, 0.4), rng.range(0.1, 0.4))),
            2 => Shape::capsule(rng.range(0.1, 0.3), rng.range(0.05, 0.2)),
            _ => Shape::convex_hull(&hull_points).unwrap(),
        };
        let (mut touching, mut checked) = (0, 0);
        for case in 0..800u32 {
            let (ka, kb) = (case % 4, (case / 4) % 4);
            let (sa, sb) = (shape(&mut rng, ka), shape(&mut rng, kb));
            let (qa, qb) = (rng.rotation(), rng.rotation());
            let towards = Vec3::new(rng.next_centered(), rng.next_centered(), rng.next_centered()).normalize();
            let pb = towards * rng.range(0.25, 0.75);
            let sharp = ka % 2 == 1 && kb % 2 == 1;
            let (m, truth) = contacts_and(sa, Vec3::ZERO, qa, sb, pb, qb, signed_distance);
            if truth >= 0.015 {
                continue;
            }
            touching += 1;
            assert!(m.count >= 1, "case {case} ({ka},{kb}): distance {truth} but no contact");
            let deepest = m.points[..m.count].iter().map(|p| p.separation).fold(f32::MAX, f32::min);
            if sharp && truth > 0.0 {
                assert!(deepest <= truth + 3e-3, "case {case} ({ka},{kb}): {deepest} vs {truth}");
            } else if truth < -0.05 {
                // Deep: clipping to the reference face may cut off the deepest vertex.
                assert!(deepest < 0.9 * truth, "case {case} ({ka},{kb}): {deepest} vs {truth}");
            } else {
                checked += 1;
                assert!((deepest - truth).abs() < 3e-3, "case {case} ({ka},{kb}): {deepest} vs {truth}");
            }
        }
        assert!(touching > 300 && checked > 100, "{touching} touching, {checked} checked");
    }

    fn unit_box() -> Shape {
        Shape::cuboid(Vec3::splat(0.5))
    }

    /// A unit box, a flat cuboid and the 32-point bench hull.
    fn polytopes() -> [Shape; 3] {
        let hull = Shape::convex_hull(&crate::scenes::bench_hull_points()).unwrap();
        [unit_box(), Shape::cuboid(Vec3::new(0.3, 0.6, 0.2)), hull]
    }

    /// Random orientations of two shapes and B's position, A at the origin: along a random
    /// direction, at `lo` to `hi` times the sum of their reaches (about their radii).
    fn random_pose(rng: &mut crate::scenes::Lcg, sa: &Shape, sb: &Shape, lo: f32, hi: f32) -> (Vec3, Quat, Quat) {
        let towards = Vec3::new(rng.next_centered(), rng.next_centered(), rng.next_centered()).normalize();
        let (qa, qb) = (rng.rotation(), rng.rotation());
        let reach = |s: &Shape| if matches!(s, Shape::ConvexHull(_)) { 2.0 } else { 0.6 };
        (towards * (rng.range(lo, hi) * (reach(sa) + reach(sb))), qa, qb)
    }

    #[test]
    fn box_resting_on_box_has_four_face_contacts() {
        let m = contacts(unit_box(), Vec3::ZERO, Quat::IDENTITY, unit_box(), Vec3::new(0.2, 0.99, 0.1), Quat::IDENTITY);
        assert_eq!(m.count, 4);
        assert!((m.normal - Vec3::Y).length() < 1e-5, "{}", m.normal);
        for p in &m.points[..4] {
            assert!((p.separation + 0.01).abs() < 1e-5, "{}", p.separation);
        }
        // The contacts span the overlap of the two faces: x in [-0.3, 0.5], z in [-0.4, 0.5].
        let xs: Vec<f32> = m.points.iter().map(|p| p.core_a.x).collect();
        assert!((xs.iter().cloned().fold(f32::MAX, f32::min) + 0.3).abs() < 1e-5);
        assert!((xs.iter().cloned().fold(f32::MIN, f32::max) - 0.5).abs() < 1e-5);
        // Keys are distinct.
        let mut keys: Vec<u32> = m.points.iter().map(|p| p.key).collect();
        keys.sort();
        keys.dedup();
        assert_eq!(keys.len(), 4);
    }

    #[test]
    fn far_boxes_have_no_contacts_and_order_only_flips_the_normal() {
        let m = contacts(unit_box(), Vec3::ZERO, Quat::IDENTITY, unit_box(), Vec3::new(0.0, 1.5, 0.0), Quat::IDENTITY);
        assert_eq!(m.count, 0);
        let a = contacts(
            unit_box(),
            Vec3::ZERO,
            Quat::IDENTITY,
            Shape::sphere(0.3),
            Vec3::new(0.0, 0.79, 0.0),
            Quat::IDENTITY,
        );
        let b = contacts(
            Shape::sphere(0.3),
            Vec3::new(0.0, 0.79, 0.0),
            Quat::IDENTITY,
            unit_box(),
            Vec3::ZERO,
            Quat::IDENTITY,
        );
        assert_eq!((a.count, b.count), (1, 1));
        assert!((a.normal + b.normal).length() < 1e-6);
        assert!((a.points[0].separation - b.points[0].separation).abs() < 1e-6);
        assert!((a.points[0].separation + 0.01).abs() < 1e-5);
    }

    #[test]
    fn box_on_its_edge_across_another_edge_touches_at_one_point() {
        // A's top edge runs along x, B's bottom edge along z: they cross.
        let qa = Quat::from_rotation_x(std::f32::consts::FRAC_PI_4);
        let qb = Quat::from_rotation_z(std::f32::consts::FRAC_PI_4);
        let half_diagonal = 0.5 * std::f32::consts::SQRT_2;
        let m = contacts(unit_box(), Vec3::ZERO, qa, unit_box(), Vec3::new(0.1, 2.0 * half_diagonal - 0.005, 0.05), qb);
        assert_eq!(m.count, 1, "{m:?}");
        assert!(m.points[0].key & 0x8000_0000 != 0, "an edge-edge contact");
        assert!((m.normal - Vec3::Y).length() < 1e-3, "{}", m.normal);
        assert!((m.points[0].separation + 0.005).abs() < 1e-4, "{}", m.points[0].separation);
    }

    #[test]
    fn sphere_and_capsule_pairs() {
        let s = contacts(
            Shape::sphere(0.5),
            Vec3::ZERO,
            Quat::IDENTITY,
            Shape::sphere(0.25),
            Vec3::new(0.0, 0.0, 0.7),
            Quat::IDENTITY,
        );
        assert_eq!(s.count, 1);
        assert!((s.points[0].separation + 0.05).abs() < 1e-6 && (s.normal - Vec3::Z).length() < 1e-6);
        // A capsule lying across a sphere: one contact below its middle.
        let lying = Quat::from_rotation_z(std::f32::consts::FRAC_PI_2);
        let c = contacts(
            Shape::sphere(0.5),
            Vec3::ZERO,
            Quat::IDENTITY,
            Shape::capsule(1.0, 0.2),
            Vec3::new(0.0, 0.69, 0.0),
            lying,
        );
        assert_eq!(c.count, 1);
        assert!((c.points[0].separation + 0.01).abs() < 1e-5);
        // Two parallel capsules side by side: two contacts over their common length.
        let p = contacts(
            Shape::capsule(1.0, 0.2),
            Vec3::ZERO,
            lying,
            Shape::capsule(0.5, 0.2),
            Vec3::new(0.8, 0.39, 0.0),
            lying,
        );
        assert_eq!(p.count, 2, "{p:?}");
        for q in &p.points[..2] {
            assert!((q.separation + 0.01).abs() < 1e-5);
        }
        // Crossed capsules: one contact.
        let x = contacts(
            Shape::capsule(1.0, 0.2),
            Vec3::ZERO,
            lying,
            Shape::capsule(1.0, 0.2),
            Vec3::new(0.0, 0.0, 0.39),
            Quat::IDENTITY,
        );
        assert_eq!(x.count, 1);
        assert!((x.normal - Vec3::Z).length() < 1e-5);
    }

    #[test]
    fn capsule_lying_on_a_box_has_two_contacts_and_a_sphere_sees_the_corner() {
        let lying = Quat::from_rotation_z(std::f32::consts::FRAC_PI_2);
        let m = contacts(
            Shape::capsule(0.3, 0.1),
            Vec3::new(0.1, 0.59, 0.0),
            lying,
            unit_box(),
            Vec3::ZERO,
            Quat::IDENTITY,
        );
        assert_eq!(m.count, 2, "{m:?}");
        assert!((m.normal + Vec3::Y).length() < 1e-5, "A is the capsule: the normal points down into the box");
        for p in &m.points[..2] {
            assert!((p.separation + 0.01).abs() < 1e-5);
        }
        // A sphere beyond a corner: the normal points from the corner to its centre.
        let corner = Vec3::splat(0.5);
        let centre = corner + Vec3::ONE.normalize() * 0.3;
        let c = contacts(unit_box(), Vec3::ZERO, Quat::IDENTITY, Shape::sphere(0.29), centre, Quat::IDENTITY);
        assert_eq!(c.count, 1);
        assert!((c.normal - Vec3::ONE.normalize()).length() < 1e-4, "{}", c.normal);
        assert!((c.points[0].separation - 0.01).abs() < 1e-4);
        // A sphere whose centre is inside the box is pushed out through the nearest face.
        let d = contacts(
            unit_box(),
            Vec3::ZERO,
            Quat::IDENTITY,
            Shape::sphere(0.2),
            Vec3::new(0.1, 0.45, 0.0),
            Quat::IDENTITY,
        );
        assert!((d.normal - Vec3::Y).length() < 1e-5 && (d.points[0].separation + 0.25).abs() < 1e-5);
    }

    #[test]
    fn hull_pairs_produce_face_manifolds() {
        let hull = Shape::convex_hull(&crate::scenes::bench_hull_points()).unwrap();
        // A hull resting on a box: some contacts, all within the margin, normal up.
        let poly = hull.polytope().unwrap();
        let lowest = poly.vertices.iter().map(|v| v.y).fold(f32::MAX, f32::min);
        let m = contacts(
            unit_box(),
            Vec3::ZERO,
            Quat::IDENTITY,
            hull.clone(),
            Vec3::new(0.0, 0.5 - lowest - 0.001, 0.0),
            Quat::IDENTITY,
        );
        assert!(m.count >= 1);
        assert!(m.normal.y > 0.9, "{}", m.normal);
        for p in &m.points[..m.count] {
            assert!(p.separation < 0.02 && p.separation > -0.01, "{}", p.separation);
        }
    }

    /// The edge query from arrays (each size class) finds bit for bit the edge pair, separation
    /// and axis of the query that computes every product where it is used, over box-box,
    /// box-hull and hull-hull pairs at random touching poses.
    #[test]
    fn a_remembered_separating_face_gives_exactly_the_full_search() {
        let [cube, slab, hull] = polytopes();
        let shapes = [cube, slab, hull, Shape::sphere(0.4)];
        let mut rng = crate::scenes::Lcg(5);
        let (mut remembered, mut touching) = (0, 0);
        for trial in 0..400 {
            let (sa, sb) = (shapes[trial % 4].clone(), shapes[(trial / 4) % 4].clone());
            let (pb, qa, qb) = random_pose(&mut rng, &sa, &sb, 0.5, 1.5);
            // A face remembered from another pose: any face of either shape, or past the last.
            let stale = ((trial as u32 * 7) % 70) | if trial % 3 == 0 { FACE_OF_B } else { 0 };
            let (full, (found, again, from_stale)) = contacts_and(sa, Vec3::ZERO, qa, sb, pb, qb, |a, b| {
                let found = collide_cached(a, b, 0.02, NO_FACE);
                (found, collide_cached(a, b, 0.02, found.1), collide_cached(a, b, 0.02, stale))
            });
            let text = |m: &Manifold| format!("{m:?}");
            for (m, face) in [found, again, from_stale] {
                assert_eq!(text(&m), text(&full), "trial {trial}");
                assert!(face == NO_FACE || m.count == 0, "trial {trial}: a separating face and contacts");
            }
            if found.1 != NO_FACE {
                assert_eq!(again.1, found.1, "trial {trial}: the remembered face still separates");
                remembered += 1;
            }
            touching += usize::from(full.count > 0);
        }
        assert!(remembered > 50 && touching > 50, "{remembered} separated by a face, {touching} touching");
    }

    /// The edges of A and of B that [`EdgeFloor`]s pass over never hold the pair that decides
    /// the contact: over random poses of boxes and hulls, near and overlapping, and flush boxes
    /// a fraction of a milliradian apart (where near-parallel edges used to decide), the query
    /// with both floors says "an edge pair beats the faces" exactly when the full one does, with
    /// the same pair, separation and axis; and B's floor does pass over edges.
    #[test]
    fn edges_below_the_floor_never_decide_the_contact() {
        let shapes = polytopes();
        let mut rng = crate::scenes::Lcg(23);
        let (mut edges_decide, mut faces_decide, mut b_edges_ruled) = (0, 0, 0);
        for trial in 0..600 {
            let flush = trial % 4 == 0;
            let (sa, sb, pa, pb, qa, qb) = if trial == 0 {
                // Two boxes of the large pyramid's bottom row, as a step left them.
                (
                    unit_box(),
                    unit_box(),
                    Vec3::new(-27.499962, 0.49973086, -9.500542e-7),
                    Vec3::new(-26.50002, 0.49965045, -2.8503962e-7),
                    Quat::from_xyzw(-1.388271e-6, -5.799629e-7, 4.6726742e-5, 1.0),
                    Quat::from_xyzw(3.984284e-6, -7.263706e-7, 1.913566e-5, 1.0),
                )
            } else if flush {
                // A box beside or on another, flush, both turned by tiny random angles.
                let scale = [1e-5, 5e-5, 1e-4, 1e-3][trial / 4 % 4];
                let tiny = |rng: &mut crate::scenes::Lcg| {
                    let axis = Vec3::new(rng.next_centered(), rng.next_centered(), rng.next_centered());
                    Quat::from_scaled_axis(axis * scale)
                };
                let mut offset = Vec3::new(rng.range(-0.3, 0.3), rng.range(-0.3, 0.3), rng.range(-0.3, 0.3));
                offset[trial / 16 % 3] = 1.0 + rng.range(-0.002, 0.002);
                // Far from the origin, as in a wide pyramid, where rounding bends the edges.
                let pa = Vec3::new(rng.range(-40.0, 40.0), rng.range(0.0, 10.0), rng.range(-40.0, 40.0));
                (unit_box(), unit_box(), pa, pa + offset, tiny(&mut rng), tiny(&mut rng))
            } else {
                let (sa, sb) = (shapes[trial % 3].clone(), shapes[(trial / 3) % 3].clone());
                let (pb, qa, qb) = random_pose(&mut rng, &sa, &sb, 0.4, 0.9);
                (sa, sb, Vec3::ZERO, pb, qa, qb)
            };
            let (manifold, (full, pruned, floor, b_ruled)) = contacts_and(sa, pa, qa, sb, pb, qb, |a, b| {
                let radii = a.shape.radius + b.shape.radius;
                let (face_a, sep_a) = best_face(a, b, radii, f32::MAX);
                let (face_b, sep_b) = best_face(b, a, radii, f32::MAX);
                let floor = sep_a.max(sep_b) + EDGE_TOLERANCE;
                let (floor_a, floor_b) = (EdgeFloor::new(a, b, face_a, floor), EdgeFloor::new(b, a, face_b, floor));
                let b_ruled =
                    (0..b.shape.edge_count).filter(|&e| floor_b.rules_out4(b, e / 4 * 4) >> (e % 4) & 1 == 1).count();
                let pruned = edge_query_dispatch(a, b, Some(floor_a), Some(floor_b));
                (edge_query_dispatch(a, b, None, None), pruned, floor, b_ruled)
            });
            b_edges_ruled += b_ruled;
            if trial == 0 {
                assert_eq!(manifold.count, 4, "the pyramid's boxes keep their face contacts: {manifold:?}");
            }
            assert_eq!(full.1 > floor, pruned.1 > floor, "trial {trial}: {full:?} vs {pruned:?} over {floor}");
            if full.1 > floor {
                let bits =
                    |(pair, s, axis): ((u32, u32), f32, Vec3)| (pair, s.to_bits(), axis.to_array().map(f32::to_bits));
                assert_eq!(bits(full), bits(pruned), "trial {trial}");
                edges_decide += 1;
            } else {
                faces_decide += 1;
            }
        }
        assert!(b_edges_ruled > 1000, "the floor of B against A passed over {b_edges_ruled} of B's edges");
        assert!(edges_decide > 50 && faces_decide > 50, "{edges_decide} decided by edges, {faces_decide} by faces");
    }

    /// The floor's test on four edges of A at once rules out exactly the edges that the test
    /// one edge at a time does, over random poses of hulls and boxes, touching and apart, with
    /// floors from the faces' separations and around them; its cheap first bound rules out only
    /// edges that the exact one does (and a good share of them).
    #[test]
    fn four_edges_at_a_time_rule_out_what_one_at_a_time_does() {
        let shapes = polytopes();
        let mut rng = crate::scenes::Lcg(31);
        let (mut ruled, mut kept, cheap_ruled) = (0, 0, std::cell::Cell::new(0));
        for trial in 0..400 {
            let (sa, sb) = (shapes[trial % 3].clone(), shapes[(trial / 3) % 3].clone());
            let (pb, qa, qb) = random_pose(&mut rng, &sa, &sb, 0.4, 1.1);
            let shift = rng.range(-0.05, 0.05);
            let (four, one) = contacts_and(sa, Vec3::ZERO, qa, sb, pb, qb, |a, b| {
                let (face_a, sep_a) = best_face(a, b, 0.0, f32::MAX);
                let (_, sep_b) = best_face(b, a, 0.0, f32::MAX);
                let floor = EdgeFloor::new(a, b, face_a, sep_a.max(sep_b) + EDGE_TOLERANCE + shift);
                let edges = a.shape.edge_count;
                let lanes = |e: u32| EdgeGroup::new(a, e / 4 * 4);
                let exact = |e: u32| floor.rules_out4_exact(&lanes(e)) >> (e % 4) & 1 == 1;
                let cheap = |e: u32| floor.rules_out4_cheap(&lanes(e)) >> (e % 4) & 1 == 1;
                // The tiered test from the shape's precomputed groups, as the solver runs it,
                // and from groups computed on the spot.
                let mut groups = Vec::new();
                a.local_edge_groups(&mut groups);
                let cached = Posed { edge_groups: &groups, ..*a };
                let tiered = |e: u32| floor.rules_out4(&cached, e / 4 * 4) >> (e % 4) & 1 == 1;
                let on_the_spot = |e: u32| floor.rules_out4(a, e / 4 * 4) >> (e % 4) & 1 == 1;
                // The cheap bound rules out only what the exact one does, and rules out some.
                let (cheap, tiered): (Vec<bool>, Vec<bool>) =
                    ((0..edges).map(cheap).collect(), (0..edges).map(tiered).collect());
                let four: Vec<bool> = (0..edges).map(exact).collect();
                assert!(cheap.iter().zip(&four).all(|(&c, &e)| !c || e), "trial {trial}: {cheap:?} vs {four:?}");
                assert_eq!(tiered, four, "trial {trial}");
                assert_eq!(tiered, (0..edges).map(on_the_spot).collect::<Vec<_>>(), "trial {trial}");
                cheap_ruled.set(cheap_ruled.get() + cheap.iter().filter(|&&c| c).count());
                let one: Vec<bool> = (0..edges)
                    .map(|e| {
                        let [a0, _, f0, f1] = a.edge(e);
                        floor.rules_out(a, a0, f0, f1)
                    })
                    .collect();
                (four, one)
            })
            .1;
            assert_eq!(four, one, "trial {trial}");
            ruled += one.iter().filter(|&&r| r).count();
            kept += one.iter().filter(|&&r| !r).count();
        }
        assert!(ruled > 1000 && kept > 1000, "{ruled} edges ruled out, {kept} kept");
        assert!(cheap_ruled.get() > ruled / 4, "{} of {ruled} ruled out by the cheap bound", cheap_ruled.get());
    }

    /// A box's support from its axes and half extents is the smallest `d · x` over its eight
    /// world corners, within rounding (1e-6 of the box's size), over random boxes, poses far
    /// from the origin, and directions.
    #[test]
    fn a_boxs_support_from_its_axes_is_its_corners() {
        let mut rng = crate::scenes::Lcg(37);
        for trial in 0..300 {
            let half = Vec3::new(rng.range(0.05, 2.0), rng.range(0.05, 2.0), rng.range(0.05, 2.0));
            let at = Vec3::new(rng.range(-50.0, 50.0), rng.range(0.0, 20.0), rng.range(-50.0, 50.0));
            let (q, d) = (rng.rotation(), Vec3::new(rng.next_centered(), rng.next_centered(), rng.next_centered()));
            let d = d.normalize();
            let (analytic, corners, kind) = contacts_and(
                Shape::cuboid(half),
                at,
                q,
                unit_box(),
                at + Vec3::splat(100.0),
                Quat::IDENTITY,
                |a, _| (a.min_along(d), (0..8).map(|k| d.dot(a.point(k))).fold(f32::MAX, f32::min), a.shape.kind),
            )
            .1;
            assert_eq!(kind, SHAPE_BOX);
            let tolerance = 1e-6 * (at.length() + half.length());
            assert!((analytic - corners).abs() <= tolerance, "trial {trial}: {analytic} vs {corners}");
        }
    }

    /// The face query that passes over faces whose bound cannot beat the best so far finds the
    /// full scan's face and separation bit for bit, for boxes and hulls, overlapping, touching
    /// and apart, with and without the early stop at a separating face; and it does pass over
    /// faces.
    #[test]
    fn face_query_passes_over_faces_without_changing_its_answer() {
        let full = |reference: &Posed, other: &Posed, radii: f32, margin: f32| {
            let mut best = (0, f32::MIN);
            for f in 0..reference.shape.face_count {
                let (n, offset) = reference.face_plane(f);
                let s = other.min_along(n) - offset;
                if s > best.1 {
                    best = (f, s);
                    if s - radii >= margin {
                        break;
                    }
                }
            }
            best
        };
        let skipped = |reference: &Posed, other: &Posed, best: f32| {
            (0..reference.shape.face_count)
                .filter(|&f| {
                    let (n, offset) = reference.face_plane(f);
                    n.dot(other.position) - offset <= best
                })
                .count()
        };
        let shapes = polytopes();
        let mut rng = crate::scenes::Lcg(17);
        let (mut passed_over, mut apart) = (0, 0);
        for trial in 0..600 {
            let (sa, sb) = (shapes[trial % 3].clone(), shapes[(trial / 3) % 3].clone());
            let (pb, qa, qb) = random_pose(&mut rng, &sa, &sb, 0.3, 1.2);
            let margin = if trial % 2 == 0 { 0.01 } else { f32::MAX };
            let (fast, slow, skip) = contacts_and(sa, Vec3::ZERO, qa, sb, pb, qb, |a, b| {
                let (fast, slow) = (best_face(a, b, 0.0, margin), full(a, b, 0.0, margin));
                (fast, slow, skipped(a, b, slow.1))
            })
            .1;
            assert_eq!((fast.0, fast.1.to_bits()), (slow.0, slow.1.to_bits()), "trial {trial}");
            passed_over += skip;
            apart += usize::from(slow.1 > 0.0);
        }
        assert!(passed_over > 1000 && apart > 50, "{passed_over} faces passed over, {apart} pairs apart");
    }

    /// Between two boxes, the face queries from the shared axis products ([`box_best_face`])
    /// and the incident faces found from the box layout give the general code's answers bit
    /// for bit: random boxes near, overlapping and apart, with and without the early stop, and
    /// flush boxes (where the deepest vertex and the incident face come near ties).
    #[test]
    fn box_face_queries_match_the_general_ones() {
        let boxes = [unit_box(), Shape::cuboid(Vec3::new(0.3, 0.6, 0.2))];
        let mut rng = crate::scenes::Lcg(41);
        let (mut apart, mut clipped) = (0, 0);
        for trial in 0..900 {
            let (sa, sb) = (boxes[trial % 2].clone(), boxes[(trial / 2) % 2].clone());
            let (mut pb, mut qa, mut qb) = random_pose(&mut rng, &sa, &sb, 0.3, 1.2);
            if trial % 3 == 0 {
                // Resting flush, turned by a hair.
                (qa, qb) = (Quat::from_rotation_y(1e-4 * rng.next_centered()), Quat::IDENTITY);
                pb = Vec3::new(0.1 * rng.next_centered(), 0.5 + 0.3 + 1e-3 * rng.next_centered(), 0.0);
            }
            let margin = if trial % 2 == 0 { 0.01 } else { f32::MAX };
            let ((box_a, box_b), (general_a, general_b), faces) =
                contacts_and(sa, Vec3::ZERO, qa, sb, pb, qb, |a, b| {
                    let d = box_axis_dots(a, b);
                    let boxes = (
                        box_best_face(a, b, 0.0, margin, |k, j| d[k][j]),
                        box_best_face(b, a, 0.0, margin, |k, j| d[j][k]),
                    );
                    let general = (best_face(a, b, 0.0, margin), best_face(b, a, 0.0, margin));
                    // The general incident-face search, on a box posed as a hull would be.
                    let face = general.0.0;
                    let as_hull = Posed { shape: &GpuShape { kind: SHAPE_POLYTOPE, ..*b.shape }, ..*b };
                    let m = face_contact(a, b, face, f32::MAX, 0.0);
                    let hull = face_contact(a, &as_hull, face, f32::MAX, 0.0);
                    (boxes, general, (format!("{m:?}"), format!("{hull:?}")))
                })
                .1;
            let bits = |(f, s): (u32, f32)| (f, s.to_bits());
            assert_eq!(bits(box_a), bits(general_a), "trial {trial}");
            assert_eq!(bits(box_b), bits(general_b), "trial {trial}");
            assert_eq!(faces.0, faces.1, "trial {trial}");
            apart += usize::from(general_a.1 > 0.0);
            clipped += usize::from(faces.0.contains("count: 4"));
        }
        assert!(apart > 50 && clipped > 100, "{apart} pairs apart, {clipped} four-point clips");
    }

    /// The nine-axis query of two boxes gives the general edge query's answer: over random
    /// boxes near and overlapping, flush boxes turned by tiny angles far from the origin, and
    /// the pyramid's two boxes, both say "an edge pair beats the faces" for the same pairs, and
    /// then give the same separation and axis bit for bit, and the same pair unless another
    /// pair separates by as much within rounding.
    #[test]
    fn the_box_query_finds_the_general_edge_pair() {
        let mut rng = crate::scenes::Lcg(29);
        let (mut edges_decide, mut faces_decide, mut other_pair) = (0, 0, 0);
        for trial in 0..1500 {
            let flush = trial % 3 == 0;
            let mut size = || Vec3::new(rng.range(0.2, 0.8), rng.range(0.2, 0.8), rng.range(0.2, 0.8));
            let (sa, sb) =
                if trial % 5 == 0 { (unit_box(), unit_box()) } else { (Shape::cuboid(size()), Shape::cuboid(size())) };
            let (pa, pb, qa, qb) = if flush {
                let scale = [1e-5, 1e-4, 1e-3, 1e-2][trial / 3 % 4];
                let mut tiny = || {
                    Quat::from_scaled_axis(
                        Vec3::new(rng.next_centered(), rng.next_centered(), rng.next_centered()) * scale,
                    )
                };
                let (qa, qb) = (tiny(), tiny());
                let mut offset = Vec3::new(rng.range(-0.3, 0.3), rng.range(-0.3, 0.3), rng.range(-0.3, 0.3));
                offset[trial / 12 % 3] = 1.0 + rng.range(-0.01, 0.002);
                let pa = Vec3::new(rng.range(-40.0, 40.0), rng.range(0.0, 10.0), rng.range(-40.0, 40.0));
                (pa, pa + offset, qa, qb)
            } else {
                let (pb, qa, qb) = random_pose(&mut rng, &sa, &sb, 0.4, 0.9);
                (Vec3::ZERO, pb, qa, qb)
            };
            let (_, (boxes, general, floor, kinds)) = contacts_and(sa, pa, qa, sb, pb, qb, |a, b| {
                let radii = a.shape.radius + b.shape.radius;
                let (_, sep_a) = best_face(a, b, radii, f32::MAX);
                let (_, sep_b) = best_face(b, a, radii, f32::MAX);
                let floor = sep_a.max(sep_b) + EDGE_TOLERANCE;
                (box_edge_query(a, b), edge_query_dispatch(a, b, None, None), floor, (a.shape.kind, b.shape.kind))
            });
            assert_eq!(kinds, (SHAPE_BOX, SHAPE_BOX));
            assert_eq!(boxes.1 > floor, general.1 > floor, "trial {trial}: {boxes:?} vs {general:?} over {floor}");
            if general.1 <= floor {
                faces_decide += 1;
                continue;
            }
            edges_decide += 1;
            if boxes.0 != general.0 {
                assert!((boxes.1 - general.1).abs() < 1e-5, "trial {trial}: {boxes:?} vs {general:?}");
                other_pair += 1;
                continue;
            }
            let bits =
                |(pair, s, axis): ((u32, u32), f32, Vec3)| (pair, s.to_bits(), axis.to_array().map(f32::to_bits));
            assert_eq!(bits(boxes), bits(general), "trial {trial}");
        }
        assert!(edges_decide > 300 && faces_decide > 300, "{edges_decide} decided by edges, {faces_decide} by faces");
        assert!(other_pair < 10, "{other_pair} near-ties");
    }

    #[test]
    fn edge_query_from_arrays_matches_the_uncached_query() {
        let shapes = polytopes();
        let mut rng = crate::scenes::Lcg(11);
        let mut found = 0;
        for trial in 0..300 {
            let (sa, sb) = (shapes[trial % 3].clone(), shapes[(trial / 3) % 3].clone());
            let (pb, qa, qb) = random_pose(&mut rng, &sa, &sb, 0.5, 1.0);
            let (uncached, dispatched, wide) = contacts_and(sa, Vec3::ZERO, qa, sb, pb, qb, |a, b| {
                (
                    edge_query_uncached(a, b),
                    edge_query_dispatch(a, b, None, None),
                    edge_query::<128, 192, 48>(a, b, None, None),
                )
            })
            .1;
            let bits =
                |(pair, s, axis): ((u32, u32), f32, Vec3)| (pair, s.to_bits(), axis.to_array().map(f32::to_bits));
            assert_eq!(bits(uncached), bits(dispatched), "trial {trial}");
            assert_eq!(bits(uncached), bits(wide), "trial {trial}");
            found += usize::from(uncached.1 > f32::MIN);
        }
        assert!(found > 200, "only {found} of 300 pairs have a Minkowski edge pair");
    }
}
