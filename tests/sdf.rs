//! Rigid bodies against static signed distance fields, on the CPU and the GPU: analytic rest
//! positions and oscillation periods, containment, CPU-vs-GPU agreement and bad input.

mod common;

use signorini::prelude::*;
use signorini::scenes::Lcg;
use signorini::{Error, SdfHandle};

fn world() -> World {
    World::new(WorldDesc::default()).unwrap()
}

/// A cube (half size a = 0.1 m) dropped into a spherical bowl of radius 1 m comes to rest with
/// its four lower corners on the sphere, so its centre is `sqrt(1 - 2 a²) - a` = 0.88995 m from
/// the sphere's centre (within 5 mm after 3 s), where the slope is within the friction cone.
#[test]
fn a_box_settles_at_the_bottom_of_a_bowl() {
    let mut w = world();
    w.add_sdf(SdfCollider::new(Sdf::bowl(1.0, 0.1))).unwrap();
    let a = 0.1;
    let cube = w
        .add_body(
            RigidBodyDesc::dynamic(Shape::cuboid(Vec3::splat(a)))
                .position(Vec3::new(0.05, -0.5, 0.02))
                .orientation(Quat::from_rotation_y(0.3)),
        )
        .unwrap();
    let expect = (1.0 - 2.0 * a * a).sqrt() - a;
    for mut solver in common::solvers(&w) {
        solver.step_many(180);
        let s = solver.body_state(cube).unwrap();
        let stats = solver.stats().unwrap();
        eprintln!(
            "{}: centre {} ({} from the sphere's centre, expected {expect}), {:?}",
            solver.backend(),
            s.position,
            s.position.length(),
            stats
        );
        let d = s.position.length();
        assert!(
            (d - expect).abs() < 5e-3,
            "{}: centre {d} m from the bowl's centre, expected {expect}",
            solver.backend()
        );
        let slope = (Vec3::new(s.position.x, 0.0, s.position.z).length() / -s.position.y).atan();
        assert!(slope.tan() < 0.6, "{}: resting on a slope of {slope} rad", solver.backend());
        assert!(
            s.linear_velocity.length() < 1e-2 && s.angular_velocity.length() < 1e-1,
            "{}: still moving",
            solver.backend()
        );
        assert!(stats.max_penetration < 5e-3);
        assert!(stats.contacts >= 4);
    }
}

/// The same settling in a bowl baked from a triangle mesh into a grid SDF (radius 0.5 m, a
/// 5 cm cube): the cube's centre ends `sqrt(R² - 2 a²) - a` = 0.44497 m from the bowl's centre,
/// within 5 mm (the grid's interpolation error is under a quarter of its 2.5 cm cells, the
/// tessellation's under a millimetre).
#[test]
fn a_box_settles_in_a_bowl_baked_from_a_mesh() {
    let (radius, a) = (0.5_f32, 0.05_f32);
    let (v, t) = signorini::scenes::bowl_mesh(radius, 0.05, 32, 16);
    let grid = signorini::sdf::GridSdf::from_mesh(&v, &t, 0.025).unwrap();
    let mut w = world();
    w.add_sdf(SdfCollider::new(Sdf::grid(grid))).unwrap();
    let cube = w
        .add_body(
            RigidBodyDesc::dynamic(Shape::cuboid(Vec3::splat(a)))
                .position(Vec3::new(0.02, -0.3, -0.01))
                .orientation(Quat::from_rotation_y(0.5)),
        )
        .unwrap();
    let expect = (radius * radius - 2.0 * a * a).sqrt() - a;
    for mut solver in common::solvers(&w) {
        solver.step_many(180);
        let s = solver.body_state(cube).unwrap();
        let d = s.position.length();
        eprintln!("{}: centre {} ({d} from the bowl's centre, expected {expect})", solver.backend(), s.position);
        assert!(
            (d - expect).abs() < 5e-3,
            "{}: centre {d} m from the bowl's centre, expected {expect}",
            solver.backend()
        );
        assert!(s.linear_velocity.length() < 1e-2, "{}: still moving", solver.backend());
        assert!(solver.stats().unwrap().max_penetration < 5e-3);
    }
}

