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
//! keeps those of smallest index, drops the rest and counts them in
//! [`StepStats::particle_body_dropped`](crate::StepStats).
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
//! iterations alone and settles into it).
//!
//! Heaps keep their slope. Two things make a few Jacobi iterations a substep enough:
//! - Kept contacts ([`PARTICLE_CONTACT_SLOTS`]). The close particle pairs (and then the
//!   colliders) keep their impulses from one substep to the next: each velocity iteration
//!   updates a contact's accumulated impulse, clamped as a whole to Coulomb's cone, and the
//!   next substep starts from it (warm starting), so a heap's weight is carried over instead
//!   of being found again each substep by iterations that reach a few layers. Both sides of a
//!   pair decide alike whether it is kept (each selected the other among its closest) and hold
//!   opposite impulses bit for bit, so momentum stays conserved.
//! - The floor's hold. The position corrections that remove overlaps push the particles at a
//!   heap's base outward a little every substep; a collider a particle rests on holds the
//!   pushes from the particles above it back by Coulomb friction, against `μ` times the push
//!   into it plus the friction it had to spare there in the last substep's velocity iterations
//!   (a push is the impulse `m Δx / h`). Pushes between particles side by side are not held,
//!   so the overlaps a fall squeezes into a heap's lowest layer come out.
//!
//! Measured (tests/particles.rs): three particles in an arch stand for ever, as statics says
//! (before, they fell in 1.5 s); a 30° cone of 801 stands still (its apex 0.2 mm lower after
//! 4 s), where it used to spread to a third of its height; a 45° cone slumps, its apex 13 %
//! lower, so the angle of repose lies between (30° to 35° for a 0.3 m cone, close to sand's).
//! A collapsing column of 6,000 ends twice as high as it used to (10.9 against 5.6 cm after
//! 3 s), its pairs overlapping by 1.0 mm on average instead of 2.7 (radius 1 cm): a fall still
//! squeezes overlaps into a heap that the Jacobi position iterations remove only slowly,
//! layer by layer.
//!
//! Particles bounce off each other and off bodies: a pair that closed faster than the
//! restitution threshold at the start of the substep and would have met within it
//! (`v_n0 h + s < 0`) is given, after the velocity iterations have stopped it at contact, the
//! impulse that makes it leave at `e` times that closing speed (Newton's law, as the bodies'
//! restitution pass does from the approach velocity at detection): Jacobi over particle pairs
//! with the particles' `e`, and each body's Gauss-Seidel over its particle contacts with the
//! larger of the particles' and the body's `e`.
//!
//! Memory on the GPU, per particle:
//! - 32 bytes of the particle itself ([`crate::layout::GpuParticle`]);
//! - the grid's work arena: 5 words per particle, plus one per hash bucket (a power of two at
//!   least the particle count) and the radix sort's histogram, and the 12 words of the
//!   particle's selected pairs;
//! - 32 bytes of position and velocity changes (16 more, the velocities at the start of the
//!   substep, when particles bounce off each other: restitution above zero);
//! - 192 bytes of kept contacts ([`PARTICLE_CONTACT_SLOTS`] of 16 bytes,
//!   [`crate::layout::GpuParticleContact`]).
//!
//! That is about 335 bytes in all, 3.35 GB for 10 million; particles that only meet the
//! colliders (collisions off) keep no contacts and take about 95. A world with bodies adds, per
//! particle, [`PARTICLE_BODY_SLOTS`] slots of 56 bytes (two body indices in the work arena: the
//! body the slot keeps, and the one whose thread filled it; normal, lever and impulse in a
//! buffer of their own), a slot counter and as many body-list entries: 244 bytes, 2.4 GB for
//! 10 million (5.8 GB in all, an 80 GB GPU holds it thirteen times), and
//! one word per body. Every buffer must fit the device's `max_storage_buffer_binding_size`
//! (the device gets the adapter's full limits, which wgpu caps at 2 GiB - 1 on every backend);
//! past it [`GpuSolver::new`](crate::GpuSolver::new) returns
//! [`Error::BufferTooLarge`](crate::Error::BufferTooLarge). The largest buffers are the body
//! slots' and the kept contacts' 192 bytes per particle each, so up to 11.1 million particles
//! fit one binding, with or without bodies. Dispatches of more than 65,535 workgroups are laid
//! out in two dimensions.

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
/// this keeps those of smallest index and drops the rest, counted in
/// [`StepStats::particle_body_dropped`](crate::StepStats).
pub const PARTICLE_BODY_SLOTS: u32 = 4;

/// Contacts per particle whose impulses are kept from one substep to the next. Each particle
/// selects its closest pairs, up to this many of those closer than [`PARTICLE_KEEP_GAP`]; a
/// pair is kept when each side selected the other (both decide alike), then the particle's
/// collider contacts take the slots left. Each velocity iteration updates a kept contact's
/// accumulated impulse, clamped as a whole (normal impulse at least zero, friction within `μ`
/// times it), and the next substep starts from it (warm starting), so a heap's weight is
/// carried from substep to substep instead of being found again by a few Jacobi iterations
/// each time. The other contacts are solved afresh each iteration, on both sides alike.
pub const PARTICLE_CONTACT_SLOTS: u32 = 12;
/// A particle pair keeps its impulse (see [`PARTICLE_CONTACT_SLOTS`]) when its gap is below
/// this fraction of the smaller radius: the pairs that can bear load, not the speculative ones
/// further out within the contact margin (half the largest radius).
pub const PARTICLE_KEEP_GAP: f32 = 0.25;
/// A particle pair whose squared distance is more than this times its squared reach is out of
/// reach whatever the rounding of the square root (a relative 1e-5 is some 80 rounding
/// errors): the neighbour gathers pass over it before taking the root.
pub const PARTICLE_FAR: f32 = 1.0 + 1e-5;
/// Marks a kept contact's `id` as a collider's (its index in the low bits); a particle's is its
/// index plus one, and zero marks an empty slot.
pub const PARTICLE_CONTACT_COLLIDER: u32 = 0x8000_0000;

/// A particle to add to a [`World`](crate::World).
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(deny_unknown_fields))]
pub struct Particle {
    /// Centre, m.
    pub position: Vec3,
    /// Velocity, m/s.
    #[cfg_attr(feature = "serde", serde(default))]
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
        crate::error::check_speed("particle velocity", self.velocity)?;
        check_positive("particle radius", self.radius)?;
        crate::error::check_invertible("particle mass", self.mass)
    }
}

/// A particle's state as read back from a solver.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(deny_unknown_fields))]
pub struct ParticleState {
    /// Centre, m.
    pub position: Vec3,
    /// Velocity, m/s.
    pub velocity: Vec3,
}

impl ParticleState {
    /// Whether every number of the state is finite.
    pub fn is_finite(&self) -> bool {
        self.position.is_finite() && self.velocity.is_finite()
    }
}
