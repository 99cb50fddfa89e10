//! Ray casts against a world's bodies, static planes and fields, on the host from the solver's
//! own records of them (the bodies as they are now): one function for both solvers.

use glam::{Vec3, Vec4};

use crate::body::{BodyHandle, CollisionGroups};
use crate::error::{Error, Result, check_finite};
use crate::layout::{GpuBody, GpuBodyProps, GpuCollider, GpuShape, SHAPE_POINT, SHAPE_SEGMENT};
use crate::math::{rotate, rotate_inv};
use crate::solver::Collidable;

/// What a ray met first ([`Solver::cast_ray`](crate::Solver::cast_ray)).
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(deny_unknown_fields))]
pub struct RayHit {
    /// What it hit.
    pub object: Collidable,
    /// How far along the ray, m (its direction taken as a unit vector); 0 for a ray that starts
    /// inside what it hit.
    pub distance: f32,
    /// Where, world frame, m.
    pub point: Vec3,
    /// The surface's outward unit normal there; the ray's reverse for a ray that starts inside.
    pub normal: Vec3,
}

/// Sphere tracing stops this close to a field's surface, m.
pub const RAY_FIELD_TOLERANCE: f32 = 1e-5;
/// Sphere tracing gives up on a field after this many steps (a ray grazing a surface).
pub const RAY_FIELD_STEPS: u32 = 512;

/// What a ray is cast against besides the bodies' states: their properties and shapes, and the
/// static colliders (planes first, then fields).
pub(crate) struct RayScene<'a> {
    pub props: &'a [GpuBodyProps],
    pub shapes: &'a [GpuShape],
    pub geometry: &'a [Vec4],
    pub colliders: &'a [GpuCollider],
    pub plane_count: u32,
}

/// [`RayScene`]'s tables, owned: what the GPU solver keeps on the host for ray casts.
pub(crate) struct RayTables {
    pub props: Vec<GpuBodyProps>,
    pub shapes: Vec<GpuShape>,
    pub geometry: Vec<Vec4>,
    pub colliders: Vec<GpuCollider>,
    pub plane_count: u32,
}

impl RayTables {
    /// The scene these tables hold.
    pub fn scene(&self) -> RayScene<'_> {
        RayScene {
            props: &self.props,
            shapes: &self.shapes,
            geometry: &self.geometry,
            colliders: &self.colliders,
            plane_count: self.plane_count,
        }
    }
}

/// The checked ray: its origin, unit direction and length.
pub(crate) fn checked_ray(origin: Vec3, direction: Vec3, max_distance: f32) -> Result<(Vec3, Vec3, f32)> {
    check_finite("ray origin", origin, origin.is_finite())?;
    check_finite("ray direction", direction, direction.is_finite())?;
    let length = direction.length();
    if length <= 1e-12 {
        return Err(Error::OutOfRange { what: "ray direction length", range: "(0, inf)", value: length });
    }
    if max_distance.is_nan() || max_distance <= 0.0 {
        return Err(Error::OutOfRange { what: "ray length", range: "(0, inf]", value: max_distance });
    }
    Ok((origin, direction / length, max_distance))
}

/// The first of `scene`'s colliders and `bodies` (those `groups` lets through) that the ray
/// from `origin` along unit `d` meets within `max`.
pub(crate) fn cast_ray(
    scene: &RayScene,
    bodies: &[GpuBody],
    (origin, d, max): (Vec3, Vec3, f32),
    groups: CollisionGroups,
) -> Option<RayHit> {
    let mut filter = GpuBodyProps::default();
    filter.set_groups(groups);
    let mut best: Option<RayHit> = None;
    let mut keep = |object: Collidable, hit: Option<(f32, Vec3)>| {
        if let Some((t, normal)) = hit
            && t <= max
            && best.is_none_or(|b| t < b.distance)
        {
            best = Some(RayHit { object, distance: t, point: origin + t * d, normal });
        }
    };
    for (c, collider) in scene.colliders.iter().enumerate() {
        let object = if (c as u32) < scene.plane_count {
            Collidable::Plane(crate::PlaneHandle::from_index(c))
        } else {
            Collidable::Sdf(crate::SdfHandle::from_index(c - scene.plane_count as usize))
        };
        keep(object, ray_collider(scene.geometry, collider, origin, d, max));
    }
    for (i, (b, pr)) in bodies.iter().zip(scene.props).enumerate() {
        if !filter.groups_interact(pr) {
            continue;
        }
        let hit = ray_body(scene, b, &scene.shapes[pr.shape as usize], origin, d);
        keep(Collidable::Body(BodyHandle(i as u32)), hit);
    }
    best
}

/// Where the ray meets a plane (the solid half-space behind it) or a field, by sphere tracing
/// the field's distance.
fn ray_collider(geometry: &[Vec4], c: &GpuCollider, origin: Vec3, d: Vec3, max: f32) -> Option<(f32, Vec3)> {
    if c.node_count == 0 {
        let s = c.normal.dot(origin) - c.offset;
        let closing = -c.normal.dot(d);
        return if s <= 0.0 {
            Some((0.0, -d))
        } else if closing > 0.0 {
            Some((s / closing, c.normal))
        } else {
            None
        };
    }
    let mut t = 0.0;
    for _ in 0..RAY_FIELD_STEPS {
        let (distance, gradient) = crate::sdf::evaluate_program(geometry, c.first_node, c.node_count, origin + t * d);
        if distance <= 0.0 && t == 0.0 {
            return Some((0.0, -d));
        }
        if distance < RAY_FIELD_TOLERANCE {
            return Some((t, gradient.normalize_or(-d)));
        }
        t += distance;
        if t > max {
            return None;
        }
    }
    None
}

