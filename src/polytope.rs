//! Convex polytopes as the narrow phase sees them: vertices, planar faces with their vertex loops,
//! and edges with the two faces they join.

use std::collections::HashMap;

use glam::{DVec3, Vec3};

use crate::shape::ConvexHull;

/// A planar face: outward unit normal, offset (`normal · x = offset` on the face) and its
/// vertices in counter-clockwise order seen from outside.
#[derive(Clone, Debug, PartialEq)]
pub struct Face {
    /// Outward unit normal.
    pub normal: Vec3,
    /// Plane offset.
    pub offset: f32,
    /// Vertex indices, counter-clockwise seen from outside.
    pub vertices: Vec<u32>,
}

/// An edge between two vertices, shared by two faces; `faces[0]` has it running `a → b`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Edge {
    /// Start vertex (as seen from `faces[0]`).
    pub a: u32,
    /// End vertex.
    pub b: u32,
    /// The face that runs `a → b`, then the one that runs `b → a`.
    pub faces: [u32; 2],
}

/// A convex polytope with merged faces.
#[derive(Clone, Debug, PartialEq)]
pub struct Polytope {
    /// Vertices.
    pub vertices: Vec<Vec3>,
    /// Faces: coplanar triangles of the hull merged into polygons.
    pub faces: Vec<Face>,
    /// Edges, each once.
    pub edges: Vec<Edge>,
}

impl Polytope {
    /// The polytope of a convex hull: its triangles merged into polygons where they are
    /// coplanar (normals within 1e-5 rad and vertices within 1e-6 of the hull's size of the
    /// plane), so that a box has 6 faces and 12 edges, not 12 triangles and 18 edges.
    pub fn from_hull(hull: &ConvexHull) -> Self {
        let vertices = hull.vertices().to_vec();
        let tris = hull.triangles();
        let v = |i: u32| vertices[i as usize].as_dvec3();
        let normals: Vec<DVec3> =
            tris.iter().map(|t| (v(t[1]) - v(t[0])).cross(v(t[2]) - v(t[0])).normalize()).collect();
        let (lo, hi) = vertices.iter().fold((Vec3::MAX, Vec3::MIN), |(lo, hi), p| (lo.min(*p), hi.max(*p)));
        let eps = 1e-6 * (hi - lo).max_element().max(1e-30) as f64;

        // Directed edge -> triangle, to find neighbours.
        let mut owner: HashMap<(u32, u32), usize> = HashMap::new();
        for (i, t) in tris.iter().enumerate() {
            for k in 0..3 {
                owner.insert((t[k], t[(k + 1) % 3]), i);
            }
        }
        // Grow each face from a seed triangle across edges to coplanar neighbours.
        let mut group = vec![usize::MAX; tris.len()];
        let mut faces = Vec::new();
        for seed in 0..tris.len() {
            if group[seed] != usize::MAX {
                continue;
            }
            let id = faces.len();
            let n = normals[seed];
            let d = n.dot(v(tris[seed][0]));
            let mut members = vec![seed];
            group[seed] = id;
            let mut stack = vec![seed];
            while let Some(t) = stack.pop() {
                for k in 0..3 {
                    let (a, b) = (tris[t][k], tris[t][(k + 1) % 3]);
                    let Some(&u) = owner.get(&(b, a)) else { continue };
                    if group[u] != usize::MAX {
                        continue;
                    }
                    let coplanar =
                        normals[u].dot(n) > 1.0 - 5e-11 && tris[u].iter().all(|&w| (n.dot(v(w)) - d).abs() <= eps);
                    if coplanar {
                        group[u] = id;
                        members.push(u);
                        stack.push(u);
                    }
                }
            }
            // The boundary: directed edges whose reverse is not in the face, chained into a loop.
            let mut next: HashMap<u32, u32> = HashMap::new();
            for &t in &members {
                for k in 0..3 {
                    let (a, b) = (tris[t][k], tris[t][(k + 1) % 3]);
                    if owner.get(&(b, a)).is_none_or(|&u| group[u] != id) {
                        next.insert(a, b);
                    }
                }
            }
            let start = *next.keys().min().expect("a face has a boundary");
            let mut loop_ = vec![start];
            let mut at = next[&start];
            while at != start && loop_.len() <= next.len() {
                loop_.push(at);
                at = next[&at];
            }
            // Area-weighted normal of the merged face.
            let area: DVec3 =
                members.iter().map(|&t| (v(tris[t][1]) - v(tris[t][0])).cross(v(tris[t][2]) - v(tris[t][0]))).sum();
            let normal = area.normalize();
            let offset = loop_.iter().map(|&i| normal.dot(v(i))).sum::<f64>() / loop_.len() as f64;
            faces.push(Face { normal: normal.as_vec3(), offset: offset as f32, vertices: loop_ });
        }
        // Edges from the face loops, each once.
        let mut edge_faces: HashMap<(u32, u32), u32> = HashMap::new();
        for (f, face) in faces.iter().enumerate() {
            for k in 0..face.vertices.len() {
                edge_faces.insert((face.vertices[k], face.vertices[(k + 1) % face.vertices.len()]), f as u32);
            }
        }
        let mut edges: Vec<Edge> = edge_faces
            .iter()
            .filter(|((a, b), _)| a < b)
            .map(|(&(a, b), &f)| Edge { a, b, faces: [f, edge_faces[&(b, a)]] })
            .collect();
        edges.sort_by_key(|e| (e.a, e.b));
        Self { vertices, faces, edges }
    }

