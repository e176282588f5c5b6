//! The "Verified data" table of the reports: per run and target whose workload had
//! `verify = true`, the blocks read back in each class and the first offsets of each
//! damaged class, from the stored summaries.

use std::fmt::Write;

use crate::results::summary::RunSummary;
use crate::verify::{VerifyClass, VerifyReport};

/// (run index, step, report) of every verify pass in `summaries`.
/// The passes after each run, then those of `verify` events (named `TARGET (event NAME)`).
fn passes(summaries: &[&RunSummary]) -> Vec<(usize, String, String, VerifyReport)> {
    summaries
        .iter()
        .flat_map(|s| {
            let after_run = s.targets.iter().filter_map(move |t| {
                t.verify
                    .clone()
                    .map(|v| (s.run_index, s.step.clone(), t.name.clone(), v))
            });
            let events = s.events.iter().filter_map(move |e| {
                let o = e.outcome.as_ref()?;
                let v = o.verify.as_deref()?;
                Some((
                    s.run_index,
                    s.step.clone(),
                    format!("{} (event {})", v.target, o.name),
                    v.clone(),
                ))
            });
            after_run.chain(events)
        })
        .collect()
}

const DAMAGE: [VerifyClass; 6] = [
    VerifyClass::LostDurable,
    VerifyClass::LostUnsynced,
    VerifyClass::Torn,
    VerifyClass::Misplaced,
    VerifyClass::Foreign,
    VerifyClass::Unreadable,
];

fn first_offsets(v: &VerifyReport) -> String {
    DAMAGE
        .iter()
        .filter(|c| v.class(**c).blocks > 0)
        .map(|c| {
            let offs: Vec<String> = v
                .class(*c)
                .first_offsets
                .iter()
                .map(|o| o.to_string())
                .collect();
            format!("{}: {}", c.name(), offs.join(" "))
        })
        .collect::<Vec<_>>()
        .join("; ")
}

const HEAD: &str = "run | step | target | blocks checked | intact | lost-durable | lost-unsynced | torn | misplaced | foreign | unreadable | read back (MB/s, s) | first offsets of damaged blocks (bytes)";

fn cells(run: usize, step: &str, target: &str, v: &VerifyReport) -> Vec<String> {
    let mut c = vec![
        run.to_string(),
        step.to_string(),
        target.to_string(),
        v.blocks_checked.to_string(),
    ];
    for class in VerifyClass::ALL {
        c.push(v.class(class).blocks.to_string());
    }
    c.push(format!(
        "{:.1} MB/s, {:.2} s",
        v.rate_bytes / 1e6,
        v.seconds
    ));
    c.push(first_offsets(v));
    c
}

/// The HTML section, or nothing when no run verified its writes.
pub fn html_section(h: &mut String, summaries: &[&RunSummary]) {
    let esc = crate::report::svg::esc;
    let rows = passes(summaries);
    if rows.is_empty() {
        return;
    }
    h.push_str("<section id=\"verify\"><h2>Verified data</h2><p>After each run with <code>verify = true</code>, every block whose last acknowledged generation storlab knows was read back and classified: intact; lost (an older generation than acknowledged: durable, after an fsync had completed, or unsynced); torn (checksum mismatch); misplaced (another offset's or target's block); foreign (no storlab header); unreadable (I/O error). The read-back is not part of any latency figure.</p><table><thead><tr>");
    for head in HEAD.split(" | ") {
        let _ = write!(h, "<th>{}</th>", esc(head));
    }
    h.push_str("</tr></thead><tbody>\n");
    for (run, step, target, v) in &rows {
        let damaged = v.damaged() > 0;
        h.push_str(if damaged {
            "<tr class=\"warning\">"
        } else {
            "<tr>"
        });
        for c in cells(*run, step, target, v) {
            let _ = write!(h, "<td>{}</td>", esc(&c));
        }
        h.push_str("</tr>\n");
    }
    h.push_str("</tbody></table></section>\n");
}

/// The Markdown section, or nothing when no run verified its writes.
pub fn markdown_section(out: &mut String, summaries: &[&RunSummary]) {
    let rows = passes(summaries);
    if rows.is_empty() {
        return;
    }
    out.push_str("\n## Verified data\n\nBlocks read back after each run with `verify = true`, per class.\n\n| ");
    out.push_str(HEAD);
    out.push_str(" |\n|");
    out.push_str(&"---|".repeat(HEAD.split(" | ").count()));
    out.push('\n');
    for (run, step, target, v) in &rows {
        out.push_str("| ");
        out.push_str(&cells(*run, step, target, v).join(" | "));
        out.push_str(" |\n");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::summary::TargetResult;

    #[test]
    fn damaged_blocks_show_with_their_class_and_offsets() {
        let mut v = VerifyReport {
            target: "ssd".into(),
            ..Default::default()
        };
        v.add(VerifyClass::Intact, 0);
        v.add(VerifyClass::Torn, 8192);
        let mut s = crate::results::comparison::tests::summary(1, "w", &[], &[]);
        s.targets = vec![TargetResult {
            name: "ssd".into(),
            verify: Some(v),
            ..Default::default()
        }];
        let mut h = String::new();
        html_section(&mut h, &[&s]);
        assert!(h.contains("torn: 8192"), "{h}");
        let mut m = String::new();
        markdown_section(&mut m, &[&s]);
        assert!(m.contains("| 1 | w | ssd | 2 | 1 | 0 | 0 | 1 |"), "{m}");
    }
}
