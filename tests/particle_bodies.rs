//! Two-way particle-body contacts on the CPU and the GPU: momentum exchanged exactly, a body
//! resting on a layer of particles at its analytic height, kinematic bodies sweeping particles,
//! CPU-vs-GPU agreement and bit-identical GPU reruns.

mod common;

use glam::Mat3;
use signorini::prelude::*;
use signorini::scenes::Lcg;

/// A world without gravity whose particles are frictionless.
fn free_world() -> World {
    let particles = ParticleSettings { material: Material { friction: 0.0, restitution: 0.0 }, ..Default::default() };
    World::new(WorldDesc { gravity: Vec3::ZERO, particles, ..WorldDesc::default() }).unwrap()
}

/// A 4 kg sphere at 1 m/s meets a 1 kg particle at rest head-on, no friction, no restitution:
/// after the contact both move at the common velocity of a perfectly inelastic collision,
/// `M v / (M + m) = 0.8 m/s`, within 1e-4 m/s, and momentum is conserved to 1e-5 kg m/s. A
/// kinematic box at 1 m/s (infinite mass) takes the particle along at exactly its speed and
/// keeps it one radius in front of its face (within 1 mm).
#[test]
fn a_body_and_a_particle_collide_inelastically_with_momentum_conserved() {
    let mut w = free_world();
    let ball = w
        .add_body(RigidBodyDesc::dynamic(Shape::sphere(0.1)).mass(4.0).friction(0.0).linear_velocity(Vec3::X))
        .unwrap();
    w.add_particle(Particle::new(Vec3::new(0.3, 0.0, 0.0), 0.02).mass(1.0)).unwrap();
    for mut solver in common::solvers(&w) {
        solver.step_many(30);
        let body = solver.body_state(ball).unwrap();
        let particle = solver.particle_states().unwrap()[0];
        let name = solver.backend();
        eprintln!("{name}: body {} m/s, particle {} m/s", body.linear_velocity.x, particle.velocity.x);
        assert!((body.linear_velocity.x - 0.8).abs() < 1e-4, "{name}: body at {}", body.linear_velocity);
        assert!((particle.velocity.x - 0.8).abs() < 1e-4, "{name}: particle at {}", particle.velocity);
        let momentum = 4.0 * body.linear_velocity + particle.velocity;
        assert!((momentum - Vec3::new(4.0, 0.0, 0.0)).length() < 1e-5, "{name}: momentum {momentum}");
        assert_eq!(solver.stats().unwrap().particle_body_dropped, 0);
    }

    let mut w = free_world();
    w.add_body(
        RigidBodyDesc::kinematic(Shape::cuboid(Vec3::new(0.05, 0.2, 0.2))).friction(0.0).linear_velocity(Vec3::X),
    )
    .unwrap();
    w.add_particle(Particle::new(Vec3::new(0.2, 0.05, 0.0), 0.02)).unwrap();
    for mut solver in common::solvers(&w) {
        solver.step_many(60);
        let particle = solver.particle_states().unwrap()[0];
        let name = solver.backend();
        assert!((particle.velocity - Vec3::X).length() < 1e-4, "{name}: particle at {}", particle.velocity);
        // The box's face is at 0.05 + t; the particle's centre one radius ahead of it.
        let ahead = particle.position.x - (0.05 + 1.0);
        assert!((ahead - 0.02).abs() < 1e-3, "{name}: particle centre {ahead} m ahead of the face");
    }
}

