//! The "Verified data" tables of the reports: per run and target whose workload had
//! `verify = true`, the blocks (block workloads) or keys (ycsb workloads) read back in each
//! class and the first offsets or keys of each damaged class, from the stored summaries.

use std::fmt::Write;

use storlab_results::summary::RunSummary;
use storlab_verify::kv::{KvClass, KvVerifyReport};
use storlab_verify::{Verified, VerifyClass, VerifyReport};

/// (run index, step, target, report) of every verify pass in `summaries`: those after each
/// run, then those of `verify` events (named `TARGET (event NAME)`).
fn all_passes(summaries: &[&RunSummary]) -> Vec<(usize, String, String, Verified)> {
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
                    format!("{} (event {})", v.target(), o.name),
                    v.clone(),
                ))
            });
            after_run.chain(events)
        })
        .collect()
}

/// The block passes.
fn passes(summaries: &[&RunSummary]) -> Vec<(usize, String, String, VerifyReport)> {
    all_passes(summaries)
        .into_iter()
        .filter_map(|(r, s, t, v)| match v {
            Verified::Block(b) => Some((r, s, t, b)),
            Verified::KeyValue(_) => None,
        })
        .collect()
}

/// The key-value passes.
fn kv_passes(summaries: &[&RunSummary]) -> Vec<(usize, String, String, KvVerifyReport)> {
    all_passes(summaries)
        .into_iter()
        .filter_map(|(r, s, t, v)| match v {
            Verified::KeyValue(k) => Some((r, s, t, k)),
            Verified::Block(_) => None,
        })
        .collect()
}

const KV_HEAD: &str = "run | step | target | keys acknowledged | keys checked | lost writes | intact | lost | missing | corrupt | unreadable | newer than acknowledged | read back (keys/s, s) | first keys of damaged classes";

fn kv_cells(run: usize, step: &str, target: &str, v: &KvVerifyReport) -> Vec<String> {
    let mut c = vec![
        run.to_string(),
        step.to_string(),
        target.to_string(),
        v.keys_acknowledged.to_string(),
        v.keys_checked.to_string(),
        v.lost_writes().to_string(),
    ];
    for class in KvClass::ALL {
        c.push(v.class(class).keys.to_string());
    }
    c.push(v.newer_than_acknowledged.to_string());
    c.push(format!("{:.0} keys/s, {:.2} s", v.rate_keys, v.seconds));
    c.push(
        KvClass::ALL[1..]
            .iter()
            .filter(|k| v.class(**k).keys > 0)
            .map(|k| format!("{}: {}", k.name(), v.class(*k).first_keys.join(" ")))
            .collect::<Vec<_>>()
            .join("; "),
    );
    c
}

const KV_ABOUT: &str = "After each ycsb run with <code>verify = true</code>, every key with an acknowledged write (keys acknowledged) was read back (keys checked) and classified; lost writes are lost plus missing keys, acknowledged writes the store does not hold (a failure of the run, unless its study declares them expected with <code>verify-expect</code>, as one losing a Redis Cluster master whose replication is asynchronous does). Classes: intact (a write not overtaken by a later acknowledged one); lost (an older write: a lost update); missing (the key is gone); corrupt (a stamp whose checksum, key or format does not match); unreadable (the read failed). The read-back is not part of any latency figure.";

