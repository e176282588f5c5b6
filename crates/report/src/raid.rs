//! The RAID efficiency table as the reports show it (terminal, Markdown, HTML): the brief's
//! columns "workload | total raw (measured) | theoretical RAID (calculated) | real RAID
//! (measured) | efficiency", plus the I/O-count model beside and the operations each side
//! kept in flight, from a stored `raid.json`; below it, the rules of the theoretical column,
//! each side's load spelled out, and a warning for every row whose loads differ; and
//! for each run in which a member failed or a rebuild ran, or the node serving the array's
//! export was lost and another took over, the throughput phase by phase, the events'
//! durations, the outage and recovery the clients saw, and the verify pass.

use crate::table::{Cell, Table, TableRow, render, thousands};
use storlab_model::raid::Pattern;
use storlab_results::raid::MOST_EFFICIENCY;
use storlab_results::raid::failure::FailureKind;
use storlab_results::{raid::FailureRun, raid::Table as RaidTable};

fn figure(pattern: Pattern, rate: f64) -> Cell {
    if !rate.is_finite() {
        return Cell {
            shown: "-".into(),
            value: None,
        };
    }
    let shown = if pattern.in_bytes() {
        format!("{} MB/s", thousands(rate / 1e6))
    } else {
        format!("{} IOPS", thousands(rate))
    };
    Cell {
        shown,
        value: Some(rate),
    }
}

fn share(f: f64) -> Cell {
    if !f.is_finite() {
        return Cell {
            shown: "-".into(),
            value: None,
        };
    }
    // More than the members allow: a cache answered (the caption's warning says which row).
    let mark = if f > MOST_EFFICIENCY {
        " (cached: not an efficiency)"
    } else {
        ""
    };
    Cell {
        shown: format!("{:.0}%{mark}", f * 100.0),
        value: Some(f),
    }
}

/// The table model of the efficiency table.
pub fn table(t: &RaidTable) -> Table {
    let columns = [
        ("workload", false),
        ("total raw (measured)", true),
        ("theoretical RAID (calculated)", true),
        ("real RAID (measured)", true),
        ("efficiency", true),
        ("I/O-count model", true),
        ("efficiency (model)", true),
        ("in flight (raw / real)", false),
    ];
    Table {
        columns: columns
            .iter()
            .map(|(n, numeric)| (n.to_string(), *numeric))
            .collect(),
        rows: t
            .rows
            .iter()
            .map(|r| TableRow {
                keys: vec![("pattern", format!("{:?}", r.pattern).to_lowercase())],
                cells: vec![
                    Cell {
                        shown: r.pattern.label().to_string(),
                        value: None,
                    },
                    figure(r.pattern, r.raw_rate),
                    figure(r.pattern, r.theoretical_rate),
                    figure(r.pattern, r.real_rate),
                    share(r.efficiency),
                    figure(r.pattern, r.model_rate),
                    share(r.model_efficiency),
                    Cell {
                        shown: format!("{} / {}", r.raw.load.in_flight, r.real.load.in_flight),
                        value: None,
                    },
                ],
            })
            .collect(),
    }
}

/// The rule of `pattern`'s row, if it has one.
fn rule(t: &RaidTable, pattern: Pattern) -> Option<&str> {
    t.rows
        .iter()
        .find(|r| r.pattern == pattern)
        .map(|r| r.theoretical_rule.as_str())
}

/// One line on the geometry and the rules, the loads of both sides, then warnings and notes
/// on what is missing.
pub fn caption(t: &RaidTable) -> String {
    let g = &t.geometry;
    let strip = g
        .strip_bytes
        .map(|b| format!(", strip {}", storlab_model::units::format_bytes(b)))
        .unwrap_or_default();
    let mut s = format!(
        "{} of {} members ({}){strip}, array `{}`. Raw: all members driven at once, summed. \
         Theoretical: the brief's rules (reads = sum; sequential write = {}; random write = {}). \
         A sequential write of at least a stripe (strip x data members) is full-stripe: the \
         data share of the members' write rate; a smaller one is read-modify-write, R member \
         reads and W member writes of its size (RAID 5: 2 + 2, RAID 6: 3 + 3): \
         1 / (R / seq read sum + W / seq write sum). Efficiency = real / theoretical.",
        g.level.name(),
        g.members.len(),
        g.members.join(", "),
        g.array,
        rule(t, Pattern::SequentialWrite).unwrap_or("not measured"),
        t.rows
            .iter()
            .find(|r| r.pattern == Pattern::RandomWrite)
            .map(|r| format!("{}; I/O-count model: {}", r.theoretical_rule, r.model_rule))
            .unwrap_or_else(|| "not measured".into()),
    );
    s.push_str(&loads(t));
    for w in &t.warnings {
        s.push_str(&format!("\nWarning: {w}."));
    }
    for m in &t.missing {
        s.push_str(&format!("\nNo complete row: {m}."));
    }
    for r in &t.rows {
        for (side, what) in [(&r.raw, "raw"), (&r.real, "real")] {
            if side.errors > 0 || side.incomplete {
                s.push_str(&format!(
                    "\n{} ({what}, step {}): {} errors{}.",
                    r.pattern.label(),
                    side.step,
                    side.errors,
                    if side.incomplete {
                        ", incomplete run"
                    } else {
                        ""
                    }
                ));
            }
        }
    }
    s
}