/// Restitution between particles and bodies, e the larger of the two materials'. A 4 kg
/// sphere at rest meets a 1 kg particle at 3 m/s head-on without gravity or friction: with
/// e = 1 they leave at the velocities of the elastic impact, `(m - M) v / (m + M) = -1.8` and
/// `2 m v / (m + M) = 1.2` m/s, with e = 0.5 at `-0.6` and `0.9` m/s, each within 1 % of the
/// closing speed, momentum kept to 1e-5 and kinetic energy never growing. A particle dropped
/// from 1 m onto a static box rebounds to e² m: 0.25 m with the particles' e = 0.5, 0.64 m with
/// the box's e = 0.8 and the particles' 0, within 2 cm (as on a plane). Below the restitution
/// threshold (1 m/s) nothing bounces.
#[test]
fn particles_bounce_off_bodies_by_restitution() {
    for (particle_e, body_e, speed, after) in
        [(1.0_f32, 0.0_f32, 3.0_f32, (-1.8_f32, 1.2_f32)), (0.0, 0.5, 3.0, (-0.6, 0.9)), (1.0, 1.0, 0.5, (0.1, 0.1))]
    {
        let particles = ParticleSettings { material: Material::new(0.0, particle_e), ..Default::default() };
        let mut w = World::new(WorldDesc { gravity: Vec3::ZERO, particles, ..WorldDesc::default() }).unwrap();
        let ball =
            w.add_body(RigidBodyDesc::dynamic(Shape::sphere(0.1)).mass(4.0).friction(0.0).restitution(body_e)).unwrap();
        w.add_particle(Particle::new(Vec3::new(-0.3, 0.0, 0.0), 0.02).mass(1.0).velocity(Vec3::X * speed)).unwrap();
        for mut solver in common::solvers(&w) {
            let name = solver.backend();
            let energy = |solver: &mut dyn Solver| {
                let (b, q) = (solver.body_state(ball).unwrap(), solver.particle_states().unwrap()[0]);
                2.0 * b.linear_velocity.length_squared() + 0.5 * q.velocity.length_squared()
            };
            let mut last = energy(solver.as_mut());
            for _ in 0..40 {
                solver.step();
                let now = energy(solver.as_mut());
                assert!(now <= last * (1.0 + 1e-5), "{name}: energy grew from {last} to {now}");
                last = now;
            }
            let body = solver.body_state(ball).unwrap();
            let particle = solver.particle_states().unwrap()[0];
            let tolerance = 0.01 * speed;
            assert!(
                (particle.velocity.x - after.0).abs() < tolerance
                    && (body.linear_velocity.x - after.1).abs() < tolerance,
                "{name}: e {particle_e}/{body_e} at {speed} m/s: particle {}, body {}, expected {after:?}",
                particle.velocity.x,
                body.linear_velocity.x
            );
            let momentum = 4.0 * body.linear_velocity + particle.velocity;
            assert!((momentum - Vec3::X * speed).length() < 1e-5 * speed, "{name}: momentum {momentum}");
        }
    }

    for (particle_e, body_e, height) in [(0.5_f32, 0.0_f32, 0.25_f32), (0.0, 0.8, 0.64)] {
        let particles = ParticleSettings { material: Material::new(0.0, particle_e), ..Default::default() };
        let mut w =
            World::new(WorldDesc { gravity: Vec3::new(0.0, -9.81, 0.0), particles, ..WorldDesc::default() }).unwrap();
        w.add_body(
            RigidBodyDesc::fixed(Shape::cuboid(Vec3::new(1.0, 0.5, 1.0)))
                .position(Vec3::new(0.0, -0.5, 0.0))
                .friction(0.0)
                .restitution(body_e),
        )
        .unwrap();
        let r = 0.01;
        w.add_particle(Particle::new(Vec3::new(0.0, 1.0 + r, 0.0), r)).unwrap();
        for mut solver in common::solvers(&w) {
            let name = solver.backend();
            // Down in 0.45 s; the rebound's top within the next 0.5 s.
            solver.step_many(30);
            let mut top = f32::MIN;
            for _ in 0..36 {
                solver.step();
                top = top.max(solver.particle_states().unwrap()[0].position.y - r);
            }
            assert!(
                (top - height).abs() < 0.02,
                "{name}: e {particle_e}/{body_e}: rebound to {top} m, expected {height}"
            );
        }
    }
}

