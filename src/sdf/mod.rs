//! Static signed distance fields: analytic primitives, rigid transforms, CSG and inside-out
//! containers, evaluated with their gradient on the CPU and, from the same compiled program,
//! in WGSL (`shaders/sdf.wgsl`).
//!
//! A distance is negative inside the solid and positive in free space; the gradient is the
//! unit outward normal of the nearest surface. The primitives give exact Euclidean distances.
//! CSG does not: union is exact outside the solid, intersection and subtraction are lower
//! bounds of the distance away from the surface (`max` of two distances), and all of them are
//! exact on the surface and keep its sign everywhere, which is what contact detection needs.
//!
//! Bodies meet an SDF collider the way they meet a plane (seed 000): every core point of a
//! body (hull vertices, sphere and capsule centres with their radius) is tested against the
//! field, and a point within the speculative margin becomes a contact whose normal is the
//! gradient there. One point makes at most three contacts per collider: with the nearest
//! surface, with a second one found by evaluating the field again at the point lifted off the
//! first along its normal (a concave corner's other wall, a narrow gap's far wall), and with a
//! third found from the point lifted off both (the third wall of a room's corner), so a ball or
//! a vertex in a corner of one field rests as between two or three planes. Where the first two
//! surfaces face each other within about 18° (a narrow gap's floor and ceiling), there is no
//! corner to lift into: the point is lifted to the gap's middle and moved by its travel over a
//! step along the gap, so the gap's end wall is met within half the gap's height, or a step's
//! travel ahead, and a ball thrown into the closed end of a narrow slot of one field rests there
//! as between three planes. Each contact is warm started from last step's contact with the same
//! surface (the normal within about 18°), whichever of the point's slots held it.

mod grid;
mod tree;

use std::sync::Arc;

use glam::{Quat, UVec3, Vec3, Vec4};

pub use grid::{GRID_PADDING_CELLS, GridSdf, MAX_GRID_SAMPLES};

use crate::body::Material;
use crate::error::{Error, Result, check_finite, check_non_negative, check_positive};
use crate::math::{quat_mul, quat_normalize, rotate, rotate_inv};

/// Deepest evaluation stack a compiled field may need (one entry per pending operand of a CSG
/// operation). A left-leaning chain `a.union(b).union(c)...` needs 2 whatever its length.
pub const SDF_STACK_DEPTH: u32 = 8;
/// Below this cosine between the normal of a point's nearest surface of a field and that of
/// the surface found from the point lifted off it (about 18°), the two are different surfaces
/// and the point takes a second contact (`cpu::stages::second_surface`; a third likewise,
/// `third_surface`). Above it, last step's contact of a surface warm starts this step's
/// (`cpu::stages::warm_sources`).
pub(crate) const SDF_SECOND_SURFACE_COS: f32 = 0.95;
/// Most flat faces of one field whose contacts with a body take the static solve's centroid
/// step (`cpu::stages::field_faces`): the first this many normals of its contacts to appear.
pub(crate) const MAX_FIELD_FACES: usize = 3;
/// `Vec4`s per compiled node: rotation, translation with kind, parameters, and the offset of a
/// grid's samples from the program's start.
pub const SDF_NODE_VEC4S: u32 = 4;

/// Node kinds of the compiled program (the `w` of a node's second `Vec4`, stored as a float).
pub const SDF_SPHERE: u32 = 0;
/// A cuboid with rounded edges (rounding 0 for a sharp one).
pub const SDF_CUBOID: u32 = 1;
/// A capsule along local y.
pub const SDF_CAPSULE: u32 = 2;
/// A cylinder along local y.
pub const SDF_CYLINDER: u32 = 3;
/// A torus around local y.
pub const SDF_TORUS: u32 = 4;
/// A half space.
pub const SDF_HALF_SPACE: u32 = 5;
/// A sampled grid ([`GridSdf`]).
pub const SDF_GRID: u32 = 6;
/// Union of the two operands on top of the stack.
pub const SDF_UNION: u32 = 16;
/// Intersection of the two operands on top of the stack.
pub const SDF_INTERSECTION: u32 = 17;
/// The first operand minus the second.
pub const SDF_SUBTRACTION: u32 = 18;
/// Complement of the operand on top of the stack (inside out).
pub const SDF_INVERT: u32 = 19;