/// The outstanding I/O of both sides, one line per distinct pair of loads (with the rows it
/// holds for), e.g. "Outstanding I/O (all rows): raw 6 members x 1 thread x QD 32 = 192 in
/// flight; array 6 threads x QD 32 = 192 in flight (equal)."
fn loads(t: &RaidTable) -> String {
    let mut lines: Vec<(String, Vec<String>)> = Vec::new();
    for r in &t.rows {
        let equal = if r.raw.load.in_flight == r.real.load.in_flight {
            "equal"
        } else {
            "UNEQUAL"
        };
        let line = format!(
            "raw {}; array {} ({equal})",
            r.raw.load.text("member"),
            r.real.load.text("array")
        );
        let label = r.pattern.label().to_lowercase();
        match lines.iter_mut().find(|(l, _)| *l == line) {
            Some((_, rows)) => rows.push(label),
            None => lines.push((line, vec![label])),
        }
    }
    let mut s = String::new();
    for (line, rows) in &lines {
        let which = if rows.len() == t.rows.len() {
            "all rows".to_string()
        } else {
            rows.join(", ")
        };
        s.push_str(&format!("\nOutstanding I/O ({which}): {line}."));
    }
    s
}

/// A failure run's title, its phases as a table, and its events and verify pass as lines.
pub struct FailureSection {
    pub title: String,
    pub phases: Table,
    pub caption: String,
}

/// One section per run on the array during which events ran (a member failed, a rebuild).
pub fn failure_sections(t: &RaidTable) -> Vec<FailureSection> {
    t.failures.iter().map(failure_section).collect()
}

fn failure_section(f: &FailureRun) -> FailureSection {
    let columns = [
        ("phase", false),
        ("from s", true),
        ("to s", true),
        ("real RAID (measured)", true),
        ("errors", true),
    ];
    let rows = f
        .phases
        .iter()
        .map(|p| TableRow {
            keys: vec![("from", format!("{:.3}", p.from_seconds))],
            cells: vec![
                Cell {
                    shown: format!("{} to {}", p.from, p.to),
                    value: None,
                },
                Cell {
                    shown: format!("{:.3}", p.from_seconds),
                    value: Some(p.from_seconds),
                },
                Cell {
                    shown: format!("{:.3}", p.to_seconds),
                    value: Some(p.to_seconds),
                },
                Cell {
                    shown: format!("{} IOPS", thousands(p.rate_ops)),
                    value: Some(p.rate_ops),
                },
                Cell {
                    shown: p.errors.to_string(),
                    value: Some(p.errors as f64),
                },
            ],
        })
        .collect();
    let through = match f.kind {
        FailureKind::MemberFailure => String::new(),
        FailureKind::NodeFailover => format!(
            " Target `{}`: the array's filesystem through its export, served by one node, then \
             by the other.",
            f.target
        ),
    };
    let mut caption = format!(
        "Step {} (run {}), workload {}: {} IOPS over the whole run, {} failed operations. \
         Phases split at the events, on timeline interval edges.{through}",
        f.step,
        f.run_index,
        f.workload,
        thousands(f.rate_ops),
        f.errors
    );
    for e in &f.events {
        caption.push_str(&format!(
            "\nEvent `{}` ({}): {} at {:.3} s, took {:.3} s.",
            e.name, e.action, e.status, e.start_seconds, e.duration_seconds
        ));
        for line in e.output.lines().filter(|l| !l.trim().is_empty()) {
            caption.push_str(&format!("\n`{}` printed: {}", e.name, line.trim_end()));
        }
    }
    for r in &f.recovery {
        caption.push_str(&format!(
            "\nRecovery after `{}` {}.",
            r.event,
            crate::events::recovery_summary(r)
        ));
    }
    match &f.verify {
        Some(v) => caption.push_str(&format!(
            "\nVerify pass after the run: {} blocks checked, {} intact, {} lost (acknowledged \
             writes not found: {} synced before they were lost, {} not yet synced when a power-off \
             or SIGKILL came, {} with no crash), {} torn, {} misplaced, {} foreign, {} unreadable; \
             {} not checked (their last write failed).",
            v.checked,
            v.intact,
            v.lost,
            v.lost_durable,
            v.lost_unsynced,
            v.lost_while_up,
            v.torn,
            v.misplaced,
            v.foreign,
            v.unreadable,
            v.not_checked_failed_writes
        )),
        None => caption
            .push_str("\nNo verify pass: the workload did not verify its writes (verify = true)."),
    }
    FailureSection {
        title: format!("{}: {}", f.kind.title(), f.step),
        phases: Table {
            columns: columns
                .iter()
                .map(|(n, numeric)| (n.to_string(), *numeric))
                .collect(),
            rows,
        },
        caption,
    }
}

