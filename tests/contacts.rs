//! Body-body contacts: stacking, collisions, conservation, coloring; each on the CPU reference
//! solver and on the GPU solver.

mod common;

use signorini::layout::GpuManifold;
use signorini::prelude::*;
use signorini::scenes;
use signorini::{Collidable, CollisionGroups, Contact, PlaneHandle};

fn contacts_desc(gravity: Vec3) -> WorldDesc {
    WorldDesc { gravity, ..WorldDesc::default() }
}

/// A base-20 pyramid (210 boxes) stands 10 s: its top box moves less than 1 cm and nothing
/// penetrates by 1 cm. (With soft contacts the pyramid compresses by about 7 mm under its own
/// weight; that is included in the drift.)
#[test]
fn pyramid_of_base_20_stands_for_10_seconds() {
    let (world, top) = scenes::pyramid(scenes::bench_desc(), 20).unwrap();
    for mut solver in common::solvers(&world) {
        let name = solver.backend();
        let start = solver.body_state(top).unwrap().position;
        for second in 1..=10 {
            solver.step_many(60);
            let stats = solver.stats().unwrap();
            assert!(stats.max_penetration < 0.01, "{name}: after {second} s: penetration {}", stats.max_penetration);
            assert_eq!(stats.overflow, 0, "{name}: constraints overflowed");
            assert_eq!(stats.dropped, 0, "{name}: contacts dropped");
        }
        let drift = (solver.body_state(top).unwrap().position - start).length();
        assert!(drift < 0.01, "{name}: top box moved {drift} m");
    }
}

/// The large pyramid (base 100, 5,050 boxes, one box thick) with the default settings, on the
/// CPU: after 2 s of settling, no box moves by 4 cm in the next 18 s and nothing penetrates by
/// 1 cm. Measured: 13 mm (Rapier with the same settings: 48 mm). Before resting pairs kept
/// their contact frames it fell within that time (8 m; 27 mm over the first 8 s, 93 mm while
/// warm-started friction flipped with the tangent basis, 491 mm while the coarse correction
/// moved the soft contacts' fixed point). The GPU runs the same stages (compared elsewhere); on
/// a software adapter this scene takes seconds per step.
#[test]
fn large_pyramid_stands_for_20_seconds_on_the_cpu() {
    let (world, _) = scenes::pyramid(scenes::bench_desc(), 100).unwrap();
    let moved = most_moved_on_the_cpu(&world, 2, 20);
    assert!(moved < 0.04, "a box moved {moved} m");
}

/// Runs `world` on the CPU for `settle` seconds, then to `end` seconds, checking each second
/// that nothing penetrates by 1 cm and no constraint overflowed or was dropped; returns how far
/// the body that moved most moved after settling, m.
fn most_moved_on_the_cpu(world: &World, settle: u32, end: u32) -> f32 {
    let mut solver = CpuSolver::new(world).unwrap();
    solver.step_many(60 * settle);
    let start = solver.body_states().unwrap();
    let mut moved = 0.0_f32;
    for second in settle + 1..=end {
        solver.step_many(60);
        let stats = solver.stats().unwrap();
        assert!(stats.max_penetration < 0.01, "after {second} s: penetration {}", stats.max_penetration);
        assert_eq!((stats.overflow, stats.dropped), (0, 0), "after {second} s: overflow, dropped");
        let states = solver.body_states().unwrap();
        moved = start.iter().zip(&states).map(|(a, b)| (a.position - b.position).length()).fold(moved, f32::max);
    }
    moved
}

/// A pyramid of base 50 (1,275 boxes) tilted out of its plane by 1 mrad (its top 5 cm over),
/// on the CPU: after 1 s, no box moves by 3 cm in the next 19 s, nothing penetrates by 1 cm,
/// and nothing overflows or is dropped. Soft contacts at 60 Hz make
/// this pyramid a column that buckles when its contact frames follow the lean (18 m in 18 s
/// before resting pairs kept their frames); measured now: 7 mm.
#[test]
fn tilted_pyramid_of_base_50_stands_for_20_seconds_on_the_cpu() {
    let (world, _) = scenes::pyramid(scenes::bench_desc(), 50).unwrap();
    let moved = most_moved_on_the_cpu(&scenes::tilted(&world, 1e-3).unwrap(), 1, 20);
    assert!(moved < 0.03, "a box moved {moved} m");
}

/// A 15-box vertical stack stands 10 s: the top stays within 2 cm of its column.
#[test]
fn vertical_stack_of_15_stands() {
    let (world, boxes) = scenes::vertical_stack(scenes::bench_desc(), 15).unwrap();
    for mut solver in common::solvers(&world) {
        solver.step_many(600);
        let top = solver.body_state(*boxes.last().unwrap()).unwrap().position;
        let name = solver.backend();
        assert!(Vec3::new(top.x, 0.0, top.z).length() < 0.02, "{name}: top at {top}");
        assert!((top.y - 14.5).abs() < 0.05, "{name}: top at height {}", top.y);
        assert!(solver.stats().unwrap().max_penetration < 0.01, "{name}");
    }
}