const DAMAGE: [VerifyClass; 7] = [
    VerifyClass::LostDurable,
    VerifyClass::LostUnsynced,
    VerifyClass::LostWhileUp,
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

const HEAD: &str = "run | step | target | blocks checked | intact | lost-durable | lost-unsynced | lost-while-up | torn | misplaced | foreign | unreadable | read back (MB/s, s) | first offsets of damaged blocks (bytes)";

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
    let esc = crate::svg::esc;
    let rows = passes(summaries);
    let kv_rows = kv_passes(summaries);
    if rows.is_empty() && kv_rows.is_empty() {
        return;
    }
    h.push_str("<section id=\"verify\"><h2>Verified data</h2>");
    if !kv_rows.is_empty() {
        let _ = write!(h, "<p>{KV_ABOUT}</p><table><thead><tr>");
        for head in KV_HEAD.split(" | ") {
            let _ = write!(h, "<th>{}</th>", esc(head));
        }
        h.push_str("</tr></thead><tbody>\n");
        for (run, step, target, v) in &kv_rows {
            h.push_str(if v.damaged() > 0 {
                "<tr class=\"warning\">"
            } else {
                "<tr>"
            });
            for c in kv_cells(*run, step, target, v) {
                let _ = write!(h, "<td>{}</td>", esc(&c));
            }
            h.push_str("</tr>\n");
        }
        h.push_str("</tbody></table>");
    }
    if rows.is_empty() {
        h.push_str("</section>\n");
        return;
    }
    h.push_str("<p>After each run with <code>verify = true</code>, every block whose last acknowledged generation storlab knows was read back and classified: intact; lost (an older generation than acknowledged: durable, after an fsync had completed; unsynced, not yet synced when a crash or power-off came; while up, not yet synced and no crash came, which the storage may not do); torn (checksum mismatch); misplaced (another offset's or target's block); foreign (no storlab header); unreadable (I/O error). The read-back is not part of any latency figure.</p><table><thead><tr>");
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
    let kv_rows = kv_passes(summaries);
    if rows.is_empty() && kv_rows.is_empty() {
        return;
    }
    out.push_str("\n## Verified data\n");
    if !kv_rows.is_empty() {
        out.push_str("\nKeys read back after each ycsb run with `verify = true`, per class.\n\n| ");
        out.push_str(KV_HEAD);
        out.push_str(" |\n|");
        out.push_str(&"---|".repeat(KV_HEAD.split(" | ").count()));
        out.push('\n');
        for (run, step, target, v) in &kv_rows {
            out.push_str("| ");
            out.push_str(&kv_cells(*run, step, target, v).join(" | "));
            out.push_str(" |\n");
        }
    }
    if rows.is_empty() {
        return;
    }
    out.push_str("\nBlocks read back after each run with `verify = true`, per class.\n\n| ");
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
    use storlab_results::summary::TargetResult;

    #[test]
    fn damaged_blocks_show_with_their_class_and_offsets() {
        let mut v = VerifyReport {
            target: "ssd".into(),
            ..Default::default()
        };
        v.add(VerifyClass::Intact, 0);
        v.add(VerifyClass::Torn, 8192);
        let mut s = storlab_results::fixtures::summary(1, "w", &[], &[]);
        s.targets = vec![TargetResult {
            name: "ssd".into(),
            verify: Some(Verified::Block(v)),
            ..Default::default()
        }];
        let mut h = String::new();
        html_section(&mut h, &[&s]);
        assert!(h.contains("torn: 8192"), "{h}");
        let mut m = String::new();
        markdown_section(&mut m, &[&s]);
        assert!(m.contains("| 1 | w | ssd | 2 | 1 | 0 | 0 | 0 | 1 |"), "{m}");
    }

    #[test]
    fn lost_and_missing_keys_show_with_their_class_and_keys() {
        let mut v = KvVerifyReport {
            target: "redis".into(),
            ..Default::default()
        };
        v.add(KvClass::Intact, "user1");
        v.add(KvClass::Missing, "user2");
        v.add(KvClass::Lost, "user3");
        let mut s = storlab_results::fixtures::summary(1, "w", &[], &[]);
        s.targets = vec![TargetResult {
            name: "redis".into(),
            verify: Some(Verified::KeyValue(v)),
            ..Default::default()
        }];
        let mut h = String::new();
        html_section(&mut h, &[&s]);
        assert!(h.contains("lost: user3; missing: user2"), "{h}");
        assert!(h.contains("<tr class=\"warning\">"), "{h}");
        let mut m = String::new();
        markdown_section(&mut m, &[&s]);
        assert!(
            m.contains("| 1 | w | redis | 0 | 3 | 2 | 1 | 1 | 1 | 0 | 0 | 0 |"),
            "{m}"
        );
        assert!(!m.contains("Blocks read back"), "{m}");
    }
}