/// A 10 g particle at 100 m/s meets a 1 cm thick plate, without gravity, friction or
/// restitution. It moves 42 cm a substep, so both ends of every substep lie clear of the plate
/// and only continuous (speculative) detection sees it. A fixed plate stops it on its near face
/// (centre one radius in front, within 1 mm, at rest within 1e-3 m/s). A free 1 kg plate and
/// the particle leave together at the velocity of a perfectly inelastic collision,
/// `m v / (m + M) = 0.990099 m/s`, within 1e-3 m/s, momentum conserved within 1e-4 relative,
/// the particle still in front of the plate.
#[test]
fn a_fast_particle_does_not_pass_through_a_thin_plate() {
    let plate = Shape::cuboid(Vec3::new(0.005, 0.2, 0.2));
    let (r, m, v) = (0.01, 0.01, 100.0);
    let bullet = Particle::new(Vec3::new(-0.5, 0.0, 0.0), r).mass(m).velocity(Vec3::X * v);

    let mut w = free_world();
    w.add_body(RigidBodyDesc::fixed(plate.clone()).friction(0.0)).unwrap();
    w.add_particle(bullet).unwrap();
    for mut solver in common::solvers(&w) {
        solver.step_many(30);
        let name = solver.backend();
        let p = solver.particle_states().unwrap()[0];
        eprintln!("{name}: fixed plate: particle at {} m, {} m/s", p.position.x, p.velocity.x);
        assert!((p.position.x - (-0.005 - r)).abs() < 1e-3, "{name}: particle at {} m", p.position.x);
        assert!(p.velocity.length() < 1e-3, "{name}: particle moving at {}", p.velocity);
    }

    let mut w = free_world();
    let free = w.add_body(RigidBodyDesc::dynamic(plate).mass(1.0).friction(0.0)).unwrap();
    w.add_particle(bullet).unwrap();
    let common_speed = m * v / (m + 1.0);
    for mut solver in common::solvers(&w) {
        solver.step_many(30);
        let name = solver.backend();
        let p = solver.particle_states().unwrap()[0];
        let b = solver.body_state(free).unwrap();
        eprintln!(
            "{name}: free plate at {} m/s, particle at {} m/s, {} m in front of the plate's centre",
            b.linear_velocity.x,
            p.velocity.x,
            b.position.x - p.position.x
        );
        assert!((b.linear_velocity.x - common_speed).abs() < 1e-3, "{name}: plate at {}", b.linear_velocity);
        assert!((p.velocity.x - common_speed).abs() < 1e-3, "{name}: particle at {}", p.velocity);
        let momentum = b.linear_velocity + m * p.velocity;
        assert!((momentum - Vec3::X * (m * v)).length() < 1e-4 * m * v, "{name}: momentum {momentum}");
        assert!(p.position.x < b.position.x - 0.005, "{name}: the particle passed the plate");
        assert_eq!(solver.stats().unwrap().particle_body_dropped, 0);
    }
}

/// Total linear and angular momentum about the origin of the particles and a free box.
fn momenta(solver: &mut dyn Solver, body: BodyHandle, inertia: Mat3, mass: f32, m: f32) -> (Vec3, Vec3) {
    let b = solver.body_state(body).unwrap();
    let r = Mat3::from_quat(b.orientation);
    let mut p = mass * b.linear_velocity;
    let mut l = mass * b.position.cross(b.linear_velocity) + r * inertia * r.transpose() * b.angular_velocity;
    for s in solver.particle_states().unwrap() {
        p += m * s.velocity;
        l += m * s.position.cross(s.velocity);
    }
    (p, l)
}

/// A stream of 300 particles hits a free box off its centre, without gravity or friction: the
/// box is pushed and spun, linear momentum is conserved within 1e-4 relative (every impulse
/// acts on both sides), angular momentum about the origin within 1e-3 (frictionless impulses
/// act along the line through the particle's centre and the body's surface point, so they
/// exert no net torque; what moves it, 2e-4 measured, is the particles' position projection
/// among themselves, which shifts a moving particle sideways of its velocity), and kinetic
/// energy never grows.
#[test]
fn particles_hitting_a_free_box_conserve_momentum() {
    let mut w = free_world();
    let half = Vec3::new(0.1, 0.1, 0.1);
    let density = 200.0;
    let box_ = w
        .add_body(RigidBodyDesc::dynamic(Shape::cuboid(half)).density(density).friction(0.0).position(Vec3::ZERO))
        .unwrap();
    let props = Shape::cuboid(half).mass_properties(density);
    let (r, m) = (0.01, 0.01);
    let mut rng = Lcg(5);
    w.add_particles((0..300).map(|i| {
        let lane = Vec3::new(0.0, 0.02 + rng.range(0.0, 0.05), 0.1 * rng.next_centered());
        Particle::new(Vec3::new(0.15 + 0.025 * i as f32 / 3.0, 0.0, 0.0) + lane, r).mass(m).velocity(-2.0 * Vec3::X)
    }))
    .unwrap();
    for mut solver in common::solvers(&w) {
        let name = solver.backend();
        let (p0, l0) = momenta(solver.as_mut(), box_, props.local_inertia(), props.mass, m);
        let energy = |solver: &mut Box<dyn Solver>| {
            let b = solver.body_state(box_).unwrap();
            let r = Mat3::from_quat(b.orientation);
            let iw = r * props.local_inertia() * r.transpose();
            let particles: f32 =
                solver.particle_states().unwrap().iter().map(|s| 0.5 * m * s.velocity.length_squared()).sum();
            particles
                + 0.5 * props.mass * b.linear_velocity.length_squared()
                + 0.5 * b.angular_velocity.dot(iw * b.angular_velocity)
        };
        let mut last = energy(&mut solver);
        for _ in 0..12 {
            solver.step_many(5);
            let e = energy(&mut solver);
            assert!(e <= last * (1.0 + 1e-5), "{name}: kinetic energy grew from {last} to {e} J");
            last = e;
        }
        let (p, l) = momenta(solver.as_mut(), box_, props.local_inertia(), props.mass, m);
        let b = solver.body_state(box_).unwrap();
        eprintln!("{name}: p {p0} -> {p}, L {l0} -> {l}, box v {} w {}", b.linear_velocity, b.angular_velocity);
        assert!(b.linear_velocity.x < -0.1, "{name}: the box was not pushed: {}", b.linear_velocity);
        assert!(b.angular_velocity.length() > 0.1, "{name}: the box was not spun: {}", b.angular_velocity);
        assert!((p - p0).length() <= 1e-4 * p0.length(), "{name}: momentum {p0} -> {p}");
        assert!((l - l0).length() <= 1e-3 * l0.length(), "{name}: angular momentum {l0} -> {l}");
        assert_eq!(solver.stats().unwrap().particle_body_dropped, 0);
    }
}