/// A 1 kg cube under a 100 kg cube under a 1 kg cube holds: after 10 s the stack is at rest,
/// each cube sits on the one below within 1 cm sideways and in height, none tilts.
///
/// Known and bounded: soft contacts are springs on each contact's effective mass, so the 1 kg
/// cube squeezed by 100 kg compresses by 7 mm per contact, and during that first half second
/// the whole stack slides about 2.5 cm before it settles; the test allows 5 cm.
#[test]
fn mass_ratio_stack_holds() {
    let (world, boxes) = scenes::mass_ratio_stack(scenes::bench_desc()).unwrap();
    for mut solver in common::solvers(&world) {
        solver.step_many(600);
        let name = solver.backend();
        let s: Vec<BodyState> = boxes.iter().map(|b| solver.body_state(*b).unwrap()).collect();
        for (k, pair) in s.windows(2).enumerate() {
            let d = pair[1].position - pair[0].position;
            assert!(Vec3::new(d.x, 0.0, d.z).length() < 0.01, "{name}: cube {} is {d} from the one below", k + 1);
            assert!((d.y - 1.0).abs() < 0.01, "{name}: cube {} is {} above the one below", k + 1, d.y);
        }
        for b in &s {
            assert!(b.orientation.angle_between(Quat::IDENTITY) < 0.01, "{name}: tilted {}", b.orientation);
            assert!(b.linear_velocity.length() < 1e-3 && b.angular_velocity.length() < 1e-2, "{name}: still moving");
        }
        assert!(s[0].position.y > 0.49 - 0.01, "{name}: the light cube sank into the ground to {}", s[0].position.y);
        assert!(
            Vec3::new(s[1].position.x, 0.0, s[1].position.z).length() < 0.05,
            "{name}: the stack slid to {}",
            s[1].position
        );
    }
}

/// Two equal frictionless spheres meeting head-on with e = 1 exchange velocities within 1e-3.
#[test]
fn equal_spheres_exchange_velocities() {
    let mut world = World::new(contacts_desc(Vec3::ZERO)).unwrap();
    let ball = |x: f32, v: f32| {
        RigidBodyDesc::dynamic(Shape::sphere(0.5))
            .position(Vec3::new(x, 0.0, 0.0))
            .linear_velocity(Vec3::new(v, 0.0, 0.0))
            .restitution(1.0)
            .friction(0.0)
    };
    let a = world.add_body(ball(-2.0, 3.0)).unwrap();
    let b = world.add_body(ball(2.0, -1.0)).unwrap();
    for mut solver in common::solvers(&world) {
        solver.step_many(120);
        let (va, vb) = (solver.body_state(a).unwrap().linear_velocity, solver.body_state(b).unwrap().linear_velocity);
        assert!((va - Vec3::new(-1.0, 0.0, 0.0)).length() < 1e-3, "{}: {va}", solver.backend());
        assert!((vb - Vec3::new(3.0, 0.0, 0.0)).length() < 1e-3, "{}: {vb}", solver.backend());
    }
}

/// The speculative margin of a pair follows how fast the two can close, not how fast each
/// moves: two boxes 5 cm apart falling side by side at 20 m/s (each travels 33 cm per step)
/// get no contact; the same boxes one above the other landing at 20 m/s on a plane, where the
/// lower one stops within a step and the upper one does not, never overlap by 1 cm; and boxes
/// closing at 6 m/s from 9 cm get a contact before they touch and stop on it (e = 0).
#[test]
fn speculative_margin_follows_the_closing_speed() {
    let pair = |gap: f32, v_a: Vec3, v_b: Vec3| {
        let mut world = World::new(contacts_desc(Vec3::ZERO)).unwrap();
        let cube = |x: f32, v: Vec3| {
            RigidBodyDesc::dynamic(Shape::cuboid(Vec3::splat(0.5)))
                .position(Vec3::new(x, 0.0, 0.0))
                .linear_velocity(v)
                .restitution(0.0)
                .friction(0.0)
        };
        let a = world.add_body(cube(-0.5 - 0.5 * gap, v_a)).unwrap();
        let b = world.add_body(cube(0.5 + 0.5 * gap, v_b)).unwrap();
        (world, a, b)
    };
    let falling = Vec3::new(0.0, -20.0, 0.0);
    let (world, _, _) = pair(0.05, falling, falling);
    for mut solver in common::solvers(&world) {
        solver.step();
        let stats = solver.stats().unwrap();
        assert_eq!(stats.contacts, 0, "{}: side by side", solver.backend());
    }
    // One above the other, falling together onto a plane: the lower box stops on it within
    // the step, the upper one does not, so the pair needs its contact before the landing.
    let mut world = World::new(contacts_desc(Vec3::ZERO)).unwrap();
    world.add_plane(Plane::new(Vec3::Y, 0.0)).unwrap();
    let cube = |y: f32| {
        RigidBodyDesc::dynamic(Shape::cuboid(Vec3::splat(0.5)))
            .position(Vec3::new(0.0, y, 0.0))
            .linear_velocity(falling)
            .restitution(0.0)
            .friction(0.0)
    };
    let lower = world.add_body(cube(0.6)).unwrap();
    let upper = world.add_body(cube(1.65)).unwrap();
    for mut solver in common::solvers(&world) {
        let name = solver.backend();
        for _ in 0..30 {
            solver.step();
            let (pl, pu) = (solver.body_state(lower).unwrap().position, solver.body_state(upper).unwrap().position);
            let gap = (pu.y - pl.y) - 1.0;
            assert!(gap > -0.01, "{name}: the upper box sank {} m into the lower one", -gap);
        }
    }
    let (world, a, b) = pair(0.09, Vec3::new(3.0, 0.0, 0.0), Vec3::new(-3.0, 0.0, 0.0));
    for mut solver in common::solvers(&world) {
        let name = solver.backend();
        solver.step();
        assert!(solver.stats().unwrap().contacts > 0, "{name}: closing pair has no contact");
        for _ in 0..30 {
            solver.step();
            let (pa, pb) = (solver.body_state(a).unwrap().position, solver.body_state(b).unwrap().position);
            let gap = (pb.x - pa.x) - 1.0;
            assert!(gap > -0.01, "{name}: boxes overlap by {} m", -gap);
        }
    }
}

