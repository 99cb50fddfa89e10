//! Graph coloring of constraints, the algorithm both backends run.
//!
//! A constraint joins two bodies; only dynamic bodies are vertices of the conflict graph
//! (static and kinematic bodies have infinite mass and can be shared freely, so the ground costs
//! no colors). Two constraints conflict when they share a dynamic body. The coloring is
//! deterministic and parallel, in rounds that each map to a few GPU dispatches:
//!
//! 1. seeds (last step's colors) are kept unless a lower-indexed constraint on a shared body has
//!    the same color;
//! 2. every colored constraint whose bodies leave a lower color free proposes the lowest of
//!    them, and takes it unless a lower-indexed constraint on a shared body proposes the same
//!    one (a losing constraint keeps its color, which no neighbour can have taken: it was held
//!    on their shared body). Step by step a settled scene's colors sink to where no constraint
//!    can go lower, so its sweeps use fewer colors (the large pyramid 9 instead of 12);
//! 3. each round, every uncolored constraint takes one of the lowest few colors that no colored
//!    constraint on its bodies holds (a per-body mask, gathered), chosen by a hash of its index
//!    and the round so that neighbours rarely pick the same one, then conflicts are resolved as
//!    in 1 (taking simply the lowest free color makes all neighbours collide on it and colors one
//!    of them per round);
//! 4. after the last round, uncolored constraints overflow (to mass-splitting Jacobi).
//!
//! Every decision reads a snapshot of the previous pass, so a GPU running each pass as one
//! dispatch computes exactly these colors.

use rayon::prelude::*;

/// `u32::MAX`: no color (overflow).
pub const NO_COLOR: u32 = u32::MAX;

/// Reusable buffers of [`color_graph`].
#[derive(Clone, Debug, Default)]
pub struct ColoringScratch {
    offsets: Vec<u32>,
    adjacency: Vec<u32>,
    masks: Vec<u32>,
    before: Vec<u32>,
    /// The uncolored constraints at the start of a round.
    pending: Vec<u32>,
}

impl ColoringScratch {
    /// The constraints touching dynamic body `body`, ascending, from the last call.
    pub fn constraints_of(&self, body: usize) -> &[u32] {
        &self.adjacency[self.offsets[body] as usize..self.offsets[body + 1] as usize]
    }
}

/// Colors `constraints` (pairs of body indices) over `dynamic.len()` bodies in place of
/// `colors`, which holds the seeds (or [`NO_COLOR`]) on entry. Colors are below `max_colors`
/// (at most 32); constraints left without one after `rounds` rounds get [`NO_COLOR`].
/// `parallel` splits each pass over the current rayon pool's threads (every decision reads the
/// previous pass, so the colors are the same).
pub fn color_graph(
    constraints: &[[u32; 2]],
    dynamic: &[bool],
    max_colors: u32,
    rounds: u32,
    colors: &mut [u32],
    scratch: &mut ColoringScratch,
    parallel: bool,
) {
    let bodies = dynamic.len();
    // Body -> constraints (CSR, ascending) by counting sort.
    let s = scratch;
    s.offsets.clear();
    s.offsets.resize(bodies + 1, 0);
    for pair in constraints {
        for &body in pair {
            if dynamic[body as usize] {
                s.offsets[body as usize + 1] += 1;
            }
        }
    }
    for i in 0..bodies {
        s.offsets[i + 1] += s.offsets[i];
    }
    s.adjacency.clear();
    s.adjacency.resize(s.offsets[bodies] as usize, 0);
    s.masks.clear();
    s.masks.resize(bodies, 0);
    for (i, pair) in constraints.iter().enumerate() {
        for &body in pair {
            if dynamic[body as usize] {
                let at = s.offsets[body as usize] + s.masks[body as usize];
                s.adjacency[at as usize] = i as u32;
                s.masks[body as usize] += 1;
            }
        }
    }
    let palette = if max_colors >= 32 { u32::MAX } else { (1u32 << max_colors) - 1 };
    for c in colors.iter_mut() {
        if *c >= max_colors {
            *c = NO_COLOR;
        }
    }
    if rounds == 0 {
        colors.fill(NO_COLOR);
        return;
    }
    resolve_conflicts(constraints, dynamic, colors, s, parallel);
    descend(constraints, dynamic, colors, s, parallel);
    for round in 0..rounds {
        s.pending.clear();
        s.pending.extend((0..colors.len() as u32).filter(|&i| colors[i as usize] == NO_COLOR));
        // With every constraint colored and no conflict left, the remaining rounds change
        // nothing (the GPU runs them all; here they are skipped).
        if s.pending.is_empty() {
            break;
        }
        // A few left (a settled scene's new contacts, or the overflow a full palette leaves
        // every round): only they and their bodies are visited.
        if s.pending.len() * 8 <= colors.len() {
            pending_round(constraints, dynamic, palette, round, colors, s);
            continue;
        }
        body_masks(colors, s, parallel);
        let masks = &s.masks;
        let choose = |(i, (c, pair)): (usize, (&mut u32, &[u32; 2]))| {
            if *c != NO_COLOR {
                return;
            }
            let free = !held_on(pair, dynamic, masks) & palette;
            if free != 0 {
                *c = pick(free, i as u32, round);
            }
        };
        if parallel {
            colors.par_iter_mut().zip(constraints).enumerate().with_min_len(PARALLEL_ITEMS).for_each(choose);
        } else {
            colors.iter_mut().zip(constraints).enumerate().for_each(choose);
        }
        resolve_conflicts(constraints, dynamic, colors, s, parallel);
    }
}

