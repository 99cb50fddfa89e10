// Structs and math shared by every stage (bindings are per family, in bind_*.wgsl). Each struct mirrors the Rust struct of the
// same name with a `Gpu` prefix in src/layout.rs (checked field by field against naga's layout
// in tests/shader_layout.rs). Constants (WORKGROUP_SIZE, KIND_*, ...) are injected by the host
// in a generated header, so each is written once, in Rust.

struct StepParams {
    gravity: vec3<f32>,
    dt: f32,
    h: f32,
    inv_h: f32,
    substeps: u32,
    iterations: u32,
    relax_iterations: u32,
    body_count: u32,
    plane_count: u32,
    slot_count: u32,
    static_bias_rate: f32,
    static_mass_scale: f32,
    static_impulse_scale: f32,
    linear_slop: f32,
    max_push_velocity: f32,
    restitution_threshold: f32,
    speculative_distance: f32,
    warm_start_scale: f32,
    max_rotation: f32,
    contact_bias_rate: f32,
    contact_mass_scale: f32,
    contact_impulse_scale: f32,
    max_colors: u32,
    coloring_rounds: u32,
    body_contacts: u32,
    collider_count: u32,
    particle_count: u32,
    particle_friction: f32,
    particle_restitution: f32,
    particle_collisions: u32,
    particle_iterations: u32,
    particle_inv_cell: f32,
    particle_margin: f32,
    particle_hash_mask: u32,
    particle_items: u32,
    particle_sorted: u32,
    particle_cell_start: u32,
    particle_counts: u32,
    particle_body_contacts: u32,
    particle_reach: f32,
    origin_point: u32,
    particle_body_starts: u32,
    particle_body_list: u32,
    particle_body_capacity: u32,
    particle_slot_counts: u32,
    particle_slot_bodies: u32,
    particle_body_dropped: u32,
    particle_speed_bound: u32,
    recycle_contacts: u32,
    particle_colliders: u32,
    particle_selected: u32,
    prepared_passes: u32,
    particle_slot_wanted: u32,
    joint_count: u32,
    joint_bias_rate: f32,
    joint_mass_scale: f32,
    joint_impulse_scale: f32,
}

struct Body {
    position: vec3<f32>,
    inv_mass: f32,
    orientation: vec4<f32>,
    linear_velocity: vec3<f32>,
    _pad0: f32,
    angular_velocity: vec3<f32>,
    _pad1: f32,
}

struct BodyProps {
    inv_inertia: vec3<f32>,
    shape: u32,
    slot_offset: u32,
    kind: u32,
    no_contact_first: u32,
    no_contact_count: u32,
    friction: f32,
    restitution: f32,
    linear_damping: f32,
    angular_damping: f32,
    force: vec3<f32>,
    not_memberships: u32,
    torque: vec3<f32>,
    not_filter: u32,
}

// The impulses a program applied to one body between steps, summed (`GpuImpulse`).
struct Impulse {
    impulse: vec3<f32>,
    body: u32,
    moment: vec3<f32>,
    _pad0: u32,
    point: vec3<f32>,
    _pad1: u32,
}

struct Shape {
    first_point: u32,
    point_count: u32,
    face_count: u32,
    first_topology: u32,
    first_edge: u32,
    edge_count: u32,
    radius: f32,
    kind: u32,
}

struct SolverBody {
    inv_inertia_world: mat3x3<f32>,
    delta_position: vec3<f32>,
    start_kinetic_energy: f32,
    delta_rotation: vec4<f32>,
}

struct Collider {
    normal: vec3<f32>,
    offset: f32,
    friction: f32,
    restitution: f32,
    first_node: u32,
    node_count: u32,
}

struct StaticContact {
    anchor: vec3<f32>,
    base_separation: f32,
    normal: vec3<f32>,
    normal_mass: f32,
    tangent_mass: f32,
    restitution_impulse: f32,
    normal_impulse: f32,
    tangent_impulse_1: f32,
    tangent_impulse_2: f32,
    max_normal_impulse: f32,
    approach_velocity: f32,
    friction: f32,
    restitution: f32,
    in_contact: u32,
    _pad0: u32,
    _pad1: u32,
}

struct Particle {
    position: vec3<f32>,
    radius: f32,
    velocity: vec3<f32>,
    mass: f32,
}

