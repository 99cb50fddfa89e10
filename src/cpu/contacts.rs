//! Body-body contacts on the CPU: broad phase, pair narrow phase with warm starting, graph
//! coloring, and the colored Gauss-Seidel and mass-splitting Jacobi solves. Each function is
//! the twin of the GPU stage of the same name and produces the same data in the same order.

use glam::{Mat3, Quat, Vec3, Vec4};
use std::marker::PhantomData;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use rayon::prelude::*;

use super::lanes::Simd;
use super::stages::contact_compliance;
use crate::collide::{
    EdgeGroup, FRAME_DRIFT, FRAME_DRIFT_FRACTION, FRAME_MIN_COS, NO_FACE, Posed, RECYCLE_DRIFT, RECYCLE_MIN_AREA,
    RECYCLE_SLIDE_FRACTION, WARM_START_MIN_COS, WARM_START_RADIUS, collide_cached,
};
use crate::coloring::{ColoringScratch, color_graph};
use crate::layout::{
    GpuBody, GpuBodyProps, GpuManifold, GpuManifoldPoint, GpuPair, GpuShape, GpuSolverBody, KIND_DYNAMIC,
    OVERFLOW_COLOR, StepParams,
};
use crate::math::{carry_tangent_impulse, kinetic_energy, rotate, rotate_inv, tangent_basis, world_inverse_inertia};

/// Per-step contact data, kept between steps for warm starting and coloring seeds. The vectors
/// keep their capacity, so a step allocates only when a scene grows.
#[derive(Clone, Debug, Default)]
pub(crate) struct ContactState {
    /// Per body: AABB min (xyz) and how far its spin can move its surface in a step (w).
    aabb_min: Vec<Vec4>,
    /// Per body: AABB max.
    aabb_max: Vec<Vec3>,
    /// The broad phase's grid.
    pub grid: GridSpec,
    /// Per body: its grid item, the key of the cell of its box's lower corner (see
    /// `cell_code`; `LARGE_CODE` for a large body) over the body; sorted.
    cells: Vec<u128>,
    /// Bodies too large for the grid.
    large: Vec<u32>,
    /// The largest extent of a grid body's box on each axis, this step: how far below a box's
    /// lower corner the lower corner of a box that overlaps it can lie.
    grid_extent: Vec3,
    /// Per sorted grid item: its body's AABB, the body and whether it is dynamic, so a cell's
    /// scan reads one contiguous run instead of hopping to each body's AABB.
    sorted: Vec<SortedItem>,
    /// The sorted items' AABBs by groups of four: the x, y and z of the four min corners, then
    /// of the four max corners (lanes past the last item never overlap), so a cell's scan
    /// tests four items at once.
    sorted_bounds: Vec<[Vec4; 6]>,
    /// The sorted items' bodies by the same groups of four (0 past the last item), so that a
    /// scan passes over the bodies before its own, whose scans find those pairs, in the same
    /// test.
    sorted_bodies: Vec<[u32; 4]>,
    /// Per shape: its farthest core point from its centre, m.
    shape_reach: Vec<f32>,
    /// Candidate pairs, sorted by `(a, b)`.
    pub pairs: Vec<GpuPair>,
    /// Per candidate pair: its manifold's index in `previous`, or `u32::MAX`.
    pair_old: Vec<u32>,
    /// Manifolds of this step, in pair order. From the coloring to the end of the step the
    /// passes work on `solving`; [`finish_step`] brings the impulses back here.
    pub manifolds: Vec<GpuManifold>,
    /// Last step's manifolds (warm starting, color seeds).
    previous: Vec<GpuManifold>,
    /// The pairs of polytopes that a face kept apart, with that face (see
    /// [`crate::collide::collide_cached`]), in pair order: this step's, and last step's.
    separated: Vec<(GpuPair, u32)>,
    previous_separated: Vec<(GpuPair, u32)>,
    /// The polytopes' points and face planes in the world, per body from `world_start[i]` to
    /// `world_start[i + 1]` (see [`Posed::world_into`]): filled by the broad phase, read by it and
    /// by the narrow phase.
    world: Vec<Vec4>,
    world_start: Vec<u32>,
    /// Per shape, its polytope points four at a time, from `groups_start[shape]` to
    /// `groups_start[shape + 1]` (see [`Posed::local_groups`]).
    groups: Vec<Vec4>,
    groups_start: Vec<u32>,
    /// Per shape, its polytope edges four at a time, from `edge_groups_start[shape]` to
    /// `edge_groups_start[shape + 1]` (see [`Posed::local_edge_groups`]).
    edge_groups: Vec<EdgeGroup>,
    edge_groups_start: Vec<u32>,
    /// Coloring input and scratch (the conflict graph's adjacency lives here).
    coloring: ColoringScratch,
    pairs_scratch: Vec<[u32; 2]>,
    dynamic: Vec<bool>,
    colors: Vec<u32>,
    /// Manifolds by color (CSR offsets, `max_colors + 1`), then the overflow after them.
    pub color_offsets: Vec<u32>,
    /// Manifold indices bucketed by color, ascending within a color; overflow last.
    pub colored: Vec<u32>,
    /// Per body, how many overflow manifolds touch it (the Jacobi mass split).
    split: Vec<u32>,
    /// The dynamic bodies that overflow manifolds touch, ascending.
    overflow_bodies: Vec<u32>,
    /// Per overflow manifold in `colored` order, the velocity changes of its two sub-bodies:
    /// Δv_a, Δω_a, Δv_b, Δω_b.
    deltas: Vec<[Vec3; 4]>,
    /// Scratch: bucket cursors.
    scratch: Vec<u32>,
    /// This step's manifolds in `colored` order, from the coloring to the end of the step: the
    /// passes visit them in this order, so they stream through memory instead of hopping
    /// across the pair-ordered array. Their impulses live in `impulses` meanwhile;
    /// [`finish_step`] writes the impulses back, and the whole manifold where it can bounce
    /// (nothing else of the others changes).
    solving: Vec<GpuManifold>,
    /// Per manifold in `colored` order, what the preparation reads of it (see
    /// [`PrepareInput`]).
    prepare_inputs: Vec<PrepareInput>,
    /// Per manifold in `colored` order, what its passes read that only positions change (see
    /// [`Prepared`]).
    prepared: Vec<Prepared>,
    /// Per manifold in `colored` order, its impulses from the coloring to the end of the step:
    /// the passes read and write them here, one cache line a manifold where `solving` spreads
    /// them over six. `solving`'s own impulse words are stale in between: a pass that works on
    /// a whole manifold puts them in around its work, and [`finish_step`] puts them all back.
    impulses: Vec<PointImpulses>,
    /// Per manifold in `colored` order, its [`SweepHead`].
    heads: Vec<SweepHead>,
    /// Per manifold in pair order, what the warm start adds to its bodies (see [`WarmPoint`]),
    /// when the warm start is split over threads: computed in lanes, then gathered by each body.
    warm: Vec<[WarmPoint; 4]>,
    /// Per manifold (pair order), its place in `solving`.
    slots: Vec<u32>,
    /// Per body, the world inverse inertia at the current orientation (zero when not dynamic):
    /// impulses then change a body's angular momentum by exactly `r x P`, so a pair conserves
    /// it (the step-start inertia lost 0.6 % per step among tumbling bodies).
    inertia: Vec<Mat3>,
    /// Per body, its motion during a pass: one cache line a manifold reads and writes, where
    /// the body, its properties and its inertia are three.
    motions: Vec<Motion>,
    /// Whether `prepared` and `inertia` are those of the current manifolds and positions.
    prepared_valid: bool,
    /// Per manifold in `colored` order, its bodies' velocities after its last color pass
    /// (v_a, ω_a, v_b, ω_b), stored back to `motions` once the color is done (when a color is
    /// split over threads; on one thread they go back group by group).
    pass_out: Vec<[Vec3; 4]>,
    /// Per color, the index of its first run in a pass split over threads, then the number of
    /// runs (see [`solve_colors_shared`]).
    run_first: Vec<usize>,
    /// Per color, the manifolds per run in a pass split over threads.
    run_size: Vec<usize>,
    /// Per run of a pass split over threads, the worker thread that took it.
    run_taker: Vec<u32>,
    /// Whether any manifold can bounce (`SweepHead::bouncy`).
    any_bouncy: bool,
    /// Whether no two manifolds of one color share a dynamic body (checked after the
    /// coloring), which a pass split over threads needs.
    pub colors_disjoint: bool,
    /// Per candidate pair, the face that kept it apart last step, or `NO_FACE`.
    pair_faces: Vec<u32>,
    /// Per candidate pair, what the narrow phase found on several threads: whether it
    /// touches, and the face that keeps it apart now or `NO_FACE`.
    collided: Vec<(bool, u32)>,
    /// Per candidate pair on several threads, its manifold, written only where the pair
    /// touches (the others keep whatever an earlier step left: 384 bytes a pair not written
    /// for the many pairs that a face keeps apart). Only grows.
    collided_manifolds: Vec<GpuManifold>,
    /// Per run of sorted grid items, the broad phase's pairs before the merge.
    pair_runs: Vec<Vec<GpuPair>>,
    /// Whether the stages split their work over the worker threads of the solver's pool
    /// (rayon): set when there are several.
    pub parallel: bool,
    /// The fewest manifolds per task when a color's pass is split over threads
    /// ([`PARALLEL_RUN`]; tests shorten it so that small scenes split too).
    pub run: usize,
    /// Whether a joint or their collision groups keep some pair of bodies from colliding
    /// (`no_contact`).
    pub no_contact: bool,
}

impl ContactState {
    /// Empty contact state for a scene on broad-phase grid `grid`.
    pub fn new(grid: GridSpec) -> Self {
        Self { grid, run: PARALLEL_RUN, ..Self::default() }
    }

    /// The pairs of the last step that a face kept apart, with that face.
    pub fn separated(&self) -> &[(GpuPair, u32)] {
        &self.separated
    }

    /// The prepared records per manifold (pair order) and the inertia per body, in the GPU's
    /// layout: the points past a manifold's count zeroed (the lane code fills them with what
    /// it computes from zeros), the manifold's own words kept.
    pub fn prepared_records(&self) -> crate::layout::PreparedRecords {
        let manifolds = if self.prepared.len() == self.manifolds.len() {
            self.manifolds
                .iter()
                .zip(&self.slots)
                .map(|(m, &slot)| {
                    let mut words: [f32; crate::layout::PREPARED_MANIFOLD_WORDS] =
                        bytemuck::cast(self.prepared[slot as usize]);
                    for point in words.chunks_exact_mut(16).skip(m.count as usize) {
                        point[..13].fill(0.0);
                    }
                    words
                })
                .collect()
        } else {
            Vec::new()
        };
        let inertia = self
            .inertia
            .iter()
            .map(|i| {
                let c = i.to_cols_array();
                [c[0], c[1], c[2], 0.0, c[3], c[4], c[5], 0.0, c[6], c[7], c[8], 0.0]
            })
            .collect();
        crate::layout::PreparedRecords { manifolds, inertia }
    }

    /// Marks what the passes cached stale: positions or orientations moved.
    pub fn positions_moved(&mut self) {
        self.prepared_valid = false;
    }

    /// Whether the broad phase must filter its pairs for `props`' bodies: some body has a
    /// no-contact list (a joint's) or collision groups other than every group.
    pub fn filters(props: &[GpuBodyProps]) -> bool {
        props.iter().any(|p| p.no_contact_count > 0 || p.not_memberships != 0 || p.not_filter != 0)
    }

    /// Puts back the last step's manifolds and separating faces of a snapshot (checked): what
    /// the next step's narrow phase reads of the step before.
    pub fn restore(&mut self, manifolds: &[GpuManifold], separated: &[crate::snapshot::SeparatingFace]) {
        self.manifolds.clear();
        self.manifolds.extend_from_slice(manifolds);
        self.separated.clear();
        self.separated.extend(separated.iter().map(|&([a, b], face)| (GpuPair { a, b }, face)));
        self.prepared_valid = false;
    }
}

/// What every pass over one manifold reads that depends on positions and masses alone: the
/// tangent basis, the points' lever arms and separations, and the effective masses of the
/// unsplit bodies, with the manifold's normal, friction and point count. Between two position
/// updates these do not change, so the warm start and the iterations of a substep share one
/// computation (the same arithmetic as computing them in each pass: results are bit-identical,
/// and so is the agreement with the GPU). Laid out as 64 `f32`s, sixteen per point, eight rows
/// of eight, which the lane code writes and reads whole by transposing.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub(crate) struct Prepared {
    pub(crate) points: [PreparedPoint; 4],
}
const _: () = assert!(size_of::<Prepared>() == 4 * crate::layout::PREPARED_MANIFOLD_WORDS);

/// What the preparation reads of a manifold, five rows of eight words (160 bytes, where the
/// manifold spreads them over 384): its bodies, point count, whether it keeps its contact frame
/// (1 or 0), normal and friction; then per point its core on A, base separation, core on B
/// and one more word, A's radius in point 0's, B's in point 1's, zero in the others. Built in
/// `colored` order by [`color`]: the lane preparation transposes these rows whole after each
/// position update, and reads less than half the memory it read from the manifolds.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub(crate) struct PrepareInput {
    pub(crate) body_a: u32,
    pub(crate) body_b: u32,
    pub(crate) count: f32,
    pub(crate) frame_kept: f32,
    pub(crate) normal: Vec3,
    pub(crate) friction: f32,
    pub(crate) points: [[f32; 8]; 4],
}
const _: () = assert!(size_of::<PrepareInput>() == 5 * 32);

impl PrepareInput {
    fn new(m: &GpuManifold) -> Self {
        let extra = [m.radius_a, m.radius_b, 0.0, 0.0];
        Self {
            body_a: m.body_a,
            body_b: m.body_b,
            count: m.count as f32,
            frame_kept: m.frame_kept as f32,
            normal: m.normal,
            friction: m.friction,
            points: std::array::from_fn(|k| {
                let c = &m.points[k];
                let (a, b) = (c.core_a, c.core_b);
                [a.x, a.y, a.z, c.base_separation, b.x, b.y, b.z, extra[k]]
            }),
        }
    }
}

/// One point of [`Prepared`]: two rows of eight `f32`s.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub(crate) struct PreparedPoint {
    pub(crate) geo: Geometry,
    /// Its effective masses, with the reciprocals the passes use.
    pub(crate) masses: PointMasses,
    /// Three words of the manifold's: the first tangent in point 0's, the second in point 1's,
    /// the normal in point 2's, the friction and the point count in point 3's (written whatever
    /// the count).
    pub(crate) manifold: [f32; 3],
}
const _: () = assert!(size_of::<PreparedPoint>() == 16 * 4);

impl Prepared {
    /// Sets manifold `m`'s own words: its tangent basis, normal, friction and point count.
    fn set_manifold(&mut self, m: &GpuManifold) {
        let (t1, t2) = tangent_basis(m.normal);
        let words = [t1.to_array(), t2.to_array(), m.normal.to_array(), [m.friction, m.count as f32, 0.0]];
        for (point, words) in self.points.iter_mut().zip(words) {
            point.manifold = words;
        }
    }

    /// The first tangent.
    pub(crate) fn t1(&self) -> Vec3 {
        Vec3::from_array(self.points[0].manifold)
    }

    /// The second tangent.
    pub(crate) fn t2(&self) -> Vec3 {
        Vec3::from_array(self.points[1].manifold)
    }

    /// The normal.
    pub(crate) fn normal(&self) -> Vec3 {
        Vec3::from_array(self.points[2].manifold)
    }

    /// Each point's lever arms and separation.
    pub(crate) fn geo(&self) -> [Geometry; 4] {
        self.points.map(|p| p.geo)
    }

    /// Each point's effective masses.
    pub(crate) fn masses(&self) -> [PointMasses; 4] {
        self.points.map(|p| p.masses)
    }
}

/// A contact point's inverse effective masses as every pass reads them: `k_n` along the normal,
/// and the reciprocals of the normal and tangent ones, so that no pass divides. The GPU's
/// `prepare_manifolds` (shaders/solve_contacts.wgsl) stores the same words in the same places
/// of a [`Prepared`], which its passes read.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
pub(crate) struct PointMasses {
    /// `k_n`, the inverse effective mass along the normal (the soft compliance scales it).
    pub(crate) k_n: f32,
    /// `1 / k_n`.
    pub(crate) normal_mass: f32,
    /// The inverse of the tangent block `[[k11, k12], [k12, k22]]`: its entries (1, 1), minus
    /// (1, 2), and (2, 2), for the sticking Newton step of [`friction_update`].
    pub(crate) newton: [f32; 3],
    /// `1 / λmax` of the tangent block, the sliding projected-gradient step.
    pub(crate) tangent_step: f32,
}

/// [`PointMasses`] from a point's `k_n`, `k11`, `k12`, `k22` ([`effective_masses`]).
#[inline(always)]
pub(crate) fn point_masses([k_n, k11, k12, k22]: [f32; 4]) -> PointMasses {
    let inv_det = 1.0 / (k11 * k22 - k12 * k12);
    PointMasses {
        k_n,
        normal_mass: 1.0 / k_n,
        newton: [k22 * inv_det, k12 * inv_det, k11 * inv_det],
        tangent_step: 1.0 / super::stages::largest_eigenvalue(k11, k12, k22),
    }
}

/// A manifold's accumulated impulses, per point: normal, first tangent, second tangent and the
/// largest normal impulse of the step (the four impulse words of [`GpuManifoldPoint`]).
pub(crate) type PointImpulses = [[f32; 4]; 4];

/// What the warm start adds to a manifold's bodies for one of its points: the point's
/// accumulated impulse `j` on B (its opposite on A), and the changes of A's and B's angular
/// velocities, `I_a (r_a x -j)` and `I_b (r_b x j)`, as [`Motion::apply`] computes them; nine
/// words and three unused, as a row of eight and one of four (what the lane code writes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
pub(crate) struct WarmPoint {
    /// `j`, A's change of angular velocity, and x and y of B's.
    pub(crate) head: [f32; 8],
    /// z of B's change of angular velocity, then three unused words.
    pub(crate) tail: [f32; 4],
}

impl WarmPoint {
    /// A point's terms from its accumulated `impulses`, its manifold's tangents and normal and
    /// its lever arms (`q`), and its bodies' inverse inertia.
    fn new(impulses: &[f32; 4], q: &Prepared, k: usize, ma: &Motion, mb: &Motion) -> Self {
        let [normal, t1, t2, _] = *impulses;
        let j = normal * q.normal() + t1 * q.t1() + t2 * q.t2();
        let g = &q.points[k].geo;
        let (wa, wb) = (ma.inv_inertia * g.ra.cross(-j), mb.inv_inertia * g.rb.cross(j));
        Self { head: [j.x, j.y, j.z, wa.x, wa.y, wa.z, wb.x, wb.y], tail: [wb.z, 0.0, 0.0, 0.0] }
    }

    /// The impulse on B.
    fn impulse(&self) -> Vec3 {
        Vec3::new(self.head[0], self.head[1], self.head[2])
    }

    /// A's change of angular velocity.
    fn turn_a(&self) -> Vec3 {
        Vec3::new(self.head[3], self.head[4], self.head[5])
    }

    /// B's change of angular velocity.
    fn turn_b(&self) -> Vec3 {
        Vec3::new(self.head[6], self.head[7], self.tail[0])
    }
}

/// Manifold `m`'s [`PointImpulses`].
fn impulses_of(m: &GpuManifold) -> PointImpulses {
    m.points.map(|c| [c.normal_impulse, c.tangent_impulse_1, c.tangent_impulse_2, c.max_normal_impulse])
}

/// Puts `impulses` into manifold `m`.
fn set_impulses(m: &mut GpuManifold, impulses: &PointImpulses) {
    for (c, i) in m.points.iter_mut().zip(impulses) {
        [c.normal_impulse, c.tangent_impulse_1, c.tangent_impulse_2, c.max_normal_impulse] = *i;
    }
}

/// Runs `f` on manifold `m` with its step's `impulses` in it, then takes them back out (they
/// live apart from the manifolds during a step: see `ContactState::impulses`).
fn with_impulses(m: &mut GpuManifold, impulses: &mut PointImpulses, f: impl FnOnce(&mut GpuManifold)) {
    set_impulses(m, impulses);
    f(m);
    *impulses = impulses_of(m);
}

/// What a color's sweep reads of a manifold besides its impulses and [`Prepared`]: its bodies,
/// and whether it can bounce (which keeps it out of the lane sweeps).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct SweepHead {
    /// Body A.
    pub a: u32,
    /// Body B.
    pub b: u32,
    /// Whether its restitution is above zero.
    pub bouncy: bool,
    /// Its number of points.
    pub count: u8,
}

/// A grid item of the broad phase in sorted order (see `ContactState::sorted`).
#[derive(Clone, Copy, Debug, Default)]
struct SortedItem {
    lo: Vec3,
    body: u32,
    hi: Vec3,
    dynamic: bool,
    /// The body's centre of mass.
    centre: Vec3,
    /// Its bounding sphere's radius plus how far it can travel in a step: no pair margin
    /// ([`pair_margin`]) is more than the speculative distance plus the pair's two.
    reach: f32,
}

/// How far past its bound ([`SortedItem::reach`]) a squared distance must be before the broad
/// phase passes over the pair without [`spheres_within_margin`]: a relative 1e-4, far above the
/// rounding of either, so only pairs that test would refuse are passed over.
const SPHERE_BOUND_SLACK: f32 = 1.0 + 1e-4;

