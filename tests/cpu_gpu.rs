//! The GPU path against the CPU reference path, and the GPU against itself.

mod common;

use glam::Vec2;
use signorini::prelude::*;
use signorini::scenes::{FallingBodies, falling_bodies};

/// 1,000 bodies onto two planes, planes only: the per-body static stages (body-body contacts
/// are compared on the rain below).
fn scene(tumble: bool, seed: u32) -> World {
    let mut desc = WorldDesc::default();
    desc.solver.body_contacts = false;
    falling_bodies(desc, FallingBodies { count: 1000, ramp: true, seed, damping: 0.0, tumble }).unwrap()
}

/// 1,000 mixed bodies (spheres, boxes, capsules, hulls) dropped onto a floor and a ramp for
/// 300 steps (5 s): the positions agree within 1e-3 m on at least 95 % of the bodies, and
/// every body that disagrees is shown, without the GPU, to be one whose motion amplifies
/// rounding; the contact counts agree up to what the
/// disagreeing bodies can hold.
///
/// Why not every body: the two paths run the same f32 operations in the same order, but a
/// shader compiler may contract `a * b + c` into one rounding and WGSL cannot forbid it
/// (`gpu_math` measures it: lavapipe contracts inside `rotate`, GL's llvmpipe in `dot`), so
/// the paths differ in the last bits. A box rocking on an edge of the ramp grows such a
/// difference step by step, and when it finally slaps down one path sees the impact a step
/// before the other: 7 mm apart at rest. No two implementations that round differently agree
/// on those bodies. Which bodies they are is measured independently: six CPU runs with
/// initial velocities kicked by 1e-6 relative (the GPU's rounding level). A GPU that solved
/// anything differently would disagree on bodies those runs leave alone, and fail.
#[test]
fn cpu_and_gpu_agree_on_1000_falling_bodies() {
    let Some(ctx) = common::gpu() else { return };
    let world = scene(false, 7);
    let mut cpu = CpuSolver::new(&world).unwrap();
    let mut gpu = GpuSolver::new(ctx, &world).unwrap();
    let mut ensemble = common::kicked_ensemble(&world);
    let capacity: Vec<usize> = (0..world.body_count())
        .map(|i| world.body(BodyHandle::from_index(i)).unwrap().shape.core_points().len() * world.plane_count())
        .collect();
    let mut sensitive = vec![false; world.body_count()];
    let mut disagree = vec![false; world.body_count()];
    let mut counts = Vec::new();
    let mut worst_agreeing = 0.0_f32;
    for round in 1..=6 {
        cpu.step_many(50);
        gpu.step_many(50);
        let (a, g) = (cpu.body_states().unwrap(), gpu.body_states().unwrap());
        for member in &mut ensemble {
            member.step_many(50);
            for (i, s) in member.body_states().unwrap().iter().enumerate() {
                sensitive[i] |= (s.position - a[i].position).length() > 1e-4;
            }
        }
        for i in 0..a.len() {
            let d = (a[i].position - g[i].position).length();
            disagree[i] |= d >= 1e-3;
            if !disagree[i] {
                worst_agreeing = worst_agreeing.max(d);
            }
        }
        counts.push((50 * round, cpu.stats().unwrap().contacts, gpu.stats().unwrap().contacts));
    }
    let disagreeing: Vec<usize> = (0..disagree.len()).filter(|&i| disagree[i]).collect();
    let unexplained: Vec<usize> = disagreeing.iter().copied().filter(|&i| !sensitive[i]).collect();
    eprintln!(
        "{} bodies agree within {worst_agreeing:e} m; {} disagree, all sensitive to 1e-6 kicks: {}; {} sensitive in all",
        1000 - disagreeing.len(),
        disagreeing.len(),
        unexplained.is_empty(),
        sensitive.iter().filter(|s| **s).count()
    );
    assert!(unexplained.is_empty(), "bodies {unexplained:?} disagree but are not sensitive to rounding");
    assert!(disagreeing.len() <= 50, "{} of 1000 bodies disagree", disagreeing.len());
    let held: usize = disagreeing.iter().map(|&i| capacity[i]).sum();
    for (steps, a, g) in counts {
        assert!(a > 0);
        assert!(a.abs_diff(g) as usize <= held, "contacts after {steps} steps: cpu {a} gpu {g}");
    }
    assert!(cpu.stats().unwrap().max_penetration < 1e-3);
    assert!(gpu.stats().unwrap().max_penetration < 1e-3);
}

/// The tumbling rain while it falls and the first bodies land (20 steps), before anything had
/// time to grow: every body agrees within 1e-4 m and the contact counts agree exactly.
#[test]
fn cpu_and_gpu_agree_on_first_landings() {
    let Some(ctx) = common::gpu() else { return };
    let world = scene(true, 7);
    let mut cpu = CpuSolver::new(&world).unwrap();
    let mut gpu = GpuSolver::new(ctx, &world).unwrap();
    for round in 1..=4 {
        cpu.step_many(5);
        gpu.step_many(5);
        assert_eq!(cpu.stats().unwrap().contacts, gpu.stats().unwrap().contacts, "after {} steps", 5 * round);
        let (a, g) = (cpu.body_states().unwrap(), gpu.body_states().unwrap());
        for (i, (x, y)) in a.iter().zip(&g).enumerate() {
            assert!((x.position - y.position).length() < 1e-4, "body {i} after {} steps", 5 * round);
        }
    }
    assert!(cpu.stats().unwrap().contacts > 0, "the test must cover landings");
}

/// Two GPU runs of the same scene give bit-identical states (no atomics, no float reductions
/// in a varying order: one thread owns each body).
#[test]
fn gpu_reruns_are_bit_identical() {
    let Some(ctx) = common::gpu() else { return };
    let world = scene(true, 11);
    let run = || {
        let mut gpu = GpuSolver::new(ctx, &world).unwrap();
        gpu.step_many(150);
        gpu.step_many(150);
        let raw = gpu.raw_bodies().unwrap();
        let stats = gpu.stats().unwrap();
        (bytemuck::cast_slice::<_, u8>(&raw).to_vec(), stats.kinetic_energy.to_bits(), stats.contacts)
    };
    let first = run();
    let second = run();
    assert!(first.0 == second.0, "GPU body states differ between two runs");
    assert_eq!(first.1, second.1, "kinetic energy differs between two runs");
    assert_eq!(first.2, second.2);
}

/// The CPU path is deterministic too, and stepping in one batch equals stepping one by one.
#[test]
fn cpu_is_deterministic_and_batching_does_not_matter() {
    let world = falling_bodies(
        WorldDesc::default(),
        FallingBodies { count: 200, ramp: true, seed: 3, damping: 0.0, tumble: true },
    )
    .unwrap();
    let mut a = CpuSolver::new(&world).unwrap();
    let mut b = CpuSolver::new(&world).unwrap();
    a.step_many(100);
    for _ in 0..100 {
        b.step();
    }
    assert!(a.raw_bodies() == b.raw_bodies());
}

