//! The HTML report's disclosure appendix: the method, the system under test as captured at
//! the start of each run (host, kernel, CPU, memory, the targets' storage), every run with its
//! workload and bounds, and the study file as run.

use std::fmt::Write;

use crate::html::{params_text, workload_text};
use crate::svg::esc;
use crate::table::thousands;
use storlab_model::units::format_bytes;
use storlab_results::stored::StoredRun;
use storlab_results::system::{BlockDeviceInfo, SystemInfo, TargetStorage};

fn dl(h: &mut String, items: &[(&str, Option<String>)]) {
    h.push_str("<dl>");
    for (k, v) in items {
        if let Some(v) = v {
            let _ = write!(h, "<dt>{}</dt><dd>{}</dd>", esc(k), esc(v));
        }
    }
    h.push_str("</dl>\n");
}

/// A size as everywhere (`16GiB`) with its exact count beside: `16GiB (17,179,869,184 bytes)`.
fn bytes_text(b: u64) -> String {
    format!("{} ({} bytes)", format_bytes(b), thousands(b as f64))
}

/// The system under test: host, kernel, CPU and memory, the targets' software and storage.
fn system_section(h: &mut String, sys: &SystemInfo) {
    let c = &sys.cpu;
    let kernel = sys
        .kernel_release
        .clone()
        .map(|r| match &sys.kernel_version {
            Some(v) => format!("{r} ({v})"),
            None => r,
        });
    let storlab = Some(format!(
        "{}{}",
        sys.storlab_version,
        sys.storlab_git_commit
            .as_ref()
            .map(|c| format!(", commit {c}"))
            .unwrap_or_else(|| ", commit not recorded".into())
    ));
    dl(
        h,
        &[
            ("Captured", Some(sys.captured_at_utc.clone())),
            ("Host", sys.hostname.clone()),
            ("OS", sys.os.clone()),
            ("Kernel", kernel),
            ("Architecture", sys.architecture.clone()),
            ("CPU model", c.model_name.clone()),
            ("Sockets", c.sockets.map(|x| x.to_string())),
            ("Physical cores", c.physical_cores.map(|x| x.to_string())),
            ("Logical CPUs", c.logical_cpus.map(|x| x.to_string())),
            (
                "SMT",
                Some(c.smt_active.map_or("not readable".into(), |a| {
                    if a {
                        "on".to_string()
                    } else {
                        "off".to_string()
                    }
                })),
            ),
            (
                "Frequency governor",
                Some(
                    c.frequency_governor
                        .clone()
                        .unwrap_or_else(|| "not readable (no cpufreq)".into()),
                ),
            ),
            (
                "Max frequency",
                c.max_frequency_mhz.map(|m| format!("{m} MHz")),
            ),
            ("Memory", sys.memory_total_bytes.map(bytes_text)),
            (
                "Memory available at start",
                sys.memory_available_bytes.map(bytes_text),
            ),
            ("Swap", sys.swap_total_bytes.map(bytes_text)),
            ("storlab", storlab),
            ("Command line", sys.command_line.clone()),
        ],
    );
    software_table(h, sys);
    for t in &sys.targets {
        storage(h, t);
    }
}

/// The software and version each target reported.
fn software_table(h: &mut String, sys: &SystemInfo) {
    if !sys.target_software.is_empty() {
        h.push_str("<table><thead><tr><th>target</th><th>type</th><th>software</th><th>version</th></tr></thead><tbody>");
        for t in &sys.target_software {
            let _ = write!(
                h,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(&t.target),
                esc(&t.target_type),
                esc(&t.software),
                esc(&t.version)
            );
        }
        h.push_str("</tbody></table>\n");
    }
}

