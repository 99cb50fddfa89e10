//! Snapshots of a running solver (`Solver::snapshot`, `Solver::restore`): a run restored from
//! one, in a solver just built or in the solver that went on past it, steps to the bits of the
//! run that took it, on each backend; across backends as close as the two ever are; read back
//! from JSON the same; and a snapshot that does not fit is refused with the solver unchanged.

mod common;

use signorini::prelude::*;
use signorini::snapshot::Snapshot;
use signorini::{CollisionGroups, Error};

/// Handles of what `everything` built and what its runs act on.
struct Everything {
    world: World,
    pushed: BodyHandle,
    regrouped: BodyHandle,
    struck: BodyHandle,
    /// A pendulum that breaks within the first 40 steps, and one a kick breaks after them.
    early: JointHandle,
    late: (JointHandle, BodyHandle),
    motor: JointHandle,
}

/// A little of every kind of state a step reads of the step before: boxes stacked and tumbling
/// onto a floor (static slots, manifolds with kept frames, recycled contacts, color seeds,
/// faces that keep pairs apart), a bouncing ball (restitution), a ball on a field, particles
/// heaped onto a box (kept contacts, particle-body contacts), two breakable pendulums, a
/// motorized hinge, and bodies given a force and collision groups.
fn everything() -> Everything {
    everything_with(WorldDesc::default())
}

/// [`everything`] with other settings.
fn everything_with(desc: WorldDesc) -> Everything {
    let mut world = World::new(desc).unwrap();
    world.add_plane(Plane::new(Vec3::Y, 0.0).friction(0.5).restitution(0.1)).unwrap();
    world.add_sdf(SdfCollider::new(Sdf::sphere(0.5).translated(Vec3::new(3.0, -0.2, 3.0)))).unwrap();
    let cube = |half: f32| Shape::cuboid(Vec3::splat(half));
    let mut boxes = Vec::new();
    for k in 0..4 {
        let at = Vec3::new(0.02 * k as f32, 0.25 + 0.5 * k as f32, 0.0);
        boxes.push(world.add_body(RigidBodyDesc::dynamic(cube(0.25)).position(at).friction(0.6)).unwrap());
    }
    // A box beside the stack, turned 45° about y, its box overlapping the bottom box's by 5 cm
    // on x and on z, its faces 18 cm from it: a pair a face keeps apart.
    let diamond = RigidBodyDesc::dynamic(cube(0.25)).orientation(Quat::from_rotation_y(std::f32::consts::FRAC_PI_4));
    world.add_body(diamond.position(Vec3::new(0.554, 0.25, 0.554))).unwrap();
    let turned = Quat::from_rotation_z(0.5) * Quat::from_rotation_x(0.3);
    let tumbling = RigidBodyDesc::dynamic(cube(0.2)).position(Vec3::new(0.1, 2.6, 0.0)).orientation(turned);
    let regrouped = world.add_body(tumbling.angular_velocity(Vec3::new(1.0, 2.0, 0.5))).unwrap();
    world
        .add_body(RigidBodyDesc::dynamic(Shape::sphere(0.15)).position(Vec3::new(-1.0, 1.0, 0.0)).restitution(0.5))
        .unwrap();
    world.add_body(RigidBodyDesc::dynamic(Shape::sphere(0.2)).position(Vec3::new(3.1, 1.0, 3.0))).unwrap();
    let pushed = world
        .add_body(RigidBodyDesc::dynamic(Shape::cuboid(Vec3::new(0.3, 0.1, 0.2))).position(Vec3::new(-3.0, 0.1, 2.0)))
        .unwrap();
    let tray = world
        .add_body(RigidBodyDesc::dynamic(Shape::cuboid(Vec3::new(0.4, 0.1, 0.4))).position(Vec3::new(-3.0, 0.1, 0.0)))
        .unwrap();
    let particles = (0..48).map(|i| {
        let (x, z, y) = ((i % 4) as f32, ((i / 4) % 4) as f32, (i / 16) as f32);
        Particle::new(Vec3::new(-3.15 + 0.1 * x, 0.3 + 0.1 * y, -0.15 + 0.1 * z), 0.045)
    });
    world.add_particles(particles).unwrap();
    // Pendulums from static pivots, released level: the weak one breaks at twice its weight's
    // tension on the way down, the strong one only when kicked.
    let pivot =
        |world: &mut World, at: Vec3| world.add_body(RigidBodyDesc::fixed(Shape::sphere(0.01)).position(at)).unwrap();
    let bob = |world: &mut World, at: Vec3| {
        world.add_body(RigidBodyDesc::dynamic(Shape::sphere(0.1)).mass(1.0).position(at)).unwrap()
    };
    let (p1, p2) = (pivot(&mut world, Vec3::new(5.0, 3.0, 0.0)), pivot(&mut world, Vec3::new(5.0, 3.0, 2.0)));
    let (b1, b2) = (bob(&mut world, Vec3::new(6.0, 3.0, 0.0)), bob(&mut world, Vec3::new(5.0, 2.0, 2.0)));
    let early = JointDesc::spherical(p1, b1, Vec3::new(5.0, 3.0, 0.0)).breaks_at(2.0 * 9.81, f32::INFINITY);
    let early = world.add_joint(early).unwrap();
    let late = JointDesc::spherical(p2, b2, Vec3::new(5.0, 3.0, 2.0)).breaks_at(3.3 * 9.81, f32::INFINITY);
    let late = (world.add_joint(late).unwrap(), b2);
    let post = pivot(&mut world, Vec3::new(0.0, 2.0, -4.0));
    let plate = world
        .add_body(RigidBodyDesc::dynamic(Shape::cuboid(Vec3::new(0.5, 0.05, 0.2))).position(Vec3::new(0.5, 2.0, -4.0)))
        .unwrap();
    let hinge = JointDesc::revolute(post, plate, Vec3::new(0.0, 2.0, -4.0), Vec3::Y).motor(0.5, 2.0).limits(-1.0, 1.0);
    let motor = world.add_joint(hinge).unwrap();
    let _ = tray;
    Everything { world, pushed, regrouped, struck: boxes[1], early, late, motor }
}

