//! Stage timing on the GPU: a timestamp is written into the step's compute pass wherever one
//! group of stages hands over to the next, the query set is resolved after the pass, copied to
//! a mappable buffer and mapped without waiting; [`StageClock::collect`] turns the ticks into
//! [`StageTimes`] once the map has completed. Nothing here waits for the GPU or allocates
//! while a step is recorded. With dispatch profiling on, a timestamp is also written before
//! every dispatch, and the intervals are summed by dispatch as well ([`DispatchTime`]).

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

/// What the time from one timestamp to the next belongs to: a group of stages and, with
/// dispatch profiling, the dispatch recorded after the timestamp (else `""`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Mark {
    stage: Stage,
    label: &'static str,
}

/// Where the timestamps of the step being recorded go; [`Marks::off`] records none.
pub(crate) struct Marks<'a> {
    target: Option<(&'a wgpu::QuerySet, &'a mut Vec<Mark>, u32)>,
    /// A timestamp before every dispatch too ([`Marks::dispatch`]).
    profile: bool,
}

impl Marks<'_> {
    /// Marks that write nothing (steps that are not timed).
    pub fn off() -> Self {
        Marks { target: None, profile: false }
    }

    /// Writes a timestamp: from here on the time belongs to `stage`. Marks beyond the query
    /// set's size are not written (their time goes to the stage before them, and once `End` is
    /// among them the last interval is lost; the set is sized for every mark of a step).
    pub fn mark(&mut self, pass: &mut wgpu::ComputePass, stage: Stage) {
        if let Some((queries, marks, capacity)) = &mut self.target {
            let k = marks.len() as u32;
            if k < *capacity && marks.last().map(|m| m.stage) != Some(stage) {
                pass.write_timestamp(queries, k);
                marks.push(Mark { stage, label: "" });
            }
        }
    }

    /// With dispatch profiling, writes a timestamp before the dispatch `label` names (one of
    /// the step's kinds of dispatch): from here on the time belongs to it, within the group
    /// marked last. Nothing otherwise.
    pub fn dispatch(&mut self, pass: &mut wgpu::ComputePass, label: &'static str) {
        if !self.profile {
            return;
        }
        if let Some((queries, marks, capacity)) = &mut self.target {
            let k = marks.len() as u32;
            if k < *capacity {
                let stage = marks.last().map_or(Stage::NarrowPhase, |m| m.stage);
                pass.write_timestamp(queries, k);
                marks.push(Mark { stage, label });
            }
        }
    }
}

/// The GPU time one kind of dispatch took in a profiled step (see
/// [`GpuSolver::profile_dispatches`](crate::GpuSolver::profile_dispatches)).
#[derive(Clone, Debug, PartialEq)]
pub struct DispatchTime {
    /// The kind of dispatch: its entry point or pass (`"collide_pairs"`, `"solve_color"`, ...),
    /// or `""` for the time between a group's first timestamp and its first dispatch.
    pub label: &'static str,
    /// The group of stages it ran in (a field name of [`StageTimes`]).
    pub stage: &'static str,
    /// How many dispatches of this kind the step recorded (indirect ones that ran no
    /// workgroup included).
    pub dispatches: u32,
    /// Their time, summed.
    pub time: Duration,
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
    /// Whether a timestamp goes before every dispatch too.
    profile: bool,
    /// What the intervals of the step recorded last belong to.
    marks: Vec<Mark>,
    /// What those of the step whose timestamps are being mapped belong to.
    mapped_marks: Vec<Mark>,
    /// Whether the step recorded last was given marks (and so wrote the query set).
    armed: bool,
    resolve: wgpu::Buffer,
    readback: wgpu::Buffer,
    state: Arc<AtomicU8>,
    /// Nanoseconds per tick.
    period: f64,
    last: Option<StageTimes>,
    /// The dispatch profile of the last step read, when profiling.
    last_profile: Option<Vec<DispatchTime>>,
}

