//! pgbench's transactions (PostgreSQL's `pgbench`, its built-in scripts): a study's
//! `[workloads.NAME]` table with `type = "pgbench"` gives the scale (pgbench's `-s`), the
//! script (`tpcb-like`, `select-only`, `simple-update`), the clients (`threads`), an optional
//! rate (`rate-ops`, transactions per second for all clients, open loop) and `verify` (the
//! lost-transaction ledger, see `storlab_targets::postgres::ledger`).
//!
//! One operation is one transaction. Each worker draws pgbench's random values from its own
//! seeded generator, as pgbench's `\set` lines do, in their order: `aid` uniform in
//! `[1, 100000 * scale]`, `bid` in `[1, scale]`, `tid` in `[1, 10 * scale]`, `delta` in
//! `[-5000, 5000]` (select-only draws `aid` alone). A draw never allocates.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use serde::Serialize;

use storlab_model::{Op, OptionError};
use storlab_model::{PgbenchOp, Script};

/// Rows of pgbench_accounts per unit of scale (pgbench's `naccounts`).
pub const ACCOUNTS_PER_SCALE: i64 = 100_000;
/// Rows of pgbench_tellers per unit of scale (pgbench's `ntellers`).
pub const TELLERS_PER_SCALE: i64 = 10;
/// The largest scale storlab takes: account ids stay within a 32-bit `int`, as pgbench's own
/// schema has them up to scale 20,000.
pub const MAX_SCALE: u32 = 20_000;

/// A pgbench workload as a study gives it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct PgbenchWorkload {
    /// pgbench's scale factor (`-s`): branches, 10x tellers, 100,000x accounts.
    pub scale: u32,
    pub script: Script,
    /// Clients: one connection (worker thread) each.
    pub threads: u32,
    /// Open loop: transactions per second for all clients.
    pub rate_ops: Option<f64>,
    /// The lost-transaction ledger: every history row carries this run's tag, the worker and
    /// its transaction number; a pass after the run counts acknowledged ones that are missing.
    pub verify: bool,
    /// The scale `--quick` runs at (default 1).
    pub quick_scale: u32,
    pub seed: u64,
}

/// Keys a study's sweep may vary in a pgbench workload.
pub const SWEEPABLE: &[&str] = &["scale", "script", "threads", "rate-ops", "verify", "seed"];

/// Every key a pgbench workload takes.
const KEYS: &[&str] = &[
    "scale",
    "script",
    "threads",
    "rate-ops",
    "verify",
    "quick-scale",
    "seed",
];

pub(crate) fn err(key: &str, message: impl Into<String>) -> OptionError {
    OptionError {
        key: key.into(),
        message: message.into(),
    }
}

/// A whole number in `[min, max]` under `key`.
pub(crate) fn whole(
    table: &mut toml::Table,
    key: &str,
    min: i64,
    max: i64,
) -> Result<Option<i64>, OptionError> {
    match table.remove(key) {
        None => Ok(None),
        Some(toml::Value::Integer(i)) if (min..=max).contains(&i) => Ok(Some(i)),
        Some(_) => Err(err(
            key,
            format!("{key} is a whole number from {min} to {max}"),
        )),
    }
}