/// The first 40 steps of a run of `everything`, with the program setting things between them,
/// ending with an impulse not yet applied.
fn first_part(e: &Everything, solver: &mut dyn Solver) {
    solver.step_many(10);
    solver.set_force(e.pushed, Vec3::new(3.0, 0.0, 0.0), Vec3::new(0.0, 0.2, 0.0)).unwrap();
    solver.set_gravity(Vec3::new(0.3, -9.81, 0.0)).unwrap();
    solver.set_collision_groups(e.regrouped, CollisionGroups { memberships: 0b11, filter: u32::MAX }).unwrap();
    solver.step_many(20);
    solver.set_joint_motor(e.motor, JointMotor { speed: -0.8, max_effort: 3.0 }).unwrap();
    solver.step_many(10);
    solver.apply_impulse(e.struck, Vec3::new(0.5, 0.0, 0.2), Vec3::new(0.0, 0.9, 0.1)).unwrap();
}

/// The 40 steps after: the late pendulum kicked until it breaks, and the gravity set back.
fn second_part(e: &Everything, solver: &mut dyn Solver) {
    solver.step_many(5);
    solver.apply_impulse(e.late.1, Vec3::new(0.0, 0.0, 9.0), Vec3::new(5.0, 2.0, 2.0)).unwrap();
    solver.step_many(15);
    solver.set_gravity(Vec3::new(0.0, -9.81, 0.0)).unwrap();
    solver.step_many(20);
}

/// Every backend: a snapshot after the first part, restored into a solver just built and, after
/// the second part, into the solver that took it, is stepped through the second part again to
/// the same bits (the whole state compared: bodies, contacts' and joints' warm starts,
/// particles), the JSON read back the same to the bit. The weak pendulum had broken before the
/// snapshot and the strong one breaks after it: restored, the new solver has the first broken
/// and the old one has the second whole again.
#[test]
fn a_restored_snapshot_steps_to_the_same_bits() {
    let e = everything();
    for solver in common::solvers(&e.world) {
        let gpu = solver.backend() != "cpu";
        restores_to_the_same_bits(&e, solver, &|| match common::gpu().filter(|_| gpu) {
            Some(ctx) => Box::new(GpuSolver::new(ctx, &e.world).unwrap()),
            None => Box::new(CpuSolver::new(&e.world).unwrap()),
        });
    }
}