// A joint (src/joint.rs): constant frames, the centres' offset at the step's start, and the
// accumulated impulses on B (their opposites on A).
struct Joint {
    body_a: u32,
    body_b: u32,
    angular: u32,
    linear: u32,
    local_anchor_a: vec3<f32>,
    lower: f32,
    local_anchor_b: vec3<f32>,
    upper: f32,
    local_axis_a: vec3<f32>,
    motor_speed: f32,
    local_axis_b: vec3<f32>,
    max_motor_effort: f32,
    local_linear_axis_a: vec3<f32>,
    flags: u32,
    reference: vec4<f32>,
    delta_center: vec3<f32>,
    lower_impulse: f32,
    linear_impulse: vec3<f32>,
    upper_impulse: f32,
    angular_impulse: vec3<f32>,
    motor_impulse: f32,
    local_ref_a: vec3<f32>,
    rest_angle: f32,
    local_ref_b: vec3<f32>,
    twist_upper_impulse: f32,
}

// When a joint breaks, and where its bodies' no-contact entries are (`GpuJointBreak`).
struct JointBreak {
    force: f32,
    torque: f32,
    entry_a: u32,
    entry_b: u32,
}

struct Pair {
    a: u32,
    b: u32,
}

struct ManifoldPoint {
    core_a: vec3<f32>,
    base_separation: f32,
    core_b: vec3<f32>,
    normal_impulse: f32,
    tangent_impulse_1: f32,
    tangent_impulse_2: f32,
    max_normal_impulse: f32,
    approach_velocity: f32,
    restitution_impulse: f32,
    key: u32,
    anchor_a: array<f32, 3>,
    anchor_b: array<f32, 3>,
}

struct Manifold {
    body_a: u32,
    body_b: u32,
    count: u32,
    color: u32,
    normal: vec3<f32>,
    friction: f32,
    restitution: f32,
    radius_a: f32,
    radius_b: f32,
    absorbed: f32,
    frame_kept: u32,
    recycled: u32,
    _pad1: u32,
    _pad2: u32,
    points: array<ManifoldPoint, 4>,
}

struct WorkLayout {
    body_count: u32,
    pair_capacity: u32,
    manifold_capacity: u32,
    buckets: u32,
    histogram_groups: u32,
    aabbs: u32,
    pair_counts: u32,
    pairs: u32,
    flags: u32,
    colors: u32,
    before: u32,
    adjacency_counts: u32,
    adjacency: u32,
    masks: u32,
    split: u32,
    histogram: u32,
    colored: u32,
    bucket_offsets: u32,
    args: u32,
    scan_sums: u32,
    total: u32,
    cell_size: f32,
    hash_mask: u32,
    cells: u32,
    cells_sorted: u32,
    cell_start: u32,
    large: u32,
    pairs_raw: u32,
    brute_force: u32,
    radix_histogram: u32,
    inv_cell: f32,
    faces: u32,
    previous_pairs: u32,
    previous_faces: u32,
    recycled: u32,
    pairs_scratch: u32,
}

struct Stats {
    kinetic_energy: f32,
    max_penetration: f32,
    contacts: u32,
    dynamic_bodies: u32,
}

// The normal velocity at the moment of impact of a point `separation` away, closing at `vn`
// under the normal acceleration `gravity_n`. Twin of `approach_velocity` in src/cpu/stages.rs.
fn approach_velocity(vn: f32, separation: f32, gravity_n: f32) -> f32 {
    if separation > 0.0 && vn < 0.0 && gravity_n < 0.0 {
        return -sqrt(vn * vn - 2.0 * gravity_n * separation);
    }
    return vn;
}

// The global index of a thread in a 1D or 2D grid of workgroups (2D when a dispatch needs more
// than the 65,535 workgroups allowed along one dimension).
fn thread_index(workgroup: vec3<u32>, workgroups: vec3<u32>, local: u32, size: u32) -> u32 {
    return (workgroup.y * workgroups.x + workgroup.x) * size + local;
}

// The broad phase's atomic counters after the two per body (of `body_count`): the raw pairs,
// then the large bodies.
fn pair_counter(body_count: u32) -> u32 {
    return 2u * body_count;
}

fn large_counter(body_count: u32) -> u32 {
    return 2u * body_count + 1u;
}

// The fused cell sort's counter of grid key `key` (`cells_fused`), after the broad phase's.
fn cell_counter(body_count: u32, key: u32) -> u32 {
    return 2u * body_count + 2u + key;
}

