//! The math shared by every stage, on the GPU against its Rust twin in `signorini::math`.
//! A kernel built from `common.wgsl` evaluates each function on the same random inputs; the
//! results must agree to a few ulps everywhere, and the test reports how many agree exactly
//! (on lavapipe and llvmpipe all of them do, which is what lets whole simulations match bit
//! for bit).

mod common;

use glam::{Quat, Vec3, Vec4};
use signorini::math;
use signorini::shaders;
use wgpu::util::DeviceExt;

const N: usize = 2048;
/// Output floats per input.
const OUT: usize = 24;

const KERNEL: &str = r#"
@group(1) @binding(0) var<storage, read> input: array<vec4<f32>>;
@group(1) @binding(1) var<storage, read_write> output: array<f32>;

fn put(i: u32, k: u32, v: vec4<f32>) {
    output[i * 24u + k] = v.x;
    output[i * 24u + k + 1u] = v.y;
    output[i * 24u + k + 2u] = v.z;
    output[i * 24u + k + 3u] = v.w;
}

@compute @workgroup_size(64)
fn probe(@builtin(global_invocation_id) g: vec3<u32>) {
    let i = g.x;
    let q = quat_normalize(input[3u * i]);
    let v = input[3u * i + 1u].xyz;
    let d = abs(input[3u * i + 2u].xyz) + vec3<f32>(0.1);
    put(i, 0u, vec4<f32>(rotate(q, v), 0.0));
    put(i, 4u, quat_mul(q, input[3u * i + 2u]));
    put(i, 8u, quat_exp(v * input[3u * i + 2u].w));
    let m = world_inverse_inertia(q, d);
    put(i, 12u, vec4<f32>(mat3_mul(mat3_inverse(m), v), 0.0));
    let b = tangent_basis(normalize(v));
    put(i, 16u, vec4<f32>(b.t1, kinetic_energy(0.5, d, q, v, d)));
    put(i, 20u, q);
}
"#;

/// Runs the entry point `probe` of `source` (which binds `input` at group 1 binding 0 and a
/// float `output` of `out_floats` at binding 1) over `threads` threads; returns the output.
fn run_probe(ctx: &signorini::GpuContext, source: &str, input: &[Vec4], threads: usize, out_floats: usize) -> Vec<f32> {
    let device = ctx.device();
    let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: Some("probe"),
        source: wgpu::ShaderSource::Wgsl(source.into()),
    });
    let storage = |read_only, binding| wgpu::BindGroupLayoutEntry {
        binding,
        visibility: wgpu::ShaderStages::COMPUTE,
        ty: wgpu::BindingType::Buffer {
            ty: wgpu::BufferBindingType::Storage { read_only },
            has_dynamic_offset: false,
            min_binding_size: None,
        },
        count: None,
    };
    // The probe only uses group 1, but common.wgsl may declare group 0; an explicit layout
    // keeps group 0 empty.
    let empty = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor { label: None, entries: &[] });
    let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
        label: Some("probe"),
        entries: &[storage(true, 0), storage(false, 1)],
    });
    let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
        label: None,
        bind_group_layouts: &[Some(&empty), Some(&layout)],
        immediate_size: 0,
    });
    let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
        label: Some("probe"),
        layout: Some(&pipeline_layout),
        module: &module,
        entry_point: Some("probe"),
        compilation_options: Default::default(),
        cache: None,
    });
    let input_buffer = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
        label: Some("input"),
        contents: bytemuck::cast_slice(input),
        usage: wgpu::BufferUsages::STORAGE,
    });
    let size = (out_floats * 4) as u64;
    let output = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("output"),
        size,
        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
        mapped_at_creation: false,
    });
    let readback = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("readback"),
        size,
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    let empty_group =
        device.create_bind_group(&wgpu::BindGroupDescriptor { label: None, layout: &empty, entries: &[] });
    let group = device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: None,
        layout: &layout,
        entries: &[
            wgpu::BindGroupEntry { binding: 0, resource: input_buffer.as_entire_binding() },
            wgpu::BindGroupEntry { binding: 1, resource: output.as_entire_binding() },
        ],
    });
    let mut encoder = device.create_command_encoder(&Default::default());
    {
        let mut pass = encoder.begin_compute_pass(&Default::default());
        pass.set_pipeline(&pipeline);
        pass.set_bind_group(0, &empty_group, &[]);
        pass.set_bind_group(1, &group, &[]);
        pass.dispatch_workgroups(threads.div_ceil(64) as u32, 1, 1);
    }
    encoder.copy_buffer_to_buffer(&output, 0, &readback, 0, size);
    ctx.queue().submit([encoder.finish()]);
    readback.map_async(wgpu::MapMode::Read, .., |r| r.expect("map"));
    device.poll(wgpu::PollType::wait_indefinitely()).unwrap();
    bytemuck::cast_slice(&readback.get_mapped_range(..).unwrap()).to_vec()
}

