//! Particles: small spheres with a position, velocity, radius and mass that never rotate, for
//! counts in the millions. Each substep they fall under gravity and move along a straight
//! path that is swept against every static collider (planes and SDFs) by sphere tracing, so a
//! particle meets a surface at the fraction of the substep at which it reaches it (seed 003:
//! detection, time of impact, response), however thin the surface and however fast the
//! particle; there it bounces (restitution above the threshold speed) and loses tangential
//! speed to Coulomb friction, which can stop but not reverse it, then moves on for the rest
//! of the substep.
//!
//! Sign-change detection between the start and the end of a step (seed 003) misses a shell
//! thinner than the distance travelled: at 100 m/s and 240 substeps a second a particle moves
//! 42 cm, and both ends of its path lie in free space on either side of a 1 cm wall. Sphere
//! tracing never steps further than the distance to the nearest surface, which the field
//! bounds from below, so it cannot skip one; the fraction of seed 003 is where the march
//! arrives within [`PARTICLE_SURFACE_EPS`]. After a contact the sweep goes on for the rest of
//! the substep (up to [`PARTICLE_MAX_IMPACTS`] contacts) with the radius shrunk by
//! [`PARTICLE_SKIN`], so a particle sliding along one surface still meets a second one.
//!
//! Particles meet each other through a hashed grid over radix-sorted cell keys (cells of twice
//! the largest radius plus a margin of half of it), then mass-splitting Jacobi (Tonge et al.
//! 2012), gathered so that no atomics or scatters are needed: each substep first pushes
//! overlapping particles apart in position (with the matching velocity change, as in
//! position-based dynamics), then removes approach velocities over the particle pairs and the
//! colliders together with Coulomb friction. The two sides of a pair compute its impulse bit
//! for bit alike, so momentum is conserved up to the rounding of each particle's sum.
//!
//! Particles and rigid bodies meet both ways, between the bodies' velocity solve and their
//! motion, so both are at the same instant and a particle's push moves the body in the same
//! substep. Each body finds the particles within the margin of its shape through the particle
//! grid (the cells its bounds cover, or every particle when they cover more cells than there
//! are particles), with the bodies' own narrow phase (the particle posed as a sphere), and
//! takes one of each particle's [`PARTICLE_BODY_SLOTS`] slots; a particle touching more bodies
//! drops the rest and counts them in [`StepStats::particle_body_dropped`](crate::StepStats).
//! Each velocity iteration every body then runs Gauss-Seidel over its particle contacts in a
//! fixed order, with the particle's mass share and its own whole mass, applying each impulse to
//! itself at once and leaving it in the particle's slot, which the particle adds to its Jacobi
//! change: momentum is exchanged exactly, and a body with hundreds of particle contacts
//! converges as a body on the ground does. A particle held by a static collider against the
//! body's push passes the push on to it (shock propagation: it counts as immovable in that
//! contact). Overlaps with bodies are removed by a velocity bias at the body-body contacts'
//! rate. Detection against bodies is continuous in the speculative way: a pair's margin grows
//! by how far the particle and the body can close within the substep, and the contact lets them
//! close by their gap and no more, so a particle at 100 m/s stops on the face of a 1 cm plate
//! (the body's search region grows by the fastest particle's travel, found each substep by a
//! maximum over the particles' speeds). Not yet: shock propagation
//! through more than one layer of particles (a heavy body on a deep bed is held by the Jacobi
//! iterations alone and settles into it), a heap that keeps its slope (the pushes that separate
//! overlapping particles feel Coulomb friction, μ times their impulse, but the mass-split
//! Jacobi iterations leave a heap's weight partly unresolved each substep, and the pushes that
//! remove the overlap it makes ratchet the base outward: three particles in an arch stand for
//! seconds where statics says they stand for ever, and a collapsing column still spreads far
//! flatter than sand).
//!
//! Particles bounce off each other and off bodies: a pair that closed faster than the
//! restitution threshold at the start of the substep and would have met within it
//! (`v_n0 h + s < 0`) is given, after the velocity iterations have stopped it at contact, the
//! impulse that makes it leave at `e` times that closing speed (Newton's law, as the bodies'
//! restitution pass does from the approach velocity at detection): Jacobi over particle pairs
//! with the particles' `e`, and each body's Gauss-Seidel over its particle contacts with the
//! larger of the particles' and the body's `e`.
//!
//! Memory: 32 bytes per particle on the GPU ([`crate::layout::GpuParticle`]): 10 million take
//! 320 MB; the particle grid adds 5 words per particle, one per hash bucket (a power of two
//! at least the particle count) and the radix sort's histogram in its work arena, and 32 bytes
//! per particle of position and velocity changes: about 92 bytes per particle in all, 920 MB
//! for 10 million (16 more per particle, their velocities at the start of the substep, when
//! they bounce off each other: restitution above zero). A world with bodies adds, per particle, [`PARTICLE_BODY_SLOTS`] slots of 52
//! bytes (a body index in the work arena; normal, lever and impulse in a buffer of their own), a
//! slot counter and as many body-list entries: 228 bytes, 2.3 GB for 10 million (3.2 GB in
//! all), and one word per body. Every buffer must fit the device's
//! `max_storage_buffer_binding_size` (the device gets the adapter's full limits, which wgpu caps
//! at 2 GiB - 1 on every backend); past it [`GpuSolver::new`](crate::GpuSolver::new) returns
//! [`Error::BufferTooLarge`](crate::Error::BufferTooLarge). The largest buffer is the slots'
//! 192 bytes per particle, so with bodies up to 11.1 million particles fit one binding (10
//! million take 3.23 GB in all); without bodies the largest are the particles' own 32 bytes
//! each and the work arena's 5 to 7 words each (the hash table is a power of two), some 60
//! million. Dispatches of more than 65,535 workgroups are laid out in two dimensions.

