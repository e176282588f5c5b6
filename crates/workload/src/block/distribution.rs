//! Skewed random offsets: fio 3.33's `random_distribution` as a block workload's
//! `distribution` ([`Distribution`]), and the per-worker draw of a position from it
//! ([`Skewed`]). The definitions are fio's (lib/zipf.c, lib/gauss.c, io_u.c, zone-dist.c):
//!
//! - `zipf:THETA`: fio's Zipf generator (Gray et al.'s): a rank from 1 to n, with zeta(n, theta)
//!   summed over at most the first 10 000 000 ranks (fio's `ZIPF_MAX_GEN` cap);
//! - `pareto:H`: rank `(n - 1) * u^(ln H / ln (1 - H))`;
//! - `normal:DEV`: the mean of 12 uniform draws over 0..=n (rounded up), plus a uniform
//!   deviation of DEV percent of n, halved until it stays inside;
//! - zipf, pareto and normal scatter their rank over the positions as fio does: the rank times
//!   the 64-bit golden ratio (fio's `__hash_u64`), plus an offset, modulo n. The offset is a
//!   random 32-bit number (zipf, pareto) drawn per worker (fio draws it per job), or
//!   n times CENTER with `:CENTER`; normal's is 0, or n times (CENTER - 0.5);
//! - `zoned:A/S:...`: A percent of the operations fall uniformly in the next S percent of the
//!   positions; `zoned-abs:A/BYTES:...` the same with sizes in bytes (fio's `zoned_abs`).
//!
//! Differences from fio, all below the shape: uniform draws come from the worker's 64-bit
//! generator (fio's from 32-bit Tausworthe; normal's 12 draws over 0..=n are exact where fio's
//! 32-bit modulo caps n at 2^32); a normal CENTER below 0.5 shifts by (CENTER - 0.5) n where
//! fio 3.33 stores it as a wrapped 32-bit number; and a deviation that cannot fit stops at 0
//! (fio loops forever in that one case).

use std::fmt;
use std::sync::Mutex;

use rand::Rng;
use rand::rngs::SmallRng;
use serde::{Deserialize, Serialize};

/// fio's `GOLDEN_RATIO_64` (hash.h): `__hash_u64(v)` is `v` times this.
pub const GOLDEN_RATIO_64: u64 = 0x61C8_8646_80B5_83EB;
/// fio's cap on the ranks zeta(n, theta) is summed over (lib/zipf.c `ZIPF_MAX_GEN`).
pub const ZIPF_MAX_GEN: u64 = 10_000_000;
/// fio's most zones per direction (`ZONESPLIT_MAX`).
pub const ZONES_MAX: usize = 256;

/// Where random offsets fall: fio's `random_distribution`, written as in fio with `zoned-abs`
/// for fio's `zoned_abs` (`"zipf:1.2"`, `"pareto:0.2:0.5"`, `"normal:10"`,
/// `"zoned:60/10:30/20:10/70"`, `"zoned-abs:60/1MiB:40/3MiB"`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum Distribution {
    /// Uniform (fio's `random`, the default).
    #[default]
    Random,
    Zipf {
        theta: f64,
        center: Option<f64>,
    },
    Pareto {
        h: f64,
        center: Option<f64>,
    },
    Normal {
        deviation_percent: f64,
        center: Option<f64>,
    },
    /// Zones of percents of the positions, in order from the start.
    Zoned(Vec<Zone>),
    /// Zones of bytes, in order from the start of the region.
    ZonedAbs(Vec<Zone>),
}

/// One zone: `access_percent` of the operations fall in it; `size` is percent of the
/// positions (`zoned`) or bytes (`zoned-abs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Zone {
    pub access_percent: u8,
    pub size: u64,
}

impl Distribution {
    pub fn is_random(&self) -> bool {
        *self == Distribution::Random
    }

