//! Collision shapes and their exact mass properties.
//!
//! Every shape is described to the solver the same way: a set of *core points* in the body's
//! principal frame and a *radius* swept around them. A cuboid or a convex hull is its vertices
//! with radius 0, a sphere is its centre with radius `r`, a capsule is its two segment ends
//! with radius `r`. Vertex-versus-static-geometry detection (seed 000) then treats them all
//! alike: the support point of core point `p` against a plane of normal `n` is `p - r n`.

use std::collections::HashMap;
use std::sync::Arc;

use glam::{DMat3, DVec3, Quat, Vec3};

use crate::error::{Error, Result};

/// A collision shape, in the body's local frame (the frame the body's position and
/// orientation refer to).
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum Shape {
    /// A ball of `radius` metres centred on the body origin.
    Sphere {
        /// Radius, m. Must be positive.
        radius: f32,
    },
    /// A box centred on the body origin, its faces aligned with the local axes.
    Cuboid {
        /// Half of the box's size along each local axis, m. All must be positive.
        half_extents: Vec3,
    },
    /// The set of points within `radius` of the segment from `(0, -half_height, 0)` to
    /// `(0, half_height, 0)`: a cylinder along local Y capped by two half-balls.
    Capsule {
        /// Half the length of the core segment, m (the capsule's total height is
        /// `2 (half_height + radius)`). Must be positive.
        half_height: f32,
        /// Radius, m. Must be positive.
        radius: f32,
    },
    /// The convex hull of a point cloud, shared between bodies by reference counting.
    ConvexHull(Arc<ConvexHull>),
}

impl Shape {
    /// A sphere of `radius` metres.
    pub fn sphere(radius: f32) -> Self {
        Self::Sphere { radius }
    }

    /// A box of the given half-extents, metres.
    pub fn cuboid(half_extents: Vec3) -> Self {
        Self::Cuboid { half_extents }
    }

    /// A capsule along local Y: a segment of half-length `half_height` swept by `radius`.
    pub fn capsule(half_height: f32, radius: f32) -> Self {
        Self::Capsule { half_height, radius }
    }

    /// The convex hull of `points` (local frame, metres).
    ///
    /// # Errors
    /// [`Error::NonFinite`] for a NaN or infinite coordinate, [`Error::DegenerateShape`] when
    /// the points do not span a volume (fewer than four non-coplanar points).
    pub fn convex_hull(points: &[Vec3]) -> Result<Self> {
        Ok(Self::ConvexHull(Arc::new(ConvexHull::from_points(points)?)))
    }

    /// Checks the shape's parameters: finite and positive sizes.
    pub fn validate(&self) -> Result<()> {
        use crate::error::check_positive;
        match self {
            Self::Sphere { radius } => check_positive("sphere radius", *radius),
            Self::Cuboid { half_extents } => {
                check_positive("cuboid half-extent x", half_extents.x)?;
                check_positive("cuboid half-extent y", half_extents.y)?;
                check_positive("cuboid half-extent z", half_extents.z)
            }
            Self::Capsule { half_height, radius } => {
                check_positive("capsule half-height", *half_height)?;
                check_positive("capsule radius", *radius)
            }
            // A hull is validated when it is built.
            Self::ConvexHull(_) => Ok(()),
        }
    }

    /// Volume, m³.
    pub fn volume(&self) -> f32 {
        self.integrals().volume as f32
    }

    /// The radius swept around the core points (0 for polytopes).
    pub fn radius(&self) -> f32 {
        match self {
            Self::Sphere { radius } | Self::Capsule { radius, .. } => *radius,
            Self::Cuboid { .. } | Self::ConvexHull(_) => 0.0,
        }
    }

