// Joints: the twin of src/cpu/joints.rs, operation for operation. One thread per joint of
// one color (no two share a dynamic body), one dispatch per color; or, fused, one workgroup
// sweeping the colors in turn.

// One side of a joint while it is solved (see `Side` in src/cpu/joints.rs).
struct Side {
    v: vec3<f32>,
    w: vec3<f32>,
    inv_mass: f32,
    inv_inertia: mat3x3<f32>,
    q: vec4<f32>,
    dp: vec3<f32>,
}

fn load_side(i: u32) -> Side {
    let b = bodies[i];
    let sb = solver_bodies[i];
    return Side(b.linear_velocity, b.angular_velocity, b.inv_mass, sb.inv_inertia_world, b.orientation, sb.delta_position);
}

// Only a body that moves under impulses is written: a static or kinematic side may be shared
// by several joints of one color.
fn store_side(i: u32, s: Side) {
    if bodies[i].inv_mass > 0.0 {
        bodies[i].linear_velocity = s.v;
        bodies[i].angular_velocity = s.w;
    }
}

// The joint this thread solves, or none past the dispatch's range.
fn joint_index(workgroup: vec3<u32>, workgroups: vec3<u32>, local: u32) -> u32 {
    let k = thread_index(workgroup, workgroups, local, WORKGROUP_SIZE);
    return select(range.first + k, 0xffffffffu, k >= range.count);
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn prepare_joints(
    @builtin(workgroup_id) workgroup: vec3<u32>,
    @builtin(num_workgroups) workgroups: vec3<u32>,
    @builtin(local_invocation_index) local: u32,
) {
    let i = joint_index(workgroup, workgroups, local);
    if i == 0xffffffffu {
        return;
    }
    var j = joints[i];
    j.delta_center = bodies[j.body_b].position - bodies[j.body_a].position;
    j.linear_impulse = params.warm_start_scale * j.linear_impulse;
    j.angular_impulse = params.warm_start_scale * j.angular_impulse;
    j.lower_impulse = params.warm_start_scale * j.lower_impulse;
    j.upper_impulse = params.warm_start_scale * j.upper_impulse;
    j.motor_impulse = params.warm_start_scale * j.motor_impulse;
    j.twist_upper_impulse = params.warm_start_scale * j.twist_upper_impulse;
    joints[i] = j;
}

// At the start of a step, before its broad phase, in worlds where some joint can break (twin
// of `break_if_overloaded` in src/cpu/joints.rs): a joint that the last step overloaded
// breaks, and its bodies may collide from this step on.
@compute @workgroup_size(WORKGROUP_SIZE)
fn break_joints(
    @builtin(workgroup_id) workgroup: vec3<u32>,
    @builtin(num_workgroups) workgroups: vec3<u32>,
    @builtin(local_invocation_index) local: u32,
) {
    let i = joint_index(workgroup, workgroups, local);
    if i == 0xffffffffu {
        return;
    }
    var j = joints[i];
    let loads = joint_breaks[i];
    let breakable = loads.force < JOINT_NO_LOAD || loads.torque < JOINT_NO_LOAD;
    if !breakable || (j.flags & JOINT_BROKEN) != 0u {
        return;
    }
    let impulses = reaction_impulses(j, bodies[j.body_a].orientation, bodies[j.body_b].orientation);
    if length3(impulses[0]) > loads.force * params.h || length3(impulses[1]) > loads.torque * params.h {
        j.flags = j.flags | JOINT_BROKEN;
        j.linear_impulse = vec3<f32>(0.0);
        j.angular_impulse = vec3<f32>(0.0);
        j.lower_impulse = 0.0;
        j.upper_impulse = 0.0;
        j.motor_impulse = 0.0;
        j.twist_upper_impulse = 0.0;
        joints[i] = j;
        if loads.entry_a != NO_BODY {
            topology[loads.entry_a] = NO_BODY;
        }
        if loads.entry_b != NO_BODY {
            topology[loads.entry_b] = NO_BODY;
        }
    }
}

// Twin of `joint::reaction_impulses`: the joint's linear and angular impulses on B over its
// last substep, a slider's and a hinge's motor and limits and a ball joint's cone and twist
// limits included;
// `qa` and `qb` are A's and B's orientations.
fn reaction_impulses(j: Joint, qa: vec4<f32>, qb: vec4<f32>) -> array<vec3<f32>, 2> {
    var linear = j.linear_impulse;
    var angular = j.angular_impulse;
    let axial = (j.motor_impulse + j.lower_impulse) - j.upper_impulse;
    if j.angular == JOINT_ANGULAR_HINGE {
        angular = angular + rotate(qa, j.local_axis_a) * axial;
    }
    if j.angular == JOINT_ANGULAR_FREE && (j.flags & JOINT_LIMITED) != 0u {
        angular = angular - cone_direction(j, qa, qb).xyz * j.upper_impulse;
    }
    if j.angular == JOINT_ANGULAR_FREE && (j.flags & JOINT_TWIST) != 0u {
        angular = angular + twist_frame(j, qa, qb).xyz * (j.lower_impulse - j.twist_upper_impulse);
    }
    if j.linear == JOINT_LINEAR_LINE {
        linear = linear + rotate(qa, j.local_linear_axis_a) * axial;
    }
    return array<vec3<f32>, 2>(linear, angular);
}

fn hinge_axis(j: Joint, a: Side) -> vec3<f32> {
    return rotate(a.q, j.local_axis_a);
}

// Twin of `two_axes` in src/cpu/joints.rs: the unit direction across a universal joint's
// axes (xyz, zero where they are parallel) and their angle (w).
fn two_axes(j: Joint, a: Side, b: Side) -> vec4<f32> {
    return across_axes(j, a.q, b.q);
}

fn acting_angular(j: Joint, a: Side, b: Side) -> vec3<f32> {
    if j.angular == JOINT_ANGULAR_HINGE {
        let axis = hinge_axis(j, a);
        return j.angular_impulse - axis * dot3(axis, j.angular_impulse);
    } else if j.angular == JOINT_ANGULAR_TWO_AXES {
        let n = two_axes(j, a, b).xyz;
        return n * dot3(n, j.angular_impulse);
    }
    return j.angular_impulse;
}

// Where a joint's linear part acts now (see `linear_frame` in src/cpu/joints.rs).
struct LinearFrame {
    ra: vec3<f32>,
    rb: vec3<f32>,
    separation: vec3<f32>,
    lever_a: vec3<f32>,
}

fn linear_frame(j: Joint, a: Side, b: Side) -> LinearFrame {
    let ra = rotate(a.q, j.local_anchor_a);
    let rb = rotate(b.q, j.local_anchor_b);
    let separation = ((b.dp - a.dp) + j.delta_center) + (rb - ra);
    var lever_a = ra;
    if j.linear != JOINT_LINEAR_POINT {
        lever_a = ra + separation;
    }
    return LinearFrame(ra, rb, separation, lever_a);
}

fn acting_linear(j: Joint, u: vec3<f32>) -> vec3<f32> {
    if j.linear == JOINT_LINEAR_POINT {
        return j.linear_impulse;
    } else if j.linear == JOINT_LINEAR_LINE {
        return j.linear_impulse - u * dot3(u, j.linear_impulse);
    }
    return u * dot3(u, j.linear_impulse);
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn warm_start_joints(
    @builtin(workgroup_id) workgroup: vec3<u32>,
    @builtin(num_workgroups) workgroups: vec3<u32>,
    @builtin(local_invocation_index) local: u32,
) {
    let i = joint_index(workgroup, workgroups, local);
    if i != 0xffffffffu {
        warm_start_joint(i);
    }
}

fn warm_start_joint(i: u32) {
    var j = joints[i];
    if (j.flags & JOINT_BROKEN) != 0u {
        return;
    }
    var a = load_side(j.body_a);
    var b = load_side(j.body_b);
    // What acts at the anchors: the accumulated linear impulse, less what a line or plane
    // lets go, and a slider's motor and limits along its line.
    var linear = j.linear_impulse;
    var lever_a: vec3<f32>;
    var rb: vec3<f32>;
    if j.linear == JOINT_LINEAR_POINT {
        lever_a = rotate(a.q, j.local_anchor_a);
        rb = rotate(b.q, j.local_anchor_b);
    } else {
        let frame = linear_frame(j, a, b);
        let u = rotate(a.q, j.local_linear_axis_a);
        j.linear_impulse = acting_linear(j, u);
        linear = j.linear_impulse;
        if j.linear == JOINT_LINEAR_LINE && j.flags != 0u {
            linear = j.linear_impulse + u * ((j.motor_impulse + j.lower_impulse) - j.upper_impulse);
        }
        lever_a = frame.lever_a;
        rb = frame.rb;
    }
    var angular = acting_angular(j, a, b);
    j.angular_impulse = angular;
    if j.angular == JOINT_ANGULAR_HINGE {
        angular = angular + hinge_axis(j, a) * ((j.motor_impulse + j.lower_impulse) - j.upper_impulse);
    } else if j.angular == JOINT_ANGULAR_FREE && (j.flags & JOINT_LIMITED) != 0u {
        angular = angular - cone_direction(j, a.q, b.q).xyz * j.upper_impulse;
    }
    if j.angular == JOINT_ANGULAR_FREE && (j.flags & JOINT_TWIST) != 0u {
        angular = angular + twist_frame(j, a.q, b.q).xyz * (j.lower_impulse - j.twist_upper_impulse);
    }
    a.v = a.v - a.inv_mass * linear;
    a.w = a.w - mat3_mul(a.inv_inertia, cross3(lever_a, linear) + angular);
    b.v = b.v + b.inv_mass * linear;
    b.w = b.w + mat3_mul(b.inv_inertia, cross3(rb, linear) + angular);
    joints[i] = j;
    store_side(j.body_a, a);
    store_side(j.body_b, b);
}

fn solve_joint(i: u32, use_bias: bool) {
    var j = joints[i];
    if (j.flags & JOINT_BROKEN) != 0u {
        return;
    }
    var a = load_side(j.body_a);
    var b = load_side(j.body_b);
    var rate = 0.0;
    var mass_scale = 1.0;
    var impulse_scale = 0.0;
    if use_bias {
        rate = params.joint_bias_rate;
        mass_scale = params.joint_mass_scale;
        impulse_scale = params.joint_impulse_scale;
    }
    // The angular block.
    let k = a.inv_inertia + b.inv_inertia;
    var angular = vec3<f32>(0.0);
    if j.angular == JOINT_ANGULAR_HINGE {
        let axis_a = hinge_axis(j, a);
        let axis_b = rotate(b.q, j.local_axis_b);
        let basis = tangent_basis(axis_a);
        let t1 = basis.t1;
        let t2 = basis.t2;
        let error = cross3(axis_a, axis_b);
        let dw = b.w - a.w;
        let kt1 = mat3_mul(k, t1);
        let kt2 = mat3_mul(k, t2);
        let k11 = dot3(t1, kt1);
        let k12 = dot3(t1, kt2);
        let k22 = dot3(t2, kt2);
        let c1 = dot3(t1, dw) + rate * dot3(t1, error);
        let c2 = dot3(t2, dw) + rate * dot3(t2, error);
        let det = k11 * k22 - k12 * k12;
        let inv_det = select(0.0, 1.0 / det, det > 0.0);
        let x1 = (k22 * c1 - k12 * c2) * inv_det;
        let x2 = (k11 * c2 - k12 * c1) * inv_det;
        let acting = acting_angular(j, a, b);
        let l1 = -mass_scale * x1 - impulse_scale * dot3(t1, acting);
        let l2 = -mass_scale * x2 - impulse_scale * dot3(t2, acting);
        angular = t1 * l1 + t2 * l2;
        j.angular_impulse = acting + angular;
    } else if j.angular == JOINT_ANGULAR_TWO_AXES {
        let across = two_axes(j, a, b);
        let n = across.xyz;
        let kn = dot3(n, mat3_mul(k, n));
        let mass = select(0.0, 1.0 / kn, kn > 0.0);
        let acting = acting_angular(j, a, b);
        let c = dot3(n, b.w - a.w) + rate * (across.w - j.rest_angle);
        angular = n * (-mass_scale * mass * c - impulse_scale * dot3(n, acting));
        j.angular_impulse = acting + angular;
    } else if j.angular == JOINT_ANGULAR_LOCKED {
        let held = quat_mul(a.q, j.reference);
        let e = quat_mul(b.q, vec4<f32>(-held.xyz, held.w));
        let sign = select(-2.0, 2.0, e.w >= 0.0);
        let error = vec3<f32>(sign * e.x, sign * e.y, sign * e.z);
        let c = (b.w - a.w) + rate * error;
        let x = mat3_mul(mat3_inverse(k), c);
        angular = -mass_scale * x - impulse_scale * j.angular_impulse;
        j.angular_impulse = j.angular_impulse + angular;
    }
    a.w = a.w - mat3_mul(a.inv_inertia, angular);
    b.w = b.w + mat3_mul(b.inv_inertia, angular);
    if j.angular == JOINT_ANGULAR_HINGE && j.flags != 0u {
        hinge_motor_and_limits(&j, &a, &b, k, use_bias);
    }
    if j.linear == JOINT_LINEAR_LINE && j.flags != 0u {
        slider_motor_and_limits(&j, &a, &b, use_bias);
    }
    if j.angular == JOINT_ANGULAR_FREE && (j.flags & JOINT_LIMITED) != 0u {
        cone_limit(&j, &a, &b, k, use_bias);
    }
    if j.angular == JOINT_ANGULAR_FREE && (j.flags & JOINT_TWIST) != 0u {
        twist_limits(&j, &a, &b, k, use_bias);
    }
    // The linear part.
    let frame = linear_frame(j, a, b);
    let ra = frame.ra;
    let rb = frame.rb;
    let separation = frame.separation;
    let lever_a = frame.lever_a;
    let m = a.inv_mass + b.inv_mass;
    var linear: vec3<f32>;
    if j.linear == JOINT_LINEAR_POINT {
        let cdot = (b.v + cross3(b.w, rb)) - (a.v + cross3(a.w, ra));
        let kp = mat3x3<f32>(
            point_column(m, vec3<f32>(1.0, 0.0, 0.0), a, b, ra, rb),
            point_column(m, vec3<f32>(0.0, 1.0, 0.0), a, b, ra, rb),
            point_column(m, vec3<f32>(0.0, 0.0, 1.0), a, b, ra, rb),
        );
        let x = mat3_mul(mat3_inverse(kp), cdot + rate * separation);
        linear = -mass_scale * x - impulse_scale * j.linear_impulse;
        j.linear_impulse = j.linear_impulse + linear;
    } else {
        let u = rotate(a.q, j.local_linear_axis_a);
        let acting = acting_linear(j, u);
        let line = j.linear == JOINT_LINEAR_LINE;
        var t1 = u;
        var t2 = vec3<f32>(0.0);
        if line {
            let basis = tangent_basis(u);
            t1 = basis.t1;
            t2 = basis.t2;
        }
        let ja1 = cross3(lever_a, t1);
        let jb1 = cross3(rb, t1);
        let ja2 = cross3(lever_a, t2);
        let jb2 = cross3(rb, t2);
        let ia1 = mat3_mul(a.inv_inertia, ja1);
        let ib1 = mat3_mul(b.inv_inertia, jb1);
        let ia2 = mat3_mul(a.inv_inertia, ja2);
        let ib2 = mat3_mul(b.inv_inertia, jb2);
        let dv = b.v - a.v;
        let c1 = (dot3(t1, dv) + dot3(jb1, b.w) - dot3(ja1, a.w)) + rate * dot3(t1, separation);
        let k11 = m + dot3(ja1, ia1) + dot3(jb1, ib1);
        if line {
            let c2 = (dot3(t2, dv) + dot3(jb2, b.w) - dot3(ja2, a.w)) + rate * dot3(t2, separation);
            let k12 = dot3(ja1, ia2) + dot3(jb1, ib2);
            let k22 = m + dot3(ja2, ia2) + dot3(jb2, ib2);
            let det = k11 * k22 - k12 * k12;
            let inv_det = select(0.0, 1.0 / det, det > 0.0);
            let x1 = (k22 * c1 - k12 * c2) * inv_det;
            let x2 = (k11 * c2 - k12 * c1) * inv_det;
            let l1 = -mass_scale * x1 - impulse_scale * dot3(t1, acting);
            let l2 = -mass_scale * x2 - impulse_scale * dot3(t2, acting);
            linear = t1 * l1 + t2 * l2;
        } else {
            let x = select(0.0, c1 / k11, k11 > 0.0);
            linear = t1 * (-mass_scale * x - impulse_scale * dot3(t1, acting));
        }
        j.linear_impulse = acting + linear;
    }
    a.v = a.v - a.inv_mass * linear;
    a.w = a.w - mat3_mul(a.inv_inertia, cross3(lever_a, linear));
    b.v = b.v + b.inv_mass * linear;
    b.w = b.w + mat3_mul(b.inv_inertia, cross3(rb, linear));
    joints[i] = j;
    store_side(j.body_a, a);
    store_side(j.body_b, b);
}

// Twin of `limit_bias` in src/cpu/joints.rs: (bias, mass scale, impulse scale).
fn limit_bias(c: f32, use_bias: bool) -> vec3<f32> {
    if c > 0.0 {
        return vec3<f32>(c * params.inv_h, 1.0, 0.0);
    } else if use_bias {
        return vec3<f32>(params.joint_bias_rate * c, params.joint_mass_scale, params.joint_impulse_scale);
    }
    return vec3<f32>(0.0, 1.0, 0.0);
}

// Twin of `hinge_motor_and_limits` in src/cpu/joints.rs.
fn hinge_motor_and_limits(j: ptr<function, Joint>, a: ptr<function, Side>, b: ptr<function, Side>, k: mat3x3<f32>, use_bias: bool) {
    let axis = hinge_axis(*j, *a);
    let ka = dot3(axis, mat3_mul(k, axis));
    let axial_mass = select(0.0, 1.0 / ka, ka > 0.0);
    if ((*j).flags & JOINT_MOTOR) != 0u {
        let cdot = dot3(axis, (*b).w - (*a).w) - (*j).motor_speed;
        let impulse = -axial_mass * cdot;
        let old = (*j).motor_impulse;
        let most = (*j).max_motor_effort * params.h;
        (*j).motor_impulse = clamp(old + impulse, -most, most);
        let applied = axis * ((*j).motor_impulse - old);
        (*a).w = (*a).w - mat3_mul((*a).inv_inertia, applied);
        (*b).w = (*b).w + mat3_mul((*b).inv_inertia, applied);
    }
    if ((*j).flags & JOINT_LIMITED) != 0u {
        let ref_a = rotate((*a).q, (*j).local_ref_a);
        let ref_b = rotate((*b).q, (*j).local_ref_b);
        let angle = angle_of(dot3(ref_a, ref_b), dot3(axis, cross3(ref_a, ref_b)));
        // The lower limit pushes B's turn up the axis, the upper down it.
        (*j).lower_impulse = limit_row(angle - (*j).lower, axis, (*j).lower_impulse, axial_mass, a, b, use_bias);
        (*j).upper_impulse = limit_row((*j).upper - angle, -axis, (*j).upper_impulse, axial_mass, a, b, use_bias);
    }
}

// Twin of `limit_row` in src/cpu/joints.rs: one angular limit pushing along `direction`;
// applies its impulse to the sides and returns its new accumulated impulse.
fn limit_row(c: f32, direction: vec3<f32>, accumulated: f32, axial_mass: f32, a: ptr<function, Side>, b: ptr<function, Side>, use_bias: bool) -> f32 {
    let scales = limit_bias(c, use_bias);
    let cdot = dot3(direction, (*b).w - (*a).w);
    let impulse = -axial_mass * scales.y * (cdot + scales.x) - scales.z * accumulated;
    let updated = max(accumulated + impulse, 0.0);
    let applied = direction * (updated - accumulated);
    (*a).w = (*a).w - mat3_mul((*a).inv_inertia, applied);
    (*b).w = (*b).w + mat3_mul((*b).inv_inertia, applied);
    return updated;
}

// Twin of `joint::across_axes`: the unit direction across A's and B's axes (a universal
// joint's, a ball joint's cone's; zero where they are parallel) in xyz, and the angle between
// them in w.
fn across_axes(j: Joint, qa: vec4<f32>, qb: vec4<f32>) -> vec4<f32> {
    let axis_a = rotate(qa, j.local_axis_a);
    let axis_b = rotate(qb, j.local_axis_b);
    let across = cross3(axis_a, axis_b);
    let sin = length3(across);
    var n = vec3<f32>(0.0);
    if sin > 1e-6 {
        n = across * (1.0 / sin);
    }
    return vec4<f32>(n, angle_of(dot3(axis_a, axis_b), sin));
}

// Twin of `joint::cone_direction`: `across_axes`, but where the axes point exactly opposite
// ways (past any cone) a direction across A's axis.
fn cone_direction(j: Joint, qa: vec4<f32>, qb: vec4<f32>) -> vec4<f32> {
    let frame = across_axes(j, qa, qb);
    if all(frame.xyz == vec3<f32>(0.0)) && frame.w > 1.0 {
        return vec4<f32>(tangent_basis(rotate(qa, j.local_axis_a)).t1, frame.w);
    }
    return frame;
}

// Twin of `cone_limit` in src/cpu/joints.rs.
fn cone_limit(j: ptr<function, Joint>, a: ptr<function, Side>, b: ptr<function, Side>, k: mat3x3<f32>, use_bias: bool) {
    let frame = cone_direction(*j, (*a).q, (*b).q);
    let n = frame.xyz;
    let kn = dot3(n, mat3_mul(k, n));
    let mass = select(0.0, 1.0 / kn, kn > 0.0);
    let scales = limit_bias((*j).upper - frame.w, use_bias);
    let direction = -n;
    let cdot = dot3(direction, (*b).w - (*a).w);
    let impulse = -mass * scales.y * (cdot + scales.x) - scales.z * (*j).upper_impulse;
    let old = (*j).upper_impulse;
    (*j).upper_impulse = max(old + impulse, 0.0);
    let applied = direction * ((*j).upper_impulse - old);
    (*a).w = (*a).w - mat3_mul((*a).inv_inertia, applied);
    (*b).w = (*b).w + mat3_mul((*b).inv_inertia, applied);
}

// Twin of `joint::twist_frame`: the direction whose product with B's angular velocity
// relative to A's is the ball joint's twist rate (xyz), and the twist (w); both zero where the
// axes point (nearly) opposite ways.
fn twist_frame(j: Joint, qa: vec4<f32>, qb: vec4<f32>) -> vec4<f32> {
    let axis_a = rotate(qa, j.local_axis_a);
    let axis_b = rotate(qb, j.local_axis_b);
    let ref_a = rotate(qa, j.local_ref_a);
    let ref_b = rotate(qb, j.local_ref_b);
    let cos = dot3(axis_a, axis_b);
    let s = 1.0 + cos;
    if s < TWIST_MIN_ONE_PLUS_COS {
        return vec4<f32>(0.0);
    }
    let k = cross3(axis_b, axis_a);
    let swung = (ref_b * cos + cross3(k, ref_b)) + k * (dot3(k, ref_b) / s);
    let angle = angle_of(dot3(ref_a, swung), dot3(axis_a, cross3(ref_a, swung)));
    return vec4<f32>((axis_a + axis_b) * (1.0 / s), angle);
}

// Twin of `twist_limits` in src/cpu/joints.rs.
fn twist_limits(j: ptr<function, Joint>, a: ptr<function, Side>, b: ptr<function, Side>, k: mat3x3<f32>, use_bias: bool) {
    let frame = twist_frame(*j, (*a).q, (*b).q);
    let d = frame.xyz;
    let kd = dot3(d, mat3_mul(k, d));
    let mass = select(0.0, 1.0 / kd, kd > 0.0);
    (*j).lower_impulse = limit_row(frame.w - (*j).lower, d, (*j).lower_impulse, mass, a, b, use_bias);
    (*j).twist_upper_impulse = limit_row(-(*j).lower - frame.w, -d, (*j).twist_upper_impulse, mass, a, b, use_bias);
}

// Twin of `slider_motor_and_limits` in src/cpu/joints.rs.
fn slider_motor_and_limits(j: ptr<function, Joint>, a: ptr<function, Side>, b: ptr<function, Side>, use_bias: bool) {
    let frame = linear_frame(*j, *a, *b);
    let u = rotate((*a).q, (*j).local_linear_axis_a);
    let ja = cross3(frame.lever_a, u);
    let jb = cross3(frame.rb, u);
    let k = ((*a).inv_mass + (*b).inv_mass) + dot3(ja, mat3_mul((*a).inv_inertia, ja)) + dot3(jb, mat3_mul((*b).inv_inertia, jb));
    let axial_mass = select(0.0, 1.0 / k, k > 0.0);
    if ((*j).flags & JOINT_MOTOR) != 0u {
        let cdot = slider_speed(u, ja, jb, *a, *b) - (*j).motor_speed;
        let impulse = -axial_mass * cdot;
        let old = (*j).motor_impulse;
        let most = (*j).max_motor_effort * params.h;
        (*j).motor_impulse = clamp(old + impulse, -most, most);
        slider_push(u, ja, jb, (*j).motor_impulse - old, a, b);
    }
    if ((*j).flags & JOINT_LIMITED) != 0u {
        let translation = dot3(u, frame.separation);
        // The lower limit pushes B up the line, the upper down it.
        (*j).lower_impulse = slider_limit_row(translation - (*j).lower, 1.0, (*j).lower_impulse, axial_mass, u, ja, jb, a, b, use_bias);
        (*j).upper_impulse = slider_limit_row((*j).upper - translation, -1.0, (*j).upper_impulse, axial_mass, u, ja, jb, a, b, use_bias);
    }
}

// B's anchor's speed along a slider's line relative to A (the closure `speed` in
// src/cpu/joints.rs).
fn slider_speed(u: vec3<f32>, ja: vec3<f32>, jb: vec3<f32>, a: Side, b: Side) -> f32 {
    return (dot3(u, b.v - a.v) + dot3(jb, b.w)) - dot3(ja, a.w);
}

// Pushes B along a slider's line by `impulse`, and A the other way (the closure `push`).
fn slider_push(u: vec3<f32>, ja: vec3<f32>, jb: vec3<f32>, impulse: f32, a: ptr<function, Side>, b: ptr<function, Side>) {
    let along = u * impulse;
    (*a).v = (*a).v - (*a).inv_mass * along;
    (*a).w = (*a).w - mat3_mul((*a).inv_inertia, ja * impulse);
    (*b).v = (*b).v + (*b).inv_mass * along;
    (*b).w = (*b).w + mat3_mul((*b).inv_inertia, jb * impulse);
}

// One slider limit pushing B along `sign` times the line (the closure `limit` in
// src/cpu/joints.rs): applies its impulse to the sides and returns its new accumulated impulse.
fn slider_limit_row(c: f32, sign: f32, accumulated: f32, axial_mass: f32, u: vec3<f32>, ja: vec3<f32>, jb: vec3<f32>, a: ptr<function, Side>, b: ptr<function, Side>, use_bias: bool) -> f32 {
    let scales = limit_bias(c, use_bias);
    let cdot = sign * slider_speed(u, ja, jb, *a, *b);
    let impulse = -axial_mass * scales.y * (cdot + scales.x) - scales.z * accumulated;
    let updated = max(accumulated + impulse, 0.0);
    slider_push(u, ja, jb, sign * (updated - accumulated), a, b);
    return updated;
}

// Column `e` of the point block: the anchors' relative velocity from a unit impulse along `e`.
fn point_column(m: f32, e: vec3<f32>, a: Side, b: Side, ra: vec3<f32>, rb: vec3<f32>) -> vec3<f32> {
    return m * e + cross3(mat3_mul(b.inv_inertia, cross3(rb, e)), rb) + cross3(mat3_mul(a.inv_inertia, cross3(ra, e)), ra);
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn solve_joints(
    @builtin(workgroup_id) workgroup: vec3<u32>,
    @builtin(num_workgroups) workgroups: vec3<u32>,
    @builtin(local_invocation_index) local: u32,
) {
    let i = joint_index(workgroup, workgroups, local);
    if i != 0xffffffffu {
        solve_joint(i, true);
    }
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn relax_joints(
    @builtin(workgroup_id) workgroup: vec3<u32>,
    @builtin(num_workgroups) workgroups: vec3<u32>,
    @builtin(local_invocation_index) local: u32,
) {
    let i = joint_index(workgroup, workgroups, local);
    if i != 0xffffffffu {
        solve_joint(i, false);
    }
}

// Threads of the one workgroup of a fused sweep: a pipeline constant, set to what the device
// allows (at most 1,024).
override FUSED_SIZE: u32 = 256u;

// A whole sweep in one workgroup (`SolverSettings::gpu_fused_sweeps`): the colors in order
// (`range` is the slot of every joint, whose `colors` counts them, and `joint_starts` holds
// where each begins), each swept by all the workgroup's threads, with a barrier between
// colors. The same work per joint in the same order of colors as a dispatch per color.
fn fused_sweep(t: u32, which: u32) {
    for (var color = 0u; color < range.colors; color++) {
        let end = joint_starts[color + 1u];
        for (var i = joint_starts[color] + t; i < end; i += FUSED_SIZE) {
            if which == 0u {
                warm_start_joint(i);
            } else {
                solve_joint(i, which == 1u);
            }
        }
        storageBarrier();
    }
}

@compute @workgroup_size(FUSED_SIZE)
fn warm_start_joints_fused(@builtin(local_invocation_index) local: u32) {
    fused_sweep(local, 0u);
}

@compute @workgroup_size(FUSED_SIZE)
fn solve_joints_fused(@builtin(local_invocation_index) local: u32) {
    fused_sweep(local, 1u);
}

@compute @workgroup_size(FUSED_SIZE)
fn relax_joints_fused(@builtin(local_invocation_index) local: u32) {
    fused_sweep(local, 2u);
}