/// A body's velocity while constraints act on it, and how impulses change it: 64 bytes, two
/// rows of eight `f32`s, which the lane sweeps load by transposing.
#[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C, align(64))]
pub(crate) struct Motion {
    pub v: Vec3,
    pub w: Vec3,
    pub inv_mass: f32,
    pub inv_inertia: Mat3,
}

impl Motion {
    #[inline]
    pub(crate) fn apply(&mut self, r: Vec3, impulse: Vec3) {
        self.v += self.inv_mass * impulse;
        self.w += self.inv_inertia * r.cross(impulse);
    }

    /// [`Motion::apply`] with its angular change computed beforehand (`turn`, see
    /// [`WarmPoint`]): the same additions.
    #[inline]
    fn apply_turn(&mut self, impulse: Vec3, turn: Vec3) {
        self.v += self.inv_mass * impulse;
        self.w += turn;
    }

    /// `impulse` applied at `count` points at once, `levers` the sum of their lever arms: what
    /// `count` calls of [`Motion::apply`] add up to, with one product by the inertia.
    #[inline]
    pub(crate) fn apply_sum(&mut self, levers: Vec3, count: f32, impulse: Vec3) {
        self.v += (count * self.inv_mass) * impulse;
        self.w += self.inv_inertia * levers.cross(impulse);
    }

    /// The velocity of the point at lever `r`.
    #[inline]
    fn at(&self, r: Vec3) -> Vec3 {
        self.v + self.w.cross(r)
    }

    /// `(r x d) · I⁻¹ (r x e)`, the rotational part of an effective mass entry.
    #[inline]
    fn rotational(&self, r: Vec3, d: Vec3, e: Vec3) -> f32 {
        r.cross(d).dot(self.inv_inertia * r.cross(e))
    }
}

/// Soft-constraint coefficients of one contact: (velocity bias, mass scale, impulse scale).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Soft {
    pub bias_rate: f32,
    pub mass_scale: f32,
    pub impulse_scale: f32,
}

/// Everything a contact stage reads besides the contact state.
pub(crate) struct BodyView<'a> {
    pub params: &'a StepParams,
    pub bodies: &'a mut [GpuBody],
    pub props: &'a [GpuBodyProps],
    pub shapes: &'a [GpuShape],
    pub geometry: &'a [Vec4],
    pub topology: &'a [u32],
    pub solver_bodies: &'a [GpuSolverBody],
    /// The lane code the solver runs.
    pub simd: Simd,
}

fn dynamic(props: &GpuBodyProps) -> bool {
    props.kind == KIND_DYNAMIC
}

/// Largest grid cell coordinate, 2^23: f32 holds every integer up to it.
pub const GRID_CELL_LIMIT: f32 = 8_388_608.0;

/// Scenes of at most this many bodies use the brute-force broad phase (every pair).
pub const BRUTE_FORCE_BODIES: u32 = 64;

/// The widest AABB, as a fraction of the cell edge, that goes into the grid (wider ones go to
/// the large list). Below 1, so a grid body overlaps the 3 x 3 x 3 cells its queries cover.
pub const GRID_FIT: f32 = 0.99;

/// The relative slack on the largest extent when the grid scan bounds how far below a box an
/// overlapping box can start: 2⁻²⁰, sixteen times the roundings it covers.
const GRID_EXTENT_SLACK: f32 = 1.0 / 1_048_576.0;

/// Multipliers of the GPU's cell hash, one per axis (large primes, Teschner et al. 2003).
pub const GRID_HASH: [u32; 3] = [73_856_093, 19_349_663, 83_492_791];

/// The broad phase's uniform grid, chosen once per scene from its shapes.
///
/// A body goes into the cell of its AABB's min corner when the AABB is no wider than
/// `GRID_FIT cell_size` on every axis; a body it overlaps then has its min corner in one of the
/// 3 x 3 x 3 cells from `min - cell_size` to `max`. Wider bodies (a large body among small
/// ones, or one moving fast) go to a list that every body checks, so one body 100 times
/// larger than its neighbours costs a loop over a short list instead of filling the grid.
/// On the GPU, cells are hashed into a table of a power of two at least twice the body count
/// (a hash collision costs AABB tests, never a missed pair), so each thread finds a cell's
/// items in one lookup. The CPU sorts the items by cell instead, row by row, and scans them in
/// that order (see `grid_pairs`): a body's neighbours then lie near it in memory, where hashed
/// buckets lie anywhere in a table that outgrows the caches. Both find every pair whose boxes
/// overlap, and list the same pairs.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct GridSpec {
    /// Cell edge, m: 1.5 times the 95th percentile of the dynamic bodies' bounding diameters
    /// plus the speculative distance, so bodies moving up to a quarter of their size a step
    /// stay in the grid.
    pub cell_size: f32,
    /// `1 / cell_size` (cells are found by a correctly rounded multiply, the same on every
    /// adapter).
    pub inv_cell: f32,
    /// The GPU's hash table size minus one.
    pub hash_mask: u32,
    /// Tiny scenes test every pair.
    pub brute_force: bool,
}

impl GridSpec {
    /// The grid for these bodies.
    pub fn new(props: &[GpuBodyProps], shapes: &[GpuShape], geometry: &[Vec4], speculative_distance: f32) -> Self {
        let mut diameters: Vec<f32> = props
            .iter()
            .filter(|p| dynamic(p))
            .map(|p| {
                let sh = &shapes[p.shape as usize];
                let points = &geometry[sh.first_point as usize..(sh.first_point + sh.point_count) as usize];
                let reach = points.iter().map(|q| q.truncate().length()).fold(0.0_f32, f32::max);
                2.0 * (reach + sh.radius)
            })
            .collect();
        diameters.sort_by(f32::total_cmp);
        let p95 = diameters.get((diameters.len().saturating_sub(1) as f32 * 0.95) as usize).copied().unwrap_or(1.0);
        let cell_size = (1.5 * p95 + speculative_distance).max(1e-3);
        let n = props.len() as u32;
        Self {
            cell_size,
            inv_cell: 1.0 / cell_size,
            hash_mask: (2 * n).next_power_of_two().max(64) - 1,
            brute_force: n <= BRUTE_FORCE_BODIES,
        }
    }

    /// Whether an AABB fits the grid (a NaN extent does not: such a body goes to the large
    /// list).
    pub fn fits(&self, lo: Vec3, hi: Vec3) -> bool {
        (hi - lo).cmple(Vec3::splat(GRID_FIT * self.cell_size)).all()
    }

    /// The cell holding `p`, clamped to `±GRID_CELL_LIMIT` where f32 still holds every integer
    /// (bodies beyond share the boundary cell, which every query near them covers).
    pub fn cell(&self, p: Vec3) -> [i32; 3] {
        let c = floor_cells(p * self.inv_cell).clamp(Vec3::splat(-GRID_CELL_LIMIT), Vec3::splat(GRID_CELL_LIMIT));
        [c.x as i32, c.y as i32, c.z as i32]
    }
}

/// `c.floor()` as [`GridSpec::cell`] uses it, without the libm call that `f32::floor` is on
/// an x86-64 target without SSE4.1 (the default), which the grid's three cells a body a step
/// made 2 % of a 10,000-box pile's step: truncation toward zero, one down for a negative
/// non-integer. Exact below 2^31; beyond, and at infinities, it saturates past
/// `GRID_CELL_LIMIT`, and NaN gives 0, as `floor` then the clamp and the cast do.
#[inline]
fn floor_cells(c: Vec3) -> Vec3 {
    let one = |x: f32| {
        let t = x as i32 as f32;
        if t > x { t - 1.0 } else { t }
    };
    Vec3::new(one(c.x), one(c.y), one(c.z))
}

/// The world points and planes (`world`, from `world_start[first]` on) and the bounds of bodies
/// `first..first + aabb_min.len()`, each body on its own: split in halves over threads when
/// `parallel`.
#[allow(clippy::too_many_arguments)]
fn body_bounds(
    w: &BodyView,
    shape_reach: &[f32],
    first: usize,
    world_start: &[u32],
    world: &mut [Vec4],
    aabb_min: &mut [Vec4],
    aabb_max: &mut [Vec3],
    parallel: bool,
) {
    let count = aabb_min.len();
    if parallel && count > super::stages::PARALLEL_BODIES {
        let half = count / 2;
        let split = (world_start[first + half] - world_start[first]) as usize;
        let (world_lo, world_hi) = world.split_at_mut(split);
        let (min_lo, min_hi) = aabb_min.split_at_mut(half);
        let (max_lo, max_hi) = aabb_max.split_at_mut(half);
        rayon::join(
            || body_bounds(w, shape_reach, first, world_start, world_lo, min_lo, max_lo, parallel),
            || body_bounds(w, shape_reach, first + half, world_start, world_hi, min_hi, max_hi, parallel),
        );
        return;
    }
    let p = w.params;
    let base = world_start[first] as usize;
    for (k, (lo_out, hi_out)) in aabb_min.iter_mut().zip(aabb_max.iter_mut()).enumerate() {
        let i = first + k;
        let b = &w.bodies[i];
        let sh = &w.shapes[w.props[i].shape as usize];
        let start = world_start[i] as usize - base;
        let own = &mut world[start..world_start[i + 1] as usize - base];
        // `Posed::world_into`, in SIMD lanes (the same bits).
        let first_point = sh.first_point as usize;
        let (points, planes) = w.geometry[first_point..].split_at(sh.point_count as usize);
        if !own.is_empty() {
            super::lanes::polytope_world(
                w.simd,
                b.orientation,
                b.position,
                points,
                &planes[..sh.face_count as usize],
                own,
            );
        }
        let cached = !own.is_empty();
        let (mut lo, mut hi) = (Vec3::splat(f32::MAX), Vec3::splat(f32::MIN));
        for (k, local) in points.iter().enumerate() {
            let x = if cached { own[k].truncate() } else { b.position + rotate(b.orientation, local.truncate()) };
            lo = lo.min(x);
            hi = hi.max(x);
        }
        let reach = shape_reach[w.props[i].shape as usize];
        // The AABB grows by how far any point of the body can move in a step; the pair's
        // contact margin (`collide_pairs`) uses the pair's relative velocity and each body's
        // spin, kept in `w`.
        let spin = p.dt * (b.angular_velocity.length() * (reach + sh.radius));
        let travel = p.dt * (b.linear_velocity.length() + b.angular_velocity.length() * (reach + sh.radius));
        let margin = 0.5 * p.speculative_distance + travel;
        *lo_out = (lo - Vec3::splat(sh.radius + margin)).extend(spin);
        *hi_out = hi + Vec3::splat(sh.radius + margin);
    }
}

/// AABBs of every body (core points swept by the radius) grown by a margin of half the
/// speculative distance plus the distance the body can travel in a step, then every pair
/// whose boxes overlap, whose bounding spheres come within the pair margin
/// ([`spheres_within_margin`]) and that has a dynamic body, sorted by `(a, b)`: from a uniform
/// grid whose items are sorted by cell, and a list of large bodies (see [`GridSpec`]), or every
/// pair in a tiny scene. The GPU runs the same grid through a hash table after a radix sort
/// and sorts its pairs; both produce exactly this list.
pub(crate) fn broad_phase(w: &BodyView, cs: &mut ContactState) {
    let p = w.params;
    let n = p.body_count as usize;
    // Each polytope's world points and face planes, for its bounds here and for all of its
    // pairs in the narrow phase (`collide_pairs`), which runs at the same positions.
    cs.world_start.clear();
    let mut total = 0;
    for props in &w.props[..n] {
        cs.world_start.push(total);
        total += Posed::world_len(&w.shapes[props.shape as usize]);
    }
    cs.world_start.push(total);
    cs.world.clear();
    cs.world.resize(total as usize, Vec4::ZERO);
    cs.aabb_min.clear();
    cs.aabb_min.resize(n, Vec4::ZERO);
    cs.aabb_max.clear();
    cs.aabb_max.resize(n, Vec3::ZERO);
    let parallel = cs.parallel;
    // Each shape's reach (its farthest core point from its centre), once: shapes never change.
    if cs.shape_reach.len() != w.shapes.len() {
        cs.shape_reach.clear();
        cs.shape_reach.extend(w.shapes.iter().map(|sh| {
            let points = &w.geometry[sh.first_point as usize..(sh.first_point + sh.point_count) as usize];
            points.iter().map(|p| p.truncate().length()).fold(0.0_f32, f32::max)
        }));
    }
    let reach = &cs.shape_reach;
    body_bounds(w, reach, 0, &cs.world_start, &mut cs.world, &mut cs.aabb_min, &mut cs.aabb_max, parallel);
    cs.pairs.clear();
    let grid = cs.grid;
    if grid.brute_force {
        for i in 0..n {
            for j in i + 1..n {
                if overlaps(w, cs, i, j) && !no_contact(w, i as u32, j as u32) {
                    cs.pairs.push(GpuPair { a: i as u32, b: j as u32 });
                }
            }
        }
        return;
    }
    cs.cells.clear();
    cs.large.clear();
    cs.grid_extent = Vec3::ZERO;
    for i in 0..n {
        let (lo, hi) = (cs.aabb_min[i].truncate(), cs.aabb_max[i]);
        if grid.fits(lo, hi) {
            let [x, y, z] = grid.cell(lo);
            cs.cells.push(cell_code(x, y, z) << 32 | i as u128);
            cs.grid_extent = cs.grid_extent.max(hi - lo);
        } else {
            cs.cells.push(LARGE_CODE << 32 | i as u128);
            cs.large.push(i as u32);
        }
    }
    // Row by row (z, then y, then x): a row of cells is one contiguous run, and the rows
    // that a box reaches lie in the order of its own cell. Large bodies sort last.
    if parallel {
        cs.cells.par_sort_unstable();
    } else {
        cs.cells.sort_unstable();
    }
    cs.sorted.clear();
    cs.sorted.extend(cs.cells.iter().map(|&item| {
        let j = item as u32 as usize;
        let (b, shape) = (&w.bodies[j], w.props[j].shape as usize);
        let sphere = cs.shape_reach[shape] + w.shapes[shape].radius;
        // `body_bounds`' travel: the linear speed and the spin over the step.
        let travel = p.dt * (b.linear_velocity.length() + b.angular_velocity.length() * sphere);
        SortedItem {
            lo: cs.aabb_min[j].truncate(),
            body: j as u32,
            hi: cs.aabb_max[j],
            dynamic: dynamic(&w.props[j]),
            centre: b.position,
            reach: sphere + travel,
        }
    }));
    cs.sorted_bounds.clear();
    cs.sorted_bounds.extend(cs.sorted.chunks(4).map(|items| {
        let lane = |f: &dyn Fn(&SortedItem) -> f32, none: f32| {
            Vec4::from_array(std::array::from_fn(|l| items.get(l).map_or(none, f)))
        };
        let (inf, ninf) = (f32::INFINITY, f32::NEG_INFINITY);
        [
            lane(&|o| o.lo.x, inf),
            lane(&|o| o.lo.y, inf),
            lane(&|o| o.lo.z, inf),
            lane(&|o| o.hi.x, ninf),
            lane(&|o| o.hi.y, ninf),
            lane(&|o| o.hi.z, ninf),
        ]
    }));
    cs.sorted_bodies.clear();
    cs.sorted_bodies
        .extend(cs.sorted.chunks(4).map(|items| std::array::from_fn(|l| items.get(l).map_or(0, |o| o.body))));
    // Each sorted item's pairs, in runs of items over the threads; the sort below makes the
    // list independent of how the runs were cut.
    let mut found = std::mem::take(&mut cs.pair_runs);
    let runs = if parallel { 4 * rayon::current_num_threads() } else { 1 };
    found.resize_with(runs, Vec::new);
    let per_run = n.div_ceil(runs);
    let scan = |(r, out): (usize, &mut Vec<GpuPair>)| {
        out.clear();
        let mut rows = RowCursors::default();
        for k in (r * per_run).min(n)..((r + 1) * per_run).min(n) {
            grid_pairs(w, cs, k, &mut rows, out);
        }
    };
    if parallel {
        found.par_iter_mut().enumerate().for_each(scan);
    } else {
        found.iter_mut().enumerate().for_each(scan);
    }
    for run in &found {
        cs.pairs.extend_from_slice(run);
    }
    cs.pair_runs = found;
    if cs.no_contact {
        cs.pairs.retain(|p| !no_contact(w, p.a, p.b));
    }
    if parallel {
        cs.pairs.par_sort_unstable();
    } else {
        cs.pairs.sort_unstable();
    }
}

/// Whether bodies `a` and `b` may not collide: a joint keeps them apart (`b` in `a`'s list) or
/// their collision groups do. Twin of `no_contact` and `groups_interact` in
/// shaders/broad_phase.wgsl, which `is_pair` checks; here the broad phase's pairs are filtered
/// once they are found.
fn no_contact(w: &BodyView, a: u32, b: u32) -> bool {
    let (pa, pb) = (&w.props[a as usize], &w.props[b as usize]);
    w.topology[pa.no_contact_first as usize..][..pa.no_contact_count as usize].contains(&b) || !pa.groups_interact(pb)
}

/// Whether bodies `i` and `j` are a candidate pair: their AABBs overlap and one is dynamic.
fn overlaps(w: &BodyView, cs: &ContactState, i: usize, j: usize) -> bool {
    let (lo_i, hi_i, lo_j, hi_j) =
        (cs.aabb_min[i].truncate(), cs.aabb_max[i], cs.aabb_min[j].truncate(), cs.aabb_max[j]);
    lo_j.cmple(hi_i).all()
        && lo_i.cmple(hi_j).all()
        && (dynamic(&w.props[i]) || dynamic(&w.props[j]))
        && spheres_within_margin(w, cs, i, j)
}

/// Whether two bodies' bounding spheres (about their centres, `ContactState::shape_reach` plus
/// the radius) come within their pair margin ([`pair_margin`]): past it no contact can be,
/// however the boxes grown by each body's travel overlap (bodies falling together travel far
/// and close nothing). Symmetric in `i` and `j`, bit for bit (`pair_margin` is, and the radii
/// are summed before they are taken off). Twin of `spheres_within_margin` in
/// shaders/broad_phase.wgsl.
fn spheres_within_margin(w: &BodyView, cs: &ContactState, i: usize, j: usize) -> bool {
    let (a, b) = (&w.bodies[i], &w.bodies[j]);
    let sphere = |k: usize| {
        let shape = w.props[k].shape as usize;
        cs.shape_reach[shape] + w.shapes[shape].radius
    };
    let margin = pair_margin(w.params, a, b, cs.aabb_min[i].w, cs.aabb_min[j].w);
    (b.position - a.position).length() - (sphere(i) + sphere(j)) < margin
}

/// Cell `(x, y, z)` as a sort key: z, y then x, each with its sign bit flipped so that
/// unsigned order is the coordinates' order. A grid item is its cell's key shifted up 32 bits,
/// over its body.
fn cell_code(x: i32, y: i32, z: i32) -> u128 {
    let key = |c: i32| u128::from((c as u32) ^ 0x8000_0000);
    key(z) << 64 | key(y) << 32 | key(x)
}

/// The cell `[x, y, z]` of a [`cell_code`].
fn code_cell(code: u128) -> [i32; 3] {
    [0, 32, 64].map(|shift| ((code >> shift) as u32 ^ 0x8000_0000) as i32)
}

/// The cell key of large bodies, past every cell's (`GridSpec::cell` clamps coordinates to
/// `±GRID_CELL_LIMIT`).
const LARGE_CODE: u128 = (1 << 96) - 1;

/// Per row of cells near the scanning item (z and y offsets from -2 to 2), where that row's
/// scan began last: the items of a run are scanned in cell order, so the rows that they reach
/// come in order too, and each row's start moves only forward, through items already near in
/// memory, instead of a search or a hash-table lookup per cell.
struct RowCursors {
    at: [usize; 25],
}

impl Default for RowCursors {
    fn default() -> Self {
        Self { at: [usize::MAX; 25] }
    }
}

impl RowCursors {
    /// The first sorted grid item (of `cells`, large bodies last) whose cell is at or past
    /// `key` (z, y, x), for the row `dz`, `dy` from the scanning item's cell: advanced from
    /// the row's last start when that start lies before `key`, else found by a binary search
    /// (the first use in a run, a row out of the offsets kept, or a key before the last one).
    fn seek(&mut self, cells: &[u128], dz: i32, dy: i32, key: u128) -> usize {
        let before = |&item: &u128| item >> 32 < key;
        let slot = ((dz + 2) * 5 + dy + 2) as usize;
        let search = || cells.partition_point(before);
        if !(-2..=2).contains(&dz) || !(-2..=2).contains(&dy) {
            return search();
        }
        let mut at = self.at[slot];
        if at == usize::MAX || (at > 0 && !before(&cells[at - 1])) {
            at = search();
        } else {
            while at < cells.len() && before(&cells[at]) {
                at += 1;
            }
        }
        self.at[slot] = at;
        at
    }
}

