//! CPU sets a workload's worker threads are pinned to: a list as Linux and fio write it
//! (`"0-3,6"`), a bit mask (fio's `cpumask`, decimal or `0x` hex), how the threads share the
//! set ([`CpuPolicy`]), and the two calls around them: the CPUs this process may run on
//! (`sched_getaffinity`) and pinning the calling thread (`sched_setaffinity`, read back).

use serde::{Deserialize, Serialize};

/// The most CPUs a set names (the kernel's `cpu_set_t` of glibc: 1024 bits).
pub const MAX_CPUS: u32 = libc::CPU_SETSIZE as u32;

/// A non-empty set of CPU numbers, ascending, each once. Written and stored as a list:
/// `"0-3,6"`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpuList(Vec<u32>);

impl CpuList {
    /// The CPUs `cpus` (any order, repeats allowed); None when empty.
    pub fn new(mut cpus: Vec<u32>) -> Option<CpuList> {
        cpus.sort_unstable();
        cpus.dedup();
        (!cpus.is_empty()).then_some(CpuList(cpus))
    }

    /// A list as Linux writes it (`Cpus_allowed_list`) and fio's `cpus_allowed` takes:
    /// numbers and ranges `A-B` separated by commas, e.g. `"0-3,6"`.
    pub fn parse(text: &str) -> Result<CpuList, String> {
        let mut cpus = Vec::new();
        for part in text.split(',').map(str::trim) {
            let number = |s: &str| -> Result<u32, String> {
                let n: u32 = s.trim().parse().map_err(|_| {
                    format!("`{text}` is not a CPU list: `{s}` is not a CPU number (a list is e.g. \"0-3,6\")")
                })?;
                if n >= MAX_CPUS {
                    return Err(format!(
                        "CPU {n} is past the {MAX_CPUS} CPUs a set can name"
                    ));
                }
                Ok(n)
            };
            match part.split_once('-') {
                Some((a, b)) => {
                    let (a, b) = (number(a)?, number(b)?);
                    if a > b {
                        return Err(format!(
                            "`{part}` in `{text}` is not a range: its first CPU is above its last"
                        ));
                    }
                    cpus.extend(a..=b);
                }
                None => cpus.push(number(part)?),
            }
        }
        CpuList::new(cpus).ok_or_else(|| format!("`{text}` names no CPU"))
    }

    /// A bit mask, bit N for CPU N: decimal, or hex after `0x` (any length), as fio's
    /// `cpumask` takes it.
    pub fn from_mask(text: &str) -> Result<CpuList, String> {
        let t = text.trim();
        let bad =
            || format!("`{text}` is not a CPU mask: a number, decimal or 0x hex (bit N: CPU N)");
        let mut cpus = Vec::new();
        if let Some(hex) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
            if hex.is_empty() {
                return Err(bad());
            }
            for (i, c) in hex.chars().rev().enumerate() {
                let nibble = c.to_digit(16).ok_or_else(bad)?;
                for bit in 0..4 {
                    if nibble & (1 << bit) != 0 {
                        cpus.push(i as u32 * 4 + bit);
                    }
                }
            }
        } else {
            let n: u64 = t.parse().map_err(|_| bad())?;
            cpus.extend((0..64).filter(|b| n & (1u64 << b) != 0));
        }
        if let Some(&c) = cpus.iter().find(|&&c| c >= MAX_CPUS) {
            return Err(format!(
                "`{text}` sets CPU {c}, past the {MAX_CPUS} CPUs a set can name"
            ));
        }
        CpuList::new(cpus).ok_or_else(|| format!("`{text}` sets no CPU"))
    }

    pub fn cpus(&self) -> &[u32] {
        &self.0
    }

    /// The CPUs of this list that `allowed` lacks.
    pub fn missing_from(&self, allowed: &CpuList) -> Vec<u32> {
        self.0
            .iter()
            .copied()
            .filter(|c| !allowed.0.contains(c))
            .collect()
    }
}

