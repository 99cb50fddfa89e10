//! WGSL sources: one file per stage under `shaders/`, each compiled together with
//! `common.wgsl` behind a header of constants generated here, so that every constant shared
//! by host and shader is written once, in Rust.

use crate::collide::{
    BOX_PARALLEL_SIN, CLIP_TOLERANCE, EDGE_FLOOR_MIN_EDGES, EDGE_FLOOR_MIN_SLACK, EDGE_FLOOR_SLACK, EDGE_PARALLEL_SIN,
    EDGE_TOLERANCE, FACE_OF_B, FACE_TOLERANCE, FRAME_DRIFT, FRAME_DRIFT_FRACTION, FRAME_MIN_COS, MAX_CLIP_POINTS,
    MAX_MANIFOLD_POINTS, NO_FACE, RECYCLE_DRIFT, RECYCLE_MIN_AREA, RECYCLE_SLIDE_FRACTION, WARM_START_MIN_COS,
    WARM_START_RADIUS,
};
use crate::coloring::{COLOR_SPREAD, NO_COLOR};
use crate::cpu::contacts::{GRID_CELL_LIMIT, GRID_FIT, GRID_HASH};
use crate::joint::TWIST_MIN_ONE_PLUS_COS;
use crate::layout::{
    JOINT_ANGULAR_FREE, JOINT_ANGULAR_HINGE, JOINT_ANGULAR_LOCKED, JOINT_ANGULAR_TWO_AXES, JOINT_BROKEN, JOINT_LIMITED,
    JOINT_LINEAR_LINE, JOINT_LINEAR_PLANE, JOINT_LINEAR_POINT, JOINT_MOTOR, JOINT_NO_LOAD, JOINT_TWIST, KIND_DYNAMIC,
    KIND_KINEMATIC, KIND_STATIC, MAX_COLORS, NO_BODY, PREPARED_BODY_WORDS, PREPARED_MANIFOLD_WORDS, SHAPE_BOX,
    SHAPE_POINT, SHAPE_POLYTOPE, SHAPE_SEGMENT,
};
use crate::math::EXP_MAP_MAX_HALF_ANGLE;
use crate::particles::{
    EMPTY_CELL, PARTICLE_BODY_SLOTS, PARTICLE_CONTACT_COLLIDER, PARTICLE_CONTACT_SLOTS, PARTICLE_FAR,
    PARTICLE_KEEP_GAP, PARTICLE_MARCH_STEPS, PARTICLE_MAX_IMPACTS, PARTICLE_SKIN, PARTICLE_SURFACE_EPS,
};
use crate::sdf::{MAX_FIELD_FACES, SDF_SECOND_SURFACE_COS};
use crate::sdf::{
    SDF_CAPSULE, SDF_CUBOID, SDF_CYLINDER, SDF_GRID, SDF_HALF_SPACE, SDF_INTERSECTION, SDF_INVERT, SDF_NODE_VEC4S,
    SDF_SPHERE, SDF_STACK_DEPTH, SDF_SUBTRACTION, SDF_TORUS, SDF_UNION,
};

/// Threads per workgroup of the per-body kernels.
pub const WORKGROUP_SIZE: u32 = 64;
/// Threads per workgroup of the reduction kernels (a power of two).
pub const STATS_WORKGROUP_SIZE: u32 = 256;
/// Threads per workgroup of the scan kernels.
pub const SCAN_THREADS: u32 = 256;
/// Elements scanned per workgroup (two per thread).
pub const SCAN_BLOCK: u32 = 2 * SCAN_THREADS;
/// The most threads of a workgroup that runs a whole pass alone (a fused sweep, `scan_one`),
/// where the device allows that many.
pub const FUSED_SIZE_MAX: u32 = 1024;
/// The most elements a thread of `scan_one` takes: a scan of at most this many times its
/// workgroup's threads is one dispatch.
pub const SCAN_ONE_ITEMS: u32 = 32;
/// Buckets of one radix sort pass (eight bits), also its workgroup size.
pub const RADIX_DIGITS: u32 = 256;
/// A radix sort's `count_word` when every item up to its capacity is sorted.
pub const RADIX_ALL: u32 = u32::MAX;
/// Bytes between the parameter slots of a dynamic-offset uniform (WebGPU's
/// `min_uniform_buffer_offset_alignment` is at most 256).
pub const UNIFORM_SLOT: u64 = 256;