/// A rain of 2,000 mixed bodies into a box, with body-body contacts, for 100 steps.
///
/// Stated tolerances. While the first bodies land (20 steps) every body agrees within 1e-3 m and the
/// contact counts within 1 %. Once it piles up, thousands of colliding tumbling bodies amplify
/// last-bit differences into different collisions, as physics does: a CPU run whose initial
/// velocities are kicked by 1e-6 ends more than 1 mm from the unkicked run for most bodies
/// (asserted below), so from then on the paths must agree on the physics: contact count within
/// 5 %, kinetic energy within 10 % plus 0.5 % of its peak (after 100 steps the pile keeps 1 % of
/// the peak; six CPU runs kicked by 1e-6 to 5e-6 spread by 0.23 % of the peak, 12 % of what is
/// left), mean height within 2 cm, the same number of colors
/// within 3, and no landing overlapping by 20 cm.
#[test]
fn cpu_and_gpu_agree_on_a_2000_body_rain() {
    let Some(ctx) = common::gpu() else { return };
    let world = signorini::scenes::rain(signorini::scenes::bench_desc(), 2000, 5).unwrap();
    let mut cpu = CpuSolver::new(&world).unwrap();
    let mut gpu = GpuSolver::new(ctx, &world).unwrap();
    let mut kicked = CpuSolver::new(&world).unwrap();
    for (i, s) in kicked.body_states().unwrap().iter().enumerate() {
        let body = BodyHandle::from_index(i);
        if world.body(body).unwrap().kind == BodyKind::Dynamic {
            kicked.set_velocity(body, s.linear_velocity * (1.0 + 1e-6), s.angular_velocity).unwrap();
        }
    }
    let mut peak_energy = 0.0_f32;
    for round in 1..=10 {
        cpu.step_many(10);
        gpu.step_many(10);
        kicked.step_many(10);
        let steps = 10 * round;
        let (a, g) = (cpu.body_states().unwrap(), gpu.body_states().unwrap());
        let (sa, sg) = (cpu.stats().unwrap(), gpu.stats().unwrap());
        peak_energy = peak_energy.max(sa.kinetic_energy);
        let close = |x: f32, y: f32, rel: f32, abs: f32| (x - y).abs() <= rel * x.abs().max(y.abs()) + abs;
        if steps <= 20 {
            for (i, (x, y)) in a.iter().zip(&g).enumerate() {
                assert!((x.position - y.position).length() < 1e-3, "body {i} after {steps} steps");
            }
            assert!(
                close(sa.contacts as f32, sg.contacts as f32, 0.01, 2.0),
                "after {steps}: {} vs {}",
                sa.contacts,
                sg.contacts
            );
        } else {
            assert!(
                close(sa.contacts as f32, sg.contacts as f32, 0.05, 10.0),
                "after {steps}: contacts {} vs {}",
                sa.contacts,
                sg.contacts
            );
            assert!(
                close(sa.kinetic_energy, sg.kinetic_energy, 0.1, 0.005 * peak_energy),
                "after {steps}: KE {} vs {}",
                sa.kinetic_energy,
                sg.kinetic_energy
            );
            let mean_y = |s: &[BodyState]| s.iter().map(|b| b.position.y).sum::<f32>() / s.len() as f32;
            assert!(
                (mean_y(&a) - mean_y(&g)).abs() < 0.02,
                "after {steps}: mean height {} vs {}",
                mean_y(&a),
                mean_y(&g)
            );
            assert!(sa.colors.abs_diff(sg.colors) <= 3, "after {steps}: colors {} vs {}", sa.colors, sg.colors);
        }
        // Bodies land at up to 12 m/s on a pile spinning at up to 6 rad/s. A manifold is found
        // once per step, so a corner that rotates in during the step is not in it: landings
        // overlap by up to 16 cm for a step or two (box-box edge contacts; the deepest overlap of
        // every step over 100 steps of ten rains of 2,000 seeded 1 to 10 on the CPU: 103 to
        // 139 mm, and 87 to 160 mm before the coarse correction became a Galerkin step) before
        // the soft contacts push them apart (0.8 to 2.9 cm left at step 100 in six kicked CPU runs).
        assert!(
            sa.max_penetration < 0.2 && sg.max_penetration < 0.2,
            "after {steps}: {} {}",
            sa.max_penetration,
            sg.max_penetration
        );
        assert!(g.iter().all(|b| b.position.is_finite() && b.linear_velocity.is_finite()));
    }
    let (a, k) = (cpu.body_states().unwrap(), kicked.body_states().unwrap());
    let moved = a.iter().zip(&k).filter(|(x, y)| (x.position - y.position).length() > 1e-3).count();
    assert!(moved > 1000, "the pile is chaotic: a 1e-6 kick moves {moved} of 2000 bodies by a millimetre");
}

/// Two GPU runs of a rain with body-body contacts are bit-identical (atomic counters only count;
/// every order is fixed by a sort or a scan).
#[test]
fn gpu_reruns_with_body_contacts_are_bit_identical() {
    let Some(ctx) = common::gpu() else { return };
    let world = signorini::scenes::rain(signorini::scenes::bench_desc(), 500, 9).unwrap();
    let run = || {
        let mut gpu = GpuSolver::new(ctx, &world).unwrap();
        gpu.step_many(60);
        bytemuck::cast_slice::<_, u8>(&gpu.raw_bodies().unwrap()).to_vec()
    };
    assert!(run() == run(), "GPU states differ between two runs");
}

/// `count` boxes of random sizes (half extents 0.15 to 0.24 m) and orientations in columns on an
/// 8 x 8 grid, `spacing.x` apart, layers `spacing.y` apart from `origin` up, over the ground,
/// each with the restitution `restitution(i)` gives the i-th.
fn box_columns(
    desc: WorldDesc,
    count: usize,
    origin: Vec3,
    spacing: Vec2,
    seed: u32,
    restitution: impl Fn(usize) -> f32,
) -> World {
    let mut world = World::new(desc).unwrap();
    signorini::scenes::add_ground(&mut world, 20.0).unwrap();
    let mut rng = signorini::scenes::Lcg(seed);
    for i in 0..count {
        let cell = Vec3::new((i % 8) as f32 * spacing.x, (i / 64) as f32 * spacing.y, ((i / 8) % 8) as f32 * spacing.x);
        let half = Vec3::new(rng.range(0.15, 0.24), rng.range(0.15, 0.24), rng.range(0.15, 0.24));
        let body = RigidBodyDesc::dynamic(Shape::cuboid(half)).position(origin + cell).orientation(rng.rotation());
        world.add_body(body.restitution(restitution(i))).unwrap();
    }
    world
}

