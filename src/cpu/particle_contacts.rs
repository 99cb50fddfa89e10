//! Particle-particle contacts on the CPU, twins of the kernels of shaders/particle_contacts.wgsl:
//! a hashed grid over sorted cell keys, then mass-splitting Jacobi over each particle's
//! neighbours, gathered (no scatter: each particle computes every impulse it takes part in from
//! its own side, and the two sides compute it bit for bit alike).

use glam::{Mat3, Quat, Vec3, Vec4};
use rayon::prelude::*;

use super::particles::collider_distance;
use crate::collide::{Posed, collide_point};
use crate::cpu::contacts::GRID_HASH;
use crate::layout::{
    GpuBody, GpuBodyProps, GpuCollider, GpuParticle, GpuParticleContact, GpuShape, KIND_DYNAMIC, SHAPE_POINT,
    StepParams,
};
use crate::math::world_inverse_inertia;
use crate::particles::{
    EMPTY_CELL, PARTICLE_BODY_SLOTS, PARTICLE_CONTACT_COLLIDER, PARTICLE_CONTACT_SLOTS, PARTICLE_FAR, PARTICLE_KEEP_GAP,
};

const SLOTS: usize = PARTICLE_BODY_SLOTS as usize;
const KEPT: usize = PARTICLE_CONTACT_SLOTS as usize;

/// The rigid bodies as the particle stages see them: they read the poses and the velocities,
/// and the last stage of each velocity iteration adds the particles' impulses to the velocities.
pub(crate) struct BodyTables<'a> {
    pub bodies: &'a mut [GpuBody],
    pub props: &'a [GpuBodyProps],
    pub shapes: &'a [GpuShape],
    pub topology: &'a [u32],
}

/// One particle-body contact, held by the particle. Twin of the slot's three vec4 in the
/// particle scratch and its body index in the work arena.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct BodySlot {
    /// The body.
    pub body: u32,
    /// Unit normal from the body towards the particle.
    pub normal: Vec3,
    /// The body's surface point at detection, relative to its centre of mass, world frame, m.
    pub lever: Vec3,
    /// The impulse of the last velocity iteration (or of the restitution pass) on the particle,
    /// not yet applied to it (the body took its negative at once); zero once applied.
    pub impulse: Vec3,
    /// The particle's normal velocity relative to the body at the start of the substep, both
    /// after gravity (restitution), m/s.
    pub approach: f32,
}

/// The particle grid's state between the stages of a substep.
#[derive(Clone, Debug, Default)]
pub(crate) struct ParticleGrid {
    /// `(hash, particle)` sorted by hash, stable (so by particle within a bucket).
    pub items: Vec<[u32; 2]>,
    /// First sorted item of each hash bucket, or [`EMPTY_CELL`].
    pub cell_start: Vec<u32>,
    /// Neighbours within reach of each particle.
    pub counts: Vec<u32>,
    /// Each particle's closest pairs, [`PARTICLE_CONTACT_SLOTS`] per particle, the other's
    /// index plus one, zero-padded (see [`Gather::Count`]).
    pub selected: Vec<u32>,
    /// Position or velocity changes of a Jacobi iteration.
    pub scratch: Vec<Vec3>,
    /// Each particle's velocity at the start of the substep, before gravity (restitution).
    pub start: Vec<Vec3>,
    /// Each body's particle contacts: counted, then their starts in `body_list`, then the total.
    pub body_starts: Vec<u32>,
    /// The particles touching each body, grouped by body, in the order the body finds them.
    pub body_list: Vec<u32>,
    /// Each particle's body contacts (may exceed [`PARTICLE_BODY_SLOTS`]; the rest are dropped).
    pub slot_counts: Vec<u32>,
    /// [`PARTICLE_BODY_SLOTS`] per particle, sorted by body.
    pub slots: Vec<BodySlot>,
    /// [`PARTICLE_CONTACT_SLOTS`] kept contacts per particle, in the order the last velocity
    /// iterations found them.
    pub contacts: Vec<GpuParticleContact>,
    /// The gathers' results in the grid's sorted order, before each goes to its particle (see
    /// [`in_cell_order`]): changes; counts with selections; changes with kept contacts.
    pub in_order: InOrder,
    /// Particle-body contacts dropped this step.
    pub dropped: u32,
    /// The fastest particle's speed at detection, m/s (see [`fastest_particle`]).
    pub fastest: f32,
}

/// Room for the gathers' results in the grid's sorted order, kept from step to step so that a
/// step allocates nothing.
#[derive(Clone, Debug, Default)]
pub(crate) struct InOrder {
    changes: Vec<Vec3>,
    counts: Vec<(u32, [u32; KEPT])>,
    kept: Vec<(Vec3, [GpuParticleContact; KEPT])>,
}

/// `f` of every particle into `sorted`, the particles taken in the grid's sorted order (split
/// over threads when `parallel`). Particles of one cell then come one after another and their
/// gathers read the same neighbours while they are in the cache, where particle order would
/// jump about the heap (a bowl of 40,000 particles on one thread: 6.6 -> 6.2 s a step). Each
/// particle's result is its own, so the order changes no result; the caller hands `sorted[k]`
/// to particle `items[k][1]`.
fn in_cell_order<T, F>(items: &[[u32; 2]], parallel: bool, sorted: &mut Vec<T>, f: F)
where
    T: Send,
    F: Fn(usize) -> T + Sync + Send,
{
    super::fill_indexed(sorted, items.len(), parallel, PARALLEL_PARTICLES, |k| f(items[k][1] as usize));
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
    /// colliders within `margin`; and the particle's closest pairs, up to
    /// [`PARTICLE_CONTACT_SLOTS`] of those with a gap below [`PARTICLE_KEEP_GAP`] of the
    /// smaller radius, by gap, then by index. A close pair keeps its impulse when each side
    /// selected the other: both decide alike, so the two impulses stay opposite, and a particle
    /// with more close pairs than slots keeps its closest. (The selection is made before the
    /// position iterations move the particles a little; the pairs still close after them are
    /// kept.)
    Count,
    /// The position change of one Jacobi iteration pushing overlapping particles apart.
    Position,
    /// The velocity change of the warm start: the kept contacts' impulses of the last substep
    /// applied again (the contacts are found and kept anew).
    WarmStart,
    /// The velocity change of one Jacobi iteration over the particle and collider contacts.
    Velocity,
    /// The velocity change of the restitution pass over the particle pairs.
    Restitution,
}