/// Free collisions (no gravity, no ground) of boxes, spheres, capsules and hulls conserve
/// linear momentum (to f32 rounding, 1e-4 relative) and angular momentum about the origin
/// (1e-3 relative), and never gain kinetic energy with e <= 1 (1e-5 relative per step: each
/// manifold gives back at most what its impulses took).
#[test]
fn free_collisions_conserve_momentum_and_never_gain_energy() {
    for e in [0.0_f32, 0.5, 1.0] {
        let mut world = World::new(contacts_desc(Vec3::ZERO)).unwrap();
        let mut rng = scenes::Lcg(17);
        let hull = Shape::convex_hull(&scenes::bench_hull_points()).unwrap();
        let shapes = [Shape::cuboid(Vec3::new(0.4, 0.3, 0.5)), Shape::sphere(0.45), Shape::capsule(0.4, 0.3), hull];
        let mut handles = Vec::new();
        for i in 0..27 {
            let p = Vec3::new((i % 3) as f32, ((i / 3) % 3) as f32, (i / 9) as f32) * 1.6 - Vec3::splat(1.6);
            let shape = match &shapes[i % 4] {
                Shape::ConvexHull(h) => Shape::ConvexHull(h.clone()),
                s => s.clone(),
            };
            let scale = if i % 4 == 3 { 0.35 } else { 1.0 };
            let shape = match shape {
                Shape::ConvexHull(h) => {
                    Shape::convex_hull(&h.vertices().iter().map(|v| *v * scale).collect::<Vec<_>>()).unwrap()
                }
                s => s,
            };
            handles.push(
                world
                    .add_body(
                        RigidBodyDesc::dynamic(shape)
                            .position(p)
                            .orientation(rng.rotation())
                            .linear_velocity(
                                -p * 1.5 + Vec3::new(rng.next_centered(), rng.next_centered(), rng.next_centered()),
                            )
                            .angular_velocity(Vec3::new(rng.next_centered(), rng.next_centered(), rng.next_centered()))
                            .restitution(e)
                            .friction(0.4),
                    )
                    .unwrap(),
            );
        }
        let momentum = |s: &mut dyn Solver| common::momentum(&world, &handles, &s.body_states().unwrap());
        for mut solver in common::solvers(&world) {
            let name = solver.backend();
            let (p0, l0) = momentum(solver.as_mut());
            let mut last = solver.stats().unwrap().kinetic_energy;
            let initial = last;
            let mut touched = 0;
            for step in 0..120 {
                solver.step();
                let stats = solver.stats().unwrap();
                touched = touched.max(stats.contacts);
                let ke = stats.kinetic_energy;
                assert!(ke <= last + 1e-5 * initial, "{name}: e = {e}, step {step}: {last} -> {ke}");
                last = ke;
            }
            assert!(touched > 20, "{name}: the bodies must collide ({touched} contacts)");
            let (p1, l1) = momentum(solver.as_mut());
            let scale: f32 = handles.iter().map(|h| world.mass_properties(*h).unwrap().mass * 3.0).sum();
            assert!((p1 - p0).length() < 1e-4 * scale, "{name}: e = {e}: momentum {p0} -> {p1}");
            assert!(
                (l1 - l0).length() < 1e-3 * (l0.length() + scale),
                "{name}: e = {e}: angular momentum {l0} -> {l1}"
            );
        }
    }
}

/// The coloring of a real pile: 1,000 boxes dropped into a pile. No color holds two
/// manifolds on one dynamic body, every manifold is in exactly one color or the overflow.
#[test]
fn coloring_of_a_1000_box_pile_is_valid() {
    let mut desc = scenes::bench_desc();
    desc.solver.iterations = 1;
    let mut world = World::new(desc).unwrap();
    scenes::add_ground(&mut world, 20.0).unwrap();
    for i in 0..1000 {
        let p =
            Vec3::new((i % 10) as f32 * 1.05 - 5.0, 0.5 + (i / 100) as f32 * 1.05, ((i / 10) % 10) as f32 * 1.05 - 5.0);
        world.add_body(RigidBodyDesc::dynamic(Shape::cuboid(Vec3::splat(0.5))).position(p)).unwrap();
    }
    let mut cpu = CpuSolver::new(&world).unwrap();
    cpu.step_many(90);
    let (manifolds, buckets) = (cpu.manifolds().to_vec(), cpu.color_buckets());
    let cpu_result = check_coloring(&manifolds, &buckets, &world);
    if let Some(ctx) = common::gpu() {
        let mut gpu = GpuSolver::new(ctx, &world).unwrap();
        gpu.step_many(90);
        let gpu_result = check_coloring(&gpu.manifolds().unwrap(), &gpu.color_buckets().unwrap(), &world);
        assert!(gpu_result.0 > 0 && gpu_result.0 <= 24);
        let _ = cpu_result;
    }
}