/// The masks of the colors held on each body, into `s.masks`.
fn body_masks(colors: &[u32], s: &mut ColoringScratch, parallel: bool) {
    let (offsets, adjacency) = (&s.offsets, &s.adjacency);
    let mask_of = |(body, mask): (usize, &mut u32)| {
        *mask = 0;
        for &i in &adjacency[offsets[body] as usize..offsets[body + 1] as usize] {
            if colors[i as usize] != NO_COLOR {
                *mask |= 1 << colors[i as usize];
            }
        }
    };
    if parallel {
        s.masks.par_iter_mut().enumerate().with_min_len(PARALLEL_ITEMS).for_each(mask_of);
    } else {
        s.masks.iter_mut().enumerate().for_each(mask_of);
    }
}

/// Step 2 of [`color_graph`], the descent: each colored constraint proposes the lowest color
/// below its own that neither of its dynamic bodies holds (`s.before` takes the proposals, a
/// constraint's own color where it has none), and takes it unless a lower-indexed constraint
/// on a shared dynamic body proposes the same color. No constraint can propose a color its
/// neighbour holds, so the coloring stays valid, and a constraint that loses keeps its own.
fn descend(constraints: &[[u32; 2]], dynamic: &[bool], colors: &mut [u32], s: &mut ColoringScratch, parallel: bool) {
    body_masks(colors, s, parallel);
    s.before.clear();
    s.before.resize(colors.len(), NO_COLOR);
    let (masks, held) = (&s.masks, &*colors);
    let propose = |(i, (proposal, pair)): (usize, (&mut u32, &[u32; 2]))| {
        let c = held[i];
        *proposal = c;
        if c != NO_COLOR {
            let below = !held_on(pair, dynamic, masks) & ((1u32 << c) - 1);
            if below != 0 {
                *proposal = below.trailing_zeros();
            }
        }
    };
    if parallel {
        s.before.par_iter_mut().zip(constraints).enumerate().with_min_len(PARALLEL_ITEMS).for_each(propose);
    } else {
        s.before.iter_mut().zip(constraints).enumerate().for_each(propose);
    }
    let (proposals, offsets, adjacency) = (&s.before, &s.offsets, &s.adjacency);
    let settle = |(i, (color, pair)): (usize, (&mut u32, &[u32; 2]))| {
        let x = proposals[i];
        if x != *color && !lower_has(i, pair, dynamic, (offsets, adjacency), proposals, x) {
            *color = x;
        }
    };
    if parallel {
        colors.par_iter_mut().zip(constraints).enumerate().with_min_len(PARALLEL_ITEMS).for_each(settle);
    } else {
        colors.iter_mut().zip(constraints).enumerate().for_each(settle);
    }
}