/// A signed distance field built from primitives, transforms and CSG.
///
/// Sizes are in metres; every primitive is centred at its local origin, and round ones are
/// symmetric about local y. Build one with the constructors and combinators:
///
/// ```
/// use signorini::{Sdf, prelude::*};
/// // A hemispherical bowl of inner radius 1 m, 5 cm thick, rim at y = 0.
/// let bowl = Sdf::bowl(1.0, 0.05);
/// let (d, n) = bowl.evaluate(Vec3::new(0.0, -0.5, 0.0));
/// assert!((d - 0.5).abs() < 1e-6 && (n - Vec3::Y).length() < 1e-6);
/// ```
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum Sdf {
    /// A ball of the given radius.
    Sphere {
        /// Radius, m, `> 0`.
        radius: f32,
    },
    /// A box, optionally with rounded edges and corners.
    Cuboid {
        /// Half extents along local x, y, z, m, each `> 0`.
        half_extents: Vec3,
        /// Radius of the rounded edges, m, in `[0, min half extent)`; 0 for a sharp box (and
        /// in a scene file when left out).
        #[cfg_attr(feature = "serde", serde(default))]
        rounding: f32,
    },
    /// The points within `radius` of the segment from `(0, -half_height, 0)` to `(0, half_height, 0)`.
    Capsule {
        /// Half the length of the segment, m, `>= 0`.
        half_height: f32,
        /// Radius, m, `> 0`.
        radius: f32,
    },
    /// A solid cylinder along local y.
    Cylinder {
        /// Half its height, m, `> 0`.
        half_height: f32,
        /// Radius, m, `> 0`.
        radius: f32,
    },
    /// A ring torus around local y in the xz plane.
    Torus {
        /// Distance from the centre to the tube's axis, m, `> minor_radius`.
        major_radius: f32,
        /// Radius of the tube, m, `> 0`.
        minor_radius: f32,
    },
    /// The half space `normal · x <= offset` (solid below, like a [`Plane`](crate::Plane)).
    HalfSpace {
        /// Outward normal; normalized when compiled, must not be zero.
        normal: Vec3,
        /// Offset along the normal, m.
        offset: f32,
    },
    /// A field sampled on a grid, baked from a triangle mesh.
    Grid(Arc<GridSdf>),
    /// A field moved rigidly: `x_world = rotation * x_local + translation`.
    Transformed {
        /// The field in its local frame.
        sdf: Box<Sdf>,
        /// Translation, m.
        translation: Vec3,
        /// Rotation; normalized when compiled, must not be zero.
        rotation: Quat,
    },
    /// Points in either field (`min`).
    Union(Box<Sdf>, Box<Sdf>),
    /// Points in both fields (`max`).
    Intersection(Box<Sdf>, Box<Sdf>),
    /// Points in the first field and not in the second (`max(a, -b)`).
    Subtraction(Box<Sdf>, Box<Sdf>),
    /// The complement: solid and free space swapped (`-d`). A hollow container is an inverted solid.
    Inverted(Box<Sdf>),
}

impl Sdf {
    /// A ball of radius `radius`.
    pub fn sphere(radius: f32) -> Self {
        Self::Sphere { radius }
    }

    /// A box with the given half extents.
    pub fn cuboid(half_extents: Vec3) -> Self {
        Self::Cuboid { half_extents, rounding: 0.0 }
    }

    /// A box with the given (outer) half extents whose edges and corners are rounded with radius `rounding`.
    pub fn rounded_cuboid(half_extents: Vec3, rounding: f32) -> Self {
        Self::Cuboid { half_extents, rounding }
    }

    /// A capsule along local y.
    pub fn capsule(half_height: f32, radius: f32) -> Self {
        Self::Capsule { half_height, radius }
    }

    /// A cylinder along local y.
    pub fn cylinder(half_height: f32, radius: f32) -> Self {
        Self::Cylinder { half_height, radius }
    }

    /// A torus around local y.
    pub fn torus(major_radius: f32, minor_radius: f32) -> Self {
        Self::Torus { major_radius, minor_radius }
    }

    /// The half space `normal · x <= offset`.
    pub fn half_space(normal: Vec3, offset: f32) -> Self {
        Self::HalfSpace { normal, offset }
    }

    /// A baked grid field (see [`GridSdf::from_mesh`]).
    pub fn grid(grid: GridSdf) -> Self {
        Self::Grid(Arc::new(grid))
    }

    /// The inside of a closed box of the given inner half extents, centred at the origin: free
    /// inside, solid outside.
    pub fn hollow_box(half_extents: Vec3) -> Self {
        Self::cuboid(half_extents).inverted()
    }

    /// A hemispherical bowl: a shell of inner radius `radius` and the given thickness, centred
    /// at the origin, open upwards (+y) with its rim at y = 0.
    pub fn bowl(radius: f32, thickness: f32) -> Self {
        Self::sphere(radius + thickness).subtract(Self::sphere(radius)).intersection(Self::half_space(Vec3::Y, 0.0))
    }

