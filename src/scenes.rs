//! Scenes shared by the tests, the examples and the benchmarks, built deterministically from a
//! seed so that every run of every consumer steps the same bodies.

use glam::{Quat, Vec3};

use crate::body::RigidBodyDesc;
use crate::error::Result;
use crate::shape::Shape;
use crate::world::{Plane, World, WorldDesc};

/// The 32-bit linear congruential generator of the standard benchmark scenes:
/// `state = state * 2147001325 + 715136305` (wrapping); a draw is `(state & 0xffff) / 65535 - 0.5`.
#[derive(Clone, Debug)]
pub struct Lcg(pub u32);

impl Lcg {
    /// The next draw in `[-0.5, 0.5]`.
    pub fn next_centered(&mut self) -> f32 {
        self.0 = self.0.wrapping_mul(2_147_001_325).wrapping_add(715_136_305);
        (self.0 & 0xffff) as f32 / 65535.0 - 0.5
    }

    /// The next draw in `[lo, hi]`.
    pub fn range(&mut self, lo: f32, hi: f32) -> f32 {
        lo + (self.next_centered() + 0.5) * (hi - lo)
    }

    /// A uniformly distributed unit quaternion (normalized 4D Gaussian-free draw by rejection).
    pub fn rotation(&mut self) -> Quat {
        loop {
            let q =
                glam::Vec4::new(self.next_centered(), self.next_centered(), self.next_centered(), self.next_centered());
            let len = q.length();
            if len > 0.05 && len <= 0.5 {
                let q = q / len;
                return Quat::from_xyzw(q.x, q.y, q.z, q.w);
            }
        }
    }
}

/// The points of the standard `convex_pile` hull: 32 points on a sphere of radius 2, drawn
/// with [`Lcg`] from state 42 by rejection inside the ball of radius 0.5 and normalized.
pub fn bench_hull_points() -> Vec<Vec3> {
    let mut rng = Lcg(42);
    let mut points = Vec::with_capacity(32);
    while points.len() < 32 {
        let p = Vec3::new(rng.next_centered(), rng.next_centered(), rng.next_centered());
        if p.length_squared() <= 0.25 && p.length_squared() > 0.0 {
            points.push(p.normalize() * 2.0);
        }
    }
    points
}

/// Parameters of [`falling_bodies`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FallingBodies {
    /// Number of bodies.
    pub count: usize,
    /// Add a second, tilted plane (a 22° ramp rising towards +x from x = 0) to the floor.
    pub ramp: bool,
    /// Seed of the generator that picks shapes, sizes, poses and velocities.
    pub seed: u32,
    /// Linear and angular damping rate of every body, 1/s (air drag; 0 lets balls roll forever).
    pub damping: f32,
    /// Random orientations, spins up to 2 rad/s and restitution up to 0.5 (a chaotic rain);
    /// otherwise every body falls unrotated, without spin or bounce.
    pub tumble: bool,
}

impl Default for FallingBodies {
    fn default() -> Self {
        Self { count: 1000, ramp: true, seed: 7, damping: 0.0, tumble: true }
    }
}

/// A rain of mixed bodies (spheres, boxes, capsules, hulls of 12 random points) over a floor,
/// and optionally a ramp, on a square grid 1.5 m apart, 1 to 3.5 m above the planes, each with
/// a small random velocity, density 500 to 2000 kg/m³ and friction 0.2 to 0.8; tumbling, also a
/// random orientation, spin and restitution; otherwise unrotated, capsules lying along z. Bodies do not collide with each other yet, only
/// with the planes.
pub fn falling_bodies(desc: WorldDesc, scene: FallingBodies) -> Result<World> {
    let mut world = World::new(desc)?;
    world.add_plane(Plane::new(Vec3::Y, 0.0).friction(0.6))?;
    if scene.ramp {
        let angle = 22.0_f32.to_radians();
        world.add_plane(Plane::new(Vec3::new(-angle.sin(), angle.cos(), 0.0), 0.0).friction(0.5))?;
    }
    let mut rng = Lcg(scene.seed);
    let side = (scene.count as f32).sqrt().ceil() as usize;
    let spacing = 1.5;
    let half = side as f32 * spacing / 2.0;
    for i in 0..scene.count {
        let (gx, gz) = (i % side, i / side);
        let shape = match i % 4 {
            0 => Shape::sphere(rng.range(0.1, 0.4)),
            1 => Shape::cuboid(Vec3::new(rng.range(0.1, 0.4), rng.range(0.1, 0.4), rng.range(0.1, 0.4))),
            2 => Shape::capsule(rng.range(0.1, 0.3), rng.range(0.08, 0.2)),
            _ => {
                let points: Vec<Vec3> = (0..12)
                    .map(|_| Vec3::new(rng.next_centered(), rng.next_centered(), rng.next_centered()) * 0.7)
                    .collect();
                match Shape::convex_hull(&points) {
                    Ok(hull) => hull,
                    Err(_) => Shape::cuboid(Vec3::splat(0.2)),
                }
            }
        };
        let position = Vec3::new(gx as f32 * spacing - half, rng.range(1.0, 3.5), gz as f32 * spacing - half);
        let lift = if scene.ramp { position.x.max(0.0) * 22.0_f32.to_radians().tan() } else { 0.0 };
        let orientation = rng.rotation();
        let velocity = Vec3::new(rng.next_centered(), rng.next_centered(), rng.next_centered());
        let spin = Vec3::new(rng.next_centered(), rng.next_centered(), rng.next_centered()) * 4.0;
        let (density, friction, restitution) = (rng.range(500.0, 2000.0), rng.range(0.2, 0.8), rng.range(0.0, 0.5));
        let body = RigidBodyDesc::dynamic(shape)
            .position(position + Vec3::Y * lift)
            .linear_velocity(velocity)
            .density(density)
            .friction(friction)
            .damping(scene.damping, scene.damping);
        world.add_body(if scene.tumble {
            body.orientation(orientation).angular_velocity(spin).restitution(restitution)
        } else if i % 4 == 2 {
            // A capsule lies on its side rather than balancing on an end cap.
            body.orientation(Quat::from_rotation_x(std::f32::consts::FRAC_PI_2))
        } else {
            body
        })?;
    }
    Ok(world)
}