    /// The box with these half extents in the layout the box queries of the narrow phase
    /// read without searching (`collide::box_edge_query`):
    /// - vertex `v` is at `(±x, ±y, ±z)`, with bit `k` of `v` set for the plus sign on axis
    ///   `k` (the order of [`crate::Shape::core_points`]);
    /// - face `2k` has normal `-e_k` and face `2k + 1` has `+e_k`;
    /// - edge `4k + b_i + 2 b_j` runs along `+e_k` on the side `b_i` of axis `i = (k + 1) % 3`
    ///   and `b_j` of axis `j = (k + 2) % 3` (bit 1: the plus side).
    pub fn cuboid(half_extents: Vec3) -> Self {
        let vertices: Vec<Vec3> = (0..8u32)
            .map(|v| Vec3::from_array(std::array::from_fn(|k| if v >> k & 1 == 1 { 1.0 } else { -1.0 })) * half_extents)
            .collect();
        let faces = (0..6u32)
            .map(|f| {
                let (k, plus) = ((f / 2) as usize, f % 2 == 1);
                let (p, q) = ((k + 1) % 3, (k + 2) % 3);
                // Counter-clockwise seen from outside: `e_p x e_q = e_k`, so (p, q) turns
                // positively seen from `+e_k` and the other way seen from `-e_k`.
                let turn: [(u32, u32); 4] =
                    if plus { [(0, 0), (1, 0), (1, 1), (0, 1)] } else { [(0, 0), (0, 1), (1, 1), (1, 0)] };
                let side = u32::from(plus) << k;
                let mut normal = Vec3::ZERO;
                normal[k] = if plus { 1.0 } else { -1.0 };
                Face {
                    normal,
                    offset: half_extents[k],
                    vertices: turn.map(|(bp, bq)| side | bp << p | bq << q).to_vec(),
                }
            })
            .collect::<Vec<_>>();
        let edges = (0..12u32)
            .map(|e| {
                let (k, bi, bj) = (e / 4, e & 1, e >> 1 & 1);
                let (i, j) = ((k + 1) % 3, (k + 2) % 3);
                let a = bi << i | bj << j;
                let b = a | 1 << k;
                let runs = |f: u32| {
                    let l = &faces[f as usize].vertices;
                    (0..4).any(|n| l[n] == a && l[(n + 1) % 4] == b)
                };
                let (fi, fj) = (2 * i + bi, 2 * j + bj);
                Edge { a, b, faces: if runs(fi) { [fi, fj] } else { [fj, fi] } }
            })
            .collect();
        Self { vertices, faces, edges }
    }