/// Most workgroups along one dispatch dimension (WebGPU's guaranteed minimum); larger
/// dispatches spill into the second dimension.
pub const MAX_WORKGROUPS_PER_DIMENSION: u32 = 65_535;

const _: () = assert!(STATS_WORKGROUP_SIZE.is_power_of_two());

/// Shared structs, bindings and math.
pub const COMMON: &str = include_str!("../../shaders/common.wgsl");

/// Signed distance field evaluation (reads the compiled programs from a `geometry` array the
/// including module declares).
pub const SDF: &str = include_str!("../../shaders/sdf.wgsl");

/// Bindings of the per-body stages.
pub const BIND_BODIES: &str = include_str!("../../shaders/bind_bodies.wgsl");
/// Bindings of the pair stages.
pub const BIND_PAIRS: &str = include_str!("../../shaders/bind_pairs.wgsl");
/// Bindings of the particle stages.
pub const BIND_PARTICLES: &str = include_str!("../../shaders/bind_particles.wgsl");
/// Bindings of the stages in which bodies find their particles.
pub const BIND_PARTICLE_BODIES: &str = include_str!("../../shaders/bind_particle_bodies.wgsl");
/// Bindings of the manifold stages.
pub const BIND_MANIFOLDS: &str = include_str!("../../shaders/bind_manifolds.wgsl");
/// Bindings of the manifold solve stages.
pub const BIND_SOLVE: &str = include_str!("../../shaders/bind_solve.wgsl");
/// Bindings of the joint stages.
pub const BIND_JOINTS: &str = include_str!("../../shaders/bind_joints.wgsl");
/// Bindings of the stage that applies the impulses a program gave between steps.
pub const BIND_IMPULSES: &str = include_str!("../../shaders/bind_impulses.wgsl");

/// Every stage file: (file stem, its bindings, source). Each stem names the stage it implements.
pub const STAGES: &[(&str, &str, &str)] = &[
    (
        "narrow_phase",
        BIND_BODIES,
        concat!(include_str!("../../shaders/sdf.wgsl"), include_str!("../../shaders/narrow_phase.wgsl")),
    ),
    (
        "integrate_velocities",
        BIND_BODIES,
        concat!(include_str!("../../shaders/integrate.wgsl"), include_str!("../../shaders/integrate_velocities.wgsl")),
    ),
    ("solve_static", BIND_BODIES, include_str!("../../shaders/solve_static.wgsl")),
    (
        "integrate_positions",
        BIND_BODIES,
        concat!(include_str!("../../shaders/integrate.wgsl"), include_str!("../../shaders/integrate_positions.wgsl")),
    ),
    ("stats", BIND_BODIES, concat!(include_str!("../../shaders/sdf.wgsl"), include_str!("../../shaders/stats.wgsl"))),
    (
        "particles",
        BIND_PARTICLES,
        concat!(
            include_str!("../../shaders/sdf.wgsl"),
            include_str!("../../shaders/particles.wgsl"),
            include_str!("../../shaders/particle_contacts.wgsl")
        ),
    ),
    (
        "particle_bodies",
        BIND_PARTICLE_BODIES,
        concat!(include_str!("../../shaders/collide.wgsl"), include_str!("../../shaders/particle_bodies.wgsl")),
    ),
    ("scan", "", concat!(include_str!("../../shaders/scan.wgsl"), include_str!("../../shaders/scan_one.wgsl"))),
    ("radix", "", include_str!("../../shaders/radix.wgsl")),
    (
        "manifolds",
        BIND_MANIFOLDS,
        concat!(
            include_str!("../../shaders/pairs.wgsl"),
            include_str!("../../shaders/scan_one.wgsl"),
            include_str!("../../shaders/manifolds.wgsl")
        ),
    ),
    (
        "solve_contacts",
        BIND_SOLVE,
        concat!(include_str!("../../shaders/integrate.wgsl"), include_str!("../../shaders/solve_contacts.wgsl")),
    ),
    ("joints", BIND_JOINTS, include_str!("../../shaders/joints.wgsl")),
    ("impulses", BIND_IMPULSES, include_str!("../../shaders/impulses.wgsl")),
    (
        "broad_phase",
        BIND_PAIRS,
        concat!(
            include_str!("../../shaders/collide.wgsl"),
            include_str!("../../shaders/pairs.wgsl"),
            include_str!("../../shaders/scan_one.wgsl"),
            include_str!("../../shaders/broad_phase.wgsl")
        ),
    ),
];