/// A 10 x 10 layer of particles (radius 1 cm) on the floor between four walls, and a box of
/// half height 5 cm dropped on it: after 2 s the box rests on the layer, its centre at
/// `2 r + 5 cm = 7 cm` within 2 mm, still (under 1 cm/s) and level (under 1°); every particle
/// stays in the layer (centre within 2 mm of `r` above the floor).
#[test]
fn a_box_rests_on_a_layer_of_particles_at_its_analytic_height() {
    let mut w = World::new(WorldDesc::default()).unwrap();
    let r = 0.01;
    let side = 0.1;
    w.add_plane(Plane::new(Vec3::Y, 0.0)).unwrap();
    for n in [Vec3::X, -Vec3::X, Vec3::Z, -Vec3::Z] {
        w.add_plane(Plane::new(n, -side)).unwrap();
    }
    w.add_particles((0..100).map(|i| {
        let (a, b) = ((i % 10) as f32, (i / 10) as f32);
        Particle::new(Vec3::new(-side + r + 2.0 * r * a, r, -side + r + 2.0 * r * b), r)
    }))
    .unwrap();
    let box_ = w
        .add_body(
            RigidBodyDesc::dynamic(Shape::cuboid(Vec3::new(0.08, 0.05, 0.08)))
                .density(500.0)
                .position(Vec3::new(0.0, 0.1, 0.0)),
        )
        .unwrap();
    for mut solver in common::solvers(&w) {
        solver.step_many(120);
        let name = solver.backend();
        let b = solver.body_state(box_).unwrap();
        let tilt = (b.orientation * Vec3::Y).angle_between(Vec3::Y).to_degrees();
        eprintln!("{name}: box at {} m, speed {} m/s, tilt {tilt} deg", b.position.y, b.linear_velocity.length());
        assert!((b.position.y - 0.07).abs() < 2e-3, "{name}: box centre at {} m", b.position.y);
        assert!(b.linear_velocity.length() < 1e-2, "{name}: box moving at {}", b.linear_velocity);
        assert!(tilt < 1.0, "{name}: box tilted {tilt} degrees");
        for (i, s) in solver.particle_states().unwrap().iter().enumerate() {
            assert!((s.position.y - r).abs() < 2e-3, "{name}: particle {i} at height {}", s.position.y);
        }
        assert_eq!(solver.stats().unwrap().particle_body_dropped, 0);
    }
}

