//! Bad input gets a typed error, never a panic and never a silent NaN.

mod common;

use signorini::prelude::*;

fn world() -> World {
    World::new(WorldDesc::default()).unwrap()
}

fn cube() -> RigidBodyDesc {
    RigidBodyDesc::dynamic(Shape::cuboid(Vec3::splat(0.5)))
}

#[test]
fn non_finite_body_fields_are_rejected() {
    let mut w = world();
    for desc in [
        cube().position(Vec3::new(f32::NAN, 0.0, 0.0)),
        cube().position(Vec3::new(0.0, f32::INFINITY, 0.0)),
        cube().orientation(Quat::from_xyzw(f32::NAN, 0.0, 0.0, 1.0)),
        cube().linear_velocity(Vec3::new(0.0, 0.0, f32::NEG_INFINITY)),
        cube().angular_velocity(Vec3::splat(f32::NAN)),
        cube().density(f32::NAN),
        cube().mass(f32::INFINITY),
        cube().friction(f32::NAN),
        cube().restitution(f32::NAN),
        RigidBodyDesc::dynamic(Shape::sphere(f32::NAN)),
        RigidBodyDesc::dynamic(Shape::cuboid(Vec3::new(1.0, f32::INFINITY, 1.0))),
    ] {
        assert!(matches!(w.add_body(desc.clone()), Err(Error::NonFinite { .. })), "{desc:?}");
    }
    assert_eq!(w.body_count(), 0, "a rejected body must not be added");
}

#[test]
fn non_positive_sizes_and_masses_are_rejected() {
    let mut w = world();
    for desc in [
        cube().mass(0.0),
        cube().mass(-1.0),
        cube().density(0.0),
        cube().density(-5.0),
        RigidBodyDesc::dynamic(Shape::sphere(0.0)),
        RigidBodyDesc::dynamic(Shape::sphere(-1.0)),
        RigidBodyDesc::dynamic(Shape::cuboid(Vec3::new(1.0, 0.0, 1.0))),
        RigidBodyDesc::dynamic(Shape::cuboid(Vec3::new(1.0, 1.0, -1.0))),
        RigidBodyDesc::dynamic(Shape::capsule(0.0, 0.5)),
        RigidBodyDesc::dynamic(Shape::capsule(0.5, -0.1)),
    ] {
        assert!(matches!(w.add_body(desc.clone()), Err(Error::NonPositive { .. })), "{desc:?}");
    }
}

#[test]
fn out_of_range_materials_and_a_zero_orientation_are_rejected() {
    let mut w = world();
    assert!(matches!(w.add_body(cube().friction(-0.1)), Err(Error::OutOfRange { what: "friction", .. })));
    assert!(matches!(w.add_body(cube().restitution(1.5)), Err(Error::OutOfRange { what: "restitution", .. })));
    assert!(matches!(w.add_body(cube().restitution(-0.5)), Err(Error::OutOfRange { .. })));
    assert!(matches!(w.add_body(cube().damping(-1.0, 0.0)), Err(Error::OutOfRange { .. })));
    assert!(matches!(
        w.add_body(cube().orientation(Quat::from_xyzw(0.0, 0.0, 0.0, 0.0))),
        Err(Error::DegenerateShape { .. })
    ));
    // A non-unit orientation is normalized, not rejected.
    let h = w.add_body(cube().orientation(Quat::from_xyzw(0.0, 0.0, 0.0, 2.0))).unwrap();
    assert_eq!(w.body(h).unwrap().orientation, Quat::IDENTITY);
}

