//! What a request asks for: its route (from the path) and its query, decoded and checked. A
//! query that cannot be understood is a [`BadInput`] naming the parameter and why, never a
//! guess.

/// A request's parameter that cannot be used: which one and why (a 400 page says both).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadInput {
    pub parameter: String,
    pub why: String,
}

impl BadInput {
    pub fn new(parameter: &str, why: impl Into<String>) -> BadInput {
        BadInput {
            parameter: parameter.to_string(),
            why: why.into(),
        }
    }
}

/// The pages storlab serve has.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    /// `/`: the list of runs, filtered.
    List,
    /// `/run/RUN_ID`: a run's report.
    Run(String),
    /// `/compare?run=A&run=B...`.
    Compare,
    /// `/history?study=S&target=T`.
    History,
    /// Anything else: the path asked for (decoded as far as it could be).
    Unknown(String),
}

/// The route of a request's path (without its query); a path that does not decode is a
/// [`BadInput`] of `path`.
pub fn route(path: &str) -> Result<Route, BadInput> {
    let decoded = percent_decode(path, false).map_err(|why| BadInput::new("path", why))?;
    Ok(match decoded.as_str() {
        "/" | "/index.html" => Route::List,
        "/compare" => Route::Compare,
        "/history" => Route::History,
        p => match p.strip_prefix("/run/") {
            Some(id) if !id.is_empty() && !id.contains('/') => Route::Run(id.to_string()),
            _ => Route::Unknown(p.to_string()),
        },
    })
}

/// Decodes `%XX` escapes (and `+` as a space when `plus_is_space`, as HTML forms send
/// queries); the result must be UTF-8 without control characters.
pub fn percent_decode(text: &str, plus_is_space: bool) -> Result<String, String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' => {
                let hex = bytes
                    .get(i + 1..i + 3)
                    .and_then(|h| std::str::from_utf8(h).ok())
                    .and_then(|h| u8::from_str_radix(h, 16).ok())
                    .ok_or_else(|| {
                        format!("`{text}` has a `%` not followed by two hexadecimal digits")
                    })?;
                out.push(hex);
                i += 3;
            }
            b'+' if plus_is_space => {
                out.push(b' ');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    let s = String::from_utf8(out).map_err(|_| format!("`{text}` does not decode to UTF-8"))?;
    if s.chars().any(char::is_control) {
        return Err(format!("`{text}` decodes to control characters"));
    }
    Ok(s)
}

/// A query's `name=value` pairs in order, decoded; empty values (a form's empty fields) are
/// kept, for the caller to ignore.
pub fn parse_query(query: &str) -> Result<Vec<(String, String)>, BadInput> {
    let mut pairs = Vec::new();
    for part in query.split('&').filter(|p| !p.is_empty()) {
        let (name, value) = part.split_once('=').unwrap_or((part, ""));
        let name = percent_decode(name, true).map_err(|why| BadInput::new("query", why))?;
        let value = percent_decode(value, true).map_err(|why| BadInput::new(&name, why))?;
        pairs.push((name, value));
    }
    Ok(pairs)
}

/// The run statuses the store records (`running` runs whose process is gone are listed as
/// `interrupted`).
pub const STATUSES: [&str; 6] = [
    "complete",
    "partial",
    "failed",
    "running",
    "interrupted",
    "incomplete",
];

/// A calendar day, `YYYY-MM-DD`, compared as its text (which sorts like the day).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Day(String);

