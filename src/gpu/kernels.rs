//! Small helpers to declare bind group layouts, build pipelines, and record the prefix sum and
//! the radix sort.

use super::shaders::{self, RADIX_DIGITS, SCAN_BLOCK, SCAN_ONE_ITEMS, UNIFORM_SLOT, dispatch_grid};
use super::timing::Marks;

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
    pipeline_with(device, modules, groups, file, entry, &[])
}

/// [`pipeline`] with values for the stage file's pipeline-overridable constants (`override`).
pub(crate) fn pipeline_with(
    device: &wgpu::Device,
    modules: &[(&'static str, wgpu::ShaderModule)],
    groups: &[&wgpu::BindGroupLayout],
    file: &str,
    entry: &str,
    constants: &[(&str, f64)],
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
        compilation_options: wgpu::PipelineCompilationOptions { constants, ..Default::default() },
        cache: None,
    })
}

/// Records one dispatch of `pipeline` over `grid` (none when the grid has no workgroups) inside
/// a debug group named `label`, for readable captures, after its mark for a profiled step.
pub(crate) fn dispatch(
    pass: &mut wgpu::ComputePass,
    marks: &mut Marks,
    label: &'static str,
    pipeline: &wgpu::ComputePipeline,
    grid: (u32, u32),
) {
    if grid.0 > 0 {
        marks.dispatch(pass, label);
        pass.push_debug_group(label);
        pass.set_pipeline(pipeline);
        pass.dispatch_workgroups(grid.0, grid.1, 1);
        pass.pop_debug_group();
    }
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
    /// The whole scan in one workgroup (`scan_one`), in one tile for regions of at most
    /// [`Scan::one_workgroup_max`] elements, tile after tile beyond.
    one: wgpu::ComputePipeline,
    /// `scan_one`'s threads (`SCAN_ONE_SIZE`).
    one_size: u32,
}

impl Scan {
    pub fn new(device: &wgpu::Device, modules: &[(&'static str, wgpu::ShaderModule)]) -> Self {
        let slots = [Slot::UniformDynamic, Slot::Storage(false)];
        let layout = layout(device, "scan", &slots);
        let make = |entry| pipeline(device, modules, &[&layout], "scan", entry);
        // As many threads as a fused pass's workgroup: what the device allows, up to 1,024.
        let backend = format!("{:?}", device.adapter_info().backend);
        let one_size = super::contacts::fused_size(&device.limits(), &backend);
        let one =
            pipeline_with(device, modules, &[&layout], "scan", "scan_one", &[("SCAN_ONE_SIZE", f64::from(one_size))]);
        Self {
            blocks: make("scan_blocks"),
            block_sums: make("scan_block_sums"),
            add: make("scan_add"),
            one,
            one_size,
            slots,
            layout,
        }
    }

    /// Block sums a scan of `len` elements needs.
    pub fn sums_needed(len: u32) -> u32 {
        len.div_ceil(SCAN_BLOCK) + 1
    }

    /// The longest region one workgroup scans in one tile (`scan_one`): 32 elements a thread.
    /// [`Scan::record`] scans longer regions in three dispatches (the whole device), where one
    /// workgroup would take them tile after tile.
    pub fn one_workgroup_max(&self) -> u32 {
        SCAN_ONE_ITEMS * self.one_size
    }

    /// Dispatches one [`Scan::record`] of `len` elements records: one where a workgroup scans
    /// it alone, else three.
    pub fn dispatches(&self, len: u32) -> u32 {
        if len <= self.one_workgroup_max() { 1 } else { 3 }
    }

    /// Records the scan described by slot `slot` of the uniform bound in `group`, over `len`
    /// elements (in one workgroup's dispatch where it fits, else three); a profiled step times
    /// its dispatches as `label`.
    pub fn record(
        &self,
        pass: &mut wgpu::ComputePass,
        marks: &mut Marks,
        label: &'static str,
        group: &wgpu::BindGroup,
        slot: u32,
        len: u32,
    ) {
        self.record_as(pass, marks, label, group, slot, len, len <= self.one_workgroup_max());
    }

    /// [`Scan::record`] in one workgroup's dispatch (`one`; tile after tile beyond
    /// [`Scan::one_workgroup_max`]) or three.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn record_as(
        &self,
        pass: &mut wgpu::ComputePass,
        marks: &mut Marks,
        label: &'static str,
        group: &wgpu::BindGroup,
        slot: u32,
        len: u32,
        one: bool,
    ) {
        let offset = [(slot as u64 * UNIFORM_SLOT) as u32];
        let (x, y) = dispatch_grid(len.max(1), SCAN_BLOCK);
        pass.push_debug_group("scan");
        pass.set_bind_group(0, group, &offset);
        if one {
            pass.set_pipeline(&self.one);
            marks.dispatch(pass, label);
            pass.dispatch_workgroups(1, 1, 1);
            pass.pop_debug_group();
            return;
        }
        pass.set_pipeline(&self.blocks);
        marks.dispatch(pass, label);
        pass.dispatch_workgroups(x, y, 1);
        pass.set_pipeline(&self.block_sums);
        marks.dispatch(pass, label);
        pass.dispatch_workgroups(1, 1, 1);
        pass.set_pipeline(&self.add);
        marks.dispatch(pass, label);
        pass.dispatch_workgroups(x, y, 1);
        pass.pop_debug_group();
    }
}

/// Parameters of one radix sort pass, written into its slot of the radix uniform.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub(crate) struct RadixParams {
    pub src: u32,
    pub dst: u32,
    pub count_word: u32,
    pub capacity: u32,
    pub word: u32,
    pub shift: u32,
    pub histogram: u32,
    pub groups: u32,
}

