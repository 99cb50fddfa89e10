//! The stages of a step on the CPU, each the twin of the WGSL entry point of the same name.
//! Bodies are independent in every stage here (each owns its static contacts), so each stage
//! is a loop over bodies whose body is the kernel's body, in the same order of operations.

use std::ops::Range;

use glam::{Mat3, Quat, Vec3, Vec4};
use rayon::prelude::*;

use super::lanes::Simd;

use crate::layout::{
    GpuBody, GpuBodyProps, GpuCollider, GpuShape, GpuSolverBody, GpuStaticContact, GpuStats, KIND_DYNAMIC, KIND_STATIC,
    StepParams,
};
use crate::math::{
    carry_tangent_impulse, kinetic_energy, mat3_inverse, quat_exp, quat_mul, quat_normalize, rotate, rotate_inv,
    tangent_basis, world_inverse_inertia,
};
use crate::sdf::{MAX_FIELD_FACES, evaluate_program};

/// Everything a stage reads or writes: the CPU's view of the GPU's bind group.
pub(crate) struct Buffers<'a> {
    pub params: &'a StepParams,
    pub bodies: &'a mut [GpuBody],
    pub props: &'a [GpuBodyProps],
    pub shapes: &'a [GpuShape],
    pub geometry: &'a [glam::Vec4],
    pub colliders: &'a [GpuCollider],
    pub solver_bodies: &'a mut [GpuSolverBody],
    pub contacts: &'a mut [GpuStaticContact],
    /// Whether stages whose bodies are independent split them over the solver's threads.
    pub parallel: bool,
    /// The lane code the solver runs.
    pub simd: Simd,
}

/// Bodies per task when a stage splits its bodies over threads (the broad phase's bounds too).
pub(crate) const PARALLEL_BODIES: usize = 512;

/// Runs `f(i, body, solver body, its static-contact slots)` for bodies `first..` (as many as
/// `bodies` holds), whose slots start at slot `slot_base` in `contacts`. A body's slots run from
/// its `slot_offset` to the next body's (only dynamic bodies have any), so a run of bodies owns
/// a run of slots: split in halves over threads when `parallel`, each body on its own.
#[allow(clippy::too_many_arguments)]
fn for_each_body<F>(
    first: usize,
    bodies: &mut [GpuBody],
    solver_bodies: &mut [GpuSolverBody],
    contacts: &mut [GpuStaticContact],
    slot_base: usize,
    props: &[GpuBodyProps],
    parallel: bool,
    f: &F,
) where
    F: Fn(usize, &mut GpuBody, &mut GpuSolverBody, &mut [GpuStaticContact]) + Sync,
{
    let count = bodies.len();
    if parallel && count > PARALLEL_BODIES {
        let half = count / 2;
        let split = props[first + half].slot_offset as usize - slot_base;
        let (bodies_lo, bodies_hi) = bodies.split_at_mut(half);
        let (solver_lo, solver_hi) = solver_bodies.split_at_mut(half);
        let (contacts_lo, contacts_hi) = contacts.split_at_mut(split);
        rayon::join(
            || for_each_body(first, bodies_lo, solver_lo, contacts_lo, slot_base, props, parallel, f),
            || for_each_body(first + half, bodies_hi, solver_hi, contacts_hi, slot_base + split, props, parallel, f),
        );
        return;
    }
    for (k, (b, sb)) in bodies.iter_mut().zip(solver_bodies.iter_mut()).enumerate() {
        let i = first + k;
        let start = props[i].slot_offset as usize - slot_base;
        let end = if k + 1 < count { props[i + 1].slot_offset as usize - slot_base } else { contacts.len() };
        f(i, b, sb, &mut contacts[start..end]);
    }
}

/// [`for_each_body`] over every body of `buf`.
fn bodies_each<F>(buf: &mut Buffers, f: F)
where
    F: Fn(usize, &mut GpuBody, &mut GpuSolverBody, &mut [GpuStaticContact]) + Sync,
{
    let n = buf.params.body_count as usize;
    let parallel = buf.parallel;
    for_each_body(0, &mut buf.bodies[..n], &mut buf.solver_bodies[..n], buf.contacts, 0, buf.props, parallel, &f);
}

fn is_dynamic(props: &GpuBodyProps) -> bool {
    props.kind == KIND_DYNAMIC
}

/// Vertex-versus-plane and vertex-versus-SDF detection and contact preparation (seed 000: every
/// core point of a body against every static collider; an SDF's normal is its gradient at the
/// point, and a point near a second or third surface of the field takes a contact with each,
/// [`second_surface`], [`third_surface`]). A slot becomes active when its support point is
/// within the speculative margin `speculative_distance + max(0, -v_n) dt`; it keeps last step's
/// impulses if it was active then (warm starting by feature key = slot; a field's surfaces by
/// their normals, [`warm_sources`]). Also sets the world
/// inverse inertia for the step's first substep (`integrate_position` updates it after each
/// position update) and clears the step deltas of every body that moves.
pub(crate) fn narrow_phase(buf: &mut Buffers) {
    let p = buf.params;
    let (props, shapes, geometry, colliders) = (buf.props, buf.shapes, buf.geometry, buf.colliders);
    bodies_each(buf, |i, body, solver_body, slots| {
        let pr = props[i];
        let sh = shapes[pr.shape as usize];
        if pr.kind == KIND_STATIC {
            return;
        }
        let b = *body;
        let dynamic = is_dynamic(&pr);
        let inv_inertia_world = world_inverse_inertia(b.orientation, pr.inv_inertia);
        *solver_body = GpuSolverBody {
            inv_inertia_world: [
                inv_inertia_world.x_axis.extend(0.0),
                inv_inertia_world.y_axis.extend(0.0),
                inv_inertia_world.z_axis.extend(0.0),
            ],
            delta_position: Vec3::ZERO,
            start_kinetic_energy: if dynamic {
                kinetic_energy(b.inv_mass, pr.inv_inertia, b.orientation, b.linear_velocity, b.angular_velocity)
            } else {
                0.0
            },
            delta_rotation: Quat::IDENTITY,
        };
        if !dynamic {
            return;
        }
        // A contact of core point `core` along the normal `n` at `separation` (from the point's
        // support `core - n radius`) in slot `slot`, warm started from `old` (last step's contact
        // of that surface), or an empty slot beyond the margin.
        let contact = |slot: &mut GpuStaticContact,
                       old: GpuStaticContact,
                       core: Vec3,
                       n: Vec3,
                       separation: f32,
                       collider: &GpuCollider| {
            let r = core - n * sh.radius;
            let vn = n.dot(b.linear_velocity + b.angular_velocity.cross(r));
            let margin = p.speculative_distance + (-vn).max(0.0) * p.dt;
            if separation >= margin {
                // Most slots stay empty step after step: write only when one empties.
                if slot.in_contact != 0 {
                    *slot = GpuStaticContact::default();
                }
                return;
            }
            let warm = if old.in_contact == 1 { p.warm_start_scale } else { 0.0 };
            let (j1, j2) = carry_tangent_impulse(old.normal, n, old.tangent_impulse_1, old.tangent_impulse_2);
            let rn = r.cross(n);
            let (t1, t2) = tangent_basis(n);
            let k_normal = b.inv_mass + rn.dot(inv_inertia_world * rn);
            let rt1 = r.cross(t1);
            let rt2 = r.cross(t2);
            let k11 = b.inv_mass + rt1.dot(inv_inertia_world * rt1);
            let k12 = rt1.dot(inv_inertia_world * rt2);
            let k22 = b.inv_mass + rt2.dot(inv_inertia_world * rt2);
            *slot = GpuStaticContact {
                anchor: r,
                base_separation: separation - n.dot(core),
                normal: n,
                normal_mass: 1.0 / k_normal,
                tangent_mass: 1.0 / largest_eigenvalue(k11, k12, k22),
                restitution_impulse: 0.0,
                normal_impulse: warm * old.normal_impulse,
                tangent_impulse_1: warm * j1,
                tangent_impulse_2: warm * j2,
                max_normal_impulse: 0.0,
                approach_velocity: approach_velocity(vn, separation, n.dot(p.gravity)),
                friction: (pr.friction * collider.friction).sqrt(),
                restitution: pr.restitution.max(collider.restitution),
                in_contact: 1,
                ..GpuStaticContact::default()
            };
        };
        for collider_index in 0..p.collider_count {
            let collider = colliders[collider_index as usize];
            for k in 0..sh.point_count {
                let slot = (collider_index * sh.point_count + k) as usize;
                let core = rotate(b.orientation, geometry[(sh.first_point + k) as usize].truncate());
                if collider.node_count == 0 {
                    let n = collider.normal;
                    let separation = n.dot(b.position + (core - n * sh.radius)) - collider.offset;
                    let old = slots[slot];
                    contact(&mut slots[slot], old, core, n, separation, &collider);
                    continue;
                }
                // The field's gradient at the core point is the normal of the nearest surface;
                // a concave corner's other walls are found from the point lifted off it
                // (`second_surface`, `third_surface`).
                let x = b.position + core;
                let (d, n) = evaluate_program(geometry, collider.first_node, collider.node_count, x);
                let velocity = b.linear_velocity + b.angular_velocity.cross(core);
                let reach = p.speculative_distance + velocity.length() * p.dt;
                let travel = velocity * p.dt;
                let second = second_surface(geometry, &collider, x, d - sh.radius, n, reach);
                let third = second.and_then(|(n2, d2)| {
                    third_surface(geometry, &collider, x, (n, d - sh.radius), (n2, d2 - sh.radius), reach, travel)
                });
                let surfaces = [Some((n, d)), second, third];
                let at = SURFACES.map(|surface| surface_slot(p, &sh, collider_index, k, surface));
                let old = at.map(|slot| slots[slot]);
                let from = warm_sources(&old, surfaces.map(|s| s.map(|(n, _)| n)));
                for surface in SURFACES {
                    let slot = at[surface as usize];
                    match surfaces[surface as usize] {
                        Some((n, d)) => {
                            let warm = from[surface as usize].map_or_else(GpuStaticContact::default, |j| old[j]);
                            contact(&mut slots[slot], warm, core, n, d - sh.radius, &collider);
                        }
                        None if slots[slot].in_contact != 0 => slots[slot] = GpuStaticContact::default(),
                        None => {}
                    }
                }
            }
        }
    });
}