/// The candidate pairs of sorted grid item `k` (see [`broad_phase`]), appended to `out`: the
/// bodies after it in the cells its AABB can reach, and the large bodies.
fn grid_pairs(w: &BodyView, cs: &ContactState, k: usize, rows: &mut RowCursors, out: &mut Vec<GpuPair>) {
    let (p, grid) = (w.params, cs.grid);
    let overlaps = |i: usize, j: usize| overlaps(w, cs, i, j);
    let (code, i) = (cs.cells[k] >> 32, cs.cells[k] as u32);
    let iu = i as usize;
    let me = cs.sorted[k];
    if code != LARGE_CODE {
        // A box that overlaps this one has its lower corner, and so its cell, no lower than
        // this box's lower corner less the largest extent (less a margin for the roundings of
        // the extents and of this subtraction), and never lower than a cell below.
        let extent = cs.grid_extent;
        let back = (extent + (extent + me.lo.abs()) * GRID_EXTENT_SLACK).min(Vec3::splat(grid.cell_size));
        let from = grid.cell(me.lo - back);
        let to = grid.cell(me.hi);
        let own = code_cell(code);
        let splat = |v: Vec3| [Vec4::splat(v.x), Vec4::splat(v.y), Vec4::splat(v.z)];
        let ([lo_x, lo_y, lo_z], [hi_x, hi_y, hi_z]) = (splat(me.lo), splat(me.hi));
        let last_x = to[0].min(from[0] + 3);
        for z in from[2]..=to[2].min(from[2] + 3) {
            for y in from[1]..=to[1].min(from[1] + 3) {
                // The row's cells from `from.x` to `last_x`: one run of sorted items. Its start
                // is sought from the cell before this item's own, whose place in the row only
                // moves forward from item to item.
                let row_start = cell_code(own[0].saturating_sub(1), y, z);
                let mut start = rows.seek(&cs.cells, z - own[2], y - own[1], row_start);
                let (first_cell, last_cell) = (cell_code(from[0], y, z), cell_code(last_x, y, z));
                while start > 0 && cs.cells[start - 1] >> 32 >= first_cell {
                    start -= 1;
                }
                while start < cs.cells.len() && cs.cells[start] >> 32 < first_cell {
                    start += 1;
                }
                let mut end = start;
                while end < cs.cells.len() && cs.cells[end] >> 32 <= last_cell {
                    end += 1;
                }
                let mut e = start;
                while e < end {
                    // `overlaps`, on four sorted items at once: the AABB test in lanes, then
                    // the rest for the items that pass.
                    let g = e / 4;
                    let [o_lo_x, o_lo_y, o_lo_z, o_hi_x, o_hi_y, o_hi_z] = cs.sorted_bounds[g];
                    let boxes = o_lo_x.cmple(hi_x)
                        & o_lo_y.cmple(hi_y)
                        & o_lo_z.cmple(hi_z)
                        & lo_x.cmple(o_hi_x)
                        & lo_y.cmple(o_hi_y)
                        & lo_z.cmple(o_hi_z);
                    // The lanes of this group inside the run, with bodies after this one.
                    let (first, last) = (e - 4 * g, (end - 4 * g).min(4));
                    let bodies = cs.sorted_bodies[g];
                    let later = (0..4).fold(0, |bits, l| bits | (u32::from(bodies[l] > i) << l));
                    let mut hits = boxes.bitmask() & later & ((1 << last) - 1) & !((1 << first) - 1);
                    while hits != 0 {
                        let o = cs.sorted[4 * g + hits.trailing_zeros() as usize];
                        hits &= hits - 1;
                        // Spheres farther apart than any margin allows, passed over before the
                        // exact test's square roots (most of a falling heap's hits).
                        let bound = p.speculative_distance + me.reach + o.reach;
                        if (me.dynamic || o.dynamic)
                            && (o.centre - me.centre).length_squared() < SPHERE_BOUND_SLACK * bound * bound
                            && spheres_within_margin(w, cs, iu, o.body as usize)
                        {
                            out.push(GpuPair { a: i, b: o.body });
                        }
                    }
                    e = 4 * g + 4;
                }
            }
        }
        for &j in &cs.large {
            if overlaps(iu, j as usize) {
                out.push(GpuPair { a: i.min(j), b: i.max(j) });
            }
        }
    } else {
        for &j in &cs.large {
            if j > i && overlaps(iu, j as usize) {
                out.push(GpuPair { a: i, b: j });
            }
        }
    }
}

/// The distance within which a pair gets speculative contacts, m: the speculative distance,
/// each one's spin (`spin_a`, `spin_b`: `dt |ω| (reach + radius)`), and how far the two can
/// close in a step: the larger of their relative speed and each one's speed along the line
/// between their centres, since either may be stopped by another contact within the step
/// (two boxes falling onto the ground one above the other: the lower one stops, the upper one
/// keeps its speed). Bodies falling side by side close nothing either way, so they make no
/// contacts, where the sum of the two bodies' travels made one between every pair of
/// neighbours. It is never more than that sum. Twin of `pair_margin` in shaders/pairs.wgsl.
pub(crate) fn pair_margin(p: &StepParams, a: &GpuBody, b: &GpuBody, spin_a: f32, spin_b: f32) -> f32 {
    let d = b.position - a.position;
    let len = d.length();
    let u = if len > 0.0 { d / len } else { Vec3::ZERO };
    let alone = a.linear_velocity.dot(u).abs().max(b.linear_velocity.dot(u).abs());
    let closing = (b.linear_velocity - a.linear_velocity).length().max(alone);
    p.speculative_distance + p.dt * closing + (spin_a + spin_b)
}

/// The contacts of every candidate pair, as manifolds in pair order (pairs without contacts
/// leave none). A contact whose pair and feature key were in contact last step starts from
/// last step's impulses and the manifold keeps its color as the coloring's seed.
pub(crate) fn collide_pairs(w: &BodyView, cs: &mut ContactState) {
    let p = w.params;
    std::mem::swap(&mut cs.previous, &mut cs.manifolds);
    cs.manifolds.clear();
    std::mem::swap(&mut cs.previous_separated, &mut cs.separated);
    cs.separated.clear();
    cs.prepared_valid = false;
    // The world points and planes of each polytope come from the broad phase, at these positions.
    debug_assert_eq!(cs.world_start.len(), p.body_count as usize + 1);
    // Each shape's points and edges four at a time, once (shapes never change).
    if cs.groups_start.len() != w.shapes.len() + 1 {
        cs.groups.clear();
        cs.groups_start.clear();
        cs.edge_groups.clear();
        cs.edge_groups_start.clear();
        for shape in w.shapes {
            cs.groups_start.push(cs.groups.len() as u32);
            cs.edge_groups_start.push(cs.edge_groups.len() as u32);
            if crate::collide::is_polytope(shape) {
                Posed::local_groups(shape, w.geometry, &mut cs.groups);
                Posed::new(shape, Vec3::ZERO, Quat::IDENTITY, w.geometry, w.topology)
                    .local_edge_groups(&mut cs.edge_groups);
            }
        }
        cs.groups_start.push(cs.groups.len() as u32);
        cs.edge_groups_start.push(cs.edge_groups.len() as u32);
    }
    // Last step's separating face of each pair: both lists are in pair order, one cursor
    // walks the separated pairs.
    let mut cursor = 0;
    cs.pair_faces.clear();
    for pair in &cs.pairs {
        let key = (pair.a, pair.b);
        while cs.previous_separated.get(cursor).is_some_and(|(q, _)| (q.a, q.b) < key) {
            cursor += 1;
        }
        cs.pair_faces.push(match cs.previous_separated.get(cursor) {
            Some(&(q, face)) if (q.a, q.b) == key => face,
            _ => NO_FACE,
        });
    }
    // Last step's manifold of each pair, the same way (both in pair order): an index into
    // `previous`, or `u32::MAX`.
    let mut cursor = 0;
    cs.pair_old.clear();
    for pair in &cs.pairs {
        let key = (pair.a, pair.b);
        while cs.previous.get(cursor).is_some_and(|m| (m.body_a, m.body_b) < key) {
            cursor += 1;
        }
        cs.pair_old.push(match cs.previous.get(cursor) {
            Some(m) if (m.body_a, m.body_b) == key => cursor as u32,
            _ => u32::MAX,
        });
    }
    if !cs.parallel {
        // One thread: each pair's manifold is written in place at the end of the list and
        // kept only where the pair touches, with no per-pair slots to copy from.
        let (mut manifolds, mut separated) = (std::mem::take(&mut cs.manifolds), std::mem::take(&mut cs.separated));
        let cs_read = &*cs;
        for (k, &pair) in cs_read.pairs.iter().enumerate() {
            manifolds.push(GpuManifold::default());
            let out = manifolds.last_mut().expect("just pushed");
            let (touching, face) = collide_pair(w, cs_read, pair, cs_read.pair_faces[k], cs_read.pair_old[k], out);
            if !touching {
                manifolds.pop();
            }
            if face != NO_FACE {
                separated.push((pair, face));
            }
        }
        (cs.manifolds, cs.separated) = (manifolds, separated);
        return;
    }
    // Each pair on its own, split over threads, then the results in pair order.
    let (mut collided, mut manifolds) = (std::mem::take(&mut cs.collided), std::mem::take(&mut cs.collided_manifolds));
    let count = cs.pairs.len();
    if manifolds.len() < count {
        manifolds.resize(count, GpuManifold::default());
    }
    collided.clear();
    collided.resize(count, (false, NO_FACE));
    let cs_read = &*cs;
    let one = |(k, (m, out)): (usize, (&mut GpuManifold, &mut (bool, u32)))| {
        *out = collide_pair(w, cs_read, cs_read.pairs[k], cs_read.pair_faces[k], cs_read.pair_old[k], m);
    };
    use rayon::prelude::*;
    // In pieces of at most 256 pairs: rayon stops halving a range after a few splits unless a
    // piece is stolen, and the costly pairs bunch up (the bottom of a pile), so without the cap
    // one thread took most of them (the convex pile on two threads: 3.8 ms of pair tests on
    // one, 1.1 on the other).
    manifolds[..count].par_iter_mut().zip(&mut collided).enumerate().with_min_len(64).with_max_len(256).for_each(one);
    for ((pair, &(touching, face)), m) in cs.pairs.iter().zip(&collided).zip(&manifolds) {
        if face != NO_FACE {
            cs.separated.push((*pair, face));
        }
        if touching {
            cs.manifolds.push(*m);
        }
    }
    (cs.collided, cs.collided_manifolds) = (collided, manifolds);
}

/// Whether one candidate pair touches, with its manifold and warm start then written to `out`
/// (else `out` is left as it was), and the face that keeps it apart or `NO_FACE`; `face` is
/// last step's, `old` the index of last step's manifold of the pair in `cs.previous` or
/// `u32::MAX`.
fn collide_pair(
    w: &BodyView,
    cs: &ContactState,
    pair: GpuPair,
    face: u32,
    old: u32,
    out: &mut GpuManifold,
) -> (bool, u32) {
    let p = w.params;
    let (a, b) = (pair.a as usize, pair.b as usize);
    let cached = |i: usize| {
        let shape = w.props[i].shape as usize;
        Posed {
            world: &cs.world[cs.world_start[i] as usize..cs.world_start[i + 1] as usize],
            groups: &cs.groups[cs.groups_start[shape] as usize..cs.groups_start[shape + 1] as usize],
            edge_groups: &cs.edge_groups
                [cs.edge_groups_start[shape] as usize..cs.edge_groups_start[shape + 1] as usize],
            ..Posed::new(&w.shapes[shape], w.bodies[i].position, w.bodies[i].orientation, w.geometry, w.topology)
        }
    };
    let (pa, pb) = (cached(a), cached(b));
    let margin = pair_margin(p, &w.bodies[a], &w.bodies[b], cs.aabb_min[a].w, cs.aabb_min[b].w);
    let (ba, bb) = (&w.bodies[a], &w.bodies[b]);
    // Which side falls: the relative acceleration along a normal is its gravity times this.
    let falls = (dynamic(&w.props[b]) as u32 as f32) - (dynamic(&w.props[a]) as u32 as f32);
    let old = cs.previous.get(old as usize);
    if let Some(old) = old
        && let Some(mut m) = recycle(p, old, ba, bb, margin, falls)
    {
        warm_start(old, &mut m, p.warm_start_scale);
        *out = m;
        return (true, NO_FACE);
    }
    let (contact, face) = collide_cached(&pa, &pb, margin, face);
    if contact.count == 0 {
        return (false, face);
    }
    let n = contact.normal;
    let gravity_n = n.dot(p.gravity) * falls;
    // Built where it goes (a 384-byte manifold not copied there after).
    *out = GpuManifold {
        body_a: pair.a,
        body_b: pair.b,
        count: contact.count as u32,
        color: old.map_or(OVERFLOW_COLOR, |o| o.color),
        normal: n,
        friction: (w.props[a].friction * w.props[b].friction).sqrt(),
        restitution: w.props[a].restitution.max(w.props[b].restitution),
        radius_a: pa.shape.radius,
        radius_b: pb.shape.radius,
        ..GpuManifold::default()
    };
    let m = out;
    for (k, c) in contact.points[..contact.count].iter().enumerate() {
        let (ra, rb) = (c.core_a + n * m.radius_a, c.core_b - n * m.radius_b);
        let vn = n.dot(
            (bb.linear_velocity + bb.angular_velocity.cross(rb)) - (ba.linear_velocity + ba.angular_velocity.cross(ra)),
        );
        m.points[k] = GpuManifoldPoint {
            core_a: c.core_a,
            base_separation: c.separation - n.dot(c.core_b - c.core_a),
            core_b: c.core_b,
            approach_velocity: super::stages::approach_velocity(vn, c.separation, gravity_n),
            key: c.key,
            ..GpuManifoldPoint::default()
        };
    }
    if polytopes(m) && !old.is_some_and(|old| keep_frame(old, m, ba, bb)) {
        fresh_frame(m, ba, bb);
    }
    if let Some(old) = old {
        warm_start(old, m, p.warm_start_scale);
    }
    (true, face)
}

/// Takes a new contact frame for a polytope manifold as the narrow phase found it (cores on
/// each body's surface): each point's anchors are its surface points in the bodies' frames,
/// and both cores move to the midpoint of the two surface points (the lever arms of
/// `geometry`), the separation kept. Twin of `fresh_frame` in shaders/manifolds.wgsl.
pub(crate) fn fresh_frame(m: &mut GpuManifold, a: &GpuBody, b: &GpuBody) {
    let n = m.normal;
    for c in &mut m.points[..m.count as usize] {
        c.anchor_a = rotate_inv(a.orientation, c.core_a);
        c.anchor_b = rotate_inv(b.orientation, c.core_b);
        let separation = c.base_separation + n.dot(c.core_b - c.core_a);
        let half_gap = 0.5 * ((b.position - a.position) + (c.core_b - c.core_a));
        c.core_a += half_gap;
        c.core_b -= half_gap;
        c.base_separation = separation - n.dot(c.core_b - c.core_a);
    }
}

/// How far a kept frame's anchors and lever arms may drift (see [`keep_frame`]): [`FRAME_DRIFT`],
/// or [`FRAME_DRIFT_FRACTION`] of the contact's size when that is less. The size is the
/// distance between two points' anchors on A, or for three or four the square root of twice
/// the area of their largest triangle; a one-point contact has none and keeps [`FRAME_DRIFT`]
/// even between small bodies. Nearly collinear points have a size near zero: such a frame is
/// taken anew each step. Twin of `frame_drift` in shaders/manifolds.wgsl.
pub(crate) fn frame_drift(old: &GpuManifold) -> f32 {
    let count = old.count as usize;
    match count {
        2 => FRAME_DRIFT.min(FRAME_DRIFT_FRACTION * (old.points[1].anchor_a - old.points[0].anchor_a).length()),
        3 | 4 => plane_drift(anchor_plane(old.points.map(|c| c.anchor_a), count)),
        _ => FRAME_DRIFT,
    }
}

/// [`frame_drift`] of three or four points whose anchors on A span `plane` ([`anchor_plane`]).
/// Twin of `plane_drift` in shaders/manifolds.wgsl.
fn plane_drift(plane: Vec3) -> f32 {
    FRAME_DRIFT.min(FRAME_DRIFT_FRACTION * plane.length().sqrt())
}

/// Keeps last step's contact frame of a resting pair of polytopes ("anchor freezing") and
/// returns whether it did: when every new point (cores on each body's surface, as the narrow
/// phase found them) has an old point of its own with its key whose anchors are within
/// [`frame_drift`] of the new surface points and whose lever arms are within it of the new
/// frame's (their midpoint), and the normal turned less than
/// [`FRAME_MIN_COS`] allows, the manifold takes the old normal, lever arms and anchors, and its
/// separations are measured between the old anchors along the old normal. The anchors' slide
/// across the normal is then taken out, half on each body: their midpoint and separation stay,
/// and [`recycle`] bounds the slide since this narrow phase instead of since the frame was
/// taken (the lever arms still bound the drift since then). Re-deriving them
/// each step from the bodies' poses makes the heavy impulses of a tall stack push along a
/// frame that follows its lean: an energy pump that tipped the large pyramid over in 18 s (see
/// BENCHMARKS.md, "Standing"). Rounded shapes roll, moving the contact over their surface:
/// they always take a new frame. Twin of `keep_frame` in shaders/manifolds.wgsl.
pub(crate) fn keep_frame(old: &GpuManifold, m: &mut GpuManifold, a: &GpuBody, b: &GpuBody) -> bool {
    if !polytopes(m) || old.count != m.count || old.normal.dot(m.normal) < FRAME_MIN_COS {
        return false;
    }
    let count = m.count as usize;
    let drift = frame_drift(old);
    let near = |x: Vec3, y: Vec3| (x - y).length_squared() <= drift * drift;
    // Per point: the old point, and where its anchors are now (offsets from the centres).
    let mut kept = [(0, Vec3::ZERO, Vec3::ZERO); crate::collide::MAX_MANIFOLD_POINTS];
    let mut taken = [false; crate::collide::MAX_MANIFOLD_POINTS];
    for (kept, c) in kept.iter_mut().zip(&m.points[..count]) {
        // Clipping can give two points one key: each old point serves one new point.
        let Some(j) = old.points[..count].iter().position(|q| q.key == c.key) else {
            return false;
        };
        if taken[j] {
            return false;
        }
        taken[j] = true;
        let q = &old.points[j];
        let (anchor_a, anchor_b) = (rotate(a.orientation, q.anchor_a), rotate(b.orientation, q.anchor_b));
        // The old lever arms against the new frame's: the midpoint of the surface points.
        let half_gap = 0.5 * ((b.position - a.position) + (c.core_b - c.core_a));
        if !(near(anchor_a, c.core_a)
            && near(anchor_b, c.core_b)
            && near(q.core_a, c.core_a + half_gap)
            && near(q.core_b, c.core_b - half_gap))
        {
            return false;
        }
        *kept = (j, anchor_a, anchor_b);
    }
    let n = old.normal;
    m.normal = n;
    m.frame_kept = 1;
    for (c, &(j, anchor_a, anchor_b)) in m.points[..count].iter_mut().zip(&kept) {
        let q = &old.points[j];
        let gap = (b.position - a.position) + (anchor_b - anchor_a);
        let separation = n.dot(gap);
        // The anchors' slide across the normal since they were set, taken out half on each
        // side: their midpoint and their gap along the normal stay, and recycling measures
        // the slide from this narrow phase on.
        let half_slide = 0.5 * (gap - n * separation);
        (c.core_a, c.core_b) = (q.core_a, q.core_b);
        c.anchor_a = q.anchor_a + rotate_inv(a.orientation, half_slide);
        c.anchor_b = q.anchor_b - rotate_inv(b.orientation, half_slide);
        c.base_separation = separation - n.dot(c.core_b - c.core_a);
    }
    true
}

/// Twice the area of the largest triangle of the first `count` of four points in a body's frame
/// (of three triangles of four, the one of three), along its normal: the plane through them;
/// zero for fewer than three.
fn anchor_plane(points: [Vec3; 4], count: usize) -> Vec3 {
    const TRIANGLES: [[usize; 3]; 3] = [[0, 1, 2], [0, 1, 3], [0, 2, 3]];
    let triangles = match count {
        3 => 1,
        4 => 3,
        _ => 0,
    };
    // The largest by selections, not branches (which triangle wins is data), its squared
    // length kept beside it.
    let (mut best, mut best_squared) = (Vec3::ZERO, 0.0);
    for &[i, j, k] in &TRIANGLES[..triangles] {
        let c = (points[j] - points[i]).cross(points[k] - points[i]);
        let squared = c.length_squared();
        let larger = squared > best_squared;
        (best, best_squared) = if larger { (c, squared) } else { (best, best_squared) };
    }
    best
}