#[test]
fn shared_math_matches_rust() {
    let Some(ctx) = common::gpu() else { return };
    let mut rng = signorini::scenes::Lcg(5);
    let mut input = Vec::with_capacity(3 * N);
    for _ in 0..N {
        input.push(Vec4::new(rng.next_centered(), rng.next_centered(), rng.next_centered(), rng.next_centered()));
        input.push(Vec4::new(rng.range(-5.0, 5.0), rng.range(-5.0, 5.0), rng.range(-5.0, 5.0), 0.0));
        input.push(Vec4::new(rng.range(-3.0, 3.0), rng.range(-3.0, 3.0), rng.range(-3.0, 3.0), rng.range(0.0, 0.5)));
    }
    let source = format!("{}\n{KERNEL}", shaders::compose("", ""));
    let gpu = run_probe(ctx, &source, &input, N, N * OUT);
    let names = ["rotate", "quat_mul", "quat_exp", "inverse inertia", "tangent_basis/energy", "quat_normalize"];
    let mut exact = [0usize; 6];
    for i in 0..N {
        let raw = input[3 * i];
        let q = math::quat_normalize(Quat::from_xyzw(raw.x, raw.y, raw.z, raw.w));
        let v = input[3 * i + 1].truncate();
        let third = input[3 * i + 2];
        let d = third.truncate().abs() + Vec3::splat(0.1);
        let m = math::world_inverse_inertia(q, d);
        let (t1, _) = math::tangent_basis(v.normalize());
        let cpu: [Vec4; 6] = [
            math::rotate(q, v).extend(0.0),
            Vec4::from(math::quat_mul(q, Quat::from_vec4(third))),
            Vec4::from(math::quat_exp(v * third.w)),
            (math::mat3_inverse(m) * v).extend(0.0),
            t1.extend(math::kinetic_energy(0.5, d, q, v, d)),
            Vec4::from(q),
        ];
        for (k, expect) in cpu.iter().enumerate() {
            let got = Vec4::from_slice(&gpu[i * OUT + 4 * k..i * OUT + 4 * k + 4]);
            if got == *expect {
                exact[k] += 1;
            }
            let scale = expect.abs().max_element().max(1.0);
            assert!(
                (got - *expect).abs().max_element() <= 1e-5 * scale,
                "{}: input {i}: gpu {got} cpu {expect}",
                names[k]
            );
        }
    }
    for (name, count) in names.iter().zip(exact) {
        eprintln!("{name}: {count}/{N} bit-identical on {}", ctx.adapter());
    }
}