/// Particles per task when a pass over the particles is split over threads.
const PARALLEL_PARTICLES: usize = 1024;

/// [`gather`]'s change for every particle into `out`, each particle on its own (split over
/// threads when `parallel`: the same bits).
#[allow(clippy::too_many_arguments)]
fn gather_all(
    p: &StepParams,
    geometry: &[Vec4],
    colliders: &[GpuCollider],
    particles: &[GpuParticle],
    grid: &ParticleGrid,
    mode: Gather,
    out: &mut Vec<Vec3>,
    sorted: &mut Vec<Vec3>,
    parallel: bool,
) {
    in_cell_order(&grid.items, parallel, sorted, |i| {
        gather(p, geometry, colliders, particles, grid, i, mode, &mut [], &mut []).0
    });
    out.resize(particles.len(), Vec3::ZERO);
    for (item, change) in grid.items.iter().zip(sorted.drain(..)) {
        out[item[1] as usize] = change;
    }
}

/// [`gather`]'s [`Gather::WarmStart`] or [`Gather::Velocity`] change for every particle into
/// `out`, each with its own kept contacts in `kept` ([`PARTICLE_CONTACT_SLOTS`] per particle).
#[allow(clippy::too_many_arguments)]
fn gather_kept(
    p: &StepParams,
    geometry: &[Vec4],
    colliders: &[GpuCollider],
    particles: &[GpuParticle],
    grid: &ParticleGrid,
    mode: Gather,
    out: &mut Vec<Vec3>,
    kept: &mut [GpuParticleContact],
    sorted: &mut Vec<(Vec3, [GpuParticleContact; KEPT])>,
    parallel: bool,
) {
    let last: &[GpuParticleContact] = kept;
    in_cell_order(&grid.items, parallel, sorted, |i| {
        let mut mine = [GpuParticleContact::default(); KEPT];
        mine.copy_from_slice(&last[i * KEPT..][..KEPT]);
        (gather(p, geometry, colliders, particles, grid, i, mode, &mut mine, &mut []).0, mine)
    });
    out.resize(particles.len(), Vec3::ZERO);
    for (item, (change, mine)) in grid.items.iter().zip(sorted.drain(..)) {
        let i = item[1] as usize;
        out[i] = change;
        kept[i * KEPT..][..KEPT].copy_from_slice(&mine);
    }
}