impl StageClock {
    /// A clock for steps of at most `capacity` timestamps, with a timestamp before every
    /// dispatch too where `profile` is set.
    pub fn new(device: &wgpu::Device, queue: &wgpu::Queue, capacity: u32, profile: bool) -> Self {
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
            profile,
            marks: Vec::with_capacity(capacity as usize),
            mapped_marks: Vec::with_capacity(capacity as usize),
            armed: false,
            resolve: buffer(
                "stage_timestamps_resolve",
                wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
            ),
            readback: buffer("stage_timestamps_readback", wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST),
            state: Arc::new(AtomicU8::new(IDLE)),
            period: queue.get_timestamp_period() as f64,
            last: None,
            last_profile: None,
        }
    }

    /// Whether this clock profiles every dispatch.
    pub fn profiles(&self) -> bool {
        self.profile
    }

    /// Marks for the next step to time, or none while the last timing is still being read.
    pub fn marks(&mut self) -> Marks<'_> {
        self.armed = self.state.load(Ordering::Acquire) == IDLE;
        if !self.armed {
            return Marks::off();
        }
        self.marks.clear();
        Marks { target: Some((&self.queries, &mut self.marks, self.capacity)), profile: self.profile }
    }

    /// After the pass that holds the marks: resolves them and copies them for reading. Returns
    /// whether there is anything to map after the submission.
    pub fn resolve(&mut self, encoder: &mut wgpu::CommandEncoder) -> bool {
        let count = self.marks.len() as u32;
        if !std::mem::take(&mut self.armed) || count < 2 {
            return false;
        }
        encoder.resolve_query_set(&self.queries, 0..count, &self.resolve, 0);
        encoder.copy_buffer_to_buffer(&self.resolve, 0, &self.readback, 0, count as u64 * wgpu::QUERY_SIZE as u64);
        self.mapped_marks.clear();
        self.mapped_marks.extend_from_slice(&self.marks);
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
                let count = self.mapped_marks.len();
                if let Ok(view) = self.readback.get_mapped_range(..(count * wgpu::QUERY_SIZE as usize) as u64) {
                    let tick = |k: usize| {
                        let bytes: [u8; 8] = view[8 * k..8 * k + 8].try_into().expect("eight bytes");
                        u64::from_le_bytes(bytes)
                    };
                    self.last = Some(stage_times(&self.mapped_marks, &tick, self.period));
                    if self.profile {
                        self.last_profile = Some(dispatch_times(&self.mapped_marks, &tick, self.period));
                    }
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

    /// The dispatch profile of the last step read, when profiling.
    pub fn last_profile(&self) -> Option<&[DispatchTime]> {
        self.last_profile.as_deref()
    }
}

/// The time from the k-th timestamp to the next (`tick(k)` in ticks of `period_ns`); zero
/// where the counter wrapped or went backwards.
fn interval(tick: &impl Fn(usize) -> u64, k: usize, period_ns: f64) -> Duration {
    Duration::from_nanos((tick(k + 1).saturating_sub(tick(k)) as f64 * period_ns).round() as u64)
}

/// The name of a group (the field of [`StageTimes`]).
fn stage_name(stage: Stage) -> &'static str {
    match stage {
        Stage::BroadPhase => "broad_phase",
        Stage::NarrowPhase => "narrow_phase",
        Stage::Coloring => "coloring",
        Stage::Solve => "solve",
        Stage::Integrate => "integrate",
        Stage::Particles => "particles",
        Stage::End => "end",
    }
}

/// Sums the intervals by the kind of dispatch (and group) each one starts, in the order each
/// kind first appears; a mark without a dispatch (`""`) counts no dispatch.
fn dispatch_times(marks: &[Mark], tick: &impl Fn(usize) -> u64, period_ns: f64) -> Vec<DispatchTime> {
    let mut out: Vec<DispatchTime> = Vec::new();
    for (k, mark) in marks.iter().enumerate().take(marks.len().saturating_sub(1)) {
        let d = interval(tick, k, period_ns);
        let stage = stage_name(mark.stage);
        let counted = u32::from(!mark.label.is_empty());
        match out.iter_mut().find(|t| t.label == mark.label && t.stage == stage) {
            Some(t) => {
                t.dispatches += counted;
                t.time += d;
            }
            None => out.push(DispatchTime { label: mark.label, stage, dispatches: counted, time: d }),
        }
    }
    out
}

/// Sums the intervals between consecutive timestamps (`tick(k)` for the k-th of `stages`) by
/// the group each one starts.
fn stage_times(marks: &[Mark], tick: &impl Fn(usize) -> u64, period_ns: f64) -> StageTimes {
    let mut t = StageTimes::default();
    for (k, mark) in marks.iter().enumerate().take(marks.len().saturating_sub(1)) {
        let d = interval(tick, k, period_ns);
        match mark.stage {
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
        let marks =
            [NarrowPhase, BroadPhase, NarrowPhase, Solve, Integrate, Solve, End].map(|stage| Mark { stage, label: "" });
        let ticks = [100, 110, 130, 160, 200, 250, 310];
        let t = stage_times(&marks, &|k| ticks[k], 2.0);
        assert_eq!(t.narrow_phase, Duration::from_nanos(2 * (10 + 30)));
        assert_eq!(t.broad_phase, Duration::from_nanos(2 * 20));
        assert_eq!(t.solve, Duration::from_nanos(2 * (40 + 60)));
        assert_eq!(t.integrate, Duration::from_nanos(2 * 50));
        assert_eq!(t.total(), Duration::from_nanos(2 * 210));
        // A counter that wrapped or went backwards gives zero, not a huge interval.
        let marks = [Solve, End].map(|stage| Mark { stage, label: "" });
        let t = stage_times(&marks, &|k| [50, 40][k], 1.0);
        assert_eq!(t.solve, Duration::ZERO);
    }

    #[test]
    fn dispatch_times_sum_each_kind_within_its_group() {
        use Stage::*;
        let mark = |stage, label| Mark { stage, label };
        let marks = [
            mark(NarrowPhase, ""),
            mark(NarrowPhase, "narrow_phase"),
            mark(Solve, ""),
            mark(Solve, "solve_color"),
            mark(Solve, "solve_color"),
            mark(Integrate, "integrate_positions"),
            mark(Solve, "solve_color"),
            mark(End, ""),
        ];
        let ticks = [0, 5, 20, 21, 31, 51, 54, 94];
        let p = dispatch_times(&marks, &|k| ticks[k], 1.0);
        let ns = Duration::from_nanos;
        let expected = [
            ("", "narrow_phase", 0, ns(5)),
            ("narrow_phase", "narrow_phase", 1, ns(15)),
            ("", "solve", 0, ns(1)),
            ("solve_color", "solve", 3, ns(10 + 20 + 40)),
            ("integrate_positions", "integrate", 1, ns(3)),
        ];
        assert_eq!(p.len(), expected.len());
        for (t, (label, stage, dispatches, time)) in p.iter().zip(expected) {
            assert_eq!((t.label, t.stage, t.dispatches, t.time), (label, stage, dispatches, time));
        }
        // The step's total is the same either way.
        let total: Duration = p.iter().map(|t| t.time).sum();
        assert_eq!(total, stage_times(&marks, &|k| ticks[k], 1.0).total());
    }
}
