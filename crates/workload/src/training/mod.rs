//! Storage for AI training, as MLPerf Storage measures it with the DLIO benchmark: emulated
//! accelerators train on a dataset of files; each has `read-threads` readers that read and
//! decode its batches ahead of it (`prefetch` batches per reader), and computes each batch
//! for `compute-time` (a sleep: the accelerator's work). The accelerator utilization (AU) is
//! the share of the time it computed; a storage system keeps N accelerators busy when AU
//! stays above the workload's line (90% for unet3d and resnet50, 70% for cosmoflow).
//!
//! A study's `[workloads.NAME]` table with `type = "training"` names a `preset` (DLIO's
//! configurations for H100: `unet3d-h100`, `resnet50-h100`, `cosmoflow-h100`) and may
//! override any of its keys. The dataset ([`dataset`]) is written by the `dataset` target
//! when its folder lacks it, in the formats' real framing ([`mod@format`]); the loader
//! ([`loader`]) gives each reader its samples. DLIO-compatible, not an MLPerf Storage result.

pub mod checkpoint;
pub mod dataset;
pub mod format;
pub mod loader;

use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;

use crate::pgbench::{err, whole};
use dataset::{Dataset, DatasetSpec};
use format::Format;
use loader::{Gate, LoaderShape, TrainingSource};
use storlab_model::OptionError;
use storlab_model::units::{Dur, parse_bytes, parse_duration};

/// A training workload as a study gives it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct TrainingWorkload {
    /// The model the configuration emulates (for the report).
    pub model: String,
    pub dataset: DatasetSpec,
    pub accelerators: u32,
    pub batch_size: u32,
    pub read_threads: u32,
    /// Batches each reader may read ahead (DLIO's `prefetch_size`, PyTorch's
    /// `prefetch_factor`).
    pub prefetch: u32,
    pub compute_time: Dur,
    pub epochs: u32,
    /// The rule's line, percent.
    pub au_threshold: f64,
    /// The largest read a reader issues, bytes (0: as the format's reader reads: NumPy reads
    /// an array in 256 KiB pieces (its `BUFFER_SIZE`), TensorFlow through a 256 KiB buffer).
    pub read_bytes: u64,
    pub seed: u64,
}

/// Keys a study's sweep may vary in a training workload.
pub const SWEEPABLE: &[&str] = &[
    "accelerators",
    "read-threads",
    "prefetch",
    "batch-size",
    "compute-time",
    "epochs",
    "files",
    "read-bytes",
    "seed",
];

const KEYS: &[&str] = &[
    "preset",
    "model",
    "format",
    "files",
    "samples-per-file",
    "record-bytes",
    "record-bytes-stdev",
    "accelerators",
    "batch-size",
    "read-threads",
    "prefetch",
    "compute-time",
    "epochs",
    "au-threshold",
    "read-bytes",
    "seed",
];

/// DLIO's H100 configurations (dlio_benchmark's configs/workload/*_h100.yaml).
pub const PRESETS: &[&str] = &["unet3d-h100", "resnet50-h100", "cosmoflow-h100"];

fn preset(name: &str) -> Option<TrainingWorkload> {
    let w = |model: &str,
             format,
             files,
             spf,
             record_bytes,
             stdev,
             batch_size,
             read_threads,
             compute_us: u64,
             au| TrainingWorkload {
        model: model.into(),
        dataset: DatasetSpec {
            format,
            files,
            samples_per_file: spf,
            record_bytes,
            record_bytes_stdev: stdev,
            seed: super::DEFAULT_SEED,
        },
        accelerators: 1,
        batch_size,
        read_threads,
        prefetch: 2,
        compute_time: Dur(Duration::from_micros(compute_us)),
        epochs: 5,
        au_threshold: au,
        read_bytes: 0,
        seed: super::DEFAULT_SEED,
    };
    Some(match name {
        "unet3d-h100" => w(
            "unet3d",
            Format::Npz,
            168,
            1,
            146_600_628,
            68_341_808,
            7,
            4,
            323_000,
            90.0,
        ),
        "resnet50-h100" => w(
            "resnet50",
            Format::Tfrecord,
            1024,
            1251,
            114_660,
            0,
            400,
            8,
            224_000,
            90.0,
        ),
        "cosmoflow-h100" => w(
            "cosmoflow",
            Format::Tfrecord,
            524_288,
            1,
            2_828_486,
            71_311,
            1,
            4,
            3_500,
            70.0,
        ),
        _ => return None,
    })
}

fn bytes(table: &mut toml::Table, key: &str) -> Result<Option<u64>, OptionError> {
    match table.remove(key) {
        None => Ok(None),
        Some(toml::Value::Integer(i)) if i >= 0 => Ok(Some(i as u64)),
        Some(toml::Value::Float(f)) if f >= 0.0 && f.is_finite() => Ok(Some(f.round() as u64)),
        Some(toml::Value::String(s)) => parse_bytes(&s).map(Some).map_err(|e| err(key, e)),
        Some(_) => Err(err(
            key,
            format!("{key} is a size: bytes, or text such as \"140MiB\""),
        )),
    }
}

