//! Shader checks that need no adapter: every WGSL module parses and validates under naga, and
//! every struct shared with the host has, field for field, the offsets and size of its Rust twin.

use std::mem::{offset_of, size_of};

use naga::valid::{Capabilities, ValidationFlags, Validator};
use signorini::layout::{
    GpuBody, GpuBodyProps, GpuCollider, GpuImpulse, GpuJoint, GpuJointBreak, GpuManifold, GpuManifoldPoint, GpuPair,
    GpuParticle, GpuShape, GpuSolverBody, GpuStaticContact, GpuStats, GpuWorkLayout, StepParams,
};
use signorini::shaders;

fn parse(name: &str, source: &str) -> naga::Module {
    let module = naga::front::wgsl::parse_str(source)
        .unwrap_or_else(|e| panic!("{name}.wgsl does not parse:\n{}", e.emit_to_string(source)));
    Validator::new(ValidationFlags::all(), Capabilities::default())
        .validate(&module)
        .unwrap_or_else(|e| panic!("{name}.wgsl does not validate:\n{}", e.emit_to_string(source)));
    module
}

#[test]
fn every_stage_parses_and_validates() {
    let modules = shaders::composed_modules();
    assert!(!modules.is_empty());
    for (name, source) in &modules {
        let module = parse(name, source);
        assert!(!module.entry_points.is_empty(), "{name}.wgsl has no entry point");
    }
}

/// (offset, size) of every member of the WGSL struct `name`, and the struct's size.
fn wgsl_layout(module: &naga::Module, name: &str) -> (Vec<(String, u32)>, u32) {
    let ty = module
        .types
        .iter()
        .find(|(_, ty)| ty.name.as_deref() == Some(name))
        .unwrap_or_else(|| panic!("no WGSL struct {name}"))
        .1;
    match &ty.inner {
        naga::TypeInner::Struct { members, span } => {
            (members.iter().map(|m| (m.name.clone().unwrap_or_default(), m.offset)).collect(), *span)
        }
        other => panic!("{name} is not a struct: {other:?}"),
    }
}

macro_rules! check_struct {
    ($module:expr, $wgsl:literal, $rust:ty, [$($field:ident),* $(,)?]) => {{
        let (members, span) = wgsl_layout($module, $wgsl);
        let rust: Vec<(String, u32)> = vec![$((stringify!($field).to_string(), offset_of!($rust, $field) as u32)),*];
        assert_eq!(members, rust, "field names and offsets of {} vs WGSL {}", stringify!($rust), $wgsl);
        assert_eq!(span as usize, size_of::<$rust>(), "size of {} vs WGSL {}", stringify!($rust), $wgsl);
    }};
}