#[test]
fn degenerate_hulls_are_rejected() {
    let flat: Vec<Vec3> = (0..10).map(|i| Vec3::new(i as f32, (i * i) as f32, 0.0)).collect();
    assert!(matches!(Shape::convex_hull(&flat), Err(Error::DegenerateShape { .. })));
    assert!(matches!(Shape::convex_hull(&[Vec3::ZERO, Vec3::X, Vec3::Y]), Err(Error::DegenerateShape { .. })));
    assert!(matches!(Shape::convex_hull(&[]), Err(Error::DegenerateShape { .. })));
    let line: Vec<Vec3> = (0..5).map(|i| Vec3::splat(i as f32)).collect();
    assert!(matches!(Shape::convex_hull(&line), Err(Error::DegenerateShape { .. })));
    assert!(matches!(
        Shape::convex_hull(&[Vec3::ZERO, Vec3::X, Vec3::Y, Vec3::new(0.0, 0.0, f32::NAN)]),
        Err(Error::NonFinite { .. })
    ));
}

#[test]
fn bad_planes_and_settings_are_rejected() {
    let mut w = world();
    assert!(matches!(w.add_plane(Plane::new(Vec3::ZERO, 0.0)), Err(Error::DegenerateShape { .. })));
    assert!(matches!(w.add_plane(Plane::new(Vec3::new(f32::NAN, 1.0, 0.0), 0.0)), Err(Error::NonFinite { .. })));
    assert!(matches!(w.add_plane(Plane::new(Vec3::Y, f32::INFINITY)), Err(Error::NonFinite { .. })));
    assert!(matches!(w.add_plane(Plane::new(Vec3::Y, 0.0).restitution(2.0)), Err(Error::OutOfRange { .. })));
    // A non-unit normal is normalized together with its offset.
    let p = w.add_plane(Plane::new(Vec3::new(0.0, 2.0, 0.0), 4.0)).unwrap();
    assert_eq!(*w.plane(p).unwrap(), Plane::new(Vec3::Y, 2.0));

    let bad = |f: &dyn Fn(&mut WorldDesc)| {
        let mut d = WorldDesc::default();
        f(&mut d);
        World::new(d).unwrap_err()
    };
    assert!(matches!(bad(&|d| d.dt = 0.0), Error::NonPositive { .. }));
    assert!(matches!(bad(&|d| d.dt = f32::NAN), Error::NonFinite { .. }));
    assert!(matches!(bad(&|d| d.gravity.y = f32::INFINITY), Error::NonFinite { .. }));
    assert!(matches!(bad(&|d| d.solver.substeps = 0), Error::OutOfRange { .. }));
    assert!(matches!(bad(&|d| d.solver.iterations = 0), Error::OutOfRange { .. }));
    assert!(matches!(
        bad(&|d| d.solver.stabilization = Stabilization::Baumgarte { beta: 1.5, linear_slop: 0.0 }),
        Error::OutOfRange { .. }
    ));
    assert!(matches!(bad(&|d| d.solver.max_push_velocity = -1.0), Error::NonPositive { .. }));
    assert!(matches!(bad(&|d| d.solver.cpu_threads = 1_000_000), Error::OutOfRange { what: "CPU threads", .. }));
    assert!(matches!(
        bad(&|d| d.solver.gpu_contacts_per_body = 0),
        Error::OutOfRange { what: "GPU contacts per body", .. }
    ));
    let soft = |hertz: f32| Stabilization::Soft {
        contact_hertz: hertz,
        contact_damping_ratio: 10.0,
        static_hertz: 60.0,
        static_damping_ratio: 5.0,
    };
    assert!(matches!(bad(&|d| d.solver.stabilization = soft(1e-20)), Error::OutOfRange { what: "contact hertz", .. }));
    assert!(matches!(bad(&|d| d.solver.stabilization = soft(-1.0)), Error::OutOfRange { what: "contact hertz", .. }));
    let mut rigid = WorldDesc::default();
    rigid.solver.stabilization = soft(0.0);
    assert!(World::new(rigid).is_ok());
    let mut most = WorldDesc::default();
    most.solver.cpu_threads = signorini::MAX_CPU_THREADS;
    assert!(World::new(most).is_ok());
    // Counts of passes within MAX_PASSES: more is a typed error, not a step that never ends.
    let over = signorini::MAX_PASSES + 1;
    assert!(matches!(bad(&|d| d.solver.substeps = u32::MAX), Error::OutOfRange { what: "substeps", .. }));
    assert!(matches!(bad(&|d| d.solver.iterations = over), Error::OutOfRange { what: "iterations", .. }));
    assert!(matches!(bad(&|d| d.solver.relax_iterations = over), Error::OutOfRange { what: "relax iterations", .. }));
    assert!(matches!(bad(&|d| d.solver.coloring_rounds = over), Error::OutOfRange { what: "coloring rounds", .. }));
    assert!(matches!(bad(&|d| d.particles.iterations = over), Error::OutOfRange { what: "particle iterations", .. }));
    let mut most = WorldDesc::default();
    most.solver.substeps = signorini::MAX_PASSES;
    most.solver.relax_iterations = 0;
    assert!(World::new(most).is_ok());
}

