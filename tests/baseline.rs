//! A brief's published figures beside the user's: a study that names a baseline keeps it with
//! its results, and `storlab report` puts each published figure beside the same test and
//! metric measured here, with the ratio and the plain statement that the hardware differs;
//! `--baseline FILE` gives another; every baseline under studies/baselines/ reads, and every
//! study that names one finds it. The runs are YCSB workload A on the null target (storlab
//! itself), a fraction of a second.

mod common;

use std::path::Path;

use common::{Lab, text};

fn repo(p: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(p)
        .to_string_lossy()
        .into_owned()
}

fn study(baseline: &str) -> String {
    format!(
        r#"name = "published"
baseline = "{baseline}"
[targets.n]
type = "null"
[workloads.workload-a]
type = "ycsb"
phase = "run"
workload-file = "{}"
record-count = 1000
operation-count = 20000
[[steps]]
name = "workload-a"
workload = "workload-a"
targets = ["n"]
warmup = "0s"
"#,
        repo("workloads/workloada")
    )
}

/// The Markdown table under `## Published figures` as rows of cells.
fn published_rows(md: &str) -> Vec<Vec<String>> {
    let at = md
        .find("## Published figures")
        .unwrap_or_else(|| panic!("no published figures:\n{md}"));
    md[at..]
        .lines()
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .skip(2)
        .map(|l| {
            l.trim_matches('|')
                .split('|')
                .map(|c| c.trim().to_string())
                .collect()
        })
        .collect()
}

#[test]
fn the_studys_baseline_sits_beside_the_measured_figures_with_the_ratio() {
    let lab = Lab::new();
    std::fs::copy(
        repo("studies/baselines/ycsb-mongodb.toml"),
        lab.path().join("b.toml"),
    )
    .unwrap();
    lab.write("s.toml", &study("b.toml"));
    let out = lab.run(&["run", "s.toml", "-q"]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let folder = lab.study_folder();
    // Kept with the results: the report reads it from there, not from the study's folder.
    std::fs::remove_file(lab.path().join("b.toml")).unwrap();
    assert!(folder.join("baseline.json").is_file());
    let out = lab.run(&[
        "report",
        "--format",
        "md",
        "-o",
        "-",
        folder.to_str().unwrap(),
    ]);
    let (md, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    assert!(md.contains("The hardware differs"), "{md}");
    let rows = published_rows(&md);
    let metrics: Vec<&str> = rows.iter().map(|r| r[1].as_str()).collect();
    assert_eq!(
        metrics,
        [
            "run time",
            "ops/s",
            "mean read latency",
            "mean update latency"
        ],
        "{md}"
    );
    // ops/s: the brief's 30,316.44 beside the measured figure, and their ratio.
    let ops = &rows[1];
    assert_eq!(ops[2], "30,316.44 ops/s", "{md}");
    assert_eq!(ops[3], "n", "{md}");
    let measured: f64 = ops[4]
        .trim_end_matches(" ops/s")
        .replace(',', "")
        .parse()
        .unwrap_or_else(|e| panic!("{e}: {md}"));
    let ratio: f64 = ops[5].replace(',', "").parse().unwrap();
    assert!(measured > 0.0, "{md}");
    let expected = measured / 30_316.44;
    assert!(
        (ratio - expected).abs() <= expected * 0.01,
        "{ratio} vs {expected}"
    );
    // The HTML has the same table.
    let out = lab.run(&["report", "-o", "r.html", folder.to_str().unwrap()]);
    assert!(out.status.success(), "{:?}", text(&out));
    let html = std::fs::read_to_string(lab.path().join("r.html")).unwrap();
    assert!(
        html.contains("id=\"published\"") && html.contains("30,316.44 ops/s"),
        "no published table in the HTML"
    );
}

#[test]
fn a_baseline_given_to_report_replaces_the_studys_and_a_bad_one_is_named() {
    let lab = Lab::new();
    lab.write(
        "b.toml",
        "name = \"mine\"\nbrief = \"my brief\"\nsource = \"here\"\nsystem = \"my box\"\n[[figure]]\ntable = \"YCSB\"\ntest = \"workload-a\"\nmetric = \"ops/s\"\nvalue = 1000\nunit = \"ops/s\"\nwording = \"a thousand\"\n[[figure]]\ntable = \"YCSB\"\ntest = \"workload-b\"\nmetric = \"ops/s\"\nvalue = 5\nunit = \"ops/s\"\nwording = \"never run\"\n",
    );
    std::fs::copy(
        repo("studies/baselines/ycsb-mongodb.toml"),
        lab.path().join("xd6.toml"),
    )
    .unwrap();
    lab.write("s.toml", &study("xd6.toml"));
    let out = lab.run(&["run", "s.toml", "-q"]);
    assert!(out.status.success(), "{:?}", text(&out));
    let folder = lab.study_folder();
    let folder = folder.to_str().unwrap();
    let out = lab.run(&[
        "report",
        "--format",
        "md",
        "-o",
        "-",
        "--baseline",
        "b.toml",
        folder,
    ]);
    let (md, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    assert!(md.contains("## Published figures: mine"), "{md}");
    assert!(!md.contains("kioxia"), "{md}");
    let rows = published_rows(&md);
    assert_eq!(rows.len(), 2, "{md}");
    // A published figure nothing here measured is listed, said so.
    assert_eq!(rows[1][0], "workload-b (YCSB)", "{md}");
    assert_eq!(rows[1][4], "not measured here", "{md}");
    lab.write("bad.toml", "name = \"bad\"\n");
    let out = lab.run(&[
        "report",
        "--format",
        "md",
        "-o",
        "-",
        "--baseline",
        "bad.toml",
        folder,
    ]);
    let (_, stderr) = text(&out);
    assert!(!out.status.success());
    assert!(
        stderr.contains("bad.toml") && stderr.contains("brief"),
        "{stderr}"
    );
}

#[test]
fn every_published_baseline_reads_and_every_study_naming_one_finds_it() {
    let dir = repo("studies/baselines");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    files.sort();
    assert!(files.len() >= 4, "{files:?}");
    let lab = Lab::new();
    for f in &files {
        // A study that names it validates only when the baseline reads.
        lab.write("s.toml", &study(f.to_str().unwrap()));
        let out = lab.run(&["plan", "s.toml"]);
        assert!(out.status.success(), "{}: {:?}", f.display(), text(&out));
    }
    for s in std::fs::read_dir(repo("studies")).unwrap().flatten() {
        let text = std::fs::read_to_string(s.path()).unwrap_or_default();
        let study: toml::Table = match toml::from_str(&text) {
            Ok(t) => t,
            Err(_) => continue,
        };
        if let Some(toml::Value::String(name)) = study.get("baseline") {
            assert!(
                s.path().parent().unwrap().join(name).is_file(),
                "{}: {name}",
                s.path().display()
            );
        }
    }
}