/// The surfaces of one SDF a core point can take contacts with: its nearest (0), a second
/// ([`second_surface`]) and a third ([`third_surface`]).
pub(crate) const SURFACES: [u32; 3] = [0, 1, 2];

/// The slot, within a body's slots, of core point `k`'s contact with surface `surface` (of
/// [`SURFACES`]) of collider `collider_index`: the first surfaces, one block of `point_count`
/// per collider, then one block per SDF for the second surfaces, then one per SDF for the
/// third (planes have one surface). Twin of `surface_slot_index` in
/// shaders/bind_bodies.wgsl.
pub(crate) fn surface_slot(p: &StepParams, sh: &GpuShape, collider_index: u32, k: u32, surface: u32) -> usize {
    let block = if surface == 0 {
        collider_index
    } else {
        p.collider_count + (surface - 1) * (p.collider_count - p.plane_count) + collider_index - p.plane_count
    };
    (block * sh.point_count + k) as usize
}

/// Which of a point's last contacts with a field (`old`, its slots' contents) warm starts each
/// of its new contacts (their `normals`, `None` where it has none): for each in turn, the
/// unused old contact whose normal is nearest its own, if within
/// [`crate::sdf::SDF_SECOND_SURFACE_COS`] (the first of equals). Which wall of a corner is a
/// point's nearest, or its second, can change from step to step; the impulses follow the wall,
/// not the slot. Twin of `warm_sources` in shaders/narrow_phase.wgsl.
pub(crate) fn warm_sources(old: &[GpuStaticContact; 3], normals: [Option<Vec3>; 3]) -> [Option<usize>; 3] {
    let mut used = [false; 3];
    normals.map(|normal| {
        let n = normal?;
        let mut best: Option<(usize, f32)> = None;
        for (j, c) in old.iter().enumerate() {
            let cos = c.normal.dot(n);
            if c.in_contact != 0
                && !used[j]
                && cos >= crate::sdf::SDF_SECOND_SURFACE_COS
                && best.is_none_or(|b| cos > b.1)
            {
                best = Some((j, cos));
            }
        }
        let (j, _) = best?;
        used[j] = true;
        Some(j)
    })
}

/// A second surface of an SDF collider near core point `x`, whose nearest surface has the
/// normal `n` at `separation` (of the support point): the field is evaluated again at `x`
/// lifted along `n` by `reach - separation`. An exact distance field keeps the same nearest
/// point along its gradient up to its medial axis, so a different normal there (less than
/// [`crate::sdf::SDF_SECOND_SURFACE_COS`] along `n`) is another surface within `reach` of the support
/// point: a concave corner's other wall, or the far wall of a narrow gap. Returns its normal
/// and the core point's distance to it, linearized from the lifted point (exact for a flat
/// wall): `d' - lift (n' · n)`. Only where the nearest surface is within `reach`, the most a
/// contact's margin can be (a second surface is no nearer). Twin of `second_surface` in
/// shaders/narrow_phase.wgsl.
pub(crate) fn second_surface(
    geometry: &[glam::Vec4],
    collider: &GpuCollider,
    x: Vec3,
    separation: f32,
    n: Vec3,
    reach: f32,
) -> Option<(Vec3, f32)> {
    if separation >= reach {
        return None;
    }
    let lift = reach - separation;
    let (d, n2) = evaluate_program(geometry, collider.first_node, collider.node_count, x + n * lift);
    let cos = n2.dot(n);
    (cos < crate::sdf::SDF_SECOND_SURFACE_COS).then_some((n2, d - lift * cos))
}

/// A third surface of an SDF collider near core point `x`, whose first two surfaces have the
/// normals and separations (of the support point) `first` and `second`, found from the field
/// at a point lifted off both. A normal there unlike both (as in [`second_surface`]) is a third
/// surface; returns its normal and the core point's distance to it, linearized from the lifted
/// point (exact for a flat wall). Only where the second surface is within `reach`. Twin of
/// `third_surface` in shaders/narrow_phase.wgsl.
///
/// - In a corner (the two normals more than about 18° from parallel or opposite), the point is
///   lifted along both normals until the support point is `reach` above both planes,
///   `x + a n1 + b n2` with `a + b c = reach - s1` and `a c + b = reach - s2` (`c = n1 · n2`):
///   the third wall of a room's corner within reach.
/// - In a narrow gap (the normals within about 18° of opposite: its floor and ceiling), there
///   is no corner to lift into. The point is lifted along `n1` to where it is as far from both
///   planes, `(s2 - s1) / (1 - c)`, and moved by its `travel` over a step along the gap
///   ([`along_gap`]): the gap's end wall, or a side wall, within half the gap's height of the
///   point or within a step's travel ahead of it. A surface whose normal points along that
///   travel is one the travel went past (the far side of a thin wall, the edge of the gap's
///   open mouth), not one ahead: not taken.
pub(crate) fn third_surface(
    geometry: &[glam::Vec4],
    collider: &GpuCollider,
    x: Vec3,
    first: (Vec3, f32),
    second: (Vec3, f32),
    reach: f32,
    travel: Vec3,
) -> Option<(Vec3, f32)> {
    let ((n1, s1), (n2, s2)) = (first, second);
    let (c, cos) = (n1.dot(n2), crate::sdf::SDF_SECOND_SURFACE_COS);
    if s2 >= reach || c >= cos {
        return None;
    }
    let (lift, ahead) = if c > -cos {
        let (l1, l2, det) = (reach - s1, reach - s2, 1.0 - c * c);
        (n1 * ((l1 - c * l2) / det) + n2 * ((l2 - c * l1) / det), Vec3::ZERO)
    } else {
        let ahead = along_gap(travel, n1, n2);
        (n1 * ((s2 - s1) / (1.0 - c)) + ahead, ahead)
    };
    let (d, n3) = evaluate_program(geometry, collider.first_node, collider.node_count, x + lift);
    (n3.dot(n1) < cos && n3.dot(n2) < cos && n3.dot(ahead) <= 0.0).then_some((n3, d - lift.dot(n3)))
}