/// Finite input far out of f32's range for the scene (a time step of 1e30 s) makes a step
/// overflow: the reads then return `Error::Diverged` naming what holds the NaN or infinity
/// (the first body, the first particle, the statistics), on both backends, never the NaN
/// itself. Set right again (gravity off, the bodies put back above the floor and stopped), the
/// bodies read and step. Speeds whose squares overflow f32 and masses whose inverses do are refused as they
/// are added.
#[test]
fn a_state_that_overflows_reads_as_a_typed_error() {
    let mut w = World::new(WorldDesc { dt: 1e30, ..WorldDesc::default() }).unwrap();
    w.add_plane(Plane::new(Vec3::Y, 0.0)).unwrap();
    let a = w.add_body(cube().position(Vec3::new(0.0, 0.5, 0.0))).unwrap();
    let b = w.add_body(cube().position(Vec3::new(3.0, 2.0, 0.0))).unwrap();
    w.add_particle(Particle::new(Vec3::new(-3.0, 1.0, 0.0), 0.1)).unwrap();
    for mut solver in common::solvers(&w) {
        let name = solver.backend();
        solver.step();
        match solver.body_states() {
            Err(Error::Diverged { what, step: 1 }) => assert_eq!(what, "body 0", "{name}"),
            other => panic!("{name}: expected body 0 to have diverged, got {other:?}"),
        }
        assert!(matches!(solver.body_state(b), Err(Error::Diverged { .. })), "{name}");
        assert!(matches!(solver.stats(), Err(Error::Diverged { .. })), "{name}");
        match solver.particle_states() {
            Err(Error::Diverged { what, step: 1 }) => assert_eq!(what, "particle 0", "{name}"),
            other => panic!("{name}: expected particle 0 to have diverged, got {other:?}"),
        }
        solver.set_gravity(Vec3::ZERO).unwrap();
        for (body, y) in [(a, 10.0), (b, 12.0)] {
            solver.set_pose(body, Vec3::new(3.0 * body.index() as f32, y, 0.0), Quat::IDENTITY).unwrap();
            solver.set_velocity(body, Vec3::ZERO, Vec3::ZERO).unwrap();
        }
        solver.step();
        assert!(solver.body_states().unwrap().iter().all(BodyState::is_finite), "{name}");
        assert!(matches!(
            solver.set_velocity(a, Vec3::new(0.0, 2e19, 0.0), Vec3::ZERO),
            Err(Error::OutOfRange { what: "linear velocity", .. })
        ));
    }
    let mut w = world();
    assert!(matches!(
        w.add_body(cube().linear_velocity(Vec3::new(3e38, 0.0, 0.0))),
        Err(Error::OutOfRange { what: "body linear velocity", .. })
    ));
    assert!(matches!(
        w.add_body(cube().angular_velocity(Vec3::splat(2e19))),
        Err(Error::OutOfRange { what: "body angular velocity", .. })
    ));
    assert!(matches!(
        w.add_particle(Particle::new(Vec3::ZERO, 0.1).velocity(Vec3::new(0.0, 0.0, -1e30))),
        Err(Error::OutOfRange { what: "particle velocity", .. })
    ));
    assert!(matches!(
        w.add_particle(Particle::new(Vec3::ZERO, 0.1).mass(1e-45)),
        Err(Error::OutOfRange { what: "particle mass", .. })
    ));
    assert!(matches!(w.add_body(cube().mass(1e-40)), Err(Error::OutOfRange { what: "body mass", .. })));
}

