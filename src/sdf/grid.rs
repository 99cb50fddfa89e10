//! Grid signed distance fields baked from closed triangle meshes, and their trilinear sampling
//! (the twin of `sdf_grid` in shaders/sdf.wgsl).

use std::collections::HashMap;
use std::io::BufRead;
use std::path::Path;

use glam::{UVec3, Vec3};

use super::tree::MeshTree;
use crate::error::{Error, Result, check_finite, check_positive};

/// Most samples one grid may hold (2^26, 256 MiB of f32): the program addresses its data by
/// `Vec4` index stored in an f32, exact below 2^24.
pub const MAX_GRID_SAMPLES: u64 = 1 << 26;

/// Cells of free space baked around the mesh's bounding box, so that bodies approaching from
/// outside meet sampled distances before they reach the surface.
pub const GRID_PADDING_CELLS: u32 = 3;

/// A signed distance field sampled at the corners of a regular grid and interpolated
/// trilinearly, baked from a closed triangle mesh. Distances are exact (to f32) at the samples,
/// negative inside the mesh; between samples the interpolation of a 1-Lipschitz function stays
/// within a fraction of a cell of the truth (measured in the tests: under half a cell). Outside
/// the grid the distance is a lower bound (never more than the truth, at least 1/√2 of it),
/// from the distance at the nearest point of the grid and the distance to the grid's box.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(try_from = "GridSamples", into = "GridSamples"))]
pub struct GridSdf {
    origin: Vec3,
    cell_size: f32,
    dims: UVec3,
    values: Vec<f32>,
}

impl GridSdf {
    /// Bakes the signed distance of a closed, consistently oriented triangle mesh at the
    /// corners of cubic cells of edge `cell_size` covering its bounding box plus
    /// [`GRID_PADDING_CELLS`] cells. The distance is the exact point-to-triangle distance; its
    /// sign comes from the generalized winding number (inside where its magnitude exceeds one
    /// half, so either orientation works). A bounding volume hierarchy over the triangles
    /// finds the nearest one, and sums the winding number with far clusters of triangles taken
    /// as one expansion each (within 0.01 of the exact sum in the tests, where the sign
    /// needs 0.5), so the cost grows about as samples × log(triangles), spread over the
    /// available cores (`cargo bench --bench sdf_bake`).
    ///
    /// # Errors
    /// [`Error::NonFinite`] for a NaN or infinite vertex, [`Error::NonPositive`] for the cell
    /// size, [`Error::DegenerateShape`] for no triangles, an index out of range, a triangle
    /// of zero area, or a mesh that is not closed (an edge not shared by exactly two
    /// triangles in opposite directions), [`Error::OutOfRange`] for more than
    /// [`MAX_GRID_SAMPLES`] samples.
    pub fn from_mesh(vertices: &[Vec3], triangles: &[[u32; 3]], cell_size: f32) -> Result<Self> {
        check_positive("grid SDF cell size", cell_size)?;
        check_mesh(vertices, triangles)?;
        let (lo, hi) = vertices.iter().fold((Vec3::MAX, Vec3::MIN), |(lo, hi), v| (lo.min(*v), hi.max(*v)));
        let pad = GRID_PADDING_CELLS as f32 * cell_size;
        let origin = lo - Vec3::splat(pad);
        let cells = ((hi + Vec3::splat(pad) - origin) / cell_size).ceil();
        let dims = cells.as_uvec3() + UVec3::ONE;
        let samples = dims.x as u64 * dims.y as u64 * dims.z as u64;
        if samples > MAX_GRID_SAMPLES {
            return Err(Error::OutOfRange {
                what: "grid SDF samples (use a larger cell size)",
                range: "[8, 2^26]",
                value: samples as f32,
            });
        }
        let tris: Vec<[Vec3; 3]> = triangles.iter().map(|t| t.map(|i| vertices[i as usize])).collect();
        let tree = MeshTree::new(&tris);
        let mut values = vec![0.0_f32; samples as usize];
        let slice = (dims.x * dims.y) as usize;
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(dims.z as usize);
        let per_thread = (dims.z as usize).div_ceil(threads);
        std::thread::scope(|scope| {
            for (chunk_index, chunk) in values.chunks_mut(slice * per_thread).enumerate() {
                let tree = &tree;
                scope.spawn(move || {
                    for (offset, value) in chunk.iter_mut().enumerate() {
                        let index = chunk_index * slice * per_thread + offset;
                        let (i, j, k) =
                            (index % dims.x as usize, (index / dims.x as usize) % dims.y as usize, index / slice);
                        let p = origin + Vec3::new(i as f32, j as f32, k as f32) * cell_size;
                        *value = tree.signed_distance(p);
                    }
                });
            }
        });
        Ok(Self { origin, cell_size, dims, values })
    }