impl TrainingWorkload {
    pub fn from_table(mut table: toml::Table) -> Result<TrainingWorkload, OptionError> {
        if let Some(k) = table.keys().find(|k| !KEYS.contains(&k.as_str())) {
            return Err(err(
                k,
                format!(
                    "unknown key `{k}` in a training workload (it takes {})",
                    KEYS.join(", ")
                ),
            ));
        }
        let mut w = match table.remove("preset") {
            None => {
                return Err(err(
                    "preset",
                    format!(
                        "a training workload names a preset: one of {}",
                        PRESETS.join(", ")
                    ),
                ));
            }
            Some(toml::Value::String(s)) => preset(&s).ok_or_else(|| {
                err(
                    "preset",
                    format!("unknown preset `{s}`: one of {}", PRESETS.join(", ")),
                )
            })?,
            Some(_) => return Err(err("preset", "preset is a string")),
        };
        if let Some(v) = table.remove("model") {
            w.model = v
                .as_str()
                .ok_or_else(|| err("model", "model is a string"))?
                .into();
        }
        if let Some(v) = table.remove("format") {
            let s = v.as_str().unwrap_or("");
            w.dataset.format = Format::from_name(s)
                .ok_or_else(|| err("format", format!("format is one of {}", Format::NAMES)))?;
        }
        let d = &mut w.dataset;
        if let Some(n) = whole(&mut table, "files", 1, u32::MAX as i64)? {
            d.files = n as u32;
        }
        if let Some(n) = whole(&mut table, "samples-per-file", 1, 1 << 20)? {
            d.samples_per_file = n as u32;
        }
        if let Some(n) = bytes(&mut table, "record-bytes")? {
            d.record_bytes = n;
        }
        if let Some(n) = bytes(&mut table, "record-bytes-stdev")? {
            d.record_bytes_stdev = n;
        }
        if let Some(n) = whole(&mut table, "accelerators", 1, 1 << 16)? {
            w.accelerators = n as u32;
        }
        if let Some(n) = whole(&mut table, "batch-size", 1, 1 << 20)? {
            w.batch_size = n as u32;
        }
        if let Some(n) = whole(&mut table, "read-threads", 1, 256)? {
            w.read_threads = n as u32;
        }
        if let Some(n) = whole(&mut table, "prefetch", 1, 1024)? {
            w.prefetch = n as u32;
        }
        if let Some(n) = whole(&mut table, "epochs", 1, 1 << 20)? {
            w.epochs = n as u32;
        }
        if let Some(v) = table.remove("compute-time") {
            let s = v.as_str().ok_or_else(|| {
                err(
                    "compute-time",
                    "compute-time is a duration such as \"323ms\"",
                )
            })?;
            w.compute_time = Dur(parse_duration(s).map_err(|e| err("compute-time", e))?);
        }
        if let Some(v) = table.remove("au-threshold") {
            let p = v.as_float().or(v.as_integer().map(|i| i as f64));
            w.au_threshold = p
                .filter(|p| (0.0..=100.0).contains(p))
                .ok_or_else(|| err("au-threshold", "au-threshold is a percentage from 0 to 100"))?;
        }
        if let Some(n) = bytes(&mut table, "read-bytes")? {
            w.read_bytes = n;
        }
        if let Some(v) = table.remove("seed") {
            let s = v
                .as_integer()
                .ok_or_else(|| err("seed", "seed is a whole number"))? as u64;
            w.seed = s;
            w.dataset.seed = s;
        }
        w.check()?;
        Ok(w)
    }

    fn check(&self) -> Result<(), OptionError> {
        let d = &self.dataset;
        if d.format == Format::Npz && d.samples_per_file != 1 {
            return Err(err(
                "samples-per-file",
                "an npz file holds one sample here (as unet3d's); NumPy reads a file whole",
            ));
        }
        if d.record_bytes == 0 {
            return Err(err("record-bytes", "record-bytes is above 0"));
        }
        let steps = LoaderShape::steps_per_epoch(
            d.files,
            d.samples_per_file,
            self.accelerators,
            self.batch_size,
        );
        if steps == 0 {
            return Err(err(
                "files",
                format!(
                    "{} files of {} samples give no whole batch of {} to each of {} accelerators",
                    d.files, d.samples_per_file, self.batch_size, self.accelerators
                ),
            ));
        }
        Ok(())
    }

    /// Reader threads of all accelerators (the workers of the target).
    pub fn threads(&self) -> u32 {
        self.accelerators * self.read_threads
    }