/// One round of [`color_graph`] over its uncolored constraints, `s.pending` (ascending),
/// alone: the colors of the whole round. The masks are those of the uncolored constraints'
/// bodies, the only ones read; and only a constraint colored in this round can lose its color,
/// to a lower one colored in this round too: a constraint picks none of the colors its
/// neighbours held, and those were in conflict with none below them.
fn pending_round(
    constraints: &[[u32; 2]],
    dynamic: &[bool],
    palette: u32,
    round: u32,
    colors: &mut [u32],
    s: &mut ColoringScratch,
) {
    let (offsets, adjacency) = (&s.offsets, &s.adjacency);
    let neighbours = |body: u32| &adjacency[offsets[body as usize] as usize..offsets[body as usize + 1] as usize];
    for &i in &s.pending {
        for &body in &constraints[i as usize] {
            if dynamic[body as usize] {
                let held = neighbours(body).iter().map(|&j| colors[j as usize]).filter(|&c| c != NO_COLOR);
                s.masks[body as usize] = held.fold(0, |mask, c| mask | 1 << c);
            }
        }
    }
    for &i in &s.pending {
        let pair = &constraints[i as usize];
        let free = !held_on(pair, dynamic, &s.masks) & palette;
        if free != 0 {
            colors[i as usize] = pick(free, i, round);
        }
    }
    // Decided on this snapshot, then applied (`resolve_conflicts`).
    s.before.clear();
    for &i in &s.pending {
        let (c, pair) = (colors[i as usize], &constraints[i as usize]);
        if c != NO_COLOR && lower_has(i as usize, pair, dynamic, (offsets, adjacency), colors, c) {
            s.before.push(i);
        }
    }
    for &i in &s.before {
        colors[i as usize] = NO_COLOR;
    }
}

/// The colors held on the dynamic bodies of `pair`, by the per-body `masks` (twin of
/// `held_on_bodies` in shaders/manifolds.wgsl).
fn held_on(pair: &[u32; 2], dynamic: &[bool], masks: &[u32]) -> u32 {
    pair.iter().filter(|&&b| dynamic[b as usize]).fold(0, |m, &b| m | masks[b as usize])
}

/// Whether a constraint of lower index than `i` on one of the dynamic bodies of `pair` (its
/// own) has color `c` in `snapshot`; `lists` is the body -> constraints CSR (offsets, then the
/// ascending constraints). Twin of `lower_has` in shaders/manifolds.wgsl.
fn lower_has(i: usize, pair: &[u32; 2], dynamic: &[bool], lists: (&[u32], &[u32]), snapshot: &[u32], c: u32) -> bool {
    let (offsets, adjacency) = lists;
    pair.iter().filter(|&&b| dynamic[b as usize]).any(|&b| {
        let list = &adjacency[offsets[b as usize] as usize..offsets[b as usize + 1] as usize];
        list.iter().take_while(|&&j| (j as usize) < i).any(|&j| snapshot[j as usize] == c)
    })
}

/// How many of the lowest free colors a constraint chooses among.
pub const COLOR_SPREAD: u32 = 4;

/// One of the lowest `COLOR_SPREAD` set bits of `free` (non-zero), chosen by a hash of the
/// constraint and the round.
pub fn pick(free: u32, constraint: u32, round: u32) -> u32 {
    let hash = (constraint ^ round.wrapping_mul(0x9e37_79b9)).wrapping_mul(0x85eb_ca6b);
    let skip = (hash >> 16) % COLOR_SPREAD.min(free.count_ones());
    let mut bits = free;
    for _ in 0..skip {
        bits &= bits - 1;
    }
    bits.trailing_zeros()
}

/// A constraint loses its color when a lower-indexed constraint on one of its dynamic bodies
/// has the same color (decided on a snapshot).
fn resolve_conflicts(
    constraints: &[[u32; 2]],
    dynamic: &[bool],
    colors: &mut [u32],
    s: &mut ColoringScratch,
    parallel: bool,
) {
    s.before.clear();
    s.before.extend_from_slice(colors);
    let (before, offsets, adjacency) = (&s.before, &s.offsets, &s.adjacency);
    let resolve = |(i, (color, pair)): (usize, (&mut u32, &[u32; 2]))| {
        let c = before[i];
        if c != NO_COLOR && lower_has(i, pair, dynamic, (offsets, adjacency), before, c) {
            *color = NO_COLOR;
        }
    };
    if parallel {
        colors.par_iter_mut().zip(constraints).enumerate().with_min_len(PARALLEL_ITEMS).for_each(resolve);
    } else {
        colors.iter_mut().zip(constraints).enumerate().for_each(resolve);
    }
}

