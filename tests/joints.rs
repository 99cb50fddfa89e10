//! Joints against analytic expectations, on every backend, and the GPU against the CPU.

mod common;

use signorini::prelude::*;
use signorini::{JointHandle, Solver};

/// A world without planes, default settings and standard gravity.
fn world() -> World {
    common::world_with(Vec3::new(0.0, -9.81, 0.0))
}

/// A small static sphere at the origin to hang things from.
fn pivot(world: &mut World) -> BodyHandle {
    world.add_body(RigidBodyDesc::fixed(Shape::sphere(0.01))).unwrap()
}

/// Where a joint's anchor is on each of its bodies now: the anchor as added, carried by each
/// body's motion since.
fn anchors(world: &World, joint: JointHandle, states: &[BodyState]) -> (Vec3, Vec3) {
    let j = world.joint(joint).unwrap();
    let at = |b: BodyHandle| {
        let start = world.body(b).unwrap();
        let local = start.orientation.inverse() * (j.anchor - start.position);
        let now = states[b.index()];
        now.position + now.orientation * local
    };
    (at(j.body_a), at(j.body_b))
}

/// The times at which `x` crosses zero upwards, interpolated between steps.
fn upward_crossings(xs: &[f32], dt: f32) -> Vec<f32> {
    xs.windows(2)
        .enumerate()
        .filter(|(_, w)| w[0] < 0.0 && w[1] >= 0.0)
        .map(|(i, w)| (i as f32 + w[0] / (w[0] - w[1])) * dt)
        .collect()
}

/// A sphere of radius 0.1 m and 1 kg on a ball joint 1 m below a fixed pivot, let go 5° out:
/// a compound pendulum, whose period is `2π √(I_pivot / (m g L)) (1 + θ₀²/16)` with
/// `I_pivot = ⅖ m r² + m L²`: 2.0111 s. Measured over five periods from the upward zero
/// crossings, within 0.5 %; the anchor stays within 1 mm of the pivot; the amplitude after
/// five periods is within 5 % of the first (the soft joint's damping takes little).
#[test]
fn a_pendulum_swings_with_the_compound_period() {
    let mut world = world();
    let p = pivot(&mut world);
    let (length, theta0, radius) = (1.0_f32, 5.0_f32.to_radians(), 0.1);
    let bob = world
        .add_body(RigidBodyDesc::dynamic(Shape::sphere(radius)).mass(1.0).position(Vec3::new(
            length * theta0.sin(),
            -length * theta0.cos(),
            0.0,
        )))
        .unwrap();
    let joint = world.add_joint(JointDesc::spherical(p, bob, Vec3::ZERO)).unwrap();
    let inertia = 0.4 * radius * radius + length * length;
    let expected = std::f32::consts::TAU * (inertia / (9.81 * length)).sqrt() * (1.0 + theta0 * theta0 / 16.0);
    let dt = world.desc().dt;
    for mut solver in common::solvers(&world) {
        let (mut xs, mut worst_gap, mut first_peak, mut last_peak) = (Vec::new(), 0.0_f32, 0.0_f32, 0.0_f32);
        let steps = (5.5 * expected / dt) as usize;
        for step in 0..steps {
            solver.step();
            let states = solver.body_states().unwrap();
            let (a, b) = anchors(&world, joint, &states);
            worst_gap = worst_gap.max((a - b).length());
            let x = states[bob.index()].position.x;
            xs.push(x);
            if (step as f32) * dt < expected {
                first_peak = first_peak.max(x.abs());
            } else if (step as f32) * dt > 4.5 * expected {
                last_peak = last_peak.max(x.abs());
            }
        }
        let crossings = upward_crossings(&xs, dt);
        assert!(crossings.len() >= 5, "{}: {} crossings", solver.backend(), crossings.len());
        let period = (crossings[crossings.len() - 1] - crossings[0]) / (crossings.len() - 1) as f32;
        eprintln!(
            "{}: period {period:.4} s (expected {expected:.4}), worst anchor gap {worst_gap:.2e} m, amplitude {first_peak:.4} -> {last_peak:.4} m",
            solver.backend()
        );
        assert!(
            (period / expected - 1.0).abs() < 0.005,
            "{}: period {period} s, expected {expected}",
            solver.backend()
        );
        assert!(worst_gap < 1e-3, "{}: the anchors parted by {worst_gap} m", solver.backend());
        assert!(last_peak > 0.95 * first_peak, "{}: amplitude {first_peak} -> {last_peak}", solver.backend());
    }
}

/// A chain of ten 0.5 kg spheres on ball joints 0.2 m apart, the first hanging from a fixed
/// pivot: `horizontal` lays it out sideways, else it hangs straight down.
fn chain(horizontal: bool) -> (World, Vec<BodyHandle>, Vec<JointHandle>) {
    let mut world = world();
    let p = pivot(&mut world);
    let along = if horizontal { Vec3::X } else { Vec3::NEG_Y };
    let (mut previous, mut links, mut joints) = (p, Vec::new(), Vec::new());
    for i in 1..=10 {
        let at = 0.2 * i as f32 * along;
        let link = world.add_body(RigidBodyDesc::dynamic(Shape::sphere(0.05)).mass(0.5).position(at)).unwrap();
        // The first hangs from the pivot's centre, the others join halfway between two links.
        let anchor = if i == 1 { Vec3::ZERO } else { at - 0.1 * along };
        joints.push(world.add_joint(JointDesc::spherical(previous, link, anchor)).unwrap());
        links.push(link);
        previous = link;
    }
    (world, links, joints)
}

/// The chain hanging straight down comes to rest stretched as its soft joints predict: at
/// rest the soft step holds a joint carrying tension `T` open by `T / (m ω²)`, with `ω` the
/// joint's angular frequency (2π 60 Hz) and `m` its effective mass along the chain
/// (`1 / (1/m_a + 1/m_b)`; the lever arms lie along it). Summed over the ten joints, each
/// carrying the weight below it: 6.9 mm. The last sphere rests that far below 2 m, within
/// 2 %, and every joint's gap is within 5 % of its own prediction.
#[test]
fn a_hanging_chain_stretches_as_its_soft_joints_predict() {
    let (world, links, joints) = chain(false);
    let omega2 = (std::f32::consts::TAU * world.desc().solver.joint_hertz).powi(2);
    let weight = 0.5 * 9.81;
    // Joint i (from the top) carries the links i..10; the first joint's pivot does not move.
    let predicted: Vec<f32> = (0..10)
        .map(|i| {
            let mass = if i == 0 { 0.5 } else { 0.25 };
            (10 - i) as f32 * weight / (mass * omega2)
        })
        .collect();
    let total: f32 = predicted.iter().sum();
    for mut solver in common::solvers(&world) {
        solver.step_many(180);
        let states = solver.body_states().unwrap();
        let stretch = -states[links[9].index()].position.y - 2.0;
        eprintln!("{}: stretched {stretch:.5} m, predicted {total:.5} m", solver.backend());
        assert!((stretch / total - 1.0).abs() < 0.02, "{}: stretched {stretch} m, predicted {total}", solver.backend());
        for (i, &j) in joints.iter().enumerate() {
            let (a, b) = anchors(&world, j, &states);
            let gap = (a - b).length();
            assert!(
                (gap / predicted[i] - 1.0).abs() < 0.1,
                "{}: joint {i} open by {gap} m, predicted {}",
                solver.backend(),
                predicted[i]
            );
        }
        assert!(states.iter().all(|s| s.linear_velocity.length() < 1e-3), "{}: not at rest", solver.backend());
    }
}

/// The lowest eigenvalue of `K / m` for a chain of `springs.len()` equal masses `m` hanging
/// from a fixed point, spring `i` (stiffness over mass `springs[i]`) above mass `i`: by
/// inverse iteration, each step solving the tridiagonal system (Thomas' algorithm).
fn lowest_chain_mode(springs: &[f64]) -> f64 {
    let n = springs.len();
    let below = |i: usize| if i + 1 < n { springs[i + 1] } else { 0.0 };
    let diagonal: Vec<f64> = (0..n).map(|i| springs[i] + below(i)).collect();
    let times_k = |x: &[f64]| -> Vec<f64> {
        (0..n)
            .map(|i| {
                let up = if i > 0 { -springs[i] * x[i - 1] } else { 0.0 };
                let down = if i + 1 < n { -below(i) * x[i + 1] } else { 0.0 };
                up + diagonal[i] * x[i] + down
            })
            .collect()
    };
    let mut x = vec![1.0; n];
    for _ in 0..200 {
        // Solve K y = x: forward elimination with off-diagonals -springs[i + 1], then back.
        let (mut c, mut d) = (vec![0.0; n], vec![0.0; n]);
        for i in 0..n {
            let off_up = if i > 0 { -springs[i] } else { 0.0 };
            let pivot = diagonal[i] - if i > 0 { off_up * c[i - 1] } else { 0.0 };
            c[i] = -below(i) / pivot;
            d[i] = (x[i] - if i > 0 { off_up * d[i - 1] } else { 0.0 }) / pivot;
        }
        let mut y = vec![0.0; n];
        for i in (0..n).rev() {
            y[i] = d[i] - if i + 1 < n { c[i] * y[i + 1] } else { 0.0 };
        }
        let norm = y.iter().map(|v| v * v).sum::<f64>().sqrt();
        x = y.iter().map(|v| v / norm).collect();
    }
    let kx = times_k(&x);
    x.iter().zip(&kx).map(|(a, b)| a * b).sum::<f64>() / x.iter().map(|v| v * v).sum::<f64>()
}

/// A column of 60 welded spheres (radius 0.4 m, 1 m apart, density 1000: the weld grid's
/// column) let go unstretched from under a fixed sphere, the default three biased iterations.
/// Its soft welds act as springs of `m ω²` (the first, to the fixed sphere) and `m ω² / 2`
/// (the others, between two equal spheres), `ω` the joints' 2π 60 Hz, so at rest the bottom
/// sphere hangs `g N² / ω²` lower (N = 59 dynamic spheres: 0.2403 m), and the column bounces
/// about there in the lowest mode of that chain of springs (0.885 s). Measured over whole
/// periods: the mean drop within 3 %, the period within 2 %. The bounce damps slowly (the
/// welds' damping is spread over the column's length), so many periods show. Measured on the
/// CPU and lavapipe: 0.2386 m and 0.880 s over 8 periods. With three
/// iterations this needs the welds' impulses carried from substep to substep: without
/// (`warm_starting` off), the long chain's impulses do not converge within a substep and it
/// bounces about 0.323 m down with a period of 1.036 s, as softer springs would, and fails
/// (BENCHMARKS.md, the weld grid beside Rapier).
#[test]
fn a_welded_column_hangs_and_bounces_as_its_soft_welds_predict() {
    let mut world = world();
    let n = 60;
    let mut spheres = Vec::new();
    for i in 0..n {
        let position = Vec3::new(0.0, -(i as f32), 0.0);
        let shape = Shape::sphere(0.4);
        let body = if i == 0 { RigidBodyDesc::fixed(shape) } else { RigidBodyDesc::dynamic(shape).density(1000.0) };
        spheres.push(world.add_body(body.position(position)).unwrap());
        if i > 0 {
            world.add_joint(JointDesc::fixed(spheres[i - 1], spheres[i], position + Vec3::new(0.0, 0.5, 0.0))).unwrap();
        }
    }
    let omega2 = (std::f64::consts::TAU * world.desc().solver.joint_hertz as f64).powi(2);
    let dynamic = (n - 1) as f64;
    let rest_drop = 9.81 * dynamic * dynamic / omega2;
    let springs: Vec<f64> = (0..n - 1).map(|i| if i == 0 { omega2 } else { omega2 / 2.0 }).collect();
    let period = std::f64::consts::TAU / lowest_chain_mode(&springs).sqrt();
    let dt = world.desc().dt;
    let bottom = spheres[n - 1];
    for mut solver in common::solvers(&world) {
        let heights: Vec<f32> = (0..600)
            .map(|_| {
                solver.step();
                solver.body_states().unwrap()[bottom.index()].position.y
            })
            .collect();
        // About the mean of the last eight seconds, whose crossings bound whole periods.
        let tail = &heights[120..];
        let centre = tail.iter().sum::<f32>() / tail.len() as f32;
        let offsets: Vec<f32> = tail.iter().map(|y| y - centre).collect();
        let crossings = upward_crossings(&offsets, dt);
        assert!(crossings.len() >= 6, "{}: {} crossings", solver.backend(), crossings.len());
        let (first, last) = (crossings[0], crossings[crossings.len() - 1]);
        let measured_period = (last - first) / (crossings.len() - 1) as f32;
        let whole = &tail[(first / dt).ceil() as usize..(last / dt).ceil() as usize];
        let drop = -(whole.iter().sum::<f32>() / whole.len() as f32) - dynamic as f32;
        eprintln!(
            "{}: mean drop {drop:.4} m (predicted {rest_drop:.4}), period {measured_period:.4} s (predicted {period:.4}), {} periods",
            solver.backend(),
            crossings.len() - 1
        );
        assert!(
            (drop as f64 / rest_drop - 1.0).abs() < 0.03,
            "{}: drop {drop} m, predicted {rest_drop}",
            solver.backend()
        );
        assert!(
            (measured_period as f64 / period - 1.0).abs() < 0.02,
            "{}: period {measured_period} s, predicted {period}",
            solver.backend()
        );
    }
}