    /// A field from samples already computed: `values[i + dims.x (j + dims.y k)]` is the
    /// signed distance at `origin + cell_size (i, j, k)`, m (what [`GridSdf::values`] returns,
    /// and how a scene file stores a baked field). The samples should be a distance (at most
    /// 1 m apart per metre): the collision and ray queries take them as one.
    ///
    /// # Errors
    /// [`Error::NonFinite`] for a NaN or infinite origin or sample, [`Error::NonPositive`] for
    /// the cell size, [`Error::OutOfRange`] for fewer than 2 samples along an axis or more than
    /// [`MAX_GRID_SAMPLES`] in all, [`Error::DegenerateShape`] for a sample count that is not
    /// `dims.x dims.y dims.z`.
    pub fn from_samples(origin: Vec3, cell_size: f32, dims: UVec3, values: Vec<f32>) -> Result<Self> {
        check_finite("grid SDF origin", origin, origin.is_finite())?;
        check_positive("grid SDF cell size", cell_size)?;
        if dims.min_element() < 2 {
            return Err(Error::OutOfRange {
                what: "grid SDF samples along an axis",
                range: "[2, 2^26]",
                value: dims.min_element() as f32,
            });
        }
        // (In u128: three dims of up to 2^32 each do not overflow it.)
        let samples = dims.x as u128 * dims.y as u128 * dims.z as u128;
        if samples > MAX_GRID_SAMPLES as u128 {
            return Err(Error::OutOfRange { what: "grid SDF samples", range: "[8, 2^26]", value: samples as f32 });
        }
        if values.len() as u128 != samples {
            return Err(Error::DegenerateShape {
                reason: format!("a grid SDF of {dims} samples has {} values", values.len()),
            });
        }
        if let Some(bad) = values.iter().find(|v| !v.is_finite()) {
            return Err(Error::NonFinite { what: "grid SDF sample", value: bad.to_string() });
        }
        Ok(Self { origin, cell_size, dims, values })
    }

    /// Reads a Wavefront OBJ file (every object in it, polygons triangulated) and bakes it with
    /// [`GridSdf::from_mesh`].
    ///
    /// # Errors
    /// [`Error::Mesh`] when the file cannot be read or parsed, then those of `from_mesh`.
    pub fn from_obj_file(path: impl AsRef<Path>, cell_size: f32) -> Result<Self> {
        let path = path.as_ref();
        let file = std::fs::File::open(path).map_err(|e| Error::Mesh(format!("{}: {e}", path.display())))?;
        Self::from_obj_reader(&mut std::io::BufReader::new(file), cell_size)
    }

    /// Reads Wavefront OBJ text and bakes it with [`GridSdf::from_mesh`].
    ///
    /// # Errors
    /// As [`GridSdf::from_obj_file`].
    pub fn from_obj_reader(reader: &mut impl BufRead, cell_size: f32) -> Result<Self> {
        let (vertices, triangles) = read_obj(reader)?;
        Self::from_mesh(&vertices, &triangles, cell_size)
    }

    /// Position of the sample `(0, 0, 0)` in the field's frame, m.
    pub fn origin(&self) -> Vec3 {
        self.origin
    }

    /// Edge of a cell, m.
    pub fn cell_size(&self) -> f32 {
        self.cell_size
    }

    /// Samples along x, y and z.
    pub fn dims(&self) -> UVec3 {
        self.dims
    }

    /// The samples, x fastest, then y, then z, m.
    pub fn values(&self) -> &[f32] {
        &self.values
    }

    /// Bytes the samples take on the GPU (4 per sample).
    pub fn bytes(&self) -> u64 {
        4 * self.values.len() as u64
    }

    /// The interpolated distance and unit gradient at `x` (in the field's frame).
    pub fn sample(&self, x: Vec3) -> (f32, Vec3) {
        grid_sample(self.dims, self.cell_size, x - self.origin, |i| self.values[i as usize])
    }
}