fn render_table(m: &Table) -> String {
    let header: Vec<&str> = m.columns.iter().map(|(n, _)| n.as_str()).collect();
    let rows: Vec<Vec<String>> = m
        .rows
        .iter()
        .map(|r| r.cells.iter().map(|c| c.shown.clone()).collect())
        .collect();
    render(&header, &rows)
}

/// The tables for the terminal.
pub fn text(t: &RaidTable) -> String {
    let mut s = format!(
        "RAID efficiency\n{}\n{}",
        render_table(&table(t)),
        caption(t)
    );
    for f in failure_sections(t) {
        s.push_str(&format!(
            "\n\n{}\n{}\n{}",
            f.title,
            render_table(&f.phases),
            f.caption
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use storlab_model::{raid::Geometry, raid::Level};
    use storlab_results::{raid::Row, raid::Side};

    #[test]
    fn rows_show_units_and_efficiency() {
        let side = |rate_ops, rate_bytes| Side {
            step: "s".into(),
            parameters: String::new(),
            rate_ops,
            rate_bytes,
            errors: 0,
            incomplete: false,
            load: storlab_results::raid::Load {
                targets: 4,
                threads: 4,
                threads_per_target: Some(1),
                queue_depth: Some(32),
                in_flight: 128,
                block_bytes: Some(4096),
            },
        };
        let t = RaidTable {
            geometry: Geometry {
                level: Level::Raid6,
                members: vec!["a".into(), "b".into(), "c".into(), "d".into()],
                array: "r".into(),
                strip_bytes: Some(65536),
                array_load: Default::default(),
                exports: Vec::new(),
            },
            rows: vec![Row {
                pattern: Pattern::RandomWrite,
                unit: "ops-per-second".into(),
                raw: side(4000.0, 0.0),
                real: side(900.0, 0.0),
                raw_rate: 4000.0,
                theoretical_rate: 1000.0,
                theoretical_rule: "sum / 4".into(),
                model_rate: f64::NAN,
                model_rule: "not computed".into(),
                real_rate: 900.0,
                efficiency: 0.9,
                model_efficiency: f64::NAN,
            }],
            missing: vec!["random read: not measured on the array (r)".into()],
            warnings: vec!["random write: unequal load, the array kept 32".into()],
            failures: Vec::new(),
        };
        let s = text(&t);
        assert!(s.contains("4,000 IOPS"), "{s}");
        assert!(s.contains("1,000 IOPS"), "{s}");
        assert!(s.contains("90%"), "{s}");
        assert!(s.contains("RAID 6 of 4 members"), "{s}");
        assert!(s.contains("No complete row: random read"), "{s}");
        assert!(
            s.contains(
                "Outstanding I/O (all rows): raw 4 members x 1 thread x QD 32 = 128 in flight"
            ),
            "{s}"
        );
        assert!(s.contains("Warning: random write: unequal load"), "{s}");
        assert!(s.contains("sequential write = not measured"), "{s}");
        let md = table(&t).markdown();
        assert!(md.contains("| 128 / 128 |"), "{md}");
        assert!(md.contains("| Random write | 4,000 IOPS |"), "{md}");
    }
}