/// The chain let go sideways swings down and whips (its last sphere passes 10 m/s): its
/// mechanical energy never grows (the joints can only take energy, within 0.5 % of the chain's
/// weight times a metre for the rounding of the energy sum), and every joint's anchors stay
/// within 4 cm of each other (measured: 2.5 cm) under the whip's tension, which opens these
/// light joints the most: their effective mass across the chain is 0.023 kg, with lever arms
/// twice the spheres' radius, so 80 N opens one by 2.5 cm at 60 Hz.
#[test]
fn a_swinging_chain_keeps_together_and_loses_energy() {
    let (world, links, joints) = chain(true);
    let energy = |states: &[BodyState]| -> f32 {
        links
            .iter()
            .map(|l| {
                let s = states[l.index()];
                // ½ m v² + ½ I ω² + m g y, I = ⅖ m r².
                0.5 * 0.5 * s.linear_velocity.length_squared()
                    + 0.5 * (0.4 * 0.5 * 0.05 * 0.05) * s.angular_velocity.length_squared()
                    + 0.5 * 9.81 * s.position.y
            })
            .sum()
    };
    for mut solver in common::solvers(&world) {
        let start = energy(&solver.body_states().unwrap());
        let (mut worst_gap, mut most_energy, mut fastest) = (0.0_f32, start, 0.0_f32);
        for _ in 0..180 {
            solver.step();
            let states = solver.body_states().unwrap();
            for &j in &joints {
                let (a, b) = anchors(&world, j, &states);
                worst_gap = worst_gap.max((a - b).length());
            }
            most_energy = most_energy.max(energy(&states));
            fastest = fastest.max(states[links[9].index()].linear_velocity.length());
        }
        eprintln!(
            "{}: worst anchor gap {worst_gap:.2e} m, energy {start:.3} J, at most {most_energy:.3} J, fastest end {fastest:.2} m/s",
            solver.backend()
        );
        assert!(fastest > 10.0, "{}: the chain's end reached only {fastest} m/s", solver.backend());
        assert!(worst_gap < 0.04, "{}: anchors parted by {worst_gap} m", solver.backend());
        // The energy starts at 0 (every sphere at y = 0): compare with the chain's weight times 1 cm.
        assert!(
            most_energy - start < 0.005 * 5.0 * 9.81,
            "{}: energy grew from {start} to {most_energy} J",
            solver.backend()
        );
    }
}

/// A 1 kg bar 1 m long on a hinge about z 5 cm beyond one end, let go horizontal and spinning
/// about x and y: it swings in the xy-plane only. Its centre stays in the plane z = 0 within
/// 1 mm, its angular velocity stays along z within 1 % of its size once the hinge has caught
/// it, the hinge's anchors stay within 2 mm of each other, and the swing reaches the bottom at
/// the speed energy conservation gives, `ω = √(2 m g d / I)`, within 1 %.
#[test]
fn a_hinge_turns_only_about_its_axis() {
    let mut world = world();
    let p = pivot(&mut world);
    let length = 1.0_f32;
    let bar = world
        .add_body(
            RigidBodyDesc::dynamic(Shape::cuboid(Vec3::new(0.5 * length, 0.02, 0.02)))
                .mass(1.0)
                .position(Vec3::new(0.05 + 0.5 * length, 0.0, 0.0))
                .angular_velocity(Vec3::new(0.4, -0.3, 0.0)),
        )
        .unwrap();
    let hinge = world.add_joint(JointDesc::revolute(p, bar, Vec3::ZERO, Vec3::Z)).unwrap();
    // Energy at the bottom: ½ I ω² = m g d, with the centre d = 0.55 m from the hinge and
    // I = m (L² + (0.04 m)²) / 12 + m d² about it.
    let d = 0.05 + 0.5 * length;
    let inertia = (length * length + 0.04 * 0.04) / 12.0 + d * d;
    let expected = (2.0 * 9.81 * d / inertia).sqrt();
    for mut solver in common::solvers(&world) {
        let (mut worst_z, mut worst_off_axis, mut fastest) = (0.0_f32, 0.0_f32, 0.0_f32);
        for step in 0..90 {
            solver.step();
            let states = solver.body_states().unwrap();
            let s = states[bar.index()];
            worst_z = worst_z.max(s.position.z.abs());
            if step >= 5 {
                let w = s.angular_velocity;
                worst_off_axis = worst_off_axis.max(w.truncate().length() / w.length().max(1e-6));
            }
            fastest = fastest.max(s.angular_velocity.z.abs());
            let (a, b) = anchors(&world, hinge, &states);
            assert!((a - b).length() < 2e-3, "{}: hinge anchors {} m apart", solver.backend(), (a - b).length());
        }
        eprintln!(
            "{}: worst z {worst_z:.2e} m, off-axis spin {worst_off_axis:.2e}, fastest {fastest:.3} rad/s (expected {expected:.3})",
            solver.backend()
        );
        assert!(worst_z < 1e-3, "{}: left the plane by {worst_z} m", solver.backend());
        assert!(worst_off_axis < 0.01, "{}: spin off the axis {worst_off_axis}", solver.backend());
        assert!((fastest / expected - 1.0).abs() < 0.01, "{}: {fastest} rad/s, expected {expected}", solver.backend());
    }
}

/// A 1 kg bar 1 m long welded at one end to a fixed body, sticking out horizontally under
/// gravity: it holds. Its centre sags by less than 2 mm and it turns by less than 2 mrad,
/// about ten times the soft weld's static deflection at 60 Hz (`m g / (k ω²)`), and it is at
/// rest after 2 s.
#[test]
fn a_weld_holds_a_cantilever() {
    let mut world = world();
    let p = pivot(&mut world);
    let start = Vec3::new(0.55, 0.0, 0.0);
    let bar = world
        .add_body(RigidBodyDesc::dynamic(Shape::cuboid(Vec3::new(0.5, 0.05, 0.05))).mass(1.0).position(start))
        .unwrap();
    world.add_joint(JointDesc::fixed(p, bar, Vec3::ZERO)).unwrap();
    for mut solver in common::solvers(&world) {
        let (mut worst_sag, mut worst_turn) = (0.0_f32, 0.0_f32);
        for _ in 0..120 {
            solver.step();
            let s = solver.body_states().unwrap()[bar.index()];
            worst_sag = worst_sag.max((s.position - start).length());
            // 2 asin |q.xyz|: `angle_between` rounds angles under a milliradian to zero in f32.
            worst_turn = worst_turn.max(2.0 * s.orientation.xyz().length().asin());
        }
        let s = solver.body_states().unwrap()[bar.index()];
        eprintln!(
            "{}: sag {worst_sag:.2e} m, turn {worst_turn:.2e} rad, speed at 2 s {:.2e} m/s",
            solver.backend(),
            s.linear_velocity.length()
        );
        assert!(worst_sag < 2e-3, "{}: sagged {worst_sag} m", solver.backend());
        assert!(worst_turn < 2e-3, "{}: turned {worst_turn} rad", solver.backend());
        assert!(s.linear_velocity.length() < 1e-3, "{}: still moving at {}", solver.backend(), s.linear_velocity);
    }
}

/// A 1 kg box on a slider through its centre along `(cos 30°, -sin 30°, 0)`, fixed to a pivot:
/// under gravity it slides down the line at `g sin 30°`, so after 1 s (240 substeps of
/// semi-implicit Euler) it is `½ a t² (1 + 1/240)` = 2.4627 m along it, within 0.2 %; it
/// hangs off the line by the soft joint's static deflection under the rest of its weight,
/// `g cos 30° / ω²` with ω = 2π 60 Hz (0.060 mm; the anchor is at its centre, so its full
/// mass resists), within 5 %; and it turns by less than 1 mrad.
#[test]
fn a_slider_moves_only_along_its_line() {
    let mut world = world();
    let p = pivot(&mut world);
    let angle = 30.0_f32.to_radians();
    let axis = Vec3::new(angle.cos(), -angle.sin(), 0.0);
    let slider = world.add_body(RigidBodyDesc::dynamic(Shape::cuboid(Vec3::new(0.2, 0.1, 0.1))).mass(1.0)).unwrap();
    world.add_joint(JointDesc::prismatic(p, slider, Vec3::ZERO, axis)).unwrap();
    let expected = 0.5 * 9.81 * angle.sin() * (1.0 + 1.0 / 240.0);
    for mut solver in common::solvers(&world) {
        solver.step_many(60);
        let s = solver.body_states().unwrap()[slider.index()];
        let along = s.position.dot(axis);
        let off = (s.position - along * axis).length();
        let turn = 2.0 * s.orientation.xyz().length().asin();
        eprintln!(
            "{}: {along:.5} m along (expected {expected:.5}), {off:.2e} m off, turned {turn:.2e}",
            solver.backend()
        );
        assert!(
            (along / expected - 1.0).abs() < 0.002,
            "{}: {along} m along the line, expected {expected}",
            solver.backend()
        );
        let sag = 9.81 * angle.cos() / (std::f32::consts::TAU * 60.0).powi(2);
        assert!((off / sag - 1.0).abs() < 0.05, "{}: {off} m off the line, expected {sag}", solver.backend());
        assert!(turn < 1e-3, "{}: turned by {turn} rad", solver.backend());
    }
}

/// A 1 kg sphere held by its centre to a plane tilted 30° about z (normal `(sin 30°, cos 30°,
/// 0)`), spinning about y: it slides down the plane at `g sin 30°`, so after 1 s it is
/// `½ a t² (1 + 1/240)` = 2.4627 m down it, within 0.2 %; it hangs off the plane by the soft
/// joint's static deflection `g cos 30° / ω²` (0.060 mm), within 5 %; and it keeps its spin
/// within 1e-3 rad/s (the joint leaves rotation free).
#[test]
fn a_point_on_a_plane_slides_down_it_and_turns_freely() {
    let mut world = world();
    let p = pivot(&mut world);
    let angle = 30.0_f32.to_radians();
    let normal = Vec3::new(angle.sin(), angle.cos(), 0.0);
    let spin = Vec3::new(0.0, 5.0, 0.0);
    let ball = world.add_body(RigidBodyDesc::dynamic(Shape::sphere(0.1)).mass(1.0).angular_velocity(spin)).unwrap();
    world.add_joint(JointDesc::point_on_plane(p, ball, Vec3::ZERO, normal)).unwrap();
    let down = (Vec3::NEG_Y - Vec3::NEG_Y.dot(normal) * normal).normalize();
    let expected = 0.5 * 9.81 * angle.sin() * (1.0 + 1.0 / 240.0);
    for mut solver in common::solvers(&world) {
        solver.step_many(60);
        let s = solver.body_states().unwrap()[ball.index()];
        let along = s.position.dot(down);
        let off = s.position.dot(normal).abs();
        let spin_change = (s.angular_velocity - spin).length();
        eprintln!(
            "{}: {along:.5} m down (expected {expected:.5}), {off:.2e} m off, spin off by {spin_change:.2e}",
            solver.backend()
        );
        assert!(
            (along / expected - 1.0).abs() < 0.002,
            "{}: {along} m down the plane, expected {expected}",
            solver.backend()
        );
        let sag = 9.81 * angle.cos() / (std::f32::consts::TAU * 60.0).powi(2);
        assert!((off / sag - 1.0).abs() < 0.05, "{}: {off} m off the plane, expected {sag}", solver.backend());
        assert!(spin_change < 1e-3, "{}: the spin changed by {spin_change}", solver.backend());
    }
}

/// B's turn about z, rad, for a body that started unrotated (its orientation about z alone).
fn turn_about_z(q: Quat) -> f32 {
    2.0 * q.z.atan2(q.w)
}