/// Reads the triangles of every object of an OBJ text.
pub(crate) fn read_obj(reader: &mut impl BufRead) -> Result<(Vec<Vec3>, Vec<[u32; 3]>)> {
    let options = tobj::LoadOptions { triangulate: true, single_index: false, ..Default::default() };
    let (models, _) = tobj::load_obj_buf(reader, &options, |_| Err(tobj::LoadError::OpenFileFailed))
        .map_err(|e| Error::Mesh(format!("OBJ: {e}")))?;
    let mut vertices = Vec::new();
    let mut triangles = Vec::new();
    for model in models {
        let base = vertices.len() as u32;
        vertices.extend(model.mesh.positions.chunks_exact(3).map(|p| Vec3::new(p[0], p[1], p[2])));
        triangles.extend(model.mesh.indices.chunks_exact(3).map(|t| [base + t[0], base + t[1], base + t[2]]));
    }
    Ok((vertices, triangles))
}

/// Rejects meshes the baking cannot trust: non-finite vertices, bad indices, zero-area
/// triangles, open or inconsistently oriented surfaces.
fn check_mesh(vertices: &[Vec3], triangles: &[[u32; 3]]) -> Result<()> {
    if triangles.is_empty() {
        return Err(Error::DegenerateShape { reason: "mesh has no triangles".into() });
    }
    for v in vertices {
        check_finite("mesh vertex", v, v.is_finite())?;
    }
    let (lo, hi) = vertices.iter().fold((Vec3::MAX, Vec3::MIN), |(lo, hi), v| (lo.min(*v), hi.max(*v)));
    let scale = (hi - lo).max_element();
    let mut edges: HashMap<(u32, u32), u32> = HashMap::new();
    for (t, tri) in triangles.iter().enumerate() {
        if let Some(&i) = tri.iter().find(|&&i| i as usize >= vertices.len()) {
            return Err(Error::DegenerateShape {
                reason: format!("triangle {t} uses vertex {i}, the mesh has {}", vertices.len()),
            });
        }
        let [a, b, c] = tri.map(|i| vertices[i as usize]);
        let area = 0.5 * (b - a).cross(c - a).length();
        if area <= 1e-6 * scale * scale * f32::EPSILON.sqrt() {
            return Err(Error::DegenerateShape { reason: format!("triangle {t} {tri:?} has zero area") });
        }
        for k in 0..3 {
            *edges.entry((tri[k], tri[(k + 1) % 3])).or_default() += 1;
        }
    }
    for (&(a, b), &n) in &edges {
        if n != 1 || edges.get(&(b, a)) != Some(&1) {
            return Err(Error::DegenerateShape {
                reason: format!(
                    "mesh is not closed and consistently oriented: edge {a}->{b} is used {n} times, {b}->{a} {} times",
                    edges.get(&(b, a)).copied().unwrap_or(0)
                ),
            });
        }
    }
    Ok(())
}

/// Exact signed distance from `p` to a closed triangle mesh: nearest triangle, sign from the
/// generalized winding number, every triangle searched: what
/// [`MeshTree::signed_distance`](super::tree::MeshTree::signed_distance) finds faster, and the
/// tests compare it with.
#[cfg(test)]
pub(crate) fn signed_distance(tris: &[[Vec3; 3]], p: Vec3) -> f32 {
    let mut nearest = f32::MAX;
    let mut solid_angles = 0.0_f64;
    for [a, b, c] in tris {
        nearest = nearest.min(point_triangle_distance_squared(p, *a, *b, *c));
        solid_angles += solid_angle(p, *a, *b, *c);
    }
    let winding = solid_angles / (4.0 * std::f64::consts::PI);
    let d = nearest.sqrt();
    if winding.abs() > 0.5 { -d } else { d }
}

/// The signed solid angle of the triangle `abc` seen from `p` (Van Oosterom and Strackee),
/// positive where `p` is behind it (`(b − a) × (c − a)` points away from `p`), sr.
pub(crate) fn solid_angle(p: Vec3, a: Vec3, b: Vec3, c: Vec3) -> f64 {
    let (a, b, c) = ((a - p).as_dvec3(), (b - p).as_dvec3(), (c - p).as_dvec3());
    let (la, lb, lc) = (a.length(), b.length(), c.length());
    let numerator = a.dot(b.cross(c));
    let denominator = la * lb * lc + a.dot(b) * lc + a.dot(c) * lb + b.dot(c) * la;
    2.0 * numerator.atan2(denominator)
}

