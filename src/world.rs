//! The world description: settings, bodies, joints, static planes and SDF colliders. Solvers are built from it.

use glam::Vec3;

use crate::body::{BodyHandle, BodyKind, MassSpec, Material, RigidBodyDesc};
use crate::error::{Error, Result, check_finite, check_non_negative, check_positive};
use crate::joint::{JointDesc, JointHandle};
use crate::particles::Particle;
use crate::sdf::{SdfCollider, SdfHandle, SdfProgram};
use crate::shape::MassProperties;

/// How positional error (penetration) is removed.
///
/// The default is [`Stabilization::Soft`]: soft contacts solved over substeps, then a relax
/// iteration without bias (the soft step of Box2D v3 and Catto's "Solver2D" study). Baumgarte
/// feeds a fraction of the penetration back as velocity inside the same rigid solve; that
/// velocity stays in the bodies, so stacks jitter and resting bodies bounce unless the slop and
/// `beta` are tuned per scene. The soft step removes the pushing velocity in its relax pass and
/// its spring is integrated implicitly, so it is stable at any stiffness; Baumgarte stays
/// available because it is the textbook formulation of seed 000 and a useful reference.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum Stabilization {
    /// Soft contacts: a spring of the given frequency and damping ratio pushes penetrating
    /// bodies apart during the biased solve; the relax iterations remove that velocity.
    Soft {
        /// Stiffness of contacts between two bodies that can move, Hz. Default 60. Clamped to a
        /// quarter of the substep rate (60 Hz at 4 substeps of 1/60 s), above which one
        /// Gauss-Seidel sweep no longer damps a stack's rocking. 0 makes them rigid; otherwise
        /// at least [`MIN_CONTACT_HERTZ`].
        contact_hertz: f32,
        /// Damping ratio of those contacts. Default 10.
        contact_damping_ratio: f32,
        /// Stiffness of contacts against static geometry, Hz. Default 60. Clamped to half the
        /// substep rate. 0 makes them rigid; otherwise at least [`MIN_CONTACT_HERTZ`].
        static_hertz: f32,
        /// Damping ratio of contacts against static geometry. Default 5.
        static_damping_ratio: f32,
    },
    /// Baumgarte stabilization: velocity bias `beta / h * min(0, s + slop)` inside a rigid
    /// solve, no relax pass.
    Baumgarte {
        /// Fraction of the penetration removed per substep, in `(0, 1]`. Default 0.2.
        beta: f32,
        /// Penetration left alone to keep resting contacts from jittering, m. Default 0.005.
        linear_slop: f32,
    },
}

impl Default for Stabilization {
    fn default() -> Self {
        Self::Soft { contact_hertz: 60.0, contact_damping_ratio: 10.0, static_hertz: 60.0, static_damping_ratio: 5.0 }
    }
}

impl Stabilization {
    /// Baumgarte stabilization with its default parameters.
    pub fn baumgarte() -> Self {
        Self::Baumgarte { beta: 0.2, linear_slop: 0.005 }
    }
}