/// A ball rolling without slipping in a spherical bowl oscillates about the bottom with period
/// `2π sqrt(7 (R - r) / (5 g))` for small amplitudes (the rolling ball's kinetic energy is
/// `7/10 m v²`); sliding without friction would give `2π sqrt((R - r) / g)`, 16 % shorter.
/// R = 1 m, r = 0.1 m, released at 0.15 rad: T = 2.2518 s (the finite amplitude adds 0.14 %).
/// Measured from the times at which the ball crosses the bottom, within 2 %.
#[test]
fn a_ball_rolls_in_a_bowl_with_the_rolling_period() {
    let (big_r, r, g) = (1.0_f32, 0.1_f32, 9.81_f32);
    let expect = 2.0 * std::f32::consts::PI * (7.0 * (big_r - r) / (5.0 * g)).sqrt();
    let mut w = world();
    w.add_sdf(SdfCollider::new(Sdf::bowl(big_r, 0.1))).unwrap();
    let theta = 0.15_f32;
    let ball = w
        .add_body(
            RigidBodyDesc::dynamic(Shape::sphere(r))
                .position((big_r - r) * Vec3::new(theta.sin(), -theta.cos(), 0.0))
                .friction(0.8),
        )
        .unwrap();
    let dt = w.desc().dt;
    for mut solver in common::solvers(&w) {
        let mut crossings = Vec::new();
        let mut last_x = solver.body_state(ball).unwrap().position.x;
        for step in 1..=480 {
            solver.step();
            let x = solver.body_state(ball).unwrap().position.x;
            if last_x > 0.0 && x <= 0.0 {
                crossings.push((step as f32 - 1.0 + last_x / (last_x - x)) * dt);
            }
            last_x = x;
        }
        assert!(crossings.len() >= 3, "{}: crossings {crossings:?}", solver.backend());
        let periods: Vec<f32> = crossings.windows(2).map(|c| c[1] - c[0]).collect();
        let period = periods.iter().sum::<f32>() / periods.len() as f32;
        eprintln!("{}: period {period} s (rolling {expect} s), crossings {crossings:?}", solver.backend());
        assert!((period / expect - 1.0).abs() < 0.02, "{}: period {period} vs {expect}", solver.backend());
        assert!(solver.stats().unwrap().max_penetration < 2e-3);
    }
}

/// An SDF half space is a plane: a box dropped on `half_space(+y, 0)` lands and rests like one
/// dropped on the plane y = 0 (height within 5 mm of its half size, no drift, no spin), and a
/// sphere with e = 0.5 dropped from 1 m rebounds to 0.25 m within 2 cm.
#[test]
fn a_half_space_field_behaves_like_a_plane() {
    let mut w = world();
    w.add_sdf(SdfCollider::new(Sdf::half_space(Vec3::Y, 0.0))).unwrap();
    let start = Vec3::new(0.3, 1.5, -0.2);
    let cube = w.add_body(RigidBodyDesc::dynamic(Shape::cuboid(Vec3::splat(0.5))).position(start)).unwrap();
    let ball = w
        .add_body(RigidBodyDesc::dynamic(Shape::sphere(0.1)).position(Vec3::new(5.0, 1.1, 0.0)).restitution(0.5))
        .unwrap();
    for mut solver in common::solvers(&w) {
        let mut apex = 0.0_f32;
        let mut landed = false;
        for _ in 0..120 {
            solver.step();
            let y = solver.body_state(ball).unwrap().position.y - 0.1;
            landed |= y < 0.01;
            if landed {
                apex = apex.max(y);
            }
        }
        let s = solver.body_state(cube).unwrap();
        eprintln!("{}: box {} ball apex {apex}", solver.backend(), s.position);
        assert!((s.position.y - 0.5).abs() < 5e-3);
        assert!(Vec3::new(s.position.x - start.x, 0.0, s.position.z - start.z).length() < 1e-3);
        assert!(s.angular_velocity.length() < 1e-3);
        assert!((apex - 0.25).abs() < 0.02, "{}: rebound to {apex} m", solver.backend());
    }
}

/// 300 mixed bodies rained into a closed hollow box: after 4 s every body is inside it (no
/// core point more than 5 mm beyond a wall) and none is NaN.
#[test]
fn a_hollow_box_keeps_a_rain_inside() {
    let mut w = world();
    let half = Vec3::new(1.0, 2.0, 1.0);
    w.add_sdf(SdfCollider::new(Sdf::hollow_box(half))).unwrap();
    let handles = rain(&mut w, 300, Vec3::ZERO, Vec3::new(0.8, 1.5, 0.8), 1);
    for mut solver in common::solvers(&w) {
        solver.step_many(240);
        let states = solver.body_states().unwrap();
        for h in &handles {
            let p = states[h.index()].position;
            assert!(p.is_finite());
            assert!(p.abs().cmple(half).all(), "{}: body {} escaped to {p}", solver.backend(), h.index());
        }
        let stats = solver.stats().unwrap();
        eprintln!("{}: {:?}", solver.backend(), stats);
        assert!(stats.max_penetration < 0.02, "{}: penetration {}", solver.backend(), stats.max_penetration);
    }
}