    /// `--quick`: a dataset of small files, enough for four steps per accelerator and epoch,
    /// and two epochs, the compute time at most 20 ms.
    pub fn make_quick(&mut self) {
        let d = &mut self.dataset;
        d.record_bytes = d.record_bytes.min(64 << 10);
        d.record_bytes_stdev = d.record_bytes_stdev.min(d.record_bytes / 4);
        d.samples_per_file = d.samples_per_file.min(8);
        self.batch_size = self.batch_size.min(4);
        // Enough files for 4 steps per epoch on 8 accelerators (or on more, when the run has
        // more): the same dataset for every point of a sweep over up to 8 accelerators.
        let per_accelerator = (4 * self.batch_size).div_ceil(d.samples_per_file);
        d.files = d.files.min(per_accelerator * self.accelerators.max(8));
        self.epochs = self.epochs.min(2);
        self.compute_time = Dur(self.compute_time.0.min(Duration::from_millis(20)));
    }

    /// The dataset these keys describe (sizes drawn from the seed).
    pub fn build_dataset(&self) -> Dataset {
        Dataset::new(self.dataset.clone())
    }

    /// One run's gates (one per accelerator) and readers' sources (accelerator-major, in
    /// thread order). The shuffles are drawn from `run_seed`.
    pub fn run(
        &self,
        dataset: Arc<Dataset>,
        run_seed: u64,
    ) -> (Vec<Arc<Gate>>, Vec<TrainingSource>) {
        let shape = Arc::new(LoaderShape::new(
            dataset,
            self.accelerators,
            self.read_threads,
            self.batch_size,
            self.epochs,
            self.prefetch,
            run_seed,
        ));
        let gates: Vec<Arc<Gate>> = (0..self.accelerators)
            .map(|a| Arc::new(Gate::new(a, shape.clone())))
            .collect();
        let sources = gates
            .iter()
            .flat_map(|g| (0..self.read_threads).map(move |r| TrainingSource::new(g.clone(), r)))
            .collect();
        (gates, sources)
    }

    /// The largest read: `read-bytes`, or the format's reader's.
    pub fn read_bytes(&self, largest_sample: u64) -> u64 {
        match (self.read_bytes, self.dataset.format) {
            // strace of DLIO 2.0.0 reading npz: per 256 KiB piece, Python's buffered reader
            // issues a 4 KiB and a 252 KiB read(2); one 256 KiB pread here.
            (0, Format::Npz) => (256 << 10).min(largest_sample.max(4096)),
            (0, Format::Tfrecord) => 256 << 10,
            (n, _) => n,
        }
    }

    pub fn describe(&self) -> String {
        format!(
            "training {} ({}) accelerators {} x {} readers, batch {}, compute {}, {} epochs",
            self.model,
            self.dataset.format,
            self.accelerators,
            self.read_threads,
            self.batch_size,
            self.compute_time,
            self.epochs
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<TrainingWorkload, OptionError> {
        TrainingWorkload::from_table(toml::from_str(text).unwrap())
    }

    #[test]
    fn a_preset_gives_dlios_configuration_and_keys_override_it() {
        let w = parse("preset = \"unet3d-h100\"").unwrap();
        assert_eq!(w.model, "unet3d");
        assert_eq!(w.dataset.files, 168);
        assert_eq!(w.batch_size, 7);
        assert_eq!(w.compute_time.0, Duration::from_millis(323));
        assert_eq!(w.au_threshold, 90.0);
        let w =
            parse("preset = \"cosmoflow-h100\"\naccelerators = 4\ncompute-time = \"5ms\"").unwrap();
        assert_eq!((w.accelerators, w.au_threshold), (4, 70.0));
        assert_eq!(w.threads(), 16);
        assert_eq!(w.compute_time.0, Duration::from_millis(5));
    }

    #[test]
    fn bad_keys_name_themselves() {
        assert_eq!(parse("").unwrap_err().key, "preset");
        assert_eq!(parse("preset = \"bert\"").unwrap_err().key, "preset");
        assert_eq!(
            parse("preset = \"unet3d-h100\"\nthreads = 2")
                .unwrap_err()
                .key,
            "threads"
        );
        assert_eq!(
            parse("preset = \"unet3d-h100\"\nsamples-per-file = 2")
                .unwrap_err()
                .key,
            "samples-per-file"
        );
        let e = parse("preset = \"unet3d-h100\"\nfiles = 6").unwrap_err();
        assert_eq!(e.key, "files");
        assert!(e.message.contains("no whole batch"), "{}", e.message);
    }

    #[test]
    fn quick_keeps_four_steps_per_accelerator_and_epoch() {
        for p in PRESETS {
            let mut w = parse(&format!("preset = \"{p}\"\naccelerators = 3")).unwrap();
            w.make_quick();
            w.check().unwrap();
            let d = &w.dataset;
            let steps = LoaderShape::steps_per_epoch(d.files, d.samples_per_file, 3, w.batch_size);
            assert!(steps >= 4, "{p}: {steps}");
            assert!(d.files * d.samples_per_file <= 8 * 4 * 8, "{p}: small");
            let mut more = w.clone();
            more.accelerators = 8;
            more.make_quick();
            assert_eq!(
                more.dataset, w.dataset,
                "{p}: one dataset for a sweep up to 8"
            );
        }
    }
}
