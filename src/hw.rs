//! Hardware detection for `sluice-info`, the mapper's `--cluster host` (and later the path planner): CPU topology through
//! hwloc, CUDA devices through the driver API (loaded at run time), RDMA devices through
//! libibverbs, and the GPUs' PCIe/NVLink tree through hwloc's I/O objects ([`gpu_tree`]).
//!
//! Every probe is infallible from the caller's point of view: a missing library, a failing
//! call or even a panic inside a binding becomes a message in the [`HardwareReport`].

pub mod gpu_tree;

use std::ffi::{c_int, CStr};
use std::fmt;
use std::panic::{self, UnwindSafe};

/// What one probe found, or why it found nothing.
pub type Probe<T> = Result<T, String>;

/// CPU topology as hwloc sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CpuTopology {
    /// Physical cores.
    pub cores: usize,
    /// Processing units (hardware threads).
    pub pus: usize,
    /// NUMA nodes.
    pub numa_nodes: usize,
    /// Packages (sockets).
    pub packages: usize,
    /// Level-3 caches (each shared by a group of cores; 0 when hwloc reports none).
    pub l3_caches: usize,
}

/// One CUDA device.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CudaDevice {
    /// Device ordinal.
    pub ordinal: c_int,
    /// Marketing name, or the error met while asking for it.
    pub name: Probe<String>,
    /// Total device memory in bytes, or the error met while asking for it.
    pub memory: Probe<usize>,
}

/// Everything [`detect`] found.
#[derive(Clone, Debug, PartialEq)]
pub struct HardwareReport {
    /// Cores, PUs and NUMA nodes.
    pub cpu: Probe<CpuTopology>,
    /// CUDA devices (empty: driver present, no device).
    pub cuda: Probe<Vec<CudaDevice>>,
    /// RDMA verbs device names (empty: verbs works, no device).
    pub rdma: Probe<Vec<String>>,
    /// The GPUs' tree from hwloc's PCI objects ([`gpu_tree`]; no levels: no GPU).
    pub gpu_tree: Probe<gpu_tree::GpuTree>,
}

/// Probes the machine. Never panics and never aborts.
pub fn detect() -> HardwareReport {
    HardwareReport {
        cpu: guarded("hwloc", detect_cpu),
        cuda: guarded("CUDA", detect_cuda),
        rdma: guarded("RDMA verbs", detect_rdma),
        gpu_tree: gpu_tree::probe_system(),
    }
}

/// Runs a probe, turning a panic inside a binding into an error message.
fn guarded<T>(what: &str, probe: impl FnOnce() -> Probe<T> + UnwindSafe) -> Probe<T> {
    panic::catch_unwind(probe).unwrap_or_else(|payload| {
        let msg = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".to_string());
        Err(format!("{what} probe panicked: {msg}"))
    })
}

/// The core this process is bound to: hwloc's logical index among the cores (the order of the
/// mapper's CPU tree, `mapping::topology::cpu_tree`), or `None` when the process may run on
/// more than one core or hwloc cannot tell. Reordering in the topology constructors places
/// virtual ranks on the cores of bound processes.
pub fn bound_core() -> Option<u32> {
    use hwlocality::cpu::binding::CpuBindingFlags;
    use hwlocality::object::types::ObjectType;
    use hwlocality::Topology;

    let probe = || -> Probe<Option<u32>> {
        let topology = Topology::new().map_err(|e| e.to_string())?;
        let bound = topology.cpu_binding(CpuBindingFlags::PROCESS).map_err(|e| e.to_string())?;
        if bound.is_empty() {
            return Ok(None);
        }
        let core = topology.objects_with_type(ObjectType::Core).find(|c| c.cpuset().is_some_and(|s| s.includes(&bound)));
        Ok(core.and_then(|c| u32::try_from(c.logical_index()).ok()))
    };
    guarded("hwloc binding", probe).ok().flatten()
}

/// Cores, PUs, NUMA nodes, packages and L3 caches as hwloc reports them for this machine.
pub fn detect_cpu() -> Probe<CpuTopology> {
    let topology = hwlocality::Topology::new().map_err(|e| format!("hwloc topology discovery failed: {e}"))?;
    Ok(cpu_topology_of(&topology))
}

/// What [`detect_cpu`] counts, in any hwloc topology (this machine's, an XML file's, a
/// synthetic one's).
pub fn cpu_topology_of(topology: &hwlocality::Topology) -> CpuTopology {
    use hwlocality::object::types::ObjectType;

    let count = |t: ObjectType| topology.objects_with_type(t).count();
    CpuTopology {
        cores: count(ObjectType::Core),
        pus: count(ObjectType::PU),
        numa_nodes: count(ObjectType::NUMANode),
        packages: count(ObjectType::Package).max(1),
        l3_caches: count(ObjectType::L3Cache),
    }
}

fn detect_cuda() -> Probe<Vec<CudaDevice>> {
    use cudarc::driver::{result, sys};

    // SAFETY: only attempts to dlopen the driver library candidates (libcuda.so...) and
    // drops the handles; no driver function is called.
    if !unsafe { sys::is_culib_present() } {
        return Err("no CUDA driver: libcuda.so not found".to_string());
    }
    result::init().map_err(|e| format!("cuInit failed: {e}"))?;
    let count = result::device::get_count().map_err(|e| format!("cuDeviceGetCount failed: {e}"))?;
    Ok((0..count).map(cuda_device).collect())
}