/// The part of `travel` along a narrow gap whose floor and ceiling have the normals `n1` and
/// `n2`: `travel` less its part across the gap, along `n1 - n2` (never short: the normals are
/// within about 18° of opposite). In a gap that narrows, a point moved along it keeps to the
/// gap's middle. Twin of `along_gap` in shaders/narrow_phase.wgsl.
fn along_gap(travel: Vec3, n1: Vec3, n2: Vec3) -> Vec3 {
    let across = n1 - n2;
    travel - across * (travel.dot(across) / across.dot(across))
}

/// The larger eigenvalue of the symmetric 2x2 matrix `[[a, b], [b, c]]`.
#[inline]
pub(crate) fn largest_eigenvalue(a: f32, b: f32, c: f32) -> f32 {
    let half_diff = 0.5 * (a - c);
    0.5 * (a + c) + (half_diff * half_diff + b * b).sqrt()
}

/// The normal velocity at the moment of impact of a point `separation` away, closing at `vn`
/// under the normal acceleration `gravity_n` (seed 003: integrate to the time of contact):
/// `-sqrt(vn² - 2 g_n s)` when the gap is open and closing, else `vn`. Restitution bounces
/// this speed back, so a ball released from height `H` returns to `e² H` whatever the phase
/// of the step in which it lands.
#[inline]
pub(crate) fn approach_velocity(vn: f32, separation: f32, gravity_n: f32) -> f32 {
    if separation > 0.0 && vn < 0.0 && gravity_n < 0.0 { -(vn * vn - 2.0 * gravity_n * separation).sqrt() } else { vn }
}

/// Unconstrained velocities for one substep: gravity and the force and torque a program set
/// ([`crate::Solver::set_force`]), damping, and the gyroscopic term of
/// Euler's equations `I ω' = -ω x I ω` in the principal frame, integrated by the implicit
/// midpoint rule: `ω1 = 2 ωm - ω0` with `I (ωm - ω0) + (h/2) ωm x I ωm = 0`, solved by two
/// Newton steps from `ω0`. The midpoint rule keeps both quadratic invariants of the torque-free
/// body, `|I ω|` and `ωᵀ I ω`; the explicit term of seed 000 gains energy until the body spins
/// up, and backward Euler (Catto, GDC 2015) loses about 5 % of the angular momentum of a
/// tumbling box over 10 s.
pub(crate) fn integrate_velocities(buf: &mut Buffers) {
    let (p, simd) = (buf.params, buf.simd);
    let n = p.body_count as usize;
    // Eight or four bodies at a time in SIMD lanes (the same bits), the rest one by one.
    let eight = |(bodies, props): (&mut [GpuBody], &[GpuBodyProps])| {
        if bodies.len() == 8 {
            return super::lanes::integrate8(simd, p, bodies, props);
        }
        for (bodies, props) in bodies.chunks_mut(4).zip(props.chunks(4)) {
            if bodies.len() == 4 {
                super::lanes::integrate4(p, bodies, props);
            } else {
                bodies.iter_mut().zip(props).for_each(|(b, pr)| integrate_velocity(p, b, pr));
            }
        }
    };
    if buf.parallel {
        buf.bodies[..n]
            .par_chunks_mut(8)
            .zip(buf.props[..n].par_chunks(8))
            .with_min_len(PARALLEL_BODIES / 8)
            .for_each(eight);
    } else {
        buf.bodies[..n].chunks_mut(8).zip(buf.props[..n].chunks(8)).for_each(eight);
    }
}

/// [`integrate_velocities`] for one body (nothing for a static or kinematic one).
pub(crate) fn integrate_velocity(p: &StepParams, b: &mut GpuBody, pr: &GpuBodyProps) {
    if !is_dynamic(pr) {
        return;
    }
    let h = p.h;
    let v = (b.linear_velocity + h * (p.gravity + b.inv_mass * pr.force)) * (1.0 / (1.0 + h * pr.linear_damping));
    let inertia = pr.inv_inertia.recip();
    // The torque's impulse first, then the gyroscopic term from the velocity it leaves.
    let w0 = rotate_inv(b.orientation, b.angular_velocity) + h * pr.inv_inertia * rotate_inv(b.orientation, pr.torque);
    let half_h = 0.5 * h;
    let mut wm = w0;
    for _ in 0..2 {
        let iw = inertia * wm;
        let residual = inertia * (wm - w0) + half_h * wm.cross(iw);
        let col = |e: Vec3, ie: f32| e * ie + half_h * (ie * wm.cross(e) - iw.cross(e));
        let jacobian = Mat3::from_cols(col(Vec3::X, inertia.x), col(Vec3::Y, inertia.y), col(Vec3::Z, inertia.z));
        wm -= mat3_inverse(jacobian) * residual;
    }
    let mut w = rotate(b.orientation, 2.0 * wm - w0) * (1.0 / (1.0 + h * pr.angular_damping));
    let angle = w.length() * h;
    if angle > p.max_rotation {
        w *= p.max_rotation / angle;
    }
    b.linear_velocity = v;
    b.angular_velocity = w;
}

/// Positions and orientations for one substep: `x += h v`, `q = exp(h ω) q` (exponential
/// map, seed 000), and the same motion accumulated in the step deltas. Kinematic bodies move
/// too; static bodies do not.
pub(crate) fn integrate_positions(buf: &mut Buffers) {
    let (p, simd) = (buf.params, buf.simd);
    let n = p.body_count as usize;
    let one = |((b, sb), pr): ((&mut GpuBody, &mut GpuSolverBody), &GpuBodyProps)| integrate_position(p, b, sb, pr);
    // Eight or four bodies at a time in SIMD lanes (the same bits), the rest, and any group
    // turning past the exponential map's direct range, one by one.
    let eight = |((bodies, solver_bodies), props): ((&mut [GpuBody], &mut [GpuSolverBody]), &[GpuBodyProps])| {
        if bodies.len() == 8 && super::lanes::integrate_positions8(simd, p.h, bodies, solver_bodies, props) {
            return;
        }
        for ((bodies, solver_bodies), props) in
            bodies.chunks_mut(4).zip(solver_bodies.chunks_mut(4)).zip(props.chunks(4))
        {
            if bodies.len() == 4 && super::lanes::integrate_positions4(p.h, bodies, solver_bodies, props) {
                continue;
            }
            bodies.iter_mut().zip(solver_bodies).zip(props).for_each(one);
        }
    };
    let (bodies, solver_bodies, props) = (&mut buf.bodies[..n], &mut buf.solver_bodies[..n], &buf.props[..n]);
    if buf.parallel {
        bodies
            .par_chunks_mut(8)
            .zip(solver_bodies.par_chunks_mut(8))
            .zip(props.par_chunks(8))
            .with_min_len(PARALLEL_BODIES / 8)
            .for_each(eight);
    } else {
        bodies.chunks_mut(8).zip(solver_bodies.chunks_mut(8)).zip(props.chunks(8)).for_each(eight);
    }
}

