//! The results store's schema, the same in SQLite and PostgreSQL: its versions, each applied
//! once and in order on first use, recorded in `schema_version`. A store made before the
//! versions were recorded (SQLite, version 1's tables without the table of versions) gains
//! what it lacks from version 1 again: every statement there is `IF NOT EXISTS`.

/// The newest version of the schema.
pub(super) const VERSION: i64 = 3;

/// The table recording each version applied, and when.
pub(super) const VERSIONS_TABLE: &str = "CREATE TABLE IF NOT EXISTS schema_version (
    version BIGINT PRIMARY KEY,
    applied_at TEXT NOT NULL
)";

/// The statements of `version`, in PostgreSQL's types (SQLite takes them with the same
/// meaning; [`for_sqlite`] names its byte type).
pub(super) fn statements(version: i64) -> &'static [&'static str] {
    match version {
        1 => &[
            "CREATE TABLE IF NOT EXISTS runs (
                run_id TEXT PRIMARY KEY,
                study TEXT NOT NULL,
                step TEXT NOT NULL,
                run_index BIGINT NOT NULL,
                run_count BIGINT NOT NULL,
                repetition BIGINT NOT NULL,
                parameters TEXT NOT NULL,
                status TEXT NOT NULL,
                started_at TEXT NOT NULL,
                ended_at TEXT,
                folder TEXT NOT NULL,
                pid BIGINT NOT NULL,
                summary TEXT,
                note TEXT
            )",
            "CREATE TABLE IF NOT EXISTS events (
                run_id TEXT NOT NULL,
                position BIGINT NOT NULL,
                name TEXT NOT NULL,
                action TEXT NOT NULL,
                status TEXT NOT NULL,
                start_ns BIGINT NOT NULL,
                end_ns BIGINT NOT NULL,
                duration_seconds DOUBLE PRECISION NOT NULL,
                exit_code BIGINT,
                pid BIGINT,
                detail TEXT NOT NULL,
                stdout TEXT NOT NULL,
                stderr TEXT NOT NULL,
                on_failure TEXT,
                PRIMARY KEY (run_id, position)
            )",
            "CREATE TABLE IF NOT EXISTS recovery (
                run_id TEXT NOT NULL,
                event TEXT NOT NULL,
                event_seconds DOUBLE PRECISION NOT NULL,
                interval_seconds DOUBLE PRECISION NOT NULL,
                baseline_rate_ops DOUBLE PRECISION,
                dip_min_rate_ops DOUBLE PRECISION,
                dip_mean_rate_ops DOUBLE PRECISION,
                outage_seconds DOUBLE PRECISION NOT NULL,
                time_to_first_success_seconds DOUBLE PRECISION,
                recovered BIGINT NOT NULL,
                time_to_recover_seconds DOUBLE PRECISION,
                errors_during_outage TEXT NOT NULL,
                note TEXT NOT NULL,
                PRIMARY KEY (run_id, event)
            )",
            "CREATE TABLE IF NOT EXISTS verify (
                run_id TEXT NOT NULL,
                target TEXT NOT NULL,
                class TEXT NOT NULL,
                blocks BIGINT NOT NULL,
                first_offsets TEXT NOT NULL,
                kind TEXT NOT NULL DEFAULT 'block',
                PRIMARY KEY (run_id, target, class)
            )",
        ],
        // Every file of a run (summary, plan, system capture, study, timeline, HDR log), so
        // that a report needs the store alone; verify rows keep their order.
        2 => &[
            "CREATE TABLE IF NOT EXISTS run_files (
                run_id TEXT NOT NULL,
                name TEXT NOT NULL,
                bytes BYTEA NOT NULL,
                PRIMARY KEY (run_id, name)
            )",
            "ALTER TABLE verify ADD COLUMN position BIGINT NOT NULL DEFAULT 0",
        ],
        // What `sample` events read: each value of a series (as `samples.csv` holds it), and
        // the bytes a reported span moved.
        3 => &[
            "CREATE TABLE IF NOT EXISTS samples (
                run_id TEXT NOT NULL,
                position BIGINT NOT NULL,
                t_ns BIGINT NOT NULL,
                series TEXT NOT NULL,
                value DOUBLE PRECISION NOT NULL,
                unit TEXT NOT NULL,
                PRIMARY KEY (run_id, position)
            )",
            "ALTER TABLE events ADD COLUMN bytes BIGINT",
            "ALTER TABLE events ADD COLUMN rate_bytes DOUBLE PRECISION",
        ],
        _ => &[],
    }
}