/// Two 1 kg bars 1 m long, hinged about z 5 cm beyond one end with limits of ±30°: one let go
/// horizontal falls onto its lower limit; the other, flung upwards at 8 rad/s with energy
/// enough to swing past 90°, is stopped by its upper limit (reaching it within 0.01 rad and
/// passing it by less than 0.05 rad), then falls back. After 2 s both rest on the lower limit
/// within 0.01 rad (the soft limit gives a little under the bar's weight).
#[test]
fn a_hinge_stops_at_its_limits() {
    let mut world = world();
    let p = pivot(&mut world);
    let limit = 30.0_f32.to_radians();
    let bar = |world: &mut World, z: f32, spin: f32| {
        let b = world
            .add_body(
                RigidBodyDesc::dynamic(Shape::cuboid(Vec3::new(0.5, 0.02, 0.02)))
                    .mass(1.0)
                    .position(Vec3::new(0.55, 0.0, z))
                    .angular_velocity(Vec3::new(0.0, 0.0, spin))
                    .linear_velocity(Vec3::new(0.0, 0.55 * spin, 0.0)),
            )
            .unwrap();
        world.add_joint(JointDesc::revolute(p, b, Vec3::new(0.0, 0.0, z), Vec3::Z).limits(-limit, limit)).unwrap();
        b
    };
    let (falling, flung) = (bar(&mut world, 0.0, 0.0), bar(&mut world, 1.0, 8.0));
    for mut solver in common::solvers(&world) {
        let (mut lowest, mut highest) = (0.0_f32, 0.0_f32);
        for _ in 0..120 {
            solver.step();
            let states = solver.body_states().unwrap();
            lowest = lowest.min(turn_about_z(states[falling.index()].orientation));
            highest = highest.max(turn_about_z(states[flung.index()].orientation));
        }
        let states = solver.body_states().unwrap();
        let (down, up) =
            (turn_about_z(states[falling.index()].orientation), turn_about_z(states[flung.index()].orientation));
        eprintln!(
            "{}: rests at {down:.4} and {up:.4} rad (limits ±{limit:.4}), reached {lowest:.4} and {highest:.4}",
            solver.backend()
        );
        assert!((down + limit).abs() < 0.01, "{}: the falling bar rests at {down} rad", solver.backend());
        assert!((up + limit).abs() < 0.01, "{}: the flung bar rests at {up} rad", solver.backend());
        assert!(highest > limit - 0.01, "{}: the flung bar rose to {highest} rad only", solver.backend());
        assert!(
            lowest > -limit - 0.05 && highest < limit + 0.05,
            "{}: passed a limit: {lowest}, {highest}",
            solver.backend()
        );
    }
}

/// A 1 kg plate on a hinge about y driven by a motor of 50 N m towards 6 rad/s, with limits of
/// 0 and 3.1 rad: it turns nearly half a turn, stops at the upper limit and stays there within
/// 0.01 rad (measured: 2.1 mrad past it, the soft limit's give under the motor's torque,
/// `τ / (I ω²)`), having passed it by less than 0.02 rad. The angle is measured from the middle
/// of the limits, so it wraps at 1.55 ± π, far from both.
#[test]
fn a_hinge_limit_near_half_a_turn_holds() {
    let mut world = world();
    let p = pivot(&mut world);
    let plate = world.add_body(RigidBodyDesc::dynamic(Shape::cuboid(Vec3::new(0.5, 0.02, 0.5))).mass(1.0)).unwrap();
    world.add_joint(JointDesc::revolute(p, plate, Vec3::ZERO, Vec3::Y).motor(6.0, 50.0).limits(0.0, 3.1)).unwrap();
    for mut solver in common::solvers(&world) {
        let mut highest = 0.0_f32;
        for _ in 0..120 {
            solver.step();
            let q = solver.body_states().unwrap()[plate.index()].orientation;
            highest = highest.max(2.0 * q.y.atan2(q.w));
        }
        let q = solver.body_states().unwrap()[plate.index()].orientation;
        let angle = 2.0 * q.y.atan2(q.w);
        eprintln!("{}: rests at {angle:.4} rad, reached {highest:.4} (limit 3.1)", solver.backend());
        assert!((angle - 3.1).abs() < 0.01, "{}: rests at {angle} rad", solver.backend());
        assert!(highest < 3.1 + 0.02, "{}: reached {highest} rad", solver.backend());
    }
}

/// A 1 kg plate (1 m x 1 m) on a hinge about y through its centre, driven by a motor towards
/// 3 rad/s with at most 0.5 N m: it speeds up at the torque over its inertia (`m (a² + c²) / 12`
/// = 1/6 kg m², so 3 rad/s²), reaching 1.5 rad/s after 0.5 s within 1 %, then holds 3 rad/s
/// within 1e-3 rad/s.
#[test]
fn a_hinge_motor_drives_within_its_torque() {
    let mut world = world();
    let p = pivot(&mut world);
    let plate = world.add_body(RigidBodyDesc::dynamic(Shape::cuboid(Vec3::new(0.5, 0.02, 0.5))).mass(1.0)).unwrap();
    world.add_joint(JointDesc::revolute(p, plate, Vec3::ZERO, Vec3::Y).motor(3.0, 0.5)).unwrap();
    let inertia = (1.0 + 1.0) / 12.0;
    for mut solver in common::solvers(&world) {
        solver.step_many(30);
        let early = solver.body_states().unwrap()[plate.index()].angular_velocity.y;
        solver.step_many(90);
        let late = solver.body_states().unwrap()[plate.index()].angular_velocity;
        let expected = 0.5 / inertia * 0.5;
        eprintln!("{}: {early:.4} rad/s after 0.5 s (expected {expected:.4}), then {late}", solver.backend());
        assert!(
            (early / expected - 1.0).abs() < 0.01,
            "{}: {early} rad/s after 0.5 s, expected {expected}",
            solver.backend()
        );
        assert!(
            (late.y - 3.0).abs() < 1e-3 && late.x.abs() < 1e-3 && late.z.abs() < 1e-3,
            "{}: {late}",
            solver.backend()
        );
    }
}

/// Two 1 kg boxes on vertical sliders from a fixed pivot, with limits of -0.5 m and 0.3 m.
/// One falls freely onto its lower limit (0.5 m takes 0.32 s) and rests there: after 1 s it is
/// past the limit by the soft limit's give under its weight, `g / ω²` (0.069 mm at 60 Hz),
/// within 0.05 mm; it never passed it by more than 1 mm; it is at rest within 1e-3 m/s; and the
/// joint's reaction holds its weight, 9.81 N up, within 0.5 %. The other is driven up by a
/// motor of 30 N towards 2 m/s and stops at its upper limit, past it by `(F - m g) / (m ω²)`
/// (0.142 mm), within 0.05 mm.
#[test]
fn a_slider_stops_at_its_limits() {
    let mut world = world();
    let p = pivot(&mut world);
    let slider = |world: &mut World, x: f32, motor: bool| {
        let at = Vec3::new(x, 0.0, 0.0);
        let b = world.add_body(RigidBodyDesc::dynamic(Shape::cuboid(Vec3::splat(0.1))).mass(1.0).position(at)).unwrap();
        let joint = JointDesc::prismatic(p, b, at, Vec3::Y).limits(-0.5, 0.3);
        let joint = world.add_joint(if motor { joint.motor(2.0, 30.0) } else { joint }).unwrap();
        (b, joint)
    };
    let ((falling, holding), (driven, _)) = (slider(&mut world, 1.0, false), slider(&mut world, 2.0, true));
    let omega_sq = (std::f32::consts::TAU * 60.0).powi(2);
    let (sag, pushed) = (9.81 / omega_sq, (30.0 - 9.81) / omega_sq);
    for mut solver in common::solvers(&world) {
        let (mut lowest, mut highest) = (0.0_f32, 0.0_f32);
        for _ in 0..60 {
            solver.step();
            let states = solver.body_states().unwrap();
            lowest = lowest.min(states[falling.index()].position.y);
            highest = highest.max(states[driven.index()].position.y);
        }
        let states = solver.body_states().unwrap();
        let (down, up) = (states[falling.index()], states[driven.index()]);
        let reaction = solver.joint_reactions().unwrap()[holding.index()].force;
        eprintln!(
            "{}: rests {:.3} mm past the lower limit (expected {:.3}), reached {lowest:.4} m, speed {:.1e}; \
             reaction {reaction}; the driven box {:.3} mm past the upper (expected {:.3}), reached {highest:.4} m",
            solver.backend(),
            (-0.5 - down.position.y) * 1e3,
            sag * 1e3,
            down.linear_velocity.length(),
            (up.position.y - 0.3) * 1e3,
            pushed * 1e3,
        );
        assert!(
            ((-0.5 - down.position.y) - sag).abs() < 5e-5,
            "{}: rests at {} m, expected {} m",
            solver.backend(),
            down.position.y,
            -0.5 - sag
        );
        assert!(lowest > -0.501, "{}: passed the lower limit to {lowest} m", solver.backend());
        assert!(down.linear_velocity.length() < 1e-3, "{}: still moving: {}", solver.backend(), down.linear_velocity);
        assert!(
            (reaction - Vec3::new(0.0, 9.81, 0.0)).length() < 0.005 * 9.81,
            "{}: the joint holds {reaction} N",
            solver.backend()
        );
        assert!(
            ((up.position.y - 0.3) - pushed).abs() < 5e-5,
            "{}: the driven box rests at {} m, expected {} m",
            solver.backend(),
            up.position.y,
            0.3 + pushed
        );
        assert!(highest < 0.301, "{}: passed the upper limit to {highest} m", solver.backend());
        // Neither moved across its line.
        for (s, x) in [(down, 1.0), (up, 2.0)] {
            let across = Vec3::new(s.position.x - x, 0.0, s.position.z).length();
            assert!(across < 1e-4, "{}: {} m off the line", solver.backend(), across);
        }
    }
}

/// `Solver::set_joint_motor` drives a hinge from the next step. The 1 kg plate (1/6 kg m²
/// about its axis) of `a_hinge_motor_drives_within_its_torque` on a motor added off
/// (`.motor(0.0, 0.0)`) stays at rest for 0.5 s; set to 3 rad/s with at most 0.5 N m, it speeds
/// up at 3 rad/s² to 1.5 rad/s after 0.5 s (within 1 %), the joint's torque the motor's 0.5 N m
/// (within 0.5 %); set to -1 rad/s with 2 N m, it turns round at 12 rad/s² and holds -1 rad/s
/// (within 1e-3 after 1 s); set off again (0 N m) it spins on at -1 rad/s (within 1e-3).
#[test]
fn a_hinge_motor_set_between_steps_drives_from_the_next() {
    let mut world = world();
    let p = pivot(&mut world);
    let plate = world.add_body(RigidBodyDesc::dynamic(Shape::cuboid(Vec3::new(0.5, 0.02, 0.5))).mass(1.0)).unwrap();
    let joint = world.add_joint(JointDesc::revolute(p, plate, Vec3::ZERO, Vec3::Y).motor(0.0, 0.0)).unwrap();
    let inertia = (1.0 + 1.0) / 12.0;
    let motor = |speed, max_effort| JointMotor { speed, max_effort };
    for mut solver in common::solvers(&world) {
        let name = solver.backend();
        let spin = |solver: &mut Box<dyn Solver>| solver.body_state(plate).unwrap().angular_velocity;
        solver.step_many(30);
        assert!(spin(&mut solver).length() < 1e-6, "{name}: at rest, {}", spin(&mut solver));
        solver.set_joint_motor(joint, motor(3.0, 0.5)).unwrap();
        solver.step_many(30);
        let (early, torque) = (spin(&mut solver).y, solver.joint_reactions().unwrap()[joint.index()].torque);
        let expected = 0.5 / inertia * 0.5;
        eprintln!("{name}: {early:.4} rad/s after 0.5 s (expected {expected:.4}), torque {torque}");
        assert!((early / expected - 1.0).abs() < 0.01, "{name}: {early} rad/s after 0.5 s, expected {expected}");
        assert!((torque.y - 0.5).abs() < 0.0025, "{name}: the motor's torque {torque}");
        solver.set_joint_motor(joint, motor(-1.0, 2.0)).unwrap();
        solver.step_many(60);
        let held = spin(&mut solver);
        assert!((held - Vec3::new(0.0, -1.0, 0.0)).length() < 1e-3, "{name}: {held}");
        solver.set_joint_motor(joint, motor(5.0, 0.0)).unwrap();
        solver.step_many(60);
        let free = spin(&mut solver);
        assert!((free - Vec3::new(0.0, -1.0, 0.0)).length() < 1e-3, "{name}: off, {free}");
    }
}

