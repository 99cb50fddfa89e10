//! The joint stages on the GPU (shaders/joints.wgsl): the joints in a storage buffer, sorted by
//! their color, and one dispatch per color for each warm start and solve sweep (or one
//! workgroup's dispatch over all colors, `SolverSettings::gpu_fused_sweeps`).

use super::kernels::{self, Slot};
use super::shaders::{UNIFORM_SLOT, WORKGROUP_SIZE, dispatch_grid};
use super::solver::{read_buffer, storage_fits};
use super::timing::Marks;
use crate::error::Result;
use crate::layout::{GpuJoint, GpuJointBreak, JointSlots};

/// The joint buffer, its bind group and pipelines, and each color's range.
pub(crate) struct GpuJoints {
    /// The joints, by color (the order of `Packed::joints`).
    buffer: wgpu::Buffer,
    /// Where the joints are copied to be read back.
    readback: wgpu::Buffer,
    /// The world's index of each joint of `buffer`.
    order: Vec<u32>,
    /// Where each of the world's joints is in `buffer`, and which have motors.
    slots: JointSlots,
    /// Each joint's breaking loads and no-contact entries, in the order of `buffer`.
    pub loads: Vec<GpuJointBreak>,
    /// Binds the joints and the color ranges.
    group: wgpu::BindGroup,
    prepare: wgpu::ComputePipeline,
    /// Breaks overloaded joints, where some joint can break (`None` where none can).
    breaking: Option<wgpu::ComputePipeline>,
    warm_start: wgpu::ComputePipeline,
    solve: wgpu::ComputePipeline,
    relax: wgpu::ComputePipeline,
    /// Workgroups of each color's dispatch; the slot after the colors' holds every joint.
    grids: Vec<(u32, u32)>,
    /// The warm start, solve and relax sweeps in one workgroup each
    /// (`SolverSettings::gpu_fused_sweeps`); none without it.
    fused: Option<[wgpu::ComputePipeline; 3]>,
}

/// The buffers the joint stages bind besides their own.
pub(crate) struct JointBindings<'a> {
    pub params: &'a wgpu::Buffer,
    pub bodies: &'a wgpu::Buffer,
    pub solver_bodies: &'a wgpu::Buffer,
    /// The shapes' topology with the bodies' no-contact lists, from which a joint that breaks
    /// takes its entries.
    pub topology: &'a wgpu::Buffer,
}