/// Gathers over the particles in the 27 cells around particle `i` (each bucket once, in a fixed
/// order), then over the colliders. Returns the change `mode` asks for and the number of
/// contacts within reach. `kept` is the particle's kept contacts for [`Gather::WarmStart`]
/// and [`Gather::Velocity`] (empty otherwise). Twin of `particle_gather`.
///
/// Mass splitting (Tonge et al. 2012) makes the two sides of a pair compute the same impulse:
/// with `n_i` contacts, particle `i` takes part in each with mass `m_i / n_i`, so the pair's
/// effective mass is `1 / (n_i / m_i + n_j / m_j)` and the averaged velocity change of `i` is
/// `Σ λ n / m_i`; `i` and `j` evaluate `λ` from the same numbers in the same order, so the
/// impulses are equal and opposite bit for bit and momentum is conserved without a scatter.
/// Overlaps are removed in positions, with Coulomb friction against each push (the push is an
/// impulse `m Δx / h`; the tangential relative velocity loses up to μ times that), and each
/// position correction also changes the velocity by `Δx / h`, as in position-based dynamics:
/// a correction that only moved the particle would
/// leave the velocity that made the overlap, which the few Jacobi iterations never remove in a
/// stack (a column of ten sank into itself to a quarter of its height). Approach velocities
/// are then removed by the velocity iterations, which also see the colliders so that a heap's
/// weight reaches the floor within the substep. The close pairs that both sides selected
/// ([`Gather::Count`]), then the colliders while slots last, keep their impulses: the warm
/// start applies last substep's again (see [`warm_impulse`]), and each velocity iteration
/// updates the accumulated impulse (see [`accumulate`]); the two sides of a pair hold opposite
/// impulses, bit for bit. The position iterations hold a particle against the colliders it
/// rests on (see [`hold`]).
#[allow(clippy::too_many_arguments)]
fn gather(
    p: &StepParams,
    geometry: &[Vec4],
    colliders: &[GpuCollider],
    particles: &[GpuParticle],
    grid: &ParticleGrid,
    i: usize,
    mode: Gather,
    kept: &mut [GpuParticleContact],
    selected: &mut [u32],
) -> (Vec3, u32) {
    let me = particles[i];
    // The warm start finds its contacts again and keeps them in this order, from last
    // substep's.
    let mut last = [GpuParticleContact::default(); KEPT];
    let mut slot = 0;
    // The closest pairs so far, by (gap, id); id zero where there is none.
    let mut nearest = [(f32::MAX, 0u32); KEPT];
    if mode == Gather::WarmStart {
        last.copy_from_slice(kept);
        kept.fill(GpuParticleContact::default());
    }
    let c = (me.position * p.particle_inv_cell).floor();
    let (cx, cy, cz) = (c.x as i32, c.y as i32, c.z as i32);
    // At least one share: a contact that came within reach after the counts (pushed there by
    // a position correction) must not divide by zero.
    let my_share = if mode == Gather::Count { 0.0 } else { grid.counts[i].max(1) as f32 / me.mass };
    let mut seen = [u32::MAX; 27];
    let (mut change, mut from_above) = (Vec3::ZERO, Vec3::ZERO);
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
                    let (d_sq, reach) = (d_vec.dot(d_vec), me.radius + other.radius);
                    // Most of the 27 cells' particles are out of reach: passed over before the
                    // square root, with room for its rounding (the test below decides).
                    let bound = reach + p.particle_margin;
                    if d_sq > bound * bound * PARTICLE_FAR {
                        continue;
                    }
                    let d = d_sq.sqrt();
                    if d >= bound {
                        continue;
                    }
                    let close = d - reach < PARTICLE_KEEP_GAP * me.radius.min(other.radius);
                    count += 1;
                    if mode == Gather::Count {
                        if close {
                            select(&mut nearest, d - reach, j as u32 + 1);
                        }
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
                    let mass = 1.0 / (my_share + grid.counts[j].max(1) as f32 / other.mass);
                    let dvel = me.velocity - other.velocity;
                    if mode == Gather::Restitution {
                        // A pair that closed faster than the threshold at the start of the
                        // substep and would have met within it leaves at `e` times that speed
                        // (Newton; the solve has already stopped it at contact).
                        let vn0 = (grid.start[i] - grid.start[j]).dot(n);
                        if vn0 < -p.restitution_threshold && vn0 * p.h + s < 0.0 {
                            let lambda = (-mass * (dvel.dot(n) + p.particle_restitution * vn0)).max(0.0);
                            change += n * (lambda / me.mass);
                        }
                        continue;
                    }
                    if mode == Gather::Position {
                        if s < 0.0 {
                            // The push out, and Coulomb friction against it: the push is an
                            // impulse `push / h`, so the tangential relative velocity may lose
                            // up to `μ push / h`, applied like the push, in position and velocity.
                            let push = -s * mass;
                            let vt = dvel - dvel.dot(n) * n;
                            let limit = p.particle_friction * push * p.inv_h;
                            let delta =
                                n * (push / me.mass) + friction_impulse(Vec3::ZERO, vt, limit, mass) * (p.h / me.mass);
                            // The pushes from particles above (along gravity) apart from the
                            // others: the colliders hold only those back by friction.
                            if n.dot(p.gravity) > 0.0 {
                                from_above += delta;
                            } else {
                                change += delta;
                            }
                        }
                        continue;
                    }
                    let vn = dvel.dot(n);
                    let bias = s.max(0.0) * p.inv_h;
                    // A pair keeps its impulse when each side selected the other; the velocity
                    // iterations meet the contacts the warm start kept in the same order.
                    let chosen = |a: usize, b: usize| grid.selected[a * KEPT..][..KEPT].contains(&(b as u32 + 1));
                    let keep = if mode == Gather::WarmStart {
                        close && chosen(i, j) && chosen(j, i)
                    } else {
                        kept.get(slot).is_some_and(|c| c.id == j as u32 + 1)
                    };
                    if let Some(c) = kept.get_mut(slot).filter(|_| keep) {
                        slot += 1;
                        let (vt, friction) = (dvel - vn * n, p.particle_friction);
                        change += kept_impulse(mode, c, &last, j as u32 + 1, n, vn, vt, bias, friction, mass)
                            * (1.0 / me.mass);
                        continue;
                    }
                    if mode == Gather::WarmStart {
                        continue;
                    }
                    let lambda = (-mass * (vn + bias)).max(0.0);
                    change += friction_impulse(lambda * n, dvel - vn * n, p.particle_friction * lambda, mass)
                        * (1.0 / me.mass);
                }
            }
        }
    }
    for (out, &(_, id)) in selected.iter_mut().zip(&nearest) {
        *out = id;
    }
    if mode == Gather::Restitution {
        return (change, count);
    }
    if mode == Gather::Position {
        let kept = &grid.contacts[i * KEPT..][..KEPT];
        return (hold(p, geometry, colliders, &me, from_above, change, kept), count);
    }
    for (index, c) in colliders.iter().enumerate() {
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
        let bias = gap.max(0.0) * p.inv_h;
        let friction = (p.particle_friction * c.friction).sqrt();
        // The warm start keeps the colliders while slots last; the velocity iterations meet them
        // in the same order.
        let id = PARTICLE_CONTACT_COLLIDER | index as u32;
        if let Some(c) = kept.get_mut(slot).filter(|c| mode == Gather::WarmStart || c.id == id) {
            slot += 1;
            let vt = me.velocity - vn * n;
            change += kept_impulse(mode, c, &last, id, n, vn, vt, bias, friction, mass) * (1.0 / me.mass);
            continue;
        }
        if mode == Gather::WarmStart {
            continue;
        }
        let lambda = (-mass * (vn + bias)).max(0.0);
        change += friction_impulse(lambda * n, me.velocity - vn * n, friction * lambda, mass) * (1.0 / me.mass);
    }
    (change, count)
}