/// A motor's effort lowered between steps bounds it from the next substep, the impulse it
/// carried from the last (its warm start) included. A 1 kg bar (1 m x 0.1 m x 0.1 m) on a
/// hinge about z at one end, held out level by a motor towards 0 rad/s with 10 N m against
/// its weight's 4.905 N m, is at rest after 1 s (1e-3 rad/s); its effort cut to 2 N m, it falls
/// at `(m g L - 2) / I` = 8.693 rad/s² (`I = m (a² + b²) / 12 + m L²` = 0.33417 kg m²), so turns
/// at 0.8693 rad/s after 0.1 s, within 0.2 % (its weight's moment falls by 0.1 % as it turns;
/// measured: 0.03 % on both backends).
#[test]
fn a_hinge_motor_whose_effort_is_lowered_gives_way_at_once() {
    let mut world = world();
    let p = pivot(&mut world);
    let bar = world
        .add_body(RigidBodyDesc::dynamic(Shape::cuboid(Vec3::new(0.5, 0.05, 0.05))).mass(1.0).position(Vec3::X * 0.5))
        .unwrap();
    let joint = world.add_joint(JointDesc::revolute(p, bar, Vec3::ZERO, Vec3::Z).motor(0.0, 10.0)).unwrap();
    let inertia = (1.0 + 0.01) / 12.0 + 0.25;
    let expected = -(9.81 * 0.5 - 2.0) / inertia * 0.1;
    for mut solver in common::solvers(&world) {
        let name = solver.backend();
        solver.step_many(60);
        let held = solver.body_state(bar).unwrap().angular_velocity;
        assert!(held.length() < 1e-3, "{name}: held at {held}");
        solver.set_joint_motor(joint, JointMotor { speed: 0.0, max_effort: 2.0 }).unwrap();
        solver.step_many(6);
        let w = solver.body_state(bar).unwrap().angular_velocity.z;
        eprintln!("{name}: {w:.5} rad/s after 0.1 s (expected {expected:.5})");
        assert!((w / expected - 1.0).abs() < 0.002, "{name}: {w} rad/s after 0.1 s, expected {expected}");
    }
}

/// A 2 kg box on a horizontal slider along x, driven by a motor of 4 N towards 2 m/s: the
/// motor pushes with all its force until the box reaches the speed, so after 0.5 s it moves
/// at `F t / m` = 1 m/s (within 0.5 %), and the joint's reaction along the line is the
/// motor's 4 N (within 0.5 %); after 2 s it moves at 2 m/s within 1e-3 m/s, and has not turned
/// or left the line (within 0.1 mm, the soft joint's sag under the weight).
#[test]
fn a_slider_motor_drives_within_its_force() {
    let mut world = world();
    let p = pivot(&mut world);
    let carriage = world.add_body(RigidBodyDesc::dynamic(Shape::cuboid(Vec3::new(0.2, 0.1, 0.1))).mass(2.0)).unwrap();
    let joint = world.add_joint(JointDesc::prismatic(p, carriage, Vec3::ZERO, Vec3::X).motor(2.0, 4.0)).unwrap();
    for mut solver in common::solvers(&world) {
        solver.step_many(30);
        let early = solver.body_states().unwrap()[carriage.index()].linear_velocity.x;
        let force = solver.joint_reactions().unwrap()[joint.index()].force;
        solver.step_many(90);
        let late = solver.body_states().unwrap()[carriage.index()];
        eprintln!(
            "{}: {early:.5} m/s after 0.5 s (expected 1), force {force}; then {} at {}",
            solver.backend(),
            late.linear_velocity,
            late.position
        );
        assert!((early - 1.0).abs() < 0.005, "{}: {early} m/s after 0.5 s, expected 1", solver.backend());
        assert!((force.x - 4.0).abs() < 0.02, "{}: the motor pushes with {force} N", solver.backend());
        assert!((late.linear_velocity.x - 2.0).abs() < 1e-3, "{}: {}", solver.backend(), late.linear_velocity);
        assert!(
            late.position.y.abs() < 1e-4 && late.position.z.abs() < 1e-4,
            "{}: {}",
            solver.backend(),
            late.position
        );
        assert!(2.0 * late.orientation.xyz().length().asin() < 1e-3, "{}: turned", solver.backend());
    }
}

/// A bar (1 kg, 1 m x 0.1 m x 0.2 m) on a universal joint at its centre to a fixed pivot, A's
/// axis z and the bar's own x axis, spun about every axis at once: the bar turns about both
/// axes but not across them. Over 2 s the angle between z and the bar's x axis stays 90°
/// within 1 mrad. After the first step (which takes out the spin across the axes) the kinetic
/// energy never grows by more than 0.1 %: the anchor is at the centre, so the only torque is
/// the joint's, which does no work. It loses less than 3 % in the 2 s (measured: 1.7 %), as a
/// velocity-level solve does when the direction it holds turns from substep to substep.
#[test]
fn a_universal_joint_holds_the_angle_between_its_axes() {
    let mut world = world();
    let p = pivot(&mut world);
    let bar = world
        .add_body(
            RigidBodyDesc::dynamic(Shape::cuboid(Vec3::new(0.5, 0.05, 0.1)))
                .mass(1.0)
                .angular_velocity(Vec3::new(1.0, 2.0, 0.5)),
        )
        .unwrap();
    world.add_joint(JointDesc::universal(p, bar, Vec3::ZERO, Vec3::Z, Vec3::X)).unwrap();
    let inertia = world.mass_properties(bar).unwrap().principal_inertia;
    let energy = |s: &BodyState| {
        // ½ ωᵀ I ω in the bar's own frame, whose axes are its box's principal axes.
        let local = s.orientation.inverse() * s.angular_velocity;
        0.5 * (local * inertia).dot(local)
    };
    for mut solver in common::solvers(&world) {
        solver.step();
        let start = energy(&solver.body_states().unwrap()[bar.index()]);
        let (mut worst_angle, mut least, mut most) = (0.0_f32, f32::MAX, 0.0_f32);
        for _ in 0..120 {
            solver.step();
            let s = solver.body_states().unwrap()[bar.index()];
            let x = s.orientation * Vec3::X;
            worst_angle = worst_angle.max(x.dot(Vec3::Z).abs().asin());
            least = least.min(energy(&s) / start);
            most = most.max(energy(&s) / start);
        }

        eprintln!(
            "{}: worst angle error {worst_angle:.2e} rad, energy {least:.4} to {most:.4} of {start:.4} J",
            solver.backend()
        );
        assert!(worst_angle < 1e-3, "{}: the axes turned {worst_angle} rad off 90°", solver.backend());
        assert!(most < 1.001 && least > 0.97, "{}: energy {least} to {most} of its start", solver.backend());
    }
}

/// A heavy symmetric top: a 1 kg bar 1 m long (10 cm square, so its inertia about its own axis
/// is 1/50 of that across it) on a ball joint at one end, let go horizontal and spinning about
/// its own axis at 2 rad/s; and the same bar without gravity, orbiting the pivot at 3 rad/s
/// as it spins. Neither the joint's force nor gravity has a moment about the bar's axis, so the
/// spin about it is conserved (Euler's equations for a body with two equal moments): after
/// 2 s it is 2 rad/s within 0.2 %. (With the world inertia of the step's start, which the
/// joints used until the solver bodies' inertia followed each substep's pose, it fell to
/// 0.79 rad/s in the first second.)
#[test]
fn a_spinning_bar_on_a_ball_joint_keeps_its_spin() {
    for gravity in [true, false] {
        let mut world = common::world_with(if gravity { Vec3::new(0.0, -9.81, 0.0) } else { Vec3::ZERO });
        let p = pivot(&mut world);
        let spin = Vec3::new(2.0, 0.0, if gravity { 0.0 } else { 3.0 });
        let bar = world
            .add_body(
                RigidBodyDesc::dynamic(Shape::cuboid(Vec3::new(0.5, 0.05, 0.05)))
                    .mass(1.0)
                    .position(Vec3::new(0.5, 0.0, 0.0))
                    .angular_velocity(spin)
                    .linear_velocity(spin.cross(Vec3::new(0.5, 0.0, 0.0))),
            )
            .unwrap();
        world.add_joint(JointDesc::spherical(p, bar, Vec3::ZERO)).unwrap();
        for mut solver in common::solvers(&world) {
            let (mut least, mut most) = (f32::MAX, 0.0_f32);
            for _ in 0..120 {
                solver.step();
                let s = solver.body_states().unwrap()[bar.index()];
                let about_axis = s.angular_velocity.dot(s.orientation * Vec3::X);
                (least, most) = (least.min(about_axis), most.max(about_axis));
            }
            eprintln!(
                "{} (gravity {gravity}): spin about the bar's axis {least:.5} to {most:.5} rad/s",
                solver.backend()
            );
            assert!(
                (least - 2.0).abs() < 4e-3 && (most - 2.0).abs() < 4e-3,
                "{} (gravity {gravity}): the spin about the bar's axis went {least} to {most} rad/s",
                solver.backend()
            );
        }
    }
}

/// A 1 kg bar 1 m long on a ball joint at one end to a fixed pivot, let go horizontal along x
/// and spinning about its own axis at 2 rad/s, with a cone of 30° about x: it swings down until
/// its axis is 30° below the horizontal and rests there, within 5 mrad (the soft limit gives
/// `τ / (I ω²)`, 0.09 mrad), never passing it by more than 0.05 rad. The cone leaves the twist
/// free: the spin about the bar's own axis stays 2 rad/s within 0.01 (no torque has a part
/// along it). At rest the joint's torque balances the weight's moment about the pivot,
/// `m g (L/2) cos 30°` = 4.248 N m, within 1 %.
#[test]
fn a_ball_joint_cone_holds_its_swing() {
    let mut world = world();
    let p = pivot(&mut world);
    let bar = world
        .add_body(
            RigidBodyDesc::dynamic(Shape::cuboid(Vec3::new(0.5, 0.05, 0.05)))
                .mass(1.0)
                .position(Vec3::new(0.5, 0.0, 0.0))
                .angular_velocity(Vec3::new(2.0, 0.0, 0.0)),
        )
        .unwrap();
    let cone = 30.0_f32.to_radians();
    let joint = world.add_joint(JointDesc::spherical(p, bar, Vec3::ZERO).cone(Vec3::X, cone)).unwrap();
    let moment = 9.81 * 0.5 * cone.cos();
    for mut solver in common::solvers(&world) {
        let mut widest = 0.0_f32;
        for _ in 0..180 {
            solver.step();
            let s = solver.body_states().unwrap()[bar.index()];
            widest = widest.max((s.orientation * Vec3::X).dot(Vec3::X).clamp(-1.0, 1.0).acos());
        }
        let s = solver.body_states().unwrap()[bar.index()];
        let axis = s.orientation * Vec3::X;
        let angle = axis.dot(Vec3::X).clamp(-1.0, 1.0).acos();
        let spin = s.angular_velocity.dot(axis);
        let torque = solver.joint_reactions().unwrap()[joint.index()].torque.length();
        eprintln!(
            "{}: rests {angle:.5} rad from the cone's axis (limit {cone:.5}), widest {widest:.5}; spin {spin:.4} rad/s; \
             torque {torque:.4} N m (expected {moment:.4}); axis {axis}",
            solver.backend()
        );
        assert!((angle - cone).abs() < 5e-3, "{}: rests {angle} rad from the axis", solver.backend());
        assert!(axis.y < 0.0, "{}: the bar swung up: {axis}", solver.backend());
        assert!(widest < cone + 0.05, "{}: swung to {widest} rad", solver.backend());
        assert!((spin - 2.0).abs() < 0.01, "{}: spins at {spin} rad/s about its axis", solver.backend());
        assert!((torque / moment - 1.0).abs() < 0.01, "{}: the joint's torque is {torque} N m", solver.backend());
    }
}

/// B's twist about its local x axis, for a body added unturned: the twist of the swing-twist
/// decomposition of its orientation (the swing's axis across x), `2 atan2(q.x, q.w)`.
fn twist_about_x(q: Quat) -> f32 {
    let t = 2.0 * q.x.atan2(q.w);
    if t > std::f32::consts::PI {
        t - std::f32::consts::TAU
    } else if t < -std::f32::consts::PI {
        t + std::f32::consts::TAU
    } else {
        t
    }
}