/// Where the ray meets body `b` of shape `shape`: after its bounding sphere, exactly for a
/// sphere, a capsule or a polytope (clipped by its faces' planes).
fn ray_body(scene: &RayScene, b: &GpuBody, shape: &GpuShape, origin: Vec3, d: Vec3) -> Option<(f32, Vec3)> {
    let point = |k: u32| scene.geometry[(shape.first_point + k) as usize].truncate();
    match shape.kind {
        SHAPE_POINT => ray_sphere(origin - (b.position + rotate(b.orientation, point(0))), d, shape.radius),
        SHAPE_SEGMENT => {
            let (p0, p1) = (rotate(b.orientation, point(0)), rotate(b.orientation, point(1)));
            ray_capsule(origin - b.position, d, p0, p1, shape.radius)
        }
        _ => {
            // The bounding sphere first: most bodies are passed over there.
            let reach = (0..shape.point_count).map(|k| point(k).length_squared()).fold(0.0, f32::max).sqrt();
            ray_sphere(origin - b.position, d, reach)?;
            let (o, dl) = (rotate_inv(b.orientation, origin - b.position), rotate_inv(b.orientation, d));
            let (t, n) = ray_polytope(
                &scene.geometry[(shape.first_point + shape.point_count) as usize..],
                shape.face_count,
                o,
                dl,
            )?;
            Some((t, if t == 0.0 { -d } else { rotate(b.orientation, n) }))
        }
    }
}

/// A ray from `o` (relative to the sphere's centre) along unit `d` against a sphere of radius
/// `r`: the distance and the outward normal.
fn ray_sphere(o: Vec3, d: Vec3, r: f32) -> Option<(f32, Vec3)> {
    let c = o.length_squared() - r * r;
    if c <= 0.0 {
        return Some((0.0, -d));
    }
    let b = o.dot(d);
    let h = b * b - c;
    if b >= 0.0 || h < 0.0 {
        return None;
    }
    let t = -b - h.sqrt();
    Some((t, ((o + t * d) / r).normalize_or(-d)))
}

/// A ray from `o` along unit `d` against the points within `r` of the segment `p0 p1` (all
/// relative to one origin): the distance and the outward normal.
fn ray_capsule(o: Vec3, d: Vec3, p0: Vec3, p1: Vec3, r: f32) -> Option<(f32, Vec3)> {
    let axis = p1 - p0;
    let closest = |x: Vec3| p0 + axis * ((x - p0).dot(axis) / axis.length_squared()).clamp(0.0, 1.0);
    if (o - closest(o)).length_squared() <= r * r {
        return Some((0.0, -d));
    }
    let normal = |t: f32| {
        let x = o + t * d;
        (x - closest(x)).normalize_or(-d)
    };
    // The side: the cylinder about the axis, within the segment.
    let (aa, ad) = (axis.length_squared(), axis.dot(d));
    let oa = o - p0;
    let (ao, doa, oo) = (axis.dot(oa), d.dot(oa), oa.length_squared());
    let a = aa - ad * ad;
    if a > 1e-12 * aa {
        let b = aa * doa - ao * ad;
        let c = aa * oo - ao * ao - r * r * aa;
        let h = b * b - a * c;
        if h < 0.0 {
            return None;
        }
        let t = (-b - h.sqrt()) / a;
        let along = ao + t * ad;
        if t >= 0.0 && along > 0.0 && along < aa {
            return Some((t, normal(t)));
        }
    }
    // The end caps: the nearer of the two balls the ray meets.
    let caps = [p0, p1].map(|p| ray_sphere(o - p, d, r).map(|(t, _)| t));
    let t = caps.into_iter().flatten().fold(f32::INFINITY, f32::min);
    t.is_finite().then(|| (t, normal(t)))
}

/// A ray from `o` along unit `d` (in the body's frame) against the polytope bounded by the
/// `count` face planes `(n, w)` of `planes` (`n · x <= w` inside): clipped by each, the
/// distance where it enters and the face's normal.
fn ray_polytope(planes: &[Vec4], count: u32, o: Vec3, d: Vec3) -> Option<(f32, Vec3)> {
    let (mut enter, mut exit, mut normal) = (0.0_f32, f32::INFINITY, Vec3::ZERO);
    for plane in &planes[..count as usize] {
        let n = plane.truncate();
        let (gap, rate) = (plane.w - n.dot(o), n.dot(d));
        if rate == 0.0 {
            if gap < 0.0 {
                return None;
            }
            continue;
        }
        let t = gap / rate;
        if rate < 0.0 {
            if t > enter {
                (enter, normal) = (t, n);
            }
        } else {
            exit = exit.min(t);
        }
        if enter > exit {
            return None;
        }
    }
    // Entering through no face: the ray starts inside.
    Some((enter, normal))
}