/// Parameters of the contact solver.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(default, deny_unknown_fields))]
pub struct SolverSettings {
    /// Substeps per step. Each substep integrates velocities, solves with bias, integrates
    /// positions and relaxes. Default 4, at most [`MAX_PASSES`].
    pub substeps: u32,
    /// Biased Gauss-Seidel iterations per substep. Default 3: a base-20 pyramid of boxes comes
    /// to rest with it (top within 9 mm of where it started, 7 of them the soft compression of
    /// twenty levels); with 1 it keeps trembling and its top wanders by centimetres. At most
    /// [`MAX_PASSES`].
    pub iterations: u32,
    /// Relax iterations (no bias) per substep; 0 under Baumgarte. Default 1, at most
    /// [`MAX_PASSES`].
    pub relax_iterations: u32,
    /// How penetration is removed. Default [`Stabilization::Soft`].
    pub stabilization: Stabilization,
    /// Approach speed above which restitution applies, m/s. Default 1.
    pub restitution_threshold: f32,
    /// Contacts are created this far before touching, m, plus the distance the two sides can
    /// close in one step (a point's travel against a plane, the relative motion of two bodies),
    /// so that fast bodies meet what they hit instead of passing it. Default 0.02.
    pub speculative_distance: f32,
    /// Largest speed at which penetration is pushed out, m/s. Default 3.
    pub max_push_velocity: f32,
    /// Whether last step's impulses seed this step's solve (warm starting). Default true.
    pub warm_starting: bool,
    /// Whether bodies collide with each other (not only with planes). Default true; false
    /// skips the broad phase, the pair narrow phase, the coloring and the manifold solves
    /// (bodies that only meet planes, e.g. debris or a plane-only benchmark).
    pub body_contacts: bool,
    /// How body-body constraints are solved. Default [`ConstraintSolver::Colored`].
    pub constraint_solver: ConstraintSolver,
    /// Graph colors available, 1 to 32; constraints that find none are solved by
    /// mass-splitting Jacobi. Default 12.
    pub max_colors: u32,
    /// Rounds of the parallel coloring per step (seeded from the last step's colors, so a
    /// settled scene needs one). Default 8, at most [`MAX_PASSES`].
    pub coloring_rounds: u32,
    /// Worker threads of the CPU solver; 0 takes one per core. Default 0, at most
    /// [`MAX_CPU_THREADS`]. Every stage that splits its work over threads splits items that are
    /// independent (pairs, manifolds of one color, bodies), so the results are bit for bit the
    /// same for every thread count; when the system cannot start the workers, the solver logs a
    /// warning and runs on the calling thread, with the same results. During a step the
    /// workers do not sleep between its stages: they keep looking for work (spinning briefly,
    /// then yielding the processor), so each keeps a core busy until the step returns; more
    /// workers than cores only slow the step down. The GPU solver ignores it.
    pub cpu_threads: u32,
    /// The widest SIMD vectors the CPU solver's lane code may use. Default
    /// [`CpuLanes::Sixteen`]: the widest this processor has. Every width gives the same bits
    /// (the lanes do each manifold's and body's arithmetic in the same order as the scalar
    /// code), so this only changes speed: narrower lanes show what a processor without
    /// AVX-512 or AVX gets, or avoid the lower clock some processors run AVX-512 at. The GPU
    /// solver ignores it.
    pub cpu_lanes: CpuLanes,
    /// Whether a resting four-point manifold between polytopes is carried into the next step
    /// without the narrow phase while, since the last narrow phase, the two bodies slid less
    /// than 1 mm against each other at every point (2 % of the contact face's size on faces
    /// under 5 cm), and its frame would still be kept (lever arms within 5 mm of the
    /// contact points, a tenth of the contact's size under 5 cm; contact faces turned less
    /// than 1.15 degrees from the normal): "contact recycling", with which a resting stack skips most of
    /// its narrow phase. Default true; false runs the narrow phase on every pair every step.
    pub recycle_contacts: bool,
    /// Whether the GPU solver's manifold passes read what only positions change (each point's
    /// lever arms, separation and effective masses, each body's world inverse inertia) from
    /// records prepared once per position update (`prepare_manifolds`, before each substep's
    /// warm start and again before its relax sweeps), instead of computing it in every pass,
    /// as the CPU solver does. A pass then does about 40 % of the arithmetic (by a count of
    /// its operations), and reads 256 more bytes per manifold. Default false: on lavapipe, the
    /// only adapter it has been timed on, the preparation costs more than the passes save
    /// (large pyramid, solve 218-225 against 136-157 ms/step, software times); on a GPU,
    /// where a small scene's colors each wait on one thread's chain of arithmetic, it is
    /// untimed. Either way the results are the same bits on the software adapters (a hardware
    /// compiler may contract the arithmetic differently in the two places). The CPU solver
    /// always prepares, and ignores it.
    pub gpu_prepared_passes: bool,
    /// Whether the GPU solver runs each manifold pass (solve, relax, restitution) as one
    /// dispatch of one workgroup, whose threads sweep the colors in order with a barrier
    /// between them, then the Jacobi overflow and its gather, instead of a dispatch per color
    /// (of [`max_colors`](Self::max_colors)), one for the overflow and one for the gather: 14
    /// dispatches a pass become 1 at the default 12 colors. The joints' sweeps (warm start,
    /// solve, relax) likewise: one dispatch each instead of one per joint color; and the
    /// whole coloring stage (the adjacency, the coloring's phases and rounds, the buckets, the
    /// Jacobi split), one dispatch instead of `14 + 3 ×`
    /// [`coloring_rounds`](Self::coloring_rounds) where its scans fit one workgroup. In a
    /// world of 65 to 8,192 bodies (a smaller one pairs its bodies by brute force), the broad
    /// phase before the grid's pairs (the beginning, the cell sort, the cells' starts) is one
    /// dispatch, and where its pairs are at most 65,536 their count and order another. In a
    /// world of bodies and their contacts alone (no joints, static colliders or particles,
    /// nothing that can bounce), each whole substep is one such dispatch: the velocities, the
    /// warm start, the sweeps, the positions (the GPU's stage times then count the integration
    /// in the solve). A small world's step is mostly dispatches (the solve's 255 of them took
    /// 4.4 of a 5.2 ms step in a pile of 1,000 boxes on an H200), and one workgroup (up to
    /// 1,024 threads; 256 on Metal) holds a small world's colors; a large world wants the whole
    /// device for each color. A pile of 1,000 boxes records 13 dispatches a step instead of
    /// 292. Default false: untimed on a
    /// GPU. The same bits either way (the same work per body and manifold, in the same order,
    /// and the same sorted lists). The CPU solver ignores it.
    pub gpu_fused_sweeps: bool,
    /// Pairs and manifolds a body the GPU solver's contact buffers start with room for (at
    /// least 1,024 of each in all, at most what the device's bindings allow). The buffers grow
    /// by themselves once a step fills three quarters of them, carrying every contact's state
    /// over, so the results are the same as with room enough from the start; what this saves
    /// is the growth itself, and the steps of a scene whose contacts jump by more than a third
    /// before the GPU's count of them has come back (those report what did not fit in
    /// [`StepStats::dropped`](crate::StepStats)). Default 6, at least 1. The CPU solver's
    /// lists grow at once, and it ignores it.
    pub gpu_contacts_per_body: u32,
    /// Stiffness of joints, Hz: each joint is a soft constraint of this frequency in the
    /// biased solve, and rigid in the relax iterations (none under Baumgarte; see
    /// [`crate::joint`]). Default 60.
    /// Clamped to a quarter of the substep rate, as the contacts are. At least
    /// [`MIN_CONTACT_HERTZ`].
    pub joint_hertz: f32,
    /// Damping ratio of joints. Default 2.
    pub joint_damping_ratio: f32,
}