/// World settings of the standard benchmark scenes: dt 1/60 s, 4 substeps, gravity
/// (0, -10, 0), bodies colliding with each other (the default).
pub fn bench_desc() -> WorldDesc {
    WorldDesc { gravity: Vec3::new(0.0, -10.0, 0.0), ..WorldDesc::default() }
}

/// The benchmark ground: a static box at (0, -1, 0) with half-extents (G, 1, G), top face at y = 0.
pub fn add_ground(world: &mut World, half_extent: f32) -> Result<crate::BodyHandle> {
    world.add_body(
        RigidBodyDesc::fixed(Shape::cuboid(Vec3::new(half_extent, 1.0, half_extent)))
            .position(Vec3::new(0.0, -1.0, 0.0))
            .friction(0.6),
    )
}

/// A cube of the benchmark scenes: half-extent 0.5, density 100 (100 kg), friction 0.6.
fn bench_cube(position: Vec3) -> RigidBodyDesc {
    RigidBodyDesc::dynamic(Shape::cuboid(Vec3::splat(0.5))).position(position).density(100.0).friction(0.6)
}

/// A pyramid one box thick in the XY plane, `base` boxes wide, on the benchmark ground
/// (`large_pyramid` is base 100: 5,050 boxes, G = 400). Level `i`, box `j` (`i <= j < base`)
/// sits at `x = (i + 1) / 2 + (j - i) - base / 2`, `y = i + 1/2`: boxes touch exactly. Returns
/// the world and the top box.
pub fn pyramid(desc: WorldDesc, base: usize) -> Result<(World, crate::BodyHandle)> {
    let mut world = World::new(desc)?;
    add_ground(&mut world, if base >= 100 { 400.0 } else { (base as f32).max(10.0) * 2.0 })?;
    let mut top = None;
    for i in 0..base {
        for j in i..base {
            let x = (i as f32 + 1.0) * 0.5 + (j - i) as f32 - base as f32 / 2.0;
            top = Some(world.add_body(bench_cube(Vec3::new(x, i as f32 + 0.5, 0.0)))?);
        }
    }
    Ok((world, top.expect("base > 0")))
}

/// A copy of `world` with its dynamic bodies and particles turned rigidly by `angle` rad about
/// the x axis through the origin (positions, orientations and velocities): a seeded disturbance
/// for stability tests. A pyramid, built in the xy plane, leans out of its plane; the static
/// bodies, planes and SDF colliders stay where they are.
pub fn tilted(world: &World, angle: f32) -> Result<World> {
    let turn = Quat::from_rotation_x(angle);
    let mut out = World::new(*world.desc())?;
    for i in 0..world.body_count() {
        let mut body = world.body(crate::BodyHandle::from_index(i))?.clone();
        if body.kind == crate::BodyKind::Dynamic {
            body.position = turn * body.position;
            body.orientation = turn * body.orientation;
            body.linear_velocity = turn * body.linear_velocity;
            body.angular_velocity = turn * body.angular_velocity;
        }
        out.add_body(body)?;
    }
    for k in 0..world.plane_count() {
        out.add_plane(*world.plane(crate::PlaneHandle::from_index(k))?)?;
    }
    for k in 0..world.sdf_count() {
        out.add_sdf(world.sdf(crate::SdfHandle::from_index(k))?.clone())?;
    }
    out.add_particles(world.particles().iter().map(|p| crate::Particle {
        position: turn * p.position,
        velocity: turn * p.velocity,
        ..*p
    }))?;
    Ok(out)
}

/// `many_pyramids`: 14 x 14 pyramids of base 10 (10,780 boxes) on the ground with G = 77.
pub fn many_pyramids(desc: WorldDesc) -> Result<World> {
    let mut world = World::new(desc)?;
    add_ground(&mut world, 77.0)?;
    for r in 0..14 {
        for c in 0..14 {
            let (cx, z) = (-76.0 + 11.0 * c as f32, -76.0 + r as f32 * 152.0 / 13.0);
            for i in 0..10 {
                for j in i..10 {
                    let x = cx + 0.5 * i as f32 + (j - i) as f32;
                    world.add_body(bench_cube(Vec3::new(x, i as f32 + 0.5, z)))?;
                }
            }
        }
    }
    Ok(world)
}

