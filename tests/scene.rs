//! Scene files: a world written out and read back is the same world and steps to the same
//! bits on either backend; a hand-written file takes the documented defaults; a bad file gets
//! the typed error of the item it names.

mod common;

use signorini::prelude::*;
use signorini::sdf::GridSdf;
use signorini::{Error, JointBreaking, PlaneHandle, Scene, scenes};

/// Writes `world` as JSON and reads it back, checking that the text is stable (the world read
/// back writes the same text) and that the scenes are equal.
fn round_trip(world: &World) -> World {
    let text = serde_json::to_string(world).expect("serialize");
    let again: World = serde_json::from_str(&text).unwrap_or_else(|e| panic!("deserialize: {e}"));
    assert_eq!(again.scene(), world.scene(), "the scene read back differs");
    assert_eq!(serde_json::to_string(&again).expect("serialize"), text, "the text written again differs");
    again
}

/// Steps both worlds on `solver_of` and checks the states are the same bits.
fn same_steps(a: &World, b: &World, steps: u32, solver_of: impl Fn(&World) -> Box<dyn Solver>) {
    let (mut sa, mut sb) = (solver_of(a), solver_of(b));
    sa.step_many(steps);
    sb.step_many(steps);
    let (xa, xb) = (sa.body_states().unwrap(), sb.body_states().unwrap());
    assert!(!xa.is_empty() || a.body_count() == 0);
    for (i, (p, q)) in xa.iter().zip(&xb).enumerate() {
        assert_eq!(p.position.to_array().map(f32::to_bits), q.position.to_array().map(f32::to_bits), "body {i}");
        assert_eq!(p.orientation.to_array().map(f32::to_bits), q.orientation.to_array().map(f32::to_bits), "body {i}");
        assert_eq!(
            p.linear_velocity.to_array().map(f32::to_bits),
            q.linear_velocity.to_array().map(f32::to_bits),
            "body {i}"
        );
    }
    let (pa, pb) = (sa.particle_states().unwrap(), sb.particle_states().unwrap());
    assert_eq!(pa, pb, "particles");
}

fn cpu(world: &World) -> Box<dyn Solver> {
    Box::new(CpuSolver::new(world).unwrap())
}

#[test]
fn every_kind_of_scene_survives_a_round_trip() {
    let desc = scenes::bench_desc();
    let worlds = [
        ("pile", scenes::box_pile(desc, 200, 3).unwrap()),
        ("pyramid", scenes::pyramid(desc, 8).unwrap().0),
        ("bowl rain, analytic bowl", scenes::bowl_rain(desc, 40, 2, false).unwrap().0),
        ("bowl rain, baked bowl", scenes::bowl_rain(desc, 40, 2, true).unwrap().0),
        ("ragdolls", scenes::ragdolls(desc, 2).unwrap()),
        ("arms", scenes::arms(desc, 3).unwrap()),
        ("weld grid", scenes::weld_grid(desc).unwrap()),
        ("particles and bodies", scenes::particle_bowl_with_bodies(desc, 300, 4, 1).unwrap()),
    ];
    for (name, world) in &worlds {
        eprintln!("{name}: {} bodies, {} joints", world.body_count(), world.joint_count());
        round_trip(world);
    }
    // Hulls, capsules and spheres in a baked field; joints with limits, cones, twists and motors.
    for (name, world) in worlds.iter().filter(|(n, _)| ["bowl rain, baked bowl", "ragdolls", "arms"].contains(n)) {
        eprintln!("{name}: stepped on the CPU");
        same_steps(world, &round_trip(world), 30, cpu);
    }
}

#[test]
fn a_world_read_back_steps_to_the_same_bits_on_the_gpu() {
    let Some(gpu) = common::gpu() else { return };
    let world = scenes::bowl_rain(scenes::bench_desc(), 40, 5, false).unwrap().0;
    same_steps(&world, &round_trip(&world), 30, |w| Box::new(GpuSolver::new(gpu, w).unwrap()));
}