/// The most substeps, iterations, relax iterations, particle iterations or coloring rounds a
/// world may ask for (a step's work, and on the GPU its dispatches, grow with each).
pub const MAX_PASSES: u32 = 1000;

/// The most worker threads [`SolverSettings::cpu_threads`] may ask for: more than today's
/// machines have cores, few enough that a mistyped count is refused instead of starting that
/// many threads.
pub const MAX_CPU_THREADS: u32 = 1024;

/// The softest soft contact, Hz: below it a contact's mass scale nears the smallest float and
/// its compliance (`impulse scale / mass scale`) overflows. 0 means rigid.
pub const MIN_CONTACT_HERTZ: f32 = 1e-3;

/// A contact frequency: 0 (rigid) or at least [`MIN_CONTACT_HERTZ`].
fn check_hertz(what: &'static str, hertz: f32) -> Result<()> {
    check_non_negative(what, hertz)?;
    if hertz > 0.0 && hertz < MIN_CONTACT_HERTZ {
        return Err(Error::OutOfRange { what, range: "0 or [0.001, inf)", value: hertz });
    }
    Ok(())
}

/// How constraints between bodies are solved.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum ConstraintSolver {
    /// Graph-colored projected Gauss-Seidel: the constraints of one color share no dynamic
    /// body and are solved in parallel, the colors one after another; constraints beyond the
    /// color cap are solved by mass-splitting Jacobi.
    #[default]
    Colored,
    /// Mass-splitting Jacobi for every constraint (Tonge et al. 2012).
    Jacobi,
}

