//! Small helpers to declare bind group layouts, build pipelines, and record the prefix sum.

use super::shaders::{self, SCAN_BLOCK, UNIFORM_SLOT, dispatch_grid};

/// What a binding is.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Slot {
    /// A uniform buffer.
    Uniform,
    /// A uniform buffer bound at a different 256-byte slot per dispatch.
    UniformDynamic,
    /// A storage buffer, read-only or not.
    Storage(bool),
}

/// A bind group layout with the given bindings, numbered from 0.
pub(crate) fn layout(device: &wgpu::Device, label: &str, slots: &[Slot]) -> wgpu::BindGroupLayout {
    let entries: Vec<wgpu::BindGroupLayoutEntry> = slots
        .iter()
        .enumerate()
        .map(|(i, slot)| wgpu::BindGroupLayoutEntry {
            binding: i as u32,
            visibility: wgpu::ShaderStages::COMPUTE,
            ty: wgpu::BindingType::Buffer {
                ty: match slot {
                    Slot::Uniform | Slot::UniformDynamic => wgpu::BufferBindingType::Uniform,
                    Slot::Storage(read_only) => wgpu::BufferBindingType::Storage { read_only: *read_only },
                },
                has_dynamic_offset: matches!(slot, Slot::UniformDynamic),
                min_binding_size: None,
            },
            count: None,
        })
        .collect();
    device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor { label: Some(label), entries: &entries })
}

/// A bind group binding `buffers` in order; a dynamic uniform binds one slot.
pub(crate) fn bind(
    device: &wgpu::Device,
    label: &str,
    layout: &wgpu::BindGroupLayout,
    slots: &[Slot],
    buffers: &[&wgpu::Buffer],
) -> wgpu::BindGroup {
    let entries: Vec<wgpu::BindGroupEntry> = buffers
        .iter()
        .zip(slots)
        .enumerate()
        .map(|(i, (buffer, slot))| wgpu::BindGroupEntry {
            binding: i as u32,
            resource: match slot {
                Slot::UniformDynamic => wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                    buffer,
                    offset: 0,
                    size: std::num::NonZeroU64::new(UNIFORM_SLOT),
                }),
                _ => buffer.as_entire_binding(),
            },
        })
        .collect();
    device.create_bind_group(&wgpu::BindGroupDescriptor { label: Some(label), layout, entries: &entries })
}

/// The compiled module of every stage file, by stem.
pub(crate) fn modules(device: &wgpu::Device) -> Vec<(&'static str, wgpu::ShaderModule)> {
    shaders::composed_modules()
        .into_iter()
        .map(|(name, source)| {
            let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
                label: Some(name),
                source: wgpu::ShaderSource::Wgsl(source.into()),
            });
            (name, module)
        })
        .collect()
}

/// A compute pipeline for `entry` of stage file `file`, on a layout of the given groups.
pub(crate) fn pipeline(
    device: &wgpu::Device,
    modules: &[(&'static str, wgpu::ShaderModule)],
    groups: &[&wgpu::BindGroupLayout],
    file: &str,
    entry: &str,
) -> wgpu::ComputePipeline {
    let module = &modules.iter().find(|(name, _)| *name == file).unwrap_or_else(|| panic!("no stage file {file}")).1;
    let groups: Vec<Option<&wgpu::BindGroupLayout>> = groups.iter().map(|g| Some(*g)).collect();
    let layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
        label: Some(entry),
        bind_group_layouts: &groups,
        immediate_size: 0,
    });
    device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
        label: Some(entry),
        layout: Some(&layout),
        module,
        entry_point: Some(entry),
        compilation_options: Default::default(),
        cache: None,
    })
}

/// Parameters of one scan, written into its slot of the scan uniform.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
pub(crate) struct ScanParams {
    pub offset: u32,
    pub len: u32,
    pub sums: u32,
    pub _pad: u32,
}

/// The prefix sum over regions of a `u32` work buffer.
pub(crate) struct Scan {
    pub slots: [Slot; 2],
    pub layout: wgpu::BindGroupLayout,
    blocks: wgpu::ComputePipeline,
    block_sums: wgpu::ComputePipeline,
    add: wgpu::ComputePipeline,
}

