//! The training workload through the real binary: the MLPerf Storage study in quick mode on
//! a folder here, the datasets written once in their formats' framing and reused, AU and its
//! rule stored and printed, and a damaged sample caught as an integrity error; and its
//! checkpoints written, synced and read back by every rank, a stale piece caught.

mod common;

use common::{Lab, text};

fn run_study(lab: &Lab, data: &std::path::Path) -> (String, String, bool) {
    let study =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("studies/mlperf-training.toml");
    let out = lab
        .cmd()
        .env("STORLAB_TRAINING_DATA", data)
        .args(["run", study.to_str().unwrap(), "--quick"])
        .output()
        .unwrap();
    let (o, e) = text(&out);
    (o, e, out.status.success())
}

#[test]
fn the_training_study_writes_its_datasets_once_and_states_au_against_the_rule() {
    let lab = Lab::new();
    let data = lab.path().join("datasets");
    let (stdout, stderr, ok) = run_study(&lab, &data);
    assert!(ok, "{stdout}\n{stderr}");
    let runs = common::summaries(&lab);
    assert_eq!(runs.len(), 5, "{stdout}");
    check_checkpoint_runs(&runs[3..], &data);
    for (s, (model, format, line)) in runs.iter().zip([
        ("unet3d", "npz", 90.0),
        ("resnet50", "tfrecord", 90.0),
        ("cosmoflow", "tfrecord", 70.0),
    ]) {
        let t = &s["training"][0];
        assert_eq!(t["model"], model, "{t}");
        assert_eq!(t["dataset"]["format"], format);
        assert_eq!(t["dataset"]["generated"], true);
        assert_eq!(t["au-threshold-percent"].as_f64(), Some(line));
        let acc = &t["per-accelerator"][0];
        assert_eq!(acc["cut-short"], false, "{t}");
        let epochs = acc["epochs"].as_array().unwrap();
        assert_eq!(epochs.len(), 2, "quick: two epochs");
        // One accelerator reads the whole quick dataset each epoch.
        let d = &t["dataset"];
        let batch = t["batch-size"].as_u64().unwrap();
        let steps = d["files"].as_u64().unwrap() * d["samples-per-file"].as_u64().unwrap() / batch;
        assert!(steps >= 4, "{t}");
        for e in epochs {
            assert_eq!(e["steps"].as_u64(), Some(steps), "{e}");
            assert_eq!(e["counted-steps"].as_u64(), Some(steps - 1), "{e}");
        }
        // Every sample read and decoded, none failing its framing or checksums.
        let target = &s["targets"][0];
        assert_eq!(target["errors"], 0, "{target}");
        assert_eq!(target["ops"].as_u64(), Some(2 * steps * batch));
        // The client's memory is recorded (the host's, or a cgroup's limit below it); the
        // quick dataset is far below 5 x it.
        let memory = &d["client-memory"];
        assert!(memory["bytes"].as_u64().is_some_and(|b| b > 0), "{d}");
        assert!(["host", "cgroup"].contains(&memory["bound"].as_str().unwrap_or("")));
        let folder = data.join("quick").join(model);
        assert!(folder.join("storlab-dataset.json").is_file());
        assert!(folder.join("train").read_dir().unwrap().count() > 0);
    }
    assert!(
        stdout.contains("training unet3d on data: 1 accelerators, AU"),
        "{stdout}"
    );
    assert!(stdout.contains("against 70%"), "{stdout}");
    assert!(stdout.contains(" x the client's memory ("), "{stdout}");
    // The HTML report: the table, AU against accelerators, and what the figures are.
    let html = lab.path().join("r.html");
    let out = lab.run(&[
        "report",
        lab.study_folder().to_str().unwrap(),
        "-o",
        html.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out).1);
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        page.contains("<section id=\"training\">"),
        "no training section"
    );
    assert!(
        page.contains("training-au")
            && page.contains("DLIO-compatible, not an MLPerf Storage result")
    );
    assert!(
        page.contains("below the rules&#39; 5 x"),
        "the quick datasets are said to be below the rules' 5 x the client's memory"
    );
    assert!(
        page.contains("<section id=\"checkpoint\">"),
        "no checkpoint section"
    );
    // The published MLPerf Storage result beside the training figures.
    assert!(
        page.contains("mlperf-storage-v1.0-micron-9550"),
        "no published figures"
    );
    common::shot::first_screen(&html, "brief-mlperf-training");

    // Again: the datasets are found and reused, not written.
    let again = Lab::new();
    let (stdout, stderr, ok) = run_study(&again, &data);
    assert!(ok, "{stdout}\n{stderr}");
    for s in common::summaries(&again).iter().take(3) {
        assert_eq!(s["training"][0]["dataset"]["generated"], false, "{s}");
    }
    assert!(!stderr.contains("writing the dataset"), "{stderr}");
}

