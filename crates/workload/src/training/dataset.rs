//! A training dataset: its files, named as DLIO names them (`train/img_007_of_168.npz`), each
//! file's sample size drawn once from the seed (a normal spread around the mean, as DLIO's
//! generator draws it), and how a sample maps to a file and an offset. Writing a file
//! ([`Dataset::write_file`]) streams pseudo-random bytes through the format's framing.

use std::fs::File;
use std::io::Write;
use std::os::unix::fs::FileExt;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use serde::Serialize;

use super::format::{ExampleLayout, Format, NpzLayout, RECORD_FOOTER, masked_crc32c};
use storlab_model::training::DatasetFacts;

/// What a dataset is: the study's keys, before sizes are drawn.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct DatasetSpec {
    pub format: Format,
    pub files: u32,
    pub samples_per_file: u32,
    /// The mean bytes of a sample's data (DLIO's `record_length_bytes`).
    pub record_bytes: u64,
    /// Their standard deviation (`record_length_bytes_stdev`; 0: every sample the same).
    pub record_bytes_stdev: u64,
    pub seed: u64,
}

/// The dataset's files and their samples' sizes.
#[derive(Debug, Clone, PartialEq)]
pub struct Dataset {
    pub spec: DatasetSpec,
    /// Each file's sample data bytes (every sample of a file has the same).
    payload: Vec<u64>,
    /// Each file's bytes on disk, and its samples' (framing included).
    file_bytes: Vec<u64>,
    sample_bytes: Vec<u64>,
}

/// The name of the file that says a folder holds a dataset storlab wrote, and which.
pub const MANIFEST: &str = "storlab-dataset.json";