/// Inserts pair `id` at gap `s` into `nearest`, kept sorted by (gap, id), if it is among the
/// closest. Twin of `particle_select_pair`.
#[inline]
fn select(nearest: &mut [(f32, u32); KEPT], s: f32, id: u32) {
    let before = |a: (f32, u32), b: (f32, u32)| a.0 < b.0 || (a.0 == b.0 && a.1 < b.1);
    if !before((s, id), nearest[KEPT - 1]) {
        return;
    }
    let mut k = KEPT - 1;
    while k > 0 && before((s, id), nearest[k - 1]) {
        nearest[k] = nearest[k - 1];
        k -= 1;
    }
    nearest[k] = (s, id);
}

/// A kept contact's impulse change: for [`Gather::WarmStart`] it keeps contact `id` in `slot`
/// and returns last substep's impulse ([`warm_impulse`]), for [`Gather::Velocity`] one
/// iteration's change ([`accumulate`]). Twin of `particle_kept_impulse`.
#[allow(clippy::too_many_arguments)]
#[inline]
fn kept_impulse(
    mode: Gather,
    slot: &mut GpuParticleContact,
    last: &[GpuParticleContact; KEPT],
    id: u32,
    n: Vec3,
    vn: f32,
    vt: Vec3,
    bias: f32,
    friction: f32,
    mass: f32,
) -> Vec3 {
    if mode == Gather::WarmStart {
        warm_impulse(slot, last, id, n, friction)
    } else {
        accumulate(slot, n, vn, vt, bias, friction, mass)
    }
}

/// Keeps contact `id` (along `n`, friction coefficient `friction`) in `slot`, with its
/// impulse of the last substep if `last` holds it, turned to the new normal: the normal part
/// no less than zero, the friction within `friction` times it. Returns that impulse, which the
/// warm start applies. Twin of `particle_warm_impulse`.
#[inline]
fn warm_impulse(
    slot: &mut GpuParticleContact,
    last: &[GpuParticleContact; KEPT],
    id: u32,
    n: Vec3,
    friction: f32,
) -> Vec3 {
    let impulse = last.iter().find(|c| c.id == id).map_or(Vec3::ZERO, |c| within_cone(c.impulse, n, friction));
    *slot = GpuParticleContact { impulse, id };
    impulse
}

/// `impulse` with its normal part along `n` no less than zero and its friction within
/// `friction` times that. Odd in `impulse` and `n` together, bit for bit (the two sides of a
/// pair hold opposite impulses along opposite normals).
#[inline]
fn within_cone(impulse: Vec3, n: Vec3, friction: f32) -> Vec3 {
    let normal = impulse.dot(n);
    let lambda = normal.max(0.0);
    let mut tangent = impulse - normal * n;
    let max = friction * lambda;
    let len_sq = tangent.dot(tangent);
    if len_sq > max * max {
        tangent *= max / len_sq.sqrt();
    }
    lambda * n + tangent
}

/// One velocity iteration of a kept contact (normal `n`, normal velocity `vn` and tangential
/// velocity `vt` of this particle relative to the other side, velocity bias `bias`, friction
/// coefficient `friction`, effective mass `mass`): the accumulated impulse in `slot` takes the
/// step that stops the contact, then is clamped as a whole, the normal part to at least zero,
/// the friction to within `friction` times it (projected Gauss-Seidel, as the bodies' solve).
/// Returns the change of the impulse. Twin of `particle_accumulate`.
#[allow(clippy::too_many_arguments)]
#[inline]
fn accumulate(slot: &mut GpuParticleContact, n: Vec3, vn: f32, vt: Vec3, bias: f32, friction: f32, mass: f32) -> Vec3 {
    let old = slot.impulse;
    let normal = old.dot(n);
    let lambda = (normal - mass * (vn + bias)).max(0.0);
    let mut tangent = (old - normal * n) - vt * mass;
    let max = friction * lambda;
    let len_sq = tangent.dot(tangent);
    if len_sq > max * max {
        tangent *= max / len_sq.sqrt();
    }
    slot.impulse = lambda * n + tangent;
    slot.impulse - old
}

/// The static colliders' hold on particle `me` against its pushes of a position iteration,
/// `from_above` (by particles above it, along gravity) and the `rest`. At each collider it
/// touches (within the margin) the part of the pushes that would take it into the collider
/// beyond contact is removed (the collider does not give way), and the pushes from above along
/// the collider are held back by Coulomb friction: up to `μ` times the part of them removed,
/// plus the friction the contact had to spare in the last substep's velocity iterations, `μ λ -
/// |f|` of its impulse in `kept`, as a distance (`h / m` per N s), shared out over the position
/// iterations. A push is the impulse `m Δx / h`, so with the velocity iterations' impulse (when
/// it is about last substep's) the friction keeps within Coulomb's cone. Without the hold, a
/// particle resting on the floor under a heap is pushed out from under it a little every
/// substep by the corrections that remove the heap's overlaps, and no friction of the velocity
/// iterations takes the distance back: the heap's base creeps outward for ever. The other
/// pushes, between particles side by side on the floor, remove overlaps that a fall squeezed
/// into them, and are not held. Twin of `particle_hold`.
fn hold(
    p: &StepParams,
    geometry: &[Vec4],
    colliders: &[GpuCollider],
    me: &GpuParticle,
    from_above: Vec3,
    rest: Vec3,
    kept: &[GpuParticleContact],
) -> Vec3 {
    let (mut change, mut rest) = (from_above, rest);
    for (index, c) in colliders.iter().enumerate() {
        let (d, n) = collider_distance(geometry, c, me.position);
        let gap = d - me.radius;
        if gap >= p.particle_margin {
            continue;
        }
        let friction = (p.particle_friction * c.friction).sqrt();
        let id = PARTICLE_CONTACT_COLLIDER | index as u32;
        let spare = kept.iter().find(|k| k.id == id).map_or(0.0, |k| {
            let normal = k.impulse.dot(n);
            let tangent = k.impulse - normal * n;
            let share = (p.h / me.mass) / p.particle_iterations as f32;
            (friction * normal.max(0.0) - tangent.dot(tangent).sqrt()).max(0.0) * share
        });
        let held = (-(n.dot(change) + gap.max(0.0))).max(0.0);
        change += held * n;
        let tangent = change - n.dot(change) * n;
        let len = tangent.dot(tangent).sqrt();
        if len > 0.0 {
            change -= tangent * (len.min(friction * held + spare) / len);
        }
        rest += (-(n.dot(change + rest) + gap.max(0.0))).max(0.0) * n;
    }
    change + rest
}