// Indirect dispatch arguments for `groups` workgroups, laid out as `dispatch_grid` lays them (a
// second dimension once one would pass MAX_WORKGROUPS_PER_DIMENSION).
fn grid_args(groups: u32) -> vec3<u32> {
    var y = 1u;
    if groups > MAX_WORKGROUPS_PER_DIMENSION {
        y = (groups + MAX_WORKGROUPS_PER_DIMENSION - 1u) / MAX_WORKGROUPS_PER_DIMENSION;
    }
    return vec3<u32>((groups + y - 1u) / y, y, 1u);
}

// Products and sums spelled out in the order of the Rust twin (glam's `Vec3::dot` and
// `Mat3 * Vec3`): the builtins `dot`, `cross`, `length` and `mat3x3 * vec3` are free to fuse or reorder
// (lavapipe's matrix product and GL's dot do), and one rounding difference is enough for the
// CPU and GPU paths to part.
fn dot3(a: vec3<f32>, b: vec3<f32>) -> f32 {
    return a.x * b.x + a.y * b.y + a.z * b.z;
}

fn cross3(a: vec3<f32>, b: vec3<f32>) -> vec3<f32> {
    return vec3<f32>(a.y * b.z - b.y * a.z, a.z * b.x - b.z * a.x, a.x * b.y - b.x * a.y);
}

fn length3(a: vec3<f32>) -> f32 {
    return sqrt(dot3(a, a));
}

fn mat3_mul(m: mat3x3<f32>, v: vec3<f32>) -> vec3<f32> {
    return m[0] * v.x + m[1] * v.y + m[2] * v.z;
}

// Quaternions are vec4 (x, y, z, w). The formulas match src/math.rs operation for operation.
fn rotate(q: vec4<f32>, v: vec3<f32>) -> vec3<f32> {
    let t = 2.0 * cross3(q.xyz, v);
    return v + q.w * t + cross3(q.xyz, t);
}

fn rotate_inv(q: vec4<f32>, v: vec3<f32>) -> vec3<f32> {
    return rotate(vec4<f32>(-q.xyz, q.w), v);
}

// A manifold point's anchors are stored as `array<f32, 3>` (no padding).
fn from_array3(a: array<f32, 3>) -> vec3<f32> {
    return vec3<f32>(a[0], a[1], a[2]);
}

fn to_array3(v: vec3<f32>) -> array<f32, 3> {
    return array<f32, 3>(v.x, v.y, v.z);
}

fn quat_mul(a: vec4<f32>, b: vec4<f32>) -> vec4<f32> {
    return vec4<f32>(
        a.w * b.x + a.x * b.w + a.y * b.z - a.z * b.y,
        a.w * b.y - a.x * b.z + a.y * b.w + a.z * b.x,
        a.w * b.z + a.x * b.y - a.y * b.x + a.z * b.w,
        a.w * b.w - a.x * b.x - a.y * b.y - a.z * b.z,
    );
}

fn quat_normalize(q: vec4<f32>) -> vec4<f32> {
    return q * (1.0 / sqrt(q.x * q.x + q.y * q.y + q.z * q.z + q.w * q.w));
}

// Exponential map: the rotation by the rotation vector theta, without sin or cos (see quat_exp
// in src/math.rs): Taylor series up to the half-angle EXP_MAP_MAX_HALF_ANGLE, halving and
// squaring beyond.
fn quat_exp(theta: vec3<f32>) -> vec4<f32> {
    var half_angle = 0.5 * length3(theta);
    var halvings = 0u;
    while half_angle > EXP_MAP_MAX_HALF_ANGLE && halvings < 64u {
        half_angle *= 0.5;
        halvings += 1u;
    }
    let x2 = half_angle * half_angle;
    let sinc = 1.0 + x2 * (-1.0 / 6.0 + x2 * (1.0 / 120.0 + x2 * (-1.0 / 5040.0 + x2 * (1.0 / 362880.0))));
    let cosine = 1.0 + x2 * (-0.5 + x2 * (1.0 / 24.0 + x2 * (-1.0 / 720.0 + x2 * (1.0 / 40320.0))));
    var divisor = 1.0;
    for (var k = 0u; k < halvings; k++) {
        divisor *= 2.0;
    }
    let scale = sinc * 0.5 / divisor;
    var q = vec4<f32>(theta * scale, cosine);
    for (var k = 0u; k < halvings; k++) {
        let w = q.w * q.w - dot3(q.xyz, q.xyz);
        q = vec4<f32>(2.0 * q.w * q.xyz, w);
    }
    return q;
}