#[test]
fn a_hand_written_scene_takes_the_defaults() {
    let text = r#"{
        "settings": { "dt": 0.01, "solver": { "substeps": 2 } },
        "planes": [ { "normal": [0, 2, 0], "offset": 1 } ],
        "bodies": [
            { "shape": { "cuboid": { "half_extents": [0.5, 0.5, 0.5] } }, "position": [0, 2, 0] },
            { "kind": "static", "shape": { "sphere": { "radius": 0.25 } }, "mass": { "mass": 2 } },
            { "shape": { "convex_hull": { "points": [[0,0,0],[1,0,0],[0,1,0],[0,0,1],[0.1,0.1,0.1]] } },
              "material": { "restitution": 0.5 }, "collision_groups": { "filter": 3 } }
        ],
        "joints": [ { "body_a": 0, "body_b": 2, "anchor": [0, 1, 0], "kind": { "revolute": { "axis": [0, 0, 3] } },
                      "limits": [-1, 1] } ],
        "particles": [ { "position": [0, 5, 0], "radius": 0.1, "mass": 0.5 } ]
    }"#;
    let world: World = serde_json::from_str(text).unwrap();
    let defaults = WorldDesc::default();
    assert_eq!(world.desc().dt, 0.01);
    assert_eq!(world.desc().solver.substeps, 2);
    assert_eq!(world.desc().solver.iterations, defaults.solver.iterations);
    assert_eq!(world.desc().gravity, defaults.gravity);
    // The plane's normal is normalized and its offset scaled with it.
    let plane = world.plane(PlaneHandle::from_index(0)).unwrap();
    assert_eq!((plane.normal, plane.offset), (Vec3::Y, 0.5));
    let cube = world.body(BodyHandle::from_index(0)).unwrap();
    assert_eq!(cube.kind, BodyKind::Dynamic);
    assert_eq!(cube.orientation, Quat::IDENTITY);
    assert_eq!(cube.material, Material::default());
    assert_eq!(cube.collision_groups, signorini::CollisionGroups::ALL);
    // The density of water: a 1 m cube of 1000 kg.
    let mass = world.mass_properties(BodyHandle::from_index(0)).unwrap().mass;
    assert!((mass - 1000.0).abs() < 1e-3, "mass {mass}");
    assert_eq!(world.body(BodyHandle::from_index(1)).unwrap().kind, BodyKind::Static);
    // The hull drops the point inside it; the groups keep the default memberships.
    let hull = world.body(BodyHandle::from_index(2)).unwrap();
    let Shape::ConvexHull(h) = &hull.shape else { panic!("a hull") };
    assert_eq!(h.vertices().len(), 4);
    assert_eq!(hull.material.restitution, 0.5);
    assert_eq!(hull.material.friction, Material::default().friction);
    assert_eq!(hull.collision_groups, signorini::CollisionGroups { memberships: u32::MAX, filter: 3 });
    let joint = world.joint(JointHandle::from_index(0)).unwrap();
    assert_eq!(joint.kind, JointKind::Revolute { axis: Vec3::Z });
    assert!(!joint.collide && joint.motor.is_none() && joint.breaking.is_none());
    assert_eq!(world.particles()[0].velocity, Vec3::ZERO);
    // And the world runs: the cube falls onto the plane at y = 0.5 and rests there.
    let mut solver = CpuSolver::new(&world).unwrap();
    solver.step_many(200);
    let y = solver.body_state(BodyHandle::from_index(0)).unwrap().position.y;
    assert!((y - 1.0).abs() < 0.01, "the cube rests on the plane: y = {y}");
}

