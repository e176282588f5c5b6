//! The emulated accelerators of a training workload: one thread each, beside the run's
//! workers (its readers). An accelerator takes its batches in order at the gate its readers
//! fill (`storlab_workload::training::loader::Gate`), computes each for the workload's
//! compute time (it sleeps), and counts, per epoch, the time it computed and the time it sat
//! waiting for data.
//!
//! Step `k` starts when its batch is ready and step `k - 1`'s compute is over: start =
//! max(ready, previous end), end = start + compute. Times come from the readers' stamps of
//! each batch's readiness and the nominal compute, so the accelerator's own sleep running
//! late (a timer's slack) is never charged to the storage; the sleep paces the readers'
//! prefetch window as the accelerator would. Each epoch's first step is left out of its
//! utilization, as DLIO leaves it out (`metric_exclude_start_steps` = 1).

use std::sync::Arc;

use storlab_model::training::{AcceleratorSteps, EpochSteps};
use storlab_workload::training::loader::{Gate, Take};

/// Runs accelerator `gate` until its last batch, or until its readers are gone.
pub fn accelerate(gate: &Gate, compute_ns: u64) -> AcceleratorSteps {
    gate.attach_accelerator();
    let shape = Arc::clone(&gate.shape);
    let mut out = AcceleratorSteps {
        accelerator: gate.accelerator,
        epochs: Vec::with_capacity(shape.epochs as usize),
        cut_short: false,
    };
    let mut prev_end: Option<u64> = None;
    'epochs: for epoch in 0..shape.epochs {
        let mut e = EpochSteps {
            epoch: epoch + 1,
            ..EpochSteps::default()
        };
        let mut first_end = 0u64;
        for step in 0..shape.steps_per_epoch {
            let g = u64::from(epoch) * shape.steps_per_epoch + step;
            let ready = match gate.take(g) {
                Take::Ready(t) => t,
                Take::Gone => {
                    out.cut_short = true;
                    out.epochs.push(e);
                    break 'epochs;
                }
            };
            let start = prev_end.map_or(ready, |p| ready.max(p));
            gate.consumed(g);
            let end = start + compute_ns;
            e.steps += 1;
            if step == 0 {
                first_end = end;
            } else {
                let wait = start - prev_end.unwrap_or(start);
                e.counted_steps += 1;
                e.compute_ns += compute_ns;
                e.wait_ns += wait;
                e.max_wait_ns = e.max_wait_ns.max(wait);
                e.counted_ns = end - first_end;
            }
            prev_end = Some(end);
            let now = gate.now_ns();
            if end > now {
                std::thread::sleep(std::time::Duration::from_nanos(end - now));
            }
        }
        out.epochs.push(e);
    }
    gate.stop();
    out
}

/// One thread per accelerator of every training target of the run, in `scope`.
pub(crate) fn spawn<'scope, 'env>(
    scope: &'scope std::thread::Scope<'scope, 'env>,
    targets: &'env [crate::setup::Accelerators],
) -> Result<Vec<(usize, AcceleratorThread<'scope>)>, crate::RunError> {
    let mut threads = Vec::new();
    for t in targets {
        for gate in &t.gates {
            let compute_ns = t.compute_ns;
            let h = std::thread::Builder::new()
                .name(format!("storlab-accel-{}", gate.accelerator))
                .spawn_scoped(scope, move || accelerate(gate, compute_ns))
                .map_err(|e| {
                    // The readers would wait for an accelerator that never runs.
                    t.gates.iter().for_each(|g| g.stop());
                    crate::RunError::Thread(e)
                })?;
            threads.push((t.target, h));
        }
    }
    Ok(threads)
}

pub(crate) type AcceleratorThread<'scope> = std::thread::ScopedJoinHandle<'scope, AcceleratorSteps>;