/// Last step's manifold of a resting pair of polytopes, carried into this step without the
/// narrow phase ("contact recycling"), or `None` when the narrow phase must run: its points
/// (keys, anchors, lever arms) and normal as they were, its separations measured between the
/// anchors along the normal, each point's approach velocity at its anchors from the current
/// velocities, and no impulses (the warm start gives them): what [`keep_frame`] makes of a
/// pair whose narrow phase finds the same features, up to where the approach velocities are
/// taken. It runs when the manifold has four points (a face contact: with fewer, a point the
/// narrow phase would add as a face closes in goes unseen); since the last narrow phase (which
/// takes the slide out of a kept frame's anchors), each point's anchors slid less than
/// [`RECYCLE_DRIFT`] apart across the normal, or less than
/// [`RECYCLE_SLIDE_FRACTION`] of the contact face's size on a small face (the bodies moved too
/// little against each other for the features to change), and its lever arms stayed within
/// [`frame_drift`] of the anchors' midpoint, as [`keep_frame`] asks (a turn of both bodies
/// together, about the normal too, moves it); its anchors are less than `margin` apart along
/// the normal; and the plane of the anchors on each body turned less than [`FRAME_MIN_COS`]
/// allows from the normal. `falls` is which side gravity pulls (B's dynamic flag minus A's).
/// Twin of `recycle` in shaders/manifolds.wgsl.
pub(crate) fn recycle(
    p: &StepParams,
    old: &GpuManifold,
    a: &GpuBody,
    b: &GpuBody,
    margin: f32,
    falls: f32,
) -> Option<GpuManifold> {
    let count = old.count as usize;
    if p.recycle_contacts == 0 || !polytopes(old) || count < crate::collide::MAX_MANIFOLD_POINTS {
        return None;
    }
    let n = old.normal;
    let local_a = anchor_plane(old.points.map(|c| c.anchor_a), count);
    let (plane_a, plane_b) =
        (rotate(a.orientation, local_a), rotate(b.orientation, anchor_plane(old.points.map(|c| c.anchor_b), count)));
    let turned = |c: Vec3| {
        let cc = c.length_squared();
        let cn = c.dot(n);
        cc < RECYCLE_MIN_AREA * RECYCLE_MIN_AREA || cn * cn < FRAME_MIN_COS * FRAME_MIN_COS * cc
    };
    if turned(plane_a) || turned(plane_b) {
        return None;
    }
    // The slide allowed: less on a small contact face (its size: the square root of twice
    // the area of A's anchors' largest triangle).
    let slide = RECYCLE_DRIFT.min(RECYCLE_SLIDE_FRACTION * plane_a.length_squared().sqrt().sqrt());
    // `frame_drift` of four points, from the plane already at hand.
    let drift = plane_drift(local_a);
    let gravity_n = n.dot(p.gravity) * falls;
    let mut m = GpuManifold {
        body_a: old.body_a,
        body_b: old.body_b,
        count: old.count,
        color: old.color,
        normal: n,
        friction: old.friction,
        restitution: old.restitution,
        frame_kept: 1,
        recycled: 1,
        ..GpuManifold::default()
    };
    for (c, q) in m.points.iter_mut().zip(&old.points[..count]) {
        let (ra, rb) = (rotate(a.orientation, q.anchor_a), rotate(b.orientation, q.anchor_b));
        let gap = (b.position - a.position) + (rb - ra);
        let separation = n.dot(gap);
        // The bodies' slide against each other (which changes features), then the lever arms
        // against where the anchors' midpoint is now, as `keep_frame` bounds them (a turn of
        // both bodies together, about the normal too, moves it off them).
        let (arm_a, arm_b) = (ra + 0.5 * gap, rb - 0.5 * gap);
        let within = |x: Vec3, y: Vec3, d: f32| (x - y).length_squared() <= d * d;
        if separation >= margin
            || !(within(gap, n * separation, slide) && within(q.core_a, arm_a, drift) && within(q.core_b, arm_b, drift))
        {
            return None;
        }
        let vn = n.dot(
            (b.linear_velocity + b.angular_velocity.cross(rb)) - (a.linear_velocity + a.angular_velocity.cross(ra)),
        );
        *c = GpuManifoldPoint {
            core_a: q.core_a,
            core_b: q.core_b,
            anchor_a: q.anchor_a,
            anchor_b: q.anchor_b,
            base_separation: separation - n.dot(q.core_b - q.core_a),
            approach_velocity: super::stages::approach_velocity(vn, separation, gravity_n),
            key: q.key,
            ..GpuManifoldPoint::default()
        };
    }
    Some(m)
}

/// Seeds a new manifold's impulses from last step's manifold of the same pair: each point
/// takes the impulses of the old point with its feature key, else of the nearest old point
/// within [`WARM_START_RADIUS`] that no key claims and no earlier point took, when the normal
/// barely turned. Twin of the warm start in `compact_manifolds` (shaders/manifolds.wgsl).
pub(crate) fn warm_start(old: &GpuManifold, m: &mut GpuManifold, scale: f32) {
    let (old_count, count) = (old.count as usize, m.count as usize);
    let mut taken = [false; crate::collide::MAX_MANIFOLD_POINTS];
    let mut source = [usize::MAX; crate::collide::MAX_MANIFOLD_POINTS];
    for (k, c) in m.points[..count].iter().enumerate() {
        if let Some(j) = old.points[..old_count].iter().position(|q| q.key == c.key) {
            source[k] = j;
            taken[j] = true;
        }
    }
    if old.normal.dot(m.normal) >= WARM_START_MIN_COS {
        for (source, c) in source.iter_mut().zip(&m.points[..count]) {
            if *source != usize::MAX {
                continue;
            }
            let mut best = (WARM_START_RADIUS * WARM_START_RADIUS, usize::MAX);
            for (j, q) in old.points[..old_count].iter().enumerate() {
                let d = (q.core_a - c.core_a).length_squared();
                if !taken[j] && d < best.0 {
                    best = (d, j);
                }
            }
            if best.1 != usize::MAX {
                *source = best.1;
                taken[best.1] = true;
            }
        }
    }
    for (c, &j) in m.points[..count].iter_mut().zip(&source) {
        if j != usize::MAX {
            let q = &old.points[j];
            c.normal_impulse = scale * q.normal_impulse;
            let (j1, j2) = carry_tangent_impulse(old.normal, m.normal, q.tangent_impulse_1, q.tangent_impulse_2);
            c.tangent_impulse_1 = scale * j1;
            c.tangent_impulse_2 = scale * j2;
        }
    }
}

/// Graph coloring of the manifolds by [`crate::coloring::color_graph`] (seeds: last step's
/// colors), then bucketing by color (ascending index within a color) with the overflow last.
pub(crate) fn color(w: &BodyView, cs: &mut ContactState) {
    let p = w.params;
    cs.pairs_scratch.clear();
    cs.pairs_scratch.extend(cs.manifolds.iter().map(|m| [m.body_a, m.body_b]));
    cs.dynamic.clear();
    cs.dynamic.extend(w.props[..p.body_count as usize].iter().map(dynamic));
    cs.colors.clear();
    cs.colors.extend(cs.manifolds.iter().map(|m| m.color));
    color_graph(
        &cs.pairs_scratch,
        &cs.dynamic,
        p.max_colors,
        p.coloring_rounds,
        &mut cs.colors,
        &mut cs.coloring,
        cs.parallel,
    );
    for (m, &c) in cs.manifolds.iter_mut().zip(&cs.colors) {
        m.color = c;
    }
    bucket_by_color(p, cs);
    cs.colors_disjoint =
        colors_share_no_dynamic_body(&cs.color_offsets, &cs.colored, &cs.manifolds, &cs.dynamic, &mut cs.scratch);
    // The passes' caches follow `solving`'s order: rebuilt at the first pass.
    cs.prepared_valid = false;
    let (manifolds, colored) = (&cs.manifolds, &cs.colored);
    super::fill_indexed(&mut cs.solving, colored.len(), cs.parallel, PARALLEL_RUN, |k| manifolds[colored[k] as usize]);
    let solving = &cs.solving;
    super::fill_indexed(&mut cs.impulses, colored.len(), cs.parallel, PARALLEL_RUN, |k| impulses_of(&solving[k]));
    super::fill_indexed(&mut cs.prepare_inputs, colored.len(), cs.parallel, PARALLEL_RUN, |k| {
        PrepareInput::new(&solving[k])
    });
    super::fill_indexed(&mut cs.heads, colored.len(), cs.parallel, PARALLEL_RUN, |k| {
        let m = &solving[k];
        SweepHead { a: m.body_a, b: m.body_b, bouncy: m.restitution > 0.0, count: m.count as u8 }
    });
    cs.any_bouncy = cs.heads.iter().any(|h| h.bouncy);
    cs.slots.clear();
    cs.slots.resize(cs.colored.len(), 0);
    for (k, &i) in cs.colored.iter().enumerate() {
        cs.slots[i as usize] = k as u32;
    }
}

/// Whether no two `manifolds` of one color share a dynamic body, as the coloring makes them
/// (the passes split over threads rely on it): the colors' manifolds are `colored` from
/// `offsets[c]` to `offsets[c + 1]` (the last entry, the overflow's end, is not read), and
/// `marks` holds, per body, the last color that met it.
fn colors_share_no_dynamic_body(
    offsets: &[u32],
    colored: &[u32],
    manifolds: &[GpuManifold],
    dynamic: &[bool],
    marks: &mut Vec<u32>,
) -> bool {
    marks.clear();
    marks.resize(dynamic.len(), u32::MAX);
    for (c, ends) in offsets[..offsets.len() - 1].windows(2).enumerate() {
        for &i in &colored[ends[0] as usize..ends[1] as usize] {
            let m = &manifolds[i as usize];
            for body in [m.body_a as usize, m.body_b as usize] {
                if dynamic[body] {
                    if marks[body] == c as u32 {
                        return false;
                    }
                    marks[body] = c as u32;
                }
            }
        }
    }
    true
}

/// Writes the solved manifolds (impulses, work) back in pair order, where the next step's warm
/// start, the statistics and the readers find them. Ends a step's manifold passes. A manifold
/// that cannot bounce changed only its impulses during the step (its work and restitution
/// impulses are only written where restitution is above zero): only they go back, from their
/// array, and the rest of `solving`'s copy is left unread.
pub(crate) fn finish_step(cs: &mut ContactState) {
    let (solving, impulses) = (&cs.solving, &cs.impulses);
    let back = |(m, &k): (&mut GpuManifold, &u32)| {
        if m.restitution > 0.0 {
            *m = solving[k as usize];
        }
        set_impulses(m, &impulses[k as usize]);
    };
    if cs.parallel {
        cs.manifolds.par_iter_mut().zip(&cs.slots).with_min_len(PARALLEL_RUN).for_each(back);
    } else {
        cs.manifolds.iter_mut().zip(&cs.slots).for_each(back);
    }
}

fn bucket_by_color(p: &StepParams, cs: &mut ContactState) {
    let colors = p.max_colors as usize;
    cs.color_offsets.clear();
    cs.color_offsets.resize(colors + 2, 0);
    for m in &cs.manifolds {
        let c = if m.color == OVERFLOW_COLOR { colors } else { m.color as usize };
        cs.color_offsets[c + 1] += 1;
    }
    for c in 0..=colors {
        cs.color_offsets[c + 1] += cs.color_offsets[c];
    }
    cs.colored.clear();
    cs.colored.resize(cs.manifolds.len(), 0);
    cs.scratch.clear();
    cs.scratch.extend_from_slice(&cs.color_offsets[..=colors]);
    for (i, m) in cs.manifolds.iter().enumerate() {
        let c = if m.color == OVERFLOW_COLOR { colors } else { m.color as usize };
        cs.colored[cs.scratch[c] as usize] = i as u32;
        cs.scratch[c] += 1;
    }
    // The overflow's mass split: how many overflow manifolds touch each body.
    cs.split.clear();
    cs.split.resize(p.body_count as usize, 0);
    for &i in &cs.colored[cs.color_offsets[colors] as usize..] {
        let m = &cs.manifolds[i as usize];
        cs.split[m.body_a as usize] += 1;
        cs.split[m.body_b as usize] += 1;
    }
    cs.overflow_bodies.clear();
    let touched = |&b: &u32| cs.split[b as usize] > 0 && cs.dynamic[b as usize];
    cs.overflow_bodies.extend((0..p.body_count).filter(touched));
}

/// (contacts, largest penetration) over the manifolds at the current positions.
pub(crate) fn manifold_stats(w: &BodyView, cs: &ContactState) -> (u32, f32) {
    let (mut count, mut deepest) = (0, 0.0_f32);
    for m in &cs.manifolds {
        for c in &m.points[..m.count as usize] {
            count += 1;
            deepest = deepest.max(-geometry(w, m, c).separation);
        }
    }
    (count, deepest)
}

/// What a constraint pass does to each manifold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Pass {
    /// Apply the accumulated impulses.
    WarmStart,
    /// One Gauss-Seidel sweep with bias (`true`) or without (`false`, the relax).
    Solve(bool),
    /// Newton restitution bounded by Stronge's energy hypothesis.
    Restitution,
}

/// `times` passes over every manifold: each the colors in order (the manifolds of a color share no dynamic
/// body: on the GPU one dispatch each), then the overflow by mass-splitting Jacobi; the warm
/// start, which depends on no other manifold's result, by body ([`warm_start_bodies`]). Runs
/// after [`color`] in a step; the caller says [`ContactState::positions_moved`] whenever
/// bodies move between passes and ends the step's passes with [`finish_step`].
pub(crate) fn solve_manifolds(w: &mut BodyView, cs: &mut ContactState, pass: Pass, times: u32) {
    cs.pass_out.resize(cs.solving.len(), [Vec3::ZERO; 4]);
    if cs.solving.is_empty() {
        return;
    }
    // Restitution changes nothing where no manifold bounces and none is in the Jacobi overflow
    // (whose averaging would still add zeros): then the pass is passed over, the same bits.
    if matches!(pass, Pass::Restitution)
        && cs.color_offsets[w.params.max_colors as usize] as usize == cs.solving.len()
        && !(cs.any_bouncy && cs.solving.iter().any(|m| bounces(w.params, m)))
    {
        return;
    }
    // The velocities stay in `cs.motions` from the first pass to the last: nothing else moves
    // them in between (the preparation loads them).
    if cs.prepared_valid {
        load_motions(w, cs);
    } else {
        prepare(w, cs);
    }
    passes(w, cs, pass, times);
    for (i, m) in cs.motions.iter().enumerate() {
        if cs.dynamic[i] {
            w.bodies[i].linear_velocity = m.v;
            w.bodies[i].angular_velocity = m.w;
        }
    }
}

/// `times` passes of [`solve_manifolds`] on the velocities in `cs.motions`.
fn passes(w: &BodyView, cs: &mut ContactState, pass: Pass, times: u32) {
    let colors = w.params.max_colors as usize;
    let p = w.params;
    let statics =
        Soft { bias_rate: p.static_bias_rate, mass_scale: p.static_mass_scale, impulse_scale: p.static_impulse_scale };
    let contacts = Soft {
        bias_rate: p.contact_bias_rate,
        mass_scale: p.contact_mass_scale,
        impulse_scale: p.contact_impulse_scale,
    };
    if matches!(pass, Pass::WarmStart) {
        for _ in 0..times {
            warm_start_bodies(cs, w.simd);
        }
        return;
    }
    // Restitution leaves a manifold that cannot bounce untouched (`restitution` returns before
    // any arithmetic): with none that can, only the overflow's Jacobi pass is left (its
    // averaging adds zeros, which the GPU's does too).
    if matches!(pass, Pass::Restitution) && !cs.any_bouncy {
        for _ in 0..times {
            jacobi(w, cs, pass);
        }
        return;
    }
    let colored = cs.color_offsets[colors] as usize;
    let shared = cs.parallel && cs.colors_disjoint && colored >= 2 * cs.run.max(4);
    // With no overflow between them, the passes split over threads go in one stretch.
    if shared && colored == cs.colored.len() {
        return solve_colors_shared(w, cs, pass, (statics, contacts), times);
    }
    for _ in 0..times {
        if shared {
            solve_colors_shared(w, cs, pass, (statics, contacts), 1);
        } else {
            for c in 0..colors {
                let (start, end) = (cs.color_offsets[c] as usize, cs.color_offsets[c + 1] as usize);
                let run = ColorRun {
                    solving: &mut cs.solving[start..end],
                    impulses: &mut cs.impulses[start..end],
                    heads: &cs.heads[start..end],
                    prepared: &cs.prepared[start..end],
                };
                // On one thread each group's velocities go straight back: the manifolds of a
                // color share no dynamic body, so no later manifold of the color reads them.
                solve_run_in_place(w, run, &mut cs.motions, &cs.dynamic, (statics, contacts), pass);
            }
        }
        jacobi(w, cs, pass);
    }
}

/// The colored passes of [`passes`] split over the worker threads, every color of all `times`
/// passes in one go: each color is cut into runs (about four per thread, in multiples of sixteen
/// manifolds, the widest sweeps' groups), and the threads take the runs in order from a shared
/// counter. A run starts once every run of the colors before its own is done and their velocities
/// are stored. Each run reads the velocities before its color and writes its manifolds' impulses
/// and its bodies' velocities after the pass to `pass_out`; once every run of the color is done,
/// each thread stores the velocities of the runs it took (the manifolds of a color share no dynamic
/// body: `ContactState::colors_disjoint`). The same arithmetic as on one thread, so the same bits,
/// whichever thread takes which run.
///
/// Against a parallel iterator per color, the threads meet at a counter between colors instead of
/// parting and joining (a few microseconds each, which small colors do not repay), and a thread
/// that comes late, or never, only leaves more runs to the others: no thread waits for another to
/// start, only for runs that a running thread has taken. A thread that panics sets a flag on its
/// way out, and the threads waiting for its runs panic too, so that the panic comes out of the pool
/// instead of leaving them waiting.
fn solve_colors_shared(w: &BodyView, cs: &mut ContactState, pass: Pass, softs: (Soft, Soft), times: u32) {
    debug_assert!(cs.colors_disjoint);
    let colors = w.params.max_colors as usize;
    let threads = rayon::current_num_threads();
    let min_run = cs.run.max(4);
    cs.run_first.clear();
    cs.run_size.clear();
    let mut runs = 0;
    for c in 0..colors {
        let len = (cs.color_offsets[c + 1] - cs.color_offsets[c]) as usize;
        let size = len.div_ceil(4 * threads).next_multiple_of(16).max(min_run);
        cs.run_first.push(runs);
        cs.run_size.push(size);
        runs += len.div_ceil(size);
    }
    cs.run_first.push(runs);
    if runs == 0 {
        return;
    }
    cs.run_taker.clear();
    cs.run_taker.resize(runs, u32::MAX);
    // `next`: the next run to take; `finished`: the runs done, which grows color by color (no
    // run of a color starts before the colors before it are stored); `stored`: the runs whose
    // velocities are stored, likewise.
    let (next, finished, stored) = (AtomicUsize::new(0), AtomicUsize::new(0), AtomicUsize::new(0));
    // Set when a thread unwinds out of its runs, so that the others stop waiting for it.
    let poisoned = AtomicBool::new(false);
    let wait = |counter: &AtomicUsize, value: usize| wait_for(counter, value, &poisoned);
    let (solving, impulses) = (Shared::new(&mut cs.solving), Shared::new(&mut cs.impulses));
    let (out, motions, taker) =
        (Shared::new(&mut cs.pass_out), Shared::new(&mut cs.motions), Shared::new(&mut cs.run_taker));
    let (heads, prepared, dynamic) = (&cs.heads, &cs.prepared, &cs.dynamic);
    let (offsets, first, sizes) = (&cs.color_offsets, &cs.run_first, &cs.run_size);
    let range = |c: usize, j: usize| {
        let start = offsets[c] as usize + (j - first[c]) * sizes[c];
        start..(start + sizes[c]).min(offsets[c + 1] as usize)
    };
    // The passes' runs one after another: run `g` is run `g % runs` of pass `g / runs`, which
    // begins at `base`.
    let total = times as usize * runs;
    // Stores the velocities of the runs of color `c` in the pass at `base` that thread `me`
    // took, once every run of the color is done.
    let store = |base: usize, c: usize, me: u32| {
        wait(&finished, base + first[c + 1]);
        let mut count = 0;
        for j in first[c]..first[c + 1] {
            // SAFETY: every run of the color is finished, after writing its taker and its
            // velocities (the acquire in `wait` orders those writes before these reads),
            // and no thread writes them again before `stored` passes the color.
            if unsafe { taker.slice(j..j + 1) }[0] != me {
                continue;
            }
            count += 1;
            let r = range(c, j);
            for (h, o) in heads[r.clone()].iter().zip(unsafe { out.slice(r) }) {
                let (a, b) = (h.a as usize, h.b as usize);
                // SAFETY: no run reads the velocities now (those of this color are done, those
                // of the next wait for `stored`), and the other threads storing now write
                // other bodies: the manifolds of a color share no dynamic body.
                if dynamic[a] {
                    let m = unsafe { motions.item_mut(a) };
                    (m.v, m.w) = (o[0], o[1]);
                }
                if dynamic[b] {
                    let m = unsafe { motions.item_mut(b) };
                    (m.v, m.w) = (o[2], o[3]);
                }
            }
        }
        stored.fetch_add(count, Ordering::AcqRel);
    };
    let take_runs = || {
        let _unwinding = Poison(&poisoned);
        // Which thread took a run (`u32::MAX` marks none).
        let me = rayon::current_thread_index().expect("the passes run on the pool's threads") as u32;
        // The pass and color of the runs this thread took and has not stored yet.
        let mut taken = None;
        loop {
            let g = next.fetch_add(1, Ordering::Relaxed);
            let (base, j) = (g / runs * runs, g % runs);
            // The run's color: the last whose first run is at or before it (empty colors have
            // none of their own).
            let c = first[1..].partition_point(|&f| f <= j);
            if let Some((b, t)) = taken
                && (g >= total || (b, t) != (base, c))
            {
                store(b, t, me);
            }
            if g >= total {
                return;
            }
            wait(&stored, base + first[c]);
            let r = range(c, j);
            // SAFETY: this thread alone took run `g`, so it alone touches its entry of
            // `run_taker` and its manifolds' ranges of `solving`, `impulses` and `pass_out`
            // until it counts the run finished (the stores read them after that, with the
            // count's acquire; the same run of the next pass waits for those stores). The
            // velocities are read only here, while no thread writes them: the colors before
            // this one are stored (`stored`), and this color's velocities are stored once
            // every run of it, this one included, is finished.
            unsafe {
                let run = ColorRun {
                    solving: solving.slice_mut(r.clone()),
                    impulses: impulses.slice_mut(r.clone()),
                    heads: &heads[r.clone()],
                    prepared: &prepared[r.clone()],
                };
                solve_run(w, run, motions.slice(0..motions.len), softs, pass, out.slice_mut(r));
                *taker.item_mut(j) = me;
            }
            finished.fetch_add(1, Ordering::AcqRel);
            taken = Some((base, c));
        }
    };
    super::on_threads(threads, &take_runs);
}

