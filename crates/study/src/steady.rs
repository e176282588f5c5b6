//! Steady state, as fio (`ss`, `ss_dur`, `ss_ramp`) and SNIA's PTS define it: a step's keys
//! `steady-state` (fio's `ss=` syntax: `iops:10%`, `iops_slope:0.1%`, `bw:5%`, `bw_slope:1MiB`),
//! `steady-state-seconds` (the sliding window judged every interval) and
//! `steady-state-ramp-seconds` (measured data before it is ignored). This file parses and
//! checks them; `run::steady` applies the criterion to the run's intervals as they complete.
//! [`parse_steady_state`] is public so that fio job files map their `ss=` onto it unchanged.

use std::fmt;

use serde::{Serialize, Serializer};
use toml::Spanned;

use super::{Source, StudyError};
use storlab_model::units::Dur;

/// What is judged: the run's operations or bytes per second, by their spread around the
/// window's mean or by the least-squares slope of the window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SteadyMetric {
    /// Every sample of the window within the limit of the window's mean ops/s.
    Iops,
    /// The least-squares slope of the window's ops/s (per second) within the limit.
    IopsSlope,
    /// As `Iops`, on bytes per second.
    Bw,
    /// As `IopsSlope`, on bytes per second.
    BwSlope,
}

impl SteadyMetric {
    /// fio's name.
    pub fn name(self) -> &'static str {
        match self {
            SteadyMetric::Iops => "iops",
            SteadyMetric::IopsSlope => "iops_slope",
            SteadyMetric::Bw => "bw",
            SteadyMetric::BwSlope => "bw_slope",
        }
    }

    pub fn is_slope(self) -> bool {
        matches!(self, SteadyMetric::IopsSlope | SteadyMetric::BwSlope)
    }

    pub fn is_bytes(self) -> bool {
        matches!(self, SteadyMetric::Bw | SteadyMetric::BwSlope)
    }

    /// The unit of a sample, as the results write it.
    pub fn unit(self) -> &'static str {
        if self.is_bytes() { "bytes/s" } else { "ops/s" }
    }
}

/// The limit the criterion must stay below.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SteadyLimit {
    /// A percentage of the window's mean (`10%`).
    Percent(f64),
    /// An absolute value: ops/s for `iops`, bytes/s for `bw` (per second for the slopes).
    Absolute(f64),
}

/// A steady-state criterion: `iops:10%` and the like.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SteadyState {
    pub metric: SteadyMetric,
    pub limit: SteadyLimit,
}

impl fmt::Display for SteadyState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.limit {
            SteadyLimit::Percent(p) => write!(f, "{}:{p}%", self.metric.name()),
            SteadyLimit::Absolute(a) => write!(f, "{}:{a}", self.metric.name()),
        }
    }
}

impl Serialize for SteadyState {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// Why a steady-state criterion could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SteadyStateError {
    #[error(
        "`{0}` names no criterion: expected METRIC:LIMIT, e.g. \"iops:10%\" or \"iops_slope:0.1%\""
    )]
    NoLimit(String),
    #[error("unknown steady-state metric `{0}`: expected iops, iops_slope, bw or bw_slope")]
    Metric(String),
    #[error(
        "invalid steady-state limit `{0}`: expected a percentage of the mean (\"10%\") or a value above 0 (ops/s for iops, bytes/s such as \"20MiB\" for bw)"
    )]
    Limit(String),
}

