//! Snapshots of a running solver (`Solver::snapshot`, `Solver::restore`): a run restored from
//! one, in a solver just built or in the solver that went on past it, steps to the bits of the
//! run that took it, on each backend; across backends as close as the two ever are; read back
//! from JSON the same; and a snapshot that does not fit is refused with the solver unchanged.

mod common;

use signorini::CollisionGroups;
use signorini::prelude::*;
use signorini::snapshot::Snapshot;

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
    let mut world = common::world_with(Vec3::new(0.0, -9.81, 0.0));
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
    for mut solver in common::solvers(&e.world) {
        let backend = solver.backend();
        first_part(&e, solver.as_mut());
        let taken = solver.snapshot().unwrap();
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

        second_part(&e, solver.as_mut());
        let end = solver.snapshot().unwrap();
        assert!(solver.joint_reactions().unwrap()[e.late.0.index()].broken, "{backend}: the kick broke nothing");
        assert_eq!(end.steps, 80);

        let mut fresh: Box<dyn Solver> = match common::gpu().filter(|_| backend != "cpu") {
            Some(ctx) => Box::new(GpuSolver::new(ctx, &e.world).unwrap()),
            None => Box::new(CpuSolver::new(&e.world).unwrap()),
        };
        assert_eq!(fresh.backend(), backend);
        fresh.restore(&read).unwrap();
        assert_eq!(fresh.steps_taken(), 40);
        assert_same(&fresh.snapshot().unwrap(), &taken, &format!("{backend}: read back once restored"));
        second_part(&e, fresh.as_mut());
        assert_same(&fresh.snapshot().unwrap(), &end, &format!("{backend}, restored into a new solver"));

        solver.restore(&taken).unwrap();
        let reactions = solver.joint_reactions().unwrap();
        assert!(reactions[e.early.index()].broken && !reactions[e.late.0.index()].broken, "{backend}: {reactions:?}");
        second_part(&e, solver.as_mut());
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