/// Two GPU runs stay bit-identical through a step whose pairs overflow the list (the contact
/// buffers grow after it, when its count has come back): 400 boxes dropped into a tight block where each overlaps its
/// neighbours want more than the 1,024 pairs the list starts with at one a body
/// (`gpu_contacts_per_body`). Which pairs an atomic counter let in was a race, and the runs
/// parted for good at that step (`grid_write` now writes the list again, whole grid items in
/// order, when it overflowed). With the fused sweeps, `pairs_fused` writes the list again in
/// its one workgroup: the same states as the dispatches apart.
#[test]
fn gpu_reruns_are_bit_identical_when_the_pair_list_overflows() {
    let Some(ctx) = common::gpu() else { return };
    let run = |fused: bool| {
        let mut desc = signorini::scenes::bench_desc();
        desc.solver.gpu_contacts_per_body = 1;
        desc.solver.gpu_fused_sweeps = fused;
        let world = box_columns(desc, 400, Vec3::new(-2.0, 0.3, -2.0), Vec2::splat(0.5), 5, |_| 0.0);
        let mut gpu = GpuSolver::new(ctx, &world).unwrap();
        let mut dropped = 0;
        for _ in 0..12 {
            gpu.step();
            dropped += gpu.stats().unwrap().dropped;
        }
        let bits = bytemuck::cast_slice::<_, u8>(&gpu.raw_bodies().unwrap()).to_vec();
        (bits, dropped, gpu.body_states().unwrap())
    };
    let ((a, dropped, states), (b, _, _)) = (run(false), run(false));
    assert!(dropped > 0, "the pair list never overflowed");
    assert!(a == b, "GPU states differ between two runs");
    let (_, fused_dropped, fused) = run(true);
    assert!(fused_dropped > 0, "the fused run's pair list never overflowed");
    common::assert_gpu_runs_agree(ctx, &fused, &states, "fused or not, through an overflow", 1e-5, 1e-4);
}

/// Contact buffers that grow give the bits of buffers large enough from the start: 1,280
/// boxes in 64 columns of 20 fall onto the ground and onto each other, layer after layer, so
/// their pairs grow past the 1,281 the buffers start with at one pair a body
/// (`gpu_contacts_per_body`), against the same scene with room for 20 a body. One run reads
/// its statistics after every step, so the buffers grow as early as they can; another after
/// every batch of four steps, so they grow at other steps. Both grew, dropped nothing, and end
/// bit-identical to the run that never grew, because a growth carries every contact's state
/// over (warm starting, recycling, the coloring's seed) and comes before the buffers are full.
/// Before, growth waited for an overflow and restarted the warm start, so runs parted when it
/// came at different steps. (A run that never reads anything back can get so far ahead of the
/// GPU that the count arrives after the buffers have overflowed; it then reports the drops.)
#[test]
fn gpu_contact_buffers_that_grow_give_the_bits_of_buffers_large_enough() {
    let Some(ctx) = common::gpu() else { return };
    let world = |per_body: u32| {
        let mut desc = signorini::scenes::bench_desc();
        desc.solver.gpu_contacts_per_body = per_body;
        box_columns(desc, 1280, Vec3::new(-2.8, 0.4, -2.8), Vec2::new(0.8, 0.6), 11, |_| 0.0)
    };
    let bits = |gpu: &mut GpuSolver| bytemuck::cast_slice::<_, u8>(&gpu.raw_bodies().unwrap()).to_vec();
    let steps = 60;
    let mut roomy = GpuSolver::new(ctx, &world(20)).unwrap();
    roomy.step_many(steps);
    assert_eq!(roomy.contact_capacity(), (25_620, 25_620), "the ground is a body too");
    let mut early = GpuSolver::new(ctx, &world(1)).unwrap();
    assert_eq!(early.contact_capacity(), (1_281, 1_281));
    let mut most = 0;
    for step in 0..steps {
        early.step();
        let stats = early.stats().unwrap();
        assert_eq!(stats.dropped, 0, "step {step}");
        most = most.max(stats.contacts);
    }
    let mut batched = GpuSolver::new(ctx, &world(1)).unwrap();
    for _ in 0..steps / 4 {
        batched.step_many(4);
        assert_eq!(batched.stats().unwrap().dropped, 0);
    }
    let grown = (early.contact_capacity(), batched.contact_capacity());
    eprintln!("capacities after growth {grown:?}; at most {most} contacts");
    assert!(grown.0.0 > 1_281 && grown.1.0 > 1_281, "the buffers never grew: {grown:?}");
    assert!(bits(&mut early) == bits(&mut roomy), "the run that grew early parted from the roomy one");
    assert!(bits(&mut batched) == bits(&mut roomy), "the run that grew in batches parted from the roomy one");
}