/// Bodies of every shape dropped at random within `extent` of `centre`.
fn rain(w: &mut World, count: usize, centre: Vec3, extent: Vec3, seed: u32) -> Vec<BodyHandle> {
    let mut rng = Lcg(seed);
    (0..count)
        .map(|i| {
            let shape = match i % 4 {
                0 => Shape::sphere(rng.range(0.04, 0.08)),
                1 => Shape::cuboid(Vec3::new(rng.range(0.03, 0.08), rng.range(0.03, 0.08), rng.range(0.03, 0.08))),
                2 => Shape::capsule(rng.range(0.02, 0.06), rng.range(0.03, 0.05)),
                _ => Shape::convex_hull(&[
                    Vec3::new(0.06, 0.0, 0.0),
                    Vec3::new(-0.05, 0.04, 0.03),
                    Vec3::new(0.0, -0.05, 0.04),
                    Vec3::new(0.01, 0.02, -0.06),
                    Vec3::new(-0.03, -0.03, -0.03),
                ])
                .unwrap(),
            };
            let position = centre
                + Vec3::new(
                    rng.range(-extent.x, extent.x),
                    rng.range(-extent.y, extent.y),
                    rng.range(-extent.z, extent.z),
                );
            let orientation = Quat::from_euler(glam::EulerRot::XYZ, rng.range(0.0, 3.0), rng.range(0.0, 3.0), 0.0);
            w.add_body(
                RigidBodyDesc::dynamic(shape).position(position).orientation(orientation).angular_velocity(Vec3::new(
                    rng.range(-2.0, 2.0),
                    0.0,
                    rng.range(-2.0, 2.0),
                )),
            )
            .unwrap()
        })
        .collect()
}

/// 500 mixed bodies (no body-body contacts, so each body's path depends only on the static
/// stages) poured into a container whose field is a CSG of every primitive kind, for 2 s: the
/// CPU and GPU positions agree within 1e-3 m on at least 95 % of the bodies, and every body
/// that disagrees is one whose motion amplifies rounding, shown without the GPU by CPU runs
/// with kicked initial velocities (the method and its reasons are those of
/// `cpu_and_gpu_agree_on_1000_falling_bodies` in tests/cpu_gpu.rs). Contact counts agree up to
/// what the disagreeing bodies can hold.
#[test]
fn cpu_and_gpu_agree_in_a_csg_container() {
    let Some(ctx) = common::gpu() else { return };
    let mut desc = WorldDesc::default();
    desc.solver.body_contacts = false;
    let mut w = World::new(desc).unwrap();
    let container = Sdf::bowl(1.5, 0.2)
        .union(Sdf::torus(1.2, 0.15).translated(Vec3::new(0.0, -0.6, 0.0)))
        .union(Sdf::cylinder(0.3, 0.2).translated(Vec3::new(0.0, -1.4, 0.0)))
        .union(Sdf::capsule(0.5, 0.1).rotated(Quat::from_rotation_z(1.2)).translated(Vec3::new(0.5, -1.2, 0.3)))
        .union(Sdf::rounded_cuboid(Vec3::new(0.3, 0.2, 0.3), 0.05).translated(Vec3::new(-0.6, -1.2, -0.2)))
        .subtract(Sdf::sphere(0.25).translated(Vec3::new(0.0, -1.45, 0.9)))
        .translated(Vec3::new(0.0, 1.0, 0.0));
    w.add_sdf(SdfCollider::new(container).friction(0.4)).unwrap();
    let count = 500;
    rain(&mut w, count, Vec3::new(0.0, 0.1, 0.0), Vec3::new(0.5, 0.2, 0.5), 2);
    let capacity: Vec<u32> =
        (0..count).map(|i| w.body(BodyHandle::from_index(i)).unwrap().shape.core_points().len() as u32).collect();
    let mut cpu = CpuSolver::new(&w).unwrap();
    let mut gpu = GpuSolver::new(ctx, &w).unwrap();
    let mut ensemble = common::kicked_ensemble(&w);
    let mut sensitive = vec![false; count];
    let mut disagree = vec![false; count];
    let mut counts = Vec::new();
    for round in 1..=6 {
        cpu.step_many(20);
        gpu.step_many(20);
        let (a, g) = (cpu.body_states().unwrap(), gpu.body_states().unwrap());
        for member in &mut ensemble {
            member.step_many(20);
            for (i, s) in member.body_states().unwrap().iter().enumerate() {
                sensitive[i] |= (s.position - a[i].position).length() > 1e-4;
            }
        }
        for i in 0..count {
            disagree[i] |= (a[i].position - g[i].position).length() >= 1e-3;
        }
        counts.push((20 * round, cpu.stats().unwrap().contacts, gpu.stats().unwrap().contacts));
    }
    let disagreeing: Vec<usize> = (0..count).filter(|&i| disagree[i]).collect();
    let unexplained: Vec<usize> = disagreeing.iter().copied().filter(|&i| !sensitive[i]).collect();
    eprintln!(
        "{} of {count} bodies disagree, {} sensitive to 1e-6 kicks; contacts {counts:?}",
        disagreeing.len(),
        sensitive.iter().filter(|s| **s).count()
    );
    assert!(unexplained.is_empty(), "bodies {unexplained:?} disagree but are not sensitive to rounding");
    assert!(disagreeing.len() * 20 <= count, "{} of {count} bodies disagree", disagreeing.len());
    let held: u32 = disagreeing.iter().map(|&i| capacity[i]).sum();
    for (steps, a, g) in counts {
        assert!(a.abs_diff(g) <= held, "contacts after {steps} steps: cpu {a} gpu {g}");
    }
    assert!(cpu.stats().unwrap().contacts > 100);
    for s in gpu.body_states().unwrap() {
        assert!(s.position.is_finite());
    }
}