/// Parses fio's `ss=` value: `METRIC:LIMIT`, METRIC one of `iops`, `iops_slope`, `bw`,
/// `bw_slope`; LIMIT a percentage of the window's mean (`10%`) or an absolute value (ops/s,
/// or bytes/s with storlab's size units: `bw:20MiB`).
pub fn parse_steady_state(text: &str) -> Result<SteadyState, SteadyStateError> {
    let t = text.trim();
    let Some((metric, limit)) = t.split_once(':') else {
        return Err(SteadyStateError::NoLimit(t.to_string()));
    };
    let metric = match metric.trim().to_ascii_lowercase().as_str() {
        "iops" => SteadyMetric::Iops,
        "iops_slope" => SteadyMetric::IopsSlope,
        "bw" => SteadyMetric::Bw,
        "bw_slope" => SteadyMetric::BwSlope,
        other => return Err(SteadyStateError::Metric(other.to_string())),
    };
    let limit_text = limit.trim();
    let bad = || SteadyStateError::Limit(limit_text.to_string());
    let limit = if let Some(p) = limit_text.strip_suffix('%') {
        let p: f64 = p.trim().parse().map_err(|_| bad())?;
        SteadyLimit::Percent(p)
    } else if metric.is_bytes() {
        SteadyLimit::Absolute(
            storlab_model::units::parse_bytes(limit_text).map_err(|_| bad())? as f64,
        )
    } else {
        SteadyLimit::Absolute(limit_text.parse().map_err(|_| bad())?)
    };
    let value = match limit {
        SteadyLimit::Percent(v) | SteadyLimit::Absolute(v) => v,
    };
    if !value.is_finite() || value <= 0.0 {
        return Err(bad());
    }
    Ok(SteadyState { metric, limit })
}

/// A step's steady-state settings, as the plan carries them.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct SteadyPlan {
    pub criterion: SteadyState,
    /// The sliding window judged, seconds (fio's `ss_dur`).
    pub window_seconds: f64,
    /// Measured time ignored before the window starts filling, seconds (fio's `ss_ramp`).
    pub ramp_seconds: f64,
}

impl SteadyPlan {
    /// Shrinks the window and the ramp with the run (quick mode), keeping at least two
    /// intervals in the window.
    pub fn scale(&mut self, factor: f64, interval: Dur) {
        let i = interval.0.as_secs_f64();
        self.window_seconds = (self.window_seconds * factor).max(2.0 * i);
        self.ramp_seconds *= factor;
    }
}

/// The step keys as written.
pub(super) struct RawSteady<'a> {
    pub criterion: Option<&'a Spanned<String>>,
    pub seconds: Option<&'a Spanned<f64>>,
    pub ramp_seconds: Option<&'a Spanned<f64>>,
    pub duration: Option<&'a Spanned<Dur>>,
    pub step_span: std::ops::Range<usize>,
}