/// The WGSL evaluation of a compiled SDF (shaders/sdf.wgsl) against `sdf::evaluate_program`:
/// every primitive, a baked grid, transforms and CSG, at random points around the field.
#[test]
fn sdf_programs_match_rust() {
    use signorini::Sdf;
    let Some(ctx) = common::gpu() else { return };
    let rot = Quat::from_euler(glam::EulerRot::XYZ, 0.3, -1.1, 0.7);
    let (v, t) = signorini::scenes::uv_sphere_mesh(0.4, 12, 6);
    let grid = signorini::sdf::GridSdf::from_mesh(&v, &t, 0.1).unwrap();
    let field = Sdf::bowl(1.0, 0.1)
        .union(Sdf::hollow_box(Vec3::new(2.0, 1.5, 1.8)).rotated(rot))
        .union(Sdf::torus(0.6, 0.2).rotated(rot).translated(Vec3::new(0.2, 0.5, 0.0)))
        .union(Sdf::capsule(0.3, 0.2).transformed(Vec3::X, rot.inverse()))
        .union(Sdf::cylinder(0.3, 0.3).translated(Vec3::new(0.0, -0.5, 0.2)))
        .subtract(Sdf::rounded_cuboid(Vec3::splat(0.4), 0.1).translated(Vec3::new(0.5, 0.5, 0.0)))
        .intersection(Sdf::half_space(Vec3::new(0.1, 1.0, 0.0), 1.0))
        .union(Sdf::grid(grid).transformed(Vec3::new(-0.5, 0.3, 0.2), rot));
    field.validate().unwrap();
    // Some padding before the program checks that `first` is honoured.
    let first = 5u32;
    let mut input = vec![Vec4::splat(7.0); first as usize];
    let program = field.compile();
    let count = program.node_count;
    input.extend(&program.data);
    let points_at = input.len();
    let mut rng = signorini::scenes::Lcg(17);
    let mut points = Vec::with_capacity(N);
    for _ in 0..N {
        points.push(Vec3::new(rng.range(-2.5, 2.5), rng.range(-2.0, 2.0), rng.range(-2.5, 2.5)));
    }
    input.extend(points.iter().map(|p| p.extend(0.0)));
    let kernel = format!(
        r#"
@group(1) @binding(0) var<storage, read> geometry: array<vec4<f32>>;
@group(1) @binding(1) var<storage, read_write> output: array<f32>;

@compute @workgroup_size(64)
fn probe(@builtin(global_invocation_id) g: vec3<u32>) {{
    let i = g.x;
    if i >= {N}u {{
        return;
    }}
    let r = sdf_evaluate({first}u, {count}u, geometry[{points_at}u + i].xyz);
    output[4u * i] = r.x;
    output[4u * i + 1u] = r.y;
    output[4u * i + 2u] = r.z;
    output[4u * i + 3u] = r.w;
}}
"#
    );
    let source = format!("{}\n{}\n{kernel}", shaders::compose("", ""), shaders::SDF);
    let gpu = run_probe(ctx, &source, &input, N, 4 * N);
    let mut exact = 0;
    for (i, p) in points.iter().enumerate() {
        let (d, g) = signorini::sdf::evaluate_program(&input, first, count, *p);
        let got = Vec4::from_slice(&gpu[4 * i..4 * i + 4]);
        exact += usize::from(got == g.extend(d));
        assert!((got.w - d).abs() <= 1e-5 * d.abs().max(1.0), "point {p}: gpu distance {} cpu {d}", got.w);
        assert!((got.truncate() - g).length() <= 1e-5, "point {p}: gpu gradient {} cpu {g}", got.truncate());
    }
    eprintln!("sdf: {exact}/{N} bit-identical on {}", ctx.adapter());
}

/// `GpuContext::measure_dispatches` runs every chain it times (it checks the count the touched
/// word holds, and fails otherwise), reports a one-workgroup time exactly for the regions one
/// workgroup takes, and times that are positive and finite: by timestamps where the device
/// has them inside passes (lavapipe), by the wall clock otherwise (llvmpipe GL).
#[test]
fn measuring_dispatches_times_every_chain() {
    let Some(ctx) = common::gpu() else { return };
    let costs = ctx.measure_dispatches().expect("measure");
    let source = if ctx.timestamps() { "gpu timestamps" } else { "wall clock" };
    assert_eq!(costs.timing_source, source);
    assert!(costs.dependent_dispatch > std::time::Duration::ZERO, "{costs:?}");
    assert!(costs.one_workgroup_scan_max >= 32 * 64, "{costs:?}");
    assert_eq!(costs.scans.iter().map(|s| s.len).collect::<Vec<_>>(), [1_024, 8_192, 32_768, 131_072, 600_000]);
    for scan in &costs.scans {
        assert_eq!(scan.one_workgroup.is_some(), scan.len <= costs.one_workgroup_scan_max, "{scan:?}");
        assert!(scan.three_dispatches > std::time::Duration::ZERO, "{scan:?}");
        assert!(scan.one_workgroup.is_none_or(|t| t > std::time::Duration::ZERO), "{scan:?}");
    }
}