/// The stable radix sort of two-word items in a `u32` work buffer (shaders/radix.wgsl).
pub(crate) struct Radix {
    pub slots: [Slot; 2],
    pub layout: wgpu::BindGroupLayout,
    histogram: wgpu::ComputePipeline,
    scatter: wgpu::ComputePipeline,
}

impl Radix {
    pub fn new(device: &wgpu::Device, modules: &[(&'static str, wgpu::ShaderModule)]) -> Self {
        let slots = [Slot::UniformDynamic, Slot::Storage(false)];
        let layout = layout(device, "radix", &slots);
        let make = |entry| pipeline(device, modules, &[&layout], "radix", entry);
        Self { histogram: make("radix_histogram"), scatter: make("radix_scatter"), slots, layout }
    }

    /// Histogram workgroups for `capacity` items.
    pub fn groups(capacity: u32) -> u32 {
        capacity.div_ceil(RADIX_DIGITS).max(1)
    }

    /// Histogram words for `capacity` items (the last holds the scan's total).
    pub fn histogram_words(capacity: u32) -> u32 {
        RADIX_DIGITS * Self::groups(capacity) + 1
    }

    /// The passes that sort the items at word `a` (scratch at `b`, same size) by the low `bits`
    /// of each `(word, bits)` key in turn, the least significant key first, and where the
    /// sorted items end (`a` or `b`).
    pub fn plan(
        a: u32,
        b: u32,
        count_word: u32,
        capacity: u32,
        histogram: u32,
        keys: &[(u32, u32)],
    ) -> (Vec<RadixParams>, u32) {
        let mut passes = Vec::new();
        let (mut src, mut dst) = (a, b);
        for &(word, bits) in keys {
            for shift in (0..bits).step_by(8) {
                passes.push(RadixParams {
                    src,
                    dst,
                    count_word,
                    capacity,
                    word,
                    shift,
                    histogram,
                    groups: Self::groups(capacity),
                });
                std::mem::swap(&mut src, &mut dst);
            }
        }
        (passes, src)
    }

    /// Dispatches [`Radix::record`] records for `passes` passes over `capacity` items, each
    /// pass's histogram scanned by `scan`.
    pub fn dispatches(passes: u32, capacity: u32, scan: &Scan) -> u32 {
        passes * (2 + scan.dispatches(RADIX_DIGITS * Self::groups(capacity)))
    }

    /// Records `passes` passes whose parameters sit in slots `first..` of the uniform bound in
    /// `group`, scanning each histogram with `scan`: the scan, its bind group and its slot. A
    /// profiled step times all of their dispatches as `label`.
    #[allow(clippy::too_many_arguments)]
    pub fn record(
        &self,
        pass: &mut wgpu::ComputePass,
        marks: &mut Marks,
        label: &'static str,
        group: &wgpu::BindGroup,
        first: u32,
        passes: u32,
        capacity: u32,
        (scan, scan_group, scan_slot): (&Scan, &wgpu::BindGroup, u32),
    ) {
        let (x, y) = dispatch_grid(Self::groups(capacity) * RADIX_DIGITS, RADIX_DIGITS);
        pass.push_debug_group("radix_sort");
        for k in first..first + passes {
            let offset = [(k as u64 * UNIFORM_SLOT) as u32];
            pass.set_bind_group(0, group, &offset);
            pass.set_pipeline(&self.histogram);
            marks.dispatch(pass, label);
            pass.dispatch_workgroups(x, y, 1);
            scan.record(pass, marks, label, scan_group, scan_slot, RADIX_DIGITS * Self::groups(capacity));
            pass.set_bind_group(0, group, &offset);
            pass.set_pipeline(&self.scatter);
            marks.dispatch(pass, label);
            pass.dispatch_workgroups(x, y, 1);
        }
        pass.pop_debug_group();
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use wgpu::util::DeviceExt;

    /// The GPU context, or `None` (with a loud line) without an adapter unless
    /// `SIGNORINI_REQUIRE_GPU=1`.
    pub(crate) fn context() -> Option<crate::GpuContext> {
        match crate::GpuContext::new() {
            Ok(ctx) => Some(ctx),
            Err(e) if std::env::var("SIGNORINI_REQUIRE_GPU").is_ok_and(|v| v == "1") => panic!("no adapter: {e}"),
            Err(e) => {
                eprintln!("\n!!!!!!!! GPU TEST SKIPPED: {e} !!!!!!!!\n");
                None
            }
        }
    }

    /// A uniform buffer holding each of `slots` at its own 256-byte slot.
    fn slotted_uniform(device: &wgpu::Device, label: &str, slots: &[&[u8]]) -> wgpu::Buffer {
        let mut bytes = vec![0u8; slots.len().max(1) * UNIFORM_SLOT as usize];
        for (k, slot) in slots.iter().enumerate() {
            let at = k * UNIFORM_SLOT as usize;
            bytes[at..at + slot.len()].copy_from_slice(slot);
        }
        device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some(label),
            contents: &bytes,
            usage: wgpu::BufferUsages::UNIFORM,
        })
    }

    /// Uploads `work`, runs `record` on it in one compute pass, and reads it back.
    fn run_on(
        ctx: &crate::GpuContext,
        work: &[u32],
        record: impl FnOnce(&wgpu::Buffer, &mut wgpu::ComputePass),
    ) -> Vec<u32> {
        let device = ctx.device();
        let buffer = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("work"),
            contents: bytemuck::cast_slice(work),
            usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
        });
        let readback = device.create_buffer(&wgpu::BufferDescriptor {
            label: None,
            size: buffer.size(),
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let mut encoder = device.create_command_encoder(&Default::default());
        {
            let mut pass = encoder.begin_compute_pass(&Default::default());
            record(&buffer, &mut pass);
        }
        encoder.copy_buffer_to_buffer(&buffer, 0, &readback, 0, buffer.size());
        ctx.queue().submit([encoder.finish()]);
        super::super::solver::read_buffer(device, &readback).expect("readback")
    }

    /// Both ways of scanning (three dispatches, and one workgroup's where the region fits it)
    /// give the CPU's prefix sums, on either side of the longest region one workgroup takes.
    #[test]
    fn scan_matches_a_cpu_prefix_sum() {
        let Some(ctx) = context() else { return };
        let device = ctx.device();
        let modules = modules(device);
        let scan = Scan::new(device, &modules);
        let most = scan.one_workgroup_max();
        let lengths = [1u32, 2, 511, 512, 513, 5000, most - 1, most, most + 1, 262_144, 300_001];
        // One workgroup at every length: beyond `most` in tiles, as the fused coloring scans.
        let ways = lengths.iter().flat_map(|&len| [(len, false), (len, true)]);
        let mut rng = crate::scenes::Lcg(2);
        for (k, (len, one)) in ways.enumerate() {
            // The region starts at an offset, as in the solver's arena.
            let offset = 7 + k as u32;
            let data: Vec<u32> = (0..len).map(|_| ((rng.next_centered() + 0.5) * 9.0) as u32).collect();
            let sums = offset + len + 1;
            let mut work = vec![0u32; (sums + Scan::sums_needed(len)) as usize];
            work[offset as usize..(offset + len) as usize].copy_from_slice(&data);
            let params = ScanParams { offset, len, sums, _pad: 0 };
            let uniform = slotted_uniform(device, "scan params", &[bytemuck::bytes_of(&params)]);
            let got = run_on(&ctx, &work, |buffer, pass| {
                let group = bind(device, "scan", &scan.layout, &scan.slots, &[&uniform, buffer]);
                scan.record_as(pass, &mut Marks::off(), "scan", &group, 0, len, one);
            });
            let mut total = 0u32;
            for (i, &x) in data.iter().enumerate() {
                assert_eq!(got[offset as usize + i], total, "len {len} (one workgroup: {one}), element {i}");
                total += x;
            }
            assert_eq!(got[(offset + len) as usize], total, "len {len} (one workgroup: {one}): total");
            assert_eq!(got[offset as usize - 1], 0, "nothing before the region is touched");
        }
    }

    #[test]
    fn radix_sort_is_a_stable_sort() {
        let Some(ctx) = context() else { return };
        let device = ctx.device();
        let modules = modules(device);
        let scan = Scan::new(device, &modules);
        let radix = Radix::new(device, &modules);
        let mut rng = crate::scenes::Lcg(5);
        // (items, key bits, counted by a header word, sort as (a, b) pairs)
        for &(len, bits, counted, pairs) in
            &[(1u32, 5u32, false, false), (300, 13, false, false), (70_000, 17, true, false), (5000, 11, true, true)]
        {
            let capacity = len + 37;
            let count = if counted { len } else { capacity };
            let (a, b) = (4, 4 + 2 * capacity);
            let histogram = b + 2 * capacity;
            let sums = histogram + Radix::histogram_words(capacity);
            let scanned = RADIX_DIGITS * Radix::groups(capacity);
            let mut work = vec![0u32; (sums + Scan::sums_needed(scanned)) as usize];
            work[0] = len;
            let mut items: Vec<[u32; 2]> = (0..count)
                .map(|i| {
                    let mut key = || ((rng.next_centered() + 0.5) * (1u32 << bits) as f32) as u32 & ((1 << bits) - 1);
                    if pairs { [key(), key()] } else { [key(), i] }
                })
                .collect();
            for (i, item) in items.iter().enumerate() {
                work[a as usize + 2 * i..a as usize + 2 * i + 2].copy_from_slice(item);
            }
            let keys: &[(u32, u32)] = if pairs { &[(1, bits), (0, bits)] } else { &[(0, bits)] };
            let count_word = if counted { 0 } else { shaders::RADIX_ALL };
            let (plan, end) = Radix::plan(a, b, count_word, capacity, histogram, keys);
            let passes: Vec<&[u8]> = plan.iter().map(bytemuck::bytes_of).collect();
            let radix_params = slotted_uniform(device, "radix params", &passes);
            let scan_params = ScanParams { offset: histogram, len: scanned, sums, _pad: 0 };
            let scan_params = slotted_uniform(device, "scan params", &[bytemuck::bytes_of(&scan_params)]);
            let got = run_on(&ctx, &work, |buffer, pass| {
                let radix_group = bind(device, "radix", &radix.layout, &radix.slots, &[&radix_params, buffer]);
                let scan_group = bind(device, "scan", &scan.layout, &scan.slots, &[&scan_params, buffer]);
                let scan = (&scan, &scan_group, 0);
                radix.record(pass, &mut Marks::off(), "sort", &radix_group, 0, plan.len() as u32, capacity, scan);
            });
            if pairs {
                items.sort();
            } else {
                items.sort_by_key(|item| item[0]);
            }
            for (i, item) in items.iter().enumerate() {
                let at = end as usize + 2 * i;
                assert_eq!(&got[at..at + 2], item, "{len} items of {bits} bits: item {i}");
            }
        }
    }
}