    /// Bytes the region must hold: a `zoned-abs` distribution's zones (fio fails a job whose
    /// zones exceed its file: "zoned_abs sizes exceed file size").
    pub fn bytes_needed(&self) -> u64 {
        match self {
            Distribution::ZonedAbs(zones) => zones.iter().map(|z| z.size).sum(),
            _ => 0,
        }
    }

    /// Parses fio's syntax: `zoned_abs` is named `abs_name` (`zoned-abs` in study files,
    /// `zoned_abs` in fio's job files) and its sizes read by `size`. A missing value is fio's
    /// default (zipf 1.1, pareto 0.2, normal 0); a zone without a size shares what the others
    /// leave (`zoned`) or is empty (`zoned_abs`), as in fio.
    pub fn parse_with(
        text: &str,
        abs_name: &str,
        size: &dyn Fn(&str) -> Result<u64, String>,
    ) -> Result<Distribution, String> {
        let t = text.trim();
        let (name, rest) = match t.split_once(':') {
            Some((n, r)) => (n.trim(), Some(r)),
            None => (t, None),
        };
        if t.contains(',') {
            return Err(format!(
                "`{t}`: one distribution for reads and writes (fio 3.33 refuses a `,` here too: \"failed parsing\")"
            ));
        }
        match name {
            "random" if rest.is_none() => Ok(Distribution::Random),
            "zipf" | "pareto" | "normal" => parse_skew(name, rest),
            "zoned" => parse_zones(rest, false, size).map(Distribution::Zoned),
            n if n == abs_name => parse_zones(rest, true, size).map(Distribution::ZonedAbs),
            _ => Err(format!(
                "`{t}`: expected random, zipf:THETA, pareto:H, normal:DEV (each with an optional :CENTER), zoned:A/S:... or {abs_name}:A/BYTES:..."
            )),
        }
    }
}

fn number(text: &str, what: &str) -> Result<f64, String> {
    text.trim()
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite())
        .ok_or_else(|| format!("`{text}` is not a number ({what})"))
}

/// `zipf`, `pareto`, `normal` with their value and optional centre (options.c
/// `str_random_distribution_cb`).
fn parse_skew(name: &str, rest: Option<&str>) -> Result<Distribution, String> {
    let (value, center) = match rest.map(|r| r.split_once(':').unwrap_or((r, ""))) {
        None => (None, None),
        Some((v, c)) => (
            Some(number(v, name)?),
            (!c.trim().is_empty())
                .then(|| number(c, "the centre"))
                .transpose()?,
        ),
    };
    if center.is_some_and(|c| !(0.0..=1.0).contains(&c)) {
        return Err("the centre is from 0.0 to 1.0 (fio's range)".into());
    }
    match name {
        "zipf" => {
            let theta = value.unwrap_or(1.1);
            if theta == 1.0 {
                return Err("zipf's theta must differ from 1.0 (as in fio)".into());
            }
            Ok(Distribution::Zipf { theta, center })
        }
        "pareto" => {
            let h = value.unwrap_or(0.2);
            if !(h > 0.0 && h < 1.0) {
                return Err("pareto's H is above 0.0 and below 1.0 (as in fio)".into());
            }
            Ok(Distribution::Pareto { h, center })
        }
        _ => {
            let deviation_percent = value.unwrap_or(0.0);
            if !(0.0..100.0).contains(&deviation_percent) {
                return Err(
                    "normal's deviation is a percent from 0 to below 100 (as in fio)".into(),
                );
            }
            Ok(Distribution::Normal {
                deviation_percent,
                center,
            })
        }
    }
}

