//! A set of files behind one target (fio's `nrfiles`): which file each operation goes to
//! (fio's `file_service_type`), where in it and how large (in a file smaller than the
//! largest, as fio draws it there), chosen by a few integer operations per operation: no
//! allocation, lock or formatting on the worker's path.

use std::fs::File;
use std::os::unix::io::{AsRawFd, RawFd};

use serde::{Deserialize, Serialize};

use storlab_workload::block::size_draw::SizeDraw;

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
    /// The workload's size draw and offsets: an I/O in a smaller file is placed as fio
    /// places it there (None: the offset folded into it, the size kept).
    draw: Option<SizeDraw>,
    /// The largest file (the workload's region), its index and its offset positions.
    largest: u64,
    largest_index: usize,
    positions: u64,
}

/// xorshift64: the picker's own random numbers (a few integer operations).
#[inline]
fn xorshift(state: &mut u64) -> u64 {
    let mut x = *state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    *state = x;
    x
}

/// Offset positions of a file of `size` bytes: multiples of `align` where the smallest I/O
/// fits (fio's `last_block` with `ba`).
#[inline]
fn positions(size: u64, d: &SizeDraw) -> u64 {
    let smallest = d.smallest();
    if size >= smallest {
        (size - smallest) / d.align + 1
    } else {
        1
    }
}

impl Picker {
    /// `sizes`: each file's bytes; `cursors`: each file keeps its own next offset (a
    /// sequential job), else the workload's offset is used; `draw`: the workload's sizes,
    /// to place an I/O in a smaller file as fio does (else folded into it).
    pub fn new(
        sizes: Vec<u64>,
        service: FileService,
        cursors: bool,
        seed: u64,
        draw: Option<SizeDraw>,
    ) -> Picker {
        let n = sizes.len();
        let (largest_index, largest) = sizes
            .iter()
            .copied()
            .enumerate()
            .max_by_key(|(i, s)| (*s, std::cmp::Reverse(*i)))
            .unwrap_or((0, 0));
        Picker {
            positions: draw.as_ref().map_or(1, |d| positions(largest, d)),
            sizes,
            next: vec![0; n],
            cursors,
            service,
            current: 0,
            used: 0,
            // xorshift needs a state other than 0.
            rng: seed | 1,
            draw,
            largest,
            largest_index,
        }
    }

    pub fn files(&self) -> usize {
        self.sizes.len()
    }

    /// The next file by the service.
    #[inline]
    fn next_file(&mut self, len: u64) -> usize {
        let n = self.sizes.len();
        match self.service {
            FileService::Random => (((xorshift(&mut self.rng) >> 32) * n as u64) >> 32) as usize,
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
        }
    }

    /// The file of the next operation (`write` or a read) of `len` bytes at the workload's
    /// `offset`, the offset in that file and the operation's size there. A file smaller than
    /// the direction's smallest size gets none (fio marks it done and goes on to the next);
    /// in a file smaller than the largest, the offset is drawn over its own positions (the
    /// workload's scaled to them when skewed) and the size drawn again until it fits before
    /// its end, as fio's `get_next_buflen`.
    #[inline]
    pub fn pick(&mut self, offset: u64, len: u64, write: bool) -> (usize, u64, u64) {
        let n = self.sizes.len();
        if n <= 1 {
            return (0, offset, len);
        }
        let min = self.draw.as_ref().map_or(0, |d| d.min(write));
        let mut j = self.next_file(len);
        let mut tries = 1;
        while self.sizes[j] < min {
            if tries >= n {
                j = self.largest_index;
                break;
            }
            j = self.next_file(len);
            tries += 1;
        }
        let size = self.sizes[j];
        if self.cursors {
            let c = self.next[j];
            // A file whose end is reached (the smallest size no longer fits, as fio's
            // `get_next_buflen`) starts again from its beginning.
            let need = if self.draw.is_some() { min } else { len };
            let c = if c + need > size { 0 } else { c };
            let len = self.fit(c, len, size, write);
            self.next[j] = c + len;
            return (j, c, len);
        }
        if size == self.largest {
            return (j, offset, len);
        }
        let Some((uniform, align, here)) = self
            .draw
            .as_ref()
            .map(|d| (d.uniform, d.align, positions(size, d)))
        else {
            if offset + len <= size {
                return (j, offset, len);
            }
            let blocks = (size / len.max(1)).max(1);
            return (j, (offset / len.max(1) % blocks) * len, len);
        };
        let p = if uniform {
            ((u128::from(xorshift(&mut self.rng)) * u128::from(here)) >> 64) as u64
        } else {
            (u128::from(offset / align) * u128::from(here) / u128::from(self.positions)) as u64
        };
        let at = p.min(here - 1) * align;
        // Uniform: fio's size drawn for this offset; else the workload's while it fits.
        let len = self.fit(at, if uniform { u64::MAX } else { len }, size, write);
        (j, at, len)
    }