/// The generated header: every host constant a shader uses.
pub fn header() -> String {
    format!(
        "// Generated by signorini::shaders::header(); do not edit.\n\
         const WORKGROUP_SIZE: u32 = {WORKGROUP_SIZE}u;\n\
         const STATS_WORKGROUP_SIZE: u32 = {STATS_WORKGROUP_SIZE}u;\n\
         const MAX_WORKGROUPS_PER_DIMENSION: u32 = {MAX_WORKGROUPS_PER_DIMENSION}u;\n\
         const SCAN_THREADS: u32 = {SCAN_THREADS}u;\n\
         const SCAN_BLOCK: u32 = {SCAN_BLOCK}u;\n\
         const RADIX_DIGITS: u32 = {RADIX_DIGITS}u;\n\
         const FUSED_SIZE_MAX: u32 = {FUSED_SIZE_MAX}u;\n\
         const SCAN_ONE_ITEMS: u32 = {SCAN_ONE_ITEMS}u;\n\
         const RADIX_ALL: u32 = {RADIX_ALL}u;\n\
         const KIND_DYNAMIC: u32 = {KIND_DYNAMIC}u;\n\
         const KIND_STATIC: u32 = {KIND_STATIC}u;\n\
         const KIND_KINEMATIC: u32 = {KIND_KINEMATIC}u;\n\
         const JOINT_ANGULAR_FREE: u32 = {JOINT_ANGULAR_FREE}u;\n\
         const JOINT_ANGULAR_HINGE: u32 = {JOINT_ANGULAR_HINGE}u;\n\
         const JOINT_ANGULAR_LOCKED: u32 = {JOINT_ANGULAR_LOCKED}u;\n\
         const JOINT_ANGULAR_TWO_AXES: u32 = {JOINT_ANGULAR_TWO_AXES}u;\n\
         const JOINT_LINEAR_POINT: u32 = {JOINT_LINEAR_POINT}u;\n\
         const JOINT_LINEAR_LINE: u32 = {JOINT_LINEAR_LINE}u;\n\
         const JOINT_LINEAR_PLANE: u32 = {JOINT_LINEAR_PLANE}u;\n\
         const JOINT_LIMITED: u32 = {JOINT_LIMITED}u;\n\
         const JOINT_MOTOR: u32 = {JOINT_MOTOR}u;\n\
         const JOINT_BROKEN: u32 = {JOINT_BROKEN}u;\n\
         const JOINT_TWIST: u32 = {JOINT_TWIST}u;\n\
         const TWIST_MIN_ONE_PLUS_COS: f32 = {TWIST_MIN_ONE_PLUS_COS:?};\n\
         const SDF_SECOND_SURFACE_COS: f32 = {SDF_SECOND_SURFACE_COS:?};\n\
         const MAX_FIELD_FACES: u32 = {MAX_FIELD_FACES}u;\n\
         const NO_BODY: u32 = {NO_BODY}u;\n\
         const JOINT_NO_LOAD: f32 = {JOINT_NO_LOAD:?};\n\
         const EXP_MAP_MAX_HALF_ANGLE: f32 = {EXP_MAP_MAX_HALF_ANGLE:?};\n\
         const SHAPE_POINT: u32 = {SHAPE_POINT}u;\n\
         const SHAPE_SEGMENT: u32 = {SHAPE_SEGMENT}u;\n\
         const SHAPE_POLYTOPE: u32 = {SHAPE_POLYTOPE}u;\n\
         const SHAPE_BOX: u32 = {SHAPE_BOX}u;\n\
         const MAX_CLIP_POINTS: u32 = {MAX_CLIP_POINTS}u;\n\
         const EDGE_TOLERANCE: f32 = {EDGE_TOLERANCE:?};\n\
         const EDGE_PARALLEL_SIN: f32 = {EDGE_PARALLEL_SIN:?};\n\
         const BOX_PARALLEL_SIN: f32 = {BOX_PARALLEL_SIN:?};\n\
         const EDGE_FLOOR_SLACK: f32 = {EDGE_FLOOR_SLACK:?};\n\
         const EDGE_FLOOR_MIN_SLACK: f32 = {EDGE_FLOOR_MIN_SLACK:?};\n\
         const EDGE_FLOOR_MIN_EDGES: u32 = {EDGE_FLOOR_MIN_EDGES}u;\n\
         const FACE_TOLERANCE: f32 = {FACE_TOLERANCE:?};\n\
         const CLIP_TOLERANCE: f32 = {CLIP_TOLERANCE:?};\n\
         const WARM_START_RADIUS: f32 = {WARM_START_RADIUS:?};\n\
         const NO_FACE: u32 = {NO_FACE}u;\n\
         const FACE_OF_B: u32 = {FACE_OF_B}u;\n\
         const WARM_START_MIN_COS: f32 = {WARM_START_MIN_COS:?};\n\
         const FRAME_DRIFT: f32 = {FRAME_DRIFT:?};\n\
         const FRAME_DRIFT_FRACTION: f32 = {FRAME_DRIFT_FRACTION:?};\n\
         const FRAME_MIN_COS: f32 = {FRAME_MIN_COS:?};\n\
         const RECYCLE_DRIFT: f32 = {RECYCLE_DRIFT:?};\n\
         const MAX_MANIFOLD_POINTS: u32 = {MAX_MANIFOLD_POINTS}u;\n\
         const PREPARED_MANIFOLD_VEC4S: u32 = {}u;\n\
         const PREPARED_BODY_VEC4S: u32 = {}u;\n\
         const RECYCLE_MIN_AREA: f32 = {RECYCLE_MIN_AREA:?};\n\
         const RECYCLE_SLIDE_FRACTION: f32 = {RECYCLE_SLIDE_FRACTION:?};\n\
         const NO_COLOR: u32 = {NO_COLOR}u;\n\
         const MAX_COLORS: u32 = {MAX_COLORS}u;\n\
         const COLOR_SPREAD: u32 = {COLOR_SPREAD}u;\n\
         const GRID_CELL_LIMIT: f32 = {GRID_CELL_LIMIT:?};\n\
         const GRID_FIT: f32 = {GRID_FIT:?};\n\
         const GRID_HASH_X: u32 = {}u;\n\
         const GRID_HASH_Y: u32 = {}u;\n\
         const GRID_HASH_Z: u32 = {}u;\n\
         const SDF_STACK_DEPTH: u32 = {SDF_STACK_DEPTH}u;\n\
         const SDF_NODE_VEC4S: u32 = {SDF_NODE_VEC4S}u;\n\
         const SDF_SPHERE: u32 = {SDF_SPHERE}u;\n\
         const SDF_CUBOID: u32 = {SDF_CUBOID}u;\n\
         const SDF_CAPSULE: u32 = {SDF_CAPSULE}u;\n\
         const SDF_CYLINDER: u32 = {SDF_CYLINDER}u;\n\
         const SDF_TORUS: u32 = {SDF_TORUS}u;\n\
         const SDF_HALF_SPACE: u32 = {SDF_HALF_SPACE}u;\n\
         const SDF_GRID: u32 = {SDF_GRID}u;\n\
         const SDF_UNION: u32 = {SDF_UNION}u;\n\
         const SDF_INTERSECTION: u32 = {SDF_INTERSECTION}u;\n\
         const SDF_SUBTRACTION: u32 = {SDF_SUBTRACTION}u;\n\
         const SDF_INVERT: u32 = {SDF_INVERT}u;\n\
         const PARTICLE_SURFACE_EPS: f32 = {PARTICLE_SURFACE_EPS:?};\n\
         const PARTICLE_MARCH_STEPS: u32 = {PARTICLE_MARCH_STEPS}u;\n\
         const PARTICLE_MAX_IMPACTS: u32 = {PARTICLE_MAX_IMPACTS}u;\n\
         const PARTICLE_SKIN: f32 = {PARTICLE_SKIN:?};\n\
         const PARTICLE_BODY_SLOTS: u32 = {PARTICLE_BODY_SLOTS}u;\n\
         const PARTICLE_CONTACT_SLOTS: u32 = {PARTICLE_CONTACT_SLOTS}u;\n\
         const PARTICLE_CONTACT_COLLIDER: u32 = {PARTICLE_CONTACT_COLLIDER}u;\n\
         const PARTICLE_KEEP_GAP: f32 = {PARTICLE_KEEP_GAP:?};\n\
         const PARTICLE_FAR: f32 = {PARTICLE_FAR:?};\n\
         const EMPTY_CELL: u32 = {EMPTY_CELL}u;\n\n",
        PREPARED_MANIFOLD_WORDS / 4,
        PREPARED_BODY_WORDS / 4,
        GRID_HASH[0],
        GRID_HASH[1],
        GRID_HASH[2]
    )
}