/// The same on the GPU's other paths: the manifold passes reading prepared records, and the
/// sweeps fused into one workgroup's dispatch each.
#[test]
fn a_restored_snapshot_steps_to_the_same_bits_on_the_gpus_other_paths() {
    let Some(ctx) = common::gpu() else { return };
    for (prepared, fused) in [(true, false), (false, true)] {
        let mut desc = WorldDesc::default();
        (desc.solver.gpu_prepared_passes, desc.solver.gpu_fused_sweeps) = (prepared, fused);
        let e = everything_with(desc);
        let make = || -> Box<dyn Solver> { Box::new(GpuSolver::new(ctx, &e.world).unwrap()) };
        eprintln!("prepared passes {prepared}, fused sweeps {fused}:");
        restores_to_the_same_bits(&e, make(), &make);
    }
}

/// `solver` through the first part, a snapshot, the second part; then the snapshot, read back
/// from JSON, restored into `fresh()` and stepped through the second part again, and restored
/// into `solver` likewise: each ends where `solver` did, to the bit.
fn restores_to_the_same_bits(e: &Everything, mut solver: Box<dyn Solver>, fresh: &dyn Fn() -> Box<dyn Solver>) {
    let backend = solver.backend();
    first_part(e, solver.as_mut());
    let taken = solver.snapshot().unwrap();
    let stats = solver.stats().unwrap();
    assert_eq!(taken.steps, 40);
    let joints = solver.joint_reactions().unwrap();
    assert!(joints[e.early.index()].broken && !joints[e.late.0.index()].broken, "{backend}: {joints:?}");
    assert!(!taken.manifolds.is_empty(), "{backend}: no body contacts");
    assert!(!taken.separating_faces.is_empty(), "{backend}: no pair a face kept apart");
    assert!(taken.static_contacts.iter().any(|c| c.in_contact == 1 && c.normal_impulse > 0.0));
    assert!(taken.particle_contacts.iter().any(|c| c.id != 0), "{backend}: no kept particle contacts");
    assert!(taken.manifolds.iter().any(|m| m.recycled == 1), "{backend}: nothing recycled");
    assert_eq!(taken.impulses.len(), 1);

    let json = serde_json::to_string(&taken).unwrap();
    let read: Snapshot = serde_json::from_str(&json).unwrap();
    assert_eq!(read, taken, "{backend}: the snapshot read back from JSON differs");

    second_part(e, solver.as_mut());
    let end = solver.snapshot().unwrap();
    assert!(solver.joint_reactions().unwrap()[e.late.0.index()].broken, "{backend}: the kick broke nothing");
    assert_eq!(end.steps, 80);

    let mut fresh = fresh();
    assert_eq!(fresh.backend(), backend);
    fresh.restore(&read).unwrap();
    assert_eq!(fresh.steps_taken(), 40);
    assert_same(&fresh.snapshot().unwrap(), &taken, &format!("{backend}: read back once restored"));
    assert_eq!(fresh.stats().unwrap(), stats, "{backend}: the statistics once restored");
    assert!(stats.colors > 0 && stats.recycled > 0, "{backend}: {stats:?}");
    second_part(e, fresh.as_mut());
    assert_same(&fresh.snapshot().unwrap(), &end, &format!("{backend}, restored into a new solver"));

    solver.restore(&taken).unwrap();
    assert_eq!(solver.stats().unwrap(), stats, "{backend}: the statistics once restored into the solver that took it");
    let reactions = solver.joint_reactions().unwrap();
    assert!(reactions[e.early.index()].broken && !reactions[e.late.0.index()].broken, "{backend}: {reactions:?}");
    second_part(e, solver.as_mut());
    assert_same(&solver.snapshot().unwrap(), &end, &format!("{backend}, restored into the solver that took it"));
    eprintln!(
        "{backend}: {} manifolds, {} separated pairs, {} static slots, {} kept particle contacts, {} bytes of JSON",
        taken.manifolds.len(),
        taken.separating_faces.len(),
        taken.static_contacts.len(),
        taken.particle_contacts.len(),
        json.len()
    );
}