/// A normal impulse plus the Coulomb friction impulse that takes at most `max_friction` off the
/// tangential relative velocity `vt` of a contact of effective mass `mass`.
#[inline]
fn friction_impulse(normal: Vec3, vt: Vec3, max_friction: f32, mass: f32) -> Vec3 {
    let speed_t = vt.dot(vt).sqrt();
    if speed_t > 0.0 { normal - vt * (max_friction.min(mass * speed_t) / speed_t) } else { normal }
}

/// How much faster than its centre a body's surface, `arm` from its centre at most, can move
/// within the substep, m/s: its spin, with what a set torque adds to it, and the substep's
/// gravity and set force. Twin of the `spin` of `body_view` in shaders/particle_bodies.wgsl.
fn surface_speedup(p: &StepParams, body: &GpuBody, pr: &GpuBodyProps, arm: f32) -> f32 {
    let turn = body.angular_velocity.length() + p.h * pr.inv_inertia.max_element() * pr.torque.length();
    turn * arm + p.h * (p.gravity.length() + body.inv_mass * pr.force.length())
}

/// Calls `visit(j, normal, lever)` for every particle `j` that can reach body `b` within the
/// substep: the narrow phase of the particle posed as a sphere against the body's shape, the
/// normal from the body towards the particle and the lever of the body's surface point.
///
/// Detection is continuous in the speculative way: the margin of a pair is the particle margin
/// plus how far the two can close in the substep, `h (|v_j - v_b| + s_b)` with `s_b` how much
/// faster than its centre the body's surface can move ([`surface_speedup`]: its spin over `R_b`,
/// the farthest its surface reaches from its centre, and the substep's gravity and set force;
/// gravity is added to the particles after detection), and the contact's velocity bias lets
/// them close by the gap and no more, so a particle at 100 m/s stops on the face of a 1 cm
/// plate instead of passing through it between two substeps. The body visits the grid cells
/// its bounds cover, grown by the particles' reach and by `h (fastest + |v_b| + s_b)` for the
/// fastest particle of the substep, each particle in the cell it lies in (a hash bucket shared by two
/// of the cells is not visited twice), or every particle in order when its bounds cover more
/// cells than there are particles (a large static slab, or one very fast particle anywhere);
/// the bounds grown by each pair's own reach reject most of them before the narrow phase.
/// Twin of `body_particle_visit`.
fn for_each_particle_touching(
    p: &StepParams,
    geometry: &[Vec4],
    tables: &BodyTables,
    particles: &[GpuParticle],
    grid: &ParticleGrid,
    b: usize,
    mut visit: impl FnMut(usize, Vec3, Vec3),
) {
    let body = tables.bodies[b];
    let shape = &tables.shapes[tables.props[b].shape as usize];
    let posed = Posed::new(shape, body.position, body.orientation, geometry, tables.topology);
    let (lo, hi) = posed.core_bounds();
    let arm = (hi - body.position).max(body.position - lo).length() + shape.radius;
    let spin = surface_speedup(p, &body, &tables.props[b], arm);
    let sweep = p.h * (grid.fastest + body.linear_velocity.length() + spin);
    let reach = Vec3::splat(shape.radius + p.particle_reach + sweep);
    let c_lo = ((lo - reach) * p.particle_inv_cell).floor();
    let c_hi = ((hi + reach) * p.particle_inv_cell).floor();
    let mut touch = |j: usize| {
        let q = particles[j];
        let margin = p.particle_margin + p.h * ((q.velocity - body.linear_velocity).length() + spin);
        let grow = Vec3::splat(shape.radius + q.radius + margin);
        if q.position.cmplt(lo - grow).any() || q.position.cmpgt(hi + grow).any() {
            return;
        }
        let point = GpuShape {
            first_point: p.origin_point,
            point_count: 1,
            radius: q.radius,
            kind: SHAPE_POINT,
            ..Default::default()
        };
        let a = Posed::new(&point, q.position, Quat::IDENTITY, geometry, tables.topology);
        let m = collide_point(&a, &posed, margin);
        if m.count > 0 {
            let normal = -m.normal;
            visit(j, normal, m.points[0].core_b + normal * shape.radius);
        }
    };
    let cells = (c_hi - c_lo + Vec3::ONE).max(Vec3::ONE);
    if cells.x * cells.y * cells.z > p.particle_count as f32 {
        for j in 0..particles.len() {
            touch(j);
        }
        return;
    }
    let (lo_i, hi_i) = (c_lo.as_ivec3(), c_hi.as_ivec3());
    for z in lo_i.z..=hi_i.z {
        for y in lo_i.y..=hi_i.y {
            for x in lo_i.x..=hi_i.x {
                let key = cell_key(p, x, y, z);
                let start = grid.cell_start[key as usize];
                if start == EMPTY_CELL {
                    continue;
                }
                let mut k = start as usize;
                while k < grid.items.len() && grid.items[k][0] == key {
                    let j = grid.items[k][1] as usize;
                    k += 1;
                    let c = (particles[j].position * p.particle_inv_cell).floor().as_ivec3();
                    if c == glam::IVec3::new(x, y, z) {
                        touch(j);
                    }
                }
            }
        }
    }
}