/// The complete WGSL module for a stage file: header, `common.wgsl`, its bindings, the stage.
pub fn compose(bindings: &str, stage_source: &str) -> String {
    format!("{}{COMMON}\n{bindings}\n{stage_source}", header())
}

/// Every composed module, by stage file stem: what the GPU solver compiles and what the naga
/// tests validate.
pub fn composed_modules() -> Vec<(&'static str, String)> {
    STAGES.iter().map(|(name, bindings, source)| (*name, compose(bindings, source))).collect()
}

/// Workgroup counts `(x, y)` covering `threads` threads at `workgroup_size` per group, in a
/// 2D grid once a single dimension would exceed [`MAX_WORKGROUPS_PER_DIMENSION`]; shaders
/// recover the flat index with `thread_index`.
pub fn dispatch_grid(threads: u32, workgroup_size: u32) -> (u32, u32) {
    let groups = threads.div_ceil(workgroup_size);
    if groups <= MAX_WORKGROUPS_PER_DIMENSION {
        (groups, 1)
    } else {
        let y = groups.div_ceil(MAX_WORKGROUPS_PER_DIMENSION);
        (groups.div_ceil(y), y)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dispatch_grid_covers_every_thread_once() {
        for threads in [0, 1, 63, 64, 65, 4_194_240, 4_194_241, 50_000_000] {
            let (x, y) = dispatch_grid(threads, WORKGROUP_SIZE);
            assert!(x <= MAX_WORKGROUPS_PER_DIMENSION && y <= MAX_WORKGROUPS_PER_DIMENSION);
            assert!(x as u64 * y as u64 * WORKGROUP_SIZE as u64 >= threads as u64);
            // No more than one row of spare workgroups.
            assert!((x as u64 * (y as u64 - 1)) * (WORKGROUP_SIZE as u64) < threads.max(1) as u64);
        }
    }
}