impl std::fmt::Display for CpuList {
    /// Ranges of three or more consecutive CPUs as `A-B`, two as `A,B`: `0-3,6`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut parts: Vec<String> = Vec::new();
        let mut i = 0;
        while i < self.0.len() {
            let mut j = i;
            while j + 1 < self.0.len() && self.0[j + 1] == self.0[j] + 1 {
                j += 1;
            }
            match j - i {
                0 => parts.push(self.0[i].to_string()),
                1 => parts.extend([self.0[i].to_string(), self.0[j].to_string()]),
                _ => parts.push(format!("{}-{}", self.0[i], self.0[j])),
            }
            i = j + 1;
        }
        f.write_str(&parts.join(","))
    }
}

impl Serialize for CpuList {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

impl<'de> Deserialize<'de> for CpuList {
    /// A list (`"0-3,6"`) or one CPU's number (`cpus = 0`).
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<CpuList, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = CpuList;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a CPU list such as \"0-3,6\", or a CPU number")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<CpuList, E> {
                CpuList::parse(v).map_err(E::custom)
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<CpuList, E> {
                CpuList::parse(&v.to_string()).map_err(E::custom)
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<CpuList, E> {
                CpuList::parse(&v.to_string()).map_err(E::custom)
            }
        }
        d.deserialize_any(Visitor)
    }
}

/// How a workload's threads share its CPUs (fio's `cpus_allowed_policy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CpuPolicy {
    /// Every thread may run on any CPU of the set.
    #[default]
    Shared,
    /// Each thread gets one CPU of the set, round robin.
    Split,
}

impl CpuPolicy {
    pub fn is_shared(&self) -> bool {
        *self == CpuPolicy::Shared
    }

    /// The CPUs thread number `n` (0-based, among the threads sharing `set`) is pinned to.
    pub fn cpus_of(self, set: &CpuList, n: usize) -> CpuList {
        match self {
            CpuPolicy::Shared => set.clone(),
            CpuPolicy::Split => CpuList(vec![set.0[n % set.0.len()]]),
        }
    }
}

fn to_list(set: &libc::cpu_set_t) -> Vec<u32> {
    // SAFETY: CPU_ISSET reads a bit of an initialised set, below its size.
    (0..MAX_CPUS)
        .filter(|&c| unsafe { libc::CPU_ISSET(c as usize, set) })
        .collect()
}

/// The CPUs the calling thread may run on (at startup, the process's: `taskset`, cgroups).
/// `missing` (not empty) in words for an error: ("CPUs 2, 3", "are not ones") or ("CPU 2",
/// "is not one").
pub fn missing_words(missing: &[u32]) -> (String, &'static str) {
    let list: Vec<String> = missing.iter().map(u32::to_string).collect();
    if missing.len() > 1 {
        (format!("CPUs {}", list.join(", ")), "are not ones")
    } else {
        (format!("CPU {}", list.join(", ")), "is not one")
    }
}