/// Mixed bodies (spheres, boxes, capsules, hulls) dropped onto a column of 1,500 particles in a
/// container: at every step each body finds the same particles in the same order on the CPU and
/// the GPU; after 30 steps the CPU and the GPU agree on every body within 1 mm and on 99 % of
/// the particles within 0.1 mm, every particle within 1 mm (measured: all within 2e-6 m on
/// lavapipe and llvmpipe GL); two GPU runs are bit-identical after 60. The particles are coarse
/// enough that no body touches more than about 120 at once: each body walks its candidates in
/// one thread, and Mesa's software drivers end an invocation's loops after 65,535 trips in all,
/// so a body among 3,000 finer particles lost up to 15 % of its contacts on llvmpipe GL.
#[test]
fn cpu_and_gpu_agree_on_bodies_among_particles() {
    let Some(ctx) = common::gpu() else { return };
    let mut w = World::new(WorldDesc::default()).unwrap();
    w.add_plane(Plane::new(Vec3::Y, 0.0)).unwrap();
    w.add_sdf(SdfCollider::new(Sdf::hollow_box(Vec3::new(0.25, 0.6, 0.25)).translated(Vec3::new(0.0, 0.55, 0.0))))
        .unwrap();
    let r = 0.02;
    let mut rng = Lcg(8);
    w.add_particles((0..1500).map(|i| {
        let (a, b, c) = ((i % 11) as f32, ((i / 11) % 11) as f32, (i / 121) as f32);
        let jitter = Vec3::new(rng.next_centered(), 0.0, rng.next_centered()) * 0.1 * r;
        Particle::new(Vec3::new(-0.205 + a * 2.05 * r, r + c * 2.05 * r, -0.205 + b * 2.05 * r) + jitter, r)
    }))
    .unwrap();
    let hull = Shape::convex_hull(&[
        Vec3::new(0.05, 0.0, 0.0),
        Vec3::new(-0.04, 0.03, 0.02),
        Vec3::new(0.0, -0.04, 0.03),
        Vec3::new(0.01, 0.02, -0.05),
        Vec3::new(-0.02, -0.03, -0.02),
    ])
    .unwrap();
    let shapes = [Shape::sphere(0.04), Shape::cuboid(Vec3::new(0.05, 0.03, 0.04)), Shape::capsule(0.03, 0.025), hull];
    for (k, shape) in shapes.into_iter().enumerate() {
        let x = -0.12 + 0.08 * k as f32;
        w.add_body(RigidBodyDesc::dynamic(shape).density(800.0).position(Vec3::new(x, 0.62, 0.02 * k as f32))).unwrap();
    }
    let mut cpu = CpuSolver::new(&w).unwrap();
    let mut gpu = GpuSolver::new(ctx, &w).unwrap();
    let mut touching = 0;
    for step in 0..30 {
        cpu.step();
        gpu.step();
        // Every body finds the same particles, in the same order, as its CPU twin.
        let lists = cpu.particle_body_lists();
        assert_eq!(lists, gpu.particle_body_lists().unwrap(), "step {step}: the bodies' particle lists differ");
        touching = touching.max(lists.iter().map(Vec::len).max().unwrap_or(0));
    }
    assert!(touching > 20, "the bodies never met the particles (at most {touching} at once)");
    let (a, g) = (cpu.particle_states().unwrap(), gpu.particle_states().unwrap());
    let close = a.iter().zip(&g).filter(|(a, g)| (a.position - g.position).length() < 1e-4).count();
    let (ba, bg) = (cpu.body_states().unwrap(), gpu.body_states().unwrap());
    let worst_body = ba.iter().zip(&bg).map(|(a, g)| (a.position - g.position).length()).fold(0.0_f32, f32::max);
    let worst = a.iter().zip(&g).map(|(a, g)| (a.position - g.position).length()).fold(0.0_f32, f32::max);
    eprintln!(
        "{close} of {} particles within 1e-4 m, worst {worst:e} m; bodies within {worst_body:e} m; up to {touching} particles on one body",
        a.len()
    );
    assert!(close * 100 >= a.len() * 99, "only {close} of {} particles agree", a.len());
    assert!(worst < 1e-3, "a particle differs by {worst} m");
    assert!(worst_body < 1e-3, "bodies differ by {worst_body} m");
    let (cs, gs) = (cpu.stats().unwrap(), gpu.stats().unwrap());
    assert_eq!((cs.particle_body_dropped, gs.particle_body_dropped), (0, 0));
    // The bodies fell (from 0.62 m) and lie on particles: on the floor itself none of them
    // would have its centre above 0.05 m.
    assert!(ba.iter().all(|b| b.position.y < 0.5 && b.position.y > 0.06), "bodies at {ba:?}");

    let mut again = GpuSolver::new(ctx, &w).unwrap();
    gpu.step_many(30);
    again.step_many(60);
    assert_eq!(gpu.raw_bodies().unwrap(), again.raw_bodies().unwrap());
    assert_eq!(gpu.particle_states().unwrap(), again.particle_states().unwrap());
}