/// Squared distance from `p` to the triangle `abc` (closest point by Voronoi regions).
pub(crate) fn point_triangle_distance_squared(p: Vec3, a: Vec3, b: Vec3, c: Vec3) -> f32 {
    let (ab, ac, ap) = (b - a, c - a, p - a);
    let (d1, d2) = (ab.dot(ap), ac.dot(ap));
    if d1 <= 0.0 && d2 <= 0.0 {
        return ap.length_squared();
    }
    let bp = p - b;
    let (d3, d4) = (ab.dot(bp), ac.dot(bp));
    if d3 >= 0.0 && d4 <= d3 {
        return bp.length_squared();
    }
    let vc = d1 * d4 - d3 * d2;
    if vc <= 0.0 && d1 >= 0.0 && d3 <= 0.0 {
        let v = d1 / (d1 - d3);
        return (ap - v * ab).length_squared();
    }
    let cp = p - c;
    let (d5, d6) = (ab.dot(cp), ac.dot(cp));
    if d6 >= 0.0 && d5 <= d6 {
        return cp.length_squared();
    }
    let vb = d5 * d2 - d1 * d6;
    if vb <= 0.0 && d2 >= 0.0 && d6 <= 0.0 {
        let w = d2 / (d2 - d6);
        return (ap - w * ac).length_squared();
    }
    let va = d3 * d6 - d5 * d4;
    if va <= 0.0 && (d4 - d3) >= 0.0 && (d5 - d6) >= 0.0 {
        let w = (d4 - d3) / ((d4 - d3) + (d5 - d6));
        return (bp - w * (c - b)).length_squared();
    }
    let denom = 1.0 / (va + vb + vc);
    let (v, w) = (vb * denom, vc * denom);
    (ap - ab * v - ac * w).length_squared()
}