impl GpuJoints {
    /// Uploads `joints` (sorted by color, each color starting at `colors[c]`, the last entry
    /// one past the end) and builds the stages; `None` without joints. With `fused_size`, the
    /// sweeps are fused, in one workgroup of that many threads.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        device: &wgpu::Device,
        limits: &wgpu::Limits,
        modules: &[(&'static str, wgpu::ShaderModule)],
        joints: &[GpuJoint],
        breaks: &[GpuJointBreak],
        (colors, order): (&[u32], &[u32]),
        with: &JointBindings,
        fused_size: Option<u32>,
    ) -> Result<Option<Self>> {
        if joints.is_empty() {
            return Ok(None);
        }
        use wgpu::util::DeviceExt;
        let bytes: &[u8] = bytemuck::cast_slice(joints);
        storage_fits(limits, "joints", bytes.len() as u64)?;
        let buffer = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("joints"),
            contents: bytes,
            usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST,
        });
        let readback = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("joints_readback"),
            size: buffer.size(),
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        // One uniform slot per color, then one with every joint; each with the color count.
        let color_count = colors.len() as u32 - 1;
        let mut ranges: Vec<[u32; 3]> = colors.windows(2).map(|w| [w[0], w[1] - w[0], color_count]).collect();
        ranges.push([0, joints.len() as u32, color_count]);
        let mut slots = vec![0u8; ranges.len() * UNIFORM_SLOT as usize];
        for (k, range) in ranges.iter().enumerate() {
            slots[k * UNIFORM_SLOT as usize..][..12].copy_from_slice(bytemuck::cast_slice(range));
        }
        let starts = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("joint_starts"),
            contents: bytemuck::cast_slice(colors),
            usage: wgpu::BufferUsages::STORAGE,
        });
        let ranges_buffer = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("joint_ranges"),
            contents: &slots,
            usage: wgpu::BufferUsages::UNIFORM,
        });
        let breakable = breaks.iter().any(GpuJointBreak::breakable);
        let loads = breaks.to_vec();
        let breaks = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("joint_breaks"),
            contents: bytemuck::cast_slice(breaks),
            usage: wgpu::BufferUsages::STORAGE,
        });
        let layout_slots = [
            Slot::Uniform,
            Slot::Storage(false),
            Slot::Storage(true),
            Slot::Storage(false),
            Slot::UniformDynamic,
            Slot::Storage(true),
            Slot::Storage(false),
            Slot::Storage(true),
        ];
        let layout = kernels::layout(device, "joint_bindings", &layout_slots);
        let group = kernels::bind(
            device,
            "joint_bindings",
            &layout,
            &layout_slots,
            &[with.params, with.bodies, with.solver_bodies, &buffer, &ranges_buffer, &breaks, with.topology, &starts],
        );
        let pipeline = |entry: &str| kernels::pipeline(device, modules, &[&layout], "joints", entry);
        Ok(Some(Self {
            buffer,
            readback,
            order: order.to_vec(),
            slots: JointSlots::new(joints, order),
            loads,
            group,
            prepare: pipeline("prepare_joints"),
            breaking: breakable.then(|| pipeline("break_joints")),
            warm_start: pipeline("warm_start_joints"),
            solve: pipeline("solve_joints"),
            relax: pipeline("relax_joints"),
            grids: ranges.iter().map(|r| dispatch_grid(r[1], WORKGROUP_SIZE)).collect(),
            fused: fused_size.map(|size| {
                ["warm_start_joints_fused", "solve_joints_fused", "relax_joints_fused"].map(|entry| {
                    kernels::pipeline_with(
                        device,
                        modules,
                        &[&layout],
                        "joints",
                        entry,
                        &[("FUSED_SIZE", f64::from(size))],
                    )
                })
            }),
        }))
    }

    /// Colors of joints.
    fn colors(&self) -> usize {
        self.grids.len() - 1
    }

    fn dispatch(&self, pass: &mut wgpu::ComputePass, marks: &mut Marks, label: &'static str, slot: usize) {
        let grid = self.grids[slot];
        pass.set_bind_group(0, &self.group, &[(slot as u64 * UNIFORM_SLOT) as u32]);
        marks.dispatch(pass, label);
        pass.dispatch_workgroups(grid.0, grid.1, 1);
    }

    /// Records, where some joint can break, the check that breaks those the last step
    /// overloaded: at the start of the step, before its broad phase.
    pub fn record_breaking(&self, pass: &mut wgpu::ComputePass, marks: &mut Marks) {
        let Some(breaking) = self.breaking.as_ref() else { return };
        pass.push_debug_group("break_joints");
        pass.set_pipeline(breaking);
        self.dispatch(pass, marks, "break_joints", self.colors());
        pass.pop_debug_group();
    }

    /// Whether the step breaks overloaded joints ([`GpuJoints::record_breaking`]).
    pub fn breaks(&self) -> bool {
        self.breaking.is_some()
    }

    /// Records the once-a-step preparation (the centres' offsets, the warm start's scale).
    pub fn record_prepare(&self, pass: &mut wgpu::ComputePass, marks: &mut Marks) {
        pass.push_debug_group("prepare_joints");
        pass.set_pipeline(&self.prepare);
        self.dispatch(pass, marks, "prepare_joints", self.colors());
        pass.pop_debug_group();
    }

    /// Records a substep's warm start, color by color.
    pub fn record_warm_start(&self, pass: &mut wgpu::ComputePass, marks: &mut Marks) {
        self.record_sweep(pass, marks, 0, "warm_start_joints");
    }

    /// Records one sweep of the biased solve (`use_bias`) or of the relax iterations.
    pub fn record_solve(&self, pass: &mut wgpu::ComputePass, marks: &mut Marks, use_bias: bool) {
        if use_bias {
            self.record_sweep(pass, marks, 1, "solve_joints");
        } else {
            self.record_sweep(pass, marks, 2, "relax_joints");
        }
    }

    /// Records sweep `which` (the warm start, the solve, the relax): a dispatch per color, or
    /// one workgroup's dispatch over them all when the sweeps are fused.
    fn record_sweep(&self, pass: &mut wgpu::ComputePass, marks: &mut Marks, which: usize, name: &'static str) {
        pass.push_debug_group(name);
        if let Some(fused) = &self.fused {
            pass.set_pipeline(&fused[which]);
            pass.set_bind_group(0, &self.group, &[(self.colors() as u64 * UNIFORM_SLOT) as u32]);
            marks.dispatch(pass, name);
            pass.dispatch_workgroups(1, 1, 1);
        } else {
            pass.set_pipeline([&self.warm_start, &self.solve, &self.relax][which]);
            for color in 0..self.colors() {
                self.dispatch(pass, marks, name, color);
            }
        }
        pass.pop_debug_group();
    }

    /// Dispatches of one sweep (one per color, or one when fused).
    pub fn sweep_dispatches(&self) -> u32 {
        if self.fused.is_some() { 1 } else { self.colors() as u32 }
    }

    /// Writes `motor` into `joint`'s record (see
    /// [`Solver::set_joint_motor`](crate::Solver::set_joint_motor)), ahead of the next
    /// submitted step.
    pub fn set_motor(&self, queue: &wgpu::Queue, joint: crate::JointHandle, motor: crate::JointMotor) -> Result<()> {
        let record = (self.slots.motor_slot(joint, &motor)? * size_of::<GpuJoint>()) as u64;
        let at = |offset: usize| record + offset as u64;
        queue.write_buffer(&self.buffer, at(std::mem::offset_of!(GpuJoint, motor_speed)), &motor.speed.to_ne_bytes());
        let effort = motor.max_effort.to_ne_bytes();
        queue.write_buffer(&self.buffer, at(std::mem::offset_of!(GpuJoint, max_motor_effort)), &effort);
        Ok(())
    }

    /// The world's index of each joint, in the order of the records.
    pub fn order(&self) -> &[u32] {
        &self.order
    }

    /// Writes every joint's record (by color, as [`Self::read`] gives them) ahead of the next
    /// submitted step.
    pub fn write(&self, queue: &wgpu::Queue, joints: &[GpuJoint]) {
        queue.write_buffer(&self.buffer, 0, bytemuck::cast_slice(joints));
    }

    /// The joints as the queued steps leave them, by color, and the world's index of each
    /// (waits for the queue).
    pub fn read(&self, device: &wgpu::Device, queue: &wgpu::Queue) -> Result<(Vec<GpuJoint>, &[u32])> {
        let mut encoder = device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("read_joints") });
        encoder.copy_buffer_to_buffer(&self.buffer, 0, &self.readback, 0, self.buffer.size());
        queue.submit([encoder.finish()]);
        Ok((read_buffer(device, &self.readback)?, &self.order))
    }
}