/// `a` is `b`, or the first item that differs.
fn assert_same(a: &Snapshot, b: &Snapshot, what: &str) {
    assert_eq!((a.steps, a.gravity), (b.steps, b.gravity), "{what}: steps and gravity");
    same(what, "body", &a.bodies, &b.bodies);
    same(what, "impulse", &a.impulses, &b.impulses);
    same(what, "static contact", &a.static_contacts, &b.static_contacts);
    same(what, "manifold", &a.manifolds, &b.manifolds);
    same(what, "separating face", &a.separating_faces, &b.separating_faces);
    same(what, "joint", &a.joints, &b.joints);
    same(what, "particle", &a.particles, &b.particles);
    same(what, "kept particle contact", &a.particle_contacts, &b.particle_contacts);
    assert_eq!(a, b, "{what}");
}

/// `a` is `b`, or the first of them that differs.
fn same<T: PartialEq + std::fmt::Debug>(what: &str, name: &str, a: &[T], b: &[T]) {
    assert_eq!(a.len(), b.len(), "{what}: {name} count");
    if let Some(k) = (0..a.len()).find(|&k| a[k] != b[k]) {
        panic!("{what}: {name} {k} differs: {:?} against {:?}", a[k], b[k]);
    }
}

/// 704 boxes stacked in 64 columns of 11 on a static ground box, a centimetre apart side by
/// side: some 1,800 manifolds, resting and speculative, more than the 1,024 a GPU solver's
/// contact buffers start with (at one pair a body).
fn columns(fused: bool) -> World {
    let mut desc = WorldDesc::default();
    desc.solver.gpu_fused_sweeps = fused;
    desc.solver.gpu_contacts_per_body = 1;
    let mut world = World::new(desc).unwrap();
    signorini::scenes::add_ground(&mut world, 10.0).unwrap();
    for i in 0..704 {
        let (x, z, y) = ((i % 8) as f32, ((i / 8) % 8) as f32, (i / 64) as f32);
        let at = Vec3::new(0.41 * x, 0.2 + 0.401 * y, 0.41 * z);
        world.add_body(RigidBodyDesc::dynamic(Shape::cuboid(Vec3::splat(0.2))).position(at).friction(0.6)).unwrap();
    }
    world
}