#[test]
fn bad_fields_get_typed_errors() {
    let mut w = world();
    assert!(matches!(w.add_sdf(SdfCollider::new(Sdf::sphere(-1.0))), Err(Error::NonPositive { .. })));
    assert!(matches!(w.add_sdf(SdfCollider::new(Sdf::sphere(f32::NAN))), Err(Error::NonFinite { .. })));
    assert!(matches!(
        w.add_sdf(SdfCollider::new(Sdf::half_space(Vec3::ZERO, 0.0))),
        Err(Error::DegenerateShape { .. })
    ));
    assert!(matches!(w.add_sdf(SdfCollider::new(Sdf::sphere(1.0)).restitution(2.0)), Err(Error::OutOfRange { .. })));
    assert_eq!(w.sdf_count(), 0);
    let h = w.add_sdf(SdfCollider::new(Sdf::sphere(1.0))).unwrap();
    assert_eq!(w.sdf(h).unwrap().sdf, Sdf::sphere(1.0));
    assert!(matches!(w.sdf(SdfHandle::from_index(3)), Err(Error::InvalidHandle { .. })));
}

/// A ball (r = 0.2 m) in a concave corner of one field, a hollow box's floor and wall or a
/// union of two half spaces, pressed into it by gravity tilted towards the wall: rolled in from
/// rest, and thrown at the wall at 6 m/s. A core point takes a contact with its two nearest
/// surfaces, so it rests as between two planes: at (1 - r, r), 0.1 mm from the planes' run,
/// held by two contacts, and never more than 1 mm into the floor or the wall. With one contact
/// per point it sank 20 mm into the wall rolled in, 100 mm thrown (before `second_surface`).
#[test]
fn a_ball_rests_in_a_field_corner_as_between_planes() {
    ball_in_a_corner(false);
}

/// The same in the corner of a room, where the floor and two walls of one field meet (a
/// hollow box, or a union of three half spaces), gravity tilted towards both walls: a core
/// point takes a third contact (`third_surface`), so the ball rests at (1 - r, r, 1 - r) as
/// between three planes, held by three contacts, never more than 1 mm into any of them. With
/// two surfaces per point it went 14 mm into a wall rolling in and rested 0.7 mm in.
#[test]
fn a_ball_rests_in_a_room_corner_as_between_three_planes() {
    ball_in_a_corner(true);
}