#[test]
fn host_structs_match_wgsl_layout() {
    let source = shaders::compose("", "");
    let module = parse("common", &source);
    check_struct!(
        &module,
        "Body",
        GpuBody,
        [position, inv_mass, orientation, linear_velocity, _pad0, angular_velocity, _pad1]
    );
    check_struct!(
        &module,
        "BodyProps",
        GpuBodyProps,
        [
            inv_inertia,
            shape,
            slot_offset,
            kind,
            no_contact_first,
            no_contact_count,
            friction,
            restitution,
            linear_damping,
            angular_damping,
            force,
            not_memberships,
            torque,
            not_filter
        ]
    );
    check_struct!(&module, "Impulse", GpuImpulse, [impulse, body, moment, _pad0, point, _pad1]);
    check_struct!(
        &module,
        "Shape",
        GpuShape,
        [first_point, point_count, face_count, first_topology, first_edge, edge_count, radius, kind]
    );
    check_struct!(
        &module,
        "SolverBody",
        GpuSolverBody,
        [inv_inertia_world, delta_position, start_kinetic_energy, delta_rotation]
    );
    check_struct!(&module, "Collider", GpuCollider, [normal, offset, friction, restitution, first_node, node_count]);
    check_struct!(
        &module,
        "StaticContact",
        GpuStaticContact,
        [
            anchor,
            base_separation,
            normal,
            normal_mass,
            tangent_mass,
            restitution_impulse,
            normal_impulse,
            tangent_impulse_1,
            tangent_impulse_2,
            max_normal_impulse,
            approach_velocity,
            friction,
            restitution,
            in_contact,
            _pad0,
            _pad1
        ]
    );
    check_struct!(&module, "Pair", GpuPair, [a, b]);
    check_struct!(
        &module,
        "Joint",
        GpuJoint,
        [
            body_a,
            body_b,
            angular,
            linear,
            local_anchor_a,
            lower,
            local_anchor_b,
            upper,
            local_axis_a,
            motor_speed,
            local_axis_b,
            max_motor_effort,
            local_linear_axis_a,
            flags,
            reference,
            delta_center,
            lower_impulse,
            linear_impulse,
            upper_impulse,
            angular_impulse,
            motor_impulse,
            local_ref_a,
            rest_angle,
            local_ref_b,
            twist_upper_impulse
        ]
    );
    check_struct!(&module, "JointBreak", GpuJointBreak, [force, torque, entry_a, entry_b]);
    check_struct!(&module, "Particle", GpuParticle, [position, radius, velocity, mass]);
    check_struct!(
        &module,
        "ManifoldPoint",
        GpuManifoldPoint,
        [
            core_a,
            base_separation,
            core_b,
            normal_impulse,
            tangent_impulse_1,
            tangent_impulse_2,
            max_normal_impulse,
            approach_velocity,
            restitution_impulse,
            key,
            anchor_a,
            anchor_b
        ]
    );
    check_struct!(
        &module,
        "Manifold",
        GpuManifold,
        [
            body_a,
            body_b,
            count,
            color,
            normal,
            friction,
            restitution,
            radius_a,
            radius_b,
            absorbed,
            frame_kept,
            recycled,
            _pad1,
            _pad2,
            points
        ]
    );
    check_struct!(
        &module,
        "WorkLayout",
        GpuWorkLayout,
        [
            body_count,
            pair_capacity,
            manifold_capacity,
            buckets,
            histogram_groups,
            aabbs,
            pair_counts,
            pairs,
            flags,
            colors,
            before,
            adjacency_counts,
            adjacency,
            masks,
            split,
            histogram,
            colored,
            bucket_offsets,
            args,
            scan_sums,
            total,
            cell_size,
            hash_mask,
            cells,
            cells_sorted,
            cell_start,
            large,
            pairs_raw,
            brute_force,
            radix_histogram,
            inv_cell,
            faces,
            previous_pairs,
            previous_faces,
            recycled,
            pairs_scratch
        ]
    );
    check_struct!(&module, "Stats", GpuStats, [kinetic_energy, max_penetration, contacts, dynamic_bodies]);
}