/// Two ball joints with a cone about x and twist limits, let go with x horizontal.
///
/// A 1 kg plate (1 m along x, 0.4 m along z) hangs from a corner, its centre 0.2 m across the
/// joint's axis: its weight twists it about the axis, up to the upper twist limit of 0.35 rad
/// (limits [-0.25, 0.35], not centred on 0), while its axis swings down to its 20° cone. At
/// rest the twist is 0.35 rad within 5 mrad, the swing 20° within 5 mrad, and the joint's
/// torque on the plate is the weight's moment about the anchor, `c × (0, m g, 0)` for the
/// centre `c` from the anchor, within 1 % of its size: the twist limits' share (the part along
/// the axis) included.
///
/// A 1 kg bar spinning at -3 rad/s about its own axis, with twist limits [-0.4, 0.6] and a 30°
/// cone: the lower limit stops the spin without passing -0.4 rad by more than 0.02, and the bar
/// stays at -0.4 rad within 0.01 (nothing turns it back: no torque has a part along its axis).
#[test]
fn a_ball_joint_twist_stops_at_its_limits() {
    let mut world = world();
    let p = pivot(&mut world);
    let plate = world
        .add_body(
            RigidBodyDesc::dynamic(Shape::cuboid(Vec3::new(0.5, 0.02, 0.2)))
                .mass(1.0)
                .position(Vec3::new(0.5, 0.0, 0.2)),
        )
        .unwrap();
    let (cone, lower, upper) = (20.0_f32.to_radians(), -0.25, 0.35);
    let door =
        world.add_joint(JointDesc::spherical(p, plate, Vec3::ZERO).cone(Vec3::X, cone).twist(lower, upper)).unwrap();
    let far = world.add_body(RigidBodyDesc::fixed(Shape::sphere(0.01)).position(Vec3::new(0.0, 0.0, 3.0))).unwrap();
    let bar = world
        .add_body(
            RigidBodyDesc::dynamic(Shape::cuboid(Vec3::new(0.5, 0.05, 0.05)))
                .mass(1.0)
                .position(Vec3::new(0.5, 0.0, 3.0))
                .angular_velocity(Vec3::new(-3.0, 0.0, 0.0)),
        )
        .unwrap();
    world
        .add_joint(
            JointDesc::spherical(far, bar, Vec3::new(0.0, 0.0, 3.0))
                .cone(Vec3::X, 30.0_f32.to_radians())
                .twist(-0.4, 0.6),
        )
        .unwrap();
    // A third plate, on a joint that holds its twist within ±0.01 rad and breaks above 1 N m:
    // its weight's moment about the axis (0.2 m g) breaks it while the twist limit bears it.
    let hook = world.add_body(RigidBodyDesc::fixed(Shape::sphere(0.01)).position(Vec3::new(0.0, 0.0, -3.0))).unwrap();
    let dropped = world
        .add_body(
            RigidBodyDesc::dynamic(Shape::cuboid(Vec3::new(0.5, 0.02, 0.2)))
                .mass(1.0)
                .position(Vec3::new(0.5, 0.0, -2.8)),
        )
        .unwrap();
    let weak = JointDesc::spherical(hook, dropped, Vec3::new(0.0, 0.0, -3.0)).cone(Vec3::X, cone).twist(-0.01, 0.01);
    let weak = world.add_joint(weak.breaks_at(f32::INFINITY, 1.0)).unwrap();
    for mut solver in common::solvers(&world) {
        let mut lowest = 0.0_f32;
        for _ in 0..240 {
            solver.step();
            lowest = lowest.min(twist_about_x(solver.body_states().unwrap()[bar.index()].orientation));
        }
        let states = solver.body_states().unwrap();
        let s = states[plate.index()];
        let (twist, swing) =
            (twist_about_x(s.orientation), (s.orientation * Vec3::X).dot(Vec3::X).clamp(-1.0, 1.0).acos());
        let torque = solver.joint_reactions().unwrap()[door.index()].torque;
        let expected = s.position.cross(Vec3::new(0.0, 9.81, 0.0));
        let bar_twist = twist_about_x(states[bar.index()].orientation);
        eprintln!(
            "{}: plate twist {twist:.5} rad (limit {upper}), swing {swing:.5} rad (cone {cone:.5}); torque {torque} N m \
             (expected {expected}); bar twist {bar_twist:.5} rad, lowest {lowest:.5} (limit -0.4)",
            solver.backend()
        );
        assert!((twist - upper).abs() < 5e-3, "{}: the plate rests at twist {twist}", solver.backend());
        assert!((swing - cone).abs() < 5e-3, "{}: the plate rests at swing {swing}", solver.backend());
        assert!((torque - expected).length() < 0.01 * expected.length(), "{}: torque {torque}", solver.backend());
        assert!(lowest > -0.42, "{}: the bar twisted to {lowest}", solver.backend());
        assert!((bar_twist + 0.4).abs() < 0.01, "{}: the bar rests at twist {bar_twist}", solver.backend());
        // A broken joint holds nothing, its twist limits included.
        let broken = solver.joint_reactions().unwrap()[weak.index()];
        assert!(broken.broken, "{}: the weak joint held", solver.backend());
        assert_eq!((broken.force, broken.torque), (Vec3::ZERO, Vec3::ZERO), "{}", solver.backend());
        assert!(states[dropped.index()].position.y < -5.0, "{}: the plate did not fall", solver.backend());
    }
}

/// The twist limits without warm starting (`SolverSettings::warm_starting` off: every
/// accumulated impulse starts each step at zero): the plate twisted by its weight of
/// `a_ball_joint_twist_stops_at_its_limits` rests at its upper twist limit within 10 mrad, and
/// the GPU's twin ends where the CPU does within 1e-4 m.
#[test]
fn twist_limits_hold_without_warm_starting() {
    let mut desc = *world().desc();
    desc.solver.warm_starting = false;
    let mut world = World::new(desc).unwrap();
    let p = pivot(&mut world);
    let plate = world
        .add_body(
            RigidBodyDesc::dynamic(Shape::cuboid(Vec3::new(0.5, 0.02, 0.2)))
                .mass(1.0)
                .position(Vec3::new(0.5, 0.0, 0.2)),
        )
        .unwrap();
    let joint = JointDesc::spherical(p, plate, Vec3::ZERO).cone(Vec3::X, 20.0_f32.to_radians()).twist(-0.25, 0.35);
    world.add_joint(joint).unwrap();
    let ends: Vec<BodyState> = common::solvers(&world)
        .into_iter()
        .map(|mut solver| {
            solver.step_many(240);
            let s = solver.body_states().unwrap()[plate.index()];
            let twist = twist_about_x(s.orientation);
            eprintln!("{}: twist {twist:.5} rad (limit 0.35)", solver.backend());
            assert!((twist - 0.35).abs() < 0.01, "{}: the plate rests at twist {twist}", solver.backend());
            s
        })
        .collect();
    if let [cpu, gpu] = ends.as_slice() {
        assert!(cpu.position.distance(gpu.position) < 1e-4, "CPU {cpu:?}, GPU {gpu:?}");
    }
}

/// A limbed body floating free (no gravity, nothing to touch): a chest with a head on a neck,
/// two arms on shoulders and two legs on hips (ball joints with cones and twist limits) and
/// forearms and shins on elbows and knees (limited hinges), every part set spinning its own
/// way (each part's velocity matching its parent's anchor's, so that no joint starts pulled
/// apart), so that every limit is struck (every ball joint's twist reaches a twist limit, and
/// every hinge's angle a limit). The joints' impulses are internal: linear momentum
/// stays what it was within 1e-4 of `Σ m` (kg m/s). Angular momentum about the origin moves
/// only as far as the soft joints' stretch lets it: a point joint's impulse acts at its two
/// anchors, which are as far apart as the joint has stretched, so each step may move it by up
/// to `|separation| |force| dt` per joint (measured from the poses and `joint_reactions`);
/// it stays within that sum, which itself stays under 2 % of the angular momentum (measured:
/// 8.8e-3 kg m²/s against a budget of 6.7e-2, of 5.7; at 16 substeps, 1.8e-3 against 1.3e-2).
/// Kinetic energy never grows by more than 1 % of the initial: the limits are inelastic, and
/// the soft joints' pull back from a stretch gives back no more than the stretch took.
#[test]
fn a_floating_limbed_body_conserves_momentum() {
    let mut world = common::world_with(Vec3::ZERO);
    let mut parts: Vec<BodyHandle> = Vec::new();
    // Each part's velocity is the one its parent's anchor has (`from`: that anchor and its
    // velocity) carried by its own spin `w`, so that no joint starts pulled apart.
    let mut part = |world: &mut World, shape: Shape, mass: f32, at: Vec3, w: Vec3, (anchor, v): (Vec3, Vec3)| {
        let velocity = v + w.cross(at - anchor);
        let desc = RigidBodyDesc::dynamic(shape).mass(mass).position(at).angular_velocity(w).linear_velocity(velocity);
        let body = world.add_body(desc).unwrap();
        parts.push(body);
        (body, velocity)
    };
    let w_chest = Vec3::new(0.5, -1.0, 0.3);
    let chest_box = Shape::cuboid(Vec3::new(0.18, 0.25, 0.1));
    let (chest, _) = part(&mut world, chest_box, 15.0, Vec3::ZERO, w_chest, (Vec3::ZERO, Vec3::ZERO));
    let at_neck = Vec3::new(0.0, 0.27, 0.0);
    let from_chest = |anchor: Vec3| (anchor, w_chest.cross(anchor));
    let (head, _) = part(
        &mut world,
        Shape::sphere(0.11),
        5.0,
        Vec3::new(0.0, 0.4, 0.0),
        Vec3::new(6.0, 2.0, -3.0),
        from_chest(at_neck),
    );
    let neck = world.add_joint(JointDesc::spherical(chest, head, at_neck).cone(Vec3::Y, 0.5).twist(-0.6, 0.6)).unwrap();
    let mut balls = vec![neck];
    let mut hinges = Vec::new();
    for side in [1.0_f32, -1.0] {
        // An arm along x, a leg along -y, each in two parts.
        for (root, along, w) in [
            (Vec3::new(side * 0.2, 0.2, 0.0), Vec3::X * side, Vec3::new(-8.0 * side, 3.0, 5.0)),
            (Vec3::new(side * 0.1, -0.27, 0.0), -Vec3::Y, Vec3::new(4.0, 7.0 * side, -6.0)),
        ] {
            let (upper, v_upper) = part(&mut world, Shape::sphere(0.06), 2.0, root + along * 0.17, w, from_chest(root));
            let elbow = root + along * 0.3;
            let from_upper = (elbow, v_upper + w.cross(elbow - (root + along * 0.17)));
            let (lower, _) = part(&mut world, Shape::sphere(0.05), 1.5, root + along * 0.42, -w, from_upper);
            balls.push(
                world.add_joint(JointDesc::spherical(chest, upper, root).cone(along, 0.8).twist(-0.4, 0.7)).unwrap(),
            );
            let hinge = JointDesc::revolute(upper, lower, elbow, Vec3::Z).limits(-1.5, 0.2);
            hinges.push(world.add_joint(hinge).unwrap());
        }
    }
    let momentum = |states: &[BodyState]| common::momentum(&world, &parts, states);
    let total_mass: f32 = parts.iter().map(|&h| world.mass_properties(h).unwrap().mass).sum();
    for mut solver in common::solvers(&world) {
        let name = solver.backend();
        let (p0, l0) = momentum(&solver.body_states().unwrap());
        let initial = solver.stats().unwrap().kinetic_energy;
        // A ball joint's torque is its cone's and twist limits' only (struck: either); its
        // twist (the parts started unturned) is measured from the poses (twisted: within 20
        // mrad of a twist limit or past it); a hinge's angle is the lower part's turn about z
        // relative to the upper.
        let mut struck = vec![false; world.joint_count()];
        let mut twisted = vec![false; world.joint_count()];
        let (mut most, mut worst_p, mut worst_l) = (initial, 0.0_f32, 0.0_f32);
        let mut bound = 0.0_f32;
        for _ in 0..240 {
            solver.step();
            most = most.max(solver.stats().unwrap().kinetic_energy);
            for (k, r) in solver.joint_reactions().unwrap().iter().enumerate() {
                struck[k] |= r.torque.length() > 1e-3;
            }
            let states = solver.body_states().unwrap();
            for &j in &balls {
                let desc = world.joint(j).unwrap();
                let turn = states[desc.body_a.index()].orientation.inverse() * states[desc.body_b.index()].orientation;
                let [lower, upper] = desc.twist.unwrap();
                let twist = 2.0 * turn.xyz().dot(desc.cone.unwrap().axis).atan2(turn.w);
                let twist = (twist + std::f32::consts::PI).rem_euclid(std::f32::consts::TAU) - std::f32::consts::PI;
                twisted[j.index()] |= twist < lower + 0.02 || twist > upper - 0.02;
            }
            for &j in &hinges {
                let (a, b) = (world.joint(j).unwrap().body_a, world.joint(j).unwrap().body_b);
                let turn = turn_about_z(states[a.index()].orientation.inverse() * states[b.index()].orientation);
                let angle = (turn + std::f32::consts::PI).rem_euclid(std::f32::consts::TAU) - std::f32::consts::PI;
                struck[j.index()] |= !(-1.45..=0.15).contains(&angle);
            }
            let reactions = solver.joint_reactions().unwrap();
            for (k, reaction) in reactions.iter().enumerate() {
                let (a, b) = anchors(&world, JointHandle::from_index(k), &states);
                bound += (b - a).length() * reaction.force.length() * world.desc().dt;
            }
            let (p, l) = momentum(&states);
            worst_p = worst_p.max((p - p0).length());
            worst_l = worst_l.max((l - l0).length());
        }
        eprintln!(
            "{name}: momentum off by {worst_p:.2e} kg m/s at worst (of Σm = {total_mass}), angular momentum by \
             {worst_l:.2e} of {:.3} kg m²/s (the joints' stretch allows {bound:.2e}); kinetic energy {initial:.3} J, \
             at most {most:.3} J",
            l0.length()
        );
        for &j in balls.iter().chain(&hinges) {
            assert!(struck[j.index()], "{name}: joint {} never reached a limit", j.index());
        }
        for &j in &balls {
            assert!(twisted[j.index()], "{name}: joint {} never reached a twist limit", j.index());
        }
        assert!(worst_p < 1e-4 * total_mass, "{name}: momentum {p0} moved by {worst_p}");
        assert!(worst_l < bound, "{name}: angular momentum {l0} moved by {worst_l}, beyond {bound}");
        assert!(bound < 0.02 * l0.length(), "{name}: the joints stretched by {bound} kg m²/s");
        assert!(most < 1.01 * initial, "{name}: kinetic energy {initial} rose to {most}");
    }
}