/// Waits until `counter` reaches `value`: a short spin, then yielding the processor. Panics
/// when `poisoned` is set: the thread it waits for has panicked and will not count.
fn wait_for(counter: &AtomicUsize, value: usize, poisoned: &AtomicBool) {
    let mut spins = 0u32;
    while counter.load(Ordering::Acquire) < value {
        assert!(!poisoned.load(Ordering::Relaxed), "another thread of the colored passes panicked");
        if spins < 128 {
            std::hint::spin_loop();
            spins += 1;
        } else {
            std::thread::yield_now();
        }
    }
}

/// Sets its flag if dropped while its thread unwinds from a panic.
struct Poison<'a>(&'a AtomicBool);

impl Drop for Poison<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.store(true, Ordering::Relaxed);
        }
    }
}

/// A slice that the threads of [`solve_colors_shared`] share, each touching the parts and at
/// the times that the pass's counters give it (and the bodies that the threads of one joint
/// color share, each writing only its joints' dynamic bodies: `cpu::joints`).
#[derive(Clone, Copy)]
pub(crate) struct Shared<'a, T> {
    ptr: *mut T,
    len: usize,
    slice: PhantomData<&'a mut [T]>,
}

// SAFETY: `Shared` only hands out what its `unsafe` methods' callers vouch for; the items
// themselves cross threads as `&mut [T]` would.
unsafe impl<T: Send> Send for Shared<'_, T> {}
unsafe impl<T: Send + Sync> Sync for Shared<'_, T> {}

impl<'a, T> Shared<'a, T> {
    pub(crate) fn new(s: &'a mut [T]) -> Self {
        Self { ptr: s.as_mut_ptr(), len: s.len(), slice: PhantomData }
    }

    /// The items in `range`.
    ///
    /// # Safety
    /// No thread writes any of them while the result lives.
    pub(crate) unsafe fn slice(&self, range: std::ops::Range<usize>) -> &[T] {
        assert!(range.start <= range.end && range.end <= self.len);
        // SAFETY: in bounds (checked); the rest is the caller's.
        unsafe { std::slice::from_raw_parts(self.ptr.add(range.start), range.end - range.start) }
    }

    /// Item `i`, to write.
    ///
    /// # Safety
    /// No other thread reads or writes it while the result lives.
    #[allow(clippy::mut_from_ref)]
    pub(crate) unsafe fn item_mut(&self, i: usize) -> &mut T {
        assert!(i < self.len);
        // SAFETY: in bounds (checked); the rest is the caller's.
        unsafe { &mut *self.ptr.add(i) }
    }

    /// The items in `range`, to write.
    ///
    /// # Safety
    /// No other thread reads or writes any of them while the result lives.
    #[allow(clippy::mut_from_ref)]
    unsafe fn slice_mut(&self, range: std::ops::Range<usize>) -> &mut [T] {
        assert!(range.start <= range.end && range.end <= self.len);
        // SAFETY: in bounds (checked); the rest is the caller's.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.add(range.start), range.end - range.start) }
    }
}

/// The fewest manifolds per task when a stage splits its work over threads, and per run of a
/// color when the colored passes do ([`solve_colors_shared`]); those passes stay on one thread
/// when all the colors together hold fewer than twice as many manifolds.
pub(crate) const PARALLEL_RUN: usize = 48;

/// Manifolds of one color, or a run of them, in `colored` order: the manifolds, their
/// impulses, heads and prepared data (see `ContactState`).
struct ColorRun<'a> {
    solving: &'a mut [GpuManifold],
    impulses: &'a mut [PointImpulses],
    heads: &'a [SweepHead],
    prepared: &'a [Prepared],
}

impl ColorRun<'_> {
    /// The run from its `k`th manifold on.
    fn tail(&mut self, k: usize) -> ColorRun<'_> {
        ColorRun {
            solving: &mut self.solving[k..],
            impulses: &mut self.impulses[k..],
            heads: &self.heads[k..],
            prepared: &self.prepared[k..],
        }
    }
}

/// One pass over a run of manifolds of one color, from the bodies' `motions` before the color:
/// writes each manifold's bodies' velocities after its pass to `out` (v_a, ω_a, v_b, ω_b),
/// which the caller stores for the dynamic ones. The manifolds of a color share no
/// dynamic body, so no manifold of the run reads what another writes.
fn solve_run(
    w: &BodyView,
    mut run: ColorRun,
    motions: &[Motion],
    softs: (Soft, Soft),
    pass: Pass,
    out: &mut [[Vec3; 4]],
) {
    let mut k = 0;
    while k < run.solving.len() {
        k += sweep_group(w, run.tail(k), motions, softs, pass, &mut out[k..]);
    }
}

/// [`solve_run`] on one thread, storing each group's velocities of dynamic bodies into
/// `motions` as soon as the group is done: the manifolds of a color share no dynamic body, so
/// no later one reads them, and the results are the same bits.
fn solve_run_in_place(
    w: &BodyView,
    mut run: ColorRun,
    motions: &mut [Motion],
    dynamic: &[bool],
    softs: (Soft, Soft),
    pass: Pass,
) {
    let mut out = [[Vec3::ZERO; 4]; 16];
    let mut k = 0;
    while k < run.solving.len() {
        let n = sweep_group(w, run.tail(k), motions, softs, pass, &mut out);
        store_velocities(&run.heads[k..k + n], &out, motions, dynamic);
        k += n;
    }
}

/// Stores the velocities after a pass of the manifolds with `heads`, `out` (v_a, ω_a, v_b, ω_b
/// each), into `motions`, for the dynamic bodies only: a static or kinematic one keeps its
/// velocity.
fn store_velocities(heads: &[SweepHead], out: &[[Vec3; 4]], motions: &mut [Motion], dynamic: &[bool]) {
    for (h, o) in heads.iter().zip(out) {
        let (a, b) = (h.a as usize, h.b as usize);
        if dynamic[a] {
            (motions[a].v, motions[a].w) = (o[0], o[1]);
        }
        if dynamic[b] {
            (motions[b].v, motions[b].w) = (o[2], o[3]);
        }
    }
}

/// The first group of a run of manifolds of one color: sixteen, eight or four that cannot
/// bounce in a lane sweep (bit-identical), else the first one alone; its bodies' velocities
/// after the pass go to `out` (v_a, ω_a, v_b, ω_b). Returns how many manifolds it took.
fn sweep_group(
    w: &BodyView,
    run: ColorRun,
    motions: &[Motion],
    softs: (Soft, Soft),
    pass: Pass,
    out: &mut [[Vec3; 4]],
) -> usize {
    let p = w.params;
    let len = run.heads.len();
    if let Pass::Solve(use_bias) = pass
        && let Some(n) = [16, 8, 4].into_iter().find(|&n| n <= len && run.heads[..n].iter().all(|h| !h.bouncy))
    {
        let (h, i, q, o) = (&run.heads[..n], &mut run.impulses[..n], &run.prepared[..n], &mut out[..n]);
        match n {
            16 => super::lanes::solve16(w.simd, p, h, i, q, motions, softs, use_bias, o),
            8 => super::lanes::solve8(w.simd, p, h, i, q, motions, softs, use_bias, o),
            _ => super::lanes::solve4(p, h, i, q, motions, softs, use_bias, o),
        }
        return n;
    }
    let m = &mut run.solving[0];
    let (mut ma, mut mb) = (motions[m.body_a as usize], motions[m.body_b as usize]);
    with_impulses(m, &mut run.impulses[0], |m| manifold_pass(w, m, &run.prepared[0], &mut ma, &mut mb, pass, false));
    out[0] = [ma.v, ma.w, mb.v, mb.w];
    1
}

/// Fills `cs.motions` from the bodies' velocities and the prepared inertia (a static or
/// kinematic body has no inverse mass: it keeps its velocity).
fn load_motions(w: &BodyView, cs: &mut ContactState) {
    let n = w.params.body_count as usize;
    cs.motions.clear();
    cs.motions.extend((0..n).map(|i| Motion {
        v: w.bodies[i].linear_velocity,
        w: w.bodies[i].angular_velocity,
        inv_mass: if cs.dynamic[i] { w.bodies[i].inv_mass } else { 0.0 },
        inv_inertia: cs.inertia[i],
    }));
}

/// The warm start: last step's impulses applied again, as a gather per body, so that the GPU
/// needs two dispatches for it instead of one per color (the impulses are known: no pass
/// depends on another's result). First each manifold that can bounce counts the work its own
/// impulses do on its pair, from the velocities before any warm start (as if applied alone);
/// then each dynamic body adds the impulses of its manifolds, in ascending order, point by
/// point (on worker threads, a gather per body; on one thread, a walk over the manifolds that
/// makes the same additions in the same order), each point's impulse and its change of each
/// body's angular velocity computed beforehand in lanes ([`WarmPoint`]). Twin of
/// `warm_start_work` and `warm_start_gather` in shaders/solve_contacts.wgsl.
fn warm_start_bodies(cs: &mut ContactState, simd: Simd) {
    let impulse = |m: &GpuManifold, i: &PointImpulses, q: &Prepared, k: usize| {
        let [normal, t1, t2, _] = i[k];
        normal * m.normal + t1 * q.t1() + t2 * q.t2()
    };
    let motions = &cs.motions;
    let work = |(((m, i), q), h): (((&mut GpuManifold, &PointImpulses), &Prepared), &SweepHead)| {
        // (Read from the head: a manifold that cannot bounce is not touched.)
        if !h.bouncy {
            return;
        }
        let (mut ma, mut mb) = (motions[m.body_a as usize], motions[m.body_b as usize]);
        for (k, g) in q.points.iter().map(|p| &p.geo).enumerate().take(m.count as usize) {
            let j = impulse(m, i, q, k);
            m.absorbed -= apply_at(&mut ma, &mut mb, g, j, true);
        }
    };
    if cs.any_bouncy && cs.parallel {
        let manifolds = cs.solving.par_iter_mut().zip(&cs.impulses).zip(&cs.prepared);
        manifolds.zip(&cs.heads).with_min_len(4 * PARALLEL_RUN).for_each(work);
    } else if cs.any_bouncy {
        cs.solving.iter_mut().zip(&cs.impulses).zip(&cs.prepared).zip(&cs.heads).for_each(work);
    }
    if !cs.parallel {
        // Through the manifolds in pair order, each point applied to both bodies: every body
        // gets the additions of the gather below in the same order, with one visit per point.
        // Each point's impulse and its angular effect on each body (which depend on no
        // velocity) come first, sixteen manifolds at a time in lanes. The bodies and count come
        // from the heads (12 bytes a manifold, where the manifolds' own words lie 384 apart).
        let mut terms = [[WarmPoint::default(); 4]; 16];
        let mut k = 0;
        while k < cs.manifolds.len() {
            let n = warm_terms(simd, &cs.slots[k..], cs, &mut terms);
            for (&slot, t) in cs.slots[k..k + n].iter().zip(&terms) {
                let h = cs.heads[slot as usize];
                let (a, b) = (h.a as usize, h.b as usize);
                for t in &t[..h.count as usize] {
                    let j = t.impulse();
                    if cs.dynamic[a] {
                        cs.motions[a].apply_turn(-j, t.turn_a());
                    }
                    if cs.dynamic[b] {
                        cs.motions[b].apply_turn(j, t.turn_b());
                    }
                }
            }
            k += n;
        }
        return;
    }
    // Each manifold's terms in pair order (split over threads), then each dynamic body adds the
    // impulses of its manifolds (the coloring's adjacency, in pair order, so that it reads the
    // terms in the order they lie), point by point, as the GPU's gather does.
    let mut warm = std::mem::take(&mut cs.warm);
    warm.resize(cs.heads.len(), [WarmPoint::default(); 4]);
    let state = &*cs;
    warm.par_chunks_mut(4 * PARALLEL_RUN).enumerate().for_each(|(c, out)| {
        let slots = &state.slots[c * 4 * PARALLEL_RUN..][..out.len()];
        let mut k = 0;
        while k < out.len() {
            k += warm_terms(simd, &slots[k..], state, &mut out[k..]);
        }
    });
    cs.warm = warm;
    let (heads, slots, warm, dynamic, coloring) = (&cs.heads, &cs.slots, &cs.warm, &cs.dynamic, &cs.coloring);
    cs.motions.par_iter_mut().enumerate().with_min_len(4 * PARALLEL_RUN).for_each(|(i, motion)| {
        if !dynamic[i] {
            return;
        }
        for &k in coloring.constraints_of(i) {
            let h = &heads[slots[k as usize] as usize];
            let a_side = h.a as usize == i;
            for t in &warm[k as usize][..h.count as usize] {
                if a_side {
                    motion.apply_turn(-t.impulse(), t.turn_a());
                } else {
                    motion.apply_turn(t.impulse(), t.turn_b());
                }
            }
        }
    });
}

/// The warm start's terms ([`WarmPoint`]) of the first sixteen, eight or four manifolds at
/// `slots` (places in `colored` order, listed in any order) in lanes (the same bits), else of
/// the first one alone, written to `out` in the order of `slots`. Returns how many manifolds
/// it took.
fn warm_terms(simd: Simd, slots: &[u32], cs: &ContactState, out: &mut [[WarmPoint; 4]]) -> usize {
    let (heads, impulses, prepared, motions) = (&cs.heads, &cs.impulses, &cs.prepared, &cs.motions);
    let n = [16, 8, 4].into_iter().find(|&n| n <= slots.len()).unwrap_or(1);
    let at = &slots[..n];
    match n {
        16 => super::lanes::warm_terms16(simd, at, heads, impulses, prepared, motions, out),
        8 => super::lanes::warm_terms8(simd, at, heads, impulses, prepared, motions, out),
        4 => super::lanes::warm_terms4(at, heads, impulses, prepared, motions, out),
        _ => {
            let k = at[0] as usize;
            let (ma, mb) = (&motions[heads[k].a as usize], &motions[heads[k].b as usize]);
            out[0] = std::array::from_fn(|p| WarmPoint::new(&impulses[k][p], &prepared[k], p, ma, mb));
        }
    }
    n
}

/// Fills the per-body inertia and per-manifold [`Prepared`] caches for the current positions,
/// and `cs.motions` from the bodies ([`load_motions`]).
fn prepare(w: &BodyView, cs: &mut ContactState) {
    let n = w.params.body_count as usize;
    cs.dynamic.clear();
    cs.dynamic.extend(w.props[..n].iter().map(dynamic));
    // Eight or four bodies at a time in SIMD lanes (the same bits), the rest one by one.
    cs.inertia.resize(n, Mat3::ZERO);
    let inertia8 = |(k, out): (usize, &mut [Mat3])| {
        let (bodies, props) = (&w.bodies[8 * k..n], &w.props[8 * k..n]);
        if out.len() == 8 {
            return super::lanes::world_inertia8(w.simd, bodies, props, out);
        }
        for ((bodies, props), out) in bodies.chunks(4).zip(props.chunks(4)).zip(out.chunks_mut(4)) {
            if out.len() == 4 {
                super::lanes::world_inertia4(bodies, props, out);
                continue;
            }
            for ((b, props), out) in bodies.iter().zip(props).zip(out) {
                *out = body_inertia(b, props);
            }
        }
    };
    if cs.parallel {
        cs.inertia.par_chunks_mut(8).enumerate().with_min_len(PARALLEL_RUN / 2).for_each(inertia8);
    } else {
        cs.inertia.chunks_mut(8).enumerate().for_each(inertia8);
    }
    // The bodies' inverse masses and inertia (and velocities, which the passes start from).
    load_motions(w, cs);
    let motions = &cs.motions;
    // Filled in place: the one-manifold code writes only the points a manifold has, the lane
    // code all four (the lane sweeps read the others and discard what they compute from them).
    cs.prepared.resize(cs.solving.len(), bytemuck::Zeroable::zeroed());
    let one = |(m, p): (&GpuManifold, &mut Prepared)| {
        prepare_one(w, &motions[m.body_a as usize], &motions[m.body_b as usize], m, p)
    };
    // Eight or four manifolds at a time in SIMD lanes (the same bits), the rest one by one.
    let eight = |((ms, inputs), ps): ((&[GpuManifold], &[PrepareInput]), &mut [Prepared])| {
        if ms.len() == 8 {
            return super::lanes::prepare8(w.simd, inputs, w.bodies, w.solver_bodies, motions, ps);
        }
        for ((ms, inputs), ps) in ms.chunks(4).zip(inputs.chunks(4)).zip(ps.chunks_mut(4)) {
            if ms.len() == 4 {
                super::lanes::prepare4(inputs, w.bodies, w.solver_bodies, motions, ps);
            } else {
                ms.iter().zip(ps).for_each(one);
            }
        }
    };
    let inputs = &cs.prepare_inputs;
    if cs.parallel {
        let chunks = cs.solving.par_chunks(8).zip(inputs.par_chunks(8));
        chunks.zip(cs.prepared.par_chunks_mut(8)).with_min_len(PARALLEL_RUN / 8).for_each(eight);
    } else {
        cs.solving.chunks(8).zip(inputs.chunks(8)).zip(cs.prepared.chunks_mut(8)).for_each(eight);
    }
    cs.prepared_valid = true;
}

/// A body's world inverse inertia at its orientation, zero when it is not dynamic (what
/// `lanes::world_inertia4` and `world_inertia8` compute in lanes).
fn body_inertia(b: &GpuBody, props: &GpuBodyProps) -> Mat3 {
    if dynamic(props) { world_inverse_inertia(b.orientation, props.inv_inertia) } else { Mat3::ZERO }
}

/// One manifold's [`Prepared`] between `ma` and `mb` (their inverse masses and inertia), for
/// the points it has.
fn prepare_one(w: &BodyView, ma: &Motion, mb: &Motion, m: &GpuManifold, p: &mut Prepared) {
    let n = m.normal;
    p.set_manifold(m);
    let (t1, t2) = (p.t1(), p.t2());
    for k in 0..m.count as usize {
        let geo = geometry(w, m, &m.points[k]);
        p.points[k].geo = geo;
        p.points[k].masses = point_masses(effective_masses(ma, mb, &geo, n, t1, t2));
    }
}

/// `k_n`, `k11`, `k12`, `k22` of a contact between `ma` and `mb` at `g`.
#[inline]
fn effective_masses(ma: &Motion, mb: &Motion, g: &Geometry, n: Vec3, t1: Vec3, t2: Vec3) -> [f32; 4] {
    // [`Motion::rotational`] for (n, n), (t1, t1), (t1, t2) and (t2, t2): the same products,
    // each lever cross and inertia product computed once instead of once per entry.
    let rotational = |m: &Motion, r: Vec3| {
        let (rn, r1, r2) = (r.cross(n), r.cross(t1), r.cross(t2));
        let (i1, i2) = (m.inv_inertia * r1, m.inv_inertia * r2);
        [rn.dot(m.inv_inertia * rn), r1.dot(i1), r1.dot(i2), r2.dot(i2)]
    };
    let (a, b) = (rotational(ma, g.ra), rotational(mb, g.rb));
    let inv_mass = ma.inv_mass + mb.inv_mass;
    [
        inv_mass + a[0] + b[0],
        t1.dot(t1) * inv_mass + a[1] + b[1],
        t1.dot(t2) * inv_mass + a[2] + b[2],
        t2.dot(t2) * inv_mass + a[3] + b[3],
    ]
}

/// The overflow, solved by mass-splitting Jacobi (Tonge, Benevolenski & Voroshilov 2012): every
/// manifold works on sub-bodies carrying `1/n` of its bodies' mass and inertia (`n` overflow
/// manifolds on that body), all from the same velocities; then each body takes the average of
/// its sub-bodies' velocities. Gathered per body: no scatter, no float atomics.
fn jacobi(w: &BodyView, cs: &mut ContactState, pass: Pass) {
    let colors = w.params.max_colors as usize;
    let start = cs.color_offsets[colors] as usize;
    let overflow = cs.colored.len() - start;
    if overflow == 0 {
        return;
    }
    cs.deltas.clear();
    cs.deltas.resize(overflow, [Vec3::ZERO; 4]);
    for k in start..cs.colored.len() {
        let (a, b) = (cs.solving[k].body_a as usize, cs.solving[k].body_b as usize);
        let split = |body: usize, m: Motion| Motion {
            inv_mass: m.inv_mass * cs.split[body] as f32,
            inv_inertia: m.inv_inertia * cs.split[body] as f32,
            ..m
        };
        let ma0 = split(a, cs.motions[a]);
        let mb0 = split(b, cs.motions[b]);
        let (mut ma, mut mb) = (ma0, mb0);
        let prepared = &cs.prepared[k];
        with_impulses(&mut cs.solving[k], &mut cs.impulses[k], |m| {
            manifold_pass(w, m, prepared, &mut ma, &mut mb, pass, true)
        });
        cs.deltas[k - start] = [ma.v - ma0.v, ma.w - ma0.w, mb.v - mb0.v, mb.w - mb0.w];
    }
    // Gather: each dynamic body of an overflow manifold averages its sub-bodies (the adjacency
    // lists every manifold).
    for &body in &cs.overflow_bodies {
        let body = body as usize;
        let (mut dv, mut dw) = (Vec3::ZERO, Vec3::ZERO);
        for &i in cs.coloring.constraints_of(body) {
            let m = &cs.manifolds[i as usize];
            if m.color != OVERFLOW_COLOR {
                continue;
            }
            let d = &cs.deltas[cs.slots[i as usize] as usize - start];
            if m.body_a as usize == body {
                dv += d[0];
                dw += d[1];
            } else {
                dv += d[2];
                dw += d[3];
            }
        }
        let n = cs.split[body] as f32;
        cs.motions[body].v += dv / n;
        cs.motions[body].w += dw / n;
    }
}

