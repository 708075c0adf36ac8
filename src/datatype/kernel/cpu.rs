//! What the kernels' tactics depend on besides the instruction set: the CPU's vendor and
//! whether it has `prefetchw` (the prefetch policy, [`super::prefetch`]), and the last-level
//! cache's size (the streaming-store threshold, [`super::stores`]).

/// The CPU's vendor string is Intel's.
pub(super) fn intel() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: CPUID leaf 0 exists on every x86_64 CPU.
        #[allow(unused_unsafe)]
        let r = unsafe { std::arch::x86_64::__cpuid(0) };
        // "GenuineIntel" in EBX, EDX, ECX.
        r.ebx == 0x756e_6547 && r.edx == 0x4965_6e69 && r.ecx == 0x6c65_746e
    }
    #[cfg(not(target_arch = "x86_64"))]
    false
}

/// CPUID reports `prefetchw` (leaf 0x8000_0001, ECX bit 8, "3DNowPrefetch"/PRFCHW).
pub(super) fn has_prefetchw() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: leaf 0x8000_0000 exists on every x86_64 CPU and tells the highest extended
        // leaf; 0x8000_0001 is only read when it exists.
        #[allow(unused_unsafe)]
        unsafe {
            let max = std::arch::x86_64::__cpuid(0x8000_0000).eax;
            max >= 0x8000_0001 && std::arch::x86_64::__cpuid(0x8000_0001).ecx & (1 << 8) != 0
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    false
}

/// Size of the last-level cache of CPU 0 from sysfs (what the kernel read from the CPU's cache
/// topology; `sysconf(_SC_LEVEL3_CACHE_SIZE)` reports 320 MiB in this project's Zen 4 VMs,
/// whose L3 is 32 MiB).
pub(super) fn last_level_cache() -> Option<usize> {
    caches().into_iter().max_by_key(|c| c.0).map(|c| c.1)
}

/// Size of CPU 0's L2 cache from sysfs (1 MiB when the system does not tell).
pub(super) fn l2_cache() -> usize {
    static L2: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *L2.get_or_init(|| caches().into_iter().find(|c| c.0 == 2).map_or(1 << 20, |c| c.1))
}

/// `(level, size)` of CPU 0's data and unified caches, as sysfs lists them.
fn caches() -> Vec<(u32, usize)> {
    let dir = "/sys/devices/system/cpu/cpu0/cache";
    let mut out = vec![];
    let Ok(entries) = std::fs::read_dir(dir) else { return out };
    for e in entries.flatten() {
        let read = |f: &str| std::fs::read_to_string(e.path().join(f)).ok();
        if read("type").is_some_and(|t| t.trim() == "Instruction") {
            continue;
        }
        let (Some(level), Some(size)) = (read("level"), read("size")) else { continue };
        if let (Ok(level), Some(size)) = (level.trim().parse::<u32>(), parse_size(size.trim())) {
            out.push((level, size));
        }
    }
    out
}

/// `32768K`, `32M`, `1024` (bytes) as sysfs writes cache sizes.
fn parse_size(s: &str) -> Option<usize> {
    let (digits, unit) = match s.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        Some((i, _)) => s.split_at(i),
        None => (s, ""),
    };
    let n: usize = digits.parse().ok()?;
    let shift = match unit {
        "" => 0,
        "K" => 10,
        "M" => 20,
        "G" => 30,
        _ => return None,
    };
    n.checked_mul(1 << shift)
}

#[cfg(test)]
mod tests {
    #[test]
    fn cache_sizes_parse() {
        assert_eq!(super::parse_size("32768K"), Some(32 << 20));
        assert_eq!(super::parse_size("2M"), Some(2 << 20));
        assert_eq!(super::parse_size("512"), Some(512));
        assert_eq!(super::parse_size("12Q"), None);
    }
}