/// `joint_grid`: a 100 x 100 grid of spheres of radius 0.4, density 1000, 1 m apart in the
/// xy-plane (body `(k, i)` at `(k, -i, 0)`, row 0 static), each joined to the one above it and
/// the one to its left by a ball joint halfway between them: 10,000 spheres and 19,701 joints.
/// The benchmark set lists 19,800: its 99 joints between two static bodies of row 0 hold
/// nothing, and a world refuses them. The spheres do not collide (`body_contacts` off), and
/// there is no ground. The grid falls and swings as a net hanging from its top row.
pub fn joint_grid(desc: WorldDesc) -> Result<World> {
    joint_grid_of(desc, false)
}

/// `weld_grid`: [`joint_grid`] with welds instead of ball joints (not in the benchmark set):
/// a plate of 10,000 spheres welded to their neighbours, hanging from its top row, which sags
/// as far as the soft welds let it.
pub fn weld_grid(desc: WorldDesc) -> Result<World> {
    joint_grid_of(desc, true)
}

/// [`joint_grid`] with ball joints, or with welds.
fn joint_grid_of(mut desc: WorldDesc, welds: bool) -> Result<World> {
    let joint = if welds { crate::JointDesc::fixed } else { crate::JointDesc::spherical };
    desc.solver.body_contacts = false;
    let mut world = World::new(desc)?;
    let n = 100;
    let mut handles = Vec::with_capacity(n * n);
    for k in 0..n {
        for i in 0..n {
            let position = Vec3::new(k as f32, -(i as f32), 0.0);
            let shape = Shape::sphere(0.4);
            let body = if i == 0 { RigidBodyDesc::fixed(shape) } else { RigidBodyDesc::dynamic(shape).density(1000.0) };
            handles.push(world.add_body(body.position(position))?);
        }
    }
    let at = |k: usize, i: usize| handles[k * n + i];
    for k in 0..n {
        for i in 0..n {
            let position = Vec3::new(k as f32, -(i as f32), 0.0);
            if i > 0 {
                world.add_joint(joint(at(k, i - 1), at(k, i), position + Vec3::new(0.0, 0.5, 0.0)))?;
            }
            if k > 0 && i > 0 {
                world.add_joint(joint(at(k - 1, i), at(k, i), position - Vec3::new(0.5, 0.0, 0.0)))?;
            }
        }
    }
    Ok(world)
}

/// `convex_pile`: 8 x 8 x 80 copies of the 32-point benchmark hull (5,120), density 1000,
/// friction 0.6, over the ground with G = 250.
pub fn convex_pile(desc: WorldDesc) -> Result<World> {
    let mut world = World::new(desc)?;
    add_ground(&mut world, 250.0)?;
    let hull = Shape::convex_hull(&bench_hull_points())?;
    for layer in 0..80 {
        for ix in 0..8 {
            for iz in 0..8 {
                let position = Vec3::new((ix as f32 - 4.0) * 4.0, 2.0 + 4.0 * layer as f32, (iz as f32 - 4.0) * 4.0);
                world
                    .add_body(RigidBodyDesc::dynamic(hull.clone()).position(position).density(1000.0).friction(0.6))?;
            }
        }
    }
    Ok(world)
}

/// A vertical stack of `height` unit cubes (100 kg) on the ground, touching exactly. Returns the
/// world and the boxes, bottom first.
pub fn vertical_stack(desc: WorldDesc, height: usize) -> Result<(World, Vec<crate::BodyHandle>)> {
    let mut world = World::new(desc)?;
    add_ground(&mut world, 20.0)?;
    let boxes = (0..height)
        .map(|i| world.add_body(bench_cube(Vec3::new(0.0, i as f32 + 0.5, 0.0))))
        .collect::<Result<Vec<_>>>()?;
    Ok((world, boxes))
}

/// A stack whose masses differ by 1:100: a 1 kg cube carrying a 100 kg cube carrying a 1 kg
/// cube. Returns the world and the three boxes, bottom first.
pub fn mass_ratio_stack(desc: WorldDesc) -> Result<(World, Vec<crate::BodyHandle>)> {
    let mut world = World::new(desc)?;
    add_ground(&mut world, 20.0)?;
    let boxes = [1.0, 100.0, 1.0]
        .iter()
        .enumerate()
        .map(|(i, &mass)| {
            world.add_body(
                RigidBodyDesc::dynamic(Shape::cuboid(Vec3::splat(0.5)))
                    .position(Vec3::new(0.0, i as f32 + 0.5, 0.0))
                    .mass(mass)
                    .friction(0.6),
            )
        })
        .collect::<Result<Vec<_>>>()?;
    Ok((world, boxes))
}

/// A running-bond brick wall, `width` bricks of 1 x 0.5 x 0.5 m wide and `height` courses high,
/// every other course shifted by half a brick.
pub fn wall(desc: WorldDesc, width: usize, height: usize) -> Result<World> {
    let mut world = World::new(desc)?;
    add_ground(&mut world, 40.0)?;
    let brick = Shape::cuboid(Vec3::new(0.5, 0.25, 0.25));
    for course in 0..height {
        let shift = if course % 2 == 0 { 0.0 } else { 0.5 };
        for k in 0..width {
            let x = k as f32 + shift - width as f32 / 2.0;
            world.add_body(
                RigidBodyDesc::dynamic(brick.clone())
                    .position(Vec3::new(x, 0.25 + 0.5 * course as f32, 0.0))
                    .density(500.0),
            )?;
        }
    }
    Ok(world)
}