/// The largest finite particle speed, m/s (zero without particles). Twin of
/// `particle_speed_bound`, which takes the maximum of the speeds' bit patterns: for
/// non-negative floats the same order.
fn fastest_particle(particles: &[GpuParticle]) -> f32 {
    particles.iter().map(|q| q.velocity.length()).filter(|s| *s <= f32::MAX).fold(0.0, f32::max)
}

/// The particle-body contacts of a substep: each body counts the particles it touches, the
/// counts are scanned into starts, then each body lists its particles and takes one slot of
/// each, while the particle has one: the bodies come in index order, so a particle keeps those
/// of smallest index. Twin of `body_particle_count`, the scan, `body_particle_fill` (whose
/// atomic minima keep the same bodies, whatever order the threads come in) and
/// `particle_body_settle` (which puts them in order).
fn find_body_contacts(
    p: &StepParams,
    geometry: &[Vec4],
    tables: &BodyTables,
    particles: &[GpuParticle],
    grid: &mut ParticleGrid,
) {
    let n = particles.len();
    let bodies = tables.bodies.len();
    grid.fastest = fastest_particle(particles);
    let mut starts = std::mem::take(&mut grid.body_starts);
    starts.clear();
    for b in 0..bodies {
        let mut count = 0u32;
        for_each_particle_touching(p, geometry, tables, particles, grid, b, |_, _, _| count += 1);
        starts.push(count);
    }
    let mut total = 0u32;
    for s in starts.iter_mut() {
        let count = *s;
        *s = total;
        total += count;
    }
    starts.push(total);
    let capacity = p.particle_body_capacity as usize;
    let mut list = std::mem::take(&mut grid.body_list);
    list.clear();
    list.resize((total as usize).min(capacity), 0);
    let mut slot_counts = std::mem::take(&mut grid.slot_counts);
    slot_counts.clear();
    slot_counts.resize(n, 0);
    let mut slots = std::mem::take(&mut grid.slots);
    slots.clear();
    slots.resize(n * SLOTS, BodySlot::default());
    let mut dropped = 0u32;
    for (b, &start) in starts.iter().take(bodies).enumerate() {
        let mut e = start as usize;
        for_each_particle_touching(p, geometry, tables, particles, grid, b, |j, normal, lever| {
            if e >= capacity {
                dropped += 1;
                return;
            }
            list[e] = j as u32;
            e += 1;
            // Bodies come in index order, so a particle keeps those of smallest index, sorted
            // (the GPU's `keep_smallest` and `particle_body_settle`).
            let k = slot_counts[j] as usize;
            slot_counts[j] += 1;
            if k < SLOTS {
                slots[j * SLOTS + k] = BodySlot { body: b as u32, normal, lever, ..BodySlot::default() };
            } else {
                dropped += 1;
            }
        });
    }
    grid.body_starts = starts;
    grid.body_list = list;
    grid.slot_counts = slot_counts;
    grid.slots = slots;
    grid.dropped = dropped;
}

/// Body `b`'s motion as the particles see it: velocity, inverse mass and world inverse inertia
/// (zero for static and kinematic bodies).
fn body_motion(tables: &BodyTables, b: usize) -> (GpuBody, f32, Mat3) {
    let body = tables.bodies[b];
    let props = tables.props[b];
    if props.kind == KIND_DYNAMIC {
        (body, body.inv_mass, world_inverse_inertia(body.orientation, props.inv_inertia))
    } else {
        (body, 0.0, Mat3::ZERO)
    }
}

/// A particle's separation from its body slot `slot`: from the body's surface point (the body
/// does not move during the particle stages) along the detection normal.
#[inline]
fn slot_separation(tables: &BodyTables, me: &GpuParticle, slot: &BodySlot) -> f32 {
    let surface = tables.bodies[slot.body as usize].position + slot.lever;
    slot.normal.dot(me.position - surface) - me.radius
}

/// What a body's pass over its particle contacts does ([`body_contacts_pass`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum BodyPass {
    /// One velocity iteration: contact velocities removed, overlaps pushed out, friction.
    Velocity,
    /// The restitution pass after the velocity iterations.
    Restitution,
}