/// A snapshot taken on one backend restored into the other: the CPU's, 30 steps into a settling
/// block of 704 boxes, restored into a GPU solver with the fused sweeps (each substep one
/// workgroup's dispatch) whose buffers start too small for its 1,800 manifolds and grow for them
/// before its first step; the ten steps after agree with the CPU's within 1e-5 m (measured:
/// 3.6e-7) with as many contacts. Without its manifolds the same state, restored on the CPU,
/// ends 8.6 cm from the CPU's own run after those ten steps (the block jolts as its warm starts
/// start from zero): asserted to be ten times the backends' distance at least. The GPU's own
/// snapshot then restores into a third solver to its bits.
#[test]
fn a_snapshot_moves_between_backends() {
    let Some(ctx) = common::gpu() else { return };
    let world = columns(true);
    let mut cpu = CpuSolver::new(&world).unwrap();
    cpu.step_many(30);
    let taken = cpu.snapshot().unwrap();
    assert!(taken.manifolds.len() > 1024, "{} manifolds", taken.manifolds.len());
    let mut gpu = GpuSolver::new(ctx, &world).unwrap();
    let (pairs, manifolds) = gpu.contact_capacity();
    gpu.restore(&taken).unwrap();
    assert!(gpu.contact_capacity().1 > manifolds && gpu.contact_capacity().0 >= pairs, "the buffers did not grow");
    assert_eq!(gpu.snapshot().unwrap(), taken, "the GPU reads back another state than it was given");
    cpu.step_many(10);
    gpu.step_many(10);
    let (c, g) = (cpu.body_states().unwrap(), gpu.body_states().unwrap());
    let apart = c.iter().zip(&g).map(|(c, g)| (c.position - g.position).length()).fold(0.0, f32::max);
    let (cs, gs) = (cpu.stats().unwrap(), gpu.stats().unwrap());
    eprintln!(
        "{} manifolds restored; after 10 steps the backends are {apart:.2e} m apart, {} and {} contacts, {} dropped",
        taken.manifolds.len(),
        cs.contacts,
        gs.contacts,
        gs.dropped
    );
    assert!(apart < 1e-5, "the backends are {apart} m apart");
    // The control: the same state without its manifolds (warm starts, kept frames, colors).
    let mut cold = taken.clone();
    cold.manifolds.clear();
    let mut control = CpuSolver::new(&world).unwrap();
    control.restore(&cold).unwrap();
    control.step_many(10);
    let k = control.body_states().unwrap();
    let off = c.iter().zip(&k).map(|(c, k)| (c.position - k.position).length()).fold(0.0, f32::max);
    eprintln!("without the manifolds the CPU's own run ends {off:.2e} m from it");
    assert!(off > 10.0 * apart.max(1e-6), "the manifolds changed nothing: {off} m");
    assert_eq!((cs.contacts, gs.dropped), (gs.contacts, 0));

    let mid = gpu.snapshot().unwrap();
    let mut again = GpuSolver::new(ctx, &world).unwrap();
    again.restore(&mid).unwrap();
    gpu.step_many(5);
    again.step_many(5);
    assert_same(&again.snapshot().unwrap(), &gpu.snapshot().unwrap(), "the fused GPU, restored");
}

/// A change that spoils a snapshot.
type Damage<'a> = Box<dyn Fn(&mut Snapshot) + 'a>;