/// A statement in SQLite's spelling.
pub(super) fn for_sqlite(statement: &str) -> String {
    statement.replace("BYTEA", "BLOB")
}

/// What an upsert of a run's row adds to its `INSERT` (the same in both): the row made anew,
/// as `running` until its summary is stored.
pub(super) const UPSERT_RUN: &str = " ON CONFLICT (run_id) DO UPDATE SET study = excluded.study, \
    step = excluded.step, run_index = excluded.run_index, run_count = excluded.run_count, \
    repetition = excluded.repetition, parameters = excluded.parameters, status = excluded.status, \
    started_at = excluded.started_at, ended_at = NULL, folder = excluded.folder, \
    pid = excluded.pid, summary = NULL, note = NULL";

/// Inserting one study event of a run (the same in both, `?N` parameters).
pub(super) const INSERT_EVENT: &str = "INSERT INTO events (run_id, position, name, action, status, start_ns, end_ns, duration_seconds, exit_code, pid, detail, stdout, stderr, on_failure, bytes, rate_bytes) \
    VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)";

/// Inserting one sample of a run (the same in both, `?N` parameters).
pub(super) const INSERT_SAMPLE: &str = "INSERT INTO samples (run_id, position, t_ns, series, value, unit) VALUES (?1, ?2, ?3, ?4, ?5, ?6)";

/// Upserting one file of a run (the same in both, `?N` parameters).
pub(super) const UPSERT_FILE: &str = "INSERT INTO run_files (run_id, name, bytes) VALUES (?1, ?2, ?3) \
    ON CONFLICT (run_id, name) DO UPDATE SET bytes = excluded.bytes";

/// The ids of the runs RUN may name: RUN itself (`?1`), or ids starting or ending with it
/// (`?2`, `?3`: RUN with LIKE's wildcards escaped, see [`like_patterns`]), the exact one
/// first, then the newest; at most 1,001 (a study of more runs than that is not resolved by
/// its name).
pub(super) const MATCHING_IDS: &str = "SELECT run_id FROM runs WHERE run_id = ?1 \
    OR run_id LIKE ?2 ESCAPE '\\' OR run_id LIKE ?3 ESCAPE '\\' \
    ORDER BY (run_id = ?1) DESC, started_at DESC LIMIT 1001";

/// RUN as the start and as the end of a LIKE pattern, its `%`, `_` and `\` taken literally.
pub(super) fn like_patterns(run: &str) -> (String, String) {
    let mut escaped = String::with_capacity(run.len());
    for c in run.chars() {
        if matches!(c, '%' | '_' | '\\') {
            escaped.push('\\');
        }
        escaped.push(c);
    }
    (format!("{escaped}%"), format!("%{escaped}"))
}

/// `?N` parameters as PostgreSQL's `$N`.
pub(super) fn for_postgres(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len());
    let mut chars = sql.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '?' && chars.peek().is_some_and(|d| d.is_ascii_digit()) {
            out.push('$');
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameters_are_spelled_for_postgres() {
        assert_eq!(
            for_postgres("SELECT ?1, ?12 WHERE x = '?'"),
            "SELECT $1, $12 WHERE x = '?'"
        );
        assert_eq!(for_sqlite("bytes BYTEA NOT NULL"), "bytes BLOB NOT NULL");
    }

    #[test]
    fn every_version_up_to_the_newest_has_statements() {
        for v in 1..=VERSION {
            assert!(!statements(v).is_empty(), "version {v}");
        }
        assert!(statements(VERSION + 1).is_empty());
    }
}
