//! What a dispatch costs on an adapter ([`GpuContext::measure_dispatches`]): chains of
//! dependent dispatches, as a step records them, timed at two lengths so that what a chain
//! costs to submit and wait for drops out of the difference; and the two ways the solver scans
//! a region (one workgroup's dispatch, or three), at lengths on either side of the longest
//! region one workgroup takes. GPU timestamps around the chain where the device has them
//! inside passes, else the wall clock from submission to completion.

use std::time::{Duration, Instant};

use wgpu::util::DeviceExt;

use super::GpuContext;
use super::kernels::{self, Scan, ScanParams, Slot};
use super::shaders::{self, UNIFORM_SLOT};
use super::timing::Marks;
use crate::error::{Error, Result};

/// One thread of one workgroup adds one to a word: each dispatch reads what the one before it
/// wrote, so the dispatches run one after another with a barrier between them, as a step's do.
const TOUCH: &str = "@group(0) @binding(0) var<storage, read_write> word: array<u32>;
@compute @workgroup_size(64)
fn touch(@builtin(local_invocation_index) lid: u32) {
    if lid == 0u {
        word[0] = word[0] + 1u;
    }
}
";

/// Dispatches in the short and the long chain of [`GpuContext::measure_dispatches`].
const CHAIN: (u32, u32) = (8, 136);
/// Scans in the short and the long chain.
const SCANS: (u32, u32) = (4, 20);
/// Times each pair of chains runs; the medians are reported.
const ROUNDS: usize = 5;
/// Lengths of the regions scanned.
const SCAN_LENGTHS: [u32; 5] = [1_024, 8_192, 32_768, 131_072, 600_000];

/// What one scan of a region costs on an adapter, both ways.
#[derive(Clone, Debug, PartialEq)]
pub struct ScanCost {
    /// Elements in the region.
    pub len: u32,
    /// One workgroup's dispatch (`scan_one`); `None` where the region is longer than one
    /// workgroup takes.
    pub one_workgroup: Option<Duration>,
    /// Three dispatches: the blocks, their sums, the offsets added back.
    pub three_dispatches: Duration,
}

/// What dispatches cost on an adapter ([`GpuContext::measure_dispatches`]).
#[derive(Clone, Debug, PartialEq)]
pub struct DispatchCosts {
    /// `"gpu timestamps"` or `"wall clock"`.
    pub timing_source: &'static str,
    /// One more dispatch in a chain of dependent dispatches of one small workgroup each: the
    /// time a step pays per dispatch before any work (median over the rounds).
    pub dependent_dispatch: Duration,
    /// The longest region one workgroup scans alone on this device.
    pub one_workgroup_scan_max: u32,
    /// One scan in a chain of scans, each way, by region length.
    pub scans: Vec<ScanCost>,
}

/// Times compute passes: by timestamps at the pass's start and end where the device writes
/// them inside passes, else by the wall clock around the submission and the wait.
struct Timer<'a> {
    ctx: &'a GpuContext,
    /// The query set, the buffer it resolves into, and the mappable copy.
    queries: Option<(wgpu::QuerySet, wgpu::Buffer, wgpu::Buffer)>,
}

impl<'a> Timer<'a> {
    fn new(ctx: &'a GpuContext) -> Self {
        let device = ctx.device();
        let queries = ctx.timestamps().then(|| {
            let set = device.create_query_set(&wgpu::QuerySetDescriptor {
                label: Some("probe_timestamps"),
                ty: wgpu::QueryType::Timestamp,
                count: 2,
            });
            let resolve = device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("probe_resolve"),
                size: 16,
                usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
                mapped_at_creation: false,
            });
            let readback = device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("probe_readback"),
                size: 16,
                usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            });
            (set, resolve, readback)
        });
        Self { ctx, queries }
    }

    fn source(&self) -> &'static str {
        if self.queries.is_some() { "gpu timestamps" } else { "wall clock" }
    }

    /// The time of one compute pass that `record` fills, once it has run.
    fn time(&self, record: impl FnOnce(&mut wgpu::ComputePass)) -> Result<Duration> {
        let (device, queue) = (self.ctx.device(), self.ctx.queue());
        let mut encoder = device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("probe") });
        {
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor::default());
            if let Some((set, _, _)) = &self.queries {
                pass.write_timestamp(set, 0);
            }
            record(&mut pass);
            if let Some((set, _, _)) = &self.queries {
                pass.write_timestamp(set, 1);
            }
        }
        if let Some((set, resolve, readback)) = &self.queries {
            encoder.resolve_query_set(set, 0..2, resolve, 0);
            encoder.copy_buffer_to_buffer(resolve, 0, readback, 0, 16);
        }
        let start = Instant::now();
        queue.submit([encoder.finish()]);
        device.poll(wgpu::PollType::wait_indefinitely()).map_err(|e| Error::Readback(e.to_string()))?;
        let wall = start.elapsed();
        let Some((_, _, readback)) = &self.queries else { return Ok(wall) };
        let ticks: Vec<u64> = super::solver::read_buffer(device, readback)?;
        let ns = ticks[1].saturating_sub(ticks[0]) as f64 * f64::from(queue.get_timestamp_period());
        Ok(Duration::from_secs_f64(ns * 1e-9))
    }
}

