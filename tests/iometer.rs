//! IOmeter's model end to end with the real binary: a two-line access specification on two
//! `file` targets of two clients; `iometer.csv` (written by `storlab run` and again by
//! `storlab report --format iometer`) adds up to the summaries' figures; an `.icf` file's
//! access specifications become a study that runs.

mod common;

use common::{Lab, text};

const STUDY: &str = r#"name = "iom"

[targets.share-a]
type = "file"
path = "a.dat"
size = "8MiB"
client = "client-1"

[targets.share-b]
type = "file"
path = "b.dat"
size = "8MiB"
client = "client-2"

[workloads.oltp]
queue-depth = 4
threads = 2

[[workloads.oltp.access-spec]]
spec-share = 0.7
block-size = "8KiB"
read-share = 0.5
random-share = 1.0
alignment = "4KiB"

[[workloads.oltp.access-spec]]
spec-share = 0.3
block-size = "64KiB"
read-share = 1.0
random-share = 0.0
burst-ios = 4

[[steps]]
workload = "oltp"
targets = ["share-a", "share-b"]
together = true
warmup = "100ms"
ops = 4000
"#;

/// The cells of the row of `kind` and `name`, by column name.
fn row(csv: &str, kind: &str, name: &str) -> std::collections::BTreeMap<String, String> {
    let header: Vec<&str> = csv
        .lines()
        .find(|l| l.starts_with("'Target Type"))
        .expect("header")
        .split(',')
        .collect();
    let cells: Vec<&str> = csv
        .lines()
        .map(|l| l.split(',').collect::<Vec<_>>())
        .find(|c| c[0] == kind && c[1] == name)
        .unwrap_or_else(|| panic!("no {kind} row {name} in\n{csv}"));
    header
        .iter()
        .zip(cells)
        .map(|(h, c)| (h.to_string(), c.to_string()))
        .collect()
}

/// Every row of `kind` named `name`, in file order.
fn rows(csv: &str, kind: &str, name: &str) -> Vec<std::collections::BTreeMap<String, String>> {
    let header: Vec<&str> = csv
        .lines()
        .find(|l| l.starts_with("'Target Type"))
        .expect("header")
        .split(',')
        .collect();
    csv.lines()
        .map(|l| l.split(',').collect::<Vec<_>>())
        .filter(|c| c[0] == kind && c[1] == name)
        .map(|c| {
            header
                .iter()
                .zip(c)
                .map(|(h, v)| (h.to_string(), v.to_string()))
                .collect()
        })
        .collect()
}

fn num(r: &std::collections::BTreeMap<String, String>, col: &str) -> f64 {
    r[col]
        .parse()
        .unwrap_or_else(|_| panic!("{col} = {:?}", r[col]))
}

