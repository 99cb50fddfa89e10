//! Stage timing on the GPU: a timestamp is written into the step's compute pass wherever one
//! group of stages hands over to the next, the query set is resolved after the pass, copied to
//! a mappable buffer and mapped without waiting; [`StageClock::collect`] turns the ticks into
//! [`StageTimes`] once the map has completed. Nothing here waits for the GPU or allocates
//! while a step is recorded.

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::Duration;

use crate::solver::StageTimes;

/// The features timestamps between dispatches need.
pub(crate) const FEATURES: wgpu::Features = wgpu::Features::TIMESTAMP_QUERY
    .union(wgpu::Features::TIMESTAMP_QUERY_INSIDE_ENCODERS)
    .union(wgpu::Features::TIMESTAMP_QUERY_INSIDE_PASSES);

/// The group of stages an interval between two timestamps belongs to (the fields of
/// [`StageTimes`]); `End` closes the step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Stage {
    BroadPhase,
    NarrowPhase,
    Coloring,
    Solve,
    Integrate,
    Particles,
    End,
}

/// Where the timestamps of the step being recorded go; [`Marks::off`] records none.
pub(crate) struct Marks<'a> {
    target: Option<(&'a wgpu::QuerySet, &'a mut Vec<Stage>, u32)>,
}

impl Marks<'_> {
    /// Marks that write nothing (steps that are not timed).
    pub fn off() -> Self {
        Marks { target: None }
    }

    /// Writes a timestamp: from here on the time belongs to `stage`. Marks beyond the query
    /// set's size are not written (their time goes to the stage before them, and once `End` is
    /// among them the last interval is lost; the set is sized for every mark of a step).
    pub fn mark(&mut self, pass: &mut wgpu::ComputePass, stage: Stage) {
        if let Some((queries, stages, capacity)) = &mut self.target {
            let k = stages.len() as u32;
            if k < *capacity && stages.last() != Some(&stage) {
                pass.write_timestamp(queries, k);
                stages.push(stage);
            }
        }
    }
}

const IDLE: u8 = 0;
const MAPPING: u8 = 1;
const READY: u8 = 2;
/// The map failed: the buffer must still be unmapped before it can be mapped again.
const FAILED: u8 = 3;

/// Timestamps of one step at a time, read back asynchronously.
pub(crate) struct StageClock {
    queries: wgpu::QuerySet,
    capacity: u32,
    /// The groups of the intervals of the step recorded last.
    stages: Vec<Stage>,
    /// The groups of the step whose timestamps are being mapped.
    mapped_stages: Vec<Stage>,
    /// Whether the step recorded last was given marks (and so wrote the query set).
    armed: bool,
    resolve: wgpu::Buffer,
    readback: wgpu::Buffer,
    state: Arc<AtomicU8>,
    /// Nanoseconds per tick.
    period: f64,
    last: Option<StageTimes>,
}