/// A star: 300 boxes resting on one dynamic slab, 300 manifolds sharing it. At most 24 get a
/// color (the cap), the rest overflow to Jacobi; the boxes still rest on the slab.
#[test]
fn a_star_overflows_to_jacobi_and_still_holds() {
    let mut world = World::new(scenes::bench_desc()).unwrap();
    scenes::add_ground(&mut world, 40.0).unwrap();
    world
        .add_body(RigidBodyDesc::dynamic(Shape::cuboid(Vec3::new(16.0, 0.5, 16.0))).position(Vec3::new(0.0, 0.5, 0.0)))
        .unwrap();
    let mut small = Vec::new();
    for i in 0..300 {
        let p = Vec3::new((i % 20) as f32 * 1.5 - 14.5, 1.25, (i / 20) as f32 * 1.5 - 10.5);
        small.push(world.add_body(RigidBodyDesc::dynamic(Shape::cuboid(Vec3::splat(0.25))).position(p)).unwrap());
    }
    let mut cpu = CpuSolver::new(&world).unwrap();
    cpu.step_many(120);
    let cpu_run = (
        cpu.backend(),
        cpu.manifolds().to_vec(),
        cpu.color_buckets(),
        cpu.body_states().unwrap(),
        cpu.stats().unwrap(),
    );
    let mut runs = vec![cpu_run];
    if let Some(ctx) = common::gpu() {
        let mut gpu = GpuSolver::new(ctx, &world).unwrap();
        gpu.step_many(120);
        let buckets = gpu.color_buckets().unwrap();
        runs.push((gpu.backend(), gpu.manifolds().unwrap(), buckets, gpu.body_states().unwrap(), gpu.stats().unwrap()));
    }
    for (name, manifolds, buckets, states, stats) in runs {
        let (colors, overflow) = check_coloring(&manifolds, &buckets, &world);
        assert!(overflow >= 276, "{name}: {overflow} overflowed, {colors} colors");
        assert_eq!(stats.overflow as usize, overflow, "{name}");
        for h in &small {
            let p = states[h.index()].position;
            assert!((p.y - 1.25).abs() < 0.01, "{name}: box {} at {p}", h.index());
        }
        assert!(stats.max_penetration < 0.01, "{name}");
    }
}

/// Everything in pure Jacobi mode: the star and a short stack hold too.
#[test]
fn pure_jacobi_mode_holds_a_short_stack() {
    let mut desc = scenes::bench_desc();
    desc.solver.constraint_solver = signorini::ConstraintSolver::Jacobi;
    let (world, boxes) = scenes::vertical_stack(desc, 4).unwrap();
    for mut solver in common::solvers(&world) {
        solver.step_many(300);
        let name = solver.backend();
        let stats = solver.stats().unwrap();
        assert_eq!(stats.colors, 0, "{name}: Jacobi mode colors nothing");
        assert!(stats.overflow >= 4, "{name}");
        let top = solver.body_state(*boxes.last().unwrap()).unwrap().position;
        assert!((top - Vec3::new(0.0, 3.5, 0.0)).length() < 0.03, "{name}: top at {top}");
    }
}

/// (colors used, overflow) after checking a step's coloring.
fn check_coloring(manifolds: &[GpuManifold], buckets: &(Vec<Vec<u32>>, Vec<u32>), world: &World) -> (usize, usize) {
    let (colors, overflow) = buckets;
    let mut seen = vec![0; manifolds.len()];
    for bucket in colors.iter().chain(std::iter::once(overflow)) {
        for &i in bucket {
            seen[i as usize] += 1;
        }
    }
    assert!(seen.iter().all(|&n| n == 1), "every manifold in exactly one bucket");
    for (c, bucket) in colors.iter().enumerate() {
        let mut owner = std::collections::HashMap::new();
        for &i in bucket {
            let m = &manifolds[i as usize];
            assert_eq!(m.color as usize, c);
            for body in [m.body_a, m.body_b] {
                if world.body(signorini::BodyHandle::from_index(body as usize)).unwrap().kind == BodyKind::Dynamic
                    && let Some(other) = owner.insert(body, i)
                {
                    panic!("color {c} holds manifolds {other} and {i} on body {body}");
                }
            }
        }
    }
    (colors.iter().filter(|c| !c.is_empty()).count(), overflow.len())
}

/// GPU stage timing: with it on, every group of stages of a rain with particles gets a
/// positive time from the GPU's timestamps, and the states stay bit-identical to an untimed
/// run. Without timestamp queries on the device, turning it on is a typed error.
#[test]
fn gpu_stage_timing_measures_every_group_and_changes_nothing() {
    let Some(ctx) = common::gpu() else { return };
    let mut world = scenes::rain(scenes::bench_desc(), 300, 7).unwrap();
    world
        .add_particles(
            (0..64).map(|i| Particle::new(Vec3::new((i % 8) as f32 * 0.3 - 1.0, 6.0 + (i / 8) as f32 * 0.3, 0.2), 0.1)),
        )
        .unwrap();
    let mut plain = GpuSolver::new(ctx, &world).unwrap();
    let mut timed = GpuSolver::new(ctx, &world).unwrap();
    assert_eq!(timed.stage_times(), None, "nothing is timed before time_stages");
    if !ctx.timestamps() {
        let e = timed.time_stages(true).unwrap_err();
        assert!(matches!(e, Error::Unsupported { .. }), "{e}");
        eprintln!("!!! {} has no timestamp queries inside passes: stage timing not tested", ctx.adapter());
        return;
    }
    timed.time_stages(true).unwrap();
    for _ in 0..3 {
        plain.step_many(10);
        timed.step_many(10);
        timed.synchronize().unwrap();
        let t = timed.stage_times().expect("a timed step after synchronize");
        eprintln!("{}: {t:?}", ctx.adapter());
        for (group, d) in t.groups() {
            assert!(d > std::time::Duration::ZERO, "{group} took no time: {t:?}");
        }
    }
    assert_eq!(plain.raw_bodies().unwrap(), timed.raw_bodies().unwrap(), "timing changed the step");
    assert_eq!(plain.particle_states().unwrap(), timed.particle_states().unwrap());
    timed.time_stages(false).unwrap();
    assert_eq!(timed.stage_times(), None);
}