    /// This field moved by `translation`.
    #[must_use]
    pub fn translated(self, translation: Vec3) -> Self {
        self.transformed(translation, Quat::IDENTITY)
    }

    /// This field turned by `rotation` about the origin.
    #[must_use]
    pub fn rotated(self, rotation: Quat) -> Self {
        self.transformed(Vec3::ZERO, rotation)
    }

    /// This field turned by `rotation`, then moved by `translation`.
    #[must_use]
    pub fn transformed(self, translation: Vec3, rotation: Quat) -> Self {
        Self::Transformed { sdf: Box::new(self), translation, rotation }
    }

    /// The union of this field and `other`.
    #[must_use]
    pub fn union(self, other: Sdf) -> Self {
        Self::Union(Box::new(self), Box::new(other))
    }

    /// The intersection of this field and `other`.
    #[must_use]
    pub fn intersection(self, other: Sdf) -> Self {
        Self::Intersection(Box::new(self), Box::new(other))
    }

    /// This field minus `other`.
    #[must_use]
    pub fn subtract(self, other: Sdf) -> Self {
        Self::Subtraction(Box::new(self), Box::new(other))
    }

    /// The complement of this field (solid and free space swapped).
    #[must_use]
    pub fn inverted(self) -> Self {
        Self::Inverted(Box::new(self))
    }

    /// The signed distance at `x` and the unit gradient there (the outward normal of the
    /// nearest surface). Evaluates the tree directly; solvers run the compiled twin.
    pub fn evaluate(&self, x: Vec3) -> (f32, Vec3) {
        match self {
            Self::Transformed { sdf, translation, rotation } => {
                let q = quat_normalize(*rotation);
                let (d, g) = sdf.evaluate(rotate_inv(q, x - *translation));
                (d, rotate(q, g))
            }
            Self::Union(a, b) => union(a.evaluate(x), b.evaluate(x)),
            Self::Intersection(a, b) => intersection(a.evaluate(x), b.evaluate(x)),
            Self::Subtraction(a, b) => subtraction(a.evaluate(x), b.evaluate(x)),
            Self::Inverted(a) => invert(a.evaluate(x)),
            Self::Grid(grid) => grid.sample(x),
            primitive => {
                let (kind, params) = primitive.primitive().expect("every other variant is a primitive");
                primitive_distance(kind, params, x)
            }
        }
    }

    /// The signed distance at `x`, m.
    pub fn distance(&self, x: Vec3) -> f32 {
        self.evaluate(x).0
    }

    /// The kind and parameters of a primitive (normalized where the program expects it).
    fn primitive(&self) -> Option<(u32, Vec4)> {
        Some(match *self {
            Self::Sphere { radius } => (SDF_SPHERE, Vec4::new(radius, 0.0, 0.0, 0.0)),
            Self::Cuboid { half_extents, rounding } => (SDF_CUBOID, half_extents.extend(rounding)),
            Self::Capsule { half_height, radius } => (SDF_CAPSULE, Vec4::new(half_height, radius, 0.0, 0.0)),
            Self::Cylinder { half_height, radius } => (SDF_CYLINDER, Vec4::new(half_height, radius, 0.0, 0.0)),
            Self::Torus { major_radius, minor_radius } => (SDF_TORUS, Vec4::new(major_radius, minor_radius, 0.0, 0.0)),
            Self::HalfSpace { normal, offset } => {
                let len = normal.length();
                (SDF_HALF_SPACE, (normal / len).extend(offset / len))
            }
            _ => return None,
        })
    }

    /// Checks every number and size.
    ///
    /// # Errors
    /// [`Error::NonFinite`], [`Error::NonPositive`], [`Error::OutOfRange`] for bad sizes,
    /// [`Error::DegenerateShape`] for a zero normal or rotation, and a field whose evaluation
    /// needs a deeper stack than [`SDF_STACK_DEPTH`].
    pub fn validate(&self) -> Result<()> {
        self.validate_tree()?;
        let vec4s = self.program_size();
        if vec4s >= 1 << 24 {
            return Err(Error::OutOfRange {
                what: "SDF program size in Vec4s (grid samples / 4 + nodes)",
                range: "[1, 2^24)",
                value: vec4s as f32,
            });
        }
        let depth = self.stack_depth();
        if depth > SDF_STACK_DEPTH as usize {
            return Err(Error::OutOfRange {
                what: "SDF evaluation stack depth (nest CSG to the left: a.union(b).union(c))",
                range: "[1, 8]",
                value: depth as f32,
            });
        }
        Ok(())
    }