/// Checks a step's steady-state keys: a criterion needs a window, the window whole timeline
/// intervals (two at least) and, with the ramp, inside the step's `duration` (the longest the
/// step may run), which it needs.
pub(super) fn parse_step(
    src: &Source<'_>,
    step_key: &str,
    raw: RawSteady<'_>,
    interval: std::time::Duration,
    errors: &mut Vec<StudyError>,
) -> Option<SteadyPlan> {
    let Some(c) = raw.criterion else {
        for (key, v) in [
            ("steady-state-seconds", raw.seconds),
            ("steady-state-ramp-seconds", raw.ramp_seconds),
        ] {
            if let Some(v) = v {
                errors.push(src.error(
                    Some(v.span()),
                    format!("{step_key}.{key}"),
                    format!("`{key}` needs `steady-state` (the criterion, e.g. \"iops:10%\")"),
                ));
            }
        }
        return None;
    };
    let key = |k: &str| format!("{step_key}.{k}");
    let before = errors.len();
    let criterion = match parse_steady_state(c.get_ref()) {
        Ok(s) => Some(s),
        Err(e) => {
            errors.push(src.error(Some(c.span()), key("steady-state"), e.to_string()));
            None
        }
    };
    let interval_s = interval.as_secs_f64();
    let window = match raw.seconds {
        None => {
            errors.push(src.error(
                Some(c.span()),
                key("steady-state-seconds"),
                "`steady-state` needs `steady-state-seconds`: the window judged (fio's ss_dur)",
            ));
            0.0
        }
        Some(w) => {
            let secs = *w.get_ref();
            let intervals = secs / interval_s;
            if !secs.is_finite() || secs <= 0.0 || intervals < 1.999 {
                errors.push(src.error(
                    Some(w.span()),
                    key("steady-state-seconds"),
                    format!(
                        "the window must hold at least two timeline intervals ({interval_s} s each)"
                    ),
                ));
            } else if (intervals - intervals.round()).abs() > 1e-6 {
                errors.push(src.error(
                    Some(w.span()),
                    key("steady-state-seconds"),
                    format!("the window must be a whole number of timeline intervals ({interval_s} s each)"),
                ));
            }
            secs
        }
    };
    let ramp = match raw.ramp_seconds {
        Some(r) if !r.get_ref().is_finite() || *r.get_ref() < 0.0 => {
            errors.push(src.error(
                Some(r.span()),
                key("steady-state-ramp-seconds"),
                "the ramp is a number of seconds, 0 or more",
            ));
            0.0
        }
        Some(r) => *r.get_ref(),
        None => 0.0,
    };
    match raw.duration {
        None => errors.push(src.error(
            Some(raw.step_span.clone()),
            key("duration"),
            "a step with `steady-state` needs `duration`: the longest it runs when steady state is not reached",
        )),
        Some(d) if d.get_ref().0.as_secs_f64() + 1e-9 < window + ramp => errors.push(src.error(
            Some(d.span()),
            key("duration"),
            format!(
                "the duration ({}) is shorter than the steady-state ramp and window ({} s): steady state could never be judged",
                d.get_ref(),
                window + ramp
            ),
        )),
        Some(_) => {}
    }
    if errors.len() > before {
        return None;
    }
    Some(SteadyPlan {
        criterion: criterion?,
        window_seconds: window,
        ramp_seconds: ramp,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fio_syntax_is_read() {
        let s = parse_steady_state("iops:10%").unwrap();
        assert_eq!(s.metric, SteadyMetric::Iops);
        assert_eq!(s.limit, SteadyLimit::Percent(10.0));
        assert_eq!(s.to_string(), "iops:10%");
        let s = parse_steady_state("iops_slope:0.1%").unwrap();
        assert_eq!(
            (s.metric, s.limit),
            (SteadyMetric::IopsSlope, SteadyLimit::Percent(0.1))
        );
        let s = parse_steady_state("iops:2000").unwrap();
        assert_eq!(s.limit, SteadyLimit::Absolute(2000.0));
        let s = parse_steady_state("bw:20MiB").unwrap();
        assert_eq!(
            (s.metric, s.limit),
            (SteadyMetric::Bw, SteadyLimit::Absolute(20.0 * 1048576.0))
        );
        let s = parse_steady_state("bw_slope:5%").unwrap();
        assert_eq!(s.metric, SteadyMetric::BwSlope);
    }

    fn study(step_keys: &str) -> String {
        format!(
            "name = \"t\"\n\n[targets.n]\ntype = \"null\"\n\n[workloads.w]\nblock-size = \"4KiB\"\n\n[[steps]]\nworkload = \"w\"\ntargets = [\"n\"]\n{step_keys}"
        )
    }

    /// The one error of a study with these step keys: line, key, message.
    fn error_of(step_keys: &str) -> (Option<usize>, String, String) {
        let errs = crate::parse("bad.toml", &study(step_keys))
            .expect_err("refused")
            .0;
        assert_eq!(errs.len(), 1, "{errs:?}");
        let e = &errs[0];
        assert_eq!(e.file, "bad.toml");
        (e.line, e.key.clone(), e.message.clone())
    }

    #[test]
    fn step_keys_are_checked_with_file_line_and_key() {
        let ok = crate::parse(
            "ok.toml",
            &study("duration = \"60s\"\nsteady-state = \"iops:10%\"\nsteady-state-seconds = 10\nsteady-state-ramp-seconds = 5\n"),
        )
        .unwrap();
        let ss = ok.runs[0].steady_state.unwrap();
        assert_eq!(ss.criterion.to_string(), "iops:10%");
        assert_eq!((ss.window_seconds, ss.ramp_seconds), (10.0, 5.0));
        let (line, key, msg) = error_of(
            "duration = \"60s\"\nsteady-state = \"iops:ten%\"\nsteady-state-seconds = 10\n",
        );
        assert_eq!((line, key.as_str()), (Some(13), "steps[1].steady-state"));
        assert!(msg.contains("invalid steady-state limit `ten%`"), "{msg}");
        let (line, key, msg) =
            error_of("duration = \"60s\"\nsteady-state = \"lat:10%\"\nsteady-state-seconds = 10\n");
        assert_eq!((line, key.as_str()), (Some(13), "steps[1].steady-state"));
        assert!(msg.contains("unknown steady-state metric `lat`"), "{msg}");
        let (_, key, msg) = error_of("duration = \"60s\"\nsteady-state = \"iops:10%\"\n");
        assert_eq!(key, "steps[1].steady-state-seconds");
        assert!(msg.contains("needs `steady-state-seconds`"), "{msg}");
        let (line, key, _) = error_of("duration = \"60s\"\nsteady-state-seconds = 10\n");
        assert_eq!(
            (line, key.as_str()),
            (Some(13), "steps[1].steady-state-seconds")
        );
        let (line, key, msg) = error_of(
            "duration = \"5s\"\nsteady-state = \"iops:10%\"\nsteady-state-seconds = 4\nsteady-state-ramp-seconds = 2\n",
        );
        assert_eq!((line, key.as_str()), (Some(12), "steps[1].duration"));
        assert!(
            msg.contains("shorter than the steady-state ramp and window"),
            "{msg}"
        );
        let (line, key, msg) = error_of(
            "duration = \"60s\"\nsteady-state = \"iops:10%\"\nsteady-state-seconds = 2.5\n",
        );
        assert_eq!(
            (line, key.as_str()),
            (Some(14), "steps[1].steady-state-seconds")
        );
        assert!(msg.contains("whole number of timeline intervals"), "{msg}");
        let (_, key, msg) =
            error_of("ops = 1000\nsteady-state = \"iops:10%\"\nsteady-state-seconds = 2\n");
        assert_eq!(key, "steps[1].duration");
        assert!(msg.contains("needs `duration`"), "{msg}");
        let (line, key, _) = error_of(
            "duration = \"60s\"\nsteady-state = \"iops:10%\"\nsteady-state-seconds = 2\nsteady-state-ramp-seconds = -1\n",
        );
        assert_eq!(
            (line, key.as_str()),
            (Some(15), "steps[1].steady-state-ramp-seconds")
        );
    }

    #[test]
    fn quick_mode_shrinks_the_window_with_the_run() {
        let mut plan = crate::parse(
            "ok.toml",
            &study("duration = \"60s\"\nsteady-state = \"iops:10%\"\nsteady-state-seconds = 30\nsteady-state-ramp-seconds = 6\n"),
        )
        .unwrap();
        plan.make_quick();
        let r = &plan.runs[0];
        let ss = r.steady_state.unwrap();
        assert_eq!(r.duration.unwrap().0, std::time::Duration::from_secs(1));
        assert!((ss.window_seconds - 0.5).abs() < 1e-9, "{ss:?}");
        assert!((ss.ramp_seconds - 0.1).abs() < 1e-9, "{ss:?}");
        assert!(r.interval.0 <= std::time::Duration::from_millis(100));
    }

    #[test]
    fn bad_criteria_are_refused() {
        assert!(matches!(
            parse_steady_state("iops"),
            Err(SteadyStateError::NoLimit(_))
        ));
        assert!(matches!(
            parse_steady_state("lat:5%"),
            Err(SteadyStateError::Metric(_))
        ));
        for bad in ["iops:x%", "iops:-1%", "iops:0", "bw:fast", "iops:"] {
            assert!(
                matches!(parse_steady_state(bad), Err(SteadyStateError::Limit(_))),
                "{bad}"
            );
        }
    }
}
