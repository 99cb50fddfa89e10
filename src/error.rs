//! The crate's error type: every rejected input and every failed GPU request says what and why.

use thiserror::Error;

/// Result alias used throughout the crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong when describing a world or running a solver.
///
/// Bad input is rejected when it enters the crate (`World::add_body`, `World::add_plane`,
/// `World::new`), so a solver never meets a NaN it did not make itself.
#[derive(Debug, Error, Clone, PartialEq)]
#[non_exhaustive]
pub enum Error {
    /// A number that must be finite is NaN or infinite.
    #[error("{what} must be finite, got {value}")]
    NonFinite {
        /// Which quantity, e.g. `"body position"`.
        what: &'static str,
        /// The offending value, formatted.
        value: String,
    },
    /// A quantity that must be strictly positive is zero or negative.
    #[error("{what} must be positive, got {value}")]
    NonPositive {
        /// Which quantity, e.g. `"sphere radius"`.
        what: &'static str,
        /// The offending value.
        value: f32,
    },
    /// A quantity lies outside its documented range.
    #[error("{what} must lie in {range}, got {value}")]
    OutOfRange {
        /// Which quantity, e.g. `"restitution"`.
        what: &'static str,
        /// The allowed range, in words.
        range: &'static str,
        /// The offending value.
        value: f32,
    },
    /// A shape has no volume: a hull with fewer than four non-coplanar points, a zero normal.
    #[error("degenerate shape: {reason}")]
    DegenerateShape {
        /// What makes it degenerate.
        reason: String,
    },
    /// A joint that cannot hold: both sides the same body, neither side dynamic, an axis or
    /// normal of no length, a universal joint's parallel axes, limits or a motor on a joint
    /// that is not a hinge, a lower limit above the upper.
    #[error("invalid joint: {reason}")]
    InvalidJoint {
        /// What is wrong with it.
        reason: String,
    },
    /// A triangle mesh file could not be read or parsed.
    #[error("mesh: {0}")]
    Mesh(String),
    /// A handle that does not name an object of this world.
    #[error("invalid {what} handle {index} (the world has {count})")]
    InvalidHandle {
        /// `"body"`, `"plane"`, `"joint"` or `"joint body"`.
        what: &'static str,
        /// The handle's index.
        index: u32,
        /// How many such objects exist.
        count: u32,
    },
    /// No wgpu adapter could be found.
    #[error(
        "no GPU adapter found ({details}). On Linux without a GPU, install a software adapter: \
         `apt-get install mesa-vulkan-drivers` (Vulkan lavapipe) or Mesa's EGL/llvmpipe \
         (`libegl-mesa0`), then select it with WGPU_BACKEND=vulkan or WGPU_BACKEND=gl; \
         or use the CPU backend"
    )]
    NoAdapter {
        /// What wgpu reported.
        details: String,
    },
    /// The adapter refused to create a device.
    #[error("could not create a GPU device: {0}")]
    RequestDevice(String),
    /// A buffer the scene needs exceeds what the device allows.
    #[error(
        "{what} needs {bytes} bytes, over the device limit of {limit} bytes ({limit_name}); \
         use fewer bodies or a device with larger limits"
    )]
    BufferTooLarge {
        /// Which buffer.
        what: &'static str,
        /// Bytes required.
        bytes: u64,
        /// The limit.
        limit: u64,
        /// The wgpu limit's name.
        limit_name: &'static str,
    },
    /// The device ran out of memory while the solver made its buffers.
    #[error("the GPU ran out of memory for {what} ({details}); use fewer bodies or a device with more memory")]
    OutOfMemory {
        /// What was being made.
        what: &'static str,
        /// What wgpu reported.
        details: String,
    },
    /// The device's limits are below what the solver's kernels need.
    #[error("the device allows {available} for {limit_name}; the solver needs {required}")]
    DeviceLimit {
        /// The wgpu limit's name.
        limit_name: &'static str,
        /// What the solver needs.
        required: u64,
        /// What the device allows.
        available: u64,
    },
    /// The backend does not implement a feature the world asks for.
    #[error("{backend} does not support {feature} yet; use the CPU solver or turn it off")]
    Unsupported {
        /// The backend.
        backend: &'static str,
        /// The feature.
        feature: &'static str,
    },
    /// Reading results back from the GPU failed.
    #[error("GPU readback failed: {0}")]
    Readback(String),
    /// An operation that needs a body the solver can move (dynamic or kinematic) was given a static one.
    #[error("body {index} is static and cannot be moved or given a velocity")]
    StaticBody {
        /// The body's index.
        index: u32,
    },
    /// An item of a [`Scene`](crate::Scene) was rejected when a world was built from it
    /// ([`World::from_scene`](crate::World::from_scene)).
    #[error("{item} {index} of the scene: {error}")]
    InScene {
        /// `"body"`, `"plane"`, `"SDF collider"`, `"particle"` or `"joint"`.
        item: &'static str,
        /// Its index in the scene's list of them.
        index: usize,
        /// Why it was rejected (in the message too, so not also the error's `source`).
        error: Box<Error>,
    },
    /// The state read back is no longer finite: finite but extreme input (speeds, sizes, masses,
    /// forces or a time step far from what f32 holds for the scene) made a step overflow, to a
    /// NaN, an infinity, or a speed whose square is past f32's range (which the inputs may not
    /// have either). The reads return this instead of such a state; the solver may be set right
    /// again (`set_pose`, `set_velocity`) or rebuilt.
    #[error(
        "the simulation is no longer finite after step {step}: {what} holds a NaN, an infinity or a speed past 1.8e19"
    )]
    Diverged {
        /// What holds it: `"body 17"`, `"particle 3"`, `"contact 0"`, `"the reaction of joint 2"`,
        /// `"the bodies' kinetic energy"`.
        what: String,
        /// The steps taken when it was read.
        step: u64,
    },
    /// A [`Snapshot`](crate::Snapshot) does not fit the solver it is restored into
    /// ([`Solver::restore`](crate::Solver::restore)): it is of another world, or an item of it
    /// holds what no step could have left (a number that is not finite, an index out of range,
    /// lists out of order).
    #[error("{item} of the snapshot: {reason}")]
    InvalidSnapshot {
        /// What was rejected, e.g. `"body 3"` or `"the joints"`.
        item: String,
        /// Why.
        reason: String,
    },
    /// A force was given to a body that is not dynamic (a kinematic body moves at the velocity
    /// it is given, a static one not at all).
    #[error("body {index} is not dynamic: forces act on dynamic bodies only")]
    NotDynamic {
        /// The body's index.
        index: u32,
    },
}