#[test]
fn a_scene_built_in_code_equals_its_file() {
    let mut world = World::new(WorldDesc::default()).unwrap();
    let a = world.add_body(RigidBodyDesc::dynamic(Shape::capsule(0.3, 0.1)).position(Vec3::Y)).unwrap();
    let b =
        world.add_body(RigidBodyDesc::kinematic(Shape::sphere(0.2)).orientation(Quat::from_rotation_z(0.3))).unwrap();
    world
        .add_joint(
            JointDesc::spherical(a, b, Vec3::ZERO).cone(Vec3::new(1.0, 1.0, 0.0), 0.5).breaks_at(100.0, f32::INFINITY),
        )
        .unwrap();
    world.add_sdf(SdfCollider::new(Sdf::torus(2.0, 0.5).union(Sdf::cuboid(Vec3::ONE)).inverted())).unwrap();
    let scene = world.scene();
    assert_eq!(World::from_scene(scene.clone()).unwrap().scene(), scene);
    // An infinite load is no JSON number: it is written as null and read back as infinite.
    let text = serde_json::to_string(&world).unwrap();
    assert!(text.contains(r#""breaking":{"force":100.0,"torque":null}"#), "{text}");
    assert_eq!(
        round_trip(&world).joint(JointHandle::from_index(0)).unwrap().breaking,
        Some(JointBreaking { force: 100.0, torque: f32::INFINITY })
    );
}

#[test]
fn a_bad_scene_names_its_item_and_error() {
    let parse = |text: &str| serde_json::from_str::<World>(text).map(|_| ()).map_err(|e| e.to_string());
    let sphere = |r: f32| format!(r#"{{ "shape": {{ "sphere": {{ "radius": {r} }} }} }}"#);
    // Unknown fields and missing ones are errors of the format.
    let e = parse(r#"{ "bodys": [] }"#).unwrap_err();
    assert!(e.contains("bodys"), "{e}");
    let e = parse(r#"{ "bodies": [ { "position": [0, 0, 0] } ] }"#).unwrap_err();
    assert!(e.contains("shape"), "{e}");
    let e = parse(r#"{ "settings": { "dtt": 0.1 } }"#).unwrap_err();
    assert!(e.contains("dtt"), "{e}");
    // A value the world rejects: named by its item and index.
    let e = parse(&format!(r#"{{ "bodies": [ {}, {} ] }}"#, sphere(0.5), sphere(-1.0))).unwrap_err();
    assert!(e.contains("body 1 of the scene") && e.contains("sphere radius must be positive"), "{e}");
    let e = parse(r#"{ "settings": { "dt": 0 } }"#).unwrap_err();
    assert!(e.contains("time step must be positive"), "{e}");
    let e = parse(&format!(
        r#"{{ "bodies": [ {} ], "joints": [ {{ "body_a": 0, "body_b": 4, "anchor": [0,0,0], "kind": "spherical" }} ] }}"#,
        sphere(0.5)
    ))
    .unwrap_err();
    assert!(e.contains("joint 0 of the scene") && e.contains("invalid joint body handle 4"), "{e}");
    let e = parse(r#"{ "particles": [ { "position": [0,0,0], "radius": 0.1, "mass": 0 } ] }"#).unwrap_err();
    assert!(e.contains("particle 0 of the scene"), "{e}");
    // Shapes checked as they are read.
    let e = parse(r#"{ "bodies": [ { "shape": { "convex_hull": { "points": [[0,0,0],[1,0,0],[0,1,0]] } } } ] }"#)
        .unwrap_err();
    assert!(e.contains("at least 4 non-coplanar points"), "{e}");
    let grid = |values: &str| {
        format!(
            r#"{{ "sdfs": [ {{ "sdf": {{ "grid": {{ "origin": [0,0,0], "cell_size": 1, "dims": [2,2,2], "values": [{values}] }} }} }} ] }}"#
        )
    };
    assert!(parse(&grid("1,1,1,1,1,1,1,-1")).is_ok());
    // A field's box without its rounding is sharp.
    assert!(parse(r#"{ "sdfs": [ { "sdf": { "cuboid": { "half_extents": [1, 1, 1] } } } ] }"#).is_ok());
    let e = parse(&grid("1,1,1")).unwrap_err();
    assert!(e.contains("has 3 values"), "{e}");
    // The typed error, from the scene itself.
    let mut scene = Scene::default();
    scene.bodies.push(RigidBodyDesc::dynamic(Shape::sphere(0.5)));
    scene.bodies.push(RigidBodyDesc::dynamic(Shape::sphere(0.5)).position(Vec3::new(f32::NAN, 0.0, 0.0)));
    match World::from_scene(scene) {
        Err(Error::InScene { item: "body", index: 1, error }) => {
            assert!(matches!(*error, Error::NonFinite { what: "body position", .. }), "{error}")
        }
        other => panic!("expected the second body's error, got {other:?}"),
    }
    assert!(matches!(
        GridSdf::from_samples(Vec3::ZERO, 1.0, glam::UVec3::new(1, 2, 2), vec![0.0; 4]),
        Err(Error::OutOfRange { .. })
    ));
    assert!(matches!(
        GridSdf::from_samples(Vec3::ZERO, 1.0, glam::UVec3::splat(2), vec![f32::INFINITY; 8]),
        Err(Error::NonFinite { .. })
    ));
    // Dims whose product would wrap a u64 to 0 samples.
    assert!(matches!(
        GridSdf::from_samples(Vec3::ZERO, 1.0, glam::UVec3::new(1 << 22, 1 << 21, 1 << 21), Vec::new()),
        Err(Error::OutOfRange { .. })
    ));
}

/// Scene files with numbers changed at random (one to three of them, to zero, negative,
/// denormal, huge or f32's extremes) never make the crate panic or hang: each either fails to
/// load with an error, or loads and steps, and then reads back states that are finite or a
/// typed error (`Error::Diverged`): never a NaN. On the CPU, 400 files from five scenes
/// (bodies of every shape, joints of every kind with limits and motors, fields, particles).
#[test]
fn scene_files_with_numbers_changed_at_random_never_panic() {
    let desc = scenes::bench_desc();
    let bases: Vec<serde_json::Value> = [
        scenes::bowl_rain(desc, 12, 2, false).unwrap().0,
        scenes::ragdolls(desc, 1).unwrap(),
        scenes::arms(desc, 1).unwrap(),
        scenes::particle_bowl_with_bodies(desc, 50, 2, 1).unwrap(),
        scenes::pyramid(desc, 4).unwrap().0,
    ]
    .iter()
    .map(|w| serde_json::to_value(w).unwrap())
    .collect();
    let extremes = [0.0, -0.0, -1.0, 1e30, -1e30, 1e-30, 3.4e38, -3.4e38, 1e-45, 1e10, 1e-10, 7.0, 4294967295.0, 0.5];
    let mut rng = signorini::scenes::Lcg(7);
    let mut pick = |n: usize| (rng.range(0.0, 1.0) * n as f32) as usize % n;
    let (mut loaded, mut diverged) = (0, 0);
    for case in 0..400 {
        let mut value = bases[case % bases.len()].clone();
        let count = numbers(&mut value, &mut |_| {});
        let changes: Vec<(usize, f64)> =
            (0..1 + pick(3)).map(|_| (pick(count), extremes[pick(extremes.len())])).collect();
        let mut index = 0;
        numbers(&mut value, &mut |number| {
            if let Some(&(_, to)) = changes.iter().find(|(at, _)| *at == index) {
                *number = if number.is_u64() && to >= 0.0 && to.fract() == 0.0 {
                    serde_json::json!(to as u64)
                } else {
                    serde_json::json!(to)
                };
            }
            index += 1;
        });
        let Ok(world) = serde_json::from_value::<World>(value) else { continue };
        let Ok(mut solver) = CpuSolver::new(&world) else { continue };
        loaded += 1;
        solver.step_many(3);
        let reads = [
            solver.body_states().map(|_| ()),
            solver.particle_states().map(|_| ()),
            solver.stats().map(|_| ()),
            solver.contacts().map(|_| ()),
            solver.joint_reactions().map(|_| ()),
        ];
        for read in reads {
            match read {
                Ok(()) => {}
                Err(Error::Diverged { .. }) => diverged += 1,
                Err(e) => panic!("case {case} ({changes:?}): an unexpected error {e}"),
            }
        }
    }
    eprintln!("{loaded} of 400 loaded; {diverged} reads diverged");
    assert!(loaded > 150, "most changes leave a valid scene: {loaded} loaded");
}

/// Calls `f` on every number of `value`, depth first; returns how many there are.
fn numbers(value: &mut serde_json::Value, f: &mut dyn FnMut(&mut serde_json::Value)) -> usize {
    match value {
        serde_json::Value::Number(_) => {
            f(value);
            1
        }
        serde_json::Value::Array(items) => items.iter_mut().map(|x| numbers(x, f)).sum(),
        serde_json::Value::Object(fields) => fields.values_mut().map(|x| numbers(x, f)).sum(),
        _ => 0,
    }
}