impl StageClock {
    /// A clock for steps of at most `capacity` timestamps.
    pub fn new(device: &wgpu::Device, queue: &wgpu::Queue, capacity: u32) -> Self {
        let capacity = capacity.clamp(2, wgpu::QUERY_SET_MAX_QUERIES);
        let bytes = capacity as u64 * wgpu::QUERY_SIZE as u64;
        let buffer = |label, usage| {
            device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size: bytes,
                usage,
                mapped_at_creation: false,
            })
        };
        Self {
            queries: device.create_query_set(&wgpu::QuerySetDescriptor {
                label: Some("stage_timestamps"),
                ty: wgpu::QueryType::Timestamp,
                count: capacity,
            }),
            capacity,
            stages: Vec::with_capacity(capacity as usize),
            mapped_stages: Vec::with_capacity(capacity as usize),
            armed: false,
            resolve: buffer(
                "stage_timestamps_resolve",
                wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
            ),
            readback: buffer("stage_timestamps_readback", wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST),
            state: Arc::new(AtomicU8::new(IDLE)),
            period: queue.get_timestamp_period() as f64,
            last: None,
        }
    }

    /// Marks for the next step to time, or none while the last timing is still being read.
    pub fn marks(&mut self) -> Marks<'_> {
        self.armed = self.state.load(Ordering::Acquire) == IDLE;
        if !self.armed {
            return Marks::off();
        }
        self.stages.clear();
        Marks { target: Some((&self.queries, &mut self.stages, self.capacity)) }
    }

    /// After the pass that holds the marks: resolves them and copies them for reading. Returns
    /// whether there is anything to map after the submission.
    pub fn resolve(&mut self, encoder: &mut wgpu::CommandEncoder) -> bool {
        let count = self.stages.len() as u32;
        if !std::mem::take(&mut self.armed) || count < 2 {
            return false;
        }
        encoder.resolve_query_set(&self.queries, 0..count, &self.resolve, 0);
        encoder.copy_buffer_to_buffer(&self.resolve, 0, &self.readback, 0, count as u64 * wgpu::QUERY_SIZE as u64);
        self.mapped_stages.clear();
        self.mapped_stages.extend_from_slice(&self.stages);
        true
    }

    /// After the submission that [`Self::resolve`] was recorded into: starts the map.
    pub fn map(&mut self) {
        let state = self.state.clone();
        state.store(MAPPING, Ordering::Release);
        self.readback.map_async(wgpu::MapMode::Read, .., move |r| {
            state.store(if r.is_ok() { READY } else { FAILED }, Ordering::Release);
        });
    }

    /// Whether a map has started and its callback has not run yet.
    pub fn mapping(&self) -> bool {
        self.state.load(Ordering::Acquire) == MAPPING
    }

    /// Takes the timings in when their map has completed (after a device poll); after a
    /// failed map, frees the buffer for the next one.
    pub fn collect(&mut self) {
        match self.state.load(Ordering::Acquire) {
            READY => {
                let count = self.mapped_stages.len();
                if let Ok(view) = self.readback.get_mapped_range(..(count * wgpu::QUERY_SIZE as usize) as u64) {
                    let tick = |k: usize| {
                        let bytes: [u8; 8] = view[8 * k..8 * k + 8].try_into().expect("eight bytes");
                        u64::from_le_bytes(bytes)
                    };
                    self.last = Some(stage_times(&self.mapped_stages, tick, self.period));
                }
            }
            FAILED => {}
            _ => return,
        }
        self.readback.unmap();
        self.state.store(IDLE, Ordering::Release);
    }

    /// The timings of the last step read.
    pub fn last(&self) -> Option<StageTimes> {
        self.last
    }
}

/// Sums the intervals between consecutive timestamps (`tick(k)` for the k-th of `stages`) by
/// the group each one starts.
fn stage_times(stages: &[Stage], tick: impl Fn(usize) -> u64, period_ns: f64) -> StageTimes {
    let mut t = StageTimes::default();
    for (k, stage) in stages.iter().enumerate().take(stages.len().saturating_sub(1)) {
        let d = Duration::from_nanos((tick(k + 1).saturating_sub(tick(k)) as f64 * period_ns).round() as u64);
        match stage {
            Stage::BroadPhase => t.broad_phase += d,
            Stage::NarrowPhase => t.narrow_phase += d,
            Stage::Coloring => t.coloring += d,
            Stage::Solve => t.solve += d,
            Stage::Integrate => t.integrate += d,
            Stage::Particles => t.particles += d,
            Stage::End => {}
        }
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intervals_go_to_the_stage_that_starts_them() {
        use Stage::*;
        let stages = [NarrowPhase, BroadPhase, NarrowPhase, Solve, Integrate, Solve, End];
        let ticks = [100, 110, 130, 160, 200, 250, 310];
        let t = stage_times(&stages, |k| ticks[k], 2.0);
        assert_eq!(t.narrow_phase, Duration::from_nanos(2 * (10 + 30)));
        assert_eq!(t.broad_phase, Duration::from_nanos(2 * 20));
        assert_eq!(t.solve, Duration::from_nanos(2 * (40 + 60)));
        assert_eq!(t.integrate, Duration::from_nanos(2 * 50));
        assert_eq!(t.total(), Duration::from_nanos(2 * 210));
        // A counter that wrapped or went backwards gives zero, not a huge interval.
        let t = stage_times(&[Solve, End], |k| [50, 40][k], 1.0);
        assert_eq!(t.solve, Duration::ZERO);
    }
}