/// A 1 kg sphere (radius 0.1 m) on a ball joint 1 m from a fixed pivot, let go horizontal, on
/// a joint that breaks above twice its weight. The compound pendulum's tension at angle θ
/// from the vertical is `m g cos θ (1 + 2 m L² / I_pivot)` (2.992 m g cos θ), so the joint
/// breaks at θ = 48.05°: the joint says so after the step whose tension first passed the
/// load, and θ then and one step before bracket 48.05° within 1°. From then on the sphere is a
/// projectile: its velocity changes by g t within 1e-3 m/s over the next 0.5 s. A second
/// sphere on a joint that breaks above 3.3 m g swings through the bottom (2.992 m g) for 2 s
/// and never breaks.
#[test]
fn a_joint_breaks_where_its_tension_passes_its_strength() {
    let mut world = world();
    let p = pivot(&mut world);
    let bob = |world: &mut World, z: f32, strength: f32| {
        let b = world
            .add_body(RigidBodyDesc::dynamic(Shape::sphere(0.1)).mass(1.0).position(Vec3::new(1.0, 0.0, z)))
            .unwrap();
        let joint = JointDesc::spherical(p, b, Vec3::new(0.0, 0.0, z)).breaks_at(strength * 9.81, f32::INFINITY);
        (b, world.add_joint(joint).unwrap())
    };
    let ((weak, weak_joint), (strong, strong_joint)) = (bob(&mut world, 0.0, 2.0), bob(&mut world, 1.0, 3.3));
    let inertia: f32 = 0.4 * 0.1 * 0.1 + 1.0;
    let expected = (2.0 / (1.0 + 2.0 / inertia)).acos().to_degrees();
    for mut solver in common::solvers(&world) {
        let mut angles = Vec::new();
        let mut broke_after = None;
        for step in 0..120 {
            solver.step();
            let s = solver.body_states().unwrap()[weak.index()];
            angles.push(s.position.x.atan2(-s.position.y).to_degrees());
            let reactions = solver.joint_reactions().unwrap();
            assert!(!reactions[strong_joint.index()].broken, "{}: the strong joint broke", solver.backend());
            if broke_after.is_none() && reactions[weak_joint.index()].broken {
                assert_eq!(reactions[weak_joint.index()].force, Vec3::ZERO);
                broke_after = Some(step);
            }
        }
        let k = broke_after.unwrap_or_else(|| panic!("{}: the weak joint never broke", solver.backend()));
        // Step k's preparation broke it, from the tension at the end of step k - 1.
        let (after, before) = (angles[k - 1], angles[k - 2]);
        eprintln!(
            "{}: broke after step {k}, between {before:.2}° and {after:.2}° (expected {expected:.2}°)",
            solver.backend()
        );
        assert!(
            after - 1.0 <= expected && expected <= before + 1.0,
            "{}: broke between {before}° and {after}°, expected {expected}°",
            solver.backend()
        );
        let strong_state = solver.body_states().unwrap()[strong.index()];
        assert!(strong_state.position.y < 0.0, "{}: the strong bob did not swing", solver.backend());
    }
    // The projectile, on a fresh run.
    for mut solver in common::solvers(&world) {
        let mut k = 0;
        while !solver.joint_reactions().unwrap()[weak_joint.index()].broken {
            solver.step();
            k += 1;
            assert!(k < 120, "{}: the weak joint never broke", solver.backend());
        }
        let start = solver.body_states().unwrap()[weak.index()].linear_velocity;
        solver.step_many(30);
        let end = solver.body_states().unwrap()[weak.index()].linear_velocity;
        let change = end - start - Vec3::new(0.0, -9.81 * 0.5, 0.0);
        assert!(change.length() < 1e-3, "{}: the free bob's velocity went {start} -> {end}", solver.backend());
    }
}

/// A 1 kg bar 1 m long welded at one end to a fixed pivot: the weld carries the moment
/// 0.5 m g (4.905 N m) about its anchor. A weld that breaks above 4 N m breaks in the first
/// three steps, and the bar falls freely from then on (its velocity changes by g t within
/// 1e-3 m/s); one that breaks above 6 N m holds it for 2 s (the torque peaks at 5.62 N m as
/// the soft weld catches the bar, and settles at 4.905).
#[test]
fn a_weld_breaks_when_its_torque_passes_its_strength() {
    let mut world = world();
    let p = pivot(&mut world);
    let bar = |world: &mut World, z: f32, torque: f32| {
        let b = world
            .add_body(
                RigidBodyDesc::dynamic(Shape::cuboid(Vec3::new(0.5, 0.05, 0.05)))
                    .mass(1.0)
                    .position(Vec3::new(0.5, 0.0, z)),
            )
            .unwrap();
        let joint = JointDesc::fixed(p, b, Vec3::new(0.0, 0.0, z)).breaks_at(f32::INFINITY, torque);
        (b, world.add_joint(joint).unwrap())
    };
    let ((weak, weak_joint), (strong, strong_joint)) = (bar(&mut world, 0.0, 4.0), bar(&mut world, 1.0, 6.0));
    for mut solver in common::solvers(&world) {
        let (mut peak, mut broke) = (0.0_f32, None);
        for step in 0..120 {
            solver.step();
            let reactions = solver.joint_reactions().unwrap();
            peak = peak.max(reactions[strong_joint.index()].torque.length());
            assert!(!reactions[strong_joint.index()].broken, "{}: the strong weld broke", solver.backend());
            if broke.is_none() && reactions[weak_joint.index()].broken {
                broke = Some((step, solver.body_states().unwrap()[weak.index()].linear_velocity));
            }
        }
        let (k, start) = broke.unwrap_or_else(|| panic!("{}: the weak weld held", solver.backend()));
        assert!(k < 3, "{}: the weak weld broke after step {k}", solver.backend());
        let states = solver.body_states().unwrap();
        let reactions = solver.joint_reactions().unwrap();
        eprintln!(
            "{}: the weak weld broke after step {k}; the strong weld's torque peaked at {peak:.3} N m (static 4.905); the weak bar at {}",
            solver.backend(),
            states[weak.index()].position
        );
        assert!(reactions[weak_joint.index()].broken, "{}: the weak weld mended", solver.backend());
        let end = states[weak.index()].linear_velocity;
        let change = end - start - Vec3::new(0.0, -9.81 * (119 - k) as f32 / 60.0, 0.0);
        assert!(change.length() < 1e-3, "{}: the free bar's velocity went {start} -> {end}", solver.backend());
        assert!(
            states[strong.index()].position.y.abs() < 1e-3,
            "{}: {}",
            solver.backend(),
            states[strong.index()].position
        );
    }
}

/// Joined bodies that a joint kept from colliding collide from the step it breaks: a 1 kg box
/// resting on a fixed slab, on a ball joint that breaks above half its weight, is held by the
/// slab once the joint has broken (at its centre's height within 2 mm after 1 s; it would fall
/// through without the contact). Another box overlapping a slab by 5 cm, held by a weld and by
/// a ball joint that breaks, stays where it is within 1 mm: the weld still keeps the pair
/// from colliding.
#[test]
fn a_broken_joint_lets_its_bodies_collide() {
    let mut world = world();
    let slab = |world: &mut World, x: f32| {
        world
            .add_body(RigidBodyDesc::fixed(Shape::cuboid(Vec3::new(0.5, 0.1, 0.5))).position(Vec3::new(x, -0.1, 0.0)))
            .unwrap()
    };
    let (first, second) = (slab(&mut world, 0.0), slab(&mut world, 3.0));
    let cube = |world: &mut World, at: Vec3| {
        world.add_body(RigidBodyDesc::dynamic(Shape::cuboid(Vec3::splat(0.1))).mass(1.0).position(at)).unwrap()
    };
    let resting = cube(&mut world, Vec3::new(0.0, 0.1, 0.0));
    let breaking =
        world.add_joint(JointDesc::spherical(first, resting, Vec3::new(0.0, 0.1, 0.0)).breaks_at(4.9, 100.0)).unwrap();
    let sunk_at = Vec3::new(3.0, 0.05, 0.0);
    let sunk = cube(&mut world, sunk_at);
    world.add_joint(JointDesc::fixed(second, sunk, sunk_at)).unwrap();
    let second_breaking = world.add_joint(JointDesc::spherical(second, sunk, sunk_at).breaks_at(1e-3, 1e-3)).unwrap();
    for mut solver in common::solvers(&world) {
        solver.step_many(60);
        let states = solver.body_states().unwrap();
        let reactions = solver.joint_reactions().unwrap();
        let (r, s) = (states[resting.index()], states[sunk.index()]);
        eprintln!("{}: the resting box at {}, the sunk box at {}", solver.backend(), r.position, s.position);
        assert!(
            reactions[breaking.index()].broken && reactions[second_breaking.index()].broken,
            "{}",
            solver.backend()
        );
        assert!((r.position.y - 0.1).abs() < 2e-3, "{}: the box is at {}", solver.backend(), r.position);
        assert!(r.linear_velocity.length() < 1e-2, "{}: the box moves at {}", solver.backend(), r.linear_velocity);
        assert!((s.position - sunk_at).length() < 1e-3, "{}: the sunk box moved to {}", solver.backend(), s.position);
    }
}

/// Joint reactions balance the loads at rest: two 1 kg spheres hanging in a chain from a
/// fixed pivot (the top joint carries 2 m g, the lower m g, each as an upward force on the
/// sphere below), and a 1 kg bar welded at one end, its centre 0.55 m out (the weld carries
/// m g up and the moment m g 0.55 about z). Within 0.2 % after 2 s, on both backends, reported
/// in the order the joints were added (the weld's color comes before the lower ball joint's).
#[test]
fn joint_reactions_balance_the_loads() {
    let mut world = world();
    let p = pivot(&mut world);
    let upper = world
        .add_body(RigidBodyDesc::dynamic(Shape::sphere(0.05)).mass(1.0).position(Vec3::new(0.0, -0.5, 0.0)))
        .unwrap();
    let lower = world
        .add_body(RigidBodyDesc::dynamic(Shape::sphere(0.05)).mass(1.0).position(Vec3::new(0.0, -1.0, 0.0)))
        .unwrap();
    let bar = world
        .add_body(
            RigidBodyDesc::dynamic(Shape::cuboid(Vec3::new(0.5, 0.05, 0.05)))
                .mass(1.0)
                .position(Vec3::new(0.55, 0.0, 1.0)),
        )
        .unwrap();
    world.add_joint(JointDesc::spherical(p, upper, Vec3::ZERO)).unwrap();
    world.add_joint(JointDesc::spherical(upper, lower, Vec3::new(0.0, -0.75, 0.0))).unwrap();
    world.add_joint(JointDesc::fixed(p, bar, Vec3::new(0.0, 0.0, 1.0))).unwrap();
    let g = 9.81;
    let expected = [
        (Vec3::new(0.0, 2.0 * g, 0.0), Vec3::ZERO),
        (Vec3::new(0.0, g, 0.0), Vec3::ZERO),
        (Vec3::new(0.0, g, 0.0), Vec3::new(0.0, 0.0, g * 0.55)),
    ];
    for mut solver in common::solvers(&world) {
        assert!(solver.joint_reactions().unwrap().iter().all(|r| r.force == Vec3::ZERO));
        solver.step_many(120);
        let reactions = solver.joint_reactions().unwrap();
        assert_eq!(reactions.len(), 3);
        for (k, (r, (force, torque))) in reactions.iter().zip(expected).enumerate() {
            eprintln!("{}: joint {k}: force {}, torque {}", solver.backend(), r.force, r.torque);
            assert!(
                (r.force - force).length() < 2e-3 * force.length(),
                "{}: joint {k} force {}",
                solver.backend(),
                r.force
            );
            assert!(
                (r.torque - torque).length() < 2e-3 * force.length().max(torque.length()),
                "{}: joint {k} torque {}",
                solver.backend(),
                r.torque
            );
        }
    }
}