#[test]
fn handles_and_velocities_are_checked_on_both_backends() {
    let mut w = world();
    let body = w.add_body(cube()).unwrap();
    let floor =
        w.add_body(RigidBodyDesc::fixed(Shape::cuboid(Vec3::splat(0.5))).position(Vec3::new(0.0, -3.0, 0.0))).unwrap();
    let foreign = signorini::BodyHandle::from_index(7);
    for mut solver in common::solvers(&w) {
        let name = solver.backend();
        assert!(matches!(solver.body_state(foreign), Err(Error::InvalidHandle { .. })), "{name}");
        assert!(
            matches!(solver.set_velocity(foreign, Vec3::ZERO, Vec3::ZERO), Err(Error::InvalidHandle { .. })),
            "{name}"
        );
        assert!(matches!(solver.set_velocity(body, Vec3::NAN, Vec3::ZERO), Err(Error::NonFinite { .. })), "{name}");
        assert!(
            matches!(solver.set_velocity(body, Vec3::ZERO, Vec3::INFINITY), Err(Error::NonFinite { .. })),
            "{name}"
        );
        let bad_pose = |solver: &mut Box<dyn Solver>, body, position, orientation| {
            solver.set_pose(body, position, orientation).expect_err("a bad pose")
        };
        let error = bad_pose(&mut solver, foreign, Vec3::ZERO, Quat::IDENTITY);
        assert!(matches!(error, Error::InvalidHandle { what: "body", .. }), "{name}: {error}");
        let error = bad_pose(&mut solver, body, Vec3::new(0.0, f32::NAN, 0.0), Quat::IDENTITY);
        assert!(matches!(error, Error::NonFinite { what: "body position", .. }), "{name}: {error}");
        let error = bad_pose(&mut solver, body, Vec3::ZERO, Quat::from_xyzw(0.0, f32::INFINITY, 0.0, 1.0));
        assert!(matches!(error, Error::NonFinite { what: "body orientation", .. }), "{name}: {error}");
        let error = bad_pose(&mut solver, body, Vec3::ZERO, Quat::from_xyzw(0.0, 0.0, 0.0, 0.0));
        assert!(matches!(error, Error::DegenerateShape { .. }), "{name}: {error}");
        let error = bad_pose(&mut solver, floor, Vec3::Y, Quat::IDENTITY);
        assert!(matches!(error, Error::StaticBody { .. }), "{name}: {error}");
        let error = solver.set_force(foreign, Vec3::X, Vec3::ZERO).expect_err("foreign");
        assert!(matches!(error, Error::InvalidHandle { what: "body", .. }), "{name}: {error}");
        let error = solver.set_force(body, Vec3::new(f32::NAN, 0.0, 0.0), Vec3::ZERO).expect_err("NaN");
        assert!(matches!(error, Error::NonFinite { what: "body force", .. }), "{name}: {error}");
        let error = solver.set_force(body, Vec3::ZERO, Vec3::NEG_INFINITY).expect_err("infinite");
        assert!(matches!(error, Error::NonFinite { what: "body torque", .. }), "{name}: {error}");
        let error = solver.set_force(floor, Vec3::X, Vec3::ZERO).expect_err("static");
        assert!(matches!(error, Error::NotDynamic { .. }), "{name}: {error}");
        let error = solver.apply_impulse(foreign, Vec3::X, Vec3::ZERO).expect_err("foreign");
        assert!(matches!(error, Error::InvalidHandle { what: "body", .. }), "{name}: {error}");
        let error = solver.apply_impulse(body, Vec3::new(0.0, f32::NAN, 0.0), Vec3::ZERO).expect_err("NaN");
        assert!(matches!(error, Error::NonFinite { what: "impulse", .. }), "{name}: {error}");
        let error = solver.apply_impulse(body, Vec3::X, Vec3::splat(f32::INFINITY)).expect_err("infinite");
        assert!(matches!(error, Error::NonFinite { what: "impulse point", .. }), "{name}: {error}");
        let error = solver.apply_impulse(floor, Vec3::X, Vec3::ZERO).expect_err("static");
        assert!(matches!(error, Error::NotDynamic { .. }), "{name}: {error}");
        let all = signorini::CollisionGroups::ALL;
        let error = solver.cast_ray(Vec3::splat(f32::NAN), Vec3::X, 1.0, all).expect_err("NaN");
        assert!(matches!(error, Error::NonFinite { what: "ray origin", .. }), "{name}: {error}");
        let error = solver.cast_ray(Vec3::ZERO, Vec3::ZERO, 1.0, all).expect_err("no direction");
        assert!(matches!(error, Error::OutOfRange { what: "ray direction length", .. }), "{name}: {error}");
        let error = solver.cast_ray(Vec3::ZERO, Vec3::X, 0.0, all).expect_err("no length");
        assert!(matches!(error, Error::OutOfRange { what: "ray length", .. }), "{name}: {error}");
        let error = solver.cast_ray(Vec3::ZERO, Vec3::X, f32::NAN, all).expect_err("NaN length");
        assert!(matches!(error, Error::OutOfRange { what: "ray length", .. }), "{name}: {error}");
        // A world without joints: every joint handle is foreign.
        let error = solver.set_joint_motor(JointHandle::from_index(0), JointMotor { speed: 1.0, max_effort: 1.0 });
        assert!(matches!(error, Err(Error::InvalidHandle { what: "joint", index: 0, count: 0 })), "{name}: {error:?}");
        // Nothing was written: the body is still finite after stepping.
        solver.step_many(10);
        let s = solver.body_state(body).unwrap();
        assert!(s.position.is_finite() && s.linear_velocity.is_finite(), "{name}");
    }
    assert!(matches!(w.body(foreign), Err(Error::InvalidHandle { .. })));
}