/// The storage under one target's path: its filesystem and block devices.
fn storage(h: &mut String, t: &TargetStorage) {
    let _ = writeln!(h, "<h4>Storage under <code>{}</code></h4>", esc(&t.path));
    let mut items: Vec<(&str, Option<String>)> = vec![
        ("Canonical path", t.canonical_path.clone()),
        ("Not created yet; inspected", t.existing_ancestor.clone()),
        (
            "Raw block device",
            t.is_block_device.then(|| "yes".to_string()),
        ),
    ];
    if let Some(f) = &t.filesystem {
        items.push(("Filesystem", Some(f.fs_type.clone())));
        items.push(("Mounted from", Some(f.mount_source.clone())));
        items.push(("Mount point", Some(f.mount_point.clone())));
        items.push(("Mount options", Some(f.mount_options.clone())));
        items.push(("Superblock options", Some(f.super_options.clone())));
        items.push(("Size", f.total_bytes.map(bytes_text)));
        items.push(("Available", f.available_bytes.map(bytes_text)));
    }
    dl(h, &items);
    block_devices(h, &t.block_devices);
}

/// The block devices under a target, one row each.
fn block_devices(h: &mut String, devices: &[BlockDeviceInfo]) {
    if devices.is_empty() {
        return;
    }
    h.push_str("<table><thead><tr><th>device</th><th>model</th><th>vendor</th><th>firmware</th><th>size</th><th>rotational</th><th>scheduler</th><th>queue depth (nr_requests)</th><th>hw queues</th><th>block sizes (logical/physical)</th><th>other</th></tr></thead><tbody>");
    for d in devices {
        let o = |x: &Option<String>| x.clone().unwrap_or_else(|| "-".into());
        let mut other = Vec::new();
        if let Some(w) = &d.whole_disk {
            other.push(format!("partition of {w}"));
        }
        if let Some(n) = &d.dm_name {
            other.push(format!("dm {n}"));
        }
        if let Some(b) = &d.loop_backing_file {
            other.push(format!("loop on {b}"));
        }
        if let Some(s) = &d.serial {
            other.push(format!("serial {s}"));
        }
        let _ = write!(
            h,
            "<tr><td>{} ({})</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}/{}</td><td>{}</td></tr>",
            esc(&d.name),
            esc(&d.device_number),
            esc(&o(&d.model)),
            esc(&o(&d.vendor)),
            esc(&o(&d.firmware_rev)),
            esc(&d.size_bytes.map(bytes_text).unwrap_or_else(|| "-".into())),
            d.rotational.map_or("-", |r| if r { "yes" } else { "no" }),
            esc(&o(&d.scheduler)),
            d.nr_requests.map_or("-".into(), |n| n.to_string()),
            d.hw_queues.map_or("-".into(), |n| n.to_string()),
            d.logical_block_size_bytes
                .map_or("-".into(), |n| n.to_string()),
            d.physical_block_size_bytes
                .map_or("-".into(), |n| n.to_string()),
            esc(&other.join(", "))
        );
    }
    h.push_str("</tbody></table>\n");
}

pub fn disclosure(h: &mut String, runs: &[StoredRun]) {
    h.push_str("<section id=\"disclosure\"><h2>Appendix: full disclosure</h2>\n");
    h.push_str("<h3>Method</h3><ul><li>Closed loop: each thread keeps queue-depth operations in flight; open loop (rate-ops): operations start on a schedule and the latency from the intended start is reported too.</li><li>Warm-up operations run and are kept out of every figure, headline, call-out and table; the timelines show the warm-up seconds, marked, when the run recorded them. ops/s = successful operations completed in measurement / time from the start of measurement to the last measured completion; MB = 10<sup>6</sup> bytes. Errors are counted, not included in ops/s.</li><li>Latency: service time from submission to observed completion, HDR histograms with 3 significant digits (1 ns to 1 h), merged by adding counts, never by averaging percentiles.</li><li>Repetitions of a sweep point are combined by adding their histograms (ops/s: all their operations over all their measured time); the spread between repetitions (min and max of their own ops/s and p99) is shown beside, never averaged into a figure.</li><li>storlab records its own CPU use: when its busiest worker was on the CPU over 90% of the time, or the process used over 90% of the machine, the run is marked saturated (the figures then measure the client).</li></ul>\n");
    systems(h, runs);
    sessions_used(h, runs);
    runs_table(h, runs);
    study_files(h, runs);
    h.push_str("</section>\n");
}