/// The widest SIMD vectors the CPU solver may use ([`SolverSettings::cpu_lanes`]); on a
/// processor without them it takes the widest it has.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum CpuLanes {
    /// Four lanes (SSE on x86-64; glam's portable or NEON code elsewhere).
    Four,
    /// Eight lanes in one AVX register.
    Eight,
    /// Sixteen lanes in one AVX-512 register for the contact sweeps and the ball joints
    /// (AVX-512F), and AVX-512's 32 registers for the eight-lane contact preparation
    /// (AVX-512VL).
    #[default]
    Sixteen,
}

impl CpuLanes {
    /// The number of lanes.
    pub fn count(self) -> u32 {
        match self {
            CpuLanes::Four => 4,
            CpuLanes::Eight => 8,
            CpuLanes::Sixteen => 16,
        }
    }
}

impl Default for SolverSettings {
    fn default() -> Self {
        Self {
            substeps: 4,
            iterations: 3,
            relax_iterations: 1,
            stabilization: Stabilization::default(),
            restitution_threshold: 1.0,
            speculative_distance: 0.02,
            max_push_velocity: 3.0,
            warm_starting: true,
            body_contacts: true,
            constraint_solver: ConstraintSolver::Colored,
            max_colors: 12,
            coloring_rounds: 8,
            cpu_threads: 0,
            cpu_lanes: CpuLanes::Sixteen,
            recycle_contacts: true,
            gpu_prepared_passes: false,
            gpu_fused_sweeps: false,
            gpu_contacts_per_body: 6,
            joint_hertz: 60.0,
            joint_damping_ratio: 2.0,
        }
    }
}

/// Global settings of a world.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(default, deny_unknown_fields))]
pub struct WorldDesc {
    /// Gravitational acceleration, m/s². Default `(0, -9.81, 0)`: y is up.
    pub gravity: Vec3,
    /// Time step, s. Default 1/60.
    pub dt: f32,
    /// Solver parameters.
    pub solver: SolverSettings,
    /// How particles move and meet.
    pub particles: ParticleSettings,
}

/// Settings of the particles of a world.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(default, deny_unknown_fields))]
pub struct ParticleSettings {
    /// Material of every particle, combined with a collider's as for bodies; its friction and
    /// restitution are also those of particle-particle contacts (two particles closing faster
    /// than the restitution threshold leave at `e` times their closing speed). Default
    /// friction 0.5, restitution 0.
    pub material: Material,
    /// Whether particles collide with each other. Default true.
    pub collisions: bool,
    /// Jacobi iterations over particle-particle contacts per substep, 1 to [`MAX_PASSES`].
    /// Default 2.
    pub iterations: u32,
}

impl Default for ParticleSettings {
    fn default() -> Self {
        Self { material: Material::new(0.5, 0.0), collisions: true, iterations: 2 }
    }
}

impl Default for WorldDesc {
    fn default() -> Self {
        Self {
            gravity: Vec3::new(0.0, -9.81, 0.0),
            dt: 1.0 / 60.0,
            solver: SolverSettings::default(),
            particles: ParticleSettings::default(),
        }
    }
}