/// A snapshot that does not fit the solver is refused with a typed error naming what, and the
/// solver is left as it was: one of another world, and one of this world with each kind of
/// damage no step leaves (numbers that are not finite or whose squares overflow, rotations and
/// normals not of unit length, indices out of range, lists out of order, a manifold whose
/// radii, friction or restitution are not its bodies' or between two static bodies, a force on
/// a static body, a static body moved, a motor where there is none, a break of a joint that
/// cannot break, two impulses for one body).
#[test]
fn a_snapshot_that_does_not_fit_is_refused() {
    let e = everything();
    let other = columns(false);
    let foreign = CpuSolver::new(&other).unwrap().snapshot().unwrap();
    for mut solver in common::solvers(&e.world) {
        let backend = solver.backend();
        first_part(&e, solver.as_mut());
        let good = solver.snapshot().unwrap();
        let pivot = e.world.joint(e.early).unwrap().body_a.index();
        let pivots = (pivot as u32, e.world.joint(e.late.0).unwrap().body_a.index() as u32);
        assert_eq!(good.static_contacts[0].in_contact, 1);
        let damaged: Vec<(&str, Damage)> = vec![
            ("the bodies", Box::new(|s| *s = foreign.clone())),
            ("the bodies", Box::new(|s| _ = s.bodies.pop())),
            ("the particles", Box::new(|s| _ = s.particles.pop())),
            ("the static contact slots", Box::new(|s| _ = s.static_contacts.pop())),
            ("the kept particle contacts", Box::new(|s| s.particle_contacts.clear())),
            ("gravity", Box::new(|s| s.gravity.y = f32::NAN)),
            ("body 2", Box::new(|s| s.bodies[2].linear_velocity.x = f32::INFINITY)),
            ("body 2", Box::new(|s| s.bodies[2].angular_velocity.z = 1e20)),
            ("body 2", Box::new(|s| s.bodies[2].principal_orientation = Quat::from_xyzw(0.0, 0.0, 0.0, 0.0))),
            ("body 2", Box::new(|s| s.bodies[2].centre_of_mass.x = f32::NAN)),
            ("body 2", Box::new(|s| s.bodies[2].step_displacement.y = 1e30)),
            ("body 2", Box::new(|s| s.bodies[2].step_rotation = Quat::from_xyzw(0.0, 0.0, 0.5, 0.5))),
            ("manifold 0", Box::new(|s| s.manifolds[0].body_b = 10_000)),
            ("manifold 0", Box::new(|s| s.manifolds[0].count = 5)),
            ("manifold 0", Box::new(|s| s.manifolds[0].color = 40)),
            ("manifold 0", Box::new(|s| s.manifolds[0].points[1].normal_impulse = f32::NAN)),
            ("manifold 0", Box::new(|s| s.manifolds[0].points[0].tangent_impulse_1 = 1e30)),
            ("manifold 0", Box::new(|s| s.manifolds[0].normal *= 2.0)),
            ("manifold 0", Box::new(|s| s.manifolds[0].friction += 0.1)),
            ("manifold 0", Box::new(|s| s.manifolds[0].restitution = 0.9)),
            ("manifold 0", Box::new(|s| s.manifolds[0].radius_b = 0.3)),
            (
                "manifold 0",
                Box::new(|s| {
                    s.manifolds.truncate(1);
                    (s.manifolds[0].body_a, s.manifolds[0].body_b) = (pivots.0, pivots.1);
                }),
            ),
            ("manifold 1", Box::new(|s| s.manifolds.swap(0, 1))),
            ("separating face 0", Box::new(|s| s.separating_faces[0].0 = [4, 0])),
            ("static contact slot 3", Box::new(|s| s.static_contacts[3].in_contact = 7)),
            ("static contact slot 3", Box::new(|s| s.static_contacts[3].tangent_impulse_2 = f32::NAN)),
            ("static contact slot 0", Box::new(|s| s.static_contacts[0].normal *= 0.5)),
            ("static contact slot 0", Box::new(|s| s.static_contacts[0].restitution = 2.0)),
            ("static contact slot 0", Box::new(|s| s.static_contacts[0].friction = -0.5)),
            ("joint 0", Box::new(|s| s.joints[0].angular_impulse.y = -1e30)),
            ("kept particle contact 5", Box::new(|s| s.particle_contacts[5].impulse.x = 1e30)),
            ("joint 0", Box::new(|s| s.joints[0].linear_impulse.x = f32::NAN)),
            ("joint 0", Box::new(|s| s.joints[0].motor = Some(JointMotor { speed: 1.0, max_effort: 1.0 }))),
            ("joint 2", Box::new(|s| s.joints[2].motor = None)),
            ("joint 2", Box::new(|s| s.joints[2].motor = Some(JointMotor { speed: 1.0, max_effort: -1.0 }))),
            ("joint 2", Box::new(|s| s.joints[2].broken = true)),
            ("kept particle contact 5", Box::new(|s| s.particle_contacts[5].id = 49)),
            ("kept particle contact 5", Box::new(|s| s.particle_contacts[5].id = 0x8000_0002)),
            ("impulse 0", Box::new(|s| s.impulses[0].body = BodyHandle::from_index(pivot))),
            ("impulse 1", Box::new(|s| s.impulses.push(s.impulses[0]))),
            ("impulse 0", Box::new(|s| s.impulses[0].moment.y = f32::NAN)),
        ];
        for (item, damage) in &damaged {
            let mut bad = good.clone();
            damage(&mut bad);
            match solver.restore(&bad) {
                Err(Error::InvalidSnapshot { item: got, reason }) => {
                    assert_eq!(&got, item, "{backend}: {reason}");
                }
                other => panic!("{backend}: damage to {item} gave {other:?}"),
            }
        }
        // A static body moved, or given a force.
        let mut moved = good.clone();
        moved.bodies[pivot].centre_of_mass.y += 0.1;
        let mut pushed = good.clone();
        pushed.bodies[pivot].force = Vec3::X;
        for bad in [moved, pushed] {
            let refused = solver.restore(&bad);
            assert!(
                matches!(&refused, Err(Error::InvalidSnapshot { item, .. }) if *item == format!("body {pivot}")),
                "{refused:?}"
            );
        }
        assert_same(&solver.snapshot().unwrap(), &good, &format!("{backend}: after the refusals"));
        solver.restore(&good).unwrap();
    }
}