    fn validate_tree(&self) -> Result<()> {
        match self {
            Self::Sphere { radius } => check_positive("SDF sphere radius", *radius),
            Self::Cuboid { half_extents, rounding } => {
                for e in half_extents.to_array() {
                    check_positive("SDF cuboid half extent", e)?;
                }
                check_non_negative("SDF cuboid rounding", *rounding)?;
                if *rounding >= half_extents.min_element() {
                    return Err(Error::OutOfRange {
                        what: "SDF cuboid rounding",
                        range: "[0, smallest half extent)",
                        value: *rounding,
                    });
                }
                Ok(())
            }
            Self::Capsule { half_height, radius } => {
                check_non_negative("SDF capsule half height", *half_height)?;
                check_positive("SDF capsule radius", *radius)
            }
            Self::Cylinder { half_height, radius } => {
                check_positive("SDF cylinder half height", *half_height)?;
                check_positive("SDF cylinder radius", *radius)
            }
            Self::Torus { major_radius, minor_radius } => {
                check_positive("SDF torus minor radius", *minor_radius)?;
                check_positive("SDF torus major radius", *major_radius)?;
                if minor_radius >= major_radius {
                    return Err(Error::OutOfRange {
                        what: "SDF torus minor radius",
                        range: "(0, major radius)",
                        value: *minor_radius,
                    });
                }
                Ok(())
            }
            Self::HalfSpace { normal, offset } => {
                check_finite("SDF half-space normal", normal, normal.is_finite())?;
                check_finite("SDF half-space offset", offset, offset.is_finite())?;
                if normal.length() < 1e-6 {
                    return Err(Error::DegenerateShape { reason: "SDF half-space normal is zero".into() });
                }
                Ok(())
            }
            Self::Transformed { sdf, translation, rotation } => {
                check_finite("SDF translation", translation, translation.is_finite())?;
                check_finite("SDF rotation", rotation, rotation.is_finite())?;
                if rotation.length() < 1e-6 {
                    return Err(Error::DegenerateShape { reason: "SDF rotation is a zero quaternion".into() });
                }
                sdf.validate_tree()
            }
            Self::Union(a, b) | Self::Intersection(a, b) | Self::Subtraction(a, b) => {
                a.validate_tree()?;
                b.validate_tree()
            }
            Self::Inverted(a) => a.validate_tree(),
            // Checked when baked.
            Self::Grid(_) => Ok(()),
        }
    }

    /// `Vec4`s of the compiled program.
    fn program_size(&self) -> u64 {
        match self {
            Self::Transformed { sdf, .. } | Self::Inverted(sdf) => sdf.program_size() + SDF_NODE_VEC4S as u64,
            Self::Union(a, b) | Self::Intersection(a, b) | Self::Subtraction(a, b) => {
                a.program_size() + b.program_size() + SDF_NODE_VEC4S as u64
            }
            Self::Grid(g) => SDF_NODE_VEC4S as u64 + (g.values().len() as u64).div_ceil(4),
            _ => SDF_NODE_VEC4S as u64,
        }
    }

    /// Stack entries the compiled program needs.
    fn stack_depth(&self) -> usize {
        match self {
            Self::Transformed { sdf, .. } | Self::Inverted(sdf) => sdf.stack_depth(),
            Self::Union(a, b) | Self::Intersection(a, b) | Self::Subtraction(a, b) => {
                a.stack_depth().max(1 + b.stack_depth())
            }
            _ => 1,
        }
    }

    /// Compiles a validated field into the postfix program the solvers run: [`SDF_NODE_VEC4S`]
    /// `Vec4`s per node, then the samples of any grids. Each primitive carries its full world
    /// transform (rigid transforms compose, and distances do not change under them), so
    /// evaluation needs no transform stack. Evaluate it with [`evaluate_program`].
    pub fn compile(&self) -> SdfProgram {
        let mut data = Vec::new();
        let mut grids = Vec::new();
        self.compile_into(&mut data, &mut grids, Quat::IDENTITY, Vec3::ZERO);
        let node_count = data.len() as u32 / SDF_NODE_VEC4S;
        for (node, grid) in grids {
            data[node + 3].x = data.len() as f32;
            data.extend(grid.values().chunks(4).map(|c| Vec4::from_slice(&[c, &[0.0; 4][c.len()..]].concat())));
        }
        SdfProgram { data, node_count }
    }