/// The narrow phase, shape pair by shape pair: 800 pairs of every kind (spheres, boxes,
/// capsules, hulls) posed near touching, and 400 pairs of small boxes within the speculative
/// margin of each other, far apart from the other pairs and without gravity. After
/// one step both paths hold the same manifolds: the same pairs, counts and feature keys, normals
/// within 1e-3 (a normal between closest points 0.1 m apart on near-parallel segments turns by
/// 2e-4 for 1e-5 m of rounding) and separations within 1e-4 m. A pair may differ only where rounding tips a
/// discrete choice (face against edge within its tolerance): at most 4 of the pairs.
#[test]
fn cpu_and_gpu_narrow_phases_agree_pair_by_pair() {
    let Some(ctx) = common::gpu() else { return };
    let mut world = World::new(WorldDesc { gravity: Vec3::ZERO, ..WorldDesc::default() }).unwrap();
    let mut rng = signorini::scenes::Lcg(29);
    let hull = Shape::convex_hull(&signorini::scenes::bench_hull_points()).unwrap();
    let shape = |kind: u32, rng: &mut signorini::scenes::Lcg| match kind {
        0 => Shape::sphere(rng.range(0.1, 0.3)),
        1 => Shape::cuboid(Vec3::new(rng.range(0.1, 0.4), rng.range(0.1, 0.4), rng.range(0.1, 0.4))),
        2 => Shape::capsule(rng.range(0.1, 0.3), rng.range(0.05, 0.2)),
        _ => hull.clone(),
    };
    for pair in 0..800u32 {
        let site = Vec3::new((pair % 28) as f32, 0.0, (pair / 28) as f32) * 3.0;
        let towards = Vec3::new(rng.next_centered(), rng.next_centered(), rng.next_centered()).normalize();
        let offset = towards * rng.range(0.25, 0.6);
        let (sa, sb) = (shape(pair % 4, &mut rng), shape((pair / 4) % 4, &mut rng));
        world.add_body(RigidBodyDesc::dynamic(sa).position(site).orientation(rng.rotation())).unwrap();
        world.add_body(RigidBodyDesc::dynamic(sb).position(site + offset).orientation(rng.rotation())).unwrap();
    }
    // Small boxes 10 cm apart at random angles, many of them separated by less than the
    // speculative margin with faces that do not overlap: clipping leaves nothing, and both
    // paths must keep one contact at the deepest vertex.
    for pair in 0..400u32 {
        let site = Vec3::new((pair % 20) as f32, 5.0, (pair / 20) as f32) * 3.0;
        let axis = [Vec3::X, Vec3::Y, Vec3::Z][pair as usize % 3];
        for at in [site, site + 0.1 * axis] {
            let half = Vec3::new(rng.range(0.02, 0.04), rng.range(0.02, 0.04), rng.range(0.02, 0.04));
            world
                .add_body(RigidBodyDesc::dynamic(Shape::cuboid(half)).position(at).orientation(rng.rotation()))
                .unwrap();
        }
    }
    let mut cpu = CpuSolver::new(&world).unwrap();
    let mut gpu = GpuSolver::new(ctx, &world).unwrap();
    cpu.step();
    gpu.step();
    let sorted = |mut m: Vec<signorini::layout::GpuManifold>| {
        m.sort_by_key(|m| (m.body_a, m.body_b));
        m
    };
    let (a, g) = (sorted(cpu.manifolds().to_vec()), sorted(gpu.manifolds().unwrap()));
    assert!(a.len() > 300, "only {} of 800 pairs touch", a.len());
    let separation = |m: &signorini::layout::GpuManifold, k: usize| {
        let p = &m.points[k];
        p.base_separation + m.normal.dot(p.core_b - p.core_a)
    };
    let mut differing = a.len().abs_diff(g.len());
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < g.len() {
        let (x, y) = (&a[i], &g[j]);
        match (x.body_a, x.body_b).cmp(&(y.body_a, y.body_b)) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                let keys = |m: &signorini::layout::GpuManifold| {
                    m.points[..m.count as usize].iter().map(|p| p.key).collect::<Vec<_>>()
                };
                if keys(x) != keys(y) {
                    differing += 1;
                } else {
                    assert!(
                        (x.normal - y.normal).length() < 1e-3,
                        "pair {}-{}: normals {} {} keys {:x?} seps {:?} {:?}",
                        x.body_a,
                        x.body_b,
                        x.normal,
                        y.normal,
                        keys(x),
                        (0..x.count as usize).map(|k| separation(x, k)).collect::<Vec<_>>(),
                        (0..y.count as usize).map(|k| separation(y, k)).collect::<Vec<_>>()
                    );
                    for k in 0..x.count as usize {
                        let (sx, sy) = (separation(x, k), separation(y, k));
                        assert!((sx - sy).abs() < 1e-4, "pair {}-{} point {k}: {sx} vs {sy}", x.body_a, x.body_b);
                    }
                }
                i += 1;
                j += 1;
            }
        }
    }
    assert!(differing <= 4, "{differing} of {} pairs differ", a.len());
}

/// The face that kept a pair of polytopes apart is tried first in the next step, on both paths
/// (`collide_cached` and its WGSL twin): 600 pairs of a thin box and a hull without gravity,
/// 8 cm apart along the box's thin axis, the hull spinning at 2 to 4 rad/s and the box at
/// 0.2 rad/s (too slowly to close the gap in the test's 12 steps): their bounding spheres
/// overlap, so the narrow phase sees them, but they never touch, and some faces keep their pair
/// apart step after step while others stop doing so. After each step both paths hold the same
/// separated pairs with the same faces (a remembered face and the face a full scan meets first
/// usually differ: a GPU that ignores the memory differs in 20 pairs after the second step).
/// Rounding may tip a face at the margin, and a face that differs once is remembered: at most
/// 10 pairs a step may differ (none do on lavapipe).
#[test]
fn cpu_and_gpu_remember_the_same_separating_faces() {
    let Some(ctx) = common::gpu() else { return };
    let mut world = World::new(WorldDesc { gravity: Vec3::ZERO, ..WorldDesc::default() }).unwrap();
    let mut rng = signorini::scenes::Lcg(41);
    let points: Vec<Vec3> = signorini::scenes::bench_hull_points().iter().map(|p| *p * 0.15).collect();
    let hull = Shape::convex_hull(&points).unwrap();
    let hull_reach = points.iter().map(|p| p.length()).fold(0.0, f32::max);
    let direction = |rng: &mut signorini::scenes::Lcg| {
        Vec3::new(rng.next_centered(), rng.next_centered(), rng.next_centered()).normalize()
    };
    for pair in 0..600u32 {
        let site = Vec3::new((pair % 25) as f32, 0.0, (pair / 25) as f32) * 3.0;
        let half = Vec3::new(0.1, rng.range(0.15, 0.3), rng.range(0.15, 0.3));
        let turn = rng.rotation();
        // Along the box's thin axis: the hull's reach and the box's half thickness, and 8 cm.
        let offset = turn * Vec3::X * (hull_reach + half.x + 0.08);
        let bodies = [
            RigidBodyDesc::dynamic(Shape::cuboid(half))
                .position(site)
                .orientation(turn)
                .angular_velocity(direction(&mut rng) * 0.2),
            RigidBodyDesc::dynamic(hull.clone())
                .position(site + offset)
                .orientation(rng.rotation())
                .angular_velocity(direction(&mut rng) * rng.range(2.0, 4.0)),
        ];
        let [first, second] = bodies;
        for body in if pair % 2 == 0 { [first, second] } else { [second, first] } {
            world.add_body(body).unwrap();
        }
    }
    let mut cpu = CpuSolver::new(&world).unwrap();
    let mut gpu = GpuSolver::new(ctx, &world).unwrap();
    let (mut separated, mut kept, mut previous) = (0, 0, Vec::new());
    for step in 0..12 {
        cpu.step();
        gpu.step();
        let (a, g) = (cpu.separating_faces(), gpu.separating_faces().unwrap());
        let differing = a.iter().filter(|x| !g.contains(x)).count() + g.iter().filter(|x| !a.contains(x)).count();
        assert!(
            differing <= 10,
            "step {step}: {differing} separated pairs differ ({} on the CPU, {} on the GPU)",
            a.len(),
            g.len()
        );
        assert!(cpu.manifolds().is_empty() && gpu.manifolds().unwrap().is_empty(), "step {step}: a pair touched");
        kept += a.iter().filter(|x| previous.contains(*x)).count();
        separated += a.len();
        previous = a;
    }
    // Most faces hold from one step to the next (7,157 separations, 6,317 kept when written),
    // and dozens a step do not.
    assert!(separated > 12 * 300, "{separated} separations in 12 steps");
    assert!(
        kept > separated / 2 && separated - kept > 12 * 30,
        "{kept} of {separated} faces kept from the step before"
    );
}