/// `count` dominoes (0.1 x 1 x 0.5 m, 0.6 m apart) and a push on the first.
pub fn dominoes(desc: WorldDesc, count: usize) -> Result<World> {
    let mut world = World::new(desc)?;
    add_ground(&mut world, 40.0)?;
    for k in 0..count {
        let mut domino = RigidBodyDesc::dynamic(Shape::cuboid(Vec3::new(0.05, 0.5, 0.25)))
            .position(Vec3::new(k as f32 * 0.6 - count as f32 * 0.3, 0.5, 0.0))
            .density(700.0);
        if k == 0 {
            domino = domino.angular_velocity(Vec3::new(0.0, 0.0, -2.0));
        }
        world.add_body(domino)?;
    }
    Ok(world)
}

/// A house of cards: `levels` storeys of leaning pairs (thin plates at ±20° from vertical)
/// capped by flat plates.
pub fn card_house(desc: WorldDesc, levels: usize) -> Result<World> {
    let mut world = World::new(desc)?;
    add_ground(&mut world, 40.0)?;
    let card = Shape::cuboid(Vec3::new(0.01, 0.5, 0.35));
    let flat = Shape::cuboid(Vec3::new(0.5, 0.01, 0.35));
    let lean = 20.0_f32.to_radians();
    let (height, spread) = (lean.cos(), lean.sin() * 0.5 + 0.011);
    for level in 0..levels {
        let pairs = levels - level;
        let y = level as f32 * (height + 0.02);
        for k in 0..pairs {
            let x = (k as f32 - (pairs as f32 - 1.0) / 2.0) * 1.0 + level as f32 * 0.0;
            for side in [-1.0_f32, 1.0] {
                world.add_body(
                    RigidBodyDesc::dynamic(card.clone())
                        .position(Vec3::new(x + side * spread, y + 0.5 * height, 0.0))
                        .orientation(Quat::from_rotation_z(side * lean))
                        .friction(0.9),
                )?;
            }
            if k + 1 < pairs {
                world.add_body(
                    RigidBodyDesc::dynamic(flat.clone())
                        .position(Vec3::new(x + 0.5, y + height + 0.011, 0.0))
                        .friction(0.9),
                )?;
            }
        }
    }
    Ok(world)
}

/// The open box of [`rain`] and [`box_pile`]: the benchmark ground and four static walls 8 m
/// high around a square floor with room for `count` bodies in layers of one per square metre
/// cell, at most an eighth of them per layer. Returns the floor's side in cells.
pub(crate) fn add_container(world: &mut World, count: usize) -> Result<usize> {
    let side = ((count as f32 / 8.0).sqrt().ceil()).max(3.0);
    let half = side * 0.5;
    add_ground(world, half + 2.0)?;
    for (x, z, hx, hz) in [
        (half + 0.5, 0.0, 0.5, half + 1.0),
        (-half - 0.5, 0.0, 0.5, half + 1.0),
        (0.0, half + 0.5, half + 1.0, 0.5),
        (0.0, -half - 0.5, half + 1.0, 0.5),
    ] {
        world.add_body(RigidBodyDesc::fixed(Shape::cuboid(Vec3::new(hx, 4.0, hz))).position(Vec3::new(x, 4.0, z)))?;
    }
    Ok(side as usize)
}

/// The centre of body `i` of a rain into a container of `side` x `side` cells: one body per
/// metre cell, layer after layer from 1 m up.
pub(crate) fn rain_cell(i: usize, side: usize) -> Vec3 {
    let (layer, k) = (i / (side * side), i % (side * side));
    let half = side as f32 * 0.5;
    Vec3::new((k % side) as f32 - half + 0.5, 1.0 + layer as f32, (k / side) as f32 - half + 0.5)
}

/// A rain of `count` mixed bodies (spheres, boxes, capsules, hulls) falling into an open box
/// (a floor and four static walls) sized for them, from layers above it: one body per metre
/// cell, each inside a ball of radius 0.49 m so no two start overlapping.
pub fn rain(desc: WorldDesc, count: usize, seed: u32) -> Result<World> {
    let mut world = World::new(desc)?;
    let side = add_container(&mut world, count)?;
    let mut rng = Lcg(seed);
    for i in 0..count {
        world.add_body(mixed_body(&mut rng, i).position(rain_cell(i, side)))?;
    }
    Ok(world)
}

/// Body `i` of a rain: a sphere, box, capsule or hull in turn, each within a ball of radius
/// 0.49 m, randomly turned, drifting sideways, density 500 to 2000, friction 0.6.
pub(crate) fn mixed_body(rng: &mut Lcg, i: usize) -> RigidBodyDesc {
    let shape = match i % 4 {
        0 => Shape::sphere(rng.range(0.2, 0.4)),
        1 => Shape::cuboid(Vec3::new(rng.range(0.12, 0.28), rng.range(0.12, 0.28), rng.range(0.12, 0.28))),
        2 => Shape::capsule(rng.range(0.1, 0.2), rng.range(0.1, 0.2)),
        _ => {
            let points: Vec<Vec3> = (0..12)
                .map(|_| Vec3::new(rng.next_centered(), rng.next_centered(), rng.next_centered()) * 0.5)
                .collect();
            Shape::convex_hull(&points).unwrap_or_else(|_| Shape::cuboid(Vec3::splat(0.2)))
        }
    };
    RigidBodyDesc::dynamic(shape)
        .orientation(rng.rotation())
        .linear_velocity(Vec3::new(rng.next_centered(), 0.0, rng.next_centered()))
        .density(rng.range(500.0, 2000.0))
        .friction(0.6)
}