pub fn allowed() -> std::io::Result<CpuList> {
    // SAFETY: a zeroed cpu_set_t is an empty set; the kernel writes at most its size.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    let size = std::mem::size_of::<libc::cpu_set_t>();
    // SAFETY: `set` is a valid, writable cpu_set_t of `size` bytes.
    if unsafe { libc::sched_getaffinity(0, size, &mut set) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    CpuList::new(to_list(&set)).ok_or_else(|| std::io::Error::other("no CPU allowed"))
}

/// Pins the calling thread to `cpus`; returns the CPUs the kernel then reports for it
/// (`sched_getaffinity`). Fewer than asked (a cgroup's cpuset) is an error.
pub fn pin_this_thread(cpus: &CpuList) -> Result<CpuList, String> {
    // SAFETY: a zeroed cpu_set_t is an empty set; CPU_SET writes bits below MAX_CPUS.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &c in &cpus.0 {
        unsafe { libc::CPU_SET(c as usize, &mut set) };
    }
    let size = std::mem::size_of::<libc::cpu_set_t>();
    // SAFETY: `set` is a valid cpu_set_t of `size` bytes.
    if unsafe { libc::sched_setaffinity(0, size, &set) } != 0 {
        let e = std::io::Error::last_os_error();
        return Err(format!("pinning a worker to CPUs {cpus} failed: {e}"));
    }
    let got = allowed().map_err(|e| format!("reading back a worker's CPUs failed: {e}"))?;
    if got != *cpus {
        return Err(format!(
            "a worker pinned to CPUs {cpus} may run on CPUs {got} (the kernel limits this process's CPUs)"
        ));
    }
    Ok(got)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_read_as_linux_writes_them() {
        let l = CpuList::parse("0-3,6").unwrap();
        assert_eq!(l.cpus(), &[0, 1, 2, 3, 6]);
        assert_eq!(l.to_string(), "0-3,6");
        assert_eq!(CpuList::parse(" 6, 1,1,0 ").unwrap().to_string(), "0,1,6");
        assert_eq!(CpuList::parse("2-2").unwrap().cpus(), &[2]);
        assert_eq!(
            CpuList::parse("4,5,6,9,10").unwrap().to_string(),
            "4-6,9,10"
        );
        for bad in ["", "a", "3-1", "1-", "0,,1", "-1", "1024", "0-2000"] {
            assert!(CpuList::parse(bad).is_err(), "{bad}");
        }
        assert!(
            CpuList::parse("3-1")
                .unwrap_err()
                .contains("first CPU is above")
        );
    }

    #[test]
    fn masks_are_bits_decimal_or_hex() {
        assert_eq!(CpuList::from_mask("0x0f").unwrap().cpus(), &[0, 1, 2, 3]);
        assert_eq!(CpuList::from_mask("5").unwrap().cpus(), &[0, 2]);
        assert_eq!(CpuList::from_mask("0X41").unwrap().to_string(), "0,6");
        let wide = CpuList::from_mask("0x100000000000000000").unwrap();
        assert_eq!(wide.cpus(), &[68]);
        for bad in ["0", "0x", "0x0", "ff", "-1", "0xg", ""] {
            assert!(CpuList::from_mask(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn split_deals_one_cpu_each_round_robin() {
        let set = CpuList::parse("0,2,5").unwrap();
        let split: Vec<String> = (0..4)
            .map(|n| CpuPolicy::Split.cpus_of(&set, n).to_string())
            .collect();
        assert_eq!(split, ["0", "2", "5", "0"]);
        assert_eq!(CpuPolicy::Shared.cpus_of(&set, 3), set);
    }

    #[test]
    fn a_list_is_stored_as_text_and_read_from_text_or_a_number() {
        #[derive(Deserialize)]
        struct T {
            cpus: CpuList,
        }
        let t: T = toml::from_str("cpus = \"1,0\"").unwrap();
        assert_eq!(t.cpus.to_string(), "0,1");
        let t: T = toml::from_str("cpus = 1").unwrap();
        assert_eq!(t.cpus.cpus(), &[1]);
        assert!(toml::from_str::<T>("cpus = \"x\"").is_err());
        assert_eq!(serde_json::to_string(&t.cpus).unwrap(), "\"1\"");
    }

    #[test]
    fn this_thread_pins_to_an_allowed_cpu_and_reads_it_back() {
        let allowed = allowed().unwrap();
        let first = CpuList::new(vec![allowed.cpus()[0]]).unwrap();
        let got = std::thread::spawn(move || pin_this_thread(&first))
            .join()
            .unwrap()
            .unwrap();
        assert_eq!(got.cpus(), &allowed.cpus()[..1]);
        // A CPU the machine does not have is an error.
        let past = CpuList::new(vec![MAX_CPUS - 1]).unwrap();
        let e = std::thread::spawn(move || pin_this_thread(&past))
            .join()
            .unwrap()
            .unwrap_err();
        assert!(e.contains("pinning a worker to CPUs"), "{e}");
    }
}