/// One Gauss-Seidel pass of every body over its particle contacts, in the order of its list:
/// each contact's impulse from the particle's velocity at the start of the iteration and the
/// body's velocity as the pass has left it, applied to the body at once and stored in the
/// particle's slot for the particle to apply with its Jacobi change. The particle takes part
/// with its mass share (`m / n` over its `n` contacts), the body whole: a body with hundreds
/// of particle contacts then converges like a body on the ground, where a mass-split Jacobi
/// body would move by a fraction of what each contact asks per iteration (a box on a layer of
/// particles sat 2 mm deep at 2 iterations, 0.1 mm at 8). A particle held by a static collider
/// against the push counts as immovable and the body takes the whole reaction; static and
/// kinematic bodies take no impulse and only push.
///
/// [`BodyPass::Velocity`]: an overlap is removed by a velocity bias at the body-body contacts'
/// rate, capped at the largest push-out speed, not in positions: a particle pinned between a
/// body and the floor cannot move out of the body, so the body must, and only a velocity
/// reaches it; Coulomb friction against the normal impulse.
/// [`BodyPass::Restitution`]: a contact whose particle approached faster than the threshold at
/// the start of the substep (`approach`) and would have reached the body within it gets the
/// normal impulse that makes it leave at `e` times that speed, `e` the larger of the
/// particles' and the body's restitution (bodies with `e = 0` are skipped).
///
/// Twin of `body_particle_pass` (kernels `body_particle_solve`, `body_particle_restitution`).
fn body_contacts_pass(
    p: &StepParams,
    geometry: &[Vec4],
    colliders: &[GpuCollider],
    tables: &mut BodyTables,
    particles: &[GpuParticle],
    grid: &mut ParticleGrid,
    pass: BodyPass,
) {
    let capacity = grid.body_list.len();
    for b in 0..tables.bodies.len() {
        let restitution = p.particle_restitution.max(tables.props[b].restitution);
        if pass == BodyPass::Restitution && restitution <= 0.0 {
            continue;
        }
        let (mut body, inv_mass, inv_inertia) = body_motion(tables, b);
        let friction = (p.particle_friction * tables.props[b].friction).sqrt();
        let (start, end) = (grid.body_starts[b] as usize, (grid.body_starts[b + 1] as usize).min(capacity));
        for e in start.min(end)..end {
            let j = grid.body_list[e] as usize;
            let used = (grid.slot_counts[j] as usize).min(SLOTS);
            let Some(k) = grid.slots[j * SLOTS..][..used].iter().position(|s| s.body == b as u32) else { continue };
            let slot = grid.slots[j * SLOTS + k];
            let me = particles[j];
            let n = slot.normal;
            let s = slot_separation(tables, &me, &slot);
            if pass == BodyPass::Restitution
                && !(slot.approach < -p.restitution_threshold && slot.approach * p.h + s < 0.0)
            {
                continue;
            }
            let rn = slot.lever.cross(n);
            let body_share = inv_mass + rn.dot(inv_inertia * rn);
            let support = support_normal(p, geometry, colliders, &me, n);
            let supported = support != Vec3::ZERO;
            let mut impulse = Vec3::ZERO;
            if !(supported && body_share == 0.0) {
                let my_share = if supported { 0.0 } else { grid.counts[j].max(1) as f32 / me.mass };
                let mass = 1.0 / (my_share + body_share);
                // A supported particle does not move into its support, whatever its velocity
                // says now (the collider takes that motion out in the same iteration).
                let velocity = me.velocity - support * me.velocity.dot(support).min(0.0);
                let dvel = velocity - (body.linear_velocity + body.angular_velocity.cross(slot.lever));
                let vn = dvel.dot(n);
                impulse = match pass {
                    BodyPass::Velocity => {
                        let bias =
                            if s > 0.0 { s * p.inv_h } else { (s * p.contact_bias_rate).max(-p.max_push_velocity) };
                        let lambda = (-mass * (vn + bias)).max(0.0);
                        friction_impulse(lambda * n, dvel - vn * n, friction * lambda, mass)
                    }
                    BodyPass::Restitution => n * (-mass * (vn + restitution * slot.approach)).max(0.0),
                };
                body.linear_velocity -= inv_mass * impulse;
                body.angular_velocity -= inv_inertia * slot.lever.cross(impulse);
            }
            grid.slots[j * SLOTS + k].impulse = if supported { Vec3::ZERO } else { impulse };
        }
        if tables.props[b].kind == KIND_DYNAMIC {
            tables.bodies[b].linear_velocity = body.linear_velocity;
            tables.bodies[b].angular_velocity = body.angular_velocity;
        }
    }
}

/// Adds each particle's Jacobi change and the impulses its body slots hold (then zeroes them).
fn apply_changes(particles: &mut [GpuParticle], grid: &mut ParticleGrid, changes: &[Vec3], with_bodies: bool) {
    for (i, (particle, change)) in particles.iter_mut().zip(changes).enumerate() {
        let mut dv = *change;
        if with_bodies {
            for slot in &mut grid.slots[i * SLOTS..][..(grid.slot_counts[i] as usize).min(SLOTS)] {
                dv += slot.impulse * (1.0 / particle.mass);
                slot.impulse = Vec3::ZERO;
            }
        }
        particle.velocity += dv;
    }
}

/// The normal of a static collider that holds particle `me` against a push along `n`, or zero:
/// the first collider it touches (within the margin) whose normal is more than 60° against `n`.
/// Such a particle passes a body's push straight on to the static geometry (shock propagation,
/// Guendelman et al. 2003): in that contact it counts as immovable and takes no impulse, and
/// the body the whole reaction. Without it a heavy body on a layer of light particles on the
/// floor sinks through them, since each Jacobi iteration moves only a particle's mass share of
/// the body's momentum on to the floor. Twin of `particle_support`.
fn support_normal(p: &StepParams, geometry: &[Vec4], colliders: &[GpuCollider], me: &GpuParticle, n: Vec3) -> Vec3 {
    for c in colliders {
        let (d, normal) = collider_distance(geometry, c, me.position);
        if d - me.radius < p.particle_margin && normal.dot(n) < -0.5 {
            return normal;
        }
    }
    Vec3::ZERO
}