use glam::Vec3;

use crate::error::{Result, check_finite, check_positive};

/// Distance from a surface at which a sweeping particle counts as touching it, m.
pub const PARTICLE_SURFACE_EPS: f32 = 1e-5;
/// Sphere-tracing steps per sweep; a sweep that uses them all stops where it got to (a particle
/// grazing a surface along a long path loses the rest of that substep's motion).
pub const PARTICLE_MARCH_STEPS: u32 = 48;
/// `cell_start` of a particle-grid hash bucket that no particle falls in.
pub const EMPTY_CELL: u32 = u32::MAX;

/// Contacts per particle per substep; after the last one the particle stays at that contact for
/// the rest of the substep.
pub const PARTICLE_MAX_IMPACTS: u32 = 4;
/// After a contact the rest of a substep is swept with the particle's radius less this fraction
/// of it: the surface just touched is then that skin away, so a particle sliding along it moves
/// on in steps of the skin, while a second surface (a wall met in a corner, another part of the
/// same field) still stops it, at most the skin deep, and pushes it back out.
pub const PARTICLE_SKIN: f32 = 0.1;

/// Bodies one particle can touch at once. A body finds the particles touching it through the
/// particle grid and takes one of each particle's slots; a particle touching more bodies than
/// this drops the rest, counted in [`StepStats::particle_body_dropped`](crate::StepStats).
pub const PARTICLE_BODY_SLOTS: u32 = 4;

/// A particle to add to a [`World`](crate::World).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Particle {
    /// Centre, m.
    pub position: Vec3,
    /// Velocity, m/s.
    pub velocity: Vec3,
    /// Radius, m, `> 0`.
    pub radius: f32,
    /// Mass, kg, `> 0`.
    pub mass: f32,
}

impl Particle {
    /// A particle at rest at `position` with the given radius and the mass of water (1000 kg/m³).
    pub fn new(position: Vec3, radius: f32) -> Self {
        let mass = 1000.0 * 4.0 / 3.0 * std::f32::consts::PI * radius * radius * radius;
        Self { position, velocity: Vec3::ZERO, radius, mass }
    }

    /// Sets the velocity, m/s.
    #[must_use]
    pub fn velocity(mut self, velocity: Vec3) -> Self {
        self.velocity = velocity;
        self
    }

    /// Sets the mass, kg.
    #[must_use]
    pub fn mass(mut self, mass: f32) -> Self {
        self.mass = mass;
        self
    }

    pub(crate) fn validate(&self) -> Result<()> {
        check_finite("particle position", self.position, self.position.is_finite())?;
        check_finite("particle velocity", self.velocity, self.velocity.is_finite())?;
        check_positive("particle radius", self.radius)?;
        check_positive("particle mass", self.mass)
    }
}

/// A particle's state as read back from a solver.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ParticleState {
    /// Centre, m.
    pub position: Vec3,
    /// Velocity, m/s.
    pub velocity: Vec3,
}