impl WorldDesc {
    /// Checks every setting.
    pub fn validate(&self) -> Result<()> {
        check_finite("gravity", self.gravity, self.gravity.is_finite())?;
        check_positive("time step", self.dt)?;
        self.particles.material.validate()?;
        let s = &self.solver;
        // Counts of passes: each is work (and on the GPU dispatches) of every step.
        for (what, count, least) in [
            ("particle iterations", self.particles.iterations, 1),
            ("substeps", s.substeps, 1),
            ("iterations", s.iterations, 1),
            ("relax iterations", s.relax_iterations, 0),
            ("coloring rounds", s.coloring_rounds, 1),
        ] {
            if !(least..=MAX_PASSES).contains(&count) {
                let range = if least == 0 { "[0, 1000]" } else { "[1, 1000]" };
                return Err(Error::OutOfRange { what, range, value: count as f32 });
            }
        }
        check_non_negative("restitution threshold", s.restitution_threshold)?;
        check_non_negative("speculative distance", s.speculative_distance)?;
        check_positive("max push velocity", s.max_push_velocity)?;
        if s.max_colors == 0 || s.max_colors > crate::layout::MAX_COLORS {
            return Err(Error::OutOfRange { what: "max colors", range: "[1, 32]", value: s.max_colors as f32 });
        }
        if s.cpu_threads > MAX_CPU_THREADS {
            return Err(Error::OutOfRange { what: "CPU threads", range: "[0, 1024]", value: s.cpu_threads as f32 });
        }
        if s.gpu_contacts_per_body == 0 {
            return Err(Error::OutOfRange { what: "GPU contacts per body", range: "[1, inf)", value: 0.0 });
        }
        check_hertz("joint hertz", s.joint_hertz)?;
        if s.joint_hertz == 0.0 {
            return Err(Error::OutOfRange { what: "joint hertz", range: "[0.001, inf)", value: 0.0 });
        }
        check_non_negative("joint damping ratio", s.joint_damping_ratio)?;
        match s.stabilization {
            Stabilization::Soft { contact_hertz, contact_damping_ratio, static_hertz, static_damping_ratio } => {
                check_hertz("contact hertz", contact_hertz)?;
                check_non_negative("contact damping ratio", contact_damping_ratio)?;
                check_hertz("static contact hertz", static_hertz)?;
                check_non_negative("static contact damping ratio", static_damping_ratio)?;
            }
            Stabilization::Baumgarte { beta, linear_slop } => {
                check_positive("Baumgarte beta", beta)?;
                if beta > 1.0 {
                    return Err(Error::OutOfRange { what: "Baumgarte beta", range: "(0, 1]", value: beta });
                }
                check_non_negative("linear slop", linear_slop)?;
            }
        }
        Ok(())
    }
}

/// A static half-space boundary: the points `x` with `normal · x = offset`, solid below.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(deny_unknown_fields))]
pub struct Plane {
    /// Outward normal (towards the free side). Normalized on insertion; must not be zero.
    pub normal: Vec3,
    /// Signed distance of the plane from the origin along `normal`, m.
    pub offset: f32,
    /// Surface material.
    #[cfg_attr(feature = "serde", serde(default))]
    pub material: Material,
}

impl Plane {
    /// The plane `normal · x = offset` with the default material.
    pub fn new(normal: Vec3, offset: f32) -> Self {
        Self { normal, offset, material: Material::default() }
    }

    /// The plane through `point` with the given normal.
    pub fn through(normal: Vec3, point: Vec3) -> Self {
        let n = normal.normalize_or_zero();
        Self::new(normal, n.dot(point) * normal.length())
    }

    /// Sets the material.
    #[must_use]
    pub fn material(mut self, material: Material) -> Self {
        self.material = material;
        self
    }

    /// Sets the friction coefficient.
    #[must_use]
    pub fn friction(mut self, friction: f32) -> Self {
        self.material.friction = friction;
        self
    }