/// The quick study's checkpoint steps: Llama 3 8B's first 2 of 8 ranks write 2 checkpoints
/// (2 files each per rank, every file synced), then read them back after the page cache is
/// dropped (or its failure recorded); every pass ends on every rank.
fn check_checkpoint_runs(runs: &[serde_json::Value], data: &std::path::Path) {
    let (write, read) = (&runs[0], &runs[1]);
    let w = &write["checkpoint"][0];
    assert_eq!(
        (w["ranks"].as_u64(), w["world-ranks"].as_u64()),
        (Some(2), Some(8)),
        "{w}"
    );
    assert_eq!(w["files"], 4, "{w}");
    assert_eq!(
        w["preset-model"], false,
        "quick: a smaller model than the preset's"
    );
    let bytes = w["checkpoint-bytes"].as_u64().unwrap();
    let kinds = &write["targets"][0]["kinds"];
    assert_eq!(kinds["write"]["bytes"].as_u64(), Some(2 * bytes), "{kinds}");
    assert_eq!(kinds["fsync"]["ops"], 8, "{kinds}");
    assert_eq!(write["targets"][0]["errors"], 0);
    let r = &read["checkpoint"][0];
    assert_eq!(
        read["targets"][0]["kinds"]["read"]["bytes"].as_u64(),
        Some(2 * bytes)
    );
    assert_eq!(read["targets"][0]["errors"], 0, "{}", read["targets"][0]);
    for (passes, n) in [(&w["writes"], 2), (&r["reads"], 2)] {
        let passes = passes.as_array().unwrap();
        assert_eq!(passes.len(), n);
        for p in passes {
            let ranks = p["ranks"].as_array().unwrap();
            assert!(
                ranks.len() == 2 && ranks.iter().all(|r| r.is_array()),
                "{p}"
            );
        }
    }
    assert!(r["writes"].as_array().unwrap().is_empty());
    let events = read["events"].to_string();
    assert!(
        events.contains("page-cache-"),
        "the cache drop or its failure: {events}"
    );
    let folder = data.join("quick/checkpoints/llama3-8b/global_epoch1_step2");
    assert!(
        folder
            .join("zero_pp_rank_1_mp_rank_0_optim_states.pt")
            .is_file()
    );
}

/// ZeRO 1 with pipeline stages (Llama 3 405B's first 2 ranks): a file per layer. A piece
/// overwritten with another piece's bytes is caught when read back.
#[test]
fn a_stale_checkpoint_piece_is_an_integrity_error() {
    let lab = Lab::new();
    let data = lab.path().join("ckpt");
    let study = |name: &str, keys: &str| {
        lab.write(
            &format!("{name}.toml"),
            &format!(
                "name = \"{name}\"\n[targets.data]\ntype = \"dataset\"\npath = \"{}\"\n[workloads.c]\ntype = \"checkpoint\"\npreset = \"llama3-405b\"\nranks = 2\ntime-between-checkpoints = \"0s\"\nio-bytes = 4096\n{keys}\n[[steps]]\nname = \"c\"\nworkload = \"c\"\ntargets = [\"data\"]\nwarmup = \"0s\"\n",
                data.display()
            ),
        )
    };
    let write = study("write", "checkpoints-write = 1\ncheckpoints-read = 0");
    let out = lab.run(&["run", write.to_str().unwrap(), "--quick"]);
    assert!(out.status.success(), "{}", text(&out).1);
    let s = &common::summaries(&lab)[0];
    let files = s["checkpoint"][0]["files"].as_u64().unwrap();
    assert!(files > 4, "a file per layer: {s}");
    // The second piece of a layer file takes the first piece's bytes.
    let dir = data.join("quick/checkpoints/llama3-405b/global_epoch1_step1");
    let victim = dir.join("layer_1-model_0_model_states.pt");
    let mut bytes = std::fs::read(&victim).unwrap();
    assert!(bytes.len() > 8192, "{}", bytes.len());
    let first: Vec<u8> = bytes[..4096].to_vec();
    bytes[4096..8192].copy_from_slice(&first);
    std::fs::write(&victim, bytes).unwrap();
    let reader = Lab::new();
    let read = study("read", "checkpoints-write = 0\ncheckpoints-read = 1");
    let out = reader.run(&["run", read.to_str().unwrap(), "--quick"]);
    let s = &common::summaries(&reader)[0];
    assert_eq!(s["targets"][0]["errors"], 1, "{}\n{s}", text(&out).1);
    assert!(s.to_string().contains("integrity"), "{s}");
}