/// [`integrate_positions`] for one body (nothing for a static one): its pose and its motion
/// since the start of the step move by one substep of its velocities.
pub(crate) fn integrate_position(p: &StepParams, b: &mut GpuBody, sb: &mut GpuSolverBody, pr: &GpuBodyProps) {
    if pr.kind == KIND_STATIC {
        return;
    }
    let dx = p.h * b.linear_velocity;
    let dq = quat_exp(p.h * b.angular_velocity);
    b.position += dx;
    b.orientation = quat_normalize(quat_mul(dq, b.orientation));
    sb.delta_position += dx;
    sb.delta_rotation = quat_normalize(quat_mul(dq, sb.delta_rotation));
    sb.inv_inertia_world = substep_inertia(b, pr);
}

/// A body's world inverse inertia at its orientation now, as the solver body's columns (zero
/// for a kinematic body): after each position update, so that the joints and the static
/// contacts apply their impulses, at the lever arms of the body's pose now, through the inertia
/// of that pose. With the inertia of the step's start, a thin bar spinning on a ball joint
/// lost three fifths of its spin in a second (`lanes::integrate_positions` computes the same in
/// lanes).
pub(crate) fn substep_inertia(b: &GpuBody, pr: &GpuBodyProps) -> [Vec4; 3] {
    let inv = if is_dynamic(pr) { world_inverse_inertia(b.orientation, pr.inv_inertia) } else { Mat3::ZERO };
    [inv.x_axis.extend(0.0), inv.y_axis.extend(0.0), inv.z_axis.extend(0.0)]
}

/// A body's velocity while its contacts are being solved.
struct Motion {
    v: Vec3,
    w: Vec3,
    inv_mass: f32,
    inv_inertia: Mat3,
}

impl Motion {
    #[inline]
    fn apply(&mut self, r: Vec3, impulse: Vec3) {
        self.v += self.inv_mass * impulse;
        self.w += self.inv_inertia * r.cross(impulse);
    }
}

fn motion(b: &GpuBody, sb: &GpuSolverBody) -> Motion {
    let [c0, c1, c2] = sb.inv_inertia_world;
    Motion {
        v: b.linear_velocity,
        w: b.angular_velocity,
        inv_mass: b.inv_mass,
        inv_inertia: Mat3::from_cols(c0.truncate(), c1.truncate(), c2.truncate()),
    }
}

/// Velocity bias, mass scale and impulse scale of a contact at separation `s`: a speculative
/// contact (`s > 0`) may close its gap within the substep and no further; a penetrating one is
/// pushed out by the soft spring (or Baumgarte's bias) in the biased solve only.
#[inline]
fn contact_bias(p: &StepParams, s: f32, use_bias: bool) -> (f32, f32, f32) {
    if s > 0.0 {
        (s * p.inv_h, 1.0, 0.0)
    } else if use_bias {
        let bias = (p.static_bias_rate * (s + p.linear_slop).min(0.0)).max(-p.max_push_velocity);
        (bias, p.static_mass_scale, p.static_impulse_scale)
    } else {
        (0.0, 1.0, 0.0)
    }
}

/// The compliance `c` of a soft contact of inverse effective mass `k` with the coefficients
/// `contact_bias` gave it: since `mass_scale + impulse_scale = 1`, its update
/// `Δa = -mass_scale (v + b) / k - impulse_scale a` is the Gauss-Seidel step
/// `-(v + b + c a) / (k + c)` on `v + b + c a = 0`, with `c = impulse_scale k / mass_scale`
/// (zero for a rigid contact). Twin of `contact_compliance` in shaders/common.wgsl.
#[inline]
pub(crate) fn contact_compliance(mass_scale: f32, impulse_scale: f32, k: f32) -> f32 {
    impulse_scale * k * (1.0 / mass_scale)
}

/// The current separation of a contact from the motion since the start of the step. Only the
/// core point moves with the body: the radius stays along the normal, because the support
/// point of a round shape is not a material point. (Rotating the whole anchor made a ball
/// rolling at 80 rad/s look 9 cm above the floor by the last substep, so it sank into it.)
#[inline]
fn separation(sb: &GpuSolverBody, c: &GpuStaticContact, n: Vec3, radius: f32) -> f32 {
    let core = c.anchor + n * radius;
    c.base_separation + n.dot(sb.delta_position + rotate(sb.delta_rotation, core))
}

/// The contact's current lever arm: the support point of the core point as turned by the
/// motion since the start of the step, relative to the centre of mass.
#[inline]
fn lever(sb: &GpuSolverBody, c: &GpuStaticContact, n: Vec3, radius: f32) -> Vec3 {
    rotate(sb.delta_rotation, c.anchor + n * radius) - n * radius
}

/// The coarse correction of `solve_contacts`: an exact line search of the contact problem
/// along "the same impulse on every contact of this plane (or flat face)", `u = (1, ..., 1)`. Each contact's
/// sweep solves `r_i = v_n,i + b_i + c_i a_i = 0` with its soft compliance `c_i` (see
/// `contact_compliance`); the coarse step is the Galerkin projection of that system onto
/// `u`: `-Σ r_i / (k² K_c + Σ c_i)` per contact, where `k` is the number of contacts and
/// `K_c` the inverse effective mass at their centroid (`uᵀ J M⁻¹ Jᵀ u = k² K_c`). The search
/// stays feasible: a push goes to every active contact, a pull only to the loaded ones and
/// never below zero. At a solution of the contact problem every loaded contact has `r_i = 0`
/// and every other `r_i >= 0`, so the step is zero: it accelerates the sweep without changing
/// what it converges to, soft or rigid. (Projecting with the centroid's compliance instead,
/// `k K_c / a2`, moved the fixed point wherever a corner's effective mass differs from the
/// centroid's: a thin slab rested 11 % too high on its soft contacts.)
///
/// The contacts are those of `blocks` (of the body's `contacts`) that are active and have the
/// normal `n`, bit for bit: a plane's, or one flat face's of a field (see [`field_faces`]).
#[allow(clippy::too_many_arguments)]
fn coarse_correction(
    p: &StepParams,
    sb: &GpuSolverBody,
    n: Vec3,
    radius: f32,
    contacts: &mut [GpuStaticContact],
    blocks: &[Range<usize>],
    m: &mut Motion,
    use_bias: bool,
) {
    let face = |c: &GpuStaticContact| c.in_contact == 1 && c.normal == n;
    // Centroid step over the contacts `member` selects: (step per contact, smallest impulse).
    let step = |contacts: &[GpuStaticContact], m: &Motion, member: &dyn Fn(&GpuStaticContact) -> bool| {
        let (mut count, mut r_sum, mut residual, mut compliance, mut j_min) =
            (0.0_f32, Vec3::ZERO, 0.0_f32, 0.0_f32, f32::MAX);
        let group = blocks.iter().flat_map(|b| &contacts[b.clone()]);
        for c in group.filter(|c| face(c) && member(c)) {
            count += 1.0;
            r_sum += lever(sb, c, n, radius);
            let (bias, mass_scale, impulse_scale) = contact_bias(p, separation(sb, c, n, radius), use_bias);
            let c_i = contact_compliance(mass_scale, impulse_scale, 1.0 / c.normal_mass);
            residual += bias + c_i * c.normal_impulse;
            compliance += c_i;
            j_min = j_min.min(c.normal_impulse);
        }
        if count < 2.0 {
            return (0.0, 0.0);
        }
        let rc = r_sum / count;
        let rn = rc.cross(n);
        let k = m.inv_mass + rn.dot(m.inv_inertia * rn);
        let vn = n.dot(m.v + m.w.cross(rc));
        (-(count * vn + residual) / (count * count * k + compliance), j_min)
    };
    let (mut share, _) = step(contacts, m, &|_| true);
    let loaded = |c: &GpuStaticContact| c.normal_impulse > 0.0;
    if share < 0.0 {
        let (pull, j_min) = step(contacts, m, &loaded);
        share = pull.clamp(-j_min, 0.0);
    }
    if share == 0.0 {
        return;
    }
    for block in blocks {
        for c in contacts[block.clone()].iter_mut().filter(|c| face(c) && (share > 0.0 || c.normal_impulse > 0.0)) {
            c.normal_impulse += share;
            c.max_normal_impulse = c.max_normal_impulse.max(share);
            m.apply(lever(sb, c, n, radius), share * n);
        }
    }
}