/// The particle contacts of a substep: the grid of the substep's positions, the particle-body
/// contacts found from the bodies' side, gravity, `particle_iterations` Jacobi iterations
/// pushing overlapping particles apart, the warm start, then `particle_iterations` Jacobi iterations over the contact
/// velocities, bodies included. It runs after the bodies' velocity solve and before
/// their positions move, so particles and bodies meet at the same instant and what the
/// particles do to a body's velocity moves it in the same substep. Twin of the kernels
/// `particle_hash`, the radix sort, `particle_cell_start`, `body_particle_count`, the scan,
/// `body_particle_fill`, `particle_count`, `particle_separate`, `particle_warm_start` and `particle_collide` with their `particle_apply_*`, and
/// `body_particle_solve` before `particle_apply_velocity`.
pub(crate) fn particle_contacts(
    p: &StepParams,
    geometry: &[Vec4],
    colliders: &[GpuCollider],
    tables: &mut BodyTables,
    particles: &mut [GpuParticle],
    grid: &mut ParticleGrid,
    parallel: bool,
) {
    let colliders = &colliders[..p.collider_count as usize];
    let with_bodies = p.particle_body_contacts != 0;
    grid.items.clear();
    grid.items.extend(particles.iter().enumerate().map(|(i, q)| [cell_hash(p, q.position), i as u32]));
    // (hash, particle) pairs are distinct: an unstable sort gives a stable sort by hash's
    // order, without its allocation.
    if parallel {
        grid.items.par_sort_unstable();
    } else {
        grid.items.sort_unstable();
    }
    grid.cell_start.clear();
    grid.cell_start.resize((p.particle_hash_mask + 1) as usize, EMPTY_CELL);
    for k in 0..grid.items.len() {
        let key = grid.items[k][0];
        if k == 0 || grid.items[k - 1][0] != key {
            grid.cell_start[key as usize] = k as u32;
        }
    }
    if with_bodies {
        find_body_contacts(p, geometry, tables, particles, grid);
    }
    // The contacts within reach and each particle's closest pairs.
    let (mut counts, mut selected) = (std::mem::take(&mut grid.counts), std::mem::take(&mut grid.selected));
    counts.resize(particles.len(), 0);
    selected.resize(particles.len() * KEPT, 0);
    let mut in_order = std::mem::take(&mut grid.in_order);
    let grid_read = &*grid;
    in_cell_order(&grid_read.items, parallel, &mut in_order.counts, |i| {
        let mut mine = [0u32; KEPT];
        let own = gather(p, geometry, colliders, particles, grid_read, i, Gather::Count, &mut [], &mut mine).1;
        (if with_bodies { own + grid_read.slot_counts[i].min(PARTICLE_BODY_SLOTS) } else { own }, mine)
    });
    for (item, (count, mine)) in grid_read.items.iter().zip(in_order.counts.drain(..)) {
        let i = item[1] as usize;
        counts[i] = count;
        selected[i * KEPT..][..KEPT].copy_from_slice(&mine);
    }
    (grid.counts, grid.selected) = (counts, selected);
    grid.contacts.resize(particles.len() * KEPT, GpuParticleContact::default());
    grid.start.clear();
    grid.start.extend(particles.iter().map(|q| q.velocity));
    // Gravity (with the counts on the GPU, so the sums round alike).
    for particle in particles.iter_mut() {
        particle.velocity += p.h * p.gravity;
    }
    if with_bodies {
        // Each slot's approach velocity, both sides after gravity (the bodies took theirs
        // before their solve), so a body resting on particles does not seem to approach them.
        for (i, q) in particles.iter().enumerate() {
            for slot in &mut grid.slots[i * SLOTS..][..(grid.slot_counts[i] as usize).min(SLOTS)] {
                let body = &tables.bodies[slot.body as usize];
                let v = body.linear_velocity + body.angular_velocity.cross(slot.lever);
                slot.approach = (q.velocity - v).dot(slot.normal);
            }
        }
    }
    let mut scratch = std::mem::take(&mut grid.scratch);
    for _ in 0..p.particle_iterations {
        gather_all(
            p,
            geometry,
            colliders,
            particles,
            grid,
            Gather::Position,
            &mut scratch,
            &mut in_order.changes,
            parallel,
        );
        for (particle, change) in particles.iter_mut().zip(&scratch) {
            let dv = *change * p.inv_h;
            particle.position += *change;
            particle.velocity += dv;
        }
    }
    // The warm start, which also keeps this substep's contacts (the positions stay put through
    // the velocity iterations, so they find the same contacts in the same order).
    let mut kept = std::mem::take(&mut grid.contacts);
    gather_kept(
        p,
        geometry,
        colliders,
        particles,
        grid,
        Gather::WarmStart,
        &mut scratch,
        &mut kept,
        &mut in_order.kept,
        parallel,
    );
    apply_changes(particles, grid, &scratch, with_bodies);
    for _ in 0..p.particle_iterations {
        gather_kept(
            p,
            geometry,
            colliders,
            particles,
            grid,
            Gather::Velocity,
            &mut scratch,
            &mut kept,
            &mut in_order.kept,
            parallel,
        );
        if with_bodies {
            body_contacts_pass(p, geometry, colliders, tables, particles, grid, BodyPass::Velocity);
        }
        apply_changes(particles, grid, &scratch, with_bodies);
    }
    let bodies_bounce =
        with_bodies && (p.particle_restitution > 0.0 || tables.props.iter().any(|props| props.restitution > 0.0));
    if p.particle_restitution > 0.0 || bodies_bounce {
        scratch.clear();
        if p.particle_restitution > 0.0 {
            gather_all(
                p,
                geometry,
                colliders,
                particles,
                grid,
                Gather::Restitution,
                &mut scratch,
                &mut in_order.changes,
                parallel,
            );
        } else {
            scratch.resize(particles.len(), Vec3::ZERO);
        }
        if bodies_bounce {
            body_contacts_pass(p, geometry, colliders, tables, particles, grid, BodyPass::Restitution);
        }
        apply_changes(particles, grid, &scratch, with_bodies);
    }
    grid.scratch = scratch;
    grid.contacts = kept;
    grid.in_order = in_order;
}
