//! The study folder's files made from its stored runs once a study has run: the RAID
//! efficiency table (`raid.json`), the published figures the study names (`baseline.json`),
//! IOmeter's result file (`iometer.csv`, a study of block
//! workloads) and the targets side by side (`comparison.json`). The runner stores runs; these
//! are written here, in that order.

use storlab_engine::{RunError, StudyOutcome};
use storlab_results::summary::RunSummary;
use storlab_study::plan::Plan;

/// Writes the study's files from what `run_plan` stored. A rank other than 0 of a
/// distributed run stored nothing and writes nothing.
pub(super) fn write(plan: &Plan, outcome: &StudyOutcome) -> Result<(), RunError> {
    if storlab_engine::distributed::is_other_rank() {
        return Ok(());
    }
    let (study_folder, summaries) = (&outcome.folder, &outcome.summaries);
    if let Some(geometry) = &plan.raid {
        raid(geometry, study_folder, summaries)?;
    }
    // The brief's published figures the study names, kept with its results.
    if let Some(baseline) = &plan.baseline {
        let path = study_folder.join(storlab_results::write::BASELINE_FILE);
        storlab_results::write_json_file(&path, baseline)?;
    }
    // IOmeter's result file, from the stored runs (a study of block workloads).
    let block_runs = plan
        .runs
        .iter()
        .any(|r| r.targets.iter().any(|t| t.workload.as_block().is_some()));
    if block_runs && !summaries.is_empty() {
        let path = study_folder.join(storlab_report::iometer::FILE);
        let runs = storlab_results::stored::read_study_folder(study_folder)
            .map_err(|e| std::io::Error::other(e.to_string()));
        let runs = runs.map_err(|source| RunError::Results {
            path: path.clone(),
            source,
        })?;
        let csv = storlab_report::iometer::iometer_csv(&runs);
        storlab_results::write::write_file(&path, csv.as_bytes())?;
    }
    let comparison =
        storlab_results::comparison::compare_in_folder(&plan.study, study_folder, summaries);
    if !comparison.steps.is_empty() {
        let path = study_folder.join("comparison.json");
        storlab_results::write_json_file(&path, &comparison)?;
    }
    Ok(())
}

/// `raid.json`: the RAID efficiency table of the study's steps, with the failures its runs
/// measured.
fn raid(
    geometry: &storlab_model::raid::Geometry,
    study_folder: &std::path::Path,
    summaries: &[RunSummary],
) -> Result<(), RunError> {
    let steps = storlab_results::comparison::compare_all_in_folder(study_folder, summaries);
    let mut table = storlab_results::raid::table(geometry, &steps);
    table.failures = storlab_results::raid::failure::failures(geometry, summaries);
    let path = study_folder.join("raid.json");
    Ok(storlab_results::write_json_file(&path, &table)?)
}