impl PgbenchWorkload {
    pub fn from_table(mut table: toml::Table) -> Result<PgbenchWorkload, OptionError> {
        if let Some(k) = table.keys().find(|k| !KEYS.contains(&k.as_str())) {
            return Err(err(
                k,
                format!(
                    "unknown key `{k}` in a pgbench workload (it takes {})",
                    KEYS.join(", ")
                ),
            ));
        }
        let scale = whole(&mut table, "scale", 1, MAX_SCALE as i64)?.unwrap_or(1) as u32;
        let script = match table.remove("script") {
            None => Script::TpcbLike,
            Some(toml::Value::String(s)) => Script::from_name(&s).ok_or_else(|| {
                err(
                    "script",
                    format!(
                        "unknown script `{s}`: pgbench's built-in scripts are tpcb-like, select-only, simple-update"
                    ),
                )
            })?,
            Some(_) => {
                return Err(err(
                    "script",
                    "script is a string: tpcb-like, select-only or simple-update",
                ));
            }
        };
        let threads = whole(&mut table, "threads", 1, 4096)?.unwrap_or(1) as u32;
        let rate_ops = match table.remove("rate-ops") {
            None => None,
            Some(v) => match v.as_float().or(v.as_integer().map(|i| i as f64)) {
                Some(r) if r > 0.0 && r.is_finite() => Some(r),
                _ => {
                    return Err(err(
                        "rate-ops",
                        "rate-ops is a number of transactions per second above 0",
                    ));
                }
            },
        };
        let verify = match table.remove("verify") {
            None => false,
            Some(toml::Value::Boolean(b)) => b,
            Some(_) => return Err(err("verify", "verify is true or false")),
        };
        if verify && !script.writes() {
            return Err(err(
                "verify",
                "verify checks the history rows of acknowledged transactions: select-only writes none",
            ));
        }
        let quick_scale =
            whole(&mut table, "quick-scale", 1, MAX_SCALE as i64)?.unwrap_or(1) as u32;
        let seed = match table.remove("seed") {
            None => super::DEFAULT_SEED,
            Some(toml::Value::Integer(i)) => i as u64,
            Some(_) => return Err(err("seed", "seed is a whole number")),
        };
        Ok(PgbenchWorkload {
            scale,
            script,
            threads,
            rate_ops,
            verify,
            quick_scale,
            seed,
        })
    }

    pub fn rate_per_thread(&self) -> Option<f64> {
        self.rate_ops.map(|r| r / self.threads as f64)
    }

    /// The source of client `thread` of a run seeded `run_seed`.
    pub fn source(&self, thread: u32, run_seed: u64) -> PgbenchSource {
        PgbenchSource::new(
            self.script,
            self.scale,
            super::thread_seed(run_seed, thread),
        )
    }

    /// `--quick`: the scale at most `quick-scale`.
    pub fn make_quick(&mut self) {
        self.scale = self.scale.min(self.quick_scale);
    }

    pub fn describe(&self) -> String {
        format!(
            "pgbench {} scale {} clients {}{}{}",
            self.script.name(),
            self.scale,
            self.threads,
            self.rate_ops
                .map(|r| format!(" rate {r} tps"))
                .unwrap_or_default(),
            if self.verify { " verify" } else { "" }
        )
    }
}

/// One client's transactions: pgbench's draws from a seeded generator.
pub struct PgbenchSource {
    script: Script,
    rng: SmallRng,
    accounts: u64,
    branches: u64,
    tellers: u64,
}

impl PgbenchSource {
    pub fn new(script: Script, scale: u32, seed: u64) -> PgbenchSource {
        let s = scale as u64;
        PgbenchSource {
            script,
            rng: SmallRng::seed_from_u64(seed),
            accounts: ACCOUNTS_PER_SCALE as u64 * s,
            branches: s,
            tellers: TELLERS_PER_SCALE as u64 * s,
        }
    }

    /// A number uniform in `[1, n]` (multiply-shift: 64 random bits onto the range, no
    /// division; the bias is below n / 2^64).
    #[inline]
    fn draw(&mut self, n: u64) -> i32 {
        (((self.rng.next_u64() as u128 * n as u128) >> 64) as u64 + 1) as i32
    }

