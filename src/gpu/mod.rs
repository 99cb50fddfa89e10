//! The GPU backend: device setup (kept apart from the kernels, so a host application can
//! hand in its own `wgpu::Device` and `Queue`) and the solver that records the step.

mod contacts;
mod impulses;
mod joints;
mod kernels;
mod particles;
mod probe;
pub mod shaders;
mod solver;
mod timing;

pub use probe::{DispatchCosts, ScanCost};
pub use solver::GpuSolver;
pub use timing::DispatchTime;

use crate::error::{Error, Result};

/// What the solver knows about the adapter it runs on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AdapterSummary {
    /// Adapter name, e.g. `"NVIDIA H100 80GB HBM3"` or `"llvmpipe (LLVM 15.0.6, 256 bits)"`.
    pub name: String,
    /// Backend, e.g. `"Vulkan"` or `"Gl"`.
    pub backend: String,
    /// Device type, e.g. `"DiscreteGpu"` or `"Cpu"`.
    pub device_type: String,
    /// Driver name and version, when the backend reports them.
    pub driver: String,
    /// True for a software rasterizer (llvmpipe, lavapipe, WARP): correct, but its timings
    /// say nothing about a GPU.
    pub software: bool,
}

impl AdapterSummary {
    /// Summarizes wgpu's adapter information.
    pub fn from_info(info: &wgpu::AdapterInfo) -> Self {
        Self {
            name: info.name.clone(),
            backend: format!("{:?}", info.backend),
            device_type: format!("{:?}", info.device_type),
            driver: format!("{} {}", info.driver, info.driver_info).trim().to_string(),
            software: info.device_type == wgpu::DeviceType::Cpu,
        }
    }
}

impl std::fmt::Display for AdapterSummary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} ({}, {}{})",
            self.name,
            self.backend,
            self.device_type,
            if self.software { ", software" } else { "" }
        )
    }
}

/// The instance's settings from the environment, less wgpu's validation of indirect calls.
///
/// That validation puts a one-workgroup dispatch, its barriers and a rebinding of the pipeline
/// and bind groups before every indirect dispatch; a step makes one per color in every pass (over
/// two hundred). The solver writes its own indirect arguments and keeps each within the
/// per-dimension limit (`write_grid` in `manifolds.wgsl`), so nothing is left to validate. It
/// stays on where turning it off is not safe for these shaders (on Windows, whose D3D12 backend
/// then reports `num_workgroups` as zero, which the shaders' thread index reads) and where
/// `WGPU_VALIDATION_INDIRECT_CALL` asks for it.
fn instance_descriptor() -> wgpu::InstanceDescriptor {
    let mut descriptor = wgpu::InstanceDescriptor::new_without_display_handle_from_env();
    if !cfg!(windows) && std::env::var_os("WGPU_VALIDATION_INDIRECT_CALL").is_none() {
        descriptor.flags.remove(wgpu::InstanceFlags::VALIDATION_INDIRECT_CALL);
    }
    descriptor
}

/// A wgpu device and queue for the solvers to use.
#[derive(Clone, Debug)]
pub struct GpuContext {
    device: wgpu::Device,
    queue: wgpu::Queue,
    adapter: AdapterSummary,
}

impl GpuContext {
    /// Creates a device on the adapter chosen by the environment, blocking until it is ready.
    /// See [`GpuContext::new_async`].
    pub fn new() -> Result<Self> {
        pollster::block_on(Self::new_async())
    }

    /// Creates a device on the adapter chosen by the environment: `WGPU_BACKEND` (e.g.
    /// `vulkan`, `gl`, `metal`, `dx12`) limits the backends, `WGPU_ADAPTER_NAME` picks an
    /// adapter by a substring of its name, `WGPU_POWER_PREF` (`high`, `low`) breaks ties; by
    /// default the highest-performance adapter. The device gets the adapter's full limits so
    /// that large scenes can bind large buffers, and timestamp queries inside compute passes
    /// where the adapter has them (for [`GpuSolver::time_stages`]).
    ///
    /// # Errors
    /// [`Error::NoAdapter`] when no adapter matches (the message says how to install a
    /// software one), [`Error::RequestDevice`] when the adapter refuses a device.
    pub async fn new_async() -> Result<Self> {
        let instance = wgpu::Instance::new(instance_descriptor());
        let adapter = match std::env::var("WGPU_ADAPTER_NAME") {
            Ok(wanted) => {
                let wanted = wanted.to_lowercase();
                let adapters = instance.enumerate_adapters(wgpu::Backends::all()).await;
                let names: Vec<String> = adapters.iter().map(|a| a.get_info().name).collect();
                adapters.into_iter().find(|a| a.get_info().name.to_lowercase().contains(&wanted)).ok_or_else(|| {
                    Error::NoAdapter { details: format!("WGPU_ADAPTER_NAME={wanted:?} matches none of {names:?}") }
                })?
            }
            Err(_) => instance
                .request_adapter(&wgpu::RequestAdapterOptions {
                    power_preference: wgpu::PowerPreference::from_env()
                        .unwrap_or(wgpu::PowerPreference::HighPerformance),
                    ..Default::default()
                })
                .await
                .map_err(|e| Error::NoAdapter {
                    details: format!("{e}; WGPU_BACKEND={:?}", std::env::var("WGPU_BACKEND").unwrap_or_default()),
                })?,
        };
        let info = adapter.get_info();
        // Timestamps between dispatches, for `GpuSolver::time_stages`, where the adapter has them.
        let timestamps =
            if adapter.features().contains(timing::FEATURES) { timing::FEATURES } else { wgpu::Features::empty() };
        let (device, queue) = adapter
            .request_device(&wgpu::DeviceDescriptor {
                label: Some("signorini"),
                required_features: timestamps,
                required_limits: adapter.limits(),
                ..Default::default()
            })
            .await
            .map_err(|e| Error::RequestDevice(e.to_string()))?;
        Ok(Self { device, queue, adapter: AdapterSummary::from_info(&info) })
    }

    /// Wraps a device and queue the application already has, e.g. its renderer's; `info`
    /// describes their adapter (`adapter.get_info()`).
    ///
    /// Steps are faster when the device's instance was made without
    /// `wgpu::InstanceFlags::VALIDATION_INDIRECT_CALL` (on by default in wgpu), as
    /// [`GpuContext::new`] makes it: on an NVIDIA H200 a step of the 1,005-box pile took 5.2 ms
    /// without it and 6.2 ms with it. On D3D12 keep the flag: without it that backend gives the
    /// shaders a zero `num_workgroups`, which their thread index reads.
    pub fn from_device(device: wgpu::Device, queue: wgpu::Queue, info: &wgpu::AdapterInfo) -> Self {
        Self { device, queue, adapter: AdapterSummary::from_info(info) }
    }

    /// The device.
    pub fn device(&self) -> &wgpu::Device {
        &self.device
    }

    /// The queue.
    pub fn queue(&self) -> &wgpu::Queue {
        &self.queue
    }

    /// The adapter.
    pub fn adapter(&self) -> &AdapterSummary {
        &self.adapter
    }

    /// Whether the device can time the solver's stages: it was created with timestamp queries
    /// inside encoders and compute passes ([`GpuSolver::time_stages`]).
    pub fn timestamps(&self) -> bool {
        self.device.features().contains(timing::FEATURES)
    }
}