/// A stack of four boxes on a floor beside a pendulum, settled for a second.
fn stack() -> World {
    let mut world = common::world_with(Vec3::new(0.0, -9.81, 0.0));
    world.add_plane(Plane::new(Vec3::Y, 0.0).friction(0.6)).unwrap();
    for k in 0..4 {
        let at = Vec3::new(0.0, 0.25 + 0.5 * k as f32, 0.0);
        world.add_body(RigidBodyDesc::dynamic(Shape::cuboid(Vec3::splat(0.25))).position(at).friction(0.6)).unwrap();
    }
    let pivot = world.add_body(RigidBodyDesc::fixed(Shape::sphere(0.01)).position(Vec3::new(3.0, 3.0, 0.0))).unwrap();
    let bob = world.add_body(RigidBodyDesc::dynamic(Shape::sphere(0.1)).position(Vec3::new(4.0, 3.0, 0.0))).unwrap();
    world.add_joint(JointDesc::spherical(pivot, bob, Vec3::new(3.0, 3.0, 0.0))).unwrap();
    world
}

/// A running simulation grows (`Snapshot::extended_to`): a snapshot of the settled stack, made
/// for the same world with a ball far off, a second pendulum and a few particles, restores into a solver of that world on each backend. The first world's
/// bodies, contacts and joint then step to the bits of the run that never grew (nothing added
/// touches them), and the ball falls as the integrator's closed form says to 1e-4 m. Grown
/// instead by a box dropped on top of the stack from 5 cm, the stack carries it: after a second
/// no box of it has moved 2 mm, and the new box rests on the top box, its centre half a metre
/// above that box's within 1 mm, slower than 1 cm/s.
#[test]
fn a_running_simulation_grows_without_starting_over() {
    let world = stack();
    let (n, joints) = (world.body_count(), world.joint_count());
    for mut solver in common::solvers(&world) {
        let backend = solver.backend();
        let build = |w: &World| -> Box<dyn Solver> {
            match common::gpu().filter(|_| backend != "cpu") {
                Some(ctx) => Box::new(GpuSolver::new(ctx, w).unwrap()),
                None => Box::new(CpuSolver::new(w).unwrap()),
            }
        };
        solver.step_many(60);
        let settled = solver.snapshot().unwrap();
        assert!(settled.manifolds.len() >= 3, "{backend}: the stack has {} manifolds", settled.manifolds.len());

        let mut grown = world.clone();
        let ball =
            grown.add_body(RigidBodyDesc::dynamic(Shape::sphere(0.2)).position(Vec3::new(20.0, 5.0, 0.0))).unwrap();
        let hook =
            grown.add_body(RigidBodyDesc::fixed(Shape::sphere(0.01)).position(Vec3::new(8.0, 3.0, 0.0))).unwrap();
        let second =
            grown.add_body(RigidBodyDesc::dynamic(Shape::sphere(0.1)).position(Vec3::new(9.0, 3.0, 0.0))).unwrap();
        grown.add_joint(JointDesc::spherical(hook, second, Vec3::new(8.0, 3.0, 0.0))).unwrap();
        grown.add_particles((0..6).map(|i| Particle::new(Vec3::new(-5.0 + 0.2 * i as f32, 0.05, 4.0), 0.05))).unwrap();
        let mut on = build(&grown);
        on.restore(&settled.extended_to(&world, &grown).unwrap()).unwrap();
        solver.step_many(30);
        on.step_many(30);
        let (before, after) = (solver.snapshot().unwrap(), on.snapshot().unwrap());
        same(&backend, "body", &before.bodies, &after.bodies[..n]);
        same(&backend, "manifold", &before.manifolds, &after.manifolds);
        same(
            &backend,
            "static contact",
            &before.static_contacts,
            &after.static_contacts[..before.static_contacts.len()],
        );
        same(&backend, "joint", &before.joints, &after.joints[..joints]);
        // Free fall from rest over 30 steps of 4 substeps, semi-implicit: y = y0 - g h² Σk.
        let (h, substeps) = (1.0 / 240.0_f64, 120.0);
        let fallen = 9.81 * h * h * substeps * (substeps + 1.0) / 2.0;
        let y = on.body_state(ball).unwrap().position.y as f64;
        assert!((y - (5.0 - fallen)).abs() < 1e-4, "{backend}: the ball is at {y}, expected {}", 5.0 - fallen);
        assert!(on.joint_reactions().unwrap()[joints].force.length() > 0.5, "{backend}: the added joint holds nothing");
        assert!(on.body_state(second).unwrap().position.y < 3.0 - 0.1, "{backend}: the second pendulum did not swing");

        let mut topped = world.clone();
        let lid =
            RigidBodyDesc::dynamic(Shape::cuboid(Vec3::splat(0.25))).position(Vec3::new(0.0, 2.3, 0.0)).friction(0.6);
        let lid = topped.add_body(lid).unwrap();
        let mut carrying = build(&topped);
        carrying.restore(&solver.snapshot().unwrap().extended_to(&world, &topped).unwrap()).unwrap();
        let start = carrying.body_states().unwrap();
        carrying.step_many(60);
        let end = carrying.body_states().unwrap();
        let moved = (0..4).map(|i| (end[i].position - start[i].position).length()).fold(0.0, f32::max);
        let rest = end[lid.index()].position.y - end[3].position.y;
        eprintln!(
            "{backend}: the stack moved {:.2} mm at most under the lid, which rests {:.2} mm into the top box, its speed {:.1e} m/s",
            1e3 * moved,
            1e3 * (0.5 - rest),
            end[lid.index()].linear_velocity.length()
        );
        assert!(moved < 2e-3, "{backend}: the stack moved {moved} m");
        assert!((rest - 0.5).abs() < 1e-3, "{backend}: the lid rests {rest} m above the top box's centre");
        assert!(end[lid.index()].linear_velocity.length() < 1e-2, "{backend}: the lid still moves");
    }
}