impl Day {
    pub fn parse(text: &str) -> Result<Day, String> {
        let bad = || format!("`{text}` is not a date of the form YYYY-MM-DD (e.g. 2026-11-20)");
        let b = text.as_bytes();
        let shaped = b.len() == 10
            && b[4] == b'-'
            && b[7] == b'-'
            && b.iter()
                .enumerate()
                .all(|(i, c)| i == 4 || i == 7 || c.is_ascii_digit());
        if !shaped {
            return Err(bad());
        }
        let number = |r: std::ops::Range<usize>| text[r].parse::<u32>().map_err(|_| bad());
        let (year, month, day) = (number(0..4)?, number(5..7)?, number(8..10)?);
        let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
        let days_in_month = match month {
            1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
            4 | 6 | 9 | 11 => 30,
            2 if leap => 29,
            2 => 28,
            _ => return Err(format!("`{text}`: there is no month {month}")),
        };
        if day == 0 || day > days_in_month {
            return Err(format!(
                "`{text}`: month {month} of {year} has no day {day}"
            ));
        }
        Ok(Day(text.to_string()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// The list's filters; `None`: not filtered on.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filters {
    pub study: Option<String>,
    pub target: Option<String>,
    /// The host the run ran on (its system capture's hostname).
    pub system: Option<String>,
    pub status: Option<String>,
    /// Started on or after this day (UTC).
    pub from: Option<Day>,
    /// Started on or before this day (UTC).
    pub to: Option<Day>,
}

/// The names of the list's filters, as the query and the form spell them.
pub const FILTERS: [&str; 6] = ["study", "target", "system", "status", "from", "to"];

impl Filters {
    /// The filters of a list query: each at most once, a status the store knows, days that
    /// exist and `from` not after `to`; empty values filter nothing.
    pub fn parse(pairs: &[(String, String)]) -> Result<Filters, BadInput> {
        let mut f = Filters::default();
        let mut seen: Vec<&str> = Vec::new();
        for (name, value) in pairs {
            if !FILTERS.contains(&name.as_str()) {
                return Err(BadInput::new(
                    name,
                    format!("not a filter of the list (filters: {})", FILTERS.join(", ")),
                ));
            }
            if seen.contains(&name.as_str()) {
                return Err(BadInput::new(name, "given more than once"));
            }
            seen.push(name);
            if value.is_empty() {
                continue;
            }
            let v = Some(value.clone());
            match name.as_str() {
                "study" => f.study = v,
                "target" => f.target = v,
                "system" => f.system = v,
                "status" if STATUSES.contains(&value.as_str()) => f.status = v,
                "status" => {
                    return Err(BadInput::new(
                        name,
                        format!(
                            "`{value}` is not a run status (statuses: {})",
                            STATUSES.join(", ")
                        ),
                    ));
                }
                "from" => f.from = Some(Day::parse(value).map_err(|w| BadInput::new(name, w))?),
                _ => f.to = Some(Day::parse(value).map_err(|w| BadInput::new(name, w))?),
            }
        }
        if let (Some(from), Some(to)) = (&f.from, &f.to)
            && from > to
        {
            return Err(BadInput::new(
                "from",
                format!(
                    "{} is after `to` ({}): no day is in between",
                    from.as_str(),
                    to.as_str()
                ),
            ));
        }
        Ok(f)
    }

    /// Whether a run started at `started_at` (RFC 3339, UTC) is within `from` and `to`.
    pub fn day_matches(&self, started_at: &str) -> bool {
        let day = started_at.get(..10).unwrap_or(started_at);
        self.from.as_ref().is_none_or(|f| day >= f.as_str())
            && self.to.as_ref().is_none_or(|t| day <= t.as_str())
    }
}

/// The runs a comparison asks for (`run=ID`, two to [`MAX_COMPARED`], in order).
pub fn compared_runs(pairs: &[(String, String)]) -> Result<Vec<String>, BadInput> {
    let mut runs = Vec::new();
    for (name, value) in pairs {
        if name != "run" {
            return Err(BadInput::new(
                name,
                "not a parameter of a comparison (only `run=RUN_ID`, repeated)",
            ));
        }
        if !value.is_empty() {
            runs.push(value.clone());
        }
    }
    if runs.len() < 2 || runs.len() > MAX_COMPARED {
        return Err(BadInput::new(
            "run",
            format!(
                "a comparison needs 2 to {MAX_COMPARED} runs (tick them in the list); {} given",
                runs.len()
            ),
        ));
    }
    Ok(runs)
}

/// The most runs one comparison sets side by side (a letter each).
pub const MAX_COMPARED: usize = 26;

/// What a history page shows: one study's target, optionally one step of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HistoryQuery {
    pub study: String,
    pub target: String,
    pub step: Option<String>,
}

impl HistoryQuery {
    pub fn parse(pairs: &[(String, String)]) -> Result<HistoryQuery, BadInput> {
        let (mut study, mut target, mut step) = (None, None, None);
        for (name, value) in pairs {
            let slot = match name.as_str() {
                "study" => &mut study,
                "target" => &mut target,
                "step" => &mut step,
                _ => {
                    return Err(BadInput::new(
                        name,
                        "not a parameter of a history (study, target, step)",
                    ));
                }
            };
            if slot.is_some() {
                return Err(BadInput::new(name, "given more than once"));
            }
            *slot = Some(value.clone());
        }
        let required = |v: Option<String>, name: &str| {
            v.filter(|s| !s.is_empty()).ok_or_else(|| {
                BadInput::new(
                    name,
                    "missing: a history is of one study's target (history?study=S&target=T)",
                )
            })
        };
        Ok(HistoryQuery {
            study: required(study, "study")?,
            target: required(target, "target")?,
            step: step.filter(|s| !s.is_empty()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(q: &str) -> Vec<(String, String)> {
        parse_query(q).unwrap()
    }

    #[test]
    fn routes_by_path() {
        assert_eq!(route("/").unwrap(), Route::List);
        assert_eq!(route("/compare").unwrap(), Route::Compare);
        assert_eq!(route("/history").unwrap(), Route::History);
        assert_eq!(
            route("/run/null-engine-20261120-230102-r001").unwrap(),
            Route::Run("null-engine-20261120-230102-r001".into())
        );
        assert_eq!(route("/run/a%20b").unwrap(), Route::Run("a b".into()));
        assert_eq!(route("/run/").unwrap(), Route::Unknown("/run/".into()));
        assert_eq!(
            route("/run/a%2Fb").unwrap(),
            Route::Unknown("/run/a/b".into())
        );
        assert_eq!(route("/nope").unwrap(), Route::Unknown("/nope".into()));
        assert_eq!(route("/run/%zz").unwrap_err().parameter, "path");
    }

    #[test]
    fn queries_decode_as_forms_send_them() {
        assert_eq!(
            pairs("study=a+b&target=x%2By&&status="),
            vec![
                ("study".to_string(), "a b".to_string()),
                ("target".into(), "x+y".into()),
                ("status".into(), String::new()),
            ]
        );
        assert!(percent_decode("%C3%A9", false).unwrap() == "é");
        assert!(percent_decode("%FF", false).is_err(), "not UTF-8");
        assert!(percent_decode("%0A", false).is_err(), "a control character");
        assert!(percent_decode("%4", false).is_err());
        let e = parse_query("study=%g1").unwrap_err();
        assert_eq!(e.parameter, "study");
        assert!(e.why.contains("hexadecimal"), "{e:?}");
    }

    #[test]
    fn list_filters_are_checked_and_named() {
        let f = Filters::parse(&pairs(
            "study=s&target=t&system=host&status=complete&from=2026-11-01&to=2026-11-30",
        ))
        .unwrap();
        assert_eq!(f.study.as_deref(), Some("s"));
        assert_eq!(f.status.as_deref(), Some("complete"));
        assert_eq!(f.from.as_ref().unwrap().as_str(), "2026-11-01");
        assert_eq!(
            Filters::parse(&pairs("study=&from=")).unwrap(),
            Filters::default()
        );
        let bad = |q: &str| Filters::parse(&pairs(q)).unwrap_err();
        assert_eq!(bad("from=2026-13-01").parameter, "from");
        assert!(bad("from=2026-13-01").why.contains("no month 13"));
        assert!(bad("to=2026-02-30").why.contains("no day 30"));
        assert!(bad("to=yesterday").why.contains("YYYY-MM-DD"));
        assert!(bad("to=2026-1-01").why.contains("YYYY-MM-DD"));
        assert_eq!(bad("status=done").parameter, "status");
        assert!(bad("status=done").why.contains("complete, partial"));
        assert_eq!(bad("colour=red").parameter, "colour");
        assert!(bad("study=a&study=b").why.contains("more than once"));
        assert_eq!(bad("from=2026-11-02&to=2026-11-01").parameter, "from");
        Day::parse("2024-02-29").unwrap();
        assert!(Day::parse("2023-02-29").is_err());
        assert!(Day::parse("1900-02-29").is_err());
        Day::parse("2000-02-29").unwrap();
    }

    #[test]
    fn days_bound_the_start_inclusively() {
        let f = Filters::parse(&pairs("from=2026-11-20&to=2026-11-21")).unwrap();
        assert!(f.day_matches("2026-11-20T00:00:00Z"));
        assert!(f.day_matches("2026-11-21T23:59:59Z"));
        assert!(!f.day_matches("2026-11-19T23:59:59Z"));
        assert!(!f.day_matches("2026-11-22T00:00:00Z"));
        assert!(Filters::default().day_matches("garbage"));
    }

    #[test]
    fn a_comparison_needs_two_runs_and_only_runs() {
        assert_eq!(
            compared_runs(&pairs("run=a&run=b")).unwrap(),
            vec!["a", "b"]
        );
        assert!(
            compared_runs(&pairs("run=a"))
                .unwrap_err()
                .why
                .contains("1 given")
        );
        assert_eq!(
            compared_runs(&pairs("run=a&x=b")).unwrap_err().parameter,
            "x"
        );
        let many = (0..27)
            .map(|i| format!("run={i}"))
            .collect::<Vec<_>>()
            .join("&");
        assert!(compared_runs(&pairs(&many)).is_err());
    }

    #[test]
    fn a_history_is_of_one_study_and_target() {
        let h = HistoryQuery::parse(&pairs("study=s&target=t")).unwrap();
        assert_eq!(
            (h.study.as_str(), h.target.as_str(), h.step),
            ("s", "t", None)
        );
        assert_eq!(
            HistoryQuery::parse(&pairs("study=s"))
                .unwrap_err()
                .parameter,
            "target"
        );
        assert_eq!(
            HistoryQuery::parse(&pairs("study=s&target="))
                .unwrap_err()
                .parameter,
            "target"
        );
        assert_eq!(
            HistoryQuery::parse(&pairs("study=s&target=t&when=now"))
                .unwrap_err()
                .parameter,
            "when"
        );
    }
}