impl Scan {
    pub fn new(device: &wgpu::Device, modules: &[(&'static str, wgpu::ShaderModule)]) -> Self {
        let slots = [Slot::UniformDynamic, Slot::Storage(false)];
        let layout = layout(device, "scan", &slots);
        let make = |entry| pipeline(device, modules, &[&layout], "scan", entry);
        Self { blocks: make("scan_blocks"), block_sums: make("scan_block_sums"), add: make("scan_add"), slots, layout }
    }

    /// Block sums a scan of `len` elements needs.
    pub fn sums_needed(len: u32) -> u32 {
        len.div_ceil(SCAN_BLOCK) + 1
    }

    /// Records the scan described by slot `slot` of the uniform bound in `group`, over `len`
    /// elements.
    pub fn record(&self, pass: &mut wgpu::ComputePass, group: &wgpu::BindGroup, slot: u32, len: u32) {
        let offset = [(slot as u64 * UNIFORM_SLOT) as u32];
        let (x, y) = dispatch_grid(len.max(1), SCAN_BLOCK);
        pass.push_debug_group("scan");
        pass.set_bind_group(0, group, &offset);
        pass.set_pipeline(&self.blocks);
        pass.dispatch_workgroups(x, y, 1);
        pass.set_pipeline(&self.block_sums);
        pass.dispatch_workgroups(1, 1, 1);
        pass.set_pipeline(&self.add);
        pass.dispatch_workgroups(x, y, 1);
        pass.pop_debug_group();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wgpu::util::DeviceExt;

    #[test]
    fn scan_matches_a_cpu_prefix_sum() {
        let ctx = match crate::GpuContext::new() {
            Ok(ctx) => ctx,
            Err(e) if std::env::var("SIGNORINI_REQUIRE_GPU").is_ok_and(|v| v == "1") => panic!("no adapter: {e}"),
            Err(e) => return eprintln!("\n!!!!!!!! GPU TEST SKIPPED: {e} !!!!!!!!\n"),
        };
        let device = ctx.device();
        let modules = modules(device);
        let scan = Scan::new(device, &modules);
        let lengths = [1u32, 2, 511, 512, 513, 5000, 262_144, 300_001];
        let mut rng = crate::scenes::Lcg(2);
        for (k, &len) in lengths.iter().enumerate() {
            // The region starts at an offset, as in the solver's arena.
            let offset = 7 + k as u32;
            let data: Vec<u32> = (0..len).map(|_| ((rng.next_centered() + 0.5) * 9.0) as u32).collect();
            let sums = offset + len + 1;
            let mut work = vec![0u32; (sums + Scan::sums_needed(len)) as usize];
            work[offset as usize..(offset + len) as usize].copy_from_slice(&data);
            let buffer = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some("work"),
                contents: bytemuck::cast_slice(&work),
                usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
            });
            let mut params = vec![0u8; UNIFORM_SLOT as usize];
            params[..16].copy_from_slice(bytemuck::bytes_of(&ScanParams { offset, len, sums, _pad: 0 }));
            let uniform = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some("scan params"),
                contents: &params,
                usage: wgpu::BufferUsages::UNIFORM,
            });
            let group = bind(device, "scan", &scan.layout, &scan.slots, &[&uniform, &buffer]);
            let readback = device.create_buffer(&wgpu::BufferDescriptor {
                label: None,
                size: buffer.size(),
                usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            });
            let mut encoder = device.create_command_encoder(&Default::default());
            {
                let mut pass = encoder.begin_compute_pass(&Default::default());
                scan.record(&mut pass, &group, 0, len);
            }
            encoder.copy_buffer_to_buffer(&buffer, 0, &readback, 0, buffer.size());
            ctx.queue().submit([encoder.finish()]);
            readback.map_async(wgpu::MapMode::Read, .., |r| r.expect("map"));
            device.poll(wgpu::PollType::wait_indefinitely()).unwrap();
            let got: Vec<u32> = bytemuck::cast_slice(&readback.get_mapped_range(..).unwrap()).to_vec();
            let mut total = 0u32;
            for (i, &x) in data.iter().enumerate() {
                assert_eq!(got[offset as usize + i], total, "len {len}, element {i}");
                total += x;
            }
            assert_eq!(got[(offset + len) as usize], total, "len {len}: total");
            assert_eq!(got[offset as usize - 1], 0, "nothing before the region is touched");
        }
    }
}
