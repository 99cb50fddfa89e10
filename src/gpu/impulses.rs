//! The impulses a program applies between steps, on the GPU (shaders/impulses.wgsl): summed per
//! body on the host ([`PendingImpulses`]), written into a buffer ahead of the next submission
//! and applied by one dispatch at the start of its first step, with no readback.

use super::kernels::{self, Slot};
use super::shaders::{WORKGROUP_SIZE, dispatch_grid};
use crate::layout::{GpuImpulse, PendingImpulses};

/// The stage's buffers and pipeline, made at the first impulse.
pub(crate) struct GpuImpulses {
    /// Room for one entry per body (48 bytes each).
    buffer: wgpu::Buffer,
    /// The entry count of the next dispatch (in `x`).
    count: wgpu::Buffer,
    group: wgpu::BindGroup,
    pipeline: wgpu::ComputePipeline,
    /// Entries uploaded and not yet recorded.
    queued: u32,
}

impl GpuImpulses {
    /// The stage for `body_count` bodies, on `bodies` and `props`.
    pub fn new(
        device: &wgpu::Device,
        modules: &[(&'static str, wgpu::ShaderModule)],
        bodies: &wgpu::Buffer,
        props: &wgpu::Buffer,
        body_count: u32,
    ) -> Self {
        let buffer = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("impulses"),
            size: (body_count.max(1) as usize * size_of::<GpuImpulse>()) as u64,
            usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let count = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("impulse_count"),
            size: 16,
            usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let slots = [Slot::Storage(false), Slot::Storage(true), Slot::Storage(true), Slot::Uniform];
        let layout = kernels::layout(device, "impulse_bindings", &slots);
        let group = kernels::bind(device, "impulse_bindings", &layout, &slots, &[bodies, props, &buffer, &count]);
        let pipeline = kernels::pipeline(device, modules, &[&layout], "impulses", "apply_impulses");
        Self { buffer, count, group, pipeline, queued: 0 }
    }

    /// Writes `pending`'s entries for the next submission and forgets them.
    pub fn upload(&mut self, queue: &wgpu::Queue, pending: &mut PendingImpulses) {
        if pending.entries.is_empty() {
            return;
        }
        queue.write_buffer(&self.buffer, 0, bytemuck::cast_slice(&pending.entries));
        self.queued = pending.entries.len() as u32;
        queue.write_buffer(&self.count, 0, bytemuck::cast_slice(&[self.queued, 0, 0, 0]));
        pending.clear();
    }

    /// Records the dispatch of the uploaded entries, if any.
    pub fn record(&mut self, pass: &mut wgpu::ComputePass) {
        if self.queued == 0 {
            return;
        }
        let (x, y) = dispatch_grid(self.queued, WORKGROUP_SIZE);
        pass.set_pipeline(&self.pipeline);
        pass.set_bind_group(0, &self.group, &[]);
        pass.dispatch_workgroups(x, y, 1);
        self.queued = 0;
    }
}