#[test]
fn iometer_csv_adds_up_to_the_summary() {
    let lab = Lab::new();
    let study = lab.write("iom.toml", STUDY);
    let out = lab.run(&["run", study.to_str().unwrap(), "--json", "-q"]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    let runs: serde_json::Value = serde_json::from_str(&stdout).expect("json");
    let s = &runs[0];
    let folder = std::fs::read_dir(lab.results())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.is_dir())
        .expect("study folder");
    let csv = std::fs::read_to_string(folder.join("iometer.csv")).expect("iometer.csv");
    assert!(
        csv.starts_with("'Test Type,Test Description\n0,iom\n'Version\n"),
        "{csv}"
    );
    assert!(
        csv.contains("\n8192,70,50,100,0,1,4096,0,\n65536,30,100,0,0,4,0,0,\n"),
        "{csv}"
    );

    let targets = s["targets"].as_array().unwrap();
    let mut sums = [0f64; 4];
    for (t, client) in targets.iter().zip(["client-1", "client-2"]) {
        assert_eq!(t["client"], client);
        let name = t["name"].as_str().unwrap();
        let read = &t["kinds"]["read"];
        let write = &t["kinds"]["write"];
        let manager = row(&csv, "MANAGER", client);
        // A DISK row under each of the target's two workers, with that worker's figures:
        // together they are the target's.
        let disks = rows(&csv, "DISK", name);
        assert_eq!(disks.len(), 2, "{csv}");
        let mut disk = disks[0].clone();
        for col in ["Read I/Os", "Write I/Os", "Bytes Read", "IOps"] {
            let sum: f64 = disks.iter().map(|d| num(d, col)).sum();
            disk.insert(col.to_string(), sum.to_string());
        }
        // Means weighted by each worker's reads (exact sums; the target's mean is from its
        // histogram, within its 0.1% precision).
        let reads: f64 = disks.iter().map(|d| num(d, "Read I/Os")).sum();
        let mean: f64 = disks
            .iter()
            .map(|d| num(d, "Average Read Response Time") * num(d, "Read I/Os"))
            .sum::<f64>()
            / reads;
        let target_mean_ms = read["service-latency"]["mean-ns"].as_f64().unwrap() / 1e6;
        assert!(
            (mean - target_mean_ms).abs() <= target_mean_ms * 2e-3,
            "{mean} vs {target_mean_ms}"
        );
        disk.insert(
            "Average Read Response Time".into(),
            target_mean_ms.to_string(),
        );
        for r in [&disk, &manager] {
            assert_eq!(num(r, "Read I/Os"), read["ops"].as_f64().unwrap(), "{csv}");
            assert_eq!(num(r, "Write I/Os"), write["ops"].as_f64().unwrap());
            assert_eq!(num(r, "Bytes Read"), read["bytes"].as_f64().unwrap());
            let iops = read["rate-ops"].as_f64().unwrap() + write["rate-ops"].as_f64().unwrap();
            assert!(
                (num(r, "IOps") - iops).abs() < 1e-3,
                "{} vs {iops}",
                r["IOps"]
            );
            let mean_ms = read["service-latency"]["mean-ns"].as_f64().unwrap() / 1e6;
            assert!((num(r, "Average Read Response Time") - mean_ms).abs() < 1e-5);
        }
        assert_eq!(num(&manager, "# Workers"), 2.0);
        // Transfers of both lines: read bytes are a mix of 8 KiB and 64 KiB.
        let (ops, bytes) = (
            read["ops"].as_u64().unwrap(),
            read["bytes"].as_u64().unwrap(),
        );
        assert_eq!(bytes % 8192, 0);
        assert!(
            bytes > ops * 8192 && bytes < ops * 65536,
            "{bytes} bytes in {ops} reads"
        );
        // The 64 KiB line only reads: writes are all 8 KiB.
        assert_eq!(
            write["bytes"].as_u64().unwrap(),
            write["ops"].as_u64().unwrap() * 8192
        );
        sums[0] += read["ops"].as_f64().unwrap();
        sums[1] += write["ops"].as_f64().unwrap();
        sums[2] += read["rate-ops"].as_f64().unwrap() + write["rate-ops"].as_f64().unwrap();
        sums[3] += t["errors"].as_f64().unwrap();
    }
    // Each client's two workers, numbered per client as IOmeter numbers them per manager.
    assert_eq!(rows(&csv, "WORKER", "Worker 1").len(), 2, "{csv}");
    assert_eq!(rows(&csv, "WORKER", "Worker 2").len(), 2, "{csv}");
    let all = row(&csv, "ALL", "All");
    assert_eq!(num(&all, "Read I/Os"), sums[0]);
    assert_eq!(num(&all, "Write I/Os"), sums[1]);
    assert!((num(&all, "IOps") - sums[2]).abs() < 1e-3);
    // The run is bounded by operations: a target done first is measured until its own last
    // completion, so the targets' rates (IOmeter's All: their sum) are at least the total's
    // (all operations over the whole run), equal when neither finished first.
    let total_rate = s["total"]["rate-ops"].as_f64().unwrap();
    // The same quotient, up to the last digit JSON's shortest round trip keeps.
    let quotient = s["total"]["ops"].as_f64().unwrap() / s["measured-seconds"].as_f64().unwrap();
    assert!(
        (total_rate - quotient).abs() <= quotient * 1e-12,
        "{total_rate} vs {quotient}"
    );
    assert!(num(&all, "IOps") >= total_rate - 1e-3, "{csv}");
    let own_times = s["targets"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["measured-seconds"].is_f64())
        .count();
    if own_times == 0 {
        assert!((num(&all, "IOps") - total_rate).abs() < 1e-3);
    }
    assert_eq!(num(&all, "Errors"), sums[3]);
    assert_eq!(num(&all, "# Managers"), 2.0);
    assert_eq!(all["Access Specification Name"], "oltp");
    // The latency bins count every read and write.
    let bins: f64 = all
        .iter()
        .filter(|(k, _)| k.contains(" to ") || k.contains(">="))
        .map(|(_, v)| v.parse::<f64>().unwrap())
        .sum();
    assert_eq!(bins, sums[0] + sums[1]);

    // The report command writes the same file from the stored results.
    let again = lab.run(&[
        "report",
        folder.to_str().unwrap(),
        "--format",
        "iometer",
        "-o",
        "-",
    ]);
    assert!(again.status.success(), "{}", text(&again).1);
    assert_eq!(text(&again).0, csv);
}

const ICF: &str = "Version 1.1.0 \n'TEST SETUP ====================\n\
'ACCESS SPECIFICATIONS =========================================================\n\
'Access specification name,default assignment\n\tOLTP 64K mix,NONE\n\
'size,% of size,% reads,% random,delay,burst,align,reply\n\
\t65536,60,67,100,0,1,4096,0\n\t8192,40,100,0,2,4,0,0\n\
'END access specifications\n\
'MANAGER LIST ==================================================================\n\
'Worker\n\tWorker 1\n'Worker type\n\tDISK\n'Default target settings for worker\n\
'Number of outstanding IOs,test connection rate,transactions per connection,use fixed seed,fixed seed value\n\
\t3,DISABLED,1,DISABLED,0\n'End default target settings for worker\n\
'Assigned access specs\n\tOLTP 64K mix\n'End assigned access specs\n'End worker\n";

#[test]
fn an_icf_files_specifications_run_as_a_study() {
    let lab = Lab::new();
    let icf = lab.write("test.icf", ICF);
    let out = lab.run(&["iometer-icf", icf.to_str().unwrap()]);
    let (workloads, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    assert!(workloads.contains("queue-depth = 3"), "{workloads}");
    let study = lab.write(
        "from-icf.toml",
        &format!(
            "name = \"icf\"\n[targets.disk]\ntype = \"null\"\n{workloads}\n[[steps]]\nworkload = \"oltp-64k-mix\"\ntargets = [\"disk\"]\nops = 500\n"
        ),
    );
    let run = lab.run(&["run", study.to_str().unwrap(), "--json", "-q"]);
    let (stdout, stderr) = text(&run);
    assert!(run.status.success(), "{stderr}");
    let runs: serde_json::Value = serde_json::from_str(&stdout).expect("json");
    assert_eq!(runs[0]["targets"][0]["queue-depth"], 3);
    assert_eq!(runs[0]["targets"][0]["block-bytes"], 65536);

    let bad = lab.write("bad.icf", &ICF.replace("8192,40,", "8192,30,"));
    let out = lab.run(&["iometer-icf", bad.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out).1.contains("add up to 90, not 100"),
        "{}",
        text(&out).1
    );
}