/// The inner radius of the bowl of [`bowl_rain`] for `count` bodies: twice their cells' volume,
/// and wide enough for the square they fall from.
pub fn bowl_radius(count: usize) -> f32 {
    let side = ((count as f32 / 8.0).sqrt().ceil()).max(3.0);
    (3.0 * count as f32 / std::f32::consts::PI).cbrt().max(0.75 * side)
}

/// A rain of `count` mixed bodies (those of [`rain`]) into a hemispherical bowl SDF of inner
/// radius [`bowl_radius`], 0.5 m thick, rim at y = 0: the analytic [`Sdf::bowl`](crate::Sdf::bowl), or with
/// `baked` the same bowl tessellated ([`bowl_mesh`]) and baked into a grid of `radius / 25`
/// cells. Returns the world and the bowl's radius.
pub fn bowl_rain(desc: WorldDesc, count: usize, seed: u32, baked: bool) -> Result<(World, f32)> {
    let mut world = World::new(desc)?;
    let radius = bowl_radius(count);
    let bowl = if baked {
        let (v, t) = bowl_mesh(radius, 0.5, 48, 16);
        crate::Sdf::grid(crate::sdf::GridSdf::from_mesh(&v, &t, radius / 25.0)?)
    } else {
        crate::Sdf::bowl(radius, 0.5)
    };
    world.add_sdf(crate::SdfCollider::new(bowl).friction(0.6))?;
    let side = ((count as f32 / 8.0).sqrt().ceil()).max(3.0) as usize;
    let mut rng = Lcg(seed);
    for i in 0..count {
        world.add_body(mixed_body(&mut rng, i).position(rain_cell(i, side)))?;
    }
    Ok((world, radius))
}

/// A pile of `count` boxes: boxes of half-extents 0.15 to 0.28 m, density 1000, friction 0.6,
/// randomly turned, rained into the open box of [`rain`] layer by layer, where they pile up.
pub fn box_pile(desc: WorldDesc, count: usize, seed: u32) -> Result<World> {
    let mut world = World::new(desc)?;
    let side = add_container(&mut world, count)?;
    let mut rng = Lcg(seed);
    for i in 0..count {
        let half_extents = Vec3::new(rng.range(0.15, 0.28), rng.range(0.15, 0.28), rng.range(0.15, 0.28));
        world.add_body(
            RigidBodyDesc::dynamic(Shape::cuboid(half_extents))
                .position(rain_cell(i, side))
                .orientation(rng.rotation())
                .density(1000.0)
                .friction(0.6),
        )?;
    }
    Ok(world)
}

/// Mixed sizes: a dynamic cube of half-extent 10 m at (0, 10, 0) on the benchmark ground,
/// among `count` spheres of radius 0.1 m (100 times smaller) scattered through and around it
/// (overlapping it and each other at the start), every tenth at up to 15 m/s. The broad phase's
/// hard case: one body spans thousands of small bodies' cells.
pub fn mixed_sizes(desc: WorldDesc, count: usize, seed: u32) -> Result<(World, crate::BodyHandle)> {
    let mut world = World::new(desc)?;
    add_ground(&mut world, 60.0)?;
    let big =
        world.add_body(RigidBodyDesc::dynamic(Shape::cuboid(Vec3::splat(10.0))).position(Vec3::new(0.0, 10.0, 0.0)))?;
    let mut rng = Lcg(seed);
    for i in 0..count {
        let p = Vec3::new(rng.range(-14.0, 14.0), rng.range(0.1, 22.0), rng.range(-14.0, 14.0));
        let speed = if i % 10 == 0 { 30.0 } else { 1.0 };
        let v = Vec3::new(rng.next_centered(), rng.next_centered(), rng.next_centered()) * speed;
        world.add_body(RigidBodyDesc::dynamic(Shape::sphere(0.1)).position(p).linear_velocity(v))?;
    }
    Ok((world, big))
}

/// A closed surface of revolution about y, outward winding: `profile` is a polyline in the
/// (radius, height) half plane whose first and last points lie on the axis (radius 0) and
/// become the poles; `segments` copies of it around the axis.
pub fn revolved_mesh(profile: &[glam::Vec2], segments: u32) -> (Vec<Vec3>, Vec<[u32; 3]>) {
    assert!(profile.len() >= 3 && segments >= 3, "a revolved mesh needs a profile of 3 points and 3 segments");
    let rings = profile.len() - 2;
    let mut vertices = vec![Vec3::new(0.0, profile[0].y, 0.0)];
    for p in &profile[1..=rings] {
        for s in 0..segments {
            let a = std::f32::consts::TAU * s as f32 / segments as f32;
            vertices.push(Vec3::new(p.x * a.cos(), p.y, p.x * a.sin()));
        }
    }
    let top = vertices.len() as u32;
    vertices.push(Vec3::new(0.0, profile[profile.len() - 1].y, 0.0));
    let at = |ring: usize, s: u32| 1 + ring as u32 * segments + s % segments;
    let mut triangles = Vec::new();
    for s in 0..segments {
        triangles.push([0, at(0, s), at(0, s + 1)]);
        for r in 0..rings - 1 {
            triangles.push([at(r, s), at(r + 1, s), at(r + 1, s + 1)]);
            triangles.push([at(r, s), at(r + 1, s + 1), at(r, s + 1)]);
        }
        triangles.push([top, at(rings - 1, s + 1), at(rings - 1, s)]);
    }
    // Outward winding: flip everything if the enclosed volume came out negative.
    let volume: f32 = triangles
        .iter()
        .map(|t| vertices[t[0] as usize].dot(vertices[t[1] as usize].cross(vertices[t[2] as usize])))
        .sum();
    if volume < 0.0 {
        for t in &mut triangles {
            t.swap(1, 2);
        }
    }
    (vertices, triangles)
}