    /// `len` if it fits from `at` in a file of `size` bytes, else a size drawn again until
    /// it does (fio's `get_next_buflen`); without the workload's draw, `len`.
    #[inline]
    fn fit(&mut self, at: u64, len: u64, size: u64, write: bool) -> u64 {
        let room = size.saturating_sub(at);
        if len <= room {
            return len;
        }
        let Some(d) = self.draw.as_ref() else {
            return len;
        };
        let rng = &mut self.rng;
        d.fitting(write, room, || xorshift(rng))
            .unwrap_or_else(|| d.min(write))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(p: &mut Picker, ops: usize, offset: impl Fn(usize) -> u64) -> Vec<(usize, u64)> {
        (0..ops)
            .map(|i| {
                let (j, off, _) = p.pick(offset(i), 4096, false);
                (j, off)
            })
            .collect()
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
        let mut p = Picker::new(vec![1 << 20; 4], FileService::Random, false, 7, None);
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
        let mut p = Picker::new(vec![1 << 20; 3], FileService::RoundRobin(2), false, 1, None);
        let files: Vec<usize> = counts(&mut p, 8, |_| 0).into_iter().map(|(j, _)| j).collect();
        assert_eq!(files, [0, 0, 1, 1, 2, 2, 0, 0]);
    }

    #[test]
    fn sequential_finishes_each_file_before_the_next() {
        // Files of 2 and 3 blocks, each with its own cursor.
        let mut p = Picker::new(vec![8192, 12288], FileService::Sequential, true, 1, None);
        let got = counts(&mut p, 6, |_| 0);
        assert_eq!(
            got,
            [(0, 0), (0, 4096), (1, 0), (1, 4096), (1, 8192), (0, 0)]
        );
    }

    #[test]
    fn cursors_keep_each_file_sequential_under_random_service() {
        let mut p = Picker::new(vec![1 << 16; 4], FileService::Random, true, 3, None);
        let mut last = [None::<u64>; 4];
        for (j, off) in counts(&mut p, 40, |_| 0) {
            assert_eq!(off, last[j].map_or(0, |l| l + 4096), "file {j}");
            last[j] = Some(off);
        }
    }

    #[test]
    fn offsets_beyond_a_smaller_file_fold_into_it() {
        let mut p = Picker::new(vec![8192, 1 << 20], FileService::RoundRobin(1), false, 1, None);
        assert_eq!(p.pick(12 * 4096, 4096, false), (0, 0, 4096));
        assert_eq!(p.pick(12 * 4096, 4096, false), (1, 12 * 4096, 4096));
        assert_eq!(p.pick(13 * 4096, 4096, false), (0, 4096, 4096));
    }

    fn range_4k_16k(uniform: bool) -> SizeDraw {
        let mut d = SizeDraw::range(&storlab_workload::block::size_draw::SizeRange {
            min: storlab_model::units::Bytes(4096),
            max: storlab_model::units::Bytes(16384),
            write_min: None,
            write_max: None,
            unaligned: false,
        });
        d.uniform = uniform;
        d
    }

    #[test]
    fn files_smaller_than_the_largest_block_get_ios_that_fit_as_fios() {
        // fio 3.33, filesize=4k-64k, bsrange=4k-16k: in a file of 8k the offset is 0 or 4k
        // (half each), at 0 the size 4k or 8k (drawn again until it fits), at 4k 4k.
        let sizes = vec![4096, 8192, 12288, 65536];
        let mut p = Picker::new(sizes.clone(), FileService::Random, false, 9, Some(range_4k_16k(true)));
        let mut in_8k = std::collections::BTreeMap::new();
        for i in 0..40_000u64 {
            let (j, at, len) = p.pick((i % 13) * 4096, 16384, i % 2 == 0);
            assert!(at + len <= sizes[j] && len >= 4096 && at % 4096 == 0, "{j} {at} {len}");
            if j == 1 {
                *in_8k.entry((at, len)).or_insert(0u32) += 1;
            }
        }
        let total: u32 = in_8k.values().sum();
        let share = |k| f64::from(in_8k[&k]) / f64::from(total);
        assert_eq!(in_8k.len(), 3, "{in_8k:?}");
        // 10,000 in the file: 5 standard errors of a share, 0.025.
        assert!((share((0, 4096)) - 0.25).abs() < 0.025, "{in_8k:?}");
        assert!((share((0, 8192)) - 0.25).abs() < 0.025, "{in_8k:?}");
        assert!((share((4096, 4096)) - 0.5).abs() < 0.025, "{in_8k:?}");
        // A skewed workload keeps its offset's place, scaled to the file; the largest file
        // takes the workload's I/O as it is.
        let mut p = Picker::new(sizes.clone(), FileService::RoundRobin(1), false, 9, Some(range_4k_16k(false)));
        assert_eq!(p.pick(60 << 10, 4096, false), (0, 0, 4096));
        let (_, at, len) = p.pick(60 << 10, 4096, false);
        assert_eq!((at, len), (4096, 4096));
        p.pick(0, 4096, false);
        assert_eq!(p.pick(48 << 10, 16384, false), (3, 48 << 10, 16384));
    }

    #[test]
    fn a_file_smaller_than_the_smallest_block_gets_no_io_as_in_fio() {
        let mut p = Picker::new(vec![2048, 1 << 20, 1 << 16], FileService::RoundRobin(1), false, 1, Some(SizeDraw::fixed(4096)));
        for i in 0..100 {
            let (j, at, len) = p.pick(i * 4096, 4096, true);
            assert!(j > 0 && at + len <= [2048, 1 << 20, 1 << 16][j], "{j} {at}");
        }
        // Sequential: each file's own cursor, sizes that fit before its end.
        let mut p = Picker::new(vec![8192, 1 << 16], FileService::Sequential, true, 1, Some(range_4k_16k(false)));
        for _ in 0..100 {
            let (j, at, len) = p.pick(0, 16384, false);
            assert!(at + len <= [8192, 1 << 16][j], "{j} {at} {len}");
        }
    }
}
