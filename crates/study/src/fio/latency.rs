//! fio's latency-target options: `latency_target`, `latency_window` (both fio times whose
//! plain numbers are microseconds), `latency_percentile` (default 100) and `latency_run`.
//! They become the workload's `latency-target` (see [`storlab_model::latency_target`]): each
//! clone searches from depth 1 up to its `iodepth`, as fio.

use std::time::Duration;

use super::job::{Job, LatencyOptions};
use super::parse::{Entry, parse_bool, parse_time};

/// A fio time whose plain number is microseconds (fio's `is_time` options such as
/// `latency_target`: `500` is 500 µs, `5ms` 5 ms).
fn micros_default(v: &str) -> Result<Duration, String> {
    let t = v.trim();
    if !t.is_empty() && t.chars().all(|c| c.is_ascii_digit()) {
        return t
            .parse::<u64>()
            .map(Duration::from_micros)
            .map_err(|_| format!("`{v}` is too long"));
    }
    parse_time(t)
}

/// Applies one latency-target option (`canonical` is fio's name). False when it is none.
pub fn apply_latency(job: &mut Job, e: &Entry, canonical: &str) -> Result<bool, String> {
    let value = || {
        e.value
            .as_deref()
            .ok_or_else(|| format!("option `{}` needs a value", e.name))
    };
    let l = &mut job.latency;
    match canonical {
        "latency_target" => {
            let v = value()?;
            let d = micros_default(v).map_err(|m| format!("{}={v}: {m}", e.name))?;
            l.target = (!d.is_zero()).then_some(d);
        }
        "latency_window" => {
            let v = value()?;
            l.window = micros_default(v).map_err(|m| format!("{}={v}: {m}", e.name))?;
        }
        "latency_percentile" => {
            let v = value()?;
            let p: f64 = v
                .trim()
                .parse()
                .map_err(|_| format!("{}={v}: not a number", e.name))?;
            // fio's range for it: 0 to 100.
            if !(0.0..=100.0).contains(&p) {
                return Err(format!("{}={v}: between 0 and 100", e.name));
            }
            l.percentile = Some(p);
        }
        "latency_run" => {
            l.keep_adjusting = parse_bool(e.value.as_deref())
                .map_err(|m| format!("{}={}: {m}", e.name, e.value.as_deref().unwrap_or("")))?;
        }
        _ => return Ok(false),
    }
    Ok(true)
}

impl LatencyOptions {
    /// The workload's `latency-target` table, when the job has a target.
    pub fn workload_table(&self) -> Option<toml::Table> {
        let target = self.target?;
        let mut t = toml::Table::new();
        t.insert("target".into(), format!("{}us", target.as_micros()).into());
        t.insert(
            "window".into(),
            format!("{}us", self.window.as_micros()).into(),
        );
        t.insert("percentile".into(), self.percentile.unwrap_or(100.0).into());
        if self.keep_adjusting {
            t.insert("keep-adjusting".into(), true.into());
        }
        Some(t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(lines: &str) -> Result<Job, String> {
        let text = format!("[a]\n{lines}");
        let (_, jobs, _) =
            super::super::from_text("t.fio", &text, &|_| None).map_err(|e| e[0].message.clone())?;
        Ok(jobs.into_iter().next().expect("one job"))
    }

    #[test]
    fn plain_numbers_are_microseconds_and_units_are_taken() {
        let j =
            job("latency_target=500\nlatency_window=2s\nlatency_percentile=99.5\n").expect("taken");
        assert_eq!(j.latency.target, Some(Duration::from_micros(500)));
        assert_eq!(j.latency.window, Duration::from_secs(2));
        assert_eq!(j.latency.percentile, Some(99.5));
        let t = j.latency.workload_table().expect("a target");
        assert_eq!(t["target"].as_str(), Some("500us"));
        assert_eq!(t["window"].as_str(), Some("2000000us"));
        let j = job("latency_target=2ms\nlatency_run=1\n").expect("taken");
        assert_eq!(j.latency.target, Some(Duration::from_millis(2)));
        assert!(j.latency.keep_adjusting);
        assert!(
            job("latency_window=5\n")
                .expect("taken")
                .latency
                .workload_table()
                .is_none()
        );
    }

    #[test]
    fn a_percentile_out_of_range_is_refused() {
        let e = job("latency_target=1ms\nlatency_percentile=101\n").expect_err("refused");
        assert!(e.contains("between 0 and 100"), "{e}");
        assert!(job("latency_target=x\n").is_err());
    }
}