#[test]
fn a_damaged_sample_is_an_integrity_error_and_a_foreign_folder_is_refused() {
    let lab = Lab::new();
    let data = lab.path().join("datasets");
    assert!(run_study(&lab, &data).2);
    // Flip one byte in the middle of every resnet50 file: each record's CRC catches it.
    let train = data.join("quick/resnet50/train");
    for f in std::fs::read_dir(&train).unwrap() {
        let p = f.unwrap().path();
        let mut bytes = std::fs::read(&p).unwrap();
        let mid = bytes.len() / 2;
        bytes[mid] ^= 0xff;
        std::fs::write(&p, bytes).unwrap();
    }
    let again = Lab::new();
    let (stdout, stderr, _) = run_study(&again, &data);
    let runs = common::summaries(&again);
    let resnet = runs
        .iter()
        .find(|s| s["training"][0]["model"] == "resnet50")
        .unwrap_or_else(|| panic!("{stdout}\n{stderr}"));
    let errors = resnet["targets"][0]["errors"].as_u64().unwrap();
    assert!(errors >= 1, "{}", resnet["targets"][0]);
    assert!(resnet.to_string().contains("integrity"), "{resnet}");

    // A folder with someone else's files is never written into.
    let foreign = lab.path().join("foreign");
    std::fs::create_dir_all(foreign.join("quick/unet3d")).unwrap();
    std::fs::write(foreign.join("quick/unet3d/notes.txt"), "mine").unwrap();
    let third = Lab::new();
    let (stdout, stderr, ok) = run_study(&third, &foreign);
    assert!(!ok, "{stdout}");
    assert!(
        stderr.contains("holds another dataset or other files"),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read_to_string(foreign.join("quick/unet3d/notes.txt")).unwrap(),
        "mine"
    );
}

/// MLPerf's search: a sweep over `accelerators` stops at its first point below the line;
/// the later points are skipped and said, and the report gives the search's answer.
#[test]
fn an_accelerator_sweep_stops_at_its_first_point_below_the_line() {
    let lab = Lab::new();
    let data = lab.path().join("datasets");
    // 1 us of compute per batch: the readers cannot keep up, AU is far below 50%.
    let study = lab.write(
        "search.toml",
        &format!(
            r#"name = "search"
[targets.data]
type = "dataset"
path = "{}"
[workloads.cosmo]
type = "training"
preset = "cosmoflow-h100"
files = 24
record-bytes = 20000
compute-time = "1us"
au-threshold = 50
epochs = 1
[[steps]]
name = "search"
workload = "cosmo"
targets = ["data"]
warmup = "0s"
sweep.accelerators = [1, 2, 3]
"#,
            data.display()
        ),
    );
    let out = lab.run(&["run", study.to_str().unwrap()]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let runs = common::summaries(&lab);
    assert_eq!(runs.len(), 1, "only the first point ran: {stdout}");
    assert_eq!(runs[0]["training"][0]["accelerators"], 1);
    assert!(
        stderr.contains("note: run 2 (step `search`, accelerators = 2) was skipped")
            && stderr.contains("run 3"),
        "{stderr}"
    );
    let report = lab.run(&[
        "report",
        lab.study_folder().to_str().unwrap(),
        "--format",
        "md",
        "-o",
        "-",
    ]);
    let (md, err) = text(&report);
    assert!(
        md.contains("step `search`: the most accelerators above the 50% line: none; first below: 1 accelerators"),
        "{md}\n{err}"
    );
}
