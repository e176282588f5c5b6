//! A set of files behind one target (fio's `nrfiles`): which file each operation goes to
//! (fio's `file_service_type`) and where in it, chosen by a few integer operations per
//! operation: no allocation, lock or formatting on the worker's path.

use std::fs::File;
use std::os::unix::io::{AsRawFd, RawFd};

use serde::{Deserialize, Serialize};

/// A session's open files; with `end_fsync` each is fsynced when the session closes.
pub struct Files {
    pub files: Vec<File>,
    pub end_fsync: bool,
}

impl Files {
    #[inline]
    pub fn fd(&self, index: usize) -> RawFd {
        self.files[index].as_raw_fd()
    }

    pub fn raw_fds(&self) -> Vec<RawFd> {
        self.files.iter().map(|f| f.as_raw_fd()).collect()
    }

    /// What a session says it used, for a set of files and the sync options.
    pub fn used(&self, picker: &Picker, fdatasync: bool) -> Vec<(&'static str, String)> {
        let mut used = Vec::new();
        if self.files.len() > 1 {
            used.push(("file.files", self.files.len().to_string()));
            used.push(("file.file-service", String::from(picker.service)));
        }
        if fdatasync {
            used.push(("file.fsync-call", "fdatasync".into()));
        }
        if self.end_fsync {
            used.push(("file.end-fsync", "yes".into()));
        }
        used
    }
}

impl Drop for Files {
    fn drop(&mut self) {
        if self.end_fsync {
            for f in &self.files {
                // After the last measured operation: a failure is said, not counted.
                if let Err(e) = f.sync_all() {
                    eprintln!("warning: end-fsync of a file failed: {e}");
                }
            }
        }
    }
}

/// Which file of a set each operation goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum FileService {
    /// A file drawn at random for each operation (fio's default).
    #[default]
    Random,
    /// The next file after every N operations.
    RoundRobin(u32),
    /// Every byte of a file before the next one.
    Sequential,
}

impl TryFrom<String> for FileService {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        let (kind, n) = match s.split_once(':') {
            Some((k, n)) => (k, Some(n)),
            None => (s.as_str(), None),
        };
        let count = match n {
            None => 1,
            Some(n) => n
                .trim()
                .parse::<u32>()
                .ok()
                .filter(|&n| n > 0)
                .ok_or_else(|| format!("`{s}`: the count after `:` must be a whole number above 0"))?,
        };
        match kind.trim() {
            "random" => Ok(FileService::Random),
            "roundrobin" => Ok(FileService::RoundRobin(count)),
            "sequential" => Ok(FileService::Sequential),
            _ => Err(format!(
                "`{s}`: file-service is \"random\", \"roundrobin\", \"roundrobin:N\" or \"sequential\""
            )),
        }
    }
}

impl From<FileService> for String {
    fn from(s: FileService) -> String {
        match s {
            FileService::Random => "random".into(),
            FileService::RoundRobin(1) => "roundrobin".into(),
            FileService::RoundRobin(n) => format!("roundrobin:{n}"),
            FileService::Sequential => "sequential".into(),
        }
    }
}

/// Picks the file and the offset in it of each operation of one session.
#[derive(Debug, Clone)]
pub struct Picker {
    sizes: Vec<u64>,
    /// Each file's next offset, when the job is sequential (`cursors`).
    next: Vec<u64>,
    cursors: bool,
    service: FileService,
    current: usize,
    /// Operations (round robin) or bytes (sequential) given to the current file.
    used: u64,
    rng: u64,
}

impl Picker {
    /// `sizes`: each file's bytes; `cursors`: each file keeps its own next offset (a
    /// sequential job), else the workload's offset is used (folded into smaller files).
    pub fn new(sizes: Vec<u64>, service: FileService, cursors: bool, seed: u64) -> Picker {
        let n = sizes.len();
        Picker {
            sizes,
            next: vec![0; n],
            cursors,
            service,
            current: 0,
            used: 0,
            // xorshift needs a state other than 0.
            rng: seed | 1,
        }
    }

    pub fn files(&self) -> usize {
        self.sizes.len()
    }