/// Bodies whose bounding spheres are their pair margin apart are no candidate pair on either
/// path, however their boxes (grown by each body's travel) overlap. 500 pairs of a box and a
/// hull at rest without gravity (the pair margin is then the 2 cm speculative distance), their
/// spheres (about the centres of mass) from 6 cm overlapping to 6 cm apart along a random
/// direction: after one step no pair whose spheres are more than 2 cm apart is a candidate,
/// most whose spheres are closer are (270 of 317: those whose boxes overlap), and both paths
/// hold the same candidate pairs, the same faces and the same contacts (at most 2 differ, by
/// rounding at the margin).
#[test]
fn cpu_and_gpu_pass_over_the_same_pairs_by_their_bounding_spheres() {
    let Some(ctx) = common::gpu() else { return };
    let mut world = World::new(WorldDesc { gravity: Vec3::ZERO, ..WorldDesc::default() }).unwrap();
    let mut rng = signorini::scenes::Lcg(43);
    let points: Vec<Vec3> = signorini::scenes::bench_hull_points().iter().map(|p| *p * 0.15).collect();
    let hull = Shape::convex_hull(&points).unwrap();
    // The spheres are about the centres of mass.
    let centre = hull.mass_properties(1.0).local_center_of_mass;
    let hull_reach = points.iter().map(|p| (*p - centre).length()).fold(0.0, f32::max);
    let (mut apart, mut near) = (Vec::new(), Vec::new());
    for pair in 0..500u32 {
        let site = Vec3::new((pair % 25) as f32, 0.0, (pair / 25) as f32) * 3.0;
        let half = Vec3::new(rng.range(0.1, 0.3), rng.range(0.1, 0.3), rng.range(0.1, 0.3));
        let towards = Vec3::new(rng.next_centered(), rng.next_centered(), rng.next_centered()).normalize();
        let gap = rng.range(-0.06, 0.06);
        let turn = rng.rotation();
        let at = site + towards * (hull_reach + half.length() + gap) - turn * centre;
        let box_body =
            world.add_body(RigidBodyDesc::dynamic(Shape::cuboid(half)).position(site).orientation(rng.rotation()));
        let hull_body = world.add_body(RigidBodyDesc::dynamic(hull.clone()).position(at).orientation(turn));
        let key = [box_body.unwrap().index() as u32, hull_body.unwrap().index() as u32];
        if gap > 0.02 + 1e-4 {
            apart.push(key);
        } else if gap < 0.02 - 1e-4 {
            near.push(key);
        }
    }
    let mut cpu = CpuSolver::new(&world).unwrap();
    let mut gpu = GpuSolver::new(ctx, &world).unwrap();
    cpu.step();
    gpu.step();
    let (a, g) = (cpu.candidate_pairs(), gpu.candidate_pairs().unwrap());
    assert!(apart.len() > 50 && near.len() > 300, "{} pairs apart, {} near", apart.len(), near.len());
    assert!(apart.iter().all(|p| !a.contains(p)), "a pair whose spheres are apart is a CPU candidate");
    let near_candidates = near.iter().filter(|p| a.contains(p)).count();
    assert!(near_candidates > 200, "{near_candidates} of {} pairs whose spheres are near are candidates", near.len());
    let differ = |x: &[[u32; 2]], y: &[[u32; 2]]| {
        x.iter().filter(|p| !y.contains(p)).count() + y.iter().filter(|p| !x.contains(p)).count()
    };
    assert!(differ(&a, &g) <= 2, "candidates: {} on the CPU, {} on the GPU", a.len(), g.len());
    let faces = |f: Vec<([u32; 2], u32)>| f.into_iter().map(|(p, _)| p).collect::<Vec<_>>();
    let (fa, fg) = (faces(cpu.separating_faces()), faces(gpu.separating_faces().unwrap()));
    assert!(differ(&fa, &fg) <= 2, "with a face: {} on the CPU, {} on the GPU", fa.len(), fg.len());
    let touching = |m: &[signorini::layout::GpuManifold]| m.iter().map(|m| [m.body_a, m.body_b]).collect::<Vec<_>>();
    let (ta, tg) = (touching(cpu.manifolds()), touching(&gpu.manifolds().unwrap()));
    assert!(differ(&ta, &tg) <= 2, "in contact: {} on the CPU, {} on the GPU", ta.len(), tg.len());
    assert!(fa.len() > 50 && ta.len() > 20, "{} with a face, {} in contact", fa.len(), ta.len());
}

/// The GPU's grid broad phase (radix-sorted cell keys, a large-body list, radix-sorted pairs)
/// finds exactly the CPU's candidate pairs, in the same order: on a dynamic cube 100 times
/// larger than the 17,000 spheres overlapping it, some moving at 15 m/s (17,000 bodies: the cell
/// keys take three radix passes), and on a base-20 pyramid, in the first step, from identical
/// states.
#[test]
fn gpu_broad_phase_finds_the_cpu_pairs() {
    let Some(ctx) = common::gpu() else { return };
    let (mixed, big) = signorini::scenes::mixed_sizes(signorini::scenes::bench_desc(), 17_000, 3).unwrap();
    let (pyramid, _) = signorini::scenes::pyramid(signorini::scenes::bench_desc(), 20).unwrap();
    for (name, world) in [("mixed sizes", mixed), ("pyramid", pyramid)] {
        let mut cpu = CpuSolver::new(&world).unwrap();
        let mut gpu = GpuSolver::new(ctx, &world).unwrap();
        cpu.step();
        gpu.step();
        let (a, g) = (cpu.candidate_pairs(), gpu.candidate_pairs().unwrap());
        assert!(a.len() > 200, "{name}: {} pairs", a.len());
        assert_eq!(a, g, "{name}");
        if name == "mixed sizes" {
            let on_big = a.iter().filter(|p| p.contains(&(big.index() as u32))).count();
            assert!(on_big > 100, "{on_big} pairs on the large cube");
        }
    }
}

/// A unit cube without friction at `position` with `velocity`, on a fixed 1 x 1 x 4 m box
/// without friction centred at the origin (long along z): (world, the cube).
fn frictionless_box_on_a_long_box(position: Vec3, velocity: Vec3) -> (World, BodyHandle) {
    frictionless_box_on_a_long_box_scaled(1.0, position, velocity)
}

/// [`frictionless_box_on_a_long_box`] with every length times `scale`.
fn frictionless_box_on_a_long_box_scaled(scale: f32, position: Vec3, velocity: Vec3) -> (World, BodyHandle) {
    let mut world = World::new(signorini::scenes::bench_desc()).unwrap();
    world.add_body(RigidBodyDesc::fixed(Shape::cuboid(Vec3::new(0.5, 0.5, 2.0) * scale)).friction(0.0)).unwrap();
    let cube = RigidBodyDesc::dynamic(Shape::cuboid(Vec3::splat(0.5 * scale)))
        .position(position)
        .linear_velocity(velocity)
        .friction(0.0);
    let top = world.add_body(cube).unwrap();
    (world, top)
}