/// A snapshot is extended only to a world that holds its own first, as it was; a joint added
/// between two of its bodies that keeps them from colliding drops their manifold.
#[test]
fn a_snapshot_extends_only_to_a_world_that_holds_its_own() {
    let world = stack();
    let taken = CpuSolver::new(&world).unwrap().snapshot().unwrap();
    let mut moved = world.scene();
    moved.bodies[1].position.x += 0.1;
    let mut planes = world.scene();
    planes.planes.push(Plane::new(Vec3::X, -5.0));
    let mut fewer = world.scene();
    fewer.joints.clear();
    for (scene, item) in [(moved, "body 1"), (planes, "the planes and fields"), (fewer, "the joints")] {
        let other = World::from_scene(scene).unwrap();
        match taken.extended_to(&world, &other) {
            Err(Error::InvalidSnapshot { item: got, .. }) => assert_eq!(got, item),
            other => panic!("{item}: {other:?}"),
        }
    }
    // A weld added between the two lowest boxes keeps them apart: their manifold goes.
    let mut solver = CpuSolver::new(&world).unwrap();
    solver.step_many(10);
    let settled = solver.snapshot().unwrap();
    let pair = |m: &signorini::layout::GpuManifold| (m.body_a, m.body_b);
    assert!(settled.manifolds.iter().any(|m| pair(m) == (0, 1)));
    let mut welded = world.clone();
    let (a, b) = (BodyHandle::from_index(0), BodyHandle::from_index(1));
    welded.add_joint(JointDesc::fixed(a, b, Vec3::new(0.0, 0.5, 0.0))).unwrap();
    let grown = settled.extended_to(&world, &welded).unwrap();
    assert!(!grown.manifolds.iter().any(|m| pair(m) == (0, 1)));
    assert_eq!(grown.manifolds.len(), settled.manifolds.len() - 1);
    CpuSolver::new(&welded).unwrap().restore(&grown).unwrap();

    let other = stack();
    let foreign = CpuSolver::new(&columns(false)).unwrap().snapshot().unwrap();
    assert!(matches!(foreign.extended_to(&world, &other), Err(Error::InvalidSnapshot { .. })));
}