/// GPU dispatch profiling: on a rain with particles, joints (one breakable) and bounces,
/// with the default passes and with the prepared passes and fused sweeps, a profiled step
/// accounts for every dispatch it records (`dispatches_per_step` of them, each kind within a
/// group of stages), its times by dispatch sum to its stage times' total, and the states stay
/// bit-identical to an unprofiled run.
#[test]
fn gpu_dispatch_profile_accounts_for_every_dispatch_and_changes_nothing() {
    let Some(ctx) = common::gpu() else { return };
    if !ctx.timestamps() {
        eprintln!("!!! {} has no timestamp queries inside passes: dispatch profiling not tested", ctx.adapter());
        return;
    }
    for fused in [false, true] {
        let mut desc = scenes::bench_desc();
        desc.solver.gpu_fused_sweeps = fused;
        desc.solver.gpu_prepared_passes = fused;
        let mut world = scenes::rain(desc, 200, 3).unwrap();
        let particles = (0..64).map(|i| Particle::new(Vec3::new((i % 8) as f32 * 0.3 - 1.0, 6.0, 0.2), 0.1));
        world.add_particles(particles).unwrap();
        let ball =
            |x: f32| RigidBodyDesc::dynamic(Shape::sphere(0.2)).position(Vec3::new(x, 12.0, 3.0)).restitution(0.5);
        let (a, b, c) = (
            world.add_body(ball(0.0)).unwrap(),
            world.add_body(ball(0.5)).unwrap(),
            world.add_body(ball(1.0)).unwrap(),
        );
        world.add_joint(JointDesc::spherical(a, b, Vec3::new(0.25, 12.0, 3.0))).unwrap();
        world.add_joint(JointDesc::fixed(b, c, Vec3::new(0.75, 12.0, 3.0)).breaks_at(50.0, f32::INFINITY)).unwrap();
        let mut plain = GpuSolver::new(ctx, &world).unwrap();
        let mut profiled = GpuSolver::new(ctx, &world).unwrap();
        assert!(profiled.dispatch_profile().is_none(), "nothing is profiled before profile_dispatches");
        profiled.profile_dispatches(true).unwrap();
        for _ in 0..3 {
            plain.step_many(10);
            profiled.step_many(10);
            profiled.synchronize().unwrap();
            let profile = profiled.dispatch_profile().expect("a profiled step after synchronize");
            let stages = profiled.stage_times().expect("stage times too");
            let counted: u32 = profile.iter().map(|t| t.dispatches).sum();
            assert_eq!(counted, profiled.dispatches_per_step(), "fused {fused}: {profile:#?}");
            let total: std::time::Duration = profile.iter().map(|t| t.time).sum();
            assert_eq!(total, stages.total(), "fused {fused}");
            let groups = stages.groups().map(|(name, _)| name);
            for t in profile {
                assert!(groups.contains(&t.stage), "{t:?}");
                assert_eq!(t.label.is_empty(), t.dispatches == 0, "{t:?}");
            }
            // With the fused sweeps the ranks, the cell sort and the coloring stage are one
            // dispatch each.
            let order = if fused {
                ["pairs_fused", "cells_fused", "coloring_fused"]
            } else {
                ["pair_rank", "cell_sort", "adjacency_fill"]
            };
            let common = ["collide_pairs", "integrate_positions", "solve_joints", "break_joints"];
            for kind in common.into_iter().chain(order) {
                assert!(profile.iter().any(|t| t.label.starts_with(kind)), "fused {fused}: no {kind} in {profile:#?}");
            }
        }
        let profile = profiled.dispatch_profile().unwrap();
        eprintln!("{} (fused {fused}), a profiled step:", ctx.adapter());
        for t in profile {
            eprintln!("  {:>14} {:>28} x{:<4} {:?}", t.stage, t.label, t.dispatches, t.time);
        }
        assert_eq!(plain.raw_bodies().unwrap(), profiled.raw_bodies().unwrap(), "profiling changed the step");
        assert_eq!(plain.particle_states().unwrap(), profiled.particle_states().unwrap());
        profiled.profile_dispatches(false).unwrap();
        profiled.step();
        profiled.synchronize().unwrap();
        assert!(profiled.dispatch_profile().is_none(), "profiling off");
        assert!(profiled.stage_times().is_some(), "stage timing stays on");
    }
}