    /// The core points in the shape's local frame: vertices of a polytope, the centre of a
    /// sphere, the segment ends of a capsule.
    pub fn core_points(&self) -> Vec<Vec3> {
        match self {
            Self::Sphere { .. } => vec![Vec3::ZERO],
            Self::Capsule { half_height, .. } => {
                vec![Vec3::new(0.0, -half_height, 0.0), Vec3::new(0.0, *half_height, 0.0)]
            }
            Self::Cuboid { half_extents: e } => (0..8)
                .map(|i| {
                    let s = |bit: u32| if i & bit == 0 { -1.0 } else { 1.0 };
                    Vec3::new(s(1) * e.x, s(2) * e.y, s(4) * e.z)
                })
                .collect(),
            Self::ConvexHull(hull) => hull.vertices.clone(),
        }
    }

    /// The polytope of a box or a hull, in the shape's local frame; `None` for spheres and
    /// capsules, whose cores are a point and a segment.
    pub fn polytope(&self) -> Option<crate::polytope::Polytope> {
        match self {
            Self::Cuboid { half_extents } => Some(crate::polytope::Polytope::cuboid(*half_extents)),
            Self::ConvexHull(hull) => Some(crate::polytope::Polytope::from_hull(hull)),
            Self::Sphere { .. } | Self::Capsule { .. } => None,
        }
    }

    /// Mass properties for a uniform `density` (kg/m³).
    pub fn mass_properties(&self, density: f32) -> MassProperties {
        self.integrals().scaled(density as f64)
    }

    /// Volume, centroid and second moment `∫ x xᵀ dV` about the centroid, for unit density.
    fn integrals(&self) -> Integrals {
        use std::f64::consts::PI;
        match self {
            Self::Sphere { radius } => {
                let r = *radius as f64;
                let volume = 4.0 / 3.0 * PI * r * r * r;
                // ∫ x² dV = V r² / 5 for each axis.
                Integrals::diagonal(volume, DVec3::ZERO, DVec3::splat(volume * r * r / 5.0))
            }
            Self::Cuboid { half_extents } => {
                let e = half_extents.as_dvec3();
                let volume = 8.0 * e.x * e.y * e.z;
                Integrals::diagonal(volume, DVec3::ZERO, volume * e * e / 3.0)
            }
            Self::Capsule { half_height, radius } => {
                let (h, r) = (*half_height as f64, *radius as f64);
                let v_cyl = PI * r * r * 2.0 * h;
                let v_sph = 4.0 / 3.0 * PI * r * r * r;
                // Second moments along the radial axes (x, z) and the axis (y). Cylinder:
                // ∫x² = V r²/4, ∫y² = V h²/3. Two half-balls whose flat faces sit at ±h: ∫x² = V r²/5,
                // ∫y² = V (r²/5 + h² + 3 h r / 4) (parallel axes through their centroids at ±(h + 3r/8)).
                let radial = v_cyl * r * r / 4.0 + v_sph * r * r / 5.0;
                let axial = v_cyl * h * h / 3.0 + v_sph * (r * r / 5.0 + h * h + 0.75 * h * r);
                Integrals::diagonal(v_cyl + v_sph, DVec3::ZERO, DVec3::new(radial, axial, radial))
            }
            Self::ConvexHull(hull) => hull.integrals(),
        }
    }
}

/// Mass, centre of mass and principal inertia of a body.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MassProperties {
    /// Mass, kg.
    pub mass: f32,
    /// Centre of mass in the body's local frame, m.
    pub local_center_of_mass: Vec3,
    /// Principal moments of inertia about the centre of mass, kg m².
    pub principal_inertia: Vec3,
    /// Rotation from the principal frame to the body's local frame: the inertia tensor in the
    /// local frame is `R diag(principal_inertia) Rᵀ` with `R = principal_frame`.
    pub principal_frame: Quat,
}

impl MassProperties {
    /// The inertia tensor about the centre of mass in the body's local frame, kg m².
    pub fn local_inertia(&self) -> glam::Mat3 {
        let r = glam::Mat3::from_quat(self.principal_frame);
        r * glam::Mat3::from_diagonal(self.principal_inertia) * r.transpose()
    }
}