/// Joints that cannot hold are refused with a typed error, and the world is left unchanged.
#[test]
fn bad_joints_are_refused() {
    let mut world = world();
    let p = pivot(&mut world);
    let other = world.add_body(RigidBodyDesc::fixed(Shape::sphere(0.1)).position(Vec3::X)).unwrap();
    let bob = world.add_body(RigidBodyDesc::dynamic(Shape::sphere(0.1)).position(Vec3::NEG_Y)).unwrap();
    let nowhere = BodyHandle::from_index(99);
    assert!(matches!(world.add_joint(JointDesc::spherical(p, nowhere, Vec3::ZERO)), Err(Error::InvalidHandle { .. })));
    assert!(matches!(world.add_joint(JointDesc::spherical(bob, bob, Vec3::ZERO)), Err(Error::InvalidJoint { .. })));
    assert!(matches!(world.add_joint(JointDesc::fixed(p, other, Vec3::ZERO)), Err(Error::InvalidJoint { .. })));
    assert!(matches!(world.add_joint(JointDesc::spherical(p, bob, Vec3::NAN)), Err(Error::NonFinite { .. })));
    assert!(matches!(
        world.add_joint(JointDesc::revolute(p, bob, Vec3::ZERO, Vec3::ZERO)),
        Err(Error::InvalidJoint { .. })
    ));
    assert!(matches!(
        world.add_joint(JointDesc::revolute(p, bob, Vec3::ZERO, Vec3::new(f32::INFINITY, 0.0, 0.0))),
        Err(Error::NonFinite { .. })
    ));
    assert!(matches!(
        world.add_joint(JointDesc::prismatic(p, bob, Vec3::ZERO, Vec3::ZERO)),
        Err(Error::InvalidJoint { .. })
    ));
    assert!(matches!(
        world.add_joint(JointDesc::point_on_plane(p, bob, Vec3::ZERO, Vec3::new(0.0, f32::NAN, 0.0))),
        Err(Error::NonFinite { .. })
    ));
    let hinge_at = |b| JointDesc::revolute(p, b, Vec3::ZERO, Vec3::Z);
    assert!(matches!(
        world.add_joint(JointDesc::spherical(p, bob, Vec3::ZERO).limits(-1.0, 1.0)),
        Err(Error::InvalidJoint { .. })
    ));
    assert!(matches!(
        world.add_joint(JointDesc::fixed(p, bob, Vec3::ZERO).motor(1.0, 1.0)),
        Err(Error::InvalidJoint { .. })
    ));
    assert!(matches!(world.add_joint(hinge_at(bob).limits(0.5, -0.5)), Err(Error::InvalidJoint { .. })));
    assert!(matches!(world.add_joint(hinge_at(bob).limits(-4.0, 0.0)), Err(Error::OutOfRange { .. })));
    assert!(matches!(world.add_joint(hinge_at(bob).limits(f32::NAN, 0.0)), Err(Error::NonFinite { .. })));
    assert!(matches!(world.add_joint(hinge_at(bob).motor(f32::INFINITY, 1.0)), Err(Error::NonFinite { .. })));
    assert!(matches!(world.add_joint(hinge_at(bob).motor(1.0, -1.0)), Err(Error::OutOfRange { .. })));
    let ball_at = |b| JointDesc::spherical(p, b, Vec3::ZERO);
    assert!(matches!(world.add_joint(hinge_at(bob).cone(Vec3::Y, 0.5)), Err(Error::InvalidJoint { .. })));
    assert!(matches!(world.add_joint(ball_at(bob).cone(Vec3::ZERO, 0.5)), Err(Error::InvalidJoint { .. })));
    assert!(matches!(world.add_joint(ball_at(bob).cone(Vec3::Y, 0.0)), Err(Error::OutOfRange { .. })));
    for angle in [3.5, std::f32::consts::PI] {
        assert!(matches!(world.add_joint(ball_at(bob).cone(Vec3::Y, angle)), Err(Error::OutOfRange { .. })));
    }
    assert!(matches!(world.add_joint(ball_at(bob).cone(Vec3::Y, f32::NAN)), Err(Error::NonFinite { .. })));
    let coned_at = |b| ball_at(b).cone(Vec3::Y, 0.5);
    assert!(matches!(world.add_joint(ball_at(bob).twist(-0.5, 0.5)), Err(Error::InvalidJoint { .. })));
    assert!(matches!(world.add_joint(hinge_at(bob).twist(-0.5, 0.5)), Err(Error::InvalidJoint { .. })));
    assert!(matches!(world.add_joint(coned_at(bob).twist(0.5, -0.5)), Err(Error::InvalidJoint { .. })));
    assert!(matches!(world.add_joint(coned_at(bob).twist(-0.5, 3.5)), Err(Error::OutOfRange { .. })));
    assert!(matches!(world.add_joint(coned_at(bob).twist(f32::NAN, 0.5)), Err(Error::NonFinite { .. })));
    let slider_at = |b| JointDesc::prismatic(p, b, Vec3::ZERO, Vec3::Y);
    for (force, torque) in [(0.0, 1.0), (1.0, -1.0), (f32::NAN, 1.0), (1.0, f32::NAN)] {
        assert!(
            matches!(
                world.add_joint(JointDesc::spherical(p, bob, Vec3::ZERO).breaks_at(force, torque)),
                Err(Error::OutOfRange { .. })
            ),
            "breaking at {force} N and {torque} N m accepted"
        );
    }
    assert!(matches!(world.add_joint(slider_at(bob).limits(0.5, -0.5)), Err(Error::InvalidJoint { .. })));
    assert!(matches!(world.add_joint(slider_at(bob).limits(0.0, f32::INFINITY)), Err(Error::NonFinite { .. })));
    assert!(matches!(world.add_joint(slider_at(bob).motor(f32::NAN, 1.0)), Err(Error::NonFinite { .. })));
    assert!(matches!(world.add_joint(slider_at(bob).motor(1.0, -1.0)), Err(Error::OutOfRange { .. })));
    assert!(matches!(
        world.add_joint(JointDesc::point_on_plane(p, bob, Vec3::ZERO, Vec3::Y).limits(-1.0, 1.0)),
        Err(Error::InvalidJoint { .. })
    ));
    assert!(matches!(
        world.add_joint(JointDesc::universal(p, bob, Vec3::ZERO, Vec3::X, Vec3::new(2.0, 0.0, 0.0))),
        Err(Error::InvalidJoint { .. })
    ));
    assert_eq!(world.joint_count(), 0);
    // A slider's limits are lengths, not angles: beyond ±π is fine.
    world.add_joint(slider_at(bob).limits(-4.0, 4.0).motor(1.0, 0.0)).unwrap();
    world.add_joint(JointDesc::spherical(p, bob, Vec3::ZERO).breaks_at(f32::INFINITY, f32::INFINITY)).unwrap();
    let hinge = world.add_joint(JointDesc::revolute(p, bob, Vec3::ZERO, Vec3::new(0.0, 0.0, 3.0))).unwrap();
    assert_eq!(world.joint(hinge).unwrap().kind, signorini::JointKind::Revolute { axis: Vec3::Z });
    for hertz in [0.0, -1.0, f32::NAN] {
        let mut desc = WorldDesc::default();
        desc.solver.joint_hertz = hertz;
        assert!(World::new(desc).is_err(), "joint hertz {hertz} accepted");
    }
}

/// Joints of every kind among contacts: a hinged chain of six boxes swinging down from a
/// fixed body (each link meeting the links beyond its neighbours), two boxes welded together
/// falling onto the floor, two ball-jointed pendulums on one fixed pivot, a box hinged to a
/// turning kinematic paddle within limits, a bar driven by a motor into its limit, a bar
/// swinging from a universal joint, a box on a slider running into the floor, boxes on sliders
/// driven into a limit and falling onto one, a box whose weld breaks at once landing on the
/// slab it was welded to, a spinning bar on a ball joint within a cone and twist limits, and a spinning sphere
/// held to a tilted plane. After 2 s the GPU's
/// bodies are where the CPU's are within
/// 0.2 mm, and the mean difference is under 0.02 mm (the two round differently in the last
/// bits, see `cpu_gpu.rs`; measured on lavapipe: 1.2e-5 m and 2.3e-6 m).
#[test]
fn cpu_and_gpu_agree_on_jointed_bodies() {
    let Some(ctx) = common::gpu() else { return };
    // The scene, with the GPU's sweeps fused or not (`SolverSettings::gpu_fused_sweeps`).
    let build = |fused: bool| {
        let mut desc = *world().desc();
        desc.solver.gpu_fused_sweeps = fused;
        let mut world = World::new(desc).unwrap();
        world.add_plane(Plane::new(Vec3::Y, 0.0)).unwrap();
        let top = world
            .add_body(RigidBodyDesc::fixed(Shape::cuboid(Vec3::splat(0.05))).position(Vec3::new(0.0, 1.5, 0.0)))
            .unwrap();
        let mut previous = top;
        for i in 0..6 {
            let x = 0.1 + 0.25 * i as f32 + 0.1;
            let link = world
                .add_body(
                    RigidBodyDesc::dynamic(Shape::cuboid(Vec3::new(0.1, 0.04, 0.04))).position(Vec3::new(x, 1.5, 0.0)),
                )
                .unwrap();
            world.add_joint(JointDesc::revolute(previous, link, Vec3::new(x - 0.125, 1.5, 0.0), Vec3::Z)).unwrap();
            previous = link;
        }
        let a = world
            .add_body(RigidBodyDesc::dynamic(Shape::cuboid(Vec3::splat(0.1))).position(Vec3::new(-1.0, 0.5, 0.0)))
            .unwrap();
        let b = world
            .add_body(
                RigidBodyDesc::dynamic(Shape::cuboid(Vec3::new(0.3, 0.05, 0.05)))
                    .position(Vec3::new(-1.0, 0.75, 0.0))
                    .orientation(Quat::from_rotation_y(0.4)),
            )
            .unwrap();
        world.add_joint(JointDesc::fixed(a, b, Vec3::new(-1.0, 0.65, 0.0))).unwrap();
        let pivot =
            world.add_body(RigidBodyDesc::fixed(Shape::sphere(0.02)).position(Vec3::new(0.8, 2.5, 0.5))).unwrap();
        let bob =
            world.add_body(RigidBodyDesc::dynamic(Shape::sphere(0.1)).position(Vec3::new(0.8, 2.5, -0.7))).unwrap();
        world.add_joint(JointDesc::spherical(pivot, bob, Vec3::new(0.8, 2.5, 0.5))).unwrap();
        // A second bob on the same pivot (a static body shared by joints of one color), and a
        // kinematic paddle turning about z with a box hinged to its tip.
        let twin =
            world.add_body(RigidBodyDesc::dynamic(Shape::sphere(0.1)).position(Vec3::new(1.5, 2.5, 0.5))).unwrap();
        world.add_joint(JointDesc::spherical(pivot, twin, Vec3::new(0.8, 2.5, 0.5))).unwrap();
        let paddle = world
            .add_body(
                RigidBodyDesc::kinematic(Shape::cuboid(Vec3::new(0.3, 0.03, 0.03)))
                    .position(Vec3::new(-2.5, 2.0, 0.0))
                    .angular_velocity(Vec3::new(0.0, 0.0, 2.0)),
            )
            .unwrap();
        let flap = world
            .add_body(
                RigidBodyDesc::dynamic(Shape::cuboid(Vec3::new(0.05, 0.2, 0.05))).position(Vec3::new(-2.15, 1.75, 0.0)),
            )
            .unwrap();
        world
            .add_joint(JointDesc::revolute(paddle, flap, Vec3::new(-2.15, 2.0, 0.0), Vec3::X).limits(-0.5, 0.5))
            .unwrap();
        // A bar driven round by a motor until its limit stops it.
        let driven = world
            .add_body(
                RigidBodyDesc::dynamic(Shape::cuboid(Vec3::new(0.3, 0.03, 0.03))).position(Vec3::new(0.35, 2.5, -1.0)),
            )
            .unwrap();
        world
            .add_joint(
                JointDesc::revolute(pivot, driven, Vec3::new(0.05, 2.5, -1.0), Vec3::Z)
                    .motor(4.0, 3.0)
                    .limits(-0.3, 1.0),
            )
            .unwrap();
        // A box on a slider down towards the floor, and a sphere held to a tilted plane, spinning.
        let slide = world
            .add_body(RigidBodyDesc::dynamic(Shape::cuboid(Vec3::splat(0.1))).position(Vec3::new(2.5, 1.0, 1.0)))
            .unwrap();
        world
            .add_joint(JointDesc::prismatic(pivot, slide, Vec3::new(2.5, 1.0, 1.0), Vec3::new(1.0, -1.0, 0.3)))
            .unwrap();
        // A box on a tilted slider driven up it by a motor into its upper limit, and one falling
        // onto its lower limit.
        for (x, motor) in [(3.0, true), (3.5, false)] {
            let at = Vec3::new(x, 1.5, -1.0);
            let carriage =
                world.add_body(RigidBodyDesc::dynamic(Shape::cuboid(Vec3::splat(0.08))).position(at)).unwrap();
            let joint = JointDesc::prismatic(pivot, carriage, at, Vec3::new(0.3, 1.0, 0.2)).limits(-0.4, 0.25);
            world.add_joint(if motor { joint.motor(1.5, 40.0) } else { joint }).unwrap();
        }
        let skater = world
            .add_body(
                RigidBodyDesc::dynamic(Shape::sphere(0.1))
                    .position(Vec3::new(-2.5, 1.0, 2.0))
                    .angular_velocity(Vec3::new(1.0, 4.0, 0.0)),
            )
            .unwrap();
        world
            .add_joint(JointDesc::point_on_plane(top, skater, Vec3::new(-2.5, 1.0, 2.0), Vec3::new(0.2, 1.0, 0.1)))
            .unwrap();
        // A box welded to the top of a fixed slab by a weld that breaks at once: it falls onto the
        // slab, which it may touch from the step the weld breaks.
        let slab = world
            .add_body(
                RigidBodyDesc::fixed(Shape::cuboid(Vec3::new(0.4, 0.1, 0.4))).position(Vec3::new(-3.5, 0.5, -1.5)),
            )
            .unwrap();
        let loose = world
            .add_body(RigidBodyDesc::dynamic(Shape::cuboid(Vec3::splat(0.1))).position(Vec3::new(-3.45, 0.75, -1.5)))
            .unwrap();
        world.add_joint(JointDesc::fixed(slab, loose, Vec3::new(-3.45, 0.6, -1.5)).breaks_at(0.5, 0.5)).unwrap();
        // A bar on a ball joint within a cone of 0.4 rad, falling onto the cone's edge and spinning
        // into its upper twist limit.
        let coned = world
            .add_body(
                RigidBodyDesc::dynamic(Shape::cuboid(Vec3::new(0.3, 0.03, 0.03)))
                    .position(Vec3::new(2.3, 2.5, 1.5))
                    .angular_velocity(Vec3::new(3.0, 0.5, 0.0)),
            )
            .unwrap();
        world
            .add_joint(JointDesc::spherical(top, coned, Vec3::new(2.0, 2.5, 1.5)).cone(Vec3::X, 0.4).twist(-0.5, 0.3))
            .unwrap();
        // A bar hanging from a universal joint, swinging.
        let gimbal = world
            .add_body(
                RigidBodyDesc::dynamic(Shape::cuboid(Vec3::new(0.04, 0.3, 0.04)))
                    .position(Vec3::new(1.5, 2.0, -1.5))
                    .angular_velocity(Vec3::new(2.0, 1.0, -1.0)),
            )
            .unwrap();
        world.add_joint(JointDesc::universal(top, gimbal, Vec3::new(1.5, 2.3, -1.5), Vec3::X, Vec3::Z)).unwrap();
        (world, previous, a, loose, flap)
    };
    let (world, previous, a, loose, flap) = build(false);
    let mut cpu = CpuSolver::new(&world).unwrap();
    let mut gpu = GpuSolver::new(ctx, &world).unwrap();
    cpu.step_many(120);
    gpu.step_many(120);
    let (c, g) = (cpu.body_states().unwrap(), gpu.body_states().unwrap());
    let differences: Vec<f32> = c.iter().zip(&g).map(|(c, g)| (c.position - g.position).length()).collect();
    let worst = differences.iter().copied().fold(0.0, f32::max);
    let mean = differences.iter().sum::<f32>() / differences.len() as f32;
    eprintln!(
        "jointed bodies: worst difference {worst:.2e} m, mean {mean:.2e} m; chain end at {}",
        c[previous.index()].position
    );
    // The chain swung down, the welded pair landed, and nothing fell through.
    assert!(c[previous.index()].position.y < 1.2, "the chain did not swing down: {}", c[previous.index()].position);
    assert!(c[a.index()].position.y < 0.2, "the welded pair did not land: {}", c[a.index()].position);
    assert!(c.iter().all(|s| s.position.y > -0.01), "a body fell through the floor");
    assert!(worst < 2e-4, "GPU and CPU {worst} m apart");
    assert!(mean < 2e-5, "GPU and CPU {mean} m apart on average");
    // The loose box broke free and rests on its slab.
    assert!((c[loose.index()].position.y - 0.7).abs() < 2e-3, "the loose box is at {}", c[loose.index()].position);
    // The flap went round with the paddle.
    assert!((c[flap.index()].position - Vec3::new(-2.15, 1.75, 0.0)).length() > 0.2, "the flap stayed put");
    // The GPU with each sweep (joints and manifolds) in one workgroup: the same bits on a
    // software adapter, one dispatch a sweep.
    let mut fused = GpuSolver::new(ctx, &build(true).0).unwrap();
    // At least a manifold pass's colors, overflow and gather become one, in every sweep.
    let saved = gpu.dispatches_per_step() - fused.dispatches_per_step();
    let s = &world.desc().solver;
    assert!(saved >= s.substeps * (s.iterations + s.relax_iterations) * (s.max_colors + 1), "{saved} dispatches fewer");
    fused.step_many(120);
    common::assert_gpu_runs_agree(ctx, &fused.body_states().unwrap(), &g, "fused sweeps", 1e-4, f32::INFINITY);
}