    fn compile_into<'a>(&'a self, nodes: &mut Vec<Vec4>, grids: &mut Vec<(usize, &'a GridSdf)>, q: Quat, t: Vec3) {
        let op = |nodes: &mut Vec<Vec4>, kind: u32| {
            nodes.extend([Vec4::ZERO, Vec4::new(0.0, 0.0, 0.0, kind as f32), Vec4::ZERO, Vec4::ZERO]);
        };
        match self {
            Self::Transformed { sdf, translation, rotation } => {
                let q_child = quat_normalize(quat_mul(q, quat_normalize(*rotation)));
                sdf.compile_into(nodes, grids, q_child, t + rotate(q, *translation));
            }
            Self::Union(a, b) | Self::Intersection(a, b) | Self::Subtraction(a, b) => {
                a.compile_into(nodes, grids, q, t);
                b.compile_into(nodes, grids, q, t);
                let kind = match self {
                    Self::Union(..) => SDF_UNION,
                    Self::Intersection(..) => SDF_INTERSECTION,
                    _ => SDF_SUBTRACTION,
                };
                op(nodes, kind);
            }
            Self::Inverted(a) => {
                a.compile_into(nodes, grids, q, t);
                op(nodes, SDF_INVERT);
            }
            Self::Grid(grid) => {
                // The node's frame starts at sample (0, 0, 0); the samples' offset is patched in
                // once every node is placed.
                grids.push((nodes.len(), grid));
                let d = grid.dims();
                let params = Vec4::new(d.x as f32, d.y as f32, d.z as f32, grid.cell_size());
                let origin = t + rotate(q, grid.origin());
                nodes.extend([Vec4::from(q), origin.extend(SDF_GRID as f32), params, Vec4::ZERO]);
            }
            primitive => {
                let (kind, params) = primitive.primitive().expect("every other variant is a primitive");
                nodes.extend([Vec4::from(q), t.extend(kind as f32), params, Vec4::ZERO]);
            }
        }
    }
}

/// A compiled field: `node_count` nodes of [`SDF_NODE_VEC4S`] `Vec4`s, then grid samples.
#[derive(Clone, Debug, PartialEq)]
pub struct SdfProgram {
    /// Nodes, then the samples of any grids (four per `Vec4`).
    pub data: Vec<Vec4>,
    /// Number of nodes.
    pub node_count: u32,
}

/// A static collider made of a signed distance field and a surface material.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(deny_unknown_fields))]
pub struct SdfCollider {
    /// The field; the solid is where it is negative.
    pub sdf: Sdf,
    /// Surface material, combined with a body's as for planes.
    #[cfg_attr(feature = "serde", serde(default))]
    pub material: Material,
}

impl SdfCollider {
    /// A collider with the default material.
    pub fn new(sdf: Sdf) -> Self {
        Self { sdf, material: Material::default() }
    }

    /// Sets the material.
    #[must_use]
    pub fn material(mut self, material: Material) -> Self {
        self.material = material;
        self
    }

    /// Sets the friction coefficient.
    #[must_use]
    pub fn friction(mut self, friction: f32) -> Self {
        self.material.friction = friction;
        self
    }

    /// Sets the restitution coefficient.
    #[must_use]
    pub fn restitution(mut self, restitution: f32) -> Self {
        self.material.restitution = restitution;
        self
    }
}

/// Names an SDF collider of a [`World`](crate::World).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct SdfHandle(pub(crate) u32);

impl SdfHandle {
    /// The handle of the collider with this index.
    pub fn from_index(index: usize) -> Self {
        Self(index as u32)
    }