/// The CPU and the GPU stop recycling a manifold alike when both bodies turn together: a cube
/// rides a kinematic turntable spinning at 0.02 rad/s about the vertical. Nothing slides
/// between them and both contact faces stay level, but the cube's lever arms (0.71 m across)
/// turn 0.24 mm a step away from its corners: once they are `FRAME_DRIFT` (5 mm) off, after at
/// most 21 steps, the narrow phase runs again and takes a new frame. Step by step both paths
/// recycle the same steps and hold the same frame. (Without the lever-arm check both recycle
/// for ever.)
#[test]
fn cpu_and_gpu_stop_recycling_alike_on_a_turntable() {
    let Some(ctx) = common::gpu() else { return };
    let mut world = World::new(signorini::scenes::bench_desc()).unwrap();
    let table = RigidBodyDesc::kinematic(Shape::cuboid(Vec3::new(2.0, 0.5, 2.0)))
        .angular_velocity(Vec3::new(0.0, 0.02, 0.0))
        .friction(1.0);
    world.add_body(table).unwrap();
    let cube = RigidBodyDesc::dynamic(Shape::cuboid(Vec3::splat(0.5))).position(Vec3::new(0.0, 0.999, 0.0));
    world.add_body(cube.friction(1.0)).unwrap();
    let Frames { recycled, longest, .. } = frames_on_both_paths(ctx, &world, 60).0;
    assert!(recycled >= 30, "{recycled} of 60 steps recycled");
    assert!(longest <= 21, "{longest} steps in a row recycled while the lever arms turned 0.24 mm a step");
}

/// Warm starting carries impulses alike on both paths, also to contacts whose feature key
/// changed and that take the impulses of the old point beside them: a frictionless box drifts
/// sideways at 2 cm/s on a static box whose side it is flush with, so after a few steps two of
/// its corners pass that side by more than the clipping tolerance and become clipped points
/// with new keys. Every point's impulse agrees on both paths within 0.1 % of the box's
/// weight impulse, before and after the flip. (Four points on a face share the load in a way
/// the contact conditions leave open, so a point started from zero on one path and carried on
/// the other ends up with another share: the test fails by 7 % of the weight when the GPU
/// drops the carried impulses.)
#[test]
fn cpu_and_gpu_warm_starts_agree_where_feature_keys_change() {
    let Some(ctx) = common::gpu() else { return };
    let (world, top) = frictionless_box_on_a_long_box(Vec3::new(0.0, 1.0, 0.0), Vec3::ZERO);
    let mut cpu = CpuSolver::new(&world).unwrap();
    let mut gpu = GpuSolver::new(ctx, &world).unwrap();
    for solver in [&mut cpu as &mut dyn Solver, &mut gpu] {
        solver.set_velocity(top, Vec3::new(0.02, 0.0, 0.0), Vec3::ZERO).unwrap();
    }
    let weight_impulse = world.mass_properties(top).unwrap().mass * 10.0 / 60.0;
    let keys =
        |m: &signorini::layout::GpuManifold| m.points[..m.count as usize].iter().map(|p| p.key).collect::<Vec<_>>();
    let mut flips = 0;
    let mut last_keys = Vec::new();
    for step in 1..=12 {
        cpu.step();
        gpu.step();
        let (a, g) = (cpu.manifolds().to_vec(), gpu.manifolds().unwrap());
        assert_eq!((a.len(), g.len()), (1, 1), "step {step}");
        let (x, y) = (&a[0], &g[0]);
        let mut ka = keys(x);
        ka.sort_unstable();
        let mut kg = keys(y);
        kg.sort_unstable();
        assert_eq!(ka, kg, "step {step}: feature keys differ");
        if step > 1 && ka != last_keys {
            flips += 1;
        }
        last_keys = ka;
        for p in &x.points[..x.count as usize] {
            let q = y.points[..y.count as usize].iter().find(|q| q.key == p.key).unwrap();
            let d = (p.normal_impulse - q.normal_impulse).abs();
            assert!(
                d < 1e-3 * weight_impulse,
                "step {step}, key {:x}: {} vs {} N s",
                p.key,
                p.normal_impulse,
                q.normal_impulse
            );
        }
    }
    assert!(flips >= 1, "no feature key changed: the box did not cross the clipping tolerance");
}

/// How many steps of [`frames_on_both_paths`] kept the frame, took a new one, recycled the
/// manifold, and recycled it in a row at most.
struct Frames {
    kept: u32,
    fresh: u32,
    recycled: u32,
    longest: u32,
}

/// Steps `world`, which holds one manifold, on both paths for `steps` steps, checking step by
/// step that both keep, recycle or take anew the same contact frame, report the same recycled
/// count in their statistics, and hold the same normal, anchors, lever arms and separations
/// (points matched by key). Returns the counts and the CPU solver.
fn frames_on_both_paths(ctx: &'static signorini::GpuContext, world: &World, steps: u32) -> (Frames, CpuSolver) {
    let mut cpu = CpuSolver::new(world).unwrap();
    let mut gpu = GpuSolver::new(ctx, world).unwrap();
    let mut frames = Frames { kept: 0, fresh: 0, recycled: 0, longest: 0 };
    let mut run = 0;
    for step in 1..=steps {
        cpu.step();
        gpu.step();
        let (a, g) = (cpu.manifolds().to_vec(), gpu.manifolds().unwrap());
        assert_eq!((a.len(), g.len()), (1, 1), "step {step}");
        let (x, y) = (&a[0], &g[0]);
        assert_eq!(x.frame_kept, y.frame_kept, "step {step}: kept on one path only");
        assert_eq!(x.recycled, y.recycled, "step {step}: recycled on one path only");
        let counts = (cpu.stats().unwrap().recycled, gpu.stats().unwrap().recycled);
        assert_eq!(counts, (x.recycled, x.recycled), "step {step}: recycled counts in the statistics");
        assert!((x.normal - y.normal).length() < 1e-6, "step {step}: normals {} vs {}", x.normal, y.normal);
        for p in &x.points[..x.count as usize] {
            let q = y.points[..y.count as usize].iter().find(|q| q.key == p.key).unwrap();
            for (u, v) in
                [(p.anchor_a, q.anchor_a), (p.anchor_b, q.anchor_b), (p.core_a, q.core_a), (p.core_b, q.core_b)]
            {
                assert!((u - v).length() < 1e-5, "step {step}, key {:x}: {u} vs {v}", p.key);
            }
            assert!((p.base_separation - q.base_separation).abs() < 1e-5, "step {step}, key {:x}", p.key);
        }
        if x.frame_kept != 0 {
            frames.kept += 1
        } else {
            frames.fresh += 1
        }
        frames.recycled += x.recycled;
        run = if x.recycled != 0 { run + 1 } else { 0 };
        frames.longest = frames.longest.max(run);
    }
    (frames, cpu)
}