/// The flat faces of a field on which a body has two active contacts or more, for the coarse
/// correction (which needs two): see [`field_faces`].
struct FieldFaces {
    /// Their normals, in the order they first appear.
    normals: [Vec3; MAX_FIELD_FACES],
    /// How many.
    count: usize,
    /// The blocks of slots that hold the active contacts: the first `blocks` of the three.
    blocks: usize,
}

/// The flat faces of a field that a body's active contacts with it (in `blocks`, its three
/// blocks of slots) lie on, where two or more lie on one: their normals, each the same bit for
/// bit at every point of a flat face (a half space's, a box's side), among the first
/// [`MAX_FIELD_FACES`] normals to appear (a curved surface gives every point its own, each a
/// face of one contact). Twin of `field_faces` in shaders/solve_static.wgsl.
fn field_faces(contacts: &[GpuStaticContact], blocks: &[Range<usize>; 3]) -> FieldFaces {
    let mut faces = FieldFaces { normals: [Vec3::ZERO; MAX_FIELD_FACES], count: 0, blocks: 0 };
    let mut members = [0; MAX_FIELD_FACES];
    for (block, range) in blocks.iter().enumerate() {
        for c in contacts[range.clone()].iter().filter(|c| c.in_contact != 0) {
            faces.blocks = block + 1;
            match faces.normals[..faces.count].iter().position(|&n| n == c.normal) {
                Some(f) => members[f] += 1,
                None if faces.count == MAX_FIELD_FACES => {}
                None => {
                    faces.normals[faces.count] = c.normal;
                    members[faces.count] = 1;
                    faces.count += 1;
                }
            }
        }
    }
    // A face with one contact would take no step.
    let found = faces.count;
    faces.count = 0;
    for (f, &n) in members[..found].iter().enumerate() {
        if n > 1 {
            faces.normals[faces.count] = faces.normals[f];
            faces.count += 1;
        }
    }
    faces
}

/// One projected Gauss-Seidel sweep over a body's static contacts (seeds 000 and 001): every
/// normal impulse `a = max(0, a - m (v_n + bias))` with accumulated impulses, then every
/// friction impulse clamped to the disk `|j_t| <= μ j_n`.
///
/// Friction is a projected-gradient step `j_t = P_disk(j_t - v_t / λmax(K_t))` rather than a
/// 2x2 Newton step followed by the same projection. Maximum dissipation (seed 001) asks for the
/// impulse in the disk that minimizes the kinetic energy `½ jᵀ K j + v_tᵀ j`; the projected
/// gradient with step `1/λmax` converges to exactly that, while projecting the Newton step in
/// the Euclidean metric does not when `K_t` is anisotropic (a contact far from the centre of
/// mass): it tilts the sliding impulse away from the slip and weakens friction (a box on an
/// incline slid 7 % too fast). A sticking contact reaches the same impulse either way.
///
/// Each plane's contacts are first solved as one constraint through their centroid whose
/// impulse is shared equally (a push to every contact, or a pull on the loaded ones that leaves
/// none below zero), then point by point. Four coplanar contacts make a
/// degenerate problem on which one sweep of Gauss-Seidel converges slowly and lopsidedly: a box
/// landing flat at 4 m/s was stopped corner by corner, spun, and friction turned the spin into
/// 4 mm of sideways drift. The centroid step stops a flat landing exactly and symmetrically.
/// A field's contacts take a centroid step for each flat face two or more of them lie on
/// ([`field_faces`]), whichever of a point's surfaces each contact is. A box thrown into the
/// corner of one field (the floor and a wall) went 0.65 mm into the wall and crept 0.3 mm
/// along it while the faces' contacts were mixed in one block without a step; now 0.05 and
/// 0.006 mm, as between two planes (0.05 and 0.009 mm).
fn solve_contacts(
    p: &StepParams,
    sb: &GpuSolverBody,
    colliders: &[GpuCollider],
    contacts: &mut [GpuStaticContact],
    sh: &GpuShape,
    m: &mut Motion,
    use_bias: bool,
) {
    for collider_index in 0..p.collider_count {
        let collider = &colliders[collider_index as usize];
        let block = |surface| {
            let first = surface_slot(p, sh, collider_index, 0, surface);
            first..first + sh.point_count as usize
        };
        // The centroid step needs one normal for all its points: a plane's, or each flat face's
        // of a field, over the point's three surfaces.
        if collider.node_count == 0 {
            coarse_correction(p, sb, collider.normal, sh.radius, contacts, &[block(0)], m, use_bias);
        } else {
            let blocks = SURFACES.map(block);
            let faces = field_faces(contacts, &blocks);
            for &n in &faces.normals[..faces.count] {
                coarse_correction(p, sb, n, sh.radius, contacts, &blocks[..faces.blocks], m, use_bias);
            }
        }
        let group = &mut contacts[block(0)];
        let normal_row = |c: &mut GpuStaticContact, m: &mut Motion| {
            let n = c.normal;
            let r = lever(sb, c, n, sh.radius);
            let s = separation(sb, c, n, sh.radius);
            let (bias, mass_scale, impulse_scale) = contact_bias(p, s, use_bias);
            let vn = n.dot(m.v + m.w.cross(r));
            let impulse = -c.normal_mass * mass_scale * (vn + bias) - impulse_scale * c.normal_impulse;
            let new_impulse = (c.normal_impulse + impulse).max(0.0);
            let applied = new_impulse - c.normal_impulse;
            c.normal_impulse = new_impulse;
            c.max_normal_impulse = c.max_normal_impulse.max(applied);
            m.apply(r, applied * n);
        };
        group.iter_mut().filter(|c| c.in_contact != 0).for_each(|c| normal_row(c, m));
        // A field's second and third contacts (`second_surface`, `third_surface`), point by
        // point.
        if collider.node_count != 0 {
            for surface in [1, 2] {
                let block = &mut contacts[surface_slot(p, sh, collider_index, 0, surface)..][..sh.point_count as usize];
                block.iter_mut().filter(|c| c.in_contact != 0).for_each(|c| normal_row(c, m));
            }
        }
    }
    for c in contacts.iter_mut().filter(|c| c.in_contact != 0) {
        let n = c.normal;
        let (t1, t2) = tangent_basis(n);
        let r = lever(sb, c, n, sh.radius);
        let dv = m.v + m.w.cross(r);
        let mut j1 = c.tangent_impulse_1 - c.tangent_mass * t1.dot(dv);
        let mut j2 = c.tangent_impulse_2 - c.tangent_mass * t2.dot(dv);
        let max_friction = c.friction * c.normal_impulse;
        let len_sq = j1 * j1 + j2 * j2;
        if len_sq > max_friction * max_friction {
            let scale = max_friction / len_sq.sqrt();
            j1 *= scale;
            j2 *= scale;
        }
        let (d1, d2) = (j1 - c.tangent_impulse_1, j2 - c.tangent_impulse_2);
        c.tangent_impulse_1 = j1;
        c.tangent_impulse_2 = j2;
        m.apply(r, d1 * t1 + d2 * t2);
    }
}