/// A UV sphere of the given radius: `segments` around, `rings` from pole to pole.
pub fn uv_sphere_mesh(radius: f32, segments: u32, rings: u32) -> (Vec<Vec3>, Vec<[u32; 3]>) {
    let profile: Vec<glam::Vec2> = (0..=rings)
        .map(|i| {
            let a = std::f32::consts::PI * i as f32 / rings as f32;
            glam::Vec2::new(radius * a.sin(), -radius * a.cos())
        })
        .map(|p| if p.x.abs() < 1e-6 { glam::Vec2::new(0.0, p.y) } else { p })
        .collect();
    revolved_mesh(&profile, segments)
}

/// A hemispherical bowl as a closed mesh: inner radius `radius`, wall `thickness`, rim at
/// y = 0, open upwards; `segments` around and `rings` per quarter arc. The same solid as
/// [`Sdf::bowl`](crate::Sdf::bowl), up to tessellation.
pub fn bowl_mesh(radius: f32, thickness: f32, segments: u32, rings: u32) -> (Vec<Vec3>, Vec<[u32; 3]>) {
    let outer = radius + thickness;
    let arc = |r: f32, i: u32| {
        let a = std::f32::consts::FRAC_PI_2 * i as f32 / rings as f32;
        glam::Vec2::new(r * a.sin(), -r * a.cos())
    };
    // Outer arc from the bottom pole up to the rim, across the rim, inner arc down to its pole.
    let mut profile: Vec<glam::Vec2> = (0..=rings).map(|i| arc(outer, i)).collect();
    profile.extend((0..=rings).rev().map(|i| arc(radius, i)));
    profile[0].x = 0.0;
    let last = profile.len() - 1;
    profile[last].x = 0.0;
    revolved_mesh(&profile, segments)
}

/// Particles of radius `r` (water density) in a face-centred cubic packing on the floor
/// `y = 0`, clipped to a cone of `slope` degrees with base radius `base` about the y axis:
/// hexagonal layers `r √(8/3)` apart (neighbours 1.001 diameters apart, not quite touching),
/// each offset to the hollows of the one below. A slope below the particles' angle of repose
/// stands; a steeper one slumps to it.
pub fn particle_cone(r: f32, slope: f32, base: f32) -> Vec<crate::Particle> {
    let a = 2.002 * r;
    let (layer, tan) = (a * (2.0_f32 / 3.0).sqrt(), slope.to_radians().tan());
    let n = (base / a) as i32 + 2;
    let mut out = Vec::new();
    for k in 0.. {
        let y = r + k as f32 * layer;
        if y > base * tan {
            break;
        }
        // The layers' offsets cycle through the three hexagonal sites (A, B, C).
        let (ox, oz) = [(0.0, 0.0), (0.5 * a, 0.5 * a / 3f32.sqrt()), (a, a / 3f32.sqrt())][k % 3];
        for i in -2 * n..=2 * n {
            for j in -n..=n {
                let (x, z) = (a * (i as f32 + 0.5 * j as f32) + ox, a * 3f32.sqrt() * 0.5 * j as f32 + oz);
                if y <= (base - (x * x + z * z).sqrt()) * tan {
                    out.push(crate::Particle::new(Vec3::new(x, y, z), r));
                }
            }
        }
    }
    out
}

/// `count` particles of radius 1 cm (water density) poured into a hemispherical SDF bowl (0.1 m
/// wall, rim at y = 0) sized to hold them twice over: a jittered lattice of spacing 2.5 cm above
/// the bowl, falling in, meeting the bowl and each other.
pub fn particle_bowl(desc: WorldDesc, count: usize, seed: u32) -> Result<World> {
    let mut world = World::new(desc)?;
    let r = 0.01_f32;
    let spacing = 2.5 * r;
    let radius = (3.0 * count as f32 * (2.0 * r).powi(3) / std::f32::consts::PI).cbrt().max(0.3);
    world.add_sdf(crate::SdfCollider::new(crate::Sdf::bowl(radius, 0.1)))?;
    // A square column of layers over the middle of the bowl.
    let side = ((radius / spacing) as usize).max(1);
    let mut rng = Lcg(seed);
    world.add_particles((0..count).map(|i| {
        let (layer, k) = (i / (side * side), i % (side * side));
        let jitter = Vec3::new(rng.next_centered(), rng.next_centered(), rng.next_centered()) * 0.2 * r;
        let x = Vec3::new(
            (k % side) as f32 * spacing - 0.5 * radius,
            0.1 + layer as f32 * spacing,
            (k / side) as f32 * spacing - 0.5 * radius,
        );
        crate::Particle::new(x + jitter, r)
    }))?;
    Ok(world)
}