    /// Sets the restitution coefficient.
    #[must_use]
    pub fn restitution(mut self, restitution: f32) -> Self {
        self.material.restitution = restitution;
        self
    }

    /// Checks the plane and returns it with a unit normal and the offset scaled to match.
    fn normalized(&self) -> Result<Self> {
        check_finite("plane normal", self.normal, self.normal.is_finite())?;
        check_finite("plane offset", self.offset, self.offset.is_finite())?;
        self.material.validate()?;
        let len = self.normal.length();
        if len < 1e-6 {
            return Err(Error::DegenerateShape { reason: "plane normal is zero".into() });
        }
        if crate::math::is_unit_length(len) {
            return Ok(*self);
        }
        Ok(Self { normal: self.normal / len, offset: self.offset / len, material: self.material })
    }
}

/// Names a plane of a [`World`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct PlaneHandle(pub(crate) u32);

impl PlaneHandle {
    /// The handle of the plane with this index.
    pub fn from_index(index: usize) -> Self {
        Self(index as u32)
    }

    /// The plane's index, in insertion order.
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// A validated body: its descriptor (orientation normalized) and mass properties.
#[derive(Clone, Debug)]
pub(crate) struct BodyRecord {
    pub desc: RigidBodyDesc,
    pub mass: MassProperties,
}

/// A scene: settings, bodies and static planes, validated on insertion. Build solvers from it
/// with [`CpuSolver::new`](crate::CpuSolver::new) or [`GpuSolver::new`](crate::GpuSolver::new).
#[derive(Clone, Debug)]
pub struct World {
    pub(crate) desc: WorldDesc,
    pub(crate) bodies: Vec<BodyRecord>,
    pub(crate) planes: Vec<Plane>,
    pub(crate) sdfs: Vec<SdfRecord>,
    pub(crate) particles: Vec<Particle>,
    pub(crate) joints: Vec<JointDesc>,
}

/// A validated SDF collider and its compiled program.
#[derive(Clone, Debug)]
pub(crate) struct SdfRecord {
    pub collider: SdfCollider,
    pub program: SdfProgram,
}

impl World {
    /// An empty world.
    ///
    /// # Errors
    /// A typed error for any setting that is not finite or out of range.
    pub fn new(desc: WorldDesc) -> Result<Self> {
        desc.validate()?;
        Ok(Self {
            desc,
            bodies: Vec::new(),
            planes: Vec::new(),
            sdfs: Vec::new(),
            particles: Vec::new(),
            joints: Vec::new(),
        })
    }

    /// The world's settings.
    pub fn desc(&self) -> &WorldDesc {
        &self.desc
    }

    /// Adds a body.
    ///
    /// # Errors
    /// [`Error::NonFinite`] for a NaN or infinite field, [`Error::NonPositive`] for a zero or
    /// negative size, density or mass, [`Error::OutOfRange`] for friction below 0 or
    /// restitution outside `[0, 1]`, a dynamic body's mass or inertia whose inverse overflows
    /// f32 (below 1.2e-38) or a speed whose square does (past 1.8e19 m/s or rad/s),
    /// [`Error::DegenerateShape`] for a zero orientation.
    pub fn add_body(&mut self, desc: RigidBodyDesc) -> Result<BodyHandle> {
        let orientation = desc.validate()?;
        let volume = desc.shape.volume();
        let density = match desc.mass {
            MassSpec::Density(d) => d,
            MassSpec::Mass(m) => m / volume,
        };
        let mass = desc.shape.mass_properties(density);
        if desc.kind == BodyKind::Dynamic {
            crate::error::check_invertible("body mass", mass.mass)?;
            let i = mass.principal_inertia;
            check_finite("body inertia", i, i.is_finite())?;
            crate::error::check_invertible("body inertia", i.min_element())?;
        }
        let index = u32::try_from(self.bodies.len()).map_err(|_| Error::OutOfRange {
            what: "body count",
            range: "[0, 2^32)",
            value: self.bodies.len() as f32,
        })?;
        self.bodies.push(BodyRecord { desc: RigidBodyDesc { orientation, ..desc }, mass });
        Ok(BodyHandle(index))
    }

