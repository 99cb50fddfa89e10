//! Particle-particle contacts on the CPU, twins of the kernels of shaders/particle_contacts.wgsl:
//! a hashed grid over sorted cell keys, then mass-splitting Jacobi over each particle's
//! neighbours, gathered (no scatter: each particle computes every impulse it takes part in from
//! its own side, and the two sides compute it bit for bit alike).

use glam::{Vec3, Vec4};

use super::particles::collider_distance;
use crate::cpu::contacts::GRID_HASH;
use crate::layout::{GpuCollider, GpuParticle, StepParams};
use crate::particles::EMPTY_CELL;

/// The particle grid's state between the stages of a substep.
#[derive(Clone, Debug, Default)]
pub(crate) struct ParticleGrid {
    /// `(hash, particle)` sorted by hash, stable (so by particle within a bucket).
    pub items: Vec<[u32; 2]>,
    /// First sorted item of each hash bucket, or [`EMPTY_CELL`].
    pub cell_start: Vec<u32>,
    /// Neighbours within reach of each particle.
    pub counts: Vec<u32>,
    /// Position or velocity changes of a Jacobi iteration.
    pub scratch: Vec<Vec3>,
}

/// The hash bucket of the grid cell holding `x`. Twin of `particle_hash_of`.
#[inline]
pub(crate) fn cell_hash(p: &StepParams, x: Vec3) -> u32 {
    let c = (x * p.particle_inv_cell).floor();
    cell_key(p, c.x as i32, c.y as i32, c.z as i32)
}

#[inline]
fn cell_key(p: &StepParams, x: i32, y: i32, z: i32) -> u32 {
    ((x as u32).wrapping_mul(GRID_HASH[0])
        ^ (y as u32).wrapping_mul(GRID_HASH[1])
        ^ (z as u32).wrapping_mul(GRID_HASH[2]))
        & p.particle_hash_mask
}

/// What [`gather`] computes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Gather {
    /// The contacts within reach: particle pairs with `|x_i - x_j| < r_i + r_j + margin` and
    /// colliders within `margin`.
    Count,
    /// The position change of one Jacobi iteration pushing overlapping particles apart.
    Position,
    /// The velocity change of one Jacobi iteration over the particle and collider contacts.
    Velocity,
}

/// Gathers over the particles in the 27 cells around particle `i` (each bucket once, in a fixed
/// order), then over the colliders. Returns the change `mode` asks for and the number of
/// contacts within reach. Twin of `particle_gather`.
///
/// Mass splitting (Tonge et al. 2012) makes the two sides of a pair compute the same impulse:
/// with `n_i` contacts, particle `i` takes part in each with mass `m_i / n_i`, so the pair's
/// effective mass is `1 / (n_i / m_i + n_j / m_j)` and the averaged velocity change of `i` is
/// `Σ λ n / m_i`; `i` and `j` evaluate `λ` from the same numbers in the same order, so the
/// impulses are equal and opposite bit for bit and momentum is conserved without a scatter.
/// Overlaps are removed in positions, and each position correction also changes the velocity
/// by `Δx / h`, as in position-based dynamics: a correction that only moved the particle would
/// leave the velocity that made the overlap, which the few Jacobi iterations never remove in a
/// stack (a column of ten sank into itself to a quarter of its height). Approach velocities
/// are then removed by the velocity iterations, which also see the colliders so that a heap's
/// weight reaches the floor within the substep.
fn gather(
    p: &StepParams,
    geometry: &[Vec4],
    colliders: &[GpuCollider],
    particles: &[GpuParticle],
    grid: &ParticleGrid,
    i: usize,
    mode: Gather,
) -> (Vec3, u32) {
    let me = particles[i];
    let c = (me.position * p.particle_inv_cell).floor();
    let (cx, cy, cz) = (c.x as i32, c.y as i32, c.z as i32);
    let my_share = if mode == Gather::Count { 0.0 } else { grid.counts[i] as f32 / me.mass };
    let mut seen = [u32::MAX; 27];
    let mut change = Vec3::ZERO;
    let mut count = 0u32;
    let mut cell = 0usize;
    for dz in -1..=1 {
        for dy in -1..=1 {
            for dx in -1..=1 {
                let key = cell_key(p, cx + dx, cy + dy, cz + dz);
                let repeated = seen[..cell].contains(&key);
                seen[cell] = key;
                cell += 1;
                if repeated || grid.cell_start[key as usize] == EMPTY_CELL {
                    continue;
                }
                let mut k = grid.cell_start[key as usize] as usize;
                while k < grid.items.len() && grid.items[k][0] == key {
                    let j = grid.items[k][1] as usize;
                    k += 1;
                    if j == i {
                        continue;
                    }
                    let other = particles[j];
                    let d_vec = me.position - other.position;
                    let d = d_vec.dot(d_vec).sqrt();
                    let reach = me.radius + other.radius;
                    if d >= reach + p.particle_margin {
                        continue;
                    }
                    count += 1;
                    if mode == Gather::Count {
                        continue;
                    }
                    let n = if d > 0.0 {
                        d_vec * (1.0 / d)
                    } else if i < j {
                        Vec3::Y
                    } else {
                        -Vec3::Y
                    };
                    let s = d - reach;
                    let mass = 1.0 / (my_share + grid.counts[j] as f32 / other.mass);
                    if mode == Gather::Position {
                        if s < 0.0 {
                            change += n * (-s * mass / me.mass);
                        }
                        continue;
                    }
                    let dvel = me.velocity - other.velocity;
                    let vn = dvel.dot(n);
                    let lambda = (-mass * (vn + s.max(0.0) * p.inv_h)).max(0.0);
                    change += friction_impulse(lambda * n, dvel - vn * n, p.particle_friction * lambda, mass)
                        * (1.0 / me.mass);
                }
            }
        }
    }
    if mode == Gather::Position {
        return (change, count);
    }
    for c in colliders {
        let (d, n) = collider_distance(geometry, c, me.position);
        let gap = d - me.radius;
        if gap >= p.particle_margin {
            continue;
        }
        count += 1;
        if mode == Gather::Count {
            continue;
        }
        let mass = 1.0 / my_share;
        let vn = me.velocity.dot(n);
        let lambda = (-mass * (vn + gap.max(0.0) * p.inv_h)).max(0.0);
        let friction = (p.particle_friction * c.friction).sqrt();
        change += friction_impulse(lambda * n, me.velocity - vn * n, friction * lambda, mass) * (1.0 / me.mass);
    }
    (change, count)
}