/// Warm start, then `iterations` biased sweeps over each body's static contacts. One body
/// per thread on the GPU: exact Gauss-Seidel for that body and no races.
pub(crate) fn solve_static(buf: &mut Buffers) {
    let p = buf.params;
    let (props, shapes, colliders) = (buf.props, buf.shapes, buf.colliders);
    bodies_each(buf, |i, body, sb, slots| {
        let pr = props[i];
        let sh = shapes[pr.shape as usize];
        if !is_dynamic(&pr) {
            return;
        }
        let mut m = motion(body, sb);
        // Warm start: last substep's (or last step's) accumulated impulses.
        for c in slots.iter().filter(|c| c.in_contact != 0) {
            let n = c.normal;
            let (t1, t2) = tangent_basis(n);
            m.apply(
                lever(sb, c, n, sh.radius),
                c.normal_impulse * n + c.tangent_impulse_1 * t1 + c.tangent_impulse_2 * t2,
            );
        }
        for _ in 0..p.iterations {
            solve_contacts(p, sb, colliders, slots, &sh, &mut m, true);
        }
        body.linear_velocity = m.v;
        body.angular_velocity = m.w;
    });
}

/// `relax_iterations` sweeps without bias: removes the push-out velocity of the biased solve
/// so that it does not turn into bounce (the soft step's relax stage).
pub(crate) fn relax_static(buf: &mut Buffers) {
    let p = buf.params;
    let (props, shapes, colliders) = (buf.props, buf.shapes, buf.colliders);
    bodies_each(buf, |i, body, sb, slots| {
        let pr = props[i];
        let sh = shapes[pr.shape as usize];
        if !is_dynamic(&pr) {
            return;
        }
        let mut m = motion(body, sb);
        for _ in 0..p.relax_iterations {
            solve_contacts(p, sb, colliders, slots, &sh, &mut m, false);
        }
        body.linear_velocity = m.v;
        body.angular_velocity = m.w;
    });
}

/// Restitution after the substeps (seeds 001 and 002): Newton's law `v_n+ = -e v_n-` for the
/// contacts that closed faster than the threshold and pushed during the step, with `v_n-` the
/// approach velocity at impact, keeping each accumulated impulse non-negative; then Stronge's
/// energy hypothesis as a bound. Newton's law alone adds energy when the impact also sticks
/// (a tumbling box landing on a corner with e = 1 gained 5 % per bounce): the body may give
/// back at most `e²` of the kinetic energy it lost during the step, `KE_start + m g·Δx - KE`,
/// so the restitution impulses are scaled by the `α ∈ [0, 1]` that meets that bound. For a
/// single frictionless contact Newton's law meets it exactly and `α = 1`.
pub(crate) fn restitution(buf: &mut Buffers) {
    let p = buf.params;
    let (props, shapes) = (buf.props, buf.shapes);
    bodies_each(buf, |i, body, sb, slots| {
        let pr = props[i];
        let sh = shapes[pr.shape as usize];
        if !is_dynamic(&pr) {
            return;
        }
        let mut m = motion(body, sb);
        let (v_solved, w_solved) = (m.v, m.w);
        let mut max_restitution = 0.0_f32;
        for c in slots.iter_mut() {
            if c.in_contact == 0
                || c.restitution == 0.0
                || c.approach_velocity > -p.restitution_threshold
                || c.max_normal_impulse == 0.0
            {
                continue;
            }
            let n = c.normal;
            let r = lever(sb, c, n, sh.radius);
            let vn = n.dot(m.v + m.w.cross(r));
            let impulse = -c.normal_mass * (vn + c.restitution * c.approach_velocity);
            let new_impulse = (c.normal_impulse + impulse).max(0.0);
            let applied = new_impulse - c.normal_impulse;
            c.normal_impulse = new_impulse;
            c.max_normal_impulse = c.max_normal_impulse.max(applied);
            c.restitution_impulse = applied;
            max_restitution = max_restitution.max(c.restitution);
            m.apply(r, applied * n);
        }
        if max_restitution == 0.0 {
            return;
        }
        // Stronge bound: KE(α) = KE_solved + α B + α² A must not exceed KE_solved + e² ΔKE.
        let b = *body;
        let q = b.orientation;
        let ke_solved = kinetic_energy(b.inv_mass, pr.inv_inertia, q, v_solved, w_solved);
        // The energy at the start of the step and the work of gravity and of a set force
        // since (not a set torque's).
        let ke_start =
            sb.start_kinetic_energy + p.gravity.dot(sb.delta_position) / b.inv_mass + pr.force.dot(sb.delta_position);
        let budget = max_restitution * max_restitution * (ke_start - ke_solved).max(0.0);
        let (dv, dw) = (m.v - v_solved, rotate_inv(q, m.w - w_solved));
        let wb = rotate_inv(q, w_solved);
        let a = 0.5 * dv.dot(dv) / b.inv_mass + 0.5 * dw.dot(dw / pr.inv_inertia);
        let bb = v_solved.dot(dv) / b.inv_mass + wb.dot(dw / pr.inv_inertia);
        if a > 0.0 && a + bb > budget {
            let alpha = ((-bb + (bb * bb + 4.0 * a * budget).max(0.0).sqrt()) / (2.0 * a)).clamp(0.0, 1.0);
            m.v = v_solved + alpha * (m.v - v_solved);
            m.w = w_solved + alpha * (m.w - w_solved);
            for c in slots.iter_mut() {
                c.normal_impulse -= (1.0 - alpha) * c.restitution_impulse;
            }
        }
        body.linear_velocity = m.v;
        body.angular_velocity = m.w;
    });
}

/// One body's contribution to the step statistics (the `stats_partial` kernel's per-thread work).
pub(crate) fn body_stats(
    params: &StepParams,
    b: &GpuBody,
    pr: &GpuBodyProps,
    shapes: &[GpuShape],
    geometry: &[glam::Vec4],
    colliders: &[GpuCollider],
    contacts: &[GpuStaticContact],
) -> GpuStats {
    if !is_dynamic(pr) {
        return GpuStats::default();
    }
    let sh = shapes[pr.shape as usize];
    let kinetic_energy =
        kinetic_energy(b.inv_mass, pr.inv_inertia, b.orientation, b.linear_velocity, b.angular_velocity);
    let mut max_penetration = 0.0_f32;
    let mut count = 0;
    for collider_index in 0..params.collider_count {
        let collider = colliders[collider_index as usize];
        for k in 0..sh.point_count {
            let x = b.position + rotate(b.orientation, geometry[(sh.first_point + k) as usize].truncate());
            let s = if collider.node_count == 0 {
                collider.normal.dot(x) - sh.radius - collider.offset
            } else {
                evaluate_program(geometry, collider.first_node, collider.node_count, x).0 - sh.radius
            };
            max_penetration = max_penetration.max(-s);
            let surfaces = if collider.node_count == 0 { &SURFACES[..1] } else { &SURFACES[..] };
            for &surface in surfaces {
                count += contacts[pr.slot_offset as usize + surface_slot(params, &sh, collider_index, k, surface)]
                    .in_contact;
            }
        }
    }
    GpuStats { kinetic_energy, max_penetration, contacts: count, dynamic_bodies: 1 }
}