    #[inline]
    pub fn next_op(&mut self) -> Op {
        let aid = self.draw(self.accounts);
        if self.script == Script::SelectOnly {
            return Op::Pgbench(PgbenchOp {
                script: self.script,
                aid,
                bid: 0,
                tid: 0,
                delta: 0,
            });
        }
        let bid = self.draw(self.branches);
        let tid = self.draw(self.tellers);
        let delta = self.draw(10_001) - 5_001;
        Op::Pgbench(PgbenchOp {
            script: self.script,
            aid,
            bid,
            tid,
            delta,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn workload(text: &str) -> Result<PgbenchWorkload, OptionError> {
        PgbenchWorkload::from_table(toml::from_str(text).unwrap())
    }

    fn ops(w: &PgbenchWorkload, n: usize) -> Vec<PgbenchOp> {
        let mut s = w.source(0, 7);
        (0..n)
            .map(|_| match s.next_op() {
                Op::Pgbench(p) => p,
                other => panic!("{other:?}"),
            })
            .collect()
    }

    #[test]
    fn draws_are_uniform_over_pgbench_ranges() {
        let w = workload("scale = 3").unwrap();
        assert_eq!(w.script, Script::TpcbLike);
        let all = ops(&w, 300_000);
        let (mut bids, mut tids) = ([0u32; 3], [0u32; 30]);
        let (mut dmin, mut dmax, mut dsum) = (i32::MAX, i32::MIN, 0i64);
        let (mut amin, mut amax) = (i32::MAX, i32::MIN);
        let mut account_thirds = [0u32; 3];
        for p in &all {
            assert!((1..=300_000).contains(&p.aid), "{p:?}");
            amin = amin.min(p.aid);
            amax = amax.max(p.aid);
            account_thirds[((p.aid - 1) / 100_000) as usize] += 1;
            bids[(p.bid - 1) as usize] += 1;
            tids[(p.tid - 1) as usize] += 1;
            assert!((-5000..=5000).contains(&p.delta));
            dmin = dmin.min(p.delta);
            dmax = dmax.max(p.delta);
            dsum += p.delta as i64;
        }
        // Both ends of every range are reached.
        assert_eq!((dmin, dmax), (-5000, 5000));
        assert!(amin <= 5 && amax >= 299_995, "{amin} {amax}");
        // 100,000 expected per branch and third of the accounts (sd about 260), 10,000 per
        // teller (sd about 100).
        for c in bids.iter().chain(&account_thirds) {
            assert!((98_500..101_500).contains(c), "{bids:?} {account_thirds:?}");
        }
        assert!(tids.iter().all(|c| (9_400..10_600).contains(c)), "{tids:?}");
        // Mean delta 0 (sd of the mean about 5.3).
        assert!((dsum as f64 / all.len() as f64).abs() < 30.0);
    }

    #[test]
    fn select_only_draws_the_account_alone_and_streams_are_seeded() {
        let w = workload("scale = 1\nscript = \"select-only\"").unwrap();
        let a = ops(&w, 100);
        assert!(a.iter().all(|p| p.bid == 0 && p.tid == 0 && p.delta == 0));
        assert!(a.iter().all(|p| p.script == Script::SelectOnly));
        assert_eq!(a, ops(&w, 100));
        let mut other = w.source(1, 7);
        assert_ne!(Op::Pgbench(a[0]), other.next_op());
        assert_eq!(Op::Pgbench(a[0]).kind(), storlab_model::OpKind::SelectOnly);
    }

    #[test]
    fn bad_options_name_their_key() {
        for (text, key) in [
            ("scale = 0", "scale"),
            ("scale = 20001", "scale"),
            ("scale = \"ten\"", "scale"),
            ("script = \"tpcc\"", "script"),
            ("script = 3", "script"),
            ("threads = 0", "threads"),
            ("rate-ops = 0", "rate-ops"),
            ("rate-ops = \"fast\"", "rate-ops"),
            ("verify = 1", "verify"),
            ("script = \"select-only\"\nverify = true", "verify"),
            ("clients = 4", "clients"),
            ("quick-scale = 0", "quick-scale"),
        ] {
            let e = workload(text).unwrap_err();
            assert_eq!(e.key, key, "{text}: {}", e.message);
        }
        let w = workload("scale = 10\nthreads = 4\nrate-ops = 400\nverify = true").unwrap();
        assert_eq!(w.rate_per_thread(), Some(100.0));
        let mut q = w.clone();
        q.make_quick();
        assert_eq!(q.scale, 1);
    }
}