/// The median of `samples`.
fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

/// What one more unit of a chain costs: `record(pass, count)` records a chain of `count`
/// units; the long and the short chain (`counts`) run by turns, [`ROUNDS`] times each, and the
/// median difference is divided by the units between them.
fn per_unit(
    timer: &Timer,
    counts: (u32, u32),
    mut record: impl FnMut(&mut wgpu::ComputePass, u32),
) -> Result<Duration> {
    let mut samples = Vec::with_capacity(ROUNDS);
    for _ in 0..ROUNDS {
        let short = timer.time(|pass| record(pass, counts.0))?;
        let long = timer.time(|pass| record(pass, counts.1))?;
        samples.push(long.saturating_sub(short) / (counts.1 - counts.0));
    }
    Ok(median(samples))
}

impl GpuContext {
    /// Measures what dispatches cost on this device: a dependent dispatch (the chain of one
    /// small workgroup each that a step's dispatches form, each waiting on the one before), and
    /// a scan of regions of 1,024 to 600,000 elements each way the solver can run it (one
    /// workgroup's dispatch where the region fits, and three). Each figure is the difference
    /// between a long and a short chain, by GPU timestamps where the device has them inside
    /// passes, else by the wall clock (which then also holds the submission's share). A
    /// software adapter's figures are the CPU's, not a GPU's. It blocks until the GPU is done
    /// (some hundreds of passes); it is a measurement for reports and choices, not for a loop.
    ///
    /// # Errors
    /// [`Error::Readback`] if waiting for the device or reading its timestamps fails.
    pub fn measure_dispatches(&self) -> Result<DispatchCosts> {
        let device = self.device();
        let timer = Timer::new(self);

        let touch = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("probe_touch"),
            source: wgpu::ShaderSource::Wgsl(TOUCH.into()),
        });
        let modules = [("probe", touch)];
        let touch_slots = [Slot::Storage(false)];
        let touch_layout = kernels::layout(device, "probe_touch", &touch_slots);
        let touch_pipeline = kernels::pipeline(device, &modules, &[&touch_layout], "probe", "touch");
        let word = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("probe_word"),
            contents: &[0; 16],
            usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
        });
        let touch_group = kernels::bind(device, "probe_touch", &touch_layout, &touch_slots, &[&word]);
        let dependent_dispatch = per_unit(&timer, CHAIN, |pass, count| {
            pass.set_pipeline(&touch_pipeline);
            pass.set_bind_group(0, &touch_group, &[]);
            for _ in 0..count {
                pass.dispatch_workgroups(1, 1, 1);
            }
        })?;
        // Every dispatch ran: the word counts them.
        let counted: Vec<u32> = read_words(self, &word)?;
        let expected = ROUNDS as u32 * (CHAIN.0 + CHAIN.1);
        if counted[0] != expected {
            return Err(Error::Readback(format!("the probe counted {} dispatches of {expected}", counted[0])));
        }

        let scan_modules: Vec<(&'static str, wgpu::ShaderModule)> = shaders::composed_modules()
            .into_iter()
            .filter(|(name, _)| *name == "scan")
            .map(|(name, source)| {
                let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
                    label: Some(name),
                    source: wgpu::ShaderSource::Wgsl(source.into()),
                });
                (name, module)
            })
            .collect();
        let scan = Scan::new(device, &scan_modules);
        let most = scan.one_workgroup_max();
        let mut scans = Vec::with_capacity(SCAN_LENGTHS.len());
        for len in SCAN_LENGTHS {
            let sums = len + 1;
            let words = sums + Scan::sums_needed(len);
            let work = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some("probe_scan"),
                contents: bytemuck::cast_slice(&vec![1u32; words as usize]),
                usage: wgpu::BufferUsages::STORAGE,
            });
            let mut params = vec![0u8; UNIFORM_SLOT as usize];
            params[..16].copy_from_slice(bytemuck::bytes_of(&ScanParams { offset: 0, len, sums, _pad: 0 }));
            let params = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some("probe_scan_params"),
                contents: &params,
                usage: wgpu::BufferUsages::UNIFORM,
            });
            let group = kernels::bind(device, "probe_scan", &scan.layout, &scan.slots, &[&params, &work]);
            let way = |one: bool| {
                per_unit(&timer, SCANS, |pass, count| {
                    for _ in 0..count {
                        scan.record_as(pass, &mut Marks::off(), "probe_scan", &group, 0, len, one);
                    }
                })
            };
            let one_workgroup = if len <= most { Some(way(true)?) } else { None };
            scans.push(ScanCost { len, one_workgroup, three_dispatches: way(false)? });
        }
        Ok(DispatchCosts { timing_source: timer.source(), dependent_dispatch, one_workgroup_scan_max: most, scans })
    }
}

/// The words of a storage buffer, through a mappable copy.
fn read_words(ctx: &GpuContext, buffer: &wgpu::Buffer) -> Result<Vec<u32>> {
    let device = ctx.device();
    let readback = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("probe_words"),
        size: buffer.size(),
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    let mut encoder = device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("probe_read") });
    encoder.copy_buffer_to_buffer(buffer, 0, &readback, 0, buffer.size());
    ctx.queue().submit([encoder.finish()]);
    super::solver::read_buffer(device, &readback)
}