/// Systems: one section per distinct capture (host, kernel, CPU, targets' storage), with the
/// runs it applies to.
fn systems(h: &mut String, runs: &[StoredRun]) {
    let mut shown: Vec<String> = Vec::new();
    h.push_str("<h3>System under test</h3>\n");
    for r in runs {
        let Some(sys) = &r.system else { continue };
        let key = serde_json::to_string(&(
            &sys.hostname,
            &sys.kernel_release,
            &sys.cpu.model_name,
            &sys.targets.iter().map(|t| &t.path).collect::<Vec<_>>(),
        ))
        .unwrap_or_default();
        if shown.contains(&key) {
            continue;
        }
        shown.push(key);
        let same: Vec<String> = runs
            .iter()
            .filter(|x| {
                x.system.as_ref().is_some_and(|s| {
                    s.hostname == sys.hostname
                        && s.targets
                            .iter()
                            .map(|t| &t.path)
                            .eq(sys.targets.iter().map(|t| &t.path))
                })
            })
            .map(|x| x.summary.run_index.to_string())
            .collect();
        let _ = writeln!(
            h,
            "<p class=\"meta\">As captured at the start of run {} (applies to runs {}).</p>",
            r.summary.run_index,
            same.join(", ")
        );
        system_section(h, sys);
    }
    if shown.is_empty() {
        h.push_str("<p class=\"warning\">No system capture was stored with these runs.</p>\n");
    }
}

/// What the sessions used (connections, memory...), target by target.
fn sessions_used(h: &mut String, runs: &[StoredRun]) {
    let summaries: Vec<_> = runs.iter().map(|r| &r.summary).collect();
    let used = crate::table::session_used_rows(&summaries);
    if !used.is_empty() {
        h.push_str("<h3>What the sessions used</h3><table><thead><tr><th>target</th><th>what</th><th>used</th><th>runs</th></tr></thead><tbody>\n");
        for [t, k, v, r] in &used {
            let _ = writeln!(
                h,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(t),
                esc(k),
                esc(v),
                esc(r)
            );
        }
        h.push_str("</tbody></table>\n");
    }
}

/// Every run: its step, parameters, targets and workload, bounds and folder.
fn runs_table(h: &mut String, runs: &[StoredRun]) {
    h.push_str("<h3>Runs</h3><table><thead><tr><th>run</th><th>run id</th><th>step</th><th>parameters</th><th>repetition</th><th>targets and workload</th><th>warm-up</th><th>measured</th><th>ended by</th><th>started</th><th>folder</th></tr></thead><tbody>\n");
    for r in runs {
        let s = &r.summary;
        let tw: Vec<String> = s
            .targets
            .iter()
            .enumerate()
            .map(|(i, t)| {
                format!(
                    "{}: {}",
                    t.name,
                    r.workload_json(i).map(workload_text).unwrap_or_default()
                )
            })
            .collect();
        let _ = writeln!(
            h,
            "<tr><td class=\"n\">{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"n\">{}</td><td>{}</td><td class=\"n\">{:.1} s</td><td class=\"n\">{:.2} s</td><td>{:?}</td><td>{}</td><td><code>{}</code></td></tr>",
            s.run_index,
            esc(&s.run_id),
            esc(&s.step),
            esc(&params_text(&s.parameters)),
            s.repetition,
            esc(&tw.join("; ")),
            s.warmup_seconds,
            s.measured_seconds,
            s.end_reason,
            esc(&s.started_at),
            esc(&r.folder.display().to_string())
        );
    }
    h.push_str("</tbody></table>\n");
}

/// Each distinct study file as run.
fn study_files(h: &mut String, runs: &[StoredRun]) {
    let mut texts: Vec<&str> = Vec::new();
    for r in runs {
        if let Some(t) = r.study_text.as_deref().filter(|t| !texts.contains(t)) {
            texts.push(t);
        }
    }
    for t in texts {
        let _ = writeln!(
            h,
            "<h3>Study file as run</h3><pre class=\"study\">{}</pre>",
            esc(t)
        );
    }
}