/// On the CPU alone (no adapter needed), a box sliding without friction at 0.04 m/s (0.67 mm a
/// step) along a long fixed box recycles its manifold every other step: one step after a narrow
/// phase its anchors slid less than `RECYCLE_DRIFT` (1 mm), the next they slid 1.3 mm and the
/// narrow phase runs, keeps the frame and takes the slide out of the anchors, until the lever
/// arms drifted 5 mm and a new frame is taken. Counting the slide from when the frame was taken
/// instead recycles only the step after each new frame (6 of 48).
#[test]
fn a_slowly_sliding_box_recycles_every_other_step_on_the_cpu() {
    let mut world = World::new(scenes::bench_desc()).unwrap();
    world.add_body(RigidBodyDesc::fixed(Shape::cuboid(Vec3::new(0.5, 0.5, 2.0))).friction(0.0)).unwrap();
    let cube = RigidBodyDesc::dynamic(Shape::cuboid(Vec3::splat(0.5)))
        .position(Vec3::new(0.0, 0.999, -1.0))
        .linear_velocity(Vec3::new(0.0, 0.0, 0.04))
        .friction(0.0);
    world.add_body(cube).unwrap();
    let mut cpu = CpuSolver::new(&world).unwrap();
    let (mut recycled, mut fresh, mut run, mut longest) = (0, 0, 0, 0);
    for step in 0..48 {
        cpu.step();
        let m: GpuManifold = *cpu.manifolds().first().unwrap_or_else(|| panic!("step {step}: no manifold"));
        assert_eq!(m.count, 4, "step {step}: a face contact");
        assert_eq!(cpu.stats().unwrap().recycled, m.recycled, "step {step}: the statistics' count");
        recycled += m.recycled;
        fresh += u32::from(m.frame_kept == 0);
        run = if m.recycled != 0 { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    assert!(recycled >= 16, "{recycled} of 48 steps recycled");
    assert_eq!(longest, 1, "{longest} steps in a row recycled");
    assert!(fresh >= 4, "{fresh} new frames");
}

/// A world where nothing can bounce leaves the restitution passes out, on both backends; a
/// bouncy plane that nothing touches puts them back. Either way a pile of 300 boxes with three
/// colors (so the Jacobi overflow, which the restitution pass also averages, is never empty)
/// ends 60 steps in equal states: the passes change nothing there (as numbers: adding the
/// overflow's zeros can only turn a -0 into 0). On the GPU the bouncy world records 10 more
/// dispatches a step: the planes' restitution, the three colors, the overflow and its gather,
/// and the warm start's work on bouncing manifolds once in each of the four substeps; and, as
/// its plane is its first static collider, the static solve and relax passes in each substep.
#[test]
fn restitution_passes_are_left_out_only_where_they_change_nothing() {
    let mut desc = scenes::bench_desc();
    desc.solver.max_colors = 3;
    let still = scenes::box_pile(desc, 300, 5).unwrap();
    let mut bouncy = still.clone();
    let material = Material { restitution: 0.5, ..Default::default() };
    bouncy.add_plane(Plane { material, ..Plane::new(Vec3::Y, -50.0) }).unwrap();
    let run = |world: &World| {
        common::solvers(world)
            .into_iter()
            .map(|mut solver| {
                solver.step_many(60);
                let stats = solver.stats().unwrap();
                assert!(stats.overflow > 10 && stats.contacts > 500, "{}: {stats:?}", solver.backend());
                (solver.backend(), solver.body_states().unwrap())
            })
            .collect::<Vec<_>>()
    };
    for ((name, a), (_, b)) in run(&still).into_iter().zip(run(&bouncy)) {
        for (i, (x, y)) in a.iter().zip(&b).enumerate() {
            assert!(
                x.position == y.position
                    && x.orientation == y.orientation
                    && x.linear_velocity == y.linear_velocity
                    && x.angular_velocity == y.angular_velocity,
                "{name}: body {i}: {x:?} against {y:?}"
            );
        }
    }
    if let Some(ctx) = common::gpu() {
        let left_out = GpuSolver::new(ctx, &still).unwrap().dispatches_per_step();
        let kept = GpuSolver::new(ctx, &bouncy).unwrap().dispatches_per_step();
        // The far plane also brings back the static solve and relax passes, which a world
        // without static colliders leaves out.
        let solver = &still.desc().solver;
        let statics = if still.collider_count() == 0 {
            solver.substeps * (1 + u32::from(solver.relax_iterations > 0))
        } else {
            0
        };
        // And where nothing bounces the warm start integrates the velocities: a dispatch a
        // substep.
        let integrate = solver.substeps;
        assert_eq!(kept, left_out + 1 + (3 + 2) + 4 + statics + integrate);
    }
}

/// `Solver::contacts` reports what held each body, with the forces, on both backends, and the
/// two agree. After 2 s at rest: a 2 kg box on the floor carries a 1 kg box turned 0.3 rad on
/// top, and a 0.5 kg ball rests on a field's box; a 1 kg box slides over the floor (friction
/// 0.5 on both sides, so 0.5 combined).
/// - The floor's contacts with the lower box push it up with the weight of both, 29.43 N,
///   within 0.1 % (measured 29.4302 on both backends), along the floor's normal, their points on the floor and the surfaces
///   touching (1 mm); the upper box's contacts with it push the lower box down with the upper
///   one's weight (0.1 %; 9.81006), their normal down (1e-3), their points on the lower box's top face
///   (1 mm); the upper box meets nothing else. Every static contact's friction is under 1e-3 N.
/// - The field holds the ball with its weight, 4.905 N (0.1 %; 4.9050), at the ball's lowest point
///   (1 mm).
/// - The sliding box, 0.2 s after it was thrown at 3 m/s, is held up with its weight and
///   slowed by `μ m g` = 4.905 N against its motion, within 0.1 % (4.90500).
/// - Nothing is reported before the first step. The GPU reports the same contacts in the same
///   order, each point within 0.1 mm of the CPU's and each force within 1e-3 N.
#[test]
fn contacts_report_the_forces_that_hold_each_body() {
    let g = 9.81;
    let mut world = World::new(contacts_desc(Vec3::new(0.0, -g, 0.0))).unwrap();
    world.add_plane(Plane::new(Vec3::Y, 0.0).friction(0.5)).unwrap();
    let pedestal = Sdf::cuboid(Vec3::new(0.5, 0.25, 0.5)).translated(Vec3::new(3.0, 0.25, 0.0));
    let field = world.add_sdf(SdfCollider::new(pedestal).friction(0.5)).unwrap();
    let cube = |half: f32, mass: f32| RigidBodyDesc::dynamic(Shape::cuboid(Vec3::splat(half))).mass(mass).friction(0.5);
    let lower = world.add_body(cube(0.2, 2.0).position(Vec3::new(0.0, 0.2, 0.0))).unwrap();
    let upper = world
        .add_body(cube(0.15, 1.0).position(Vec3::new(0.0, 0.55, 0.0)).orientation(Quat::from_rotation_y(0.3)))
        .unwrap();
    let ball = world
        .add_body(RigidBodyDesc::dynamic(Shape::sphere(0.1)).mass(0.5).position(Vec3::new(3.0, 0.6, 0.0)))
        .unwrap();
    let slider = world.add_body(cube(0.1, 1.0).position(Vec3::new(-3.0, 0.1, 0.0))).unwrap();
    let floor = Collidable::Plane(PlaneHandle::from_index(0));
    let mut reports = Vec::new();
    for mut solver in common::solvers(&world) {
        let name = solver.backend();
        assert!(solver.contacts().unwrap().is_empty(), "{name}: contacts before the first step");
        solver.step_many(108);
        solver.set_velocity(slider, Vec3::new(3.0, 0.0, 0.0), Vec3::ZERO).unwrap();
        solver.step_many(12);
        let contacts = solver.contacts().unwrap();
        let of = |body: BodyHandle, with: Collidable| -> Vec<Contact> {
            contacts.iter().filter(|c| c.body == body && c.with == with).copied().collect()
        };
        let total = |cs: &[Contact]| cs.iter().map(|c| c.force).sum::<Vec3>();
        let near = |x: Vec3, y: Vec3, tolerance: f32| (x - y).length() <= tolerance * y.length();
        // The floor under the lower box.
        let under = of(lower, floor);
        let up = Vec3::new(0.0, 3.0 * g, 0.0);
        assert!(near(total(&under), up, 0.001), "{name}: the floor pushes the boxes with {}", total(&under));
        for c in under.iter().filter(|c| c.force.y > 0.0) {
            assert_eq!(c.normal, Vec3::Y, "{name}");
            assert!(c.point.y.abs() < 1e-3 && c.separation.abs() < 1e-3, "{name}: {c:?}");
        }
        // The upper box on the lower one.
        let between = of(lower, Collidable::Body(upper));
        assert!(
            near(total(&between), Vec3::new(0.0, -g, 0.0), 0.001),
            "{name}: the upper box presses with {}",
            total(&between)
        );
        for c in between.iter().filter(|c| c.force.y < 0.0) {
            assert!((c.normal + Vec3::Y).length() < 1e-3, "{name}: {c:?}");
            assert!((c.point.y - 0.4).abs() < 1e-3 && c.separation.abs() < 1e-3, "{name}: {c:?}");
        }
        assert!(contacts.iter().all(|c| c.body != upper), "{name}: the upper box touches something else");
        for c in contacts.iter().filter(|c| !matches!(c.with, Collidable::Body(_)) && c.body != slider) {
            let friction = c.force - c.force.dot(c.normal) * c.normal;
            assert!(friction.length() < 1e-3, "{name}: {c:?}");
        }
        // The ball on the field.
        let held = of(ball, Collidable::Sdf(field));
        let lowest = solver.body_state(ball).unwrap().position - Vec3::new(0.0, 0.1, 0.0);
        assert!(near(total(&held), Vec3::new(0.0, 0.5 * g, 0.0), 0.001), "{name}: {}", total(&held));
        assert!(held.iter().all(|c| c.point.distance(lowest) < 1e-3), "{name}: {held:?} against {lowest}");
        // The sliding box.
        let sliding = total(&of(slider, floor));
        let expected = Vec3::new(-0.5 * g, g, 0.0);
        assert!(near(sliding, expected, 0.001), "{name}: the floor pushes the sliding box with {sliding}");
        assert!(solver.body_state(slider).unwrap().linear_velocity.x > 1.0, "{name}: it stopped");
        eprintln!(
            "{name}: {} contacts; floor {}, upper box {}, field {}, sliding {sliding}",
            contacts.len(),
            total(&under),
            total(&between),
            total(&held)
        );
        reports.push(contacts);
    }
    if let [cpu, gpu] = &reports[..] {
        assert_eq!(cpu.len(), gpu.len());
        for (c, g) in cpu.iter().zip(gpu) {
            assert_eq!((c.body, c.with), (g.body, g.with));
            assert!(c.point.distance(g.point) < 1e-4 && c.force.distance(g.force) < 1e-3, "{c:?} against {g:?}");
        }
    }
}

/// Collision groups keep the pairs they exclude out of the broad phase, on both backends: on
/// the floor, a box of the debris group (in group 2, colliding with all but group 2) is passed
/// through by another debris box dropped onto it, which comes to rest on the floor inside it
/// (its centre 1 mm from its half size above the floor), while a default box dropped on
/// debris stacks on it (within 2 mm of three half sizes up), as one dropped on a box that
/// collides with its own group only. A box whose filter is empty meets no body: a default box
/// dropped on it passes through, since both sides must let the pair through. The floor holds
/// every box whatever its groups, no pair the groups exclude is among the reported contacts,
/// and the GPU's boxes are where the CPU's are within 0.1 mm.
#[test]
fn collision_groups_keep_excluded_pairs_apart() {
    let debris = CollisionGroups { memberships: 0b10, filter: !0b10 };
    let own = CollisionGroups { memberships: 0b100, filter: 0b100 };
    let aloof = CollisionGroups { memberships: u32::MAX, filter: 0 };
    for (a, b, collide) in [
        (debris, debris, false),
        (debris, CollisionGroups::ALL, true),
        (own, CollisionGroups::ALL, true),
        (aloof, CollisionGroups::ALL, false),
    ] {
        assert_eq!(a.interact(b), collide, "{a:?} {b:?}");
        assert_eq!(b.interact(a), collide, "{b:?} {a:?}");
    }
    let half = 0.2;
    let mut world = World::new(contacts_desc(Vec3::new(0.0, -9.81, 0.0))).unwrap();
    world.add_plane(Plane::new(Vec3::Y, 0.0)).unwrap();
    let cube = |x: f32, y: f32, groups| {
        RigidBodyDesc::dynamic(Shape::cuboid(Vec3::splat(half)))
            .mass(1.0)
            .position(Vec3::new(x, y, 0.0))
            .collision_groups(groups)
    };
    let mut columns = Vec::new();
    for (k, (below, above, stacks)) in [
        (debris, debris, false),
        (debris, CollisionGroups::ALL, true),
        (own, CollisionGroups::ALL, true),
        (aloof, CollisionGroups::ALL, false),
    ]
    .into_iter()
    .enumerate()
    {
        let x = 2.0 * k as f32;
        let lower = world.add_body(cube(x, half, below)).unwrap();
        let upper = world.add_body(cube(x, 3.0 * half + 0.3, above)).unwrap();
        columns.push((lower, upper, stacks));
    }
    let mut ends = Vec::new();
    for mut solver in common::solvers(&world) {
        let name = solver.backend();
        solver.step_many(120);
        let states = solver.body_states().unwrap();
        for &(lower, upper, stacks) in &columns {
            let (l, u) = (states[lower.index()].position, states[upper.index()].position);
            assert!((l.y - half).abs() < 1e-3, "{name}: the lower box is at {l}");
            let expected = if stacks { 3.0 * half } else { half };
            let tolerance = if stacks { 2e-3 } else { 1e-3 };
            assert!((u.y - expected).abs() < tolerance, "{name}: the upper box is at {u}, expected {expected} up");
        }
        let contacts = solver.contacts().unwrap();
        for &(lower, upper, stacks) in &columns {
            let met = contacts.iter().any(|c| c.body == lower && c.with == Collidable::Body(upper));
            assert_eq!(met, stacks, "{name}: {lower:?} and {upper:?}");
        }
        ends.push(states);
    }
    if let [cpu, gpu] = &ends[..] {
        for (c, g) in cpu.iter().zip(gpu) {
            assert!(c.position.distance(g.position) < 1e-4, "{} against {}", c.position, g.position);
        }
    }
}

/// Collision groups set on a running solver take effect from the next step, on both backends:
/// a box that meets no body falls towards another on the floor; given the default groups
/// before it arrives, it lands on it and stacks (its centre within 2 mm of three half sizes
/// up, a ray down from above meeting its top); given a filter that lets nothing through
/// again, it falls through the box below to the floor (within 1 mm of its half size up), the
/// pair is no longer among the contacts, and a ray that lets every group through passes over
/// it (it hits the lower box's top). The GPU's boxes are where the CPU's are within 0.1 mm.
#[test]
fn collision_groups_set_while_running_take_effect_from_the_next_step() {
    let half = 0.2;
    let aloof = CollisionGroups { memberships: u32::MAX, filter: 0 };
    let mut world = World::new(contacts_desc(Vec3::new(0.0, -9.81, 0.0))).unwrap();
    world.add_plane(Plane::new(Vec3::Y, 0.0)).unwrap();
    let cube =
        |y: f32| RigidBodyDesc::dynamic(Shape::cuboid(Vec3::splat(half))).mass(1.0).position(Vec3::new(0.0, y, 0.0));
    let lower = world.add_body(cube(half)).unwrap();
    let upper = world.add_body(cube(3.0 * half + 0.3).collision_groups(aloof)).unwrap();
    let ray_top = |solver: &mut Box<dyn Solver>| {
        let hit = solver.cast_ray(Vec3::new(0.05, 5.0, 0.05), Vec3::NEG_Y, f32::INFINITY, CollisionGroups::ALL);
        let hit = hit.unwrap().expect("the ray meets a box");
        (hit.object, 5.0 - hit.distance)
    };
    let mut ends = Vec::new();
    for mut solver in common::solvers(&world) {
        let name = solver.backend();
        // A sixth of a second: 0.14 m of the 0.3 m gap fallen.
        solver.step_many(10);
        let y = solver.body_state(upper).unwrap().position.y;
        assert!(y > 3.0 * half + 0.1, "{name}: the upper box is at {y}");
        solver.set_collision_groups(upper, CollisionGroups::ALL).unwrap();
        solver.step_many(120);
        let y = solver.body_state(upper).unwrap().position.y;
        assert!((y - 3.0 * half).abs() < 2e-3, "{name}: the upper box stacks: {y}");
        let (object, top) = ray_top(&mut solver);
        assert!(object == Collidable::Body(upper) && (top - 4.0 * half).abs() < 3e-3, "{name}: {object:?} at {top}");
        solver.set_collision_groups(upper, aloof).unwrap();
        solver.step_many(120);
        let states = solver.body_states().unwrap();
        for body in [lower, upper] {
            let y = states[body.index()].position.y;
            assert!((y - half).abs() < 1e-3, "{name}: {body:?} rests on the floor: {y}");
        }
        let contacts = solver.contacts().unwrap();
        assert!(!contacts.iter().any(|c| c.with == Collidable::Body(upper)), "{name}: {contacts:?}");
        let (object, top) = ray_top(&mut solver);
        assert!(object == Collidable::Body(lower) && (top - 2.0 * half).abs() < 2e-3, "{name}: {object:?} at {top}");
        assert!(matches!(
            solver.set_collision_groups(BodyHandle::from_index(7), aloof),
            Err(Error::InvalidHandle { .. })
        ));
        ends.push(states);
    }
    if let [cpu, gpu] = &ends[..] {
        for (c, g) in cpu.iter().zip(gpu) {
            assert!(c.position.distance(g.position) < 1e-4, "{} against {}", c.position, g.position);
        }
    }
}