/// Each training target's accelerators, once they have ended.
pub(crate) fn join(
    threads: Vec<(usize, AcceleratorThread<'_>)>,
) -> Result<Vec<(usize, Vec<AcceleratorSteps>)>, crate::RunError> {
    let mut out: Vec<(usize, Vec<AcceleratorSteps>)> = Vec::new();
    for (target, h) in threads {
        let steps = h.join().map_err(|_| {
            crate::RunError::Thread(std::io::Error::other("an accelerator thread panicked"))
        })?;
        match out.iter_mut().find(|(t, _)| *t == target) {
            Some((_, v)) => v.push(steps),
            None => out.push((target, vec![steps])),
        }
    }
    Ok(out)
}

/// The training results of a run: per training target, its workload's shape, its dataset
/// and what its accelerators did.
pub(crate) fn results(
    run: &storlab_study::plan::RunPlan,
    measured: &[(usize, Vec<AcceleratorSteps>)],
    ready: &crate::setup::Ready,
) -> Vec<storlab_model::training::TrainingResult> {
    measured
        .iter()
        .filter_map(|(ti, steps)| {
            let t = &run.targets[*ti];
            let w = t.workload.as_training()?;
            let storlab_targets::Handle::Dataset(
                storlab_targets::dataset::DatasetShared::Training(shared),
            ) = &ready.handles[*ti].handle
            else {
                return None;
            };
            let seconds = if shared.generated {
                ready.prepare_seconds[*ti]
            } else {
                0.0
            };
            let mut per_accelerator = steps.clone();
            per_accelerator.sort_by_key(|a| a.accelerator);
            let mut dataset = shared.dataset.facts(shared.generated, seconds);
            dataset.client_memory = crate::memory::client_memory();
            Some(storlab_model::training::TrainingResult {
                target: t.name.clone(),
                model: w.model.clone(),
                accelerators: w.accelerators,
                batch_size: w.batch_size,
                read_threads: w.read_threads,
                prefetch_batches: w.prefetch * w.read_threads,
                compute_ns_per_step: w.compute_time.0.as_nanos() as u64,
                au_threshold_percent: w.au_threshold,
                dataset,
                per_accelerator,
            })
        })
        .collect()
}

/// The checkpoint results of a run: per checkpoint target, its layout and each pass's
/// stamps from the clock its ranks met at.
pub(crate) fn checkpoint_results(
    run: &storlab_study::plan::RunPlan,
    clocks: &[(
        usize,
        Arc<storlab_workload::training::checkpoint::CheckpointClock>,
    )],
) -> Vec<storlab_model::training::CheckpointResult> {
    clocks
        .iter()
        .filter_map(|(ti, clock)| {
            let t = &run.targets[*ti];
            let w = t.workload.as_checkpoint()?;
            let layout = w.layout();
            let world = w.layout_of(w.parallelism.world());
            let (writes, reads) = clock.passes();
            Some(storlab_model::training::CheckpointResult {
                target: t.name.clone(),
                model: w.model.clone(),
                ranks: w.ranks,
                world_ranks: w.parallelism.world(),
                checkpoint_bytes: layout.bytes(),
                world_checkpoint_bytes: world.bytes(),
                preset_model: w.preset_model(),
                files: layout.files.len() as u64,
                fsync: w.fsync,
                time_between_ns: w.time_between_checkpoints.0.as_nanos() as u64,
                io_bytes: w.io_bytes,
                writes,
                reads,
            })
        })
        .collect()
}

/// MLPerf Storage's search for the most accelerators a storage system keeps above the AU
/// line: a step that sweeps `accelerators` stops at its first point (any repetition) whose
/// run does not meet the rule; its later points are skipped and said.
#[derive(Default)]
pub(crate) struct Search {
    /// Steps whose search has ended, and the accelerators that failed there.
    ended: Vec<(String, u32)>,
}

impl Search {
    /// Why `run` is skipped, when its step's search has ended.
    pub(crate) fn skips(&self, run: &storlab_study::plan::RunPlan) -> Option<String> {
        let (_, failed) = self.ended.iter().find(|(s, _)| *s == run.step)?;
        Some(format!(
            "run {} (step `{}`, {}) was skipped: the step's accelerator search ended at {failed} accelerators, its first point below the AU line",
            run.index,
            run.step,
            run.parameters
                .iter()
                .map(|(k, v)| format!("{k} = {v}"))
                .collect::<Vec<_>>()
                .join(", ")
        ))
    }

    /// Takes a run's results: a swept training run below the line ends its step's search.
    pub(crate) fn saw(
        &mut self,
        run: &storlab_study::plan::RunPlan,
        summary: &storlab_results::summary::RunSummary,
    ) {
        if !run.parameters.contains_key("accelerators")
            || self.ended.iter().any(|(s, _)| *s == run.step)
        {
            return;
        }
        if let Some(t) = summary.training.iter().find(|t| !t.meets_au()) {
            self.ended.push((run.step.clone(), t.accelerators));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use storlab_workload::training::TrainingWorkload;

    fn workload(text: &str) -> TrainingWorkload {
        TrainingWorkload::from_table(toml::from_str(text).unwrap()).unwrap()
    }

    /// One accelerator of cosmoflow's preset with `keys` (one sample per file of 100 bytes)
    /// computing `compute_ns` per step, its readers each running `reader` on their source.
    fn train(
        keys: &str,
        compute_ns: u64,
        reader: fn(storlab_workload::training::loader::TrainingSource),
    ) -> AcceleratorSteps {
        let w = workload(&format!(
            "preset = \"cosmoflow-h100\"\nrecord-bytes = 100\nrecord-bytes-stdev = 0\n{keys}"
        ));
        let (gates, sources) = w.run(Arc::new(w.build_dataset()), 3);
        std::thread::scope(|s| {
            let acc = s.spawn(|| accelerate(&gates[0], compute_ns));
            for src in sources {
                s.spawn(move || reader(src));
            }
            acc.join().unwrap()
        })
    }

    /// Readers that deliver every sample at once: the accelerator does not wait after the
    /// first step, and its utilization is all but 100%.
    #[test]
    fn instant_storage_keeps_the_accelerator_busy() {
        let steps = train(
            "files = 10\nepochs = 2\nread-threads = 2\ncompute-time = \"20ms\"",
            20_000_000,
            |mut src| while src.next_op().is_some() {},
        );
        assert!(!steps.cut_short);
        assert_eq!(steps.epochs.len(), 2);
        for e in &steps.epochs {
            assert_eq!(e.steps, 10);
            assert_eq!(e.counted_steps, 9);
            // Readers a scheduler delays by more than a step's 20 ms would show as waits.
            assert!(e.au_percent() > 95.0, "{e:?}");
        }
    }

    /// One reader taking 3 ms per sample, batches of one, 2 ms of compute: a batch every
    /// 3 ms, so the accelerator computes about 2 ms of every 3 (AU about 67%) and waits the
    /// rest.
    #[test]
    fn slow_readers_show_as_waits_and_a_lower_utilization() {
        let steps = train(
            "files = 30\nepochs = 1\nread-threads = 1\ncompute-time = \"2ms\"",
            2_000_000,
            |mut src| {
                while src.next_op().is_some() {
                    std::thread::sleep(std::time::Duration::from_millis(3));
                }
            },
        );
        let e = &steps.epochs[0];
        let au = e.au_percent();
        // A loaded machine only makes the reader slower: the bound is one-sided.
        assert!(au < 90.0, "AU {au}: {e:?}");
        assert!(e.wait_ns > 0 && e.max_wait_ns >= 500_000, "{e:?}");
    }

    #[test]
    fn readers_that_stop_early_cut_the_accelerator_short() {
        let steps = train(
            "files = 30\nepochs = 1\nread-threads = 2\ncompute-time = \"1ms\"",
            1_000_000,
            |mut src| {
                for _ in 0..5 {
                    src.next_op();
                }
            },
        );
        assert!(steps.cut_short);
        assert!(steps.epochs[0].steps < 30);
    }
}