#[test]
fn step_params_uniform_matches_wgsl() {
    use encase::ShaderType;
    let module = parse("common", &shaders::compose("", ""));
    let (members, span) = wgsl_layout(&module, "StepParams");
    // encase lays the uniform out by WGSL's rules; its size must be naga's.
    assert_eq!(StepParams::min_size().get(), span as u64);
    // Same field order: the encased bytes of a params block with distinct values land where
    // naga says each WGSL member is.
    let p = StepParams {
        gravity: glam::Vec3::new(1.0, 2.0, 3.0),
        dt: 4.0,
        h: 5.0,
        inv_h: 6.0,
        substeps: 7,
        iterations: 8,
        relax_iterations: 9,
        body_count: 10,
        plane_count: 11,
        slot_count: 12,
        static_bias_rate: 13.0,
        static_mass_scale: 14.0,
        static_impulse_scale: 15.0,
        linear_slop: 16.0,
        max_push_velocity: 17.0,
        restitution_threshold: 18.0,
        speculative_distance: 19.0,
        warm_start_scale: 20.0,
        max_rotation: 21.0,
        contact_bias_rate: 22.0,
        contact_mass_scale: 23.0,
        contact_impulse_scale: 24.0,
        max_colors: 25,
        coloring_rounds: 26,
        body_contacts: 27,
        collider_count: 28,
        particle_count: 29,
        particle_friction: 30.0,
        particle_restitution: 31.0,
        particle_collisions: 32,
        particle_iterations: 33,
        particle_inv_cell: 34.0,
        particle_margin: 35.0,
        particle_hash_mask: 36,
        particle_items: 37,
        particle_sorted: 38,
        particle_cell_start: 39,
        particle_counts: 40,
        particle_body_contacts: 41,
        particle_reach: 42.0,
        origin_point: 43,
        particle_body_starts: 44,
        particle_body_list: 45,
        particle_body_capacity: 46,
        particle_slot_counts: 47,
        particle_slot_bodies: 48,
        particle_body_dropped: 49,
        particle_speed_bound: 50,
        recycle_contacts: 51,
        particle_colliders: 52,
        particle_selected: 53,
        prepared_passes: 54,
        particle_slot_wanted: 55,
        joint_count: 56,
        joint_bias_rate: 57.0,
        joint_mass_scale: 58.0,
        joint_impulse_scale: 59.0,
    };
    let mut buffer = encase::UniformBuffer::new(Vec::new());
    buffer.write(&p).unwrap();
    let bytes = buffer.into_inner();
    let expect: Vec<(&str, f32)> = vec![
        ("gravity", 1.0),
        ("dt", 4.0),
        ("h", 5.0),
        ("inv_h", 6.0),
        ("substeps", 7.0),
        ("iterations", 8.0),
        ("relax_iterations", 9.0),
        ("body_count", 10.0),
        ("plane_count", 11.0),
        ("slot_count", 12.0),
        ("static_bias_rate", 13.0),
        ("static_mass_scale", 14.0),
        ("static_impulse_scale", 15.0),
        ("linear_slop", 16.0),
        ("max_push_velocity", 17.0),
        ("restitution_threshold", 18.0),
        ("speculative_distance", 19.0),
        ("warm_start_scale", 20.0),
        ("max_rotation", 21.0),
        ("contact_bias_rate", 22.0),
        ("contact_mass_scale", 23.0),
        ("contact_impulse_scale", 24.0),
        ("max_colors", 25.0),
        ("coloring_rounds", 26.0),
        ("body_contacts", 27.0),
        ("collider_count", 28.0),
        ("particle_count", 29.0),
        ("particle_friction", 30.0),
        ("particle_restitution", 31.0),
        ("particle_collisions", 32.0),
        ("particle_iterations", 33.0),
        ("particle_inv_cell", 34.0),
        ("particle_margin", 35.0),
        ("particle_hash_mask", 36.0),
        ("particle_items", 37.0),
        ("particle_sorted", 38.0),
        ("particle_cell_start", 39.0),
        ("particle_counts", 40.0),
        ("particle_body_contacts", 41.0),
        ("particle_reach", 42.0),
        ("origin_point", 43.0),
        ("particle_body_starts", 44.0),
        ("particle_body_list", 45.0),
        ("particle_body_capacity", 46.0),
        ("particle_slot_counts", 47.0),
        ("particle_slot_bodies", 48.0),
        ("particle_body_dropped", 49.0),
        ("particle_speed_bound", 50.0),
        ("recycle_contacts", 51.0),
        ("particle_colliders", 52.0),
        ("particle_selected", 53.0),
        ("prepared_passes", 54.0),
        ("particle_slot_wanted", 55.0),
        ("joint_count", 56.0),
        ("joint_bias_rate", 57.0),
        ("joint_mass_scale", 58.0),
        ("joint_impulse_scale", 59.0),
    ];
    assert_eq!(
        members.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(),
        expect.iter().map(|(n, _)| *n).collect::<Vec<_>>()
    );
    for ((name, offset), (_, value)) in members.iter().zip(&expect) {
        let word: [u8; 4] = bytes[*offset as usize..*offset as usize + 4].try_into().unwrap();
        let integers = [
            "substeps",
            "iterations",
            "relax_iterations",
            "body_count",
            "plane_count",
            "slot_count",
            "max_colors",
            "coloring_rounds",
            "body_contacts",
            "collider_count",
            "particle_count",
            "particle_collisions",
            "particle_iterations",
            "particle_hash_mask",
            "particle_items",
            "particle_sorted",
            "particle_cell_start",
            "particle_counts",
            "particle_body_contacts",
            "origin_point",
            "particle_body_starts",
            "particle_body_list",
            "particle_body_capacity",
            "particle_slot_counts",
            "particle_slot_bodies",
            "particle_body_dropped",
            "particle_speed_bound",
            "recycle_contacts",
            "particle_colliders",
            "particle_selected",
            "prepared_passes",
            "particle_slot_wanted",
            "joint_count",
        ];
        let got =
            if integers.contains(&name.as_str()) { u32::from_le_bytes(word) as f32 } else { f32::from_le_bytes(word) };
        assert_eq!(got, *value, "StepParams.{name} at WGSL offset {offset}");
    }
}