/// A ball rolled and thrown into the corner of the floor (y = 0) and the wall x = 1 and, with
/// `room`, the wall z = 1 too, each made by one field or by planes; see the two tests above.
fn ball_in_a_corner(room: bool) {
    let r = 0.2;
    let depth = if room { 1.0 } else { 2.0 };
    let mut slabs = Sdf::half_space(Vec3::Y, 0.0).union(Sdf::half_space(-Vec3::X, -1.0));
    let mut planes = vec![Plane::new(Vec3::Y, 0.0), Plane::new(-Vec3::X, -1.0)];
    if room {
        slabs = slabs.union(Sdf::half_space(-Vec3::Z, -1.0));
        planes.push(Plane::new(-Vec3::Z, -1.0));
    }
    let fields =
        [Some(Sdf::hollow_box(Vec3::new(1.0, 2.0, depth)).translated(Vec3::new(0.0, 2.0, 0.0))), Some(slabs), None];
    let across = if room { Vec3::new(1.0, 0.0, 1.0).normalize() } else { Vec3::X };
    let rest = Vec3::new(1.0 - r, r, if room { 1.0 - r } else { 0.0 });
    for speed in [0.0, 6.0] {
        let mut rests = Vec::new();
        for field in &fields {
            let mut w = common::world_with(Vec3::new(6.0, -10.0, if room { 6.0 } else { 0.0 }));
            match field {
                Some(sdf) => drop(w.add_sdf(SdfCollider::new(sdf.clone())).unwrap()),
                None => {
                    for plane in &planes {
                        w.add_plane(*plane).unwrap();
                    }
                }
            }
            let desc = RigidBodyDesc::dynamic(Shape::sphere(r)).position(Vec3::new(0.0, r, 0.0));
            let ball = w.add_body(desc.linear_velocity(speed * across)).unwrap();
            for mut solver in common::solvers(&w) {
                let mut deepest = Vec3::ZERO;
                for _ in 0..120 {
                    solver.step();
                    let p = solver.body_state(ball).unwrap().position;
                    deepest = deepest.max(Vec3::new(p.x + r - 1.0, r - p.y, if room { p.z + r - 1.0 } else { 0.0 }));
                }
                let p = solver.body_state(ball).unwrap().position;
                let contacts = solver.stats().unwrap().contacts;
                let kind = if field.is_some() { "field" } else { "planes" };
                eprintln!(
                    "{} {kind}, {speed} m/s: rests at {p}, deepest into the walls x and z and the floor {deepest}",
                    solver.backend()
                );
                assert!((p - rest).length() < 1e-3, "{kind}: rests at {p}");
                assert!(deepest.max_element() < 1e-3, "{kind}: {deepest} m into the walls x and z and the floor");
                assert_eq!(contacts, if room { 3 } else { 2 }, "{kind}");
                rests.push((solver.backend(), p));
            }
        }
        for (backend, p) in &rests {
            let planes = rests.iter().rev().find(|(b, _)| b == backend).unwrap().1;
            assert!((*p - planes).length() < 1e-4, "{backend}: {p} against the planes' {planes}");
        }
    }
}

/// A ball (r = 0.2 m) in the closed end of a narrow slot of one field: a floor, a ceiling 15
/// mm above the ball's top and the end wall x = 1, made by one field (a union of three half
/// spaces) or by three planes. Gravity is tilted towards the end wall; the ball rolls in from
/// rest and is thrown at the wall at 6 m/s. It rests at (1 - r, r) as between the planes,
/// never more than 1 mm into the floor, the ceiling or the end wall, with as many contacts as
/// against the planes. While the third surface was sought in corners only, the ball rolled in
/// went 20 mm into the end wall (the floor and the ceiling were its two surfaces); lifted to the
/// gap's middle without moving along it, still 20 mm.
#[test]
fn a_ball_rests_in_the_closed_end_of_a_narrow_slot_as_between_planes() {
    in_a_narrow_slot(Shape::sphere(0.2), 6.0);
}

/// The same with a box of 0.4 m, whose corners are the points that meet the field, sliding in
/// under gravity tilted by 45° (steeper than its friction) and thrown in at 6 m/s: its twelve
/// contacts, on three faces of the field, each take the faces' centroid step as against planes.
/// Before they did (when a point's nearest surface mixed the floor's, the ceiling's and the
/// wall's contacts in one block, which took none), the thrown box crept 0.8 mm sideways along
/// the end wall, against 0.01 mm between the planes.
#[test]
fn a_box_rests_in_the_closed_end_of_a_narrow_slot_as_between_planes() {
    in_a_narrow_slot(Shape::cuboid(Vec3::splat(0.2)), 10.0);
}