struct Basis {
    t1: vec3<f32>,
    t2: vec3<f32>,
}

// Duff et al. 2017: a right-handed orthonormal basis (t1, t2, n).
fn tangent_basis(n: vec3<f32>) -> Basis {
    let sign = select(-1.0, 1.0, n.z >= 0.0);
    let a = -1.0 / (sign + n.z);
    let b = n.x * n.y * a;
    return Basis(vec3<f32>(1.0 + sign * n.x * n.x * a, sign * b, -sign * n.x), vec3<f32>(b, sign + n.y * n.y * a, -n.y));
}

// The compliance of a soft contact of inverse effective mass `k` with the mass and impulse
// scales `contact_bias` gave it: its update is the Gauss-Seidel step on `v + b + c a = 0`.
// Twin of `contact_compliance`; the coarse corrections of the static and manifold solves use it.
fn contact_compliance(mass_scale: f32, impulse_scale: f32, k: f32) -> f32 {
    return impulse_scale * k * (1.0 / mass_scale);
}

// A friction impulse (j1, j2) in the tangent basis of `old_normal`, re-expressed in the basis
// of `normal` through world space (the basis turns across n.z = 0). Twin of
// `carry_tangent_impulse`.
fn carry_tangent_impulse(old_normal: vec3<f32>, normal: vec3<f32>, j: vec2<f32>) -> vec2<f32> {
    if all(old_normal == normal) {
        return j;
    }
    let o = tangent_basis(old_normal);
    let t = tangent_basis(normal);
    let w = j.x * o.t1 + j.y * o.t2;
    return vec2<f32>(dot3(w, t.t1), dot3(w, t.t2));
}

// The angle of (x, y) in [-pi, pi] from a polynomial: twin of `angle_of` in src/math.rs.
fn angle_of(x: f32, y: f32) -> f32 {
    let ax = abs(x);
    let ay = abs(y);
    let big = max(ax, ay);
    let small = min(ax, ay);
    let a = select(0.0, small / big, big > 0.0);
    let s = a * a;
    var r = (((((-0.0117212 * s + 0.05265332) * s - 0.11643287) * s + 0.19354346) * s - 0.33262347) * s + 0.99997726) * a;
    if ay > ax {
        r = 1.5707963267948966 - r;
    }
    if x < 0.0 {
        r = 3.141592653589793 - r;
    }
    return select(r, -r, y < 0.0);
}

// R diag(d) R^T for the rotation q.
fn world_inverse_inertia(q: vec4<f32>, d: vec3<f32>) -> mat3x3<f32> {
    let c0 = rotate(q, vec3<f32>(1.0, 0.0, 0.0));
    let c1 = rotate(q, vec3<f32>(0.0, 1.0, 0.0));
    let c2 = rotate(q, vec3<f32>(0.0, 0.0, 1.0));
    return mat3x3<f32>(
        c0 * (d.x * c0.x) + c1 * (d.y * c1.x) + c2 * (d.z * c2.x),
        c0 * (d.x * c0.y) + c1 * (d.y * c1.y) + c2 * (d.z * c2.y),
        c0 * (d.x * c0.z) + c1 * (d.y * c1.z) + c2 * (d.z * c2.z),
    );
}

fn mat3_inverse(m: mat3x3<f32>) -> mat3x3<f32> {
    let r0 = cross3(m[1], m[2]);
    let r1 = cross3(m[2], m[0]);
    let r2 = cross3(m[0], m[1]);
    let inv_det = 1.0 / dot3(m[0], r0);
    return transpose(mat3x3<f32>(r0 * inv_det, r1 * inv_det, r2 * inv_det));
}

// Kinetic energy 1/2 m v^2 + 1/2 w_b . I w_b with w_b in the principal frame of orientation q.
fn kinetic_energy(inv_mass: f32, inv_inertia: vec3<f32>, q: vec4<f32>, v: vec3<f32>, w: vec3<f32>) -> f32 {
    let wb = rotate_inv(q, w);
    return 0.5 * dot3(v, v) / inv_mass + 0.5 * dot3(wb, wb / inv_inertia);
}