/// `Solver::set_joint_motor` takes a hinge's or a slider's motor only where the joint was given
/// one, and checks it, on both backends; nothing is written on an error.
#[test]
fn joint_motors_are_checked_on_both_backends() {
    let mut w = world();
    let base = w.add_body(RigidBodyDesc::fixed(Shape::sphere(0.05))).unwrap();
    let small = RigidBodyDesc::dynamic(Shape::cuboid(Vec3::splat(0.1))).mass(1.0);
    let wheel = w.add_body(small.clone().position(Vec3::new(0.0, 2.0, 0.0))).unwrap();
    let bob = w.add_body(small.position(Vec3::new(3.0, 2.0, 0.0))).unwrap();
    let motorized = w.add_joint(JointDesc::revolute(base, wheel, Vec3::new(0.0, 2.0, 0.0), Vec3::Y).motor(1.0, 5.0));
    let plain = w.add_joint(JointDesc::spherical(base, bob, Vec3::new(3.0, 2.0, 0.0)));
    let (motorized, plain) = (motorized.unwrap(), plain.unwrap());
    let motor = |speed, max_effort| JointMotor { speed, max_effort };
    for mut solver in common::solvers(&w) {
        let name = solver.backend();
        let error = solver.set_joint_motor(JointHandle::from_index(2), motor(1.0, 1.0)).expect_err("foreign");
        assert!(matches!(error, Error::InvalidHandle { what: "joint", index: 2, count: 2 }), "{name}: {error}");
        let error = solver.set_joint_motor(plain, motor(1.0, 1.0)).expect_err("no motor");
        assert!(matches!(error, Error::InvalidJoint { .. }), "{name}: {error}");
        let error = solver.set_joint_motor(motorized, motor(f32::NAN, 1.0)).expect_err("NaN");
        assert!(matches!(error, Error::NonFinite { what: "joint motor speed", .. }), "{name}: {error}");
        let error = solver.set_joint_motor(motorized, motor(1.0, -1.0)).expect_err("negative");
        assert!(matches!(error, Error::OutOfRange { what: "joint motor effort", .. }), "{name}: {error}");
        let error = solver.set_joint_motor(motorized, motor(1.0, f32::INFINITY)).expect_err("infinite");
        assert!(matches!(error, Error::NonFinite { what: "joint motor effort", .. }), "{name}: {error}");
        // The motor as added still drives the wheel: 1 rad/s after 1 s (its 5 N m takes the
        // 1 kg cube, 0.0067 kg m² about its axis, there within a step).
        solver.step_many(60);
        let spin = solver.body_state(wheel).unwrap().angular_velocity;
        assert!((spin - Vec3::Y).length() < 1e-3, "{name}: {spin}");
    }
}