/// [`particle_bowl`] with `bodies` wooden boxes (density 400 kg/m³, half-size 2 to 4 cm,
/// random orientations) dropped on top of the falling particles, which they meet both ways.
pub fn particle_bowl_with_bodies(desc: WorldDesc, count: usize, bodies: usize, seed: u32) -> Result<World> {
    let mut world = particle_bowl(desc, count, seed)?;
    let top = world.particles().iter().map(|p| p.position.y).fold(0.0_f32, f32::max);
    let spread = world.particles().iter().map(|p| p.position.x.abs()).fold(0.1_f32, f32::max);
    let mut rng = Lcg(seed.wrapping_add(7));
    // Layers of a 10 cm lattice over the particles.
    let cols = ((2.0 * spread / 0.1) as usize).max(1);
    for k in 0..bodies {
        let half = Vec3::new(rng.range(0.02, 0.04), rng.range(0.02, 0.04), rng.range(0.02, 0.04));
        let (layer, cell) = (k / (cols * cols), k % (cols * cols));
        let x = Vec3::new(
            -spread + 0.05 + 0.1 * (cell % cols) as f32,
            top + 0.1 + 0.1 * layer as f32,
            -spread + 0.05 + 0.1 * (cell / cols) as f32,
        );
        world.add_body(
            RigidBodyDesc::dynamic(Shape::cuboid(half)).density(400.0).position(x).orientation(rng.rotation()),
        )?;
    }
    Ok(world)
}

/// `arms`: `count` / 9 robot arms (at least one) on a square grid 1.5 m apart, each a fixed
/// base, a carriage (0.3 x 0.2 x 0.3 m, 18 kg) on a motorized vertical slider with limits
/// (±0.3 m, 0.4 m/s up or down by turns, 1,000 N) above it, and six links (boxes 0.1 x 0.5 x
/// 0.1 m, density 1000: 5 kg) standing straight up on the carriage on motorized hinges with
/// limits (±1.2 rad), about z and x by turns. Each hinge's motor has its own speed (up to 1.5
/// rad/s either way) and a torque (60 N m) too small to hold all the links above it out
/// sideways, so the arms swing into their limits and sag under gravity against their motors,
/// while the carriages ride up and down to their limits. A hand (a 0.2 m cube, 8 kg) hangs on
/// a universal joint at the top of each arm, about x on the last link and z on the hand. The
/// arms meet nothing
/// (`body_contacts` off): a benchmark of motorized, limited joints.
pub fn arms(mut desc: WorldDesc, count: usize) -> Result<World> {
    use crate::JointDesc;
    desc.solver.body_contacts = false;
    let mut world = World::new(desc)?;
    let arms = (count / 9).max(1);
    let side = (arms as f32).sqrt().ceil() as usize;
    for n in 0..arms {
        let base_at = Vec3::new(1.5 * (n % side) as f32, 0.0, 1.5 * (n / side) as f32);
        let base = world.add_body(RigidBodyDesc::fixed(Shape::sphere(0.1)).position(base_at))?;
        let carriage_at = base_at + Vec3::new(0.0, 0.1, 0.0);
        let carriage = RigidBodyDesc::dynamic(Shape::cuboid(Vec3::new(0.15, 0.1, 0.15))).density(1000.0);
        let carriage = world.add_body(carriage.position(carriage_at))?;
        let lift = if n % 2 == 0 { 0.4 } else { -0.4 };
        let slider = JointDesc::prismatic(base, carriage, carriage_at, Vec3::Y).limits(-0.3, 0.3).motor(lift, 1000.0);
        world.add_joint(slider)?;
        let mut below = carriage;
        for k in 0..6 {
            let foot = carriage_at + Vec3::new(0.0, 0.1 + 0.5 * k as f32, 0.0);
            let link = RigidBodyDesc::dynamic(Shape::cuboid(Vec3::new(0.05, 0.25, 0.05)))
                .density(1000.0)
                .position(foot + Vec3::new(0.0, 0.25, 0.0));
            let link = world.add_body(link)?;
            let axis = if k % 2 == 0 { Vec3::Z } else { Vec3::X };
            // Speeds spread over [-1.5, 1.5] rad/s by arm and joint.
            let speed = 1.5 * ((n * 7 + k * 3) % 13) as f32 / 6.0 - 1.5;
            let hinge = JointDesc::revolute(below, link, foot, axis).limits(-1.2, 1.2).motor(speed, 60.0);
            world.add_joint(hinge)?;
            below = link;
        }
        let wrist = carriage_at + Vec3::new(0.0, 3.1, 0.0);
        let hand = RigidBodyDesc::dynamic(Shape::cuboid(Vec3::splat(0.1))).density(1000.0);
        let hand = world.add_body(hand.position(wrist + Vec3::new(0.0, 0.1, 0.0)))?;
        world.add_joint(JointDesc::universal(below, hand, wrist, Vec3::X, Vec3::Z))?;
    }
    Ok(world)
}

