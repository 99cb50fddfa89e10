// Bindings of the joint stages: the joints of one color (or all of them) per dispatch.

// The joints `first .. first + count` of one dispatch (a 256-byte slot per color, dynamic
// offset; the last slot holds every joint, for the preparation).
struct JointRange {
    first: u32,
    count: u32,
    // Colors of joints (in every slot).
    colors: u32,
}

@group(0) @binding(0) var<uniform> params: StepParams;
@group(0) @binding(1) var<storage, read_write> bodies: array<Body>;
@group(0) @binding(2) var<storage, read> solver_bodies: array<SolverBody>;
@group(0) @binding(3) var<storage, read_write> joints: array<Joint>;
@group(0) @binding(4) var<uniform> range: JointRange;
// Read and written by the preparation only: when each joint breaks (`GpuJointBreak`), and the
// bodies' no-contact lists, from which a joint that breaks takes its entries.
@group(0) @binding(5) var<storage, read> joint_breaks: array<JointBreak>;
@group(0) @binding(6) var<storage, read_write> topology: array<u32>;
// Where each color's joints begin, then the joint count (read by the fused sweeps).
@group(0) @binding(7) var<storage, read> joint_starts: array<u32>;