/// Unit-density integrals of a shape.
struct Integrals {
    volume: f64,
    centroid: DVec3,
    /// `∫ (x - c)(x - c)ᵀ dV` about the centroid.
    second_moment: DMat3,
}

impl Integrals {
    fn diagonal(volume: f64, centroid: DVec3, diag: DVec3) -> Self {
        Self { volume, centroid, second_moment: DMat3::from_diagonal(diag) }
    }

    fn scaled(&self, density: f64) -> MassProperties {
        let c = self.second_moment * density;
        // Inertia tensor from the second moment: I = tr(C) 1 - C.
        let trace = c.x_axis.x + c.y_axis.y + c.z_axis.z;
        let inertia = DMat3::from_diagonal(DVec3::splat(trace)) - c;
        let (moments, frame) = symmetric_eigen(inertia);
        MassProperties {
            mass: (self.volume * density) as f32,
            local_center_of_mass: self.centroid.as_vec3(),
            principal_inertia: moments.as_vec3(),
            principal_frame: Quat::from_mat3(&frame.as_mat3()).normalize(),
        }
    }
}

/// Eigen-decomposition of a symmetric 3x3 matrix by cyclic Jacobi rotations: returns the
/// eigenvalues and a proper rotation whose columns are the eigenvectors.
fn symmetric_eigen(m: DMat3) -> (DVec3, DMat3) {
    let mut a = m.to_cols_array_2d();
    let mut v = [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]];
    let scale = a.iter().flatten().fold(0.0_f64, |s, x| s.max(x.abs())).max(f64::MIN_POSITIVE);
    for _sweep in 0..50 {
        let off = a[0][1].abs() + a[0][2].abs() + a[1][2].abs();
        if off <= 1e-15 * scale {
            break;
        }
        for (p, q) in [(0, 1), (0, 2), (1, 2)] {
            if a[p][q].abs() <= 1e-18 * scale {
                continue;
            }
            // Rotation that zeroes a[p][q] (Golub & Van Loan, symmetric Schur decomposition).
            let tau = (a[q][q] - a[p][p]) / (2.0 * a[p][q]);
            let t = tau.signum() / (tau.abs() + (1.0 + tau * tau).sqrt());
            let t = if tau == 0.0 { 1.0 } else { t };
            let c = 1.0 / (1.0 + t * t).sqrt();
            let s = t * c;
            for row in a.iter_mut() {
                let (akp, akq) = (row[p], row[q]);
                row[p] = c * akp - s * akq;
                row[q] = s * akp + c * akq;
            }
            let (row_p, row_q) = (a[p], a[q]);
            for k in 0..3 {
                a[p][k] = c * row_p[k] - s * row_q[k];
                a[q][k] = s * row_p[k] + c * row_q[k];
            }
            for row in v.iter_mut() {
                let (vp, vq) = (row[p], row[q]);
                row[p] = c * vp - s * vq;
                row[q] = s * vp + c * vq;
            }
        }
    }
    // `v` holds eigenvectors as columns in row-major storage; DMat3 is column-major.
    let mut frame = DMat3::from_cols_array_2d(&v).transpose();
    if frame.determinant() < 0.0 {
        frame.z_axis = -frame.z_axis;
    }
    (DVec3::new(a[0][0], a[1][1], a[2][2]), frame)
}

/// A convex polytope: the hull of a point cloud, with its vertices and outward-wound triangles.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(try_from = "HullPoints", into = "HullPoints"))]
pub struct ConvexHull {
    vertices: Vec<Vec3>,
    triangles: Vec<[u32; 3]>,
}

