//! The particle stage on the CPU, twin of `advance_particles` in shaders/particles.wgsl.

use glam::{Vec3, Vec4};
use rayon::prelude::*;

use crate::layout::{GpuCollider, GpuParticle, StepParams};
use crate::particles::{PARTICLE_MARCH_STEPS, PARTICLE_MAX_IMPACTS, PARTICLE_SKIN, PARTICLE_SURFACE_EPS};
use crate::sdf::evaluate_program;

/// Distance from `x` to collider `c`'s surface and the unit normal there.
#[inline]
pub(crate) fn collider_distance(geometry: &[Vec4], c: &GpuCollider, x: Vec3) -> (f32, Vec3) {
    if c.node_count == 0 {
        (c.normal.dot(x) - c.offset, c.normal)
    } else {
        evaluate_program(geometry, c.first_node, c.node_count, x)
    }
}

/// The nearest collider to a sphere of radius `radius` at `x`: its gap (distance less the
/// radius) and index; `(f32::MAX, 0)` without colliders. Ties go to the lower index.
#[inline]
fn nearest(geometry: &[Vec4], colliders: &[GpuCollider], x: Vec3, radius: f32) -> (f32, u32) {
    let mut best = (f32::MAX, 0);
    for (i, c) in colliders.iter().enumerate() {
        let gap = collider_distance(geometry, c, x).0 - radius;
        if gap < best.0 {
            best = (gap, i as u32);
        }
    }
    best
}

/// One substep of every particle (see [`crate::particles`]): gravity (when the particle contacts
/// did not apply it already), then the straight path swept against the colliders by sphere
/// tracing. At each contact (at most [`PARTICLE_MAX_IMPACTS`]) an approaching particle has its
/// normal velocity reversed with restitution above the threshold speed (else removed) and
/// friction takes `min(μ Δv_n, |v_t|)` off its tangential velocity; then the sweep goes on for
/// the rest of the substep with the radius less [`PARTICLE_SKIN`] of it, so that a particle
/// sliding along the surface it touches makes progress while a second surface (a wall met in a
/// corner, another part of the same field) still stops it. A contact met within that skin is
/// resolved the same way, and the particle is put back out of the surface, as it is at the end
/// of the substep.
pub(crate) fn advance_particles(
    p: &StepParams,
    geometry: &[Vec4],
    colliders: &[GpuCollider],
    particles: &mut [GpuParticle],
    parallel: bool,
) {
    let colliders = &colliders[..p.collider_count as usize];
    let advance = |particle: &mut GpuParticle| {
        let mut radius = particle.radius;
        let mut x = particle.position;
        // Gravity, unless the particle contacts applied it before solving.
        let mut v = if p.particle_collisions != 0 { particle.velocity } else { particle.velocity + p.h * p.gravity };
        let mut remaining = p.h;
        for _ in 0..PARTICLE_MAX_IMPACTS {
            // March along x + t v, t in [0, remaining], never further than the nearest surface.
            let speed = v.dot(v).sqrt();
            let mut t = 0.0_f32;
            let mut hit = false;
            let mut gap = 0.0_f32;
            let mut which = 0u32;
            let mut finished = false;
            for _ in 0..PARTICLE_MARCH_STEPS {
                (gap, which) = nearest(geometry, colliders, x + t * v, radius);
                if gap < PARTICLE_SURFACE_EPS {
                    hit = true;
                    break;
                }
                if speed * (remaining - t) <= gap {
                    finished = true;
                    break;
                }
                t += gap / speed;
            }
            if !hit {
                // Free to the end of the substep, or as far as the march got.
                let travel = if finished { remaining } else { t };
                x += travel * v;
                break;
            }
            x += t * v;
            remaining -= t;
            let c = &colliders[which as usize];
            let (_, n) = collider_distance(geometry, c, x);
            // Inside the full sphere (started inside, or met within the skin): back to the
            // surface along the normal.
            let depth = gap - (particle.radius - radius);
            if depth < 0.0 {
                x -= depth * n;
            }
            let vn = v.dot(n);
            if vn < 0.0 {
                let friction = (p.particle_friction * c.friction).sqrt();
                let restitution = p.particle_restitution.max(c.restitution);
                let e = if -vn > p.restitution_threshold { restitution } else { 0.0 };
                let dvn = -(1.0 + e) * vn;
                let vt = v - vn * n;
                let speed_t = vt.dot(vt).sqrt();
                let slowed =
                    if speed_t > 0.0 { vt * ((speed_t - (friction * dvn).min(speed_t)) / speed_t) } else { vt };
                v = slowed - e * vn * n;
            }
            // Sweep the rest with a smaller sphere: the surface just touched is a skin away.
            radius = particle.radius * (1.0 - PARTICLE_SKIN);
        }
        if radius < particle.radius {
            // The shrunken sweep may end within the skin of a surface: back out of it.
            let (gap, which) = nearest(geometry, colliders, x, particle.radius);
            if gap < 0.0 {
                x -= gap * collider_distance(geometry, &colliders[which as usize], x).1;
            }
        }
        particle.position = x;
        particle.velocity = v;
    };
    // Each particle on its own: split over threads when `parallel`, the same bits.
    if parallel {
        particles.par_iter_mut().with_min_len(1024).for_each(advance);
    } else {
        particles.iter_mut().for_each(advance);
    }
}