/// The soft-constraint coefficients of a manifold: contacts against a static or kinematic body
/// are stiffer, as in the plane stage.
fn softness(p: &StepParams, m: &Motion, other: &Motion) -> Soft {
    if m.inv_mass == 0.0 || other.inv_mass == 0.0 {
        Soft { bias_rate: p.static_bias_rate, mass_scale: p.static_mass_scale, impulse_scale: p.static_impulse_scale }
    } else {
        Soft {
            bias_rate: p.contact_bias_rate,
            mass_scale: p.contact_mass_scale,
            impulse_scale: p.contact_impulse_scale,
        }
    }
}

/// (bias, mass scale, impulse scale) of a contact at separation `s`; see the plane stage.
#[inline]
pub(crate) fn contact_bias(p: &StepParams, soft: Soft, s: f32, use_bias: bool) -> (f32, f32, f32) {
    if s > 0.0 {
        (s * p.inv_h, 1.0, 0.0)
    } else if use_bias {
        ((soft.bias_rate * (s + p.linear_slop).min(0.0)).max(-p.max_push_velocity), soft.mass_scale, soft.impulse_scale)
    } else {
        (0.0, 1.0, 0.0)
    }
}

/// Lever arms and current separation of a manifold point. In a new frame both lever arms
/// reach the same world point, midway between the two surface points as the bodies move, so
/// that equal and opposite impulses exert no net torque and the pair conserves angular
/// momentum (levers to each body's own surface point made friction a torque couple: 4 % of a
/// cloud's angular momentum lost in 2 s). In a kept frame (see `keep_frame`) the lever arms
/// are the cores as they were when the frame was taken, where they met, and stay put: the
/// bodies have moved apart since by less than [`frame_drift`], so their impulses exert a small
/// torque, the price of a frame that does not follow a lean.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub(crate) struct Geometry {
    pub(crate) ra: Vec3,
    pub(crate) rb: Vec3,
    pub(crate) separation: f32,
}

/// Whether a manifold is between two polytopes (no radius): its cores are its lever arms.
#[inline]
pub(crate) fn polytopes(m: &GpuManifold) -> bool {
    m.radius_a == 0.0 && m.radius_b == 0.0
}

#[inline]
fn geometry(w: &BodyView, m: &GpuManifold, c: &GpuManifoldPoint) -> Geometry {
    let n = m.normal;
    let (a, b) = (m.body_a as usize, m.body_b as usize);
    let (sa, sb) = (&w.solver_bodies[a], &w.solver_bodies[b]);
    let (ca, cb) = (rotate(sa.delta_rotation, c.core_a), rotate(sb.delta_rotation, c.core_b));
    let separation = c.base_separation + n.dot((sb.delta_position + cb) - (sa.delta_position + ca));
    if m.frame_kept != 0 {
        return Geometry { ra: c.core_a, rb: c.core_b, separation };
    }
    let (surface_a, surface_b) = (ca + n * m.radius_a, cb - n * m.radius_b);
    let half_gap = 0.5 * ((w.bodies[b].position - w.bodies[a].position) + (surface_b - surface_a));
    Geometry { ra: surface_a + half_gap, rb: surface_b - half_gap, separation }
}

/// Applies `impulse` to B at a contact (its opposite to A) and returns its work on the pair,
/// J: `P · (v before + v after) / 2` with `v` the relative velocity there, exact since `v`
/// changes linearly with the impulse. Summed over a step, minus, it is what the manifold took.
/// The work is only counted for manifolds that can bounce (`track`): nothing else reads it.
#[inline(always)]
fn apply_at(ma: &mut Motion, mb: &mut Motion, g: &Geometry, impulse: Vec3, track: bool) -> f32 {
    if !track {
        ma.apply(g.ra, -impulse);
        mb.apply(g.rb, impulse);
        return 0.0;
    }
    let before = mb.at(g.rb) - ma.at(g.ra);
    ma.apply(g.ra, -impulse);
    mb.apply(g.rb, impulse);
    let after = mb.at(g.rb) - ma.at(g.ra);
    impulse.dot(before + after) * 0.5
}

/// One pass over one manifold between motions `ma` and `mb`, with its prepared geometry and,
/// unless the bodies are `split` (the Jacobi overflow's sub-bodies), its prepared effective
/// masses.
fn manifold_pass(
    w: &BodyView,
    m: &mut GpuManifold,
    prep: &Prepared,
    ma: &mut Motion,
    mb: &mut Motion,
    pass: Pass,
    split: bool,
) {
    let p = w.params;
    let n = m.normal;
    let (t1, t2) = (prep.t1(), prep.t2());
    let count = m.count as usize;
    let track = m.restitution > 0.0;
    let geo = &prep.geo();
    match pass {
        // By body, in `warm_start_bodies`.
        Pass::WarmStart => {}
        Pass::Solve(use_bias) => {
            let mut k = prep.masses();
            if split {
                for (k, g) in k.iter_mut().zip(geo).take(count) {
                    *k = point_masses(effective_masses(ma, mb, g, n, t1, t2));
                }
            }
            let soft = softness(p, ma, mb);
            coarse_correction(p, m, geo, &k, ma, mb, soft, use_bias);
            for ((c, g), k) in m.points[..count].iter_mut().zip(geo).zip(&k) {
                let (bias, mass_scale, impulse_scale) = contact_bias(p, soft, g.separation, use_bias);
                let vn = n.dot(mb.at(g.rb) - ma.at(g.ra));
                let impulse = -mass_scale * k.normal_mass * (vn + bias) - impulse_scale * c.normal_impulse;
                let new_impulse = (c.normal_impulse + impulse).max(0.0);
                let applied = new_impulse - c.normal_impulse;
                c.normal_impulse = new_impulse;
                c.max_normal_impulse = c.max_normal_impulse.max(applied);
                m.absorbed -= apply_at(ma, mb, g, applied * n, track);
            }
            for ((c, g), k) in m.points[..count].iter_mut().zip(geo).zip(&k) {
                let dv = mb.at(g.rb) - ma.at(g.ra);
                let (vt1, vt2) = (t1.dot(dv), t2.dot(dv));
                let (j1, j2) = friction_update(
                    c.tangent_impulse_1,
                    c.tangent_impulse_2,
                    vt1,
                    vt2,
                    k,
                    m.friction * c.normal_impulse,
                );
                let impulse = (j1 - c.tangent_impulse_1) * t1 + (j2 - c.tangent_impulse_2) * t2;
                c.tangent_impulse_1 = j1;
                c.tangent_impulse_2 = j2;
                m.absorbed -= apply_at(ma, mb, g, impulse, track);
            }
        }
        Pass::Restitution => restitution(w, m, ma, mb),
    }
}

/// The friction impulse of one contact, in the disk `|j| <= max`. Sticking: the exact 2x2
/// Newton step `j - K⁻¹ v_t` when it lands in the disk, so one sweep stops the slip. Sliding:
/// the projected-gradient step `P(j - v_t / λmax(K))`, whose fixed point is the maximum-
/// dissipation impulse (projecting the Newton step instead tilts the impulse off the slip
/// direction when `K` is anisotropic and weakens friction; see the plane stage). `K⁻¹` and
/// `1 / λmax(K)` come precomputed in `k`.
#[inline]
pub(crate) fn friction_update(j1: f32, j2: f32, vt1: f32, vt2: f32, k: &PointMasses, max: f32) -> (f32, f32) {
    let [w11, w12, w22] = k.newton;
    let (n1, n2) = (j1 - (w11 * vt1 - w12 * vt2), j2 - (w22 * vt2 - w12 * vt1));
    if n1 * n1 + n2 * n2 <= max * max {
        return (n1, n2);
    }
    let step = k.tangent_step;
    let (mut g1, mut g2) = (j1 - step * vt1, j2 - step * vt2);
    let len_sq = g1 * g1 + g2 * g2;
    if len_sq > max * max {
        let scale = max / len_sq.sqrt();
        g1 *= scale;
        g2 *= scale;
    }
    (g1, g2)
}

/// The coarse correction of the plane stage for a manifold: an exact, feasible line search
/// along "the same impulse on every point", the Galerkin projection of the points' soft
/// system (see `stages::coarse_correction`); `k` holds each point's inverse effective masses.
#[allow(clippy::too_many_arguments)]
fn coarse_correction(
    p: &StepParams,
    m: &mut GpuManifold,
    geo: &[Geometry; 4],
    k: &[PointMasses; 4],
    ma: &mut Motion,
    mb: &mut Motion,
    soft: Soft,
    use_bias: bool,
) {
    let n = m.normal;
    let count = m.count as usize;
    let step = |m: &GpuManifold, ma: &Motion, mb: &Motion, loaded_only: bool| {
        let (mut count, mut ra, mut rb, mut residual, mut compliance, mut j_min) =
            (0.0_f32, Vec3::ZERO, Vec3::ZERO, 0.0_f32, 0.0_f32, f32::MAX);
        for ((c, g), k) in m.points[..m.count as usize].iter().zip(geo).zip(k) {
            if loaded_only && c.normal_impulse <= 0.0 {
                continue;
            }
            count += 1.0;
            ra += g.ra;
            rb += g.rb;
            let (bias, mass_scale, impulse_scale) = contact_bias(p, soft, g.separation, use_bias);
            let c_i = contact_compliance(mass_scale, impulse_scale, k.k_n);
            residual += bias + c_i * c.normal_impulse;
            compliance += c_i;
            j_min = j_min.min(c.normal_impulse);
        }
        if count < 2.0 {
            return (0.0, 0.0);
        }
        let inv_count = 1.0 / count;
        let (ra, rb) = (ra * inv_count, rb * inv_count);
        let k = ma.inv_mass + mb.inv_mass + ma.rotational(ra, n, n) + mb.rotational(rb, n, n);
        let vn = n.dot(mb.at(rb) - ma.at(ra));
        (-(count * vn + residual) / (count * count * k + compliance), j_min)
    };
    let (mut share, _) = step(m, ma, mb, false);
    if share < 0.0 {
        let (pull, j_min) = step(m, ma, mb, true);
        share = pull.clamp(-j_min, 0.0);
    }
    if share == 0.0 {
        return;
    }
    let track = m.restitution > 0.0;
    // The points that take the share; unless its work is counted point by point (`track`),
    // it is applied at once at the sum of their lever arms, as the lane sweeps do.
    let (mut taking, mut ra, mut rb) = (0.0_f32, Vec3::ZERO, Vec3::ZERO);
    for (c, g) in m.points[..count].iter_mut().zip(geo) {
        if share < 0.0 && c.normal_impulse <= 0.0 {
            continue;
        }
        c.normal_impulse += share;
        c.max_normal_impulse = c.max_normal_impulse.max(share);
        if track {
            m.absorbed -= apply_at(ma, mb, g, share * n, true);
        } else {
            (taking, ra, rb) = (taking + 1.0, ra + g.ra, rb + g.rb);
        }
    }
    if !track {
        let impulse = n * share;
        ma.apply_sum(ra, taking, -impulse);
        mb.apply_sum(rb, taking, impulse);
    }
}

/// Whether restitution can act on this manifold: it bounces and one of its points closed fast.
fn bounces(p: &StepParams, m: &GpuManifold) -> bool {
    m.restitution > 0.0 && m.points[..m.count as usize].iter().any(|c| c.approach_velocity <= -p.restitution_threshold)
}