    /// Adds a joint between two bodies of this world (see [`crate::joint`]), its anchor and
    /// axis in the world frame at the bodies' poses as they were added.
    ///
    /// # Errors
    /// [`Error::InvalidHandle`] for a body not in this world, [`Error::NonFinite`] for a NaN
    /// or infinite anchor, axis, normal, limit or motor speed, [`Error::OutOfRange`] for a
    /// hinge's limit outside `[-π, π]`, a negative motor effort, or a breaking load that is
    /// zero, negative or NaN, [`Error::InvalidJoint`] for a joint of a body to itself, one with
    /// no dynamic side, an axis or normal of no length, a universal joint's parallel axes,
    /// limits or a motor on a joint that is neither a hinge nor a slider, or a lower limit
    /// above the upper.
    pub fn add_joint(&mut self, desc: JointDesc) -> Result<JointHandle> {
        for body in [desc.body_a, desc.body_b] {
            if self.bodies.get(body.index()).is_none() {
                return Err(Error::InvalidHandle {
                    what: "joint body",
                    index: body.0,
                    count: self.bodies.len() as u32,
                });
            }
        }
        let desc = desc.validated()?;
        let dynamic = |b: BodyHandle| self.bodies[b.index()].desc.kind == BodyKind::Dynamic;
        if !dynamic(desc.body_a) && !dynamic(desc.body_b) {
            return Err(Error::InvalidJoint {
                reason: format!("neither body {} nor body {} is dynamic", desc.body_a.index(), desc.body_b.index()),
            });
        }
        let index = u32::try_from(self.joints.len()).map_err(|_| Error::OutOfRange {
            what: "joint count",
            range: "[0, 2^32)",
            value: self.joints.len() as f32,
        })?;
        self.joints.push(desc);
        Ok(JointHandle(index))
    }

    /// Number of joints.
    pub fn joint_count(&self) -> usize {
        self.joints.len()
    }

    /// A joint as stored (a hinge's axis normalized).
    pub fn joint(&self, handle: JointHandle) -> Result<&JointDesc> {
        self.joints.get(handle.index()).ok_or(Error::InvalidHandle {
            what: "joint",
            index: handle.0,
            count: self.joints.len() as u32,
        })
    }

    /// Adds a static plane.
    ///
    /// # Errors
    /// [`Error::NonFinite`] for NaN or infinite values, [`Error::DegenerateShape`] for a zero
    /// normal, [`Error::OutOfRange`] for a bad material.
    pub fn add_plane(&mut self, plane: Plane) -> Result<PlaneHandle> {
        let plane = plane.normalized()?;
        self.planes.push(plane);
        Ok(PlaneHandle(self.planes.len() as u32 - 1))
    }

    /// Number of bodies.
    pub fn body_count(&self) -> usize {
        self.bodies.len()
    }

    /// Whether any contact between bodies, or between a body and a static collider, can
    /// bounce: some body, plane or SDF collider has a restitution above zero (a contact takes
    /// the larger of its two sides'). Without one, a step's restitution passes change nothing,
    /// and both solvers leave them out.
    pub(crate) fn bodies_can_bounce(&self) -> bool {
        self.bodies.iter().any(|b| b.desc.material.restitution > 0.0)
            || self.planes.iter().any(|p| p.material.restitution > 0.0)
            || self.sdfs.iter().any(|s| s.collider.material.restitution > 0.0)
    }