/// fio's `zone_split_ddir`: `A/S` pairs, the access percents adding up to 100, the size
/// percents to at most 100 (a missing or 0 size percent shares what is left; a missing
/// absolute size is 0).
fn parse_zones(
    rest: Option<&str>,
    absolute: bool,
    size: &dyn Fn(&str) -> Result<u64, String>,
) -> Result<Vec<Zone>, String> {
    let mut zones = Vec::new();
    let mut missing = 0u64;
    for item in rest.unwrap_or("").split(':') {
        if item.trim().is_empty() {
            break; // fio stops at the first empty entry
        }
        let (a, s) = match item.split_once('/') {
            Some((a, s)) => (a, Some(s)),
            None => (item, None),
        };
        let access_percent = a
            .trim()
            .parse::<u8>()
            .ok()
            .filter(|p| *p <= 100)
            .ok_or_else(|| format!("`{item}`: the access share is a whole percent"))?;
        let size = match s {
            Some(s) if absolute => size(s)?,
            None if absolute => 0,
            // fio reads the size percent with atoi: `20/` is a missing one.
            Some(s) if s.trim().is_empty() => 0,
            Some(s) => s
                .trim()
                .parse::<u64>()
                .map_err(|_| format!("`{item}`: the size is a whole percent"))?
                .min(100),
            None => 0,
        };
        missing += u64::from(!absolute && size == 0);
        zones.push(Zone {
            access_percent,
            size,
        });
    }
    if zones.len() > ZONES_MAX {
        return Err(format!("at most {ZONES_MAX} zones (as in fio)"));
    }
    let access: u32 = zones.iter().map(|z| u32::from(z.access_percent)).sum();
    let sizes: u64 = if absolute {
        0
    } else {
        zones.iter().map(|z| z.size).sum()
    };
    if access != 100 || sizes > 100 {
        return Err(format!(
            "the zones' access percents must add up to 100 (they add up to {access}) and their size percents to at most 100"
        ));
    }
    if missing > 0 {
        // fio: (100 - given) / missing each, except one lone zone gets nothing left over.
        let left = if missing == 1 && zones.len() == 1 {
            0
        } else {
            (100 - sizes) / missing
        };
        zones
            .iter_mut()
            .filter(|z| z.size == 0)
            .for_each(|z| z.size = left);
    }
    Ok(zones)
}

impl TryFrom<String> for Distribution {
    type Error = String;
    fn try_from(text: String) -> Result<Distribution, String> {
        Distribution::parse_with(&text, "zoned-abs", &|s| {
            storlab_model::units::parse_bytes(s).map_err(|e| format!("`{s}`: {e}"))
        })
    }
}

impl From<Distribution> for String {
    fn from(d: Distribution) -> String {
        d.to_string()
    }
}

impl fmt::Display for Distribution {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let skew = |f: &mut fmt::Formatter<'_>, name: &str, v: f64, c: Option<f64>| match c {
            Some(c) => write!(f, "{name}:{v}:{c}"),
            None => write!(f, "{name}:{v}"),
        };
        let zones = |f: &mut fmt::Formatter<'_>, name: &str, zones: &[Zone]| {
            f.write_str(name)?;
            zones
                .iter()
                .try_for_each(|z| write!(f, ":{}/{}", z.access_percent, z.size))
        };
        match self {
            Distribution::Random => f.write_str("random"),
            Distribution::Zipf { theta, center } => skew(f, "zipf", *theta, *center),
            Distribution::Pareto { h, center } => skew(f, "pareto", *h, *center),
            Distribution::Normal {
                deviation_percent,
                center,
            } => skew(f, "normal", *deviation_percent, *center),
            Distribution::Zoned(z) => zones(f, "zoned", z),
            Distribution::ZonedAbs(z) => zones(f, "zoned-abs", z),
        }
    }
}

/// A skewed distribution needs storlab's own random access (`access = "random"`, without
/// IOmeter's `random-share` or `access-spec`, whose model draws offsets uniformly).
pub(super) fn check(w: &super::BlockWorkload) -> Result<(), storlab_model::OptionError> {
    if w.distribution.is_random() || (w.access == super::Access::Random && !w.iometer_model()) {
        return Ok(());
    }
    Err(super::err(
        "distribution",
        "distribution places random offsets: it needs access = \"random\", without random-share or access-spec",
    ))
}