    /// The collider's index, in insertion order.
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

#[inline]
fn union(a: (f32, Vec3), b: (f32, Vec3)) -> (f32, Vec3) {
    if a.0 <= b.0 { a } else { b }
}

#[inline]
fn intersection(a: (f32, Vec3), b: (f32, Vec3)) -> (f32, Vec3) {
    if a.0 >= b.0 { a } else { b }
}

#[inline]
fn subtraction(a: (f32, Vec3), b: (f32, Vec3)) -> (f32, Vec3) {
    intersection(a, invert(b))
}

#[inline]
fn invert(a: (f32, Vec3)) -> (f32, Vec3) {
    (-a.0, -a.1)
}

/// `-1` for negative values, else `1` (a point on a symmetry plane picks the positive side).
#[inline]
fn sign(x: f32) -> f32 {
    if x < 0.0 { -1.0 } else { 1.0 }
}

/// Distance and unit gradient of a primitive at the local point `p`. Twin of
/// `sdf_primitive` in shaders/sdf.wgsl, operation for operation.
pub(crate) fn primitive_distance(kind: u32, a: Vec4, p: Vec3) -> (f32, Vec3) {
    match kind {
        SDF_SPHERE => {
            let l = p.dot(p).sqrt();
            let g = if l > 0.0 { p * (1.0 / l) } else { Vec3::Y };
            (l - a.x, g)
        }
        SDF_CUBOID => {
            // Distance to the inner box, less the rounding: exact for a rounded box.
            let inner = Vec3::new(a.x - a.w, a.y - a.w, a.z - a.w);
            let q = Vec3::new(p.x.abs() - inner.x, p.y.abs() - inner.y, p.z.abs() - inner.z);
            let o = Vec3::new(q.x.max(0.0), q.y.max(0.0), q.z.max(0.0));
            let lo = o.dot(o).sqrt();
            if lo > 0.0 {
                let inv = 1.0 / lo;
                (lo - a.w, Vec3::new(sign(p.x) * o.x * inv, sign(p.y) * o.y * inv, sign(p.z) * o.z * inv))
            } else if q.x >= q.y && q.x >= q.z {
                (q.x - a.w, Vec3::new(sign(p.x), 0.0, 0.0))
            } else if q.y >= q.z {
                (q.y - a.w, Vec3::new(0.0, sign(p.y), 0.0))
            } else {
                (q.z - a.w, Vec3::new(0.0, 0.0, sign(p.z)))
            }
        }
        SDF_CAPSULE => {
            let v = Vec3::new(p.x, p.y - p.y.clamp(-a.x, a.x), p.z);
            let l = v.dot(v).sqrt();
            let g = if l > 0.0 { v * (1.0 / l) } else { Vec3::X };
            (l - a.y, g)
        }
        SDF_CYLINDER | SDF_TORUS => {
            let rho = (p.x * p.x + p.z * p.z).sqrt();
            let e = if rho > 0.0 { Vec3::new(p.x * (1.0 / rho), 0.0, p.z * (1.0 / rho)) } else { Vec3::X };
            if kind == SDF_TORUS {
                let (qx, qy) = (rho - a.x, p.y);
                let l = (qx * qx + qy * qy).sqrt();
                let g = if l > 0.0 { (e * qx + Vec3::new(0.0, qy, 0.0)) * (1.0 / l) } else { e };
                return (l - a.y, g);
            }
            let (dx, dy) = (rho - a.y, p.y.abs() - a.x);
            if dx > 0.0 && dy > 0.0 {
                let l = (dx * dx + dy * dy).sqrt();
                (l, (e * dx + Vec3::new(0.0, sign(p.y) * dy, 0.0)) * (1.0 / l))
            } else if dx > dy {
                (dx, e)
            } else {
                (dy, Vec3::new(0.0, sign(p.y), 0.0))
            }
        }
        _ => {
            let n = a.truncate();
            (n.dot(p) - a.w, n)
        }
    }
}

/// Evaluates a compiled program (`count` nodes from `first`, in `Vec4`s of `nodes`) at the
/// world point `x`: distance and unit gradient. Twin of `sdf_evaluate` in shaders/sdf.wgsl.
///
/// # Panics
/// If the nodes are not a program made by [`Sdf::compile`] (operands missing from the stack).
pub fn evaluate_program(data: &[Vec4], first: u32, count: u32, x: Vec3) -> (f32, Vec3) {
    let mut stack = [(0.0_f32, Vec3::ZERO); SDF_STACK_DEPTH as usize];
    let mut top = 0usize;
    for k in 0..count {
        let base = (first + k * SDF_NODE_VEC4S) as usize;
        let (rotation, translation, params) = (data[base], data[base + 1], data[base + 2]);
        let kind = translation.w as u32;
        match kind {
            SDF_UNION | SDF_INTERSECTION | SDF_SUBTRACTION => {
                let (a, b) = (stack[top - 2], stack[top - 1]);
                stack[top - 2] = match kind {
                    SDF_UNION => union(a, b),
                    SDF_INTERSECTION => intersection(a, b),
                    _ => subtraction(a, b),
                };
                top -= 1;
            }
            SDF_INVERT => stack[top - 1] = invert(stack[top - 1]),
            _ => {
                let q = Quat::from_vec4(rotation);
                let p = rotate_inv(q, x - translation.truncate());
                let (d, g) = if kind == SDF_GRID {
                    let samples = first as usize + data[base + 3].x as usize;
                    let dims = UVec3::new(params.x as u32, params.y as u32, params.z as u32);
                    grid::grid_sample(dims, params.w, p, |i| data[samples + (i / 4) as usize][(i % 4) as usize])
                } else {
                    primitive_distance(kind, params, p)
                };
                stack[top] = (d, rotate(q, g));
                top += 1;
            }
        }
    }
    stack[0]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenes::Lcg;

    fn random_point(rng: &mut Lcg, extent: f32) -> Vec3 {
        Vec3::new(rng.range(-extent, extent), rng.range(-extent, extent), rng.range(-extent, extent))
    }

    /// Brute-force unsigned distance to a surface given by dense samples: an upper bound that
    /// is within the sampling spacing of the truth.
    fn nearest_sample(samples: &[Vec3], x: Vec3) -> f32 {
        samples.iter().map(|s| s.distance(x)).fold(f32::MAX, f32::min)
    }

    /// Points on the surface of a primitive, about `spacing` apart, from a fine lattice
    /// projected onto the surface along the gradient (Newton steps on the exact field).
    fn surface_samples(sdf: &Sdf, extent: f32, spacing: f32) -> Vec<Vec3> {
        let n = (2.0 * extent / spacing) as i32;
        let mut out = Vec::new();
        for i in 0..=n {
            for j in 0..=n {
                for k in 0..=n {
                    let mut x = Vec3::new(i as f32, j as f32, k as f32) * spacing - Vec3::splat(extent);
                    let (d, _) = sdf.evaluate(x);
                    if d.abs() > spacing {
                        continue;
                    }
                    for _ in 0..4 {
                        let (d, g) = sdf.evaluate(x);
                        x -= d * g;
                    }
                    out.push(x);
                }
            }
        }
        out
    }

    fn primitives() -> Vec<Sdf> {
        vec![
            Sdf::sphere(0.7),
            Sdf::cuboid(Vec3::new(0.8, 0.5, 0.3)),
            Sdf::rounded_cuboid(Vec3::new(0.8, 0.5, 0.3), 0.1),
            Sdf::capsule(0.4, 0.3),
            Sdf::cylinder(0.5, 0.4),
            Sdf::torus(0.6, 0.2),
            Sdf::half_space(Vec3::new(1.0, 2.0, -0.5), 0.3),
        ]
    }

    /// A primitive's distance is exact: `x - d ∇d` lies on the surface, the gradient is a unit
    /// vector that agrees with central differences, and outside the solid the distance equals
    /// the distance to the nearest of dense surface samples within their spacing.
    #[test]
    fn primitive_distances_are_exact() {
        let mut rng = Lcg(11);
        let spacing = 0.02;
        for sdf in primitives() {
            let samples =
                if matches!(sdf, Sdf::HalfSpace { .. }) { Vec::new() } else { surface_samples(&sdf, 1.2, spacing) };
            for _ in 0..400 {
                let x = random_point(&mut rng, 1.2);
                let (d, g) = sdf.evaluate(x);
                assert!((g.length() - 1.0).abs() < 1e-5, "{sdf:?} at {x}: |grad| = {}", g.length());
                let foot = x - d * g;
                assert!(sdf.distance(foot).abs() < 2e-5, "{sdf:?}: foot of {x} is {} off", sdf.distance(foot));
                let e = 1e-3;
                let fd = Vec3::new(
                    sdf.distance(x + Vec3::X * e) - sdf.distance(x - Vec3::X * e),
                    sdf.distance(x + Vec3::Y * e) - sdf.distance(x - Vec3::Y * e),
                    sdf.distance(x + Vec3::Z * e) - sdf.distance(x - Vec3::Z * e),
                ) / (2.0 * e);
                // Kinks (the medial axis) are rare among random points; the gradient is one-sided there.
                if (fd.length() - 1.0).abs() < 1e-2 {
                    assert!((fd - g).length() < 2e-2, "{sdf:?} at {x}: grad {g} vs differences {fd}");
                }
                if d > 0.0 && !samples.is_empty() {
                    let brute = nearest_sample(&samples, x);
                    assert!(brute >= d - 1e-4 && brute <= d + spacing, "{sdf:?} at {x}: {d} vs samples {brute}");
                }
            }
        }
    }

    #[test]
    fn hand_computed_values() {
        let close = |a: f32, b: f32| (a - b).abs() < 1e-6;
        assert!(close(Sdf::sphere(1.0).distance(Vec3::new(3.0, 4.0, 0.0)), 4.0));
        let b = Sdf::cuboid(Vec3::new(1.0, 2.0, 3.0));
        assert!(close(b.distance(Vec3::new(2.0, 3.0, 0.0)), 2f32.sqrt()));
        assert!(close(b.distance(Vec3::new(0.5, 0.0, 0.0)), -0.5));
        let r = Sdf::rounded_cuboid(Vec3::new(1.0, 1.0, 1.0), 0.25);
        assert!(close(r.distance(Vec3::new(2.0, 2.0, 0.0)), 1.25 * 2f32.sqrt() - 0.25));
        assert!(close(Sdf::capsule(1.0, 0.5).distance(Vec3::new(0.0, 3.0, 0.0)), 1.5));
        assert!(close(Sdf::cylinder(1.0, 0.5).distance(Vec3::new(4.5, 4.0, 0.0)), 5.0));
        assert!(close(Sdf::torus(2.0, 0.5).distance(Vec3::new(0.0, 0.0, 0.0)), 1.5));
        assert!(close(Sdf::half_space(Vec3::new(0.0, 2.0, 0.0), 2.0).distance(Vec3::new(5.0, 3.0, 1.0)), 2.0));
        let bowl = Sdf::bowl(1.0, 0.1);
        assert!(close(bowl.distance(Vec3::new(0.0, -0.4, 0.0)), 0.6));
        assert!(close(bowl.distance(Vec3::new(0.0, -1.05, 0.0)), -0.05));
        let hollow = Sdf::hollow_box(Vec3::splat(1.0));
        let (d, n) = hollow.evaluate(Vec3::new(0.0, -0.75, 0.0));
        assert!(close(d, 0.25) && n == Vec3::Y);
        let moved = Sdf::sphere(1.0).transformed(Vec3::new(0.0, 5.0, 0.0), Quat::from_rotation_x(1.0));
        assert!(close(moved.distance(Vec3::new(0.0, 7.0, 0.0)), 1.0));
    }

    /// The compiled program (transforms baked into the primitives) gives the tree's values.
    #[test]
    fn compiled_program_matches_tree() {
        let mut rng = Lcg(3);
        let rot = Quat::from_euler(glam::EulerRot::XYZ, 0.3, -1.1, 0.7);
        let fields = [
            Sdf::bowl(1.0, 0.1).translated(Vec3::new(0.2, 0.1, -0.3)),
            Sdf::hollow_box(Vec3::new(1.0, 0.8, 0.9)).rotated(rot),
            Sdf::torus(0.6, 0.2)
                .rotated(rot)
                .union(Sdf::capsule(0.3, 0.2).translated(Vec3::X))
                .union(Sdf::cylinder(0.3, 0.3).transformed(Vec3::new(0.0, -0.5, 0.2), rot.inverse()))
                .subtract(Sdf::rounded_cuboid(Vec3::splat(0.4), 0.1).translated(Vec3::new(0.5, 0.5, 0.0)))
                .transformed(Vec3::new(0.1, 0.2, 0.3), rot),
            Sdf::sphere(0.5).union(Sdf::sphere(0.4).union(Sdf::sphere(0.3).union(Sdf::sphere(0.2)))),
            {
                let (v, t) = crate::scenes::uv_sphere_mesh(0.5, 12, 6);
                let grid = GridSdf::from_mesh(&v, &t, 0.1).unwrap();
                Sdf::grid(grid.clone()).transformed(Vec3::new(0.3, -0.2, 0.1), rot).union(Sdf::grid(grid).inverted())
            },
        ];
        let mut gradient_mismatches = 0;
        for sdf in &fields {
            sdf.validate().unwrap();
            let program = sdf.compile();
            for _ in 0..500 {
                let x = random_point(&mut rng, 1.5);
                let (d0, g0) = sdf.evaluate(x);
                let (d1, g1) = evaluate_program(&program.data, 0, program.node_count, x);
                assert!((d0 - d1).abs() < 1e-5, "{d0} vs {d1}");
                // Where two operands tie, rounding may pick the other one's gradient.
                gradient_mismatches += usize::from((g0 - g1).length() > 1e-4);
            }
        }
        assert!(gradient_mismatches <= 20, "{gradient_mismatches} of 2000 gradients differ");
    }

    #[test]
    fn bad_fields_are_rejected() {
        let bad = [
            Sdf::sphere(0.0),
            Sdf::sphere(f32::NAN),
            Sdf::cuboid(Vec3::new(1.0, -1.0, 1.0)),
            Sdf::rounded_cuboid(Vec3::splat(0.5), 0.5),
            Sdf::capsule(-1.0, 0.5),
            Sdf::cylinder(1.0, 0.0),
            Sdf::torus(0.5, 0.5),
            Sdf::half_space(Vec3::ZERO, 1.0),
            Sdf::sphere(1.0).transformed(Vec3::ZERO, Quat::from_xyzw(0.0, 0.0, 0.0, 0.0)),
            Sdf::sphere(1.0).translated(Vec3::new(f32::INFINITY, 0.0, 0.0)),
        ];
        for sdf in bad {
            assert!(sdf.validate().is_err(), "{sdf:?} was accepted");
        }
        // Right-nested unions need one stack entry per level.
        let mut deep = Sdf::sphere(1.0);
        for _ in 0..8 {
            deep = Sdf::sphere(1.0).union(deep);
        }
        assert!(matches!(deep.validate(), Err(Error::OutOfRange { .. })));
        let mut chain = Sdf::sphere(1.0);
        for _ in 0..100 {
            chain = chain.union(Sdf::sphere(1.0));
        }
        chain.validate().unwrap();
    }
}