/// Newton restitution for a manifold (as for planes), bounded in the spirit of Stronge's
/// hypothesis: the pair gets back at most `e²` of the energy the manifold's impulses took from
/// it this step, so no joule another contact took comes back, and a step never gains energy
/// through contacts but by pushing penetrations apart.
fn restitution(w: &BodyView, m: &mut GpuManifold, ma: &mut Motion, mb: &mut Motion) {
    let p = w.params;
    if !bounces(p, m) {
        return;
    }
    let n = m.normal;
    let (a0, b0) = (*ma, *mb);
    let mut acted = false;
    for k in 0..m.count as usize {
        let c = m.points[k];
        if c.approach_velocity > -p.restitution_threshold || c.max_normal_impulse == 0.0 {
            continue;
        }
        let g = geometry(w, m, &c);
        let k_n = ma.inv_mass + mb.inv_mass + ma.rotational(g.ra, n, n) + mb.rotational(g.rb, n, n);
        let vn = n.dot(mb.at(g.rb) - ma.at(g.ra));
        let impulse = -(vn + m.restitution * c.approach_velocity) / k_n;
        let new_impulse = (c.normal_impulse + impulse).max(0.0);
        let applied = new_impulse - c.normal_impulse;
        let c = &mut m.points[k];
        c.normal_impulse = new_impulse;
        c.max_normal_impulse = c.max_normal_impulse.max(applied);
        c.restitution_impulse = applied;
        acted = true;
        ma.apply(g.ra, -applied * n);
        mb.apply(g.rb, applied * n);
    }
    if !acted {
        return;
    }
    // Kinetic energies of the pair: before the step (plus gravity's work), after the solve, and
    // as a quadratic in the fraction α of the restitution impulses applied.
    let (ia, ib) = (m.body_a as usize, m.body_b as usize);
    let ke = |i: usize, v: Vec3, wv: Vec3| -> f32 {
        if dynamic(&w.props[i]) {
            let b = &w.bodies[i];
            kinetic_energy(b.inv_mass, w.props[i].inv_inertia, b.orientation, v, wv)
        } else {
            0.0
        }
    };
    let solved = ke(ia, a0.v, a0.w) + ke(ib, b0.v, b0.w);
    let budget = m.restitution * m.restitution * m.absorbed.max(0.0);
    let full = ke(ia, ma.v, ma.w) + ke(ib, mb.v, mb.w);
    if full - solved <= budget {
        return;
    }
    // KE(α) = solved + α B + α² A: A from the velocity changes alone, B from the cross term.
    let half = ke(ia, (a0.v + ma.v) * 0.5, (a0.w + ma.w) * 0.5) + ke(ib, (b0.v + mb.v) * 0.5, (b0.w + mb.w) * 0.5);
    // KE(1/2) = solved + B/2 + A/4 and KE(1) = solved + B + A give A and B.
    let a = 2.0 * (full - solved) - 4.0 * (half - solved);
    let b = (full - solved) - a;
    let alpha = if a > 1e-12 {
        ((-b + (b * b + 4.0 * a * budget).max(0.0).sqrt()) / (2.0 * a)).clamp(0.0, 1.0)
    } else if b > 0.0 {
        (budget / b).clamp(0.0, 1.0)
    } else {
        1.0
    };
    ma.v = a0.v + alpha * (ma.v - a0.v);
    ma.w = a0.w + alpha * (ma.w - a0.w);
    mb.v = b0.v + alpha * (mb.v - b0.v);
    mb.w = b0.w + alpha * (mb.w - b0.w);
    for c in &mut m.points[..m.count as usize] {
        c.normal_impulse -= (1.0 - alpha) * c.restitution_impulse;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use glam::Quat;

    fn point(core_a: Vec3, key: u32, normal_impulse: f32) -> GpuManifoldPoint {
        GpuManifoldPoint { core_a, key, normal_impulse, tangent_impulse_1: 0.5 * normal_impulse, ..Default::default() }
    }

    fn manifold(normal: Vec3, points: &[GpuManifoldPoint]) -> GpuManifold {
        let mut m = GpuManifold { normal, count: points.len() as u32, ..Default::default() };
        m.points[..points.len()].copy_from_slice(points);
        m
    }

    /// The grid's floor gives the cells `floor`, the clamp and the cast give: at integers,
    /// halves, signed zeros, denormals, the clamp's edges, beyond 2^31, infinities and NaN, and
    /// over a sweep of values.
    #[test]
    fn grid_floor_gives_the_cells_of_floor() {
        let cells = |c: f32| [c.clamp(-GRID_CELL_LIMIT, GRID_CELL_LIMIT) as i32];
        let mut values = vec![
            0.0,
            -0.0,
            0.5,
            -0.5,
            1.0,
            -1.0,
            -1.5,
            1e-40,
            -1e-40,
            8_388_607.5,
            -8_388_608.5,
            8_388_609.0,
            -8_388_610.0,
            3e9,
            -3e9,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
            f32::MAX,
            f32::MIN,
        ];
        let mut rng = crate::scenes::Lcg(3);
        values.extend((0..10_000).map(|k| rng.next_centered() * 10f32.powi(k % 9)));
        for x in values {
            let fast = floor_cells(Vec3::splat(x)).x;
            assert_eq!(cells(fast), cells(x.floor()), "{x}: {fast} against {}", x.floor());
        }
    }

    /// The check that the passes split over threads rely on: two manifolds of one color on a
    /// dynamic body fail it, on a static one they pass, and so do two colors sharing a body;
    /// the overflow after the last color is not read.
    #[test]
    fn colors_sharing_a_dynamic_body_are_caught() {
        let pair = |a: u32, b: u32| GpuManifold { body_a: a, body_b: b, ..Default::default() };
        // Bodies 0-2 dynamic, 3 static. Manifolds: (0, 1), (1, 2), (2, 3), (0, 3).
        let manifolds = [pair(0, 1), pair(1, 2), pair(2, 3), pair(0, 3)];
        let mut dynamic = vec![true, true, true, false];
        let mut marks = Vec::new();
        let mut check = |offsets: &[u32], colored: &[u32], dynamic: &[bool]| {
            colors_share_no_dynamic_body(offsets, colored, &manifolds, dynamic, &mut marks)
        };
        // (0, 1) and (2, 3) in color 0, (1, 2) and (0, 3) in color 1: proper.
        assert!(check(&[0, 2, 4, 4], &[0, 2, 1, 3], &dynamic));
        // (0, 1) and (1, 2) in one color share body 1.
        assert!(!check(&[0, 2, 4, 4], &[0, 1, 2, 3], &dynamic));
        // (2, 3) and (0, 3) in one color share only static body 3.
        assert!(check(&[0, 1, 2, 4, 4], &[0, 1, 2, 3], &dynamic));
        // Conflicts in the overflow are the Jacobi pass's to average.
        assert!(check(&[0, 1, 4], &[0, 1, 2, 3], &dynamic));
        // With body 1 static, (0, 1) and (1, 2) may share a color.
        dynamic[1] = false;
        assert!(check(&[0, 2, 4, 4], &[0, 1, 2, 3], &dynamic));
    }

    /// Keys match first; a point whose key is new takes the nearest old point within the
    /// radius that no key claimed and no earlier point took; nothing farther, nothing across a
    /// turned normal.
    #[test]
    fn warm_start_matches_keys_then_nearby_unclaimed_points() {
        let old = manifold(
            Vec3::Y,
            &[
                point(Vec3::new(-0.5, -0.5, -0.5), 1, 10.0),
                point(Vec3::new(0.5, -0.5, -0.5), 2, 20.0),
                point(Vec3::new(0.5, -0.5, 0.5), 3, 30.0),
                point(Vec3::new(-0.5, -0.5, 0.5), 4, 40.0),
            ],
        );
        let near = 0.5 * WARM_START_RADIUS;
        let new_points = [
            // Key 2 moved: its key wins over the nearer unclaimed point 1.
            point(Vec3::new(-0.5 + near, -0.5, -0.5), 2, 0.0),
            // A new key beside old point 1 (unclaimed): takes its impulses.
            point(Vec3::new(-0.5, -0.5, -0.5 + near), 7, 0.0),
            // A new key beside old point 3, which key 3 below claims: nothing.
            point(Vec3::new(0.5, -0.5, 0.5 - near), 8, 0.0),
            point(Vec3::new(0.5, -0.5, 0.5), 3, 0.0),
        ];
        let mut m = manifold(Vec3::Y, &new_points);
        warm_start(&old, &mut m, 1.0);
        let impulses: Vec<f32> = m.points[..4].iter().map(|c| c.normal_impulse).collect();
        assert_eq!(impulses, [20.0, 10.0, 0.0, 30.0]);
        assert_eq!(m.points[1].tangent_impulse_1, 5.0);

        // Old point 4 is free but farther than the radius from the new key 9.
        let far = point(Vec3::new(-0.5, -0.5, 0.5 - 2.0 * WARM_START_RADIUS), 9, 0.0);
        let mut m = manifold(Vec3::Y, &[far]);
        warm_start(&old, &mut m, 1.0);
        assert_eq!(m.points[0].normal_impulse, 0.0);

        // A normal turned by 30 degrees keeps key matches only; the scale applies.
        let turned = Quat::from_rotation_z(30f32.to_radians()) * Vec3::Y;
        let mut m = manifold(turned, &[new_points[1], new_points[3]]);
        warm_start(&old, &mut m, 0.5);
        assert_eq!([m.points[0].normal_impulse, m.points[1].normal_impulse], [0.0, 15.0]);
    }

    /// A resting pair of polytopes keeps last step's normal, lever arms and anchors, its
    /// separations measured between the old anchors; a slip or turn beyond the bounds, a lost
    /// key or a rounded shape takes the new frame.
    #[test]
    fn resting_polytopes_keep_their_contact_frame() {
        // A sits at the origin; B, a unit cube, rests on it 1 mm deep, turned 2e-4 rad about x.
        let a = GpuBody { orientation: glam::Quat::IDENTITY, ..Default::default() };
        let q_b = Quat::from_rotation_x(2e-4);
        let b = GpuBody { position: Vec3::new(0.0, 0.999, 0.0), orientation: q_b, ..Default::default() };
        let corners = [Vec3::new(-0.5, 0.5, -0.5), Vec3::new(0.5, 0.5, -0.5), Vec3::new(0.5, 0.5, 0.5)];
        // Last step: the frame taken when both were upright, the normal exactly +y.
        let mut old = manifold(Vec3::Y, &[]);
        old.count = 3;
        for (k, &c) in corners.iter().enumerate() {
            old.points[k] = GpuManifoldPoint {
                core_a: c,
                core_b: c - Vec3::Y,
                anchor_a: c,
                anchor_b: c - Vec3::Y,
                key: k as u32,
                ..Default::default()
            };
        }
        // Now: the narrow phase's frame follows B's turn (normal from B's face, cores where the
        // corners are now).
        let fresh = |drift: Vec3| {
            let n = q_b * Vec3::Y;
            let mut m = manifold(n, &[]);
            m.count = 3;
            for (k, &c) in corners.iter().enumerate() {
                let core_b = q_b * (c - Vec3::Y) + drift;
                let core_a = b.position + core_b;
                m.points[k] = GpuManifoldPoint {
                    core_a,
                    core_b,
                    anchor_a: core_a,
                    anchor_b: rotate_inv(q_b, core_b),
                    key: k as u32,
                    ..Default::default()
                };
            }
            m
        };
        let mut m = fresh(Vec3::ZERO);
        assert!(keep_frame(&old, &mut m, &a, &b));
        assert_eq!((m.normal, m.frame_kept), (Vec3::Y, 1));
        for (k, c) in m.points[..3].iter().enumerate() {
            assert_eq!((c.core_a, c.core_b), (corners[k], corners[k] - Vec3::Y));
            // The anchors lost their slide across the normal (B's turn moved its anchor by
            // 1e-4 m along z), half on each side: their midpoint and their gap along the
            // normal are those of the old anchors.
            let (old_a, old_b) = (corners[k], b.position + q_b * (corners[k] - Vec3::Y));
            let (new_a, new_b) = (c.anchor_a, b.position + q_b * c.anchor_b);
            let slide = (old_b - old_a) - Vec3::Y * (old_b - old_a).y;
            assert!(slide.length() > 5e-5, "point {k}: the anchors slid {slide}");
            let gap = new_b - new_a;
            assert!((gap - Vec3::Y * gap.y).length() < 1e-6, "point {k}: {gap} apart across the normal");
            assert!(((new_a + new_b) - (old_a + old_b)).length() < 1e-6, "point {k}: the midpoint moved");
            assert!((gap.y - (old_b - old_a).y).abs() < 1e-6, "point {k}: the gap along the normal changed");
            // Between the old anchors: B's anchor is at 0.999 + q_b (c - y) ; the separation at
            // the start of the step is its height above A's anchor.
            let s = c.base_separation + m.normal.dot(c.core_b - c.core_a);
            let expected = (b.position + q_b * (corners[k] - Vec3::Y)).y - corners[k].y;
            assert!((s - expected).abs() < 1e-6, "point {k}: separation {s}, expected {expected}");
        }
        // B slipped 6 mm along x: a new frame.
        let mut slipped = fresh(Vec3::new(1.2 * FRAME_DRIFT, 0.0, 0.0));
        let before = slipped;
        assert!(!keep_frame(&old, &mut slipped, &a, &b));
        assert_eq!(slipped, before);
        // A key the old manifold lacks: a new frame.
        let mut renamed = fresh(Vec3::ZERO);
        renamed.points[2].key = 9;
        let before = renamed;
        assert!(!keep_frame(&old, &mut renamed, &a, &b));
        assert_eq!(renamed, before);
        // Rounded shapes roll: never kept.
        let mut rounded = fresh(Vec3::ZERO);
        rounded.radius_b = 0.1;
        let before = rounded;
        assert!(!keep_frame(&old, &mut rounded, &a, &b));
        assert_eq!(rounded, before);
        // A point fewer, two points with one key, a normal turned by 2 degrees: new frames.
        let mut fewer = fresh(Vec3::ZERO);
        fewer.count = 2;
        assert!(!keep_frame(&old, &mut fewer, &a, &b));
        let mut twice = fresh(Vec3::ZERO);
        twice.points[2].key = twice.points[1].key;
        assert!(!keep_frame(&old, &mut twice, &a, &b));
        let mut turned = fresh(Vec3::ZERO);
        turned.normal = Quat::from_rotation_z(2f32.to_radians()) * Vec3::Y;
        assert!(!keep_frame(&old, &mut turned, &a, &b));
        // A frame taken 12 mm deep, its lever arms at the midpoint 6 mm from either surface
        // point, is kept at that depth: the arms are compared with the new frame's midpoint.
        let b_deep =
            GpuBody { position: Vec3::new(0.0, 0.988, 0.0), orientation: Quat::IDENTITY, ..Default::default() };
        let half = Vec3::new(0.0, 0.006, 0.0);
        let mut old_deep = old;
        let mut deep = manifold(Vec3::Y, &[]);
        deep.count = 3;
        for (k, &c) in corners.iter().enumerate() {
            (old_deep.points[k].core_a, old_deep.points[k].core_b) = (c - half, c - Vec3::Y + half);
            deep.points[k] = GpuManifoldPoint { core_a: c, core_b: c - Vec3::Y, key: k as u32, ..Default::default() };
        }
        assert!(keep_frame(&old_deep, &mut deep, &a, &b_deep));
    }

    /// A resting manifold of a cube of half-size `h` on a fixed box: the frame taken with B's
    /// bottom face 1 mm deep in A's top face at y = `h`, lever arms at the midpoints. Returns
    /// A, B (falling at 0.5 m/s) and the manifold.
    fn cube_on_a_box(h: f32) -> (GpuBody, GpuBody, GpuManifold) {
        let a = GpuBody { orientation: Quat::IDENTITY, ..Default::default() };
        let b = GpuBody {
            position: Vec3::new(0.0, 2.0 * h - 0.001, 0.0),
            orientation: Quat::IDENTITY,
            linear_velocity: Vec3::new(0.0, -0.5, 0.0),
            ..Default::default()
        };
        let mut m = manifold(Vec3::Y, &[]);
        (m.count, m.color, m.friction, m.absorbed) = (4, 3, 0.6, 2.0);
        for (k, (x, z)) in [(-h, -h), (h, -h), (h, h), (-h, h)].into_iter().enumerate() {
            let c = Vec3::new(x, h, z);
            let mid = c - Vec3::new(0.0, 0.0005, 0.0);
            m.points[k] = GpuManifoldPoint {
                core_a: mid,
                core_b: mid - b.position,
                anchor_a: c,
                anchor_b: c - Vec3::new(0.0, 2.0 * h, 0.0),
                normal_impulse: 7.0,
                key: 10 + k as u32,
                ..Default::default()
            };
        }
        (a, b, m)
    }

    /// A and B turned together by `turn` about `pivot`.
    fn turned_together(a: &GpuBody, b: &GpuBody, turn: Quat, pivot: Vec3) -> (GpuBody, GpuBody) {
        let at = |x: &GpuBody| GpuBody {
            position: pivot + turn * (x.position - pivot),
            orientation: turn * x.orientation,
            ..*x
        };
        (at(a), at(b))
    }

    /// A kept frame's drift bound shrinks with a small contact: a 1 cm cube on a box keeps its
    /// frame after a 0.5 mm slide but not after 1.5 mm (a tenth of its 1 cm face), where a
    /// unit cube keeps it after 4 mm (the 5 mm of `FRAME_DRIFT`).
    #[test]
    fn a_small_contact_keeps_its_frame_over_less_drift() {
        let slid = |h: f32, dx: f32| {
            let (a, b, old) = cube_on_a_box(h);
            let b = GpuBody { position: b.position + Vec3::new(dx, 0.0, 0.0), ..b };
            // What the narrow phase finds: B's corners where they were on B, A's points under them.
            let mut m = old;
            for c in &mut m.points[..4] {
                (c.core_a, c.core_b) = (c.anchor_a + Vec3::new(dx, 0.0, 0.0), c.anchor_b);
            }
            keep_frame(&old, &mut m, &a, &b)
        };
        let (_, _, small) = cube_on_a_box(0.005);
        assert!((frame_drift(&small) - 0.001).abs() < 1e-6, "{}", frame_drift(&small));
        assert_eq!(frame_drift(&cube_on_a_box(0.5).2), FRAME_DRIFT);
        // Three points: their one triangle, twice whose area is the 1 cm square's (size 1 cm);
        // two, across the diagonal: 1.41 cm apart; one: no size.
        let mut three = small;
        three.count = 3;
        assert!((frame_drift(&three) - 0.001).abs() < 1e-6, "{}", frame_drift(&three));
        let mut two = small;
        (two.count, two.points[1]) = (2, small.points[2]);
        assert!((frame_drift(&two) - 0.1 * 0.01 * 2f32.sqrt()).abs() < 1e-6, "{}", frame_drift(&two));
        let mut one = small;
        one.count = 1;
        assert_eq!(frame_drift(&one), FRAME_DRIFT);
        assert!(slid(0.005, 0.0005), "0.5 mm on a 1 cm cube");
        assert!(!slid(0.005, 0.0015), "1.5 mm on a 1 cm cube");
        assert!(slid(0.5, 0.004), "4 mm on a unit cube");
        assert!(!slid(0.5, 0.006), "6 mm on a unit cube");
    }

    /// A resting manifold of a unit cube on a fixed box is carried over without the narrow
    /// phase: same points, keys, lever arms and anchors, the separations measured between the
    /// anchors now, the approach velocity from the current velocities, no impulses. It is not
    /// when its anchors slid 1.2 mm apart, the cube rose past the margin, both bodies turned
    /// together far enough to move a lever arm 5 mm off the anchors' midpoint (0.5 degrees
    /// about the normal: 6.2 mm; 0.3 degrees, 3.7 mm, is recycled) or their contact faces 1.2
    /// degrees (also a 1 cm cube's, whose lever arms move 0.2 mm), a 1 cm cube slid 0.25 mm
    /// (its face allows 0.2 mm), it has three points, a shape is rounded, or recycling is off.
    #[test]
    fn resting_manifolds_are_recycled_until_they_slide_or_turn() {
        let p = StepParams { gravity: Vec3::new(0.0, -10.0, 0.0), recycle_contacts: 1, ..Default::default() };
        let (a, b, old) = cube_on_a_box(0.5);
        let margin = 0.02;
        let recycled = |a: &GpuBody, b: &GpuBody, m: &GpuManifold| recycle(&p, m, a, b, margin, 1.0);
        let m = recycled(&a, &b, &old).expect("a resting cube is recycled");
        assert_eq!((m.recycled, m.frame_kept, m.count, m.color, m.friction, m.normal), (1, 1, 4, 3, 0.6, Vec3::Y));
        assert_eq!(m.absorbed, 0.0);
        for (c, q) in m.points[..4].iter().zip(&old.points) {
            assert_eq!(
                (c.key, c.core_a, c.core_b, c.anchor_a, c.anchor_b),
                (q.key, q.core_a, q.core_b, q.anchor_a, q.anchor_b)
            );
            assert_eq!(c.normal_impulse, 0.0);
            // 1 mm deep, measured between the anchors; B falls at 0.5 m/s.
            let s = c.base_separation + m.normal.dot(c.core_b - c.core_a);
            assert!((s + 0.001).abs() < 1e-6, "separation {s}");
            assert_eq!(c.approach_velocity, -0.5);
        }
        // Each refusal, from a pose or manifold that differs in one thing.
        let slid = GpuBody { position: b.position + Vec3::new(1.2 * RECYCLE_DRIFT, 0.0, 0.0), ..b };
        assert!(recycled(&a, &slid, &old).is_none(), "slid 1.2 mm");
        let risen = GpuBody { position: b.position + Vec3::new(0.0, margin + 0.0011, 0.0), ..b };
        assert!(recycled(&a, &risen, &old).is_none(), "past the margin");
        let pivot = Vec3::new(0.0, 0.5, 0.0);
        let cases = [
            (Quat::from_rotation_y(0.5f32.to_radians()), false, "0.5 degrees about the normal"),
            (Quat::from_rotation_y(0.3f32.to_radians()), true, "0.3 degrees about the normal"),
            (Quat::from_rotation_x(1.2f32.to_radians()), false, "1.2 degrees about x"),
            (Quat::from_rotation_x(0.05f32.to_radians()), true, "0.05 degrees about x"),
        ];
        for (turn, kept, what) in cases {
            let (ta, tb) = turned_together(&a, &b, turn, pivot);
            assert_eq!(recycled(&ta, &tb, &old).is_some(), kept, "turned together {what}");
        }
        let nearly = GpuBody { position: b.position + Vec3::new(0.9 * RECYCLE_DRIFT, 0.0, 0.0), ..b };
        assert!(recycled(&a, &nearly, &old).is_some(), "slid 0.9 mm");
        // A 1 cm cube's face allows 2 % of its 1 cm: 0.2 mm.
        let (small_a, small_b, small) = cube_on_a_box(0.005);
        assert!(recycled(&small_a, &small_b, &small).is_some());
        let shifted = |dx: f32| GpuBody { position: small_b.position + Vec3::new(dx, 0.0, 0.0), ..small_b };
        assert!(recycled(&small_a, &shifted(0.00015), &small).is_some(), "a 1 cm cube slid 0.15 mm");
        assert!(recycled(&small_a, &shifted(0.00025), &small).is_none(), "a 1 cm cube slid 0.25 mm");
        let (ta, tb) = turned_together(&small_a, &small_b, Quat::from_rotation_x(1.2f32.to_radians()), Vec3::ZERO);
        assert!(recycled(&ta, &tb, &small).is_none(), "a 1 cm cube's faces turned 1.2 degrees");
        let mut three = old;
        three.count = 3;
        assert!(recycled(&a, &b, &three).is_none(), "three points");
        let mut rounded = old;
        rounded.radius_a = 0.01;
        assert!(recycled(&a, &b, &rounded).is_none(), "rounded");
        let off = StepParams { recycle_contacts: 0, ..p };
        assert!(recycle(&off, &old, &a, &b, margin, 1.0).is_none(), "off");
    }

    /// A new frame: anchors are the surface points in each body's frame, both cores move to
    /// their midpoint, and the separation stays.
    #[test]
    fn a_fresh_frame_meets_at_the_midpoint_and_keeps_the_separation() {
        let a = GpuBody {
            position: Vec3::new(0.2, 0.0, 0.0),
            orientation: Quat::from_rotation_y(0.3),
            ..Default::default()
        };
        let b = GpuBody {
            position: Vec3::new(0.0, 1.0, 0.1),
            orientation: Quat::from_rotation_x(-0.2),
            ..Default::default()
        };
        let n = Vec3::Y;
        // B's corner 3 mm below A's face.
        let (core_a, core_b) = (Vec3::new(0.1, 0.5, 0.2), Vec3::new(0.3, -0.503, 0.1));
        let s = n.dot((b.position + core_b) - (a.position + core_a));
        let mut m = manifold(
            n,
            &[GpuManifoldPoint { core_a, core_b, base_separation: s - n.dot(core_b - core_a), ..Default::default() }],
        );
        fresh_frame(&mut m, &a, &b);
        let c = &m.points[0];
        assert!((rotate(a.orientation, c.anchor_a) - core_a).length() < 1e-6);
        assert!((rotate(b.orientation, c.anchor_b) - core_b).length() < 1e-6);
        let midpoint = 0.5 * ((a.position + core_a) + (b.position + core_b));
        assert!((a.position + c.core_a - midpoint).length() < 1e-6, "A's lever reaches {}", a.position + c.core_a);
        assert!((b.position + c.core_b - midpoint).length() < 1e-6, "B's lever reaches {}", b.position + c.core_b);
        let kept = c.base_separation + n.dot(c.core_b - c.core_a);
        assert!((kept - s).abs() < 1e-6 && (s - -0.003).abs() < 1e-5, "separation {s} became {kept}");
    }

    /// A friction impulse warm-starts in the same world direction when the normal dithers
    /// across `n.z = 0`, where the tangent basis turns by half a turn: a side contact (normal
    /// along x) of a box leaning out of its plane by 1e-6 rad one way, then the other.
    #[test]
    fn warm_started_friction_keeps_its_world_direction_across_the_basis_seam() {
        let tilt = |z: f32| Vec3::new(1.0, 0.0, z).normalize();
        let mut old = manifold(tilt(1e-6), &[point(Vec3::new(0.5, 0.3, 0.0), 1, 10.0)]);
        old.points[0].tangent_impulse_2 = -2.0;
        let world = |m: &GpuManifold| {
            let (t1, t2) = tangent_basis(m.normal);
            m.points[0].tangent_impulse_1 * t1 + m.points[0].tangent_impulse_2 * t2
        };
        let before = world(&old);
        let mut m = manifold(tilt(-1e-6), &[point(Vec3::new(0.5, 0.3, 0.0), 1, 0.0)]);
        warm_start(&old, &mut m, 1.0);
        let after = world(&m);
        // What lay along the new normal (about 1e-5 here) is dropped; a flip errs by about 10.
        assert!((after - before).length() < 1e-4, "friction impulse {before} became {after}");
        assert!(before.length() > 5.0, "the impulse has both tangent components: {before}");
        // The same normal keeps the components as they are.
        let mut same = manifold(old.normal, &[point(Vec3::new(0.5, 0.3, 0.0), 1, 0.0)]);
        warm_start(&old, &mut same, 1.0);
        assert_eq!(
            (same.points[0].tangent_impulse_1, same.points[0].tangent_impulse_2),
            (old.points[0].tangent_impulse_1, old.points[0].tangent_impulse_2)
        );
    }

    /// The warm start by body gives each body the velocity change of applying every manifold's
    /// impulses one manifold at a time (up to rounding: the sums run in another order), and a
    /// bouncing manifold's work is that of its own impulses from the velocities before.
    #[test]
    fn warm_start_by_body_matches_one_manifold_at_a_time() {
        use crate::prelude::*;
        use crate::solver::Solver;
        // A pile of boxes, every seventh bouncy, so that some manifolds count work.
        let mut world = World::new(crate::scenes::bench_desc()).unwrap();
        let side = crate::scenes::add_container(&mut world, 300).unwrap();
        for i in 0..300 {
            let e = if i % 7 == 0 { 0.5 } else { 0.0 };
            let shape = Shape::cuboid(Vec3::new(0.2, 0.25, 0.15));
            world
                .add_body(RigidBodyDesc::dynamic(shape).position(crate::scenes::rain_cell(i, side)).restitution(e))
                .unwrap();
        }
        let mut solver = crate::cpu::CpuSolver::new(&world).unwrap();
        solver.step_many(40);
        let mut cs = std::mem::take(&mut solver.contacts_state);
        let w = solver.body_view();
        prepare(&w, &mut cs);
        load_motions(&w, &mut cs);
        let (mut reference, mut bouncing) = (cs.motions.clone(), 0);
        let mut absorbed = Vec::new();
        for ((m, i), q) in cs.solving.iter().zip(&cs.impulses).zip(&cs.prepared) {
            // The step's impulses, kept apart from `solving` until `finish_step`.
            let mut m = *m;
            set_impulses(&mut m, i);
            let (a, b) = (m.body_a as usize, m.body_b as usize);
            let (mut alone_a, mut alone_b) = (cs.motions[a], cs.motions[b]);
            let mut work = m.absorbed;
            for (c, g) in m.points[..m.count as usize].iter().zip(q.geo()) {
                let j = c.normal_impulse * m.normal + c.tangent_impulse_1 * q.t1() + c.tangent_impulse_2 * q.t2();
                reference[a].apply(g.ra, -j);
                reference[b].apply(g.rb, j);
                if m.restitution > 0.0 {
                    work -= apply_at(&mut alone_a, &mut alone_b, &g, j, true);
                }
            }
            bouncing += usize::from(m.restitution > 0.0 && work != m.absorbed);
            absorbed.push(work);
        }
        // Bit for bit, the additions in pair order of each point's impulse through
        // `Motion::apply`, on one thread and on several (the lanes compute the terms).
        let mut exact = cs.motions.clone();
        for (m, &k) in cs.manifolds.iter().zip(&cs.slots) {
            let (i, q) = (&cs.impulses[k as usize], &cs.prepared[k as usize]);
            let (a, b) = (m.body_a as usize, m.body_b as usize);
            for (p, g) in q.geo().iter().enumerate().take(m.count as usize) {
                let [normal, t1, t2, _] = i[p];
                let j = normal * m.normal + t1 * q.t1() + t2 * q.t2();
                if cs.dynamic[a] {
                    exact[a].apply(g.ra, -j);
                }
                if cs.dynamic[b] {
                    exact[b].apply(g.rb, j);
                }
            }
        }
        let (before, solving) = (cs.motions.clone(), cs.solving.clone());
        let lanes = [crate::CpuLanes::Sixteen, crate::CpuLanes::Four, crate::CpuLanes::Eight, crate::CpuLanes::Sixteen];
        for (run, lanes) in lanes.into_iter().enumerate() {
            let parallel = run == 0;
            (cs.motions, cs.solving, cs.parallel) = (before.clone(), solving.clone(), parallel);
            warm_start_bodies(&mut cs, Simd::new(lanes));
            for (i, (x, y)) in exact.iter().zip(&cs.motions).enumerate() {
                let bits = |m: &Motion| [m.v, m.w].map(|v| v.to_array().map(f32::to_bits));
                assert_eq!(bits(x), bits(y), "body {i}, parallel {parallel}, {lanes:?}");
            }
        }
        let scale = reference.iter().map(|m| m.v.length().max(m.w.length())).fold(1.0_f32, f32::max);
        for (i, (x, y)) in reference.iter().zip(&cs.motions).enumerate().filter(|(i, _)| cs.dynamic[*i]) {
            let diff = (x.v - y.v).length().max((x.w - y.w).length());
            assert!(diff <= 1e-5 * scale, "body {i}: {diff} m/s apart");
        }
        for (k, m) in cs.solving.iter().enumerate() {
            assert_eq!(m.absorbed.to_bits(), absorbed[k].to_bits(), "manifold {k}");
        }
        assert!(bouncing >= 5, "{bouncing} bouncing manifolds did work");
    }

    /// After a step, each manifold in pair order is its `solving` copy with the step's impulses,
    /// byte for byte, bouncy or not, colored or in the overflow: `finish_step` writes back only
    /// the impulses of manifolds that cannot bounce, so no pass may change anything else of
    /// theirs.
    #[test]
    fn finish_step_gives_back_every_changed_word() {
        use crate::prelude::*;
        use crate::solver::Solver;
        // One color, so that many manifolds go to the Jacobi overflow.
        let mut desc = crate::scenes::bench_desc();
        desc.solver.max_colors = 1;
        let mut world = World::new(desc).unwrap();
        let side = crate::scenes::add_container(&mut world, 300).unwrap();
        for i in 0..300 {
            let e = if i % 5 == 0 { 0.6 } else { 0.0 };
            let shape = Shape::cuboid(Vec3::new(0.2, 0.25, 0.15));
            let body = RigidBodyDesc::dynamic(shape).position(crate::scenes::rain_cell(i, side)).restitution(e);
            world.add_body(body).unwrap();
        }
        let mut solver = crate::cpu::CpuSolver::new(&world).unwrap();
        let (mut bouncy, mut overflow) = (0, 0);
        for _ in 0..40 {
            solver.step();
            let cs = &solver.contacts_state;
            for (i, (m, &k)) in cs.manifolds.iter().zip(&cs.slots).enumerate() {
                let mut whole = cs.solving[k as usize];
                set_impulses(&mut whole, &cs.impulses[k as usize]);
                assert_eq!(bytemuck::bytes_of(m), bytemuck::bytes_of(&whole), "manifold {i}");
                bouncy += usize::from(m.restitution > 0.0 && m.absorbed != 0.0);
                overflow += usize::from(k >= cs.color_offsets[1]);
            }
        }
        assert!(bouncy > 100 && overflow > 100, "{bouncy} bouncing manifolds did work, {overflow} in the overflow");
    }

    /// The preparation in four and in eight lanes (in an AVX register where the processor has
    /// AVX) gives each manifold the lever arms, separations, effective masses and tangent basis
    /// of the one-at-a-time code, bit for bit, mid-step (the bodies moved since the step
    /// began), for kept and new frames and rounded shapes.
    #[test]
    fn lane_preparation_matches_one_manifold_at_a_time() {
        let widest = Simd::new(crate::CpuLanes::Sixteen);
        eprintln!("widest lanes on this processor: {}", widest.widest());
        use crate::solver::Solver;
        let desc = crate::scenes::bench_desc;
        let worlds = [crate::scenes::box_pile(desc(), 400, 3).unwrap(), crate::scenes::rain(desc(), 400, 5).unwrap()];
        let (mut groups, mut kept, mut fresh, mut rounded) = (0, 0, 0, 0);
        for world in worlds {
            let mut solver = crate::cpu::CpuSolver::new(&world).unwrap();
            solver.step_many(45);
            let mut cs = std::mem::take(&mut solver.contacts_state);
            let w = solver.body_view();
            prepare(&w, &mut cs);
            let motion = |i: usize| Motion {
                inv_mass: if cs.dynamic[i] { w.bodies[i].inv_mass } else { 0.0 },
                inv_inertia: cs.inertia[i],
                ..Motion::default()
            };
            let bits = |p: &Prepared, count: usize| {
                // The manifold's own words, then the points it has.
                let mut out = p.points.iter().map(|p| p.manifold).collect::<Vec<_>>();
                for (g, k) in p.geo().iter().zip(&p.masses()).take(count) {
                    let [w11, w12, w22] = k.newton;
                    out.extend([g.ra.to_array(), g.rb.to_array(), [g.separation, k.k_n, k.normal_mass]]);
                    out.extend([[w11, w12, w22], [k.tangent_step, 0.0, 0.0]]);
                }
                out.iter().flatten().map(|x| x.to_bits()).collect::<Vec<_>>()
            };
            assert!(cs.solving.iter().any(|m| w.solver_bodies[m.body_b as usize].delta_position != Vec3::ZERO));
            // The coloring's inputs are those of `solving`, in its order.
            for (k, (input, m)) in cs.prepare_inputs.iter().zip(&cs.solving).enumerate() {
                assert_eq!(bytemuck::bytes_of(input), bytemuck::bytes_of(&PrepareInput::new(m)), "manifold {k}");
            }
            assert_eq!(cs.prepare_inputs.len(), cs.solving.len());
            // Eight lanes with AVX-512's registers where the processor has them, and without.
            for (width, simd) in [(4, widest), (8, Simd::new(crate::CpuLanes::Eight)), (8, widest)] {
                for ms in cs.solving.chunks_exact(width) {
                    // From NaN, so that whatever the lane code fails to write shows.
                    let nan = bytemuck::cast::<[f32; 64], Prepared>([f32::NAN; 64]);
                    let mut lanes = vec![nan; width];
                    let inputs: Vec<PrepareInput> = ms.iter().map(PrepareInput::new).collect();
                    if width == 8 {
                        super::super::lanes::prepare8(
                            simd,
                            &inputs,
                            w.bodies,
                            w.solver_bodies,
                            &cs.motions,
                            &mut lanes,
                        );
                    } else {
                        super::super::lanes::prepare4(&inputs, w.bodies, w.solver_bodies, &cs.motions, &mut lanes);
                    }
                    for (m, q) in ms.iter().zip(&lanes) {
                        let mut one = nan;
                        prepare_one(&w, &motion(m.body_a as usize), &motion(m.body_b as usize), m, &mut one);
                        assert_eq!(
                            bits(&one, m.count as usize),
                            bits(q, m.count as usize),
                            "manifold of {} and {}",
                            m.body_a,
                            m.body_b
                        );
                        kept += m.frame_kept;
                        fresh += 1 - m.frame_kept;
                        rounded += u32::from(!polytopes(m));
                    }
                    groups += 1;
                }
            }
        }
        assert!(
            groups > 100 && kept > 20 && fresh > 20 && rounded > 20,
            "{groups} groups: {kept} kept frames, {fresh} new ones, {rounded} rounded"
        );
    }

    /// Position integration in four and in eight lanes gives bit for bit the poses, motions and
    /// world inertia of the one-body code, for bodies turning slowly and fast, and leaves static
    /// ones alone;
    /// a group with a body turning past the exponential map's direct range is left unwritten
    /// (for the one-body code, which halves the angle first).
    #[test]
    fn lane_position_integration_matches_one_body_at_a_time() {
        use crate::layout::{GpuBodyProps, GpuSolverBody, KIND_DYNAMIC, KIND_KINEMATIC, KIND_STATIC};
        let world = crate::scenes::box_pile(crate::scenes::bench_desc(), 10, 1).unwrap();
        let p = StepParams::new(&world, 0);
        let mut rng = crate::scenes::Lcg(9);
        let (mut bodies, mut solver_bodies, mut props) = (Vec::new(), Vec::new(), Vec::new());
        for k in 0..96 {
            let mut v = || Vec3::new(rng.next_centered(), rng.next_centered(), rng.next_centered());
            let (position, lv, w, axis, moved) = (100.0 * v(), 10.0 * v(), v(), v(), v());
            // One group of eight in three has a body turning past the direct range.
            let w = if k % 24 == 5 { 2.0 / p.h * w.normalize() } else { 150.0 * w };
            let orientation = Quat::from_axis_angle(axis.normalize(), 3.0 * axis.x);
            bodies.push(GpuBody {
                position,
                orientation,
                linear_velocity: lv,
                angular_velocity: w,
                ..Default::default()
            });
            let delta_rotation = Quat::from_axis_angle(moved.normalize(), 0.1 * moved.y);
            solver_bodies.push(GpuSolverBody { delta_position: moved, delta_rotation, ..GpuSolverBody::at_rest() });
            let kind = [KIND_DYNAMIC, KIND_DYNAMIC, KIND_STATIC, KIND_KINEMATIC][k % 4];
            // Uneven principal inertia, so the world inertia each substep recomputes is no zero.
            let inv_inertia = Vec3::new(1.0, 3.0, 7.0) + v().abs();
            props.push(GpuBodyProps { kind, inv_inertia, ..Default::default() });
        }
        let (mut one, mut one_s) = (bodies.clone(), solver_bodies.clone());
        for ((b, sb), pr) in one.iter_mut().zip(&mut one_s).zip(&props) {
            super::super::stages::integrate_position(&p, b, sb, pr);
        }
        let changed = one.iter().zip(&bodies).filter(|(x, y)| x != y).count();
        assert_eq!(changed, 96 * 3 / 4, "the dynamic and kinematic bodies, and only they, moved");
        for width in [4, 8] {
            let (mut lanes, mut lanes_s, mut refused) = (bodies.clone(), solver_bodies.clone(), 0);
            for ((b, sb), pr) in lanes.chunks_mut(width).zip(lanes_s.chunks_mut(width)).zip(props.chunks(width)) {
                let done = if width == 8 {
                    super::super::lanes::integrate_positions8(Simd::new(crate::CpuLanes::Eight), p.h, b, sb, pr)
                } else {
                    super::super::lanes::integrate_positions4(p.h, b, sb, pr)
                };
                if !done {
                    refused += 1;
                    for ((b, sb), pr) in b.iter_mut().zip(sb.iter_mut()).zip(pr) {
                        super::super::stages::integrate_position(&p, b, sb, pr);
                    }
                }
            }
            assert_eq!(refused, 4, "width {width}: {refused} groups refused");
            assert_eq!(bytemuck::cast_slice::<_, u32>(&one), bytemuck::cast_slice::<_, u32>(&lanes), "width {width}");
            assert_eq!(
                bytemuck::cast_slice::<_, u32>(&one_s),
                bytemuck::cast_slice::<_, u32>(&lanes_s),
                "width {width}"
            );
        }
    }

    /// The world inverse inertia in four and in eight lanes is the one-body code's bit for bit,
    /// for turned bodies of uneven inertia, and zero for static and kinematic ones.
    #[test]
    fn lane_world_inertia_matches_one_body_at_a_time() {
        use crate::layout::{GpuBodyProps, KIND_DYNAMIC, KIND_KINEMATIC, KIND_STATIC};
        let mut rng = crate::scenes::Lcg(11);
        let (mut bodies, mut props) = (Vec::new(), Vec::new());
        for k in 0..64 {
            let axis = Vec3::new(rng.next_centered(), rng.next_centered(), rng.next_centered());
            let orientation = Quat::from_axis_angle(axis.normalize(), 3.0 * axis.x);
            bodies.push(GpuBody { orientation, ..Default::default() });
            props.push(GpuBodyProps {
                inv_inertia: Vec3::new(rng.range(0.5, 4.0), rng.range(0.5, 4.0), rng.range(0.5, 4.0)),
                kind: [KIND_DYNAMIC, KIND_DYNAMIC, KIND_DYNAMIC, KIND_STATIC, KIND_KINEMATIC][k % 5],
                ..Default::default()
            });
        }
        let one: Vec<Mat3> = bodies.iter().zip(&props).map(|(b, p)| body_inertia(b, p)).collect();
        assert_eq!(one.iter().filter(|m| **m != Mat3::ZERO).count(), 64 * 3 / 5 + 1);
        for width in [4, 8] {
            let mut lanes = vec![Mat3::from_cols_array(&[f32::NAN; 9]); 64];
            for ((b, p), out) in bodies.chunks(width).zip(props.chunks(width)).zip(lanes.chunks_mut(width)) {
                if width == 8 {
                    super::super::lanes::world_inertia8(Simd::new(crate::CpuLanes::Eight), b, p, out);
                } else {
                    super::super::lanes::world_inertia4(b, p, out);
                }
            }
            assert_eq!(bytemuck::cast_slice::<_, u32>(&one), bytemuck::cast_slice::<_, u32>(&lanes), "width {width}");
        }
    }

    /// Velocity integration in four and in eight lanes gives bit for bit the velocities of the
    /// one-body code, for dynamic bodies of uneven inertia (the gyroscopic Newton steps at work),
    /// damped, some spinning past the rotation cap, and leaves static and kinematic ones alone.
    #[test]
    fn lane_integration_matches_one_body_at_a_time() {
        use crate::layout::{GpuBodyProps, KIND_DYNAMIC, KIND_KINEMATIC, KIND_STATIC};
        let world = crate::scenes::box_pile(crate::scenes::bench_desc(), 10, 1).unwrap();
        let p = StepParams::new(&world, 0);
        let mut rng = crate::scenes::Lcg(7);
        let (mut bodies, mut props) = (Vec::new(), Vec::new());
        for k in 0..64 {
            let mut v = || Vec3::new(rng.next_centered(), rng.next_centered(), rng.next_centered());
            let (lv, w, axis) = (10.0 * v(), v(), v());
            let spin = if k % 5 == 0 { 4.0 / p.h } else { 20.0 };
            let orientation = Quat::from_axis_angle(axis.normalize(), 3.0 * axis.x);
            bodies.push(GpuBody { orientation, linear_velocity: lv, angular_velocity: spin * w, ..Default::default() });
            props.push(GpuBodyProps {
                inv_inertia: Vec3::new(rng.range(0.5, 4.0), rng.range(0.5, 4.0), rng.range(0.5, 4.0)),
                kind: [KIND_DYNAMIC, KIND_DYNAMIC, KIND_DYNAMIC, KIND_STATIC, KIND_KINEMATIC][k % 5],
                linear_damping: rng.range(0.0, 0.5),
                angular_damping: rng.range(0.0, 0.5),
                ..Default::default()
            });
        }
        let mut one = bodies.clone();
        for (b, pr) in one.iter_mut().zip(&props) {
            super::super::stages::integrate_velocity(&p, b, pr);
        }
        let capped = one.iter().filter(|b| b.angular_velocity.length() * p.h >= 0.999 * p.max_rotation).count();
        assert!(capped >= 3, "{capped} bodies at the rotation cap");
        let changed = one.iter().zip(&bodies).filter(|(x, y)| x != y).count();
        assert_eq!(changed, 64 * 3 / 5 + 1, "the dynamic bodies, and only they, changed");
        for width in [4, 8] {
            let mut lanes = bodies.clone();
            for (b, pr) in lanes.chunks_mut(width).zip(props.chunks(width)) {
                if width == 8 {
                    super::super::lanes::integrate8(Simd::new(crate::CpuLanes::Eight), &p, b, pr);
                } else {
                    super::super::lanes::integrate4(&p, b, pr);
                }
            }
            assert_eq!(bytemuck::cast_slice::<_, u32>(&one), bytemuck::cast_slice::<_, u32>(&lanes), "width {width}");
        }
    }

    /// Polytope world points and planes in SIMD lanes are bit for bit `Posed::world_into`'s, for
    /// hulls whose point and face counts leave remainders, in four lanes and the widest.
    #[test]
    fn lane_world_points_match_posed_world_into() {
        let desc = crate::scenes::bench_desc;
        let worlds = [crate::scenes::convex_pile(desc()).unwrap(), crate::scenes::box_pile(desc(), 10, 1).unwrap()];
        let solvers = worlds.map(|w| crate::cpu::CpuSolver::new(&w).unwrap());
        let mut rng = crate::scenes::Lcg(5);
        let (mut tested, mut odd) = (0, false);
        for solver in &solvers {
            let (shapes, geometry, topology) = (&solver.shapes, &solver.geometry, &solver.topology);
            odd |= shapes
                .iter()
                .any(|s| crate::collide::is_polytope(s) && (s.point_count % 4 != 0 || s.face_count % 4 != 0));
            for sh in shapes.iter().filter(|s| crate::collide::is_polytope(s)) {
                for _ in 0..10 {
                    let mut v = || Vec3::new(rng.next_centered(), rng.next_centered(), rng.next_centered());
                    let (position, axis) = (10.0 * v(), v().normalize());
                    let q = Quat::from_axis_angle(axis, 7.0 * axis.y);
                    let mut reference = vec![Vec4::ZERO; Posed::world_len(sh) as usize];
                    Posed::new(sh, position, q, geometry, topology).world_into(&mut reference);
                    let first = sh.first_point as usize;
                    let (points, planes) = geometry[first..].split_at(sh.point_count as usize);
                    let planes = &planes[..sh.face_count as usize];
                    let bits = |x: &[Vec4]| x.iter().flat_map(|v| v.to_array().map(f32::to_bits)).collect::<Vec<_>>();
                    for wide in [false, true] {
                        let mut out = vec![Vec4::splat(f32::NAN); reference.len()];
                        if wide {
                            let simd = Simd::new(crate::CpuLanes::Eight);
                            super::super::lanes::polytope_world(simd, q, position, points, planes, &mut out);
                        } else {
                            super::super::lanes::polytope_world4(q, position, points, planes, &mut out);
                        }
                        assert_eq!(bits(&reference), bits(&out), "shape with {} points", sh.point_count);
                    }
                    tested += 1;
                }
            }
        }
        assert!(tested >= 20 && odd, "{tested} poses; a shape with a remainder past four: {odd}");
    }

    /// The sweeps (biased and relax) in four, eight and sixteen lanes give bit for bit the impulses and
    /// velocities of the manifold-at-a-time sweeps, on a settling pile of boxes with one to four
    /// points per manifold and contacts against its static container.
    #[test]
    fn lane_sweeps_match_one_manifold_at_a_time() {
        let widest = Simd::new(crate::CpuLanes::Sixteen);
        eprintln!("widest lanes on this processor: {}", widest.widest());
        use crate::solver::Solver;
        let world = crate::scenes::box_pile(crate::scenes::bench_desc(), 400, 3).unwrap();
        let mut solver = crate::cpu::CpuSolver::new(&world).unwrap();
        solver.step_many(45);
        let mut cs = std::mem::take(&mut solver.contacts_state);
        let w = solver.body_view();
        prepare(&w, &mut cs);
        load_motions(&w, &mut cs);
        let motions = cs.motions.clone();
        let p = w.params;
        let softs = (
            Soft {
                bias_rate: p.static_bias_rate,
                mass_scale: p.static_mass_scale,
                impulse_scale: p.static_impulse_scale,
            },
            Soft {
                bias_rate: p.contact_bias_rate,
                mass_scale: p.contact_mass_scale,
                impulse_scale: p.contact_impulse_scale,
            },
        );
        let (mut groups, mut point_counts, mut against_static) = (0, [0; 5], 0);
        for use_bias in [true, false] {
            for c in 0..p.max_colors as usize {
                let (start, end) = (cs.color_offsets[c] as usize, cs.color_offsets[c + 1] as usize);
                for (width, k) in [4, 8, 16]
                    .into_iter()
                    .flat_map(|n| (start..end).step_by(n).filter(move |k| k + n <= end).map(move |k| (n, k)))
                {
                    let (mut one, mut one_motions) = (cs.solving[k..k + width].to_vec(), motions.clone());
                    for (m, i) in one.iter_mut().zip(&cs.impulses[k..k + width]) {
                        set_impulses(m, i);
                    }
                    let before = one.clone();
                    for (i, m) in one.iter_mut().enumerate() {
                        let (a, b) = (m.body_a as usize, m.body_b as usize);
                        let (mut ma, mut mb) = (one_motions[a], one_motions[b]);
                        manifold_pass(&w, m, &cs.prepared[k + i], &mut ma, &mut mb, Pass::Solve(use_bias), false);
                        if cs.dynamic[a] {
                            one_motions[a] = ma;
                        }
                        if cs.dynamic[b] {
                            one_motions[b] = mb;
                        }
                        point_counts[m.count as usize] += 1;
                        against_static += usize::from(!cs.dynamic[a] || !cs.dynamic[b]);
                    }
                    let (mut lanes, mut lane_motions) = (cs.impulses[k..k + width].to_vec(), motions.clone());
                    let (h, q) = (&cs.heads[k..k + width], &cs.prepared[k..k + width]);
                    let mut out = [[Vec3::ZERO; 4]; 16];
                    let (lanes_in, out_in) = (&mut lanes[..], &mut out[..]);
                    match width {
                        16 => {
                            super::super::lanes::solve16(widest, p, h, lanes_in, q, &motions, softs, use_bias, out_in)
                        }
                        8 => super::super::lanes::solve8(widest, p, h, lanes_in, q, &motions, softs, use_bias, out_in),
                        _ => super::super::lanes::solve4(p, h, lanes_in, q, &motions, softs, use_bias, out_in),
                    }
                    store_velocities(h, &out, &mut lane_motions, &cs.dynamic);
                    // The one-manifold sweep changes only the impulses, which the lanes keep
                    // apart from the manifolds.
                    let one_impulses: Vec<PointImpulses> = one.iter().map(impulses_of).collect();
                    assert_eq!(
                        bytemuck::cast_slice::<_, u32>(&one_impulses),
                        bytemuck::cast_slice::<_, u32>(&lanes),
                        "manifolds {k}.."
                    );
                    for (m, i) in one.iter_mut().zip(&before) {
                        set_impulses(m, &impulses_of(i));
                    }
                    assert_eq!(
                        bytemuck::cast_slice::<_, u32>(&one),
                        bytemuck::cast_slice::<_, u32>(&before),
                        "manifolds {k}.."
                    );
                    for (x, y) in one_motions.iter().zip(&lane_motions) {
                        let bits = |m: &Motion| [m.v.to_array(), m.w.to_array()].map(|v| v.map(f32::to_bits));
                        assert_eq!(bits(x), bits(y), "velocities after manifolds {k}..");
                    }
                    groups += 1;
                }
            }
        }
        assert!(groups > 100, "{groups} groups of four, eight or sixteen");
        assert!(point_counts[1..].iter().all(|&n| n > 0), "manifolds by point count {point_counts:?}");
        assert!(against_static > 20, "{against_static} manifolds against the container");
    }
}