impl ConvexHull {
    /// Computes the convex hull of `points` by Quickhull (Barber, Dobkin & Huhdanpaa 1996) in
    /// double precision. Points inside the hull or within a relative tolerance of 1e-7 of its
    /// boundary are dropped; the rest become vertices.
    ///
    /// # Errors
    /// [`Error::NonFinite`] for a NaN or infinite coordinate; [`Error::DegenerateShape`] when
    /// fewer than four points are given or all of them lie on a common plane.
    pub fn from_points(points: &[Vec3]) -> Result<Self> {
        for p in points {
            crate::error::check_finite("convex hull point", p, p.is_finite())?;
        }
        if points.len() < 4 {
            return Err(Error::DegenerateShape {
                reason: format!("a convex hull needs at least 4 non-coplanar points, got {}", points.len()),
            });
        }
        let pts: Vec<DVec3> = points.iter().map(|p| p.as_dvec3()).collect();
        let (lo, hi) = pts.iter().fold((pts[0], pts[0]), |(lo, hi), p| (lo.min(*p), hi.max(*p)));
        let extent = (hi - lo).max_element();
        let eps = 1e-7 * extent.max(1e-30);
        let triangles = quickhull(&pts, eps)?;
        // Keep only the points that are hull vertices, in input order.
        let mut remap = HashMap::new();
        let mut vertices = Vec::new();
        for &i in triangles.iter().flatten() {
            remap.entry(i).or_insert_with(|| {
                vertices.push(i);
                0
            });
        }
        vertices.sort_unstable();
        for (new, &old) in vertices.iter().enumerate() {
            remap.insert(old, new as u32);
        }
        Ok(Self {
            vertices: vertices.iter().map(|&i| points[i]).collect(),
            triangles: triangles.iter().map(|t| [remap[&t[0]], remap[&t[1]], remap[&t[2]]]).collect(),
        })
    }

    /// The hull's vertices, local frame, m.
    pub fn vertices(&self) -> &[Vec3] {
        &self.vertices
    }

    /// The hull's boundary as triangles of vertex indices, wound counter-clockwise seen from outside.
    pub fn triangles(&self) -> &[[u32; 3]] {
        &self.triangles
    }

    /// Exact volume integrals over the triangles: the hull is a union of tetrahedra
    /// `(0, a, b, c)`, each with `∫ x xᵀ = det/120 (Σ vᵢvᵢᵀ + (Σ vᵢ)(Σ vᵢ)ᵀ)` (Tonon 2004).
    fn integrals(&self) -> Integrals {
        // Integrate about a point inside the hull to keep the determinants well conditioned.
        let origin = self.vertices.iter().map(|v| v.as_dvec3()).sum::<DVec3>() / self.vertices.len() as f64;
        let mut volume = 0.0;
        let mut first = DVec3::ZERO;
        let mut second = DMat3::ZERO;
        for t in &self.triangles {
            let [a, b, c] = t.map(|i| self.vertices[i as usize].as_dvec3() - origin);
            let det = a.dot(b.cross(c));
            volume += det / 6.0;
            first += det / 24.0 * (a + b + c);
            let s = a + b + c;
            let outer = |u: DVec3| DMat3::from_cols(u * u.x, u * u.y, u * u.z);
            second += (outer(a) + outer(b) + outer(c) + outer(s)) * (det / 120.0);
        }
        let centroid = first / volume;
        let outer_c = DMat3::from_cols(centroid * centroid.x, centroid * centroid.y, centroid * centroid.z);
        Integrals { volume, centroid: centroid + origin, second_moment: second - outer_c * volume }
    }
}