    /// Adds a static collider given by a signed distance field (a bowl, a hollow box, any CSG
    /// of primitives). Bodies meet it point by point, as they meet planes; see [`crate::sdf`].
    ///
    /// # Errors
    /// The field's own errors (see [`Sdf::validate`](crate::Sdf::validate)) and
    /// [`Error::OutOfRange`] for a bad material.
    pub fn add_sdf(&mut self, collider: SdfCollider) -> Result<SdfHandle> {
        collider.sdf.validate()?;
        collider.material.validate()?;
        let program = collider.sdf.compile();
        self.sdfs.push(SdfRecord { collider, program });
        Ok(SdfHandle(self.sdfs.len() as u32 - 1))
    }

    /// Adds a particle; returns its index (particles are read back in this order).
    ///
    /// # Errors
    /// [`Error::NonFinite`] for a NaN or infinite position or velocity, [`Error::NonPositive`]
    /// for a radius or mass that is not positive, [`Error::OutOfRange`] past 2^31 - 1 particles,
    /// for a mass whose inverse overflows f32 or a speed whose square does (past 1.8e19 m/s).
    pub fn add_particle(&mut self, particle: Particle) -> Result<usize> {
        Ok(self.add_particles([particle])?.start)
    }

    /// Adds many particles at once; returns their index range. Either all are added or, when
    /// one is invalid, none.
    ///
    /// # Errors
    /// As [`World::add_particle`], for the first invalid particle.
    pub fn add_particles(&mut self, particles: impl IntoIterator<Item = Particle>) -> Result<std::ops::Range<usize>> {
        let start = self.particles.len();
        for p in particles {
            if let Err(e) = p.validate() {
                self.particles.truncate(start);
                return Err(e);
            }
            self.particles.push(p);
        }
        // A kept contact names a particle by its index plus one, below the collider mark.
        if self.particles.len() >= crate::particles::PARTICLE_CONTACT_COLLIDER as usize {
            let count = self.particles.len();
            self.particles.truncate(start);
            return Err(Error::OutOfRange { what: "particle count", range: "[0, 2^31)", value: count as f32 });
        }
        Ok(start..self.particles.len())
    }

    /// Number of particles.
    pub fn particle_count(&self) -> usize {
        self.particles.len()
    }

    /// The particles as added.
    pub fn particles(&self) -> &[Particle] {
        &self.particles
    }

    /// Number of SDF colliders.
    pub fn sdf_count(&self) -> usize {
        self.sdfs.len()
    }

    /// An SDF collider as given.
    pub fn sdf(&self, handle: SdfHandle) -> Result<&SdfCollider> {
        self.sdfs.get(handle.index()).map(|r| &r.collider).ok_or(Error::InvalidHandle {
            what: "SDF collider",
            index: handle.0,
            count: self.sdfs.len() as u32,
        })
    }

    /// Number of static colliders that every dynamic body is tested against: planes and SDFs.
    pub fn collider_count(&self) -> usize {
        self.planes.len() + self.sdfs.len()
    }

    /// Number of planes.
    pub fn plane_count(&self) -> usize {
        self.planes.len()
    }

    /// The descriptor a body was created with (orientation normalized).
    pub fn body(&self, handle: BodyHandle) -> Result<&RigidBodyDesc> {
        self.record(handle).map(|r| &r.desc)
    }

    /// A body's mass properties.
    pub fn mass_properties(&self, handle: BodyHandle) -> Result<&MassProperties> {
        self.record(handle).map(|r| &r.mass)
    }

    /// A plane as stored (unit normal).
    pub fn plane(&self, handle: PlaneHandle) -> Result<&Plane> {
        self.planes.get(handle.index()).ok_or(Error::InvalidHandle {
            what: "plane",
            index: handle.0,
            count: self.planes.len() as u32,
        })
    }

    fn record(&self, handle: BodyHandle) -> Result<&BodyRecord> {
        self.bodies.get(handle.index()).ok_or(Error::InvalidHandle {
            what: "body",
            index: handle.0,
            count: self.bodies.len() as u32,
        })
    }
}