/// Checks that every component of a value is finite.
pub(crate) fn check_finite<T: std::fmt::Debug>(what: &'static str, value: T, finite: bool) -> Result<()> {
    if finite { Ok(()) } else { Err(Error::NonFinite { what, value: format!("{value:?}") }) }
}

/// Checks that a velocity is finite and that its square is too (below 1.8e19 m/s or rad/s):
/// a speed whose square overflows would stall or poison every step that measures it.
pub(crate) fn check_speed(what: &'static str, velocity: glam::Vec3) -> Result<()> {
    check_finite(what, velocity, velocity.is_finite())?;
    let square = velocity.length_squared();
    if square.is_finite() {
        Ok(())
    } else {
        Err(Error::OutOfRange { what, range: "a speed below 1.8e19 (its square finite)", value: velocity.length() })
    }
}

/// Checks that a mass or moment of inertia is positive and has a finite inverse (at least
/// f32's smallest normal number, 1.2e-38).
pub(crate) fn check_invertible(what: &'static str, value: f32) -> Result<()> {
    check_positive(what, value)?;
    if value.recip().is_finite() {
        Ok(())
    } else {
        Err(Error::OutOfRange { what, range: "[1.2e-38, inf) (its inverse finite)", value })
    }
}

/// Checks that a scalar is finite and strictly positive.
pub(crate) fn check_positive(what: &'static str, value: f32) -> Result<()> {
    check_finite(what, value, value.is_finite())?;
    if value > 0.0 { Ok(()) } else { Err(Error::NonPositive { what, value }) }
}

/// Checks that a scalar is finite and not negative.
pub(crate) fn check_non_negative(what: &'static str, value: f32) -> Result<()> {
    check_finite(what, value, value.is_finite())?;
    if value >= 0.0 { Ok(()) } else { Err(Error::OutOfRange { what, range: "[0, inf)", value }) }
}
