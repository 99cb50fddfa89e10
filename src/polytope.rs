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