/// [`frames_on_both_paths`] for a box sliding without friction along a long fixed box (both
/// `scale` times those of [`frictionless_box_on_a_long_box`], the box 1 mm deep at scale 1) at
/// `speed` (m/s, along z); checks that it slid as far as it should.
fn slide_on_both_paths(ctx: &'static signorini::GpuContext, scale: f32, speed: f32, steps: u32) -> Frames {
    let start = Vec3::new(0.0, 0.999, -1.0) * scale;
    let (world, top) = frictionless_box_on_a_long_box_scaled(scale, start, Vec3::new(0.0, 0.0, speed));
    let (frames, mut cpu) = frames_on_both_paths(ctx, &world, steps);
    let z = cpu.body_state(top).unwrap().position.z;
    let expect = start.z + speed * steps as f32 / 60.0;
    assert!((z - expect).abs() < 1e-3 * scale, "the box slid to z = {z}, not {expect}");
    frames
}

/// The CPU and the GPU keep and drop the same contact frames: a box sliding without friction
/// along a long fixed box at 0.1 m/s keeps its frame while its anchors on the fixed box drift
/// less than `FRAME_DRIFT` (5 mm, three steps) and takes a new one after. It slides 1.7 mm a
/// step, more than `RECYCLE_DRIFT`: the narrow phase runs every step.
#[test]
fn cpu_and_gpu_keep_the_same_contact_frames() {
    let Some(ctx) = common::gpu() else { return };
    let Frames { kept, fresh, recycled, .. } = slide_on_both_paths(ctx, 1.0, 0.1, 36);
    assert!(kept >= 18 && fresh >= 9, "{kept} steps kept the frame, {fresh} took a new one");
    assert_eq!(recycled, 0, "a manifold was recycled across a 1.7 mm slide");
}

/// The CPU and the GPU recycle the same manifolds: at 0.04 m/s (0.67 mm a step) the step after
/// a new frame recycles the manifold without the narrow phase (its anchors slid less than
/// `RECYCLE_DRIFT`, 1 mm), the next runs the narrow phase (1.3 mm), which keeps the frame and
/// takes the slide out of the anchors, so the one after recycles again, and so on until the
/// lever arms drifted 5 mm and a new frame is taken, alike on both paths. Without taking the
/// slide out, only the first step after each new frame recycles (6 of 48).
#[test]
fn cpu_and_gpu_recycle_the_same_manifolds() {
    let Some(ctx) = common::gpu() else { return };
    let Frames { kept, fresh, recycled, longest } = slide_on_both_paths(ctx, 1.0, 0.04, 48);
    assert!(recycled >= 16 && fresh >= 4, "{recycled} steps recycled the manifold, {fresh} took a new frame");
    assert_eq!(longest, 1, "recycled {longest} steps in a row");
    assert!(kept >= 30, "{kept} steps kept the frame");
}

/// On a small contact face the slide a recycled manifold allows and the drift a kept frame
/// allows shrink with the face, alike on both paths: a 2 cm cube sliding 0.25 mm a step on a
/// long box allows 0.4 mm (`RECYCLE_SLIDE_FRACTION` of its 2 cm face) instead of 1 mm, so the
/// step after a new frame recycles and the next runs the narrow phase (the 1 mm bound would
/// recycle four in a row), and it keeps a frame over 2 mm (`FRAME_DRIFT_FRACTION`) instead of
/// 5, taking a new one every eighth step instead of every twentieth.
#[test]
fn cpu_and_gpu_recycle_less_on_a_small_face() {
    let Some(ctx) = common::gpu() else { return };
    let slide = slide_on_both_paths(ctx, 0.02, 0.015, 60);
    assert!(slide.recycled >= 5, "{} steps recycled the manifold", slide.recycled);
    assert_eq!(slide.longest, 1, "recycled {} steps in a row", slide.longest);
    assert!(slide.fresh >= 6, "{} new frames in 60 steps", slide.fresh);
}

/// The preparation (`prepare` in src/cpu/contacts.rs and `prepare_manifolds` in WGSL) leaves the
/// same records on both paths: after one step of a leaning pyramid of boxes on a static ground
/// box (kept and new contact frames, the ground's infinite mass) beside spheres and capsules
/// lying on it (manifolds with radii), every word of every point the two paths' manifolds share
/// (same pair, same feature keys) agrees within 1e-3 relative (1e-5 absolute), and so does every
/// body's world inverse inertia. One step of the two paths differs by rounding alone (about 1e-6
/// relative), so a record computed from another body, another point or another orientation
/// fails by orders of magnitude.
#[test]
fn cpu_and_gpu_prepare_the_same_records() {
    let Some(ctx) = common::gpu() else { return };
    let mut desc = signorini::scenes::bench_desc();
    desc.solver.gpu_prepared_passes = true;
    let (pyramid, _) = signorini::scenes::pyramid(desc, 12).unwrap();
    let mut world = signorini::scenes::tilted(&pyramid, 0.05).unwrap();
    for k in 0..12 {
        let x = k as f32 * 1.5 - 9.0;
        world.add_body(RigidBodyDesc::dynamic(Shape::sphere(0.3)).position(Vec3::new(x, 0.299, 4.0))).unwrap();
        let lying = Quat::from_rotation_z(std::f32::consts::FRAC_PI_2 + 0.02 * k as f32);
        let capsule = RigidBodyDesc::dynamic(Shape::capsule(0.4, 0.2));
        world.add_body(capsule.position(Vec3::new(x, 0.199, 6.0)).orientation(lying)).unwrap();
    }
    let mut cpu = CpuSolver::new(&world).unwrap();
    let mut gpu = GpuSolver::new(ctx, &world).unwrap();
    cpu.step();
    gpu.step();
    let (a, g) = (cpu.prepared(), gpu.prepared().unwrap());
    let close = |x: f32, y: f32| (x - y).abs() <= 1e-3 * x.abs().max(y.abs()) + 1e-5;
    assert_eq!(a.inertia.len(), g.inertia.len());
    for (body, (x, y)) in a.inertia.iter().zip(&g.inertia).enumerate() {
        assert!(x.iter().zip(y).all(|(&x, &y)| close(x, y)), "body {body}: inertia {x:?} against {y:?}");
    }
    let (ma, mg) = (cpu.manifolds().to_vec(), gpu.manifolds().unwrap());
    assert_eq!((a.manifolds.len(), g.manifolds.len()), (ma.len(), mg.len()));
    let keys = |m: &signorini::layout::GpuManifold| {
        (m.body_a, m.body_b, m.points[..m.count as usize].iter().map(|p| p.key).collect::<Vec<_>>())
    };
    let gpu_by_pair: std::collections::HashMap<_, _> = mg.iter().map(keys).zip(&g.manifolds).collect();
    let (mut points, mut unmatched, mut radii) = (0, 0, 0);
    for (m, x) in ma.iter().zip(&a.manifolds) {
        let Some(y) = gpu_by_pair.get(&keys(m)) else {
            unmatched += 1;
            continue;
        };
        radii += usize::from(m.radius_a > 0.0 || m.radius_b > 0.0);
        for (word, (&x, &y)) in x.iter().zip(y.iter()).enumerate() {
            assert!(close(x, y), "pair {}-{}: word {word} {x} against {y}", m.body_a, m.body_b);
        }
        points += m.count as usize;
    }
    assert!(unmatched <= 2, "{unmatched} of {} manifolds found no twin", ma.len());
    assert!(points >= 600 && radii >= 20, "only {points} points and {radii} manifolds with radii compared");
}