/// Quickhull over `pts` with distance tolerance `eps`; returns outward-wound triangles.
fn quickhull(pts: &[DVec3], eps: f64) -> Result<Vec<[usize; 3]>> {
    let degenerate = |what: &str| Error::DegenerateShape { reason: format!("convex hull points are {what}") };
    // Initial simplex: two extreme points, the farthest from their line, the farthest from their plane.
    let i0 = (0..pts.len()).min_by(|&a, &b| pts[a].x.total_cmp(&pts[b].x)).unwrap_or(0);
    let far = |f: &dyn Fn(DVec3) -> f64| -> usize {
        (0..pts.len()).max_by(|&a, &b| f(pts[a]).total_cmp(&f(pts[b]))).unwrap_or(0)
    };
    let i1 = far(&|p| (p - pts[i0]).length());
    if (pts[i1] - pts[i0]).length() <= eps {
        return Err(degenerate("all coincident"));
    }
    let axis = (pts[i1] - pts[i0]).normalize();
    let i2 = far(&|p| (p - pts[i0]).cross(axis).length());
    if (pts[i2] - pts[i0]).cross(axis).length() <= eps {
        return Err(degenerate("collinear"));
    }
    let normal = (pts[i1] - pts[i0]).cross(pts[i2] - pts[i0]).normalize();
    let i3 = far(&|p| (p - pts[i0]).dot(normal).abs());
    if (pts[i3] - pts[i0]).dot(normal).abs() <= eps {
        return Err(degenerate("coplanar"));
    }

    struct Face {
        v: [usize; 3],
        n: DVec3,
        d: f64,
        outside: Vec<usize>,
        alive: bool,
    }
    let make = |v: [usize; 3]| {
        let n = (pts[v[1]] - pts[v[0]]).cross(pts[v[2]] - pts[v[0]]).normalize();
        Face { v, n, d: n.dot(pts[v[0]]), outside: Vec::new(), alive: true }
    };
    let centre = (pts[i0] + pts[i1] + pts[i2] + pts[i3]) / 4.0;
    let mut faces: Vec<Face> = Vec::new();
    // Directed edge (a, b) -> the face that has it.
    let mut edges: HashMap<(usize, usize), usize> = HashMap::new();
    let add_face = |faces: &mut Vec<Face>, edges: &mut HashMap<(usize, usize), usize>, v: [usize; 3]| {
        let f = faces.len();
        for k in 0..3 {
            edges.insert((v[k], v[(k + 1) % 3]), f);
        }
        faces.push(make(v));
        f
    };
    for tri in [[i0, i1, i2], [i0, i3, i1], [i1, i3, i2], [i2, i3, i0]] {
        let f = make(tri);
        let tri = if f.n.dot(centre) - f.d > 0.0 { [tri[0], tri[2], tri[1]] } else { tri };
        add_face(&mut faces, &mut edges, tri);
    }
    // Assign every other point to the first face it lies outside of.
    let assign = |faces: &mut Vec<Face>, candidates: &[usize], points: &[usize]| {
        for &p in points {
            if let Some(&f) = candidates.iter().find(|&&f| faces[f].n.dot(pts[p]) - faces[f].d > eps) {
                faces[f].outside.push(p);
            }
        }
    };
    let rest: Vec<usize> = (0..pts.len()).filter(|i| ![i0, i1, i2, i3].contains(i)).collect();
    assign(&mut faces, &[0, 1, 2, 3], &rest);

    let mut cursor = 0;
    while cursor < faces.len() {
        if !faces[cursor].alive || faces[cursor].outside.is_empty() {
            cursor += 1;
            continue;
        }
        // The eye point: the farthest outside point of this face.
        let face = &faces[cursor];
        let eye = *face
            .outside
            .iter()
            .max_by(|&&a, &&b| (face.n.dot(pts[a]) - face.d).total_cmp(&(face.n.dot(pts[b]) - face.d)))
            .expect("non-empty");
        // Faces visible from the eye, grown from this face across shared edges.
        let mut visible = vec![cursor];
        let mut stack = vec![cursor];
        faces[cursor].alive = false;
        while let Some(f) = stack.pop() {
            let v = faces[f].v;
            for k in 0..3 {
                let g = edges[&(v[(k + 1) % 3], v[k])];
                if faces[g].alive && faces[g].n.dot(pts[eye]) - faces[g].d > eps {
                    faces[g].alive = false;
                    visible.push(g);
                    stack.push(g);
                }
            }
        }
        // Horizon: edges of visible faces whose neighbour stays; each gets a new face to the eye.
        let mut orphans = Vec::new();
        let mut new_faces = Vec::new();
        for &f in &visible {
            let v = faces[f].v;
            for k in 0..3 {
                let (a, b) = (v[k], v[(k + 1) % 3]);
                if faces[edges[&(b, a)]].alive {
                    new_faces.push([a, b, eye]);
                }
            }
            orphans.append(&mut faces[f].outside);
        }
        let created: Vec<usize> = new_faces.into_iter().map(|t| add_face(&mut faces, &mut edges, t)).collect();
        orphans.retain(|&p| p != eye);
        assign(&mut faces, &created, &orphans);
    }
    Ok(faces.iter().filter(|f| f.alive).map(|f| f.v).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f32, b: f32, tol: f32) -> bool {
        (a - b).abs() <= tol * b.abs().max(1.0)
    }

    #[test]
    fn cuboid_mass_properties() {
        let mp = Shape::cuboid(Vec3::new(0.5, 1.0, 1.5)).mass_properties(2.0);
        assert!(close(mp.mass, 2.0 * 8.0 * 0.75, 1e-6));
        // I_xx = m (hy² + hz²) / 3
        assert!(close(mp.principal_inertia.x, mp.mass * (1.0 + 2.25) / 3.0, 1e-6));
        assert!(close(mp.principal_inertia.z, mp.mass * (0.25 + 1.0) / 3.0, 1e-6));
    }

    #[test]
    fn hull_of_box_matches_cuboid_exactly() {
        let e = Vec3::new(0.3, 0.7, 1.1);
        let mut points = Shape::cuboid(e).core_points();
        // Interior and boundary points must not become vertices.
        points.extend([Vec3::ZERO, Vec3::new(0.1, 0.2, -0.3), Vec3::new(0.3, 0.0, 0.0)]);
        let hull = ConvexHull::from_points(&points).unwrap();
        assert_eq!(hull.vertices().len(), 8);
        assert_eq!(hull.triangles().len(), 12);
        let a = Shape::ConvexHull(Arc::new(hull)).mass_properties(3.0);
        let b = Shape::cuboid(e).mass_properties(3.0);
        assert!(close(a.mass, b.mass, 1e-6));
        assert!(a.local_center_of_mass.length() < 1e-6);
        let (ia, ib) = (a.local_inertia(), b.local_inertia());
        for (x, y) in ia.to_cols_array().iter().zip(ib.to_cols_array()) {
            assert!((x - y).abs() < 1e-5 * b.principal_inertia.max_element(), "{ia} vs {ib}");
        }
    }

    #[test]
    fn hull_of_rotated_offset_box_finds_principal_frame() {
        let q = Quat::from_axis_angle(Vec3::new(1.0, 2.0, 3.0).normalize(), 0.8);
        let c = Vec3::new(1.0, -2.0, 0.5);
        let e = Vec3::new(0.2, 0.5, 1.0);
        let points: Vec<Vec3> = Shape::cuboid(e).core_points().iter().map(|p| q * *p + c).collect();
        let mp = Shape::convex_hull(&points).unwrap().mass_properties(1.0);
        assert!((mp.local_center_of_mass - c).length() < 1e-5);
        let mut moments = mp.principal_inertia.to_array();
        moments.sort_by(f32::total_cmp);
        let mut expect = Shape::cuboid(e).mass_properties(1.0).principal_inertia.to_array();
        expect.sort_by(f32::total_cmp);
        for (m, x) in moments.iter().zip(expect) {
            assert!(close(*m, x, 1e-5), "{moments:?} vs {expect:?}");
        }
        // The principal frame diagonalizes the local inertia tensor.
        let r = glam::Mat3::from_quat(mp.principal_frame);
        let d = r.transpose() * mp.local_inertia() * r;
        assert!(d.x_axis.y.abs() + d.x_axis.z.abs() + d.y_axis.z.abs() < 1e-5 * expect[2]);
    }

    #[test]
    fn hull_of_sphere_points_approaches_sphere() {
        // Fibonacci sphere: 2,000 points on the unit sphere.
        let n = 2000;
        let points: Vec<Vec3> = (0..n)
            .map(|i| {
                let y = 1.0 - 2.0 * (i as f32 + 0.5) / n as f32;
                let r = (1.0 - y * y).sqrt();
                let phi = i as f32 * 2.399_963;
                Vec3::new(r * phi.cos(), y, r * phi.sin())
            })
            .collect();
        let hull = ConvexHull::from_points(&points).unwrap();
        assert_eq!(hull.vertices().len(), n);
        assert_eq!(hull.triangles().len(), 2 * n - 4, "Euler: a triangulated sphere has 2V - 4 faces");
        let v = Shape::ConvexHull(Arc::new(hull)).volume();
        let sphere = 4.0 / 3.0 * std::f32::consts::PI;
        assert!(v < sphere && v > 0.995 * sphere, "volume {v}");
    }

    #[test]
    fn capsule_matches_numerical_integration() {
        let (h, r) = (0.7_f64, 0.3_f64);
        let mp = Shape::capsule(h as f32, r as f32).mass_properties(1.0);
        // Midpoint-rule integration over a grid.
        let n = 120;
        let (mut vol, mut ixx, mut iyy) = (0.0, 0.0, 0.0);
        let (lx, ly) = (r, h + r);
        let (dx, dy) = (2.0 * lx / n as f64, 2.0 * ly / n as f64);
        for i in 0..n {
            for j in 0..n {
                for k in 0..n {
                    let x = -lx + (i as f64 + 0.5) * dx;
                    let y = -ly + (j as f64 + 0.5) * dy;
                    let z = -lx + (k as f64 + 0.5) * dx;
                    let yc = y.clamp(-h, h);
                    if x * x + (y - yc) * (y - yc) + z * z <= r * r {
                        let dv = dx * dy * dx;
                        vol += dv;
                        ixx += dv * (y * y + z * z);
                        iyy += dv * (x * x + z * z);
                    }
                }
            }
        }
        assert!(close(mp.mass, vol as f32, 2e-3), "{} vs {vol}", mp.mass);
        assert!(close(mp.principal_inertia.x, ixx as f32, 4e-3), "{} vs {ixx}", mp.principal_inertia.x);
        assert!(close(mp.principal_inertia.y, iyy as f32, 4e-3), "{} vs {iyy}", mp.principal_inertia.y);
    }

    #[test]
    fn degenerate_hulls_are_errors() {
        let flat = [Vec3::ZERO, Vec3::X, Vec3::Y, Vec3::new(1.0, 1.0, 0.0), Vec3::new(0.5, 0.2, 0.0)];
        assert!(matches!(ConvexHull::from_points(&flat), Err(Error::DegenerateShape { .. })));
        assert!(matches!(ConvexHull::from_points(&flat[..3]), Err(Error::DegenerateShape { .. })));
        let line = [Vec3::ZERO, Vec3::X, Vec3::X * 2.0, Vec3::X * 3.0];
        assert!(matches!(ConvexHull::from_points(&line), Err(Error::DegenerateShape { .. })));
        let same = [Vec3::ONE; 6];
        assert!(matches!(ConvexHull::from_points(&same), Err(Error::DegenerateShape { .. })));
        let nan = [Vec3::ZERO, Vec3::X, Vec3::Y, Vec3::new(0.0, 0.0, f32::NAN)];
        assert!(matches!(ConvexHull::from_points(&nan), Err(Error::NonFinite { .. })));
    }
}

/// A convex hull as a scene file stores it: its points, from which the hull is computed again
/// ([`ConvexHull::from_points`]; a hull's own vertices give the same hull).
#[cfg(feature = "serde")]
#[derive(serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct HullPoints {
    points: Vec<Vec3>,
}

#[cfg(feature = "serde")]
impl TryFrom<HullPoints> for ConvexHull {
    type Error = Error;

    fn try_from(h: HullPoints) -> Result<Self> {
        Self::from_points(&h.points)
    }
}

#[cfg(feature = "serde")]
impl From<ConvexHull> for HullPoints {
    fn from(h: ConvexHull) -> Self {
        Self { points: h.vertices }
    }
}