    /// The file of the next operation of `len` bytes at the workload's `offset`, and the
    /// offset in that file.
    #[inline]
    pub fn pick(&mut self, offset: u64, len: u64) -> (usize, u64) {
        let n = self.sizes.len();
        if n <= 1 {
            return (0, offset);
        }
        let j = match self.service {
            FileService::Random => {
                let mut x = self.rng;
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                self.rng = x;
                (((x >> 32) * n as u64) >> 32) as usize
            }
            FileService::RoundRobin(k) => {
                if self.used >= u64::from(k) {
                    self.current = (self.current + 1) % n;
                    self.used = 0;
                }
                self.used += 1;
                self.current
            }
            FileService::Sequential => {
                if self.used + len > self.sizes[self.current] {
                    self.current = (self.current + 1) % n;
                    self.used = 0;
                }
                self.used += len;
                self.current
            }
        };
        let size = self.sizes[j];
        let at = if self.cursors {
            let c = self.next[j];
            // A file whose end is reached starts again from its beginning.
            let c = if c + len > size { 0 } else { c };
            self.next[j] = c + len;
            c
        } else if offset + len <= size {
            offset
        } else {
            let blocks = (size / len.max(1)).max(1);
            (offset / len.max(1) % blocks) * len
        };
        (j, at)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(p: &mut Picker, ops: usize, offset: impl Fn(usize) -> u64) -> Vec<(usize, u64)> {
        (0..ops).map(|i| p.pick(offset(i), 4096)).collect()
    }

    #[test]
    fn services_parse_and_print() {
        for s in ["random", "roundrobin", "roundrobin:3", "sequential"] {
            let f = FileService::try_from(s.to_string()).unwrap();
            assert_eq!(String::from(f), s);
        }
        assert_eq!(
            FileService::try_from("roundrobin:1".to_string()),
            Ok(FileService::RoundRobin(1))
        );
        assert!(FileService::try_from("roundrobin:0".to_string()).is_err());
        assert!(FileService::try_from("zipf".to_string()).is_err());
    }

    #[test]
    fn random_spreads_evenly_over_the_files() {
        let mut p = Picker::new(vec![1 << 20; 4], FileService::Random, false, 7);
        let mut per_file = [0u32; 4];
        for (j, off) in counts(&mut p, 40_000, |i| (i as u64 % 256) * 4096) {
            per_file[j] += 1;
            assert!(off + 4096 <= 1 << 20);
        }
        for c in per_file {
            // 10,000 expected; 5 standard deviations (87 each) either side.
            assert!((9_565..=10_435).contains(&c), "{per_file:?}");
        }
    }

    #[test]
    fn roundrobin_switches_every_n_operations() {
        let mut p = Picker::new(vec![1 << 20; 3], FileService::RoundRobin(2), false, 1);
        let files: Vec<usize> = counts(&mut p, 8, |_| 0).into_iter().map(|(j, _)| j).collect();
        assert_eq!(files, [0, 0, 1, 1, 2, 2, 0, 0]);
    }

    #[test]
    fn sequential_finishes_each_file_before_the_next() {
        // Files of 2 and 3 blocks, each with its own cursor.
        let mut p = Picker::new(vec![8192, 12288], FileService::Sequential, true, 1);
        let got = counts(&mut p, 6, |_| 0);
        assert_eq!(
            got,
            [(0, 0), (0, 4096), (1, 0), (1, 4096), (1, 8192), (0, 0)]
        );
    }

    #[test]
    fn cursors_keep_each_file_sequential_under_random_service() {
        let mut p = Picker::new(vec![1 << 16; 4], FileService::Random, true, 3);
        let mut last = [None::<u64>; 4];
        for (j, off) in counts(&mut p, 40, |_| 0) {
            assert_eq!(off, last[j].map_or(0, |l| l + 4096), "file {j}");
            last[j] = Some(off);
        }
    }

    #[test]
    fn offsets_beyond_a_smaller_file_fold_into_it() {
        let mut p = Picker::new(vec![8192, 1 << 20], FileService::RoundRobin(1), false, 1);
        let (j, off) = p.pick(12 * 4096, 4096);
        assert_eq!((j, off), (0, 0));
        let (j, off) = p.pick(12 * 4096, 4096);
        assert_eq!((j, off), (1, 12 * 4096));
        assert_eq!(p.pick(13 * 4096, 4096), (0, 4096));
    }
}