/// Constraints or bodies per task when a pass is split over threads.
const PARALLEL_ITEMS: usize = 1024;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenes::Lcg;

    /// No color holds two constraints on one dynamic body; every constraint has a color or
    /// overflows.
    fn check(constraints: &[[u32; 2]], dynamic: &[bool], colors: &[u32], max_colors: u32) {
        for (i, a) in constraints.iter().enumerate() {
            assert!(colors[i] == NO_COLOR || colors[i] < max_colors);
            for (j, b) in constraints.iter().enumerate().skip(i + 1) {
                let shared = a.iter().any(|x| dynamic[*x as usize] && b.contains(x));
                assert!(
                    !(shared && colors[i] != NO_COLOR && colors[i] == colors[j]),
                    "{i} and {j} share a body and color {}",
                    colors[i]
                );
            }
        }
    }

    /// Three constraints per body between random pairs of distinct bodies, lower index first.
    fn random_constraints(rng: &mut Lcg, bodies: usize) -> Vec<[u32; 2]> {
        (0..bodies * 3)
            .map(|_| {
                let a = ((rng.next_centered() + 0.5) * (bodies - 1) as f32) as u32;
                let b = ((rng.next_centered() + 0.5) * (bodies - 1) as f32) as u32;
                [a.min(b), a.max(b).max(a.min(b) + 1)]
            })
            .collect()
    }

    #[test]
    fn random_graphs_are_colored_validly() {
        let mut rng = Lcg(3);
        for trial in 0..20 {
            let bodies = 50 + trial * 10;
            let dynamic: Vec<bool> = (0..bodies).map(|i| i % 7 != 0).collect();
            let constraints = random_constraints(&mut rng, bodies);
            let mut colors = vec![NO_COLOR; constraints.len()];
            let mut scratch = ColoringScratch::default();
            color_graph(&constraints, &dynamic, 24, 8, &mut colors, &mut scratch, false);
            check(&constraints, &dynamic, &colors, 24);
            let overflow = colors.iter().filter(|c| **c == NO_COLOR).count();
            assert!(overflow * 20 < constraints.len(), "trial {trial}: {overflow} of {} overflow", constraints.len());
            // Seeded with its own result, no color rises and no more overflow.
            let mut again = colors.clone();
            color_graph(&constraints, &dynamic, 24, 1, &mut again, &mut scratch, false);
            check(&constraints, &dynamic, &again, 24);
            assert!(again.iter().filter(|c| **c == NO_COLOR).count() <= overflow);
            for (a, b) in colors.iter().zip(&again) {
                assert!(*a == NO_COLOR || b <= a, "a seeded color rose from {a} to {b}");
            }
            // Seeded again and again, the descent stops where every color below a
            // constraint's own is held on one of its bodies.
            let mut steps = 0;
            loop {
                let last = again.clone();
                color_graph(&constraints, &dynamic, 24, 1, &mut again, &mut scratch, false);
                check(&constraints, &dynamic, &again, 24);
                steps += 1;
                if again == last {
                    break;
                }
                assert!(steps < 30, "trial {trial}: still descending after {steps} steps");
            }
            let on =
                |i: usize, j: usize| constraints[i].iter().any(|b| dynamic[*b as usize] && constraints[j].contains(b));
            for (i, &c) in again.iter().enumerate().filter(|(_, c)| **c != NO_COLOR) {
                for lower in 0..c {
                    let held = (0..again.len()).any(|j| j != i && on(i, j) && again[j] == lower);
                    assert!(held, "trial {trial}: constraint {i} of color {c} could take {lower}");
                }
            }
        }
    }

    /// The rounds as the module's doc states them, every one over every constraint and body
    /// (what the GPU runs), for comparison.
    fn color_by_the_rules(
        constraints: &[[u32; 2]],
        dynamic: &[bool],
        max_colors: u32,
        rounds: u32,
        colors: &mut [u32],
    ) {
        let on = |i: usize, j: usize| constraints[i].iter().any(|b| dynamic[*b as usize] && constraints[j].contains(b));
        let resolve = |colors: &mut [u32]| {
            let before = colors.to_vec();
            for i in 0..colors.len() {
                if before[i] != NO_COLOR && (0..i).any(|j| on(i, j) && before[j] == before[i]) {
                    colors[i] = NO_COLOR;
                }
            }
        };
        for c in colors.iter_mut().filter(|c| **c >= max_colors) {
            *c = NO_COLOR;
        }
        resolve(colors);
        // The descent: the lowest color below its own that no neighbour holds, unless a
        // lower-indexed neighbour proposes the same.
        let held = colors.to_vec();
        let proposals: Vec<u32> = (0..held.len())
            .map(|i| {
                if held[i] == NO_COLOR {
                    return NO_COLOR;
                }
                let used = (0..held.len())
                    .filter(|&j| j != i && on(i, j) && held[j] != NO_COLOR)
                    .fold(0u32, |m, j| m | 1 << held[j]);
                let below = !used & ((1u32 << held[i]) - 1);
                if below != 0 { below.trailing_zeros() } else { held[i] }
            })
            .collect();
        for i in 0..held.len() {
            if proposals[i] != held[i] && !(0..i).any(|j| on(i, j) && proposals[j] == proposals[i]) {
                colors[i] = proposals[i];
            }
        }
        for round in 0..rounds {
            let before = colors.to_vec();
            for i in 0..colors.len() {
                let used = (0..colors.len())
                    .filter(|&j| j != i && on(i, j) && before[j] != NO_COLOR)
                    .fold(0u32, |m, j| m | 1 << before[j]);
                let free = !used & ((1u64 << max_colors) - 1) as u32;
                if before[i] == NO_COLOR && free != 0 {
                    colors[i] = pick(free, i as u32, round);
                }
            }
            resolve(colors);
        }
    }

    /// The rounds that visit only the uncolored constraints (`pending_round`) give the colors
    /// of the full rounds: random graphs, some seeded with stale colors, with palettes small
    /// enough that constraints overflow round after round.
    #[test]
    fn rounds_over_the_uncolored_alone_give_the_full_rounds_colors() {
        let mut rng = Lcg(11);
        let mut scratch = ColoringScratch::default();
        let mut overflowed = 0;
        for trial in 0..24 {
            let bodies = 40 + trial * 5;
            let dynamic: Vec<bool> = (0..bodies).map(|i| i % 5 != 0).collect();
            let constraints = random_constraints(&mut rng, bodies);
            // Palettes of 9 to 12 colors, seeded with a coloring over one more color: the
            // constraints of the color dropped (about a tenth) start uncolored, so the rounds
            // visit only them, and some find no color round after round. Every third trial
            // starts from scratch instead (rounds over everything).
            let max_colors = 9 + trial as u32 % 4;
            let mut seeds = vec![NO_COLOR; constraints.len()];
            if trial % 3 != 0 {
                color_graph(&constraints, &dynamic, max_colors + 1, 8, &mut seeds, &mut scratch, false);
            }
            let (mut fast, mut full) = (seeds.clone(), seeds);
            color_graph(&constraints, &dynamic, max_colors, 8, &mut fast, &mut scratch, false);
            color_by_the_rules(&constraints, &dynamic, max_colors, 8, &mut full);
            assert_eq!(fast, full, "trial {trial}");
            check(&constraints, &dynamic, &fast, max_colors);
            overflowed += usize::from(fast.contains(&NO_COLOR));
        }
        assert!(overflowed >= 8, "only {overflowed} trials kept constraints in the overflow");
    }

    #[test]
    fn a_star_overflows_beyond_the_cap_and_static_hubs_cost_nothing() {
        // 300 constraints on one dynamic hub: only max_colors of them can be colored.
        let dynamic = vec![true; 301];
        let constraints: Vec<[u32; 2]> = (1..=300).map(|i| [0, i]).collect();
        let mut colors = vec![NO_COLOR; 300];
        color_graph(&constraints, &dynamic, 24, 40, &mut colors, &mut ColoringScratch::default(), false);
        check(&constraints, &dynamic, &colors, 24);
        assert_eq!(colors.iter().filter(|c| **c != NO_COLOR).count(), 24);
        // A static hub is no vertex: one round colors all 300, among the lowest few colors.
        let mut dynamic = dynamic;
        dynamic[0] = false;
        let mut colors = vec![NO_COLOR; 300];
        color_graph(&constraints, &dynamic, 24, 1, &mut colors, &mut ColoringScratch::default(), false);
        assert!(colors.iter().all(|c| *c < COLOR_SPREAD));
    }
}