/// 64 particles, each with six bodies around it (one on each side, 1 mm beyond its surface,
/// inside the contact margin), pressed into the first by a velocity of 0.1 m/s. A particle has
/// four slots, so it keeps the four bodies of smallest index and drops two, as the CPU does.
/// The bodies are numbered side by side, so each side fills one workgroup of the GPU's fill,
/// and the workgroups race for the particles' slots. The first side's bodies are plates whose
/// bounds cover about 128 cells of the particle grid, the others' a few, so the plates' threads
/// take longer. (1,024 more particles float far away: with only 64, the plates would check the
/// 64 one by one instead of walking their cells, and the race did not show.) When a counter handed
/// out the slots to whichever thread came first, lavapipe and llvmpipe kept bodies 0, 192, 256
/// and 320 for particle 0 here. The GPU keeps the same four as the CPU, every step, and two GPU
/// runs stay bit-identical.
#[test]
fn a_particle_touching_more_bodies_than_its_slots_keeps_the_lowest_indices() {
    let Some(ctx) = common::gpu() else { return };
    let touched = 64u32;
    let (r, half, plate) = (0.05, 0.03, Vec3::new(0.03, 0.45, 0.45));
    let mut w = free_world();
    w.add_particles((0..touched).map(|p| Particle::new(Vec3::new(p as f32, 0.0, 0.0), r).velocity(Vec3::X * 0.1)))
        .unwrap();
    w.add_particles((0..1024).map(|k| Particle::new(Vec3::new((k % 64) as f32, 5.0, 0.2 * (k / 64) as f32), r)))
        .unwrap();
    let sides = [Vec3::X, Vec3::Y, -Vec3::Y, Vec3::Z, -Vec3::X, -Vec3::Z];
    for (k, side) in sides.into_iter().enumerate() {
        let shape = Shape::cuboid(if k == 0 { plate } else { Vec3::splat(half) });
        for p in 0..touched {
            let at = Vec3::new(p as f32, 0.0, 0.0) + side * (r + half + 0.001);
            w.add_body(RigidBodyDesc::dynamic(shape.clone()).density(1000.0).position(at)).unwrap();
        }
    }
    let mut cpu = CpuSolver::new(&w).unwrap();
    let mut gpu = GpuSolver::new(ctx, &w).unwrap();
    let mut again = GpuSolver::new(ctx, &w).unwrap();
    let mut expected: Vec<Vec<u32>> = (0..touched).map(|p| (0..4).map(|s| s * touched + p).collect()).collect();
    expected.resize(touched as usize + 1024, Vec::new());
    for step in 0..12 {
        cpu.step();
        gpu.step();
        again.step();
        assert_eq!(cpu.particle_body_slots(), expected, "step {step}: the CPU's slots");
        assert_eq!(gpu.particle_body_slots().unwrap(), expected, "step {step}: the GPU's slots");
        assert_eq!(again.particle_body_slots().unwrap(), expected, "step {step}: the rerun's slots");
        let (cs, gs) = (cpu.stats().unwrap(), gpu.stats().unwrap());
        assert_eq!((cs.particle_body_dropped, gs.particle_body_dropped), (2 * touched, 2 * touched), "step {step}");
    }
    assert_eq!(gpu.raw_bodies().unwrap(), again.raw_bodies().unwrap());
    assert_eq!(gpu.particle_states().unwrap(), again.particle_states().unwrap());
    let (a, g) = (cpu.particle_states().unwrap(), gpu.particle_states().unwrap());
    let worst = a.iter().zip(&g).map(|(a, g)| (a.position - g.position).length()).fold(0.0_f32, f32::max);
    assert!(worst < 1e-5, "a particle differs from its CPU twin by {worst} m");
    // The plates took the pressed particles' momentum: each of them slowed down.
    let speeds: Vec<f32> = g[..touched as usize].iter().map(|q| q.velocity.x).collect();
    assert!(speeds.iter().all(|&v| v < 0.09), "{speeds:?}");
}