impl Dataset {
    pub fn new(spec: DatasetSpec) -> Dataset {
        let mut rng = SmallRng::seed_from_u64(spec.seed ^ 0x0da7_a5e7);
        let payload: Vec<u64> = (0..spec.files)
            .map(|_| {
                if spec.record_bytes_stdev == 0 {
                    return spec.record_bytes.max(1);
                }
                // Box-Muller: one normal draw per file.
                let unit = |x: u64| ((x >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
                let u1: f64 = unit(rng.next_u64());
                let u2: f64 = unit(rng.next_u64());
                let z = (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos();
                let v = spec.record_bytes as f64 + z * spec.record_bytes_stdev as f64;
                v.round().max(1.0) as u64
            })
            .collect();
        let (file_bytes, sample_bytes) = payload
            .iter()
            .map(|&p| match spec.format {
                Format::Npz => {
                    let f = NpzLayout::new(p).file_bytes();
                    (f, f)
                }
                Format::Tfrecord => {
                    let r = ExampleLayout::new(p).record_bytes();
                    (r * u64::from(spec.samples_per_file), r)
                }
            })
            .unzip();
        Dataset {
            spec,
            payload,
            file_bytes,
            sample_bytes,
        }
    }

    pub fn files(&self) -> u32 {
        self.spec.files
    }

    /// The file's path inside the dataset's folder.
    pub fn file_name(&self, file: u32) -> String {
        let n = self.spec.files;
        let width = n.to_string().len();
        format!(
            "train/img_{file:0width$}_of_{n}.{}",
            self.spec.format.name()
        )
    }

    pub fn file_bytes(&self, file: u32) -> u64 {
        self.file_bytes[file as usize]
    }

    /// Bytes of one sample of `file` on disk: the whole file for npz (NumPy reads the
    /// archive), one framed record for tfrecord.
    #[inline]
    pub fn sample_bytes(&self, file: u32) -> u64 {
        self.sample_bytes[file as usize]
    }

    /// The sample's data bytes of `file` (its image).
    pub fn payload_bytes(&self, file: u32) -> u64 {
        self.payload[file as usize]
    }

    /// The largest sample on disk.
    pub fn largest_sample(&self) -> u64 {
        self.sample_bytes.iter().copied().max().unwrap_or(0)
    }

    pub fn total_bytes(&self) -> u64 {
        self.file_bytes.iter().sum()
    }

    /// The file and the record in it of global sample `id` (file x samples per file +
    /// record).
    #[inline]
    pub fn locate(&self, id: u64) -> (u32, u32) {
        let spf = u64::from(self.spec.samples_per_file);
        ((id / spf) as u32, (id % spf) as u32)
    }

    /// What the dataset is, for the report.
    pub fn facts(&self, generated: bool, generation_seconds: f64) -> DatasetFacts {
        let n = self.sample_bytes.len().max(1) as f64;
        let mean = self.sample_bytes.iter().sum::<u64>() as f64 / n;
        let var = self
            .sample_bytes
            .iter()
            .map(|&b| (b as f64 - mean).powi(2))
            .sum::<f64>()
            / n;
        DatasetFacts {
            format: self.spec.format.name().into(),
            files: u64::from(self.spec.files),
            samples_per_file: self.spec.samples_per_file,
            bytes: self.total_bytes(),
            sample_bytes_mean: mean,
            sample_bytes_stdev: var.sqrt(),
            generated,
            generation_seconds,
            client_memory: None,
        }
    }

    /// The manifest's text: the spec and every file's size, so that a folder written for
    /// another dataset is never taken for this one.
    pub fn manifest(&self) -> String {
        let v = serde_json::json!({
            "written-by": "storlab",
            "spec": self.spec,
            "file-bytes": self.file_bytes,
        });
        v.to_string()
    }

    /// Writes file `file` whole through `out` (created empty), with `buf` as the chunk of
    /// pseudo-random data (reused between calls).
    pub fn write_file(&self, file: u32, out: &File, buf: &mut [u8]) -> std::io::Result<()> {
        let mut w = std::io::BufWriter::with_capacity(1 << 20, out);
        let mut rng = self.spec.seed ^ (u64::from(file) + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        let payload = self.payload[file as usize];
        match self.spec.format {
            Format::Npz => {
                let l = NpzLayout::new(payload);
                w.write_all(&l.x_head)?;
                let mut crc = crc32fast::Hasher::new();
                crc.update(l.x_npy());
                stream_random(&mut w, payload, buf, &mut rng, |c| crc.update(c))?;
                let x_crc = crc.finalize();
                w.write_all(&l.y_member)?;
                w.write_all(&l.tail(x_crc))?;
                w.flush()?;
                drop(w);
                out.write_all_at(&x_crc.to_le_bytes(), NpzLayout::X_CRC_AT)?;
            }
            Format::Tfrecord => {
                let e = ExampleLayout::new(payload);
                let header = e.header();
                for _ in 0..self.spec.samples_per_file {
                    w.write_all(&header)?;
                    w.write_all(&e.before)?;
                    let mut crc = crc32c::crc32c(&e.before);
                    stream_random(&mut w, payload, buf, &mut rng, |c| {
                        crc = crc32c::crc32c_append(crc, c)
                    })?;
                    w.write_all(&e.after)?;
                    crc = crc32c::crc32c_append(crc, &e.after);
                    w.write_all(&masked_crc32c(crc).to_le_bytes())?;
                    debug_assert_eq!(RECORD_FOOTER, 4);
                }
                w.flush()?;
            }
        }
        Ok(())
    }
}

/// Writes `bytes` pseudo-random bytes (xorshift, a few instructions per 8 bytes) in chunks of
/// `buf`, each chunk shown to `seen` first (its checksum).
fn stream_random(
    w: &mut impl Write,
    mut bytes: u64,
    buf: &mut [u8],
    state: &mut u64,
    mut seen: impl FnMut(&[u8]),
) -> std::io::Result<()> {
    while bytes > 0 {
        let n = (bytes as usize).min(buf.len());
        let chunk = &mut buf[..n];
        for word in chunk.chunks_mut(8) {
            let mut x = *state | 1;
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            *state = x;
            word.copy_from_slice(&x.to_le_bytes()[..word.len()]);
        }
        seen(chunk);
        w.write_all(chunk)?;
        bytes -= n as u64;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(format: Format, spf: u32, stdev: u64) -> DatasetSpec {
        DatasetSpec {
            format,
            files: 12,
            samples_per_file: spf,
            record_bytes: 10_000,
            record_bytes_stdev: stdev,
            seed: 7,
        }
    }

    #[test]
    fn names_follow_dlio_and_sizes_spread_around_the_mean_reproducibly() {
        let d = Dataset::new(spec(Format::Npz, 1, 2_000));
        assert_eq!(d.file_name(3), "train/img_03_of_12.npz");
        assert_eq!(d, Dataset::new(spec(Format::Npz, 1, 2_000)));
        let sizes: Vec<u64> = (0..12).map(|f| d.payload_bytes(f)).collect();
        assert!(sizes.iter().any(|&s| s != sizes[0]), "{sizes:?}");
        let f = d.facts(true, 0.0);
        assert!(f.sample_bytes_stdev > 500.0, "{f:?}");
        let flat = Dataset::new(spec(Format::Tfrecord, 5, 0));
        assert!((0..12).all(|f| flat.payload_bytes(f) == 10_000));
        assert_eq!(flat.file_bytes(0), 5 * flat.sample_bytes(0));
        assert_eq!(flat.locate(17), (3, 2));
    }

    #[test]
    fn written_files_have_the_sizes_the_layout_says() {
        let dir = tempfile::tempdir().unwrap();
        let mut buf = vec![0u8; 4096];
        for d in [
            Dataset::new(spec(Format::Npz, 1, 3_000)),
            Dataset::new(spec(Format::Tfrecord, 3, 3_000)),
        ] {
            for f in 0..3 {
                let path = dir.path().join(format!("{f}.{}", d.spec.format));
                let out = File::create(&path).unwrap();
                d.write_file(f, &out, &mut buf).unwrap();
                assert_eq!(std::fs::metadata(&path).unwrap().len(), d.file_bytes(f));
            }
        }
    }
}