#[cfg(test)]
mod tests {
    use glam::Vec3;

    use super::{field_faces, second_surface, third_surface, warm_sources};
    use crate::layout::{GpuCollider, GpuStaticContact};
    use crate::sdf::{Sdf, evaluate_program};

    /// A surface as the surface functions give it: its normal and the point's distance.
    type Surface = Option<(Vec3, f32)>;

    /// `second_surface` at `x` in `sdf`, from its nearest surface there, and `third_surface`
    /// from the first two where there is a second, as the narrow phase calls them, for a
    /// reach of 0.1 m and a point at rest.
    fn surfaces(sdf: &Sdf, x: Vec3) -> (Surface, Surface) {
        moving_surfaces(sdf, x, Vec3::ZERO)
    }

    /// `surfaces` for a point that moves by `travel` over a step.
    fn moving_surfaces(sdf: &Sdf, x: Vec3, travel: Vec3) -> (Surface, Surface) {
        let program = sdf.compile();
        let collider = GpuCollider { node_count: program.node_count, ..GpuCollider::default() };
        let (d, n) = evaluate_program(&program.data, 0, program.node_count, x);
        let second = second_surface(&program.data, &collider, x, d, n, 0.1);
        let third = second.and_then(|s| third_surface(&program.data, &collider, x, (n, d), s, 0.1, travel));
        (second, third)
    }

    fn second(sdf: &Sdf, x: Vec3) -> Surface {
        surfaces(sdf, x).0
    }

    /// The other wall of a concave corner within reach, with its distance; none past reach, on
    /// a flat or curved wall alone, or beside a convex solid; the far wall of a narrow gap.
    #[test]
    fn a_second_surface_is_a_corners_other_wall() {
        let room = Sdf::hollow_box(Vec3::new(1.0, 1.0, 1.0));
        // 0.02 m above the floor, 0.05 m from the wall at x = 1.
        let (n, d) = second(&room, Vec3::new(0.95, -0.98, 0.0)).expect("the wall");
        assert!((n - -Vec3::X).length() < 1e-6 && (d - 0.05).abs() < 1e-6, "{n} {d}");
        // Inside the floor by 0.01 m, 0.08 m from the wall: the lift reaches past the floor.
        let (n, d) = second(&room, Vec3::new(0.92, -1.01, 0.0)).expect("the wall");
        assert!((n - -Vec3::X).length() < 1e-6 && (d - 0.08).abs() < 1e-5, "{n} {d}");
        // The same corner of a union of two half spaces (a lower bound of the distance off
        // the surface, exact on it).
        let slabs = Sdf::half_space(Vec3::Y, -1.0).union(Sdf::half_space(-Vec3::X, -1.0));
        let (n, d) = second(&slabs, Vec3::new(0.95, -0.98, 0.0)).expect("the wall");
        assert!((n - -Vec3::X).length() < 1e-6 && (d - 0.05).abs() < 1e-6, "{n} {d}");
        // The wall beyond reach: 0.02 above the floor, 0.15 from the wall.
        assert_eq!(second(&room, Vec3::new(0.85, -0.98, 0.0)), None);
        // A flat floor, a bowl's curved inside and a sphere's outside have one surface each.
        assert_eq!(second(&room, Vec3::new(0.0, -0.98, 0.0)), None);
        assert_eq!(second(&Sdf::bowl(1.0, 0.1), Vec3::new(0.1, -0.95, 0.05)), None);
        assert_eq!(second(&Sdf::sphere(0.5), Vec3::new(0.3, 0.45, 0.0)), None);
        // A gap 0.06 m wide: 0.02 from its floor, the ceiling 0.04 above.
        let gap = Sdf::half_space(Vec3::Y, 0.0).union(Sdf::half_space(-Vec3::Y, -0.06));
        let (n, d) = second(&gap, Vec3::new(0.0, 0.02, 0.0)).expect("the ceiling");
        assert!((n - -Vec3::Y).length() < 1e-6 && (d - 0.04).abs() < 1e-6, "{n} {d}");
    }

    /// The third surface at `x` in `sdf` (see `surfaces`), checking that there is a second.
    fn third(sdf: &Sdf, x: Vec3) -> Surface {
        let (second, third) = surfaces(sdf, x);
        assert!(second.is_some(), "no second surface at {x}");
        third
    }

    /// The third wall of a room's corner within reach, with its distance, whichever wall is
    /// nearest, and in an acute corner; none where a corner has two walls, or past reach.
    #[test]
    fn a_third_surface_is_a_rooms_third_wall() {
        let room = Sdf::hollow_box(Vec3::new(1.0, 1.0, 1.0));
        // 0.02 m above the floor, 0.05 m from the wall x = 1, 0.07 from the wall z = 1.
        let (n, d) = third(&room, Vec3::new(0.95, -0.98, 0.93)).expect("the wall z");
        assert!((n - -Vec3::Z).length() < 1e-6 && (d - 0.07).abs() < 1e-6, "{n} {d}");
        // Nearest the wall z, then the floor: the third is the wall x.
        let (n, d) = third(&room, Vec3::new(0.94, -0.97, 0.99)).expect("the wall x");
        assert!((n - -Vec3::X).length() < 1e-6 && (d - 0.06).abs() < 1e-6, "{n} {d}");
        // Inside the floor by 0.01 m, 0.05 from the wall x, 0.08 from the wall z.
        let (n, d) = third(&room, Vec3::new(0.95, -1.01, 0.92)).expect("the wall z");
        assert!((n - -Vec3::Z).length() < 1e-6 && (d - 0.08).abs() < 1e-5, "{n} {d}");
        // The same corner of a union of three half spaces.
        let slabs = Sdf::half_space(Vec3::Y, -1.0)
            .union(Sdf::half_space(-Vec3::X, -1.0))
            .union(Sdf::half_space(-Vec3::Z, -1.0));
        let (n, d) = third(&slabs, Vec3::new(0.95, -0.98, 0.93)).expect("the wall z");
        assert!((n - -Vec3::Z).length() < 1e-6 && (d - 0.07).abs() < 1e-6, "{n} {d}");
        // A corner of 60° between the floor and a wall leaning over it (their normals 120°
        // apart), and the wall z = 1: 0.03 m above the floor, 0.04 from the leaning wall, 0.05
        // from the wall z.
        let lean = Vec3::new(-(3.0_f32.sqrt()) / 2.0, -0.5, 0.0);
        let wedge =
            Sdf::half_space(Vec3::Y, 0.0).union(Sdf::half_space(lean, lean.x)).union(Sdf::half_space(-Vec3::Z, -1.0));
        let (n, d) = third(&wedge, Vec3::new(1.0 - 0.055 / -lean.x, 0.03, 0.95)).expect("the wall z");
        assert!((n - -Vec3::Z).length() < 1e-5 && (d - 0.05).abs() < 1e-5, "{n} {d}");
        // Two walls only; the third 0.15 m away, beyond reach.
        assert_eq!(third(&room, Vec3::new(0.95, -0.98, 0.5)), None);
        assert_eq!(third(&room, Vec3::new(0.95, -0.98, 0.85)), None);
    }