/// The GPU follows the CPU when motors are set and bodies moved between steps: two robot arms
/// of `scenes::arms` (a slider and six hinges each, all motorized) run 0.5 s; then every motor
/// is set to the opposite of its speed at 1.5 times its effort and each arm's hand is lifted
/// 5 cm and turned 0.3 rad about its joint's axis (its joint pulls it back), and they run 1 s
/// more. The arms moved (every hinge's motor reversed), and the GPU's bodies are where the
/// CPU's are within 0.2 mm, 0.02 mm on average, as in `cpu_and_gpu_agree_on_jointed_bodies`.
#[test]
fn cpu_and_gpu_agree_when_motors_and_poses_are_set_between_steps() {
    let Some(ctx) = common::gpu() else { return };
    let world = signorini::scenes::arms(signorini::scenes::bench_desc(), 18).unwrap();
    let mut solvers: Vec<Box<dyn Solver>> =
        vec![Box::new(CpuSolver::new(&world).unwrap()), Box::new(GpuSolver::new(ctx, &world).unwrap())];
    let hands: Vec<BodyHandle> = (0..world.joint_count())
        .map(|k| world.joint(JointHandle::from_index(k)).unwrap())
        .filter(|j| matches!(j.kind, JointKind::Universal { .. }))
        .map(|j| j.body_b)
        .collect();
    assert_eq!(hands.len(), 2);
    let mut halfway = Vec::new();
    for solver in &mut solvers {
        solver.step_many(30);
        halfway = solver.body_states().unwrap();
        for k in 0..world.joint_count() {
            let handle = JointHandle::from_index(k);
            if let Some(m) = world.joint(handle).unwrap().motor {
                let motor = JointMotor { speed: -m.speed, max_effort: 1.5 * m.max_effort };
                solver.set_joint_motor(handle, motor).unwrap();
            }
        }
        for &hand in &hands {
            let s = halfway[hand.index()];
            let turned = Quat::from_rotation_z(0.3) * s.orientation;
            solver.set_pose(hand, s.position + Vec3::new(0.0, 0.05, 0.0), turned).unwrap();
        }
        solver.step_many(60);
    }
    let (c, g) = (solvers[0].body_states().unwrap(), solvers[1].body_states().unwrap());
    let differences: Vec<f32> = c.iter().zip(&g).map(|(c, g)| (c.position - g.position).length()).collect();
    let worst = differences.iter().copied().fold(0.0, f32::max);
    let mean = differences.iter().sum::<f32>() / differences.len() as f32;
    let moved = c.iter().zip(&halfway).map(|(c, h)| c.position.distance(h.position)).fold(0.0, f32::max);
    eprintln!("arms, motors and hands set: worst difference {worst:.2e} m, mean {mean:.2e} m; moved up to {moved} m");
    assert!(moved > 0.1, "the arms did not move: {moved} m");
    assert!(worst < 2e-4, "GPU and CPU {worst} m apart");
    assert!(mean < 2e-5, "GPU and CPU {mean} m apart on average");
}

/// A 3 m box on the floor with a small box welded where they overlap by 20 cm, beside a row
/// of 80 small spheres (so the broad phase runs its grid, with the big box among the bodies too
/// large for its cells): by default the broad phase passes over the welded pair, and the two
/// rest as one body (the small box within 1 mm of where it was welded, everything at rest);
/// with `colliding(true)` the pair is a candidate again. On both backends.
#[test]
fn jointed_bodies_do_not_collide_unless_asked() {
    let build = |collide: bool| {
        let mut world = world();
        world.add_plane(Plane::new(Vec3::Y, 0.0)).unwrap();
        let a = world
            .add_body(RigidBodyDesc::dynamic(Shape::cuboid(Vec3::splat(1.5))).position(Vec3::new(0.0, 1.5, 0.0)))
            .unwrap();
        let b = world
            .add_body(RigidBodyDesc::dynamic(Shape::cuboid(Vec3::splat(0.3))).position(Vec3::new(1.6, 2.8, 0.0)))
            .unwrap();
        world.add_joint(JointDesc::fixed(a, b, Vec3::new(1.4, 2.7, 0.0)).colliding(collide)).unwrap();
        for i in 0..80 {
            let at = Vec3::new(5.0 + 0.3 * i as f32, 0.05, 0.0);
            world.add_body(RigidBodyDesc::dynamic(Shape::sphere(0.05)).position(at)).unwrap();
        }
        (world, a, b)
    };
    let (world, a, b) = build(false);
    let pair = [a.index() as u32, b.index() as u32];
    let mut cpu = CpuSolver::new(&world).unwrap();
    cpu.step_many(60);
    assert!(!cpu.candidate_pairs().contains(&pair), "the CPU's broad phase kept the welded pair");
    let mut results = vec![("cpu".to_string(), cpu.body_states().unwrap())];
    if let Some(ctx) = common::gpu() {
        let mut gpu = GpuSolver::new(ctx, &world).unwrap();
        gpu.step_many(60);
        assert!(!gpu.candidate_pairs().unwrap().contains(&pair), "the GPU's broad phase kept the welded pair");
        results.push((gpu.backend(), gpu.body_states().unwrap()));
    }
    for (backend, states) in results {
        let moved = (states[b.index()].position - Vec3::new(1.6, 2.8, 0.0)).length();
        eprintln!("{backend}: the welded box moved {moved:.2e} m");
        assert!(moved < 1e-3, "{backend}: the welded box moved {moved} m");
        assert!(states.iter().all(|s| s.linear_velocity.length() < 1e-2), "{backend}: not at rest");
    }
    let (world, _, _) = build(true);
    let mut cpu = CpuSolver::new(&world).unwrap();
    cpu.step();
    assert!(cpu.candidate_pairs().contains(&pair), "colliding(true) lost the pair");
    if let Some(ctx) = common::gpu() {
        let mut gpu = GpuSolver::new(ctx, &world).unwrap();
        gpu.step();
        assert!(gpu.candidate_pairs().unwrap().contains(&pair), "colliding(true) lost the pair on the GPU");
    }
}

/// Eight ragdolls of `scenes::ragdolls` (ball joints with cones and twist limits, limited
/// hinges) tumble down the stairs for 5 s: every body stays finite and above the ground (5 cm),
/// the ragdolls end lower than they started and down the stairs (their pelvises 1 m or more
/// towards +z on average), and every joint's anchors stand within 10 mm of each other (the
/// soft joints' give under a wedged limb: measured 3.9 mm at rest with 16 ragdolls).
#[test]
fn ragdolls_tumble_down_the_stairs_and_hold_together() {
    let world = signorini::scenes::ragdolls(*world().desc(), 8).unwrap();
    assert_eq!((world.body_count(), world.joint_count()), (10 + 8 * 11, 8 * 10));
    // The pelvises: the first body of each ragdoll, after the ten steps.
    let pelvises: Vec<BodyHandle> = (0..8).map(|n| BodyHandle::from_index(10 + 11 * n)).collect();
    let start: f32 = pelvises.iter().map(|p| world.body(*p).unwrap().position.y).sum::<f32>() / 8.0;
    for mut solver in common::solvers(&world) {
        let name = solver.backend();
        solver.step_many(300);
        let states = solver.body_states().unwrap();
        assert!(states.iter().all(|s| s.position.is_finite() && s.linear_velocity.is_finite()), "{name}");
        let lowest = states.iter().map(|s| s.position.y).fold(f32::INFINITY, f32::min);
        let (height, along) = pelvises.iter().fold((0.0, 0.0), |(y, z), p| {
            (y + states[p.index()].position.y / 8.0, z + states[p.index()].position.z / 8.0)
        });
        let apart = (0..world.joint_count())
            .map(|k| {
                let (a, b) = anchors(&world, JointHandle::from_index(k), &states);
                a.distance(b)
            })
            .fold(0.0_f32, f32::max);
        eprintln!(
            "{name}: pelvises from {start:.2} m to {height:.2} m high, {along:.2} m along; lowest body at {lowest:.3} m; \
             joints apart by at most {:.2} mm",
            apart * 1e3
        );
        assert!(lowest > -0.05, "{name}: a body sank to {lowest} m");
        assert!(height < start - 1.0 && along > 1.0, "{name}: the pelvises are at {height} m high, {along} m along");
        assert!(apart < 0.01, "{name}: a joint's anchors are {apart} m apart");
    }
}