/// zeta(n, theta) over at most [`ZIPF_MAX_GEN`] ranks, as fio's `zipf_update`: remembered per
/// (theta, n) for this process, since every worker of every run needs the same sums.
fn zeta(theta: f64, n: u64) -> f64 {
    static KNOWN: Mutex<Vec<(u64, u64, f64)>> = Mutex::new(Vec::new());
    let key = (theta.to_bits(), n);
    let known = |k: &Vec<(u64, u64, f64)>| k.iter().find(|e| (e.0, e.1) == key).map(|e| e.2);
    if let Some(z) = known(&KNOWN.lock().unwrap_or_else(|p| p.into_inner())) {
        return z;
    }
    let z = (0..n.min(ZIPF_MAX_GEN))
        .map(|i| (1.0 / (i + 1) as f64).powf(theta))
        .sum();
    let mut k = KNOWN.lock().unwrap_or_else(|p| p.into_inner());
    if k.len() >= 64 {
        k.remove(0);
    }
    k.push((key.0, key.1, z));
    z
}

/// One worker's draw of positions from a skewed [`Distribution`], everything the draw can
/// precompute computed at creation: the draw itself does arithmetic only.
#[derive(Debug, Clone)]
pub struct Skewed {
    kind: Kind,
    /// Positions to draw from (fio's `nranges`, or `lastb` for zones).
    positions: u64,
    /// Added to the scattered rank before the modulo (fio's `rand_off`).
    offset: u64,
}

#[derive(Debug, Clone)]
enum Kind {
    Zipf {
        zetan: f64,
        /// 1 + 0.5^theta: below it (times zetan) the rank is 2.
        two: f64,
        alpha: f64,
        eta: f64,
    },
    Pareto {
        power: f64,
    },
    Normal {
        /// fio's `stddev`: ceil(n * DEV / 100), at most n / 2.
        spread: u64,
    },
    /// Per percent 0..100 drawn: the zone's first position and its number of positions.
    Zones(Box<[(u64, u64); 100]>),
}

/// A uniform draw in [0, n) by multiply-shift.
#[inline]
fn below(rng: &mut SmallRng, n: u64) -> u64 {
    ((rng.next_u64() as u128 * n as u128) >> 64) as u64
}