    /// The end wall of a narrow gap (the floor and the ceiling of one field, whose normals face
    /// each other), with its distance: found from the point lifted to as far from the floor as
    /// from the ceiling, within half the gap's height of the point at rest, and within a step's
    /// travel along the gap ahead of a moving point; also in a gap that narrows by 10°. Not the
    /// far side of a thin wall the travel goes past.
    #[test]
    fn a_third_surface_is_a_narrow_gaps_end_wall() {
        // A gap 0.06 m high ending at the wall x = 1.
        let gap = Sdf::half_space(Vec3::Y, 0.0)
            .union(Sdf::half_space(-Vec3::Y, -0.06))
            .union(Sdf::half_space(-Vec3::X, -1.0));
        let third = |x: Vec3, travel: Vec3| {
            let (second, third) = moving_surfaces(&gap, x, travel);
            assert!(second.is_some_and(|(n, _)| (n - -Vec3::Y).length() < 1e-6), "{second:?}: not the ceiling");
            third
        };
        // At rest 0.02 m above the floor: the end wall 0.025 m away is within half the
        // gap's height (0.03) of the point lifted to 0.03; 0.05 m away it is not.
        let (n, d) = third(Vec3::new(0.975, 0.02, 0.0), Vec3::ZERO).expect("the end wall");
        assert!((n - -Vec3::X).length() < 1e-6 && (d - 0.025).abs() < 1e-6, "{n} {d}");
        assert_eq!(third(Vec3::new(0.95, 0.02, 0.0), Vec3::ZERO), None);
        // Moving 0.04 m a step towards it (and 0.01 m up, across the gap): found 0.05 m away,
        // past the lifted point's reach; moving away, not.
        let (n, d) = third(Vec3::new(0.95, 0.02, 0.0), Vec3::new(0.04, 0.01, 0.0)).expect("the end wall");
        assert!((n - -Vec3::X).length() < 1e-6 && (d - 0.05).abs() < 1e-6, "{n} {d}");
        assert_eq!(third(Vec3::new(0.95, 0.02, 0.0), Vec3::new(-0.04, 0.0, 0.0)), None);
        // Moving 0.04 m towards it and 0.05 m up a step: the lifted point moves along the gap
        // alone (moved up too, it would be in the ceiling and find nothing).
        let (n, d) = third(Vec3::new(0.95, 0.02, 0.0), Vec3::new(0.04, 0.05, 0.0)).expect("the end wall");
        assert!((n - -Vec3::X).length() < 1e-6 && (d - 0.05).abs() < 1e-6, "{n} {d}");
        // The end wall 0.02 m thick: moving 0.09 m a step towards it from 0.05 m away, the
        // lifted point is past it, 0.02 m from its far side, which faces along the travel: not
        // taken.
        let thin = Sdf::half_space(Vec3::Y, 0.0)
            .union(Sdf::half_space(-Vec3::Y, -0.06))
            .union(Sdf::cuboid(Vec3::new(0.01, 1.0, 1.0)).translated(Vec3::new(1.01, 0.0, 0.0)));
        let (second, third) = moving_surfaces(&thin, Vec3::new(0.95, 0.02, 0.0), Vec3::new(0.09, 0.0, 0.0));
        assert!(second.is_some_and(|(n, _)| (n - -Vec3::Y).length() < 1e-6), "{second:?}: not the ceiling");
        assert_eq!(third, None);
        // The ceiling tilted by 10° (170° from the floor's normal), closing towards the end
        // wall x = 1, 0.06 m above the floor at x = 0.9: moving along the floor towards the
        // wall 0.07 m away, the lifted point moves along the gap's middle.
        let tilt = 10.0_f32.to_radians();
        let down = Vec3::new(-tilt.sin(), -tilt.cos(), 0.0);
        let ceiling = Vec3::new(0.9, 0.06, 0.0);
        let wedge = Sdf::half_space(Vec3::Y, 0.0)
            .union(Sdf::half_space(down, down.dot(ceiling)))
            .union(Sdf::half_space(-Vec3::X, -1.0));
        let x = Vec3::new(0.93, 0.01, 0.0);
        let (second, third) = moving_surfaces(&wedge, x, Vec3::new(0.08, 0.0, 0.0));
        assert!(second.is_some_and(|(n, _)| (n - down).length() < 1e-6), "{second:?}: not the ceiling");
        let (n, d) = third.expect("the end wall");
        assert!((n - -Vec3::X).length() < 1e-6 && (d - 0.07).abs() < 1e-5, "{n} {d}");
    }

    /// The flat faces a body's contacts with a field lie on: each normal two or more contacts
    /// share, over the three blocks of slots, in the order they first appear, and the blocks
    /// up to the last that holds an active contact. A face of one contact is left out. Only
    /// the first three normals to appear are faces: a curved wall's normals after them leave a
    /// floor found first as it is, but a floor found after three of them takes no step.
    #[test]
    fn field_faces_are_the_normals_two_contacts_share() {
        let on = |n: Vec3| GpuStaticContact { normal: n, in_contact: 1, ..GpuStaticContact::default() };
        let off = GpuStaticContact::default();
        let (floor, wall) = (Vec3::Y, -Vec3::X);
        let curved = |k: f32| Vec3::new(-(k * 0.1).cos(), 0.0, (k * 0.1).sin());
        let blocks = [0..4, 4..8, 8..12];
        // A box on the floor of a corner, two corners against the wall (their second surface).
        let contacts = [[on(floor); 4], [off, on(wall), on(wall), off], [off; 4]].concat();
        let faces = field_faces(&contacts, &blocks);
        assert_eq!((&faces.normals[..faces.count], faces.blocks), (&[floor, wall][..], 2));
        // Against a curved wall instead, three corners touching it at three normals (the first
        // to appear): the floor's face alone, however many normals follow.
        let contacts =
            [[on(floor); 4], [on(curved(1.0)), on(curved(2.0)), on(curved(3.0)), on(curved(4.0))], [off; 4]].concat();
        let faces = field_faces(&contacts, &blocks);
        assert_eq!((&faces.normals[..faces.count], faces.blocks), (&[floor][..], 2));
        // The curved wall's normals first: the floor comes fourth and takes no step.
        let contacts = [[on(curved(1.0)), on(curved(2.0)), on(curved(3.0)), off], [off; 4], [on(floor); 4]].concat();
        let faces = field_faces(&contacts, &blocks);
        assert_eq!((faces.count, faces.blocks), (0, 3));
        // One contact on each face: none.
        let contacts = [[on(floor), on(wall), off, off], [off; 4], [off; 4]].concat();
        let faces = field_faces(&contacts, &blocks);
        assert_eq!((faces.count, faces.blocks), (0, 1));
    }

    /// A point's new contacts with a field take their warm start from last step's contact with
    /// the same surface, whichever slot held it; a surface new within 18° takes none, and an
    /// old contact warm starts one new contact at most.
    #[test]
    fn warm_starts_follow_the_surface_not_the_slot() {
        let old = |n: Vec3| GpuStaticContact { normal: n, in_contact: 1, ..GpuStaticContact::default() };
        let (x, y, z) = (-Vec3::X, Vec3::Y, -Vec3::Z);
        let last = [old(y), old(x), old(z)];
        assert_eq!(warm_sources(&last, [Some(x), Some(y), Some(z)]), [Some(1), Some(0), Some(2)]);
        assert_eq!(warm_sources(&last, [Some(z), Some(x), None]), [Some(2), Some(1), None]);
        // 30° from the floor: another surface.
        let tilted = Vec3::new(0.5, 0.75_f32.sqrt(), 0.0);
        assert_eq!(warm_sources(&last, [Some(tilted), Some(x), None]), [None, Some(1), None]);
        // An empty slot warm starts nothing.
        let emptied = [GpuStaticContact { in_contact: 0, ..last[0] }, last[1], last[2]];
        assert_eq!(warm_sources(&emptied, [Some(y), None, None]), [None, None, None]);
        // Two new normals near one old: the first takes it.
        let near = Vec3::new(0.1, 1.0, 0.0).normalize();
        assert_eq!(warm_sources(&last, [Some(near), Some(y), None]), [Some(0), None, None]);
    }
}