    /// The same polytope with every vertex mapped by `f` (a rigid motion) and the face planes
    /// recomputed.
    pub fn mapped(&self, rotation: glam::Quat, translation: Vec3) -> Self {
        let vertices: Vec<Vec3> = self.vertices.iter().map(|p| rotation * *p + translation).collect();
        let faces = self
            .faces
            .iter()
            .map(|f| {
                let normal = (rotation * f.normal).normalize();
                let offset =
                    f.vertices.iter().map(|&i| normal.dot(vertices[i as usize])).sum::<f32>() / f.vertices.len() as f32;
                Face { normal, offset, vertices: f.vertices.clone() }
            })
            .collect();
        Self { vertices, faces, edges: self.edges.clone() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shape::Shape;

    #[test]
    fn a_box_has_six_quads_and_twelve_edges() {
        let points = Shape::cuboid(Vec3::new(1.0, 2.0, 3.0)).core_points();
        let p = Polytope::from_hull(&ConvexHull::from_points(&points).unwrap());
        assert_eq!(p.vertices.len(), 8);
        assert_eq!(p.faces.len(), 6);
        assert!(p.faces.iter().all(|f| f.vertices.len() == 4));
        assert_eq!(p.edges.len(), 12);
        for f in &p.faces {
            // Every vertex of a face lies on its plane, every other vertex below it.
            for (i, v) in p.vertices.iter().enumerate() {
                let d = f.normal.dot(*v) - f.offset;
                if f.vertices.contains(&(i as u32)) {
                    assert!(d.abs() < 1e-6);
                } else {
                    assert!(d < -1.0);
                }
            }
            // Counter-clockwise seen from outside: the loop's area vector points along the normal.
            let w: Vec<Vec3> = f.vertices.iter().map(|&i| p.vertices[i as usize]).collect();
            let area: Vec3 = (1..w.len() - 1).map(|k| (w[k] - w[0]).cross(w[k + 1] - w[0])).sum();
            assert!(area.normalize().dot(f.normal) > 0.999);
        }
        for e in &p.edges {
            let (f0, f1) = (&p.faces[e.faces[0] as usize], &p.faces[e.faces[1] as usize]);
            assert!(f0.vertices.contains(&e.a) && f0.vertices.contains(&e.b));
            assert!(f1.vertices.contains(&e.a) && f1.vertices.contains(&e.b));
        }
    }

    /// The box layout is the box's hull: the same vertices, and the same faces and edges
    /// (each face's loop a rotation of the hull's, each edge with the same faces on its sides),
    /// numbered as `Polytope::cuboid` says.
    #[test]
    fn the_box_layout_is_the_boxs_hull_renumbered() {
        let e = Vec3::new(1.0, 2.0, 3.0);
        let (b, hull) = (
            Polytope::cuboid(e),
            Polytope::from_hull(&ConvexHull::from_points(&Shape::cuboid(e).core_points()).unwrap()),
        );
        assert_eq!(b.vertices, hull.vertices);
        let same_loop = |x: &[u32], y: &[u32]| (0..4).any(|r| (0..4).all(|n| x[n] == y[(n + r) % 4]));
        let hull_face =
            |f: &Face| hull.faces.iter().position(|g| g.normal == f.normal && same_loop(&g.vertices, &f.vertices));
        let map: Vec<usize> = b.faces.iter().map(|f| hull_face(f).expect("a face of the hull")).collect();
        for (f, face) in b.faces.iter().enumerate() {
            assert_eq!(face.normal[f / 2], if f % 2 == 1 { 1.0 } else { -1.0 });
            assert_eq!(face.offset, e[f / 2]);
        }
        for (n, edge) in b.edges.iter().enumerate() {
            let (k, bi, bj) = (n / 4, n & 1, n >> 1 & 1);
            let (va, vb) = (b.vertices[edge.a as usize], b.vertices[edge.b as usize]);
            assert_eq!(vb - va, Vec3::from_array(std::array::from_fn(|m| if m == k { 2.0 * e[k] } else { 0.0 })));
            assert_eq!((va[(k + 1) % 3] > 0.0, va[(k + 2) % 3] > 0.0), (bi == 1, bj == 1));
            let twin =
                hull.edges.iter().find(|h| (h.a, h.b) == (edge.a, edge.b) || (h.a, h.b) == (edge.b, edge.a)).unwrap();
            let faces = edge.faces.map(|f| map[f as usize] as u32);
            assert!(faces == twin.faces || faces == [twin.faces[1], twin.faces[0]]);
            // Face 0 runs a -> b.
            let l = &b.faces[edge.faces[0] as usize].vertices;
            assert!((0..4).any(|m| l[m] == edge.a && l[(m + 1) % 4] == edge.b), "edge {n}");
        }
    }

    #[test]
    fn euler_characteristic_holds_for_random_hulls() {
        let mut rng = crate::scenes::Lcg(9);
        for _ in 0..20 {
            let points: Vec<Vec3> =
                (0..24).map(|_| Vec3::new(rng.next_centered(), rng.next_centered(), rng.next_centered())).collect();
            let p = Polytope::from_hull(&ConvexHull::from_points(&points).unwrap());
            assert_eq!(p.vertices.len() + p.faces.len(), p.edges.len() + 2, "V - E + F = 2");
        }
    }
}
