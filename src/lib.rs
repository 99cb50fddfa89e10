//! # signorini
//!
//! Rigid bodies in contact, stepped on the GPU by WGSL compute shaders through wgpu, with a CPU
//! reference path that runs the same stages on the same data so every GPU result can be checked.
//!
//! The contact model is the Signorini conditions at velocity level (`a ≥ 0`, `v_n ≥ 0`,
//! `a v_n = 0`) solved by projected Gauss-Seidel with accumulated impulses, Coulomb friction in
//! the disk `|j_t| ≤ μ j_n`, Newton restitution, and soft contacts over substeps for
//! stability. Contacts with static planes and signed distance fields ([`sdf`]) are found by
//! testing every core point of a body (hull vertices, sphere and capsule centres with their
//! radius) against every collider, with speculative margins so that fast bodies do not pass
//! through. Joints (ball, hinge, universal, weld, slider, point on plane; [`joint`]) are solved
//! with the contacts as soft constraints. Between steps a program reads bodies, contacts
//! ([`Solver::contacts`]) and joint reactions, casts rays ([`Solver::cast_ray`]), and sets forces,
//! impulses, poses, velocities, collision groups, joint motors and gravity
//! ([`Solver::set_force`], [`Solver::apply_impulse`], [`Solver::set_pose`],
//! [`Solver::set_velocity`], [`Solver::set_collision_groups`], [`Solver::set_joint_motor`],
//! [`Solver::set_gravity`]), on either backend alike. A world is
//! plain data too ([`Scene`]): with the `serde` feature it is written to and read from scene
//! files in any serde format, through the same checks as when it was built ([`scene`]). So is a
//! running solver's state ([`Snapshot`], [`Solver::snapshot`], [`Solver::restore`]): restored
//! on the same backend it steps on to the same bits, to resume a saved run or go back to an
//! earlier step ([`snapshot`]).
//!
//! ```no_run
//! use signorini::prelude::*;
//!
//! let mut world = World::new(WorldDesc::default())?;
//! world.add_plane(Plane::new(Vec3::Y, 0.0))?;
//! let cube = world.add_body(
//!     RigidBodyDesc::dynamic(Shape::cuboid(Vec3::splat(0.5))).position(Vec3::new(0.0, 2.0, 0.0)),
//! )?;
//! // The GPU if there is one, the CPU reference solver otherwise.
//! let mut solver: Box<dyn Solver> = match GpuContext::new() {
//!     Ok(gpu) => Box::new(GpuSolver::new(&gpu, &world)?),
//!     Err(_) => Box::new(CpuSolver::new(&world)?),
//! };
//! solver.step_many(120);
//! println!("{:?} {:?}", solver.body_state(cube)?, solver.stats()?);
//! # Ok::<(), signorini::Error>(())
//! ```
#![warn(missing_docs)]

mod body;
mod collide;
pub mod coloring;
mod cpu;
mod error;
mod gpu;
pub mod joint;
pub mod layout;
pub mod math;
pub mod particles;
pub mod polytope;
mod query;
pub mod scene;
pub mod scenes;
pub mod sdf;
mod shape;
pub mod snapshot;
mod solver;
mod world;

pub use body::{BodyHandle, BodyKind, BodyState, CollisionGroups, MassSpec, Material, RigidBodyDesc};
pub use cpu::CpuSolver;
pub use error::{Error, Result};
pub use gpu::{AdapterSummary, DispatchCosts, DispatchTime, GpuContext, GpuSolver, ScanCost, shaders};
pub use joint::{JointBreaking, JointCone, JointDesc, JointHandle, JointKind, JointMotor, JointReaction};
pub use particles::{Particle, ParticleState};
pub use query::{RAY_FIELD_STEPS, RAY_FIELD_TOLERANCE, RayHit};
pub use scene::Scene;
pub use sdf::{Sdf, SdfCollider, SdfHandle};
pub use shape::{ConvexHull, MassProperties, Shape};
pub use snapshot::Snapshot;
pub use solver::{Collidable, Contact, Solver, StageTimes, StepStats};
pub use world::{
    ConstraintSolver, CpuLanes, MAX_CPU_THREADS, MAX_PASSES, MIN_CONTACT_HERTZ, ParticleSettings, Plane, PlaneHandle,
    SolverSettings, Stabilization, World, WorldDesc,
};

#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

/// The types most programs need, and the glam types the API speaks.
pub mod prelude {
    pub use crate::{
        BodyHandle, BodyKind, BodyState, CpuSolver, Error, GpuContext, GpuSolver, JointDesc, JointHandle, JointKind,
        JointMotor, Material, Particle, ParticleSettings, Plane, RigidBodyDesc, Scene, Sdf, SdfCollider, Shape,
        Snapshot, Solver, SolverSettings, Stabilization, StepStats, World, WorldDesc,
    };
    pub use glam::{Quat, Vec3};
}