fn cuda_device(ordinal: c_int) -> CudaDevice {
    use cudarc::driver::result::device;

    match device::get(ordinal) {
        Ok(dev) => CudaDevice {
            ordinal,
            name: device::get_name(dev).map_err(|e| e.to_string()),
            // SAFETY: `dev` was just returned by cuDeviceGet after a successful cuInit.
            memory: unsafe { device::total_mem(dev) }.map_err(|e| e.to_string()),
        },
        Err(e) => {
            let err = format!("cuDeviceGet failed: {e}");
            CudaDevice { ordinal, name: Err(err.clone()), memory: Err(err) }
        }
    }
}

fn detect_rdma() -> Probe<Vec<String>> {
    let mut num: c_int = 0;
    // SAFETY: `num` is a valid out-pointer; the returned list is freed below and not used after.
    let list = unsafe { rdma_sys::ibv_get_device_list(&mut num) };
    if list.is_null() {
        let err = std::io::Error::last_os_error();
        return Err(format!("ibv_get_device_list failed: {err}"));
    }
    let names = (0..usize::try_from(num).unwrap_or(0))
        .map(|i| {
            // SAFETY: libibverbs returns an array of `num` valid device pointers (NULL-terminated).
            let dev = unsafe { *list.add(i) };
            // SAFETY: `dev` is a live device of the list; the name is a NUL-terminated string
            // owned by the device, copied before the list is freed.
            let name = unsafe { rdma_sys::ibv_get_device_name(dev) };
            if name.is_null() {
                format!("device {i} (no name)")
            } else {
                // SAFETY: non-NULL, NUL-terminated, valid while the list is alive.
                unsafe { CStr::from_ptr(name) }.to_string_lossy().into_owned()
            }
        })
        .collect();
    // SAFETY: `list` came from ibv_get_device_list and is freed exactly once.
    unsafe { rdma_sys::ibv_free_device_list(list) };
    Ok(names)
}

impl fmt::Display for CpuTopology {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} physical cores, {} PUs (hardware threads), {} NUMA node{}",
            self.cores,
            self.pus,
            self.numa_nodes,
            if self.numa_nodes == 1 { "" } else { "s" }
        )
    }
}

impl fmt::Display for CudaDevice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = self.name.as_deref().unwrap_or("(name unavailable)");
        match &self.memory {
            Ok(bytes) => write!(f, "GPU {}: {name}, {:.1} GiB", self.ordinal, *bytes as f64 / (1u64 << 30) as f64),
            Err(e) => write!(f, "GPU {}: {name}, memory unknown ({e})", self.ordinal),
        }
    }
}

/// Writes one labelled line: a probe's list, "none (why)" when it failed or found nothing.
fn write_list<T: fmt::Display>(f: &mut fmt::Formatter<'_>, label: &str, probe: &Probe<Vec<T>>) -> fmt::Result {
    match probe {
        Err(why) => writeln!(f, "  {label:<7} none ({why})"),
        Ok(items) if items.is_empty() => writeln!(f, "  {label:<7} none (no devices found)"),
        Ok(items) => {
            writeln!(f, "  {label:<7} {} device{}", items.len(), if items.len() == 1 { "" } else { "s" })?;
            items.iter().try_for_each(|item| writeln!(f, "            {item}"))
        }
    }
}

impl fmt::Display for HardwareReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.cpu {
            Ok(cpu) => writeln!(f, "  {:<7} {cpu}", "cores")?,
            Err(why) => writeln!(f, "  {:<7} unknown ({why})", "cores")?,
        }
        write_list(f, "CUDA", &self.cuda)?;
        write_list(f, "RDMA", &self.rdma)?;
        match &self.gpu_tree {
            Err(why) => writeln!(f, "  {:<7} unknown ({why})", "GPUs"),
            Ok(t) if t.gpus.is_empty() => writeln!(f, "  {:<7} none among hwloc's PCI devices", "GPUs"),
            Ok(t) => {
                writeln!(f, "  {:<7} tree {}", "GPUs", t.describe())?;
                for g in &t.gpus {
                    let how = if g.os_devices.is_empty() { "(by PCI class)".to_string() } else { g.os_devices.join(" ") };
                    writeln!(f, "            {} {how}", g.bus_id)?;
                }
                t.notes.iter().try_for_each(|n| writeln!(f, "            note: {n}"))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detect_finds_cores_and_pus() {
        let report = detect();
        let cpu = report.cpu.as_ref().expect("hwloc topology");
        assert!(cpu.cores >= 1, "{report:?}");
        assert!(cpu.pus >= cpu.cores, "{report:?}");
        assert!(cpu.numa_nodes >= 1, "{report:?}");
    }

    #[test]
    fn every_probe_is_reported() {
        let text = detect().to_string();
        for label in ["cores", "CUDA", "RDMA", "GPUs"] {
            assert!(text.contains(label), "{text}");
        }
    }

    #[test]
    fn failures_render_as_none_with_reason() {
        let report = HardwareReport {
            cpu: Err("boom".into()),
            cuda: Err("no CUDA driver".into()),
            rdma: Ok(vec![]),
            gpu_tree: Err("no hwloc".into()),
        };
        let text = report.to_string();
        assert!(text.contains("unknown (boom)"), "{text}");
        assert!(text.contains("none (no CUDA driver)"), "{text}");
        assert!(text.contains("none (no devices found)"), "{text}");
        assert!(text.contains("GPUs    unknown (no hwloc)"), "{text}");
    }

    #[test]
    fn guarded_turns_panics_into_errors() {
        let r: Probe<()> = guarded("test", || panic!("kaboom"));
        assert_eq!(r.unwrap_err(), "test probe panicked: kaboom");
    }
}