/// A box of 0.4 m slid and thrown into the corner of a floor and a wall of one field (a union
/// of two half spaces) or of two planes, as in `in_a_narrow_slot` without the ceiling: it rests
/// as between the planes. Before a field's contacts took a centroid step for each flat face
/// (the corners' nearest surfaces mixing the floor's and the wall's contacts in one block), the
/// thrown box went 0.65 mm into the wall and crept 0.3 mm along it, against 0.05 and 0.01 mm
/// between the planes.
#[test]
fn a_box_rests_in_a_field_corner_as_between_planes() {
    in_a_slot(Shape::cuboid(Vec3::splat(0.2)), 10.0, None);
}

/// A body of half height 0.2 m slid and thrown into the closed end of a narrow slot (see
/// the two tests above), under gravity `tilt` m/s² towards the end wall and 10 down.
fn in_a_narrow_slot(shape: Shape, tilt: f32) {
    in_a_slot(shape, tilt, Some(0.4 + 0.015));
}

/// `in_a_narrow_slot` with the ceiling at `ceiling`, or none.
fn in_a_slot(shape: Shape, tilt: f32, ceiling: Option<f32>) {
    let r = 0.2;
    let mut slot = Sdf::half_space(Vec3::Y, 0.0).union(Sdf::half_space(-Vec3::X, -1.0));
    let mut planes = vec![Plane::new(Vec3::Y, 0.0), Plane::new(-Vec3::X, -1.0)];
    if let Some(ceiling) = ceiling {
        slot = slot.union(Sdf::half_space(-Vec3::Y, -ceiling));
        planes.push(Plane::new(-Vec3::Y, -ceiling));
    }
    let ceiling = ceiling.unwrap_or(f32::INFINITY);
    let rest = Vec3::new(1.0 - r, r, 0.0);
    // How far the body reaches from its centre along a direction: its radius, or its farthest
    // corner.
    let corners: Vec<Vec3> =
        (0..8).map(|k| Vec3::new([-r, r][k & 1], [-r, r][(k >> 1) & 1], [-r, r][(k >> 2) & 1])).collect();
    let ball = matches!(shape, Shape::Sphere { .. });
    let reach = |q: Quat, d: Vec3| {
        if ball { r } else { corners.iter().map(|&c| d.dot(q * c)).fold(f32::MIN, f32::max) }
    };
    for speed in [0.0, 6.0] {
        let mut runs = Vec::new();
        for field in [true, false] {
            let mut w = common::world_with(Vec3::new(tilt, -10.0, 0.0));
            if field {
                w.add_sdf(SdfCollider::new(slot.clone())).unwrap();
            } else {
                for &plane in &planes {
                    w.add_plane(plane).unwrap();
                }
            }
            let desc = RigidBodyDesc::dynamic(shape.clone()).position(Vec3::new(0.0, r, 0.0));
            let body = w.add_body(desc.linear_velocity(speed * Vec3::X)).unwrap();
            for mut solver in common::solvers(&w) {
                let mut deepest = Vec3::ZERO;
                for _ in 0..120 {
                    solver.step();
                    let s = solver.body_state(body).unwrap();
                    let (p, q) = (s.position, s.orientation);
                    deepest = deepest.max(Vec3::new(
                        p.x + reach(q, Vec3::X) - 1.0,
                        reach(q, -Vec3::Y) - p.y,
                        p.y + reach(q, Vec3::Y) - ceiling,
                    ));
                }
                let p = solver.body_state(body).unwrap().position;
                let contacts = solver.stats().unwrap().contacts;
                let kind = if field { "field" } else { "planes" };
                eprintln!(
                    "{} {kind}, {speed} m/s: rests at {p} with {contacts} contacts, deepest into the end wall, \
                     the floor and the ceiling {deepest}",
                    solver.backend()
                );
                assert!((p - rest).length() < 1e-3, "{kind}: rests at {p}");
                assert!(deepest.max_element() < 1e-3, "{kind}: {deepest} m into the end wall, floor and ceiling");
                runs.push((solver.backend(), p, contacts));
            }
        }
        // The field's runs come first, then the planes' in the same order of backends.
        let (fields, planes) = runs.split_at(runs.len() / 2);
        for ((backend, p, contacts), (_, q, plane_contacts)) in fields.iter().zip(planes) {
            assert!((*p - *q).length() < 1e-4, "{backend}: {p} against the planes' {q}");
            assert_eq!(contacts, plane_contacts, "{backend}: contacts against the planes'");
        }
    }
}