/// Trilinear distance and unit gradient at `p` (relative to sample `(0, 0, 0)`) of a grid of
/// `dims` samples `h` apart, reading sample `i` (x fastest) through `fetch`. Outside the grid
/// the point is clamped to it, and the distance `d` there and the distance `lo` to the box
/// combined as `sqrt(d² + lo²)`, a lower bound of the distance to the surface. Twin of `sdf_grid` in
/// shaders/sdf.wgsl, operation for operation.
pub(crate) fn grid_sample(dims: UVec3, h: f32, p: Vec3, fetch: impl Fn(u32) -> f32) -> (f32, Vec3) {
    let extent = Vec3::new((dims.x - 1) as f32 * h, (dims.y - 1) as f32 * h, (dims.z - 1) as f32 * h);
    let clamped = Vec3::new(p.x.clamp(0.0, extent.x), p.y.clamp(0.0, extent.y), p.z.clamp(0.0, extent.z));
    let g = clamped * (1.0 / h);
    let cell = UVec3::new((g.x as u32).min(dims.x - 2), (g.y as u32).min(dims.y - 2), (g.z as u32).min(dims.z - 2));
    let f = Vec3::new(g.x - cell.x as f32, g.y - cell.y as f32, g.z - cell.z as f32);
    let at = |i: u32, j: u32, k: u32| fetch(((cell.z + k) * dims.y + cell.y + j) * dims.x + cell.x + i);
    let (c000, c100, c010, c110) = (at(0, 0, 0), at(1, 0, 0), at(0, 1, 0), at(1, 1, 0));
    let (c001, c101, c011, c111) = (at(0, 0, 1), at(1, 0, 1), at(0, 1, 1), at(1, 1, 1));
    // Along x, then y, then z.
    let c00 = c000 + f.x * (c100 - c000);
    let c10 = c010 + f.x * (c110 - c010);
    let c01 = c001 + f.x * (c101 - c001);
    let c11 = c011 + f.x * (c111 - c011);
    let c0 = c00 + f.y * (c10 - c00);
    let c1 = c01 + f.y * (c11 - c01);
    let d = c0 + f.z * (c1 - c0);
    // The interpolant's derivatives.
    let gy0 = (1.0 - f.x) * (c010 - c000) + f.x * (c110 - c100);
    let gy1 = (1.0 - f.x) * (c011 - c001) + f.x * (c111 - c101);
    let gx0 = (1.0 - f.y) * (c100 - c000) + f.y * (c110 - c010);
    let gx1 = (1.0 - f.y) * (c101 - c001) + f.y * (c111 - c011);
    let grad = Vec3::new(gx0 + f.z * (gx1 - gx0), gy0 + f.z * (gy1 - gy0), c1 - c0);
    let outside = p - clamped;
    let lo = outside.dot(outside).sqrt();
    if lo > 0.0 {
        if d < 0.0 {
            return (d + lo, outside * (1.0 / lo));
        }
        // The grid's box is convex and holds the surface, so every surface point is at least
        // sqrt(d² + lo²) away: a lower bound, safe for sphere tracing. Its gradient: the way
        // out of the box, and the field's gradient along the box's face.
        let along = Vec3::new(
            if outside.x == 0.0 { grad.x } else { 0.0 },
            if outside.y == 0.0 { grad.y } else { 0.0 },
            if outside.z == 0.0 { grad.z } else { 0.0 },
        );
        let n = outside + d * along;
        return ((d * d + lo * lo).sqrt(), n * (1.0 / n.dot(n).sqrt()));
    }
    let lg = grad.dot(grad).sqrt();
    if lg > 0.0 { (d, grad * (1.0 / lg)) } else { (d, Vec3::Y) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Sdf;
    use crate::scenes::Lcg;

    /// The 12 triangles of a box, outward winding.
    fn box_mesh(half: Vec3) -> (Vec<Vec3>, Vec<[u32; 3]>) {
        let v: Vec<Vec3> = (0..8)
            .map(|i| {
                Vec3::new(
                    if i & 1 == 0 { -half.x } else { half.x },
                    if i & 2 == 0 { -half.y } else { half.y },
                    if i & 4 == 0 { -half.z } else { half.z },
                )
            })
            .collect();
        let quads = [[0, 2, 3, 1], [4, 5, 7, 6], [0, 1, 5, 4], [2, 6, 7, 3], [0, 4, 6, 2], [1, 3, 7, 5]];
        let t = quads.iter().flat_map(|q| [[q[0], q[1], q[2]], [q[0], q[2], q[3]]]).collect();
        (v, t)
    }

    /// The grid baked from a box mesh against the analytic box: within half a cell everywhere
    /// in and around it (the bound), and exact at the samples.
    #[test]
    fn box_grid_matches_the_analytic_box() {
        let half = Vec3::new(0.5, 0.3, 0.4);
        let (v, t) = box_mesh(half);
        let h = 0.05;
        let grid = GridSdf::from_mesh(&v, &t, h).unwrap();
        let exact = Sdf::cuboid(half);
        for (index, value) in grid.values().iter().enumerate() {
            let d = grid.dims();
            let (i, j, k) = (index as u32 % d.x, (index as u32 / d.x) % d.y, index as u32 / (d.x * d.y));
            let p = grid.origin() + Vec3::new(i as f32, j as f32, k as f32) * h;
            assert!((value - exact.distance(p)).abs() < 1e-5, "sample at {p}: {value} vs {}", exact.distance(p));
        }
        let mut rng = Lcg(4);
        let mut worst = 0.0_f32;
        let mut outside_points = 0;
        let lo = grid.origin();
        let hi = lo + (grid.dims() - UVec3::ONE).as_vec3() * h;
        for _ in 0..20_000 {
            let p = Vec3::new(rng.range(-0.9, 0.9), rng.range(-0.7, 0.7), rng.range(-0.8, 0.8));
            let (d, e) = (grid.sample(p).0, exact.distance(p));
            if p.cmpge(lo).all() && p.cmple(hi).all() {
                worst = worst.max((d - e).abs());
            } else {
                // Beyond the grid: a lower bound of the truth (so sphere tracing never steps
                // through the surface), and at least 1/√2 of it, less the interpolation error.
                assert!(d <= e + 0.5 * h, "outside at {p}: {d} above {e}");
                assert!(d >= e * std::f32::consts::FRAC_1_SQRT_2 - 0.5 * h, "outside at {p}: {d} far below {e}");
                outside_points += 1;
            }
        }
        eprintln!("box grid: worst interpolation error {worst} m with {h} m cells");
        assert!(outside_points > 1000, "only {outside_points} points outside the grid");
        assert!(worst < 0.5 * h, "worst interpolation error {worst} m, cell {h} m");
    }

    /// A tessellated sphere against brute-force point-to-triangle distances of the same mesh.
    #[test]
    fn sphere_grid_is_within_half_a_cell_of_the_mesh() {
        let (v, t) = crate::scenes::uv_sphere_mesh(0.5, 24, 12);
        let tris: Vec<[Vec3; 3]> = t.iter().map(|t| t.map(|i| v[i as usize])).collect();
        let h = 0.04;
        let grid = GridSdf::from_mesh(&v, &t, h).unwrap();
        let mut rng = Lcg(8);
        let mut worst = 0.0_f32;
        let (lo, hi) = (grid.origin(), grid.origin() + (grid.dims() - UVec3::ONE).as_vec3() * h);
        for _ in 0..3000 {
            let p = Vec3::new(rng.range(lo.x, hi.x), rng.range(lo.y, hi.y), rng.range(lo.z, hi.z));
            let (d, g) = grid.sample(p);
            worst = worst.max((d - signed_distance(&tris, p)).abs());
            assert!((g.length() - 1.0).abs() < 1e-5);
        }
        eprintln!("sphere grid: worst error {worst} m with {h} m cells");
        assert!(worst < 0.5 * h, "worst error {worst} m, cell {h} m");
        // The sign: inside negative, outside positive.
        assert!(grid.sample(Vec3::ZERO).0 < -0.4 && grid.sample(Vec3::splat(0.45)).0 > 0.2);
    }

    #[test]
    fn bad_meshes_are_rejected() {
        let (v, t) = box_mesh(Vec3::ONE);
        assert!(GridSdf::from_mesh(&v, &t, 0.0).is_err());
        assert!(matches!(GridSdf::from_mesh(&v, &t[..11], 0.1), Err(Error::DegenerateShape { .. })));
        let mut flipped = t.clone();
        flipped[0] = [t[0][0], t[0][2], t[0][1]];
        assert!(matches!(GridSdf::from_mesh(&v, &flipped, 0.1), Err(Error::DegenerateShape { .. })));
        let mut degenerate = v.clone();
        degenerate.push(Vec3::ZERO);
        let mut tris = t.clone();
        tris.push([8, 8, 0]);
        assert!(matches!(GridSdf::from_mesh(&degenerate, &tris, 0.1), Err(Error::DegenerateShape { .. })));
        let mut bad = v.clone();
        bad[3].x = f32::NAN;
        assert!(matches!(GridSdf::from_mesh(&bad, &t, 0.1), Err(Error::NonFinite { .. })));
        assert!(matches!(GridSdf::from_mesh(&v, &[[0, 1, 99]], 0.1), Err(Error::DegenerateShape { .. })));
        assert!(matches!(GridSdf::from_mesh(&v, &t, 1e-4), Err(Error::OutOfRange { .. })));
        assert!(matches!(GridSdf::from_mesh(&v, &[], 0.1), Err(Error::DegenerateShape { .. })));
        // Inverted winding is accepted: the winding number's magnitude decides.
        let inverted: Vec<[u32; 3]> = t.iter().map(|t| [t[0], t[2], t[1]]).collect();
        let grid = GridSdf::from_mesh(&v, &inverted, 0.25).unwrap();
        assert!(grid.sample(Vec3::ZERO).0 < -0.9);
    }

    #[test]
    fn obj_text_is_read_and_baked() {
        let obj = "o cube\nv -1 -1 -1\nv 1 -1 -1\nv 1 1 -1\nv -1 1 -1\nv -1 -1 1\nv 1 -1 1\nv 1 1 1\nv -1 1 1\n\
                   f 1 4 3 2\nf 5 6 7 8\nf 1 2 6 5\nf 4 8 7 3\nf 1 5 8 4\nf 2 3 7 6\n";
        let grid = GridSdf::from_obj_reader(&mut obj.as_bytes(), 0.25).unwrap();
        assert!((grid.sample(Vec3::ZERO).0 + 1.0).abs() < 1e-5);
        assert!((grid.sample(Vec3::new(1.5, 0.0, 0.0)).0 - 0.5).abs() < 1e-5);
        assert!(matches!(GridSdf::from_obj_reader(&mut "f 1 2 3\n".as_bytes(), 0.1), Err(Error::Mesh(_))));
        assert!(matches!(GridSdf::from_obj_file("/nonexistent.obj", 0.1), Err(Error::Mesh(_))));
    }
}

/// A grid field as a scene file stores it, read back through [`GridSdf::from_samples`].
#[cfg(feature = "serde")]
#[derive(serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct GridSamples {
    origin: Vec3,
    cell_size: f32,
    dims: UVec3,
    values: Vec<f32>,
}

#[cfg(feature = "serde")]
impl TryFrom<GridSamples> for GridSdf {
    type Error = Error;

    fn try_from(g: GridSamples) -> Result<Self> {
        Self::from_samples(g.origin, g.cell_size, g.dims, g.values)
    }
}

#[cfg(feature = "serde")]
impl From<GridSdf> for GridSamples {
    fn from(g: GridSdf) -> Self {
        Self { origin: g.origin, cell_size: g.cell_size, dims: g.dims, values: g.values }
    }
}