/// A device below the kernels' needs gets `DeviceLimit`, a scene whose buffers exceed the
/// device's binding limit gets `BufferTooLarge`; neither is a wgpu validation panic. The
/// devices here are created with deliberately small limits.
#[test]
fn buffers_over_the_device_limit_are_a_typed_error() {
    if common::gpu().is_none() {
        return;
    }
    let instance = wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle_from_env());
    let adapter = pollster::block_on(instance.request_adapter(&wgpu::RequestAdapterOptions::default())).unwrap();
    let device_with = |limits: wgpu::Limits| {
        let descriptor = wgpu::DeviceDescriptor { required_limits: limits, ..Default::default() };
        let (device, queue) = pollster::block_on(adapter.request_device(&descriptor)).unwrap();
        GpuContext::from_device(device, queue, &adapter.get_info())
    };
    // WebGPU's downlevel limits allow 4 storage buffers per stage; the kernels bind 8.
    let downlevel = device_with(wgpu::Limits::downlevel_defaults());
    match GpuSolver::new(&downlevel, &world()) {
        Err(Error::DeviceLimit { limit_name: "max_storage_buffers_per_shader_stage", required: 8, available: 4 }) => {}
        Err(e) => panic!("wrong error: {e}"),
        Ok(_) => panic!("the kernels cannot run with 4 storage buffers"),
    }
    let small = device_with(wgpu::Limits { max_storage_buffer_binding_size: 4096, ..wgpu::Limits::default() });
    let mut w = world();
    w.add_plane(Plane::new(Vec3::Y, 0.0)).unwrap();
    for i in 0..100 {
        w.add_body(cube().position(Vec3::new(i as f32 * 2.0, 1.0, 0.0))).unwrap();
    }
    match GpuSolver::new(&small, &w) {
        Err(Error::BufferTooLarge { limit, limit_name, .. }) => {
            assert_eq!(limit, 4096);
            assert_eq!(limit_name, "max_storage_buffer_binding_size");
        }
        Err(e) => panic!("wrong error: {e}"),
        Ok(_) => panic!("a 6,400-byte body buffer fits a 4,096-byte binding?"),
    }
    // Five bodies (2,560 bytes of contact slots) fit and run, planes only (the body-body
    // stages' pair buffers alone need more than 4 KiB).
    let mut desc = WorldDesc::default();
    desc.solver.body_contacts = false;
    let mut w = World::new(desc).unwrap();
    w.add_plane(Plane::new(Vec3::Y, 0.0)).unwrap();
    for i in 0..5 {
        w.add_body(cube().position(Vec3::new(i as f32 * 2.0, 1.0, 0.0))).unwrap();
    }
    let mut solver = GpuSolver::new(&small, &w).unwrap();
    solver.step_many(60);
    assert!((solver.body_state(signorini::BodyHandle::from_index(0)).unwrap().position.y - 0.5).abs() < 5e-3);
}
