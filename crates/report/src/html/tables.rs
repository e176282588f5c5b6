//! The HTML report's tables: any [`Table`] of the one table model (the results per run,
//! target and kind; the combined points of repetitions), and the efficiency tables (client CPU
//! per run, each series' ops/s as a share of the best).

use std::fmt::Write;

use crate::html::params_text;
use crate::model::Group;
use crate::svg::{self, esc};
use crate::table::{Table, thousands};
use storlab_results::stored::StoredRun;

/// A numeric cell carrying the stored value (`data-value`) and showing it formatted.
fn num_cell(shown: &str, value: f64) -> String {
    format!(
        r#"<td class="n" data-value="{}">{}</td>"#,
        svg::num_attr(value),
        esc(shown)
    )
}

/// A table of the table model: figures carry their stored value (`data-value`), rows their
/// keys (`data-run`, `data-target`...).
pub fn table_html(t: &Table, class: &str) -> String {
    let mut h = format!("<table class=\"{class}\"><thead><tr>");
    for (name, _) in &t.columns {
        let _ = write!(h, "<th>{}</th>", esc(name));
    }
    h.push_str("</tr></thead><tbody>\n");
    for r in &t.rows {
        h.push_str("<tr");
        for (k, v) in &r.keys {
            let _ = write!(h, " data-{k}=\"{}\"", esc(v));
        }
        h.push('>');
        for (c, (_, numeric)) in r.cells.iter().zip(&t.columns) {
            match c.value {
                Some(v) => h.push_str(&num_cell(&c.shown, v)),
                None if *numeric => {
                    let _ = write!(h, "<td class=\"n\">{}</td>", esc(&c.shown));
                }
                None => {
                    let _ = write!(h, "<td>{}</td>", esc(&c.shown));
                }
            }
        }
        h.push_str("</tr>\n");
    }
    h.push_str("</tbody></table>");
    h
}

/// Client efficiency per run, and each series' ops/s as a share of the best at each point.
pub fn efficiency_table(h: &mut String, g: &Group, runs: &[StoredRun]) {
    h.push_str("<h4>Efficiency</h4><table class=\"efficiency\"><thead><tr><th>run</th><th>parameters</th><th>ops/s (all targets)</th><th>client CPUs busy</th><th>ops/s per client CPU</th><th>busiest worker on CPU</th></tr></thead><tbody>\n");
    for &ri in &g.runs {
        let s = &runs[ri].summary;
        let per_cpu = if s.client.cpu_cores_used > 0.0 {
            s.total.rate_ops / s.client.cpu_cores_used
        } else {
            0.0
        };
        let _ = writeln!(
            h,
            "<tr><td class=\"n\">{}</td><td>{}</td>{}{}{}{}</tr>",
            s.run_index,
            esc(&params_text(&s.parameters)),
            num_cell(&thousands(s.total.rate_ops), s.total.rate_ops),
            num_cell(
                &format!(
                    "{:.2} of {}",
                    s.client.cpu_cores_used, s.client.logical_cpus
                ),
                s.client.cpu_cores_used
            ),
            num_cell(&thousands(per_cpu), per_cpu),
            num_cell(
                &format!("{:.0}%", s.client.worker_busy_max * 100.0),
                s.client.worker_busy_max
            ),
        );
    }
    h.push_str("</tbody></table>\n");
    if g.series.len() > 1 {
        h.push_str("<table class=\"relative\"><thead><tr><th>");
        h.push_str(&esc(g.x_param.as_deref().unwrap_or("point")));
        h.push_str("</th>");
        for s in &g.series {
            let _ = write!(h, "<th>{} (% of best)</th>", esc(s));
        }
        h.push_str("</tr></thead><tbody>\n");
        for x in &g.x_values {
            let best = g
                .series
                .iter()
                .filter_map(|s| g.point(x, s))
                .map(|p| p.figures.rate_ops)
                .fold(0.0, f64::max);
            let _ = write!(h, "<tr><td>{}</td>", esc(x));
            for s in &g.series {
                match g.point(x, s) {
                    Some(p) if best > 0.0 => {
                        let share = p.figures.rate_ops / best * 100.0;
                        h.push_str(&num_cell(&format!("{share:.0}%"), share));
                    }
                    _ => h.push_str("<td>-</td>"),
                }
            }
            h.push_str("</tr>\n");
        }
        h.push_str("</tbody></table>\n");
    }
}