/// A uniform draw in [0, 1).
#[inline]
fn unit(rng: &mut SmallRng) -> f64 {
    (rng.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

impl Skewed {
    /// The draw of `d` over `positions` positions of `position_bytes` bytes each (zoned-abs
    /// sizes are in bytes), or None for the uniform distribution (which the caller draws
    /// itself, untouched). Zipf's and pareto's random offset is drawn from `rng`.
    pub fn new(
        d: &Distribution,
        positions: u64,
        position_bytes: u64,
        rng: &mut SmallRng,
    ) -> Option<Skewed> {
        let n = positions.max(1);
        let random_offset = |c: Option<f64>, rng: &mut SmallRng| match c {
            Some(c) => (n as f64 * c) as u64,
            None => u64::from(rng.next_u32()),
        };
        let (kind, offset) = match d {
            Distribution::Random => return None,
            Distribution::Zipf { theta, center } => {
                let zetan = zeta(*theta, n);
                let zeta2 = 1.0 + 0.5f64.powf(*theta);
                let eta = (1.0 - (2.0 / n as f64).powf(1.0 - theta)) / (1.0 - zeta2 / zetan);
                let kind = Kind::Zipf {
                    zetan,
                    two: zeta2,
                    alpha: 1.0 / (1.0 - theta),
                    eta,
                };
                (kind, random_offset(*center, rng))
            }
            Distribution::Pareto { h, center } => (
                Kind::Pareto {
                    power: h.ln() / (1.0 - h).ln(),
                },
                random_offset(*center, rng),
            ),
            Distribution::Normal {
                deviation_percent,
                center,
            } => {
                let spread = if *deviation_percent == 0.0 {
                    0
                } else {
                    ((n as f64 * deviation_percent / 100.0).ceil() as u64).min(n / 2)
                };
                let offset = center.map_or(0, |c| {
                    ((n as f64 * (c - 0.5)) as i64).rem_euclid(n as i64) as u64
                });
                (Kind::Normal { spread }, offset)
            }
            Distribution::Zoned(zones) => (Kind::Zones(zone_table(zones, n, None)), 0),
            Distribution::ZonedAbs(zones) => (
                Kind::Zones(zone_table(zones, n, Some(position_bytes.max(1)))),
                0,
            ),
        };
        Some(Skewed {
            kind,
            positions: n,
            offset,
        })
    }

    /// The next position, in [0, positions). No allocation, lock or formatting.
    #[inline]
    pub fn position(&mut self, rng: &mut SmallRng) -> u64 {
        let n = self.positions;
        let rank = match &self.kind {
            Kind::Zones(table) => {
                let (start, span) = table[below(rng, 100) as usize];
                return (start + below(rng, span)).min(n - 1);
            }
            Kind::Zipf {
                zetan,
                two,
                alpha,
                eta,
            } => {
                let u = unit(rng);
                let z = u * zetan;
                let rank = if z < 1.0 {
                    1
                } else if z < *two {
                    2
                } else {
                    1u64.saturating_add((n as f64 * (eta * u - eta + 1.0).powf(*alpha)) as u64)
                };
                rank - 1
            }
            Kind::Pareto { power } => ((n - 1) as f64 * unit(rng).powf(*power)) as u64,
            Kind::Normal { spread } => normal_rank(rng, n, *spread),
        };
        rank.wrapping_mul(GOLDEN_RATIO_64).wrapping_add(self.offset) % n
    }
}

/// fio's `gauss_next` before its hash: the mean of 12 draws over 0..=n rounded up, plus
/// `gauss_dev` (uniform over [-spread/2, spread/2)) halved until the sum stays in [0, n).
#[inline]
fn normal_rank(rng: &mut SmallRng, n: u64, spread: u64) -> u64 {
    let mut sum = 0u64;
    for _ in 0..12 {
        sum += below(rng, n.saturating_add(1));
    }
    let sum = sum.div_ceil(12) as i64;
    if spread == 0 {
        return sum as u64;
    }
    let r = rng.next_u32() as f64 / (u32::MAX as f64 + 1.0);
    let mut dev = (spread as f64 * r) as i64 - (spread / 2) as i64;
    while dev != 0 && (sum + dev < 0 || sum + dev >= n as i64) {
        dev /= 2;
    }
    (sum + dev) as u64
}

/// fio's `zone_state_index` over `n` positions: for each percent 0..100, the zone it falls
/// in as (first position, positions). Percent zones start at `prev% * n / 100` and span
/// `n * size% / 100` (io_u.c `__get_next_rand_offset_zoned`); byte zones (`bytes` per
/// position) at `prev / bytes` for `size / bytes` positions.
fn zone_table(zones: &[Zone], n: u64, bytes: Option<u64>) -> Box<[(u64, u64); 100]> {
    let mut table = Box::new([(0u64, 0u64); 100]);
    let (mut percent, mut before) = (0usize, 0u64);
    for z in zones {
        let (start, span) = match bytes {
            None => (
                (before as u128 * n as u128 / 100) as u64,
                (n as u128 * z.size as u128 / 100) as u64,
            ),
            Some(b) => (before / b, (before + z.size) / b - before / b),
        };
        let end = (percent + z.access_percent as usize).min(100);
        table[percent..end].fill((start, span));
        percent = end;
        before += z.size;
    }
    table
}

#[cfg(test)]
#[path = "distribution_tests.rs"]
mod tests;