/// `SolverSettings::gpu_prepared_passes` changes where the GPU's passes take each point's lever
/// arms and effective masses from, not what they are: 40 steps of 400 boxes, some bouncy, piling
/// on a ground box with only three colors (so a third of the manifolds go to the Jacobi overflow,
/// which recomputes its masses for split bodies), with and without the prepared records, end in
/// the same bits on a software adapter (where CI runs; both pipelines round alike). A hardware
/// compiler may contract the same arithmetic differently in the two places: there the first
/// three steps agree within 1e-5 m and 1e-4 m/s.
#[test]
fn gpu_passes_prepared_or_computed_agree() {
    let Some(ctx) = common::gpu() else { return };
    let steps = if ctx.adapter().software { 40 } else { 3 };
    let run = |prepared: bool| {
        let mut gpu = GpuSolver::new(ctx, &overflowing_pile(false, prepared, true)).unwrap();
        gpu.step_many(steps);
        let stats = gpu.stats().unwrap();
        (gpu.body_states().unwrap(), stats)
    };
    let ((a, stats), (b, _)) = (run(true), run(false));
    assert!(stats.overflow > 100 && stats.contacts > 1000, "overflow {}, contacts {}", stats.overflow, stats.contacts);
    common::assert_gpu_runs_agree(ctx, &a, &b, "prepared or computed", 1e-5, 1e-4);
}

/// The pass variants' test scene: 400 boxes, every third bouncy (with `bouncy`), piling in
/// columns on a ground box with only three colors, so that a third of the manifolds go to the
/// Jacobi overflow; with the GPU's sweeps fused or not and its passes reading prepared records
/// or not.
fn overflowing_pile(fused: bool, prepared: bool, bouncy: bool) -> World {
    let mut desc = signorini::scenes::bench_desc();
    desc.solver.max_colors = 3;
    desc.solver.gpu_fused_sweeps = fused;
    desc.solver.gpu_prepared_passes = prepared;
    let restitution = if bouncy { 0.5 } else { 0.0 };
    box_columns(
        desc,
        400,
        Vec3::new(-2.0, 0.3, -2.0),
        Vec2::splat(0.5),
        5,
        |i| if i % 3 == 0 { restitution } else { 0.0 },
    )
}

/// `SolverSettings::gpu_fused_sweeps` changes how the GPU's manifold passes and coloring are
/// dispatched, not what they compute: 20 steps of 400 boxes, some bouncy, piling on a ground
/// box with only three colors (so that the Jacobi overflow and its gather run in every pass),
/// each pass as one workgroup's dispatch or as a dispatch per color, end in the same bits, with the passes
/// computing their words and reading them prepared (where a hardware compiler contracts the
/// same arithmetic alike in both kernels, the same bits are expected there too; the first three
/// steps are compared within 1e-5 m and 1e-4 m/s). The fused world records 4 fewer dispatches
/// per manifold pass (3 colors, the overflow and its gather, against 1): 4 × (4 substeps × 4
/// sweeps + 1 restitution pass), and the coloring's 4 + 3 × 8 rounds' dispatches in one.
/// Without the bouncy boxes (a world of bodies and contacts alone) each whole substep is one
/// dispatch too (`substep_fused`): the same bits again, and one dispatch a substep where the
/// other recorded the velocities, the warm start's gather, the preparations, each color, the
/// overflow and its gather of every sweep, and the positions.
#[test]
fn gpu_passes_fused_or_per_color_agree() {
    let Some(ctx) = common::gpu() else { return };
    let steps = if ctx.adapter().software { 20 } else { 3 };
    let run = |fused: bool, prepared: bool, bouncy: bool| {
        let mut gpu = GpuSolver::new(ctx, &overflowing_pile(fused, prepared, bouncy)).unwrap();
        let dispatches = gpu.dispatches_per_step();
        gpu.step_many(steps);
        let stats = gpu.stats().unwrap();
        (gpu.body_states().unwrap(), stats, dispatches, gpu.color_buckets().unwrap())
    };
    for (prepared, bouncy) in [(false, true), (true, true), (false, false), (true, false)] {
        let ((a, stats, fused_dispatches, fused_buckets), (b, _, dispatches, buckets)) =
            (run(true, prepared, bouncy), run(false, prepared, bouncy));
        assert!(
            stats.overflow > 100 && stats.contacts > 1000,
            "overflow {}, contacts {}",
            stats.overflow,
            stats.contacts
        );
        let s = overflowing_pile(false, prepared, bouncy).desc().solver;
        // The coloring stage becomes one: the adjacency's 4 and its scan, the coloring's 4
        // phases and 3 a round, the buckets' 3 and their scan (each scan one workgroup's
        // dispatch in so small a world), the Jacobi split.
        let coloring = (4 + 1) + (4 + 3 * s.coloring_rounds) + (3 + 1) + 1 - 1;
        let sweeps = s.iterations + s.relax_iterations;
        let fewer = if bouncy {
            // Each pass's colors, overflow and gather become one.
            (s.substeps * sweeps + 1) * (s.max_colors + 2 - 1)
        } else {
            // The velocities with the gather (`warm_start_integrate`, nothing bouncing), the
            // sweeps, the positions and the preparations.
            let prepares = if prepared { 2 } else { 0 };
            s.substeps * (1 + sweeps * (s.max_colors + 2) + 1 + prepares - 1)
        };
        // After the grid's pairs, the count, the scan and the writing again (for an overflow),
        // and the ranks' 4 and their scan, become one.
        let pairs = (1 + 1 + 1) + (4 + 1) - 1;
        // Before the grid's pairs, the beginning, the cell sort's two radix passes of three
        // dispatches (keys of 11 bits) and `grid_cells` become one.
        let cells = 1 + 2 * 3 + 1 - 1;
        assert_eq!(
            dispatches - fused_dispatches,
            fewer + coloring + pairs + cells,
            "prepared {prepared}, bouncy {bouncy}"
        );
        let what = format!("fused or not, prepared {prepared}, bouncy {bouncy}");
        common::assert_gpu_runs_agree(ctx, &a, &b, &what, 1e-5, 1e-4);
        if ctx.adapter().software {
            // The same bits, so the same manifolds, colored and bucketed in the same order (the
            // fused coloring's stable sort by thread is the same list as the sort by workgroup).
            assert_eq!(fused_buckets, buckets, "{what}: buckets");
        }
    }
}