/// `ragdolls`: `count` ragdolls of eleven bodies each (a pelvis, a chest, a head, upper arms
/// and forearms, thighs and shins: 57 kg in boxes, a sphere and capsules), standing in a
/// T-pose in rows of eight above a flight of ten static steps (each 0.3 m high and 0.6 m
/// deep, going down towards +z, 16 m wide, on a ground plane), each turning its own way. Their joints: ball joints with cones and twist limits at the spine, the neck, the
/// shoulders and the hips, and limited hinges at the elbows (bending forwards) and the knees
/// (bending backwards), ten per ragdoll. Friction 0.7 throughout. Thrown down the stairs at
/// 2 m/s, they tumble down some of the steps and come to rest on them and on each other.
pub fn ragdolls(desc: WorldDesc, count: usize) -> Result<World> {
    let mut world = World::new(desc)?;
    world.add_plane(Plane::new(Vec3::Y, 0.0).friction(0.7))?;
    for k in 0..10 {
        let top = 3.0 - 0.3 * k as f32;
        world.add_body(
            RigidBodyDesc::fixed(Shape::cuboid(Vec3::new(8.0, 0.5 * top, 0.3)))
                .position(Vec3::new(0.0, 0.5 * top, 0.6 * k as f32))
                .friction(0.7),
        )?;
    }
    for n in 0..count {
        let (row, column) = (n / 8, n % 8);
        let at = Vec3::new(-6.125 + 1.75 * column as f32, 4.2 + 2.2 * row as f32, 0.0);
        // A turn about the vertical and a tumble, different for each, so that they land apart.
        let spin = Vec3::new(0.5 * (n % 3) as f32 - 0.5, 0.3 * (n % 5) as f32, 1.5 + 0.25 * (n % 4) as f32);
        add_ragdoll(&mut world, at, spin)?;
    }
    Ok(world)
}

/// One ragdoll of [`ragdolls`], its pelvis at `at`, facing +z, moving down the stairs at 2 m/s
/// and turning at `spin` as a rigid body.
fn add_ragdoll(world: &mut World, at: Vec3, spin: Vec3) -> Result<()> {
    use crate::JointDesc;
    let mut part = |shape: Shape, mass: f32, offset: Vec3, orientation: Quat| {
        world.add_body(
            RigidBodyDesc::dynamic(shape)
                .mass(mass)
                .position(at + offset)
                .orientation(orientation)
                .angular_velocity(spin)
                .linear_velocity(Vec3::new(0.0, 0.0, 2.0) + spin.cross(offset))
                .friction(0.7),
        )
    };
    let upright = Quat::IDENTITY;
    // Capsules lie along their local y: the arms are turned to lie along x.
    let sideways = Quat::from_rotation_z(std::f32::consts::FRAC_PI_2);
    let pelvis = part(Shape::cuboid(Vec3::new(0.15, 0.1, 0.1)), 10.0, Vec3::ZERO, upright)?;
    let chest = part(Shape::cuboid(Vec3::new(0.18, 0.2, 0.1)), 15.0, Vec3::new(0.0, 0.31, 0.0), upright)?;
    let head = part(Shape::sphere(0.11), 5.0, Vec3::new(0.0, 0.64, 0.0), upright)?;
    // (A, B, anchor from the pelvis, axis, cone's half angle for a ball joint or none for a
    // hinge, twist or hinge limits.)
    let mut joints = vec![
        // Spine and neck: swing within a cone about the vertical, little twist.
        (pelvis, chest, Vec3::new(0.0, 0.1, 0.0), Vec3::Y, Some(0.35), [-0.4, 0.4]),
        (chest, head, Vec3::new(0.0, 0.52, 0.0), Vec3::Y, Some(0.6), [-0.9, 0.9]),
    ];
    for side in [1.0_f32, -1.0] {
        let upper_arm = part(Shape::capsule(0.1, 0.05), 2.0, Vec3::new(side * 0.35, 0.45, 0.0), sideways)?;
        let forearm = part(Shape::capsule(0.1, 0.045), 1.5, Vec3::new(side * 0.66, 0.45, 0.0), sideways)?;
        let thigh = part(Shape::capsule(0.14, 0.06), 6.0, Vec3::new(side * 0.1, -0.3, 0.0), upright)?;
        let shin = part(Shape::capsule(0.15, 0.05), 4.0, Vec3::new(side * 0.1, -0.7, 0.0), upright)?;
        // Shoulder: a wide cone about the arm's line; elbow: bends forwards (towards +z) only,
        // about the vertical; hip: a cone about the leg's line; knee: bends backwards only.
        joints.push((chest, upper_arm, Vec3::new(side * 0.2, 0.45, 0.0), Vec3::X * side, Some(1.3), [-0.8, 0.8]));
        let elbow = if side > 0.0 { [-2.4, 0.0] } else { [0.0, 2.4] };
        joints.push((upper_arm, forearm, Vec3::new(side * 0.505, 0.45, 0.0), Vec3::Y, None, elbow));
        joints.push((pelvis, thigh, Vec3::new(side * 0.1, -0.1, 0.0), -Vec3::Y, Some(1.1), [-0.5, 0.5]));
        joints.push((thigh, shin, Vec3::new(side * 0.1, -0.5, 0.0), Vec3::X, None, [0.0, 2.4]));
    }
    for (a, b, offset, axis, cone, [lower, upper]) in joints {
        let anchor = at + offset;
        world.add_joint(match cone {
            Some(half_angle) => JointDesc::spherical(a, b, anchor).cone(axis, half_angle).twist(lower, upper),
            None => JointDesc::revolute(a, b, anchor, axis).limits(lower, upper),
        })?;
    }
    Ok(())
}