/// A normal impulse plus the Coulomb friction impulse that takes at most `max_friction` off the
/// tangential relative velocity `vt` of a contact of effective mass `mass`.
#[inline]
fn friction_impulse(normal: Vec3, vt: Vec3, max_friction: f32, mass: f32) -> Vec3 {
    let speed_t = vt.dot(vt).sqrt();
    if speed_t > 0.0 { normal - vt * (max_friction.min(mass * speed_t) / speed_t) } else { normal }
}

/// The particle contacts of a substep: the grid of the substep's positions, gravity,
/// `particle_iterations` Jacobi iterations pushing overlapping particles apart, then
/// `particle_iterations` Jacobi iterations over the contact velocities. Twin of the kernels `particle_hash`, the
/// radix sort, `particle_cell_start`, `particle_count`, `particle_separate` and
/// `particle_collide` with their `particle_apply_*`.
pub(crate) fn particle_contacts(
    p: &StepParams,
    geometry: &[Vec4],
    colliders: &[GpuCollider],
    particles: &mut [GpuParticle],
    grid: &mut ParticleGrid,
) {
    let colliders = &colliders[..p.collider_count as usize];
    grid.items.clear();
    grid.items.extend(particles.iter().enumerate().map(|(i, q)| [cell_hash(p, q.position), i as u32]));
    grid.items.sort_by_key(|item| item[0]);
    grid.cell_start.clear();
    grid.cell_start.resize((p.particle_hash_mask + 1) as usize, EMPTY_CELL);
    for k in 0..grid.items.len() {
        let key = grid.items[k][0];
        if k == 0 || grid.items[k - 1][0] != key {
            grid.cell_start[key as usize] = k as u32;
        }
    }
    grid.counts =
        (0..particles.len()).map(|i| gather(p, geometry, colliders, particles, grid, i, Gather::Count).1).collect();
    // Gravity (with the counts on the GPU, so the sums round alike).
    for particle in particles.iter_mut() {
        particle.velocity += p.h * p.gravity;
    }
    let mut scratch = std::mem::take(&mut grid.scratch);
    for mode in [Gather::Position, Gather::Velocity] {
        for _ in 0..p.particle_iterations {
            scratch.clear();
            scratch.extend((0..particles.len()).map(|i| gather(p, geometry, colliders, particles, grid, i, mode).0));
            for (particle, change) in particles.iter_mut().zip(&scratch) {
                if mode == Gather::Position {
                    let dv = *change * p.inv_h;
                    particle.position += *change;
                    particle.velocity += dv;
                } else {
                    particle.velocity += *change;
                }
            }
        }
    }
    grid.scratch = scratch;
}
