//! What the ranks of a distributed run send each other, as bytes: an interval (counters and
//! V2-serialized HDR histograms, times already on rank 0's run clock; a rank sends its parent
//! in the gather tree one per stream and interval index, see `tree`; an empty message is a
//! rank saying it is alive while it waits) and the small JSON messages around a run. Encoded and decoded off the hot path: a rank's shipper
//! thread encodes, rank 0's receiving thread decodes.

use hdrhistogram::Histogram;
use hdrhistogram::serialization::{Deserializer, Serializer, V2Serializer};
use serde::{Deserialize, Serialize};

use storlab_model::{ErrorKind, OpError, OpKind};
use storlab_record::totals::KindTotals;
use storlab_record::{ERROR_SAMPLES, Interval, KindStats};

/// Message tags.
pub const TAG_INTERVAL: i32 = 11;
pub const TAG_FINAL: i32 = 12;
pub const TAG_STOP: i32 = 13;
pub const TAG_DONE: i32 = 14;
pub const TAG_HELLO: i32 = 15;
pub const TAG_PING: i32 = 16;
pub const TAG_PONG: i32 = 17;

#[derive(Debug, thiserror::Error)]
#[error("a malformed message from rank {rank}: {what}")]
pub struct WireError {
    pub rank: u32,
    pub what: String,
}

/// Appends one interval to `out`.
pub fn encode_interval(iv: &Interval, ser: &mut V2Serializer, out: &mut Vec<u8>) {
    out.extend_from_slice(&iv.worker.to_le_bytes());
    out.extend_from_slice(&iv.target.to_le_bytes());
    out.extend_from_slice(&iv.index.to_le_bytes());
    for v in [iv.start_ns, iv.end_ns, iv.cpu_ns] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    out.push(iv.last as u8);
    for k in &iv.kinds {
        let Some(k) = k else {
            out.push(0);
            continue;
        };
        out.push(1 + k.intended.is_some() as u8);
        for v in [k.ops, k.bytes, k.misses, k.service_sum_ns] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        for e in k.errors {
            out.extend_from_slice(&e.to_le_bytes());
        }
        histogram(&k.service, ser, out);
        if let Some(h) = &k.intended {
            histogram(h, ser, out);
        }
    }
    let samples: Vec<&(OpKind, OpError)> = iv.error_samples.iter().flatten().collect();
    out.push(samples.len() as u8);
    for (kind, e) in samples {
        out.push(*kind as u8);
        out.push(e.kind as u8);
        out.extend_from_slice(&e.code.to_le_bytes());
    }
}

fn histogram(h: &Histogram<u32>, ser: &mut V2Serializer, out: &mut Vec<u8>) {
    let at = out.len();
    out.extend_from_slice(&[0; 4]);
    let n = ser
        .serialize(h, out)
        .expect("serializing into memory does not fail");
    out[at..at + 4].copy_from_slice(&(n as u32).to_le_bytes());
}

struct Reader<'a> {
    bytes: &'a [u8],
    rank: u32,
}

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8], WireError> {
        if self.bytes.len() < n {
            return Err(WireError {
                rank: self.rank,
                what: "truncated interval".into(),
            });
        }
        let (a, b) = self.bytes.split_at(n);
        self.bytes = b;
        Ok(a)
    }
    fn u8(&mut self) -> Result<u8, WireError> {
        Ok(self.take(1)?[0])
    }
    fn u32(&mut self) -> Result<u32, WireError> {
        Ok(u32::from_le_bytes(
            self.take(4)?.try_into().expect("4 bytes"),
        ))
    }
    fn u64(&mut self) -> Result<u64, WireError> {
        Ok(u64::from_le_bytes(
            self.take(8)?.try_into().expect("8 bytes"),
        ))
    }
    fn histogram(&mut self, de: &mut Deserializer) -> Result<Histogram<u32>, WireError> {
        let n = self.u32()? as usize;
        let rank = self.rank;
        let mut bytes = self.take(n)?;
        de.deserialize(&mut bytes).map_err(|e| WireError {
            rank,
            what: format!("histogram: {e:?}"),
        })
    }
}

/// Reads one interval sent by `rank`.
pub fn decode_interval(
    bytes: &[u8],
    rank: u32,
    de: &mut Deserializer,
) -> Result<Box<Interval>, WireError> {
    let mut r = Reader { bytes, rank };
    let worker = r.u32()?;
    let target = r.u32()?;
    let index = r.u64()? as i64;
    let (start_ns, end_ns, cpu_ns) = (r.u64()?, r.u64()?, r.u64()?);
    let last = r.u8()? != 0;
    let mut iv = Interval::new(worker, target, &[], false);
    iv.index = index;
    iv.start_ns = start_ns;
    iv.end_ns = end_ns;
    iv.cpu_ns = cpu_ns;
    iv.last = last;
    for kind in OpKind::ALL {
        let present = r.u8()?;
        if present == 0 {
            continue;
        }
        let (ops, bytes, misses, service_sum_ns) = (r.u64()?, r.u64()?, r.u64()?, r.u64()?);
        let mut errors = [0u64; ErrorKind::COUNT];
        for e in errors.iter_mut() {
            *e = r.u64()?;
        }
        // Straight into the interval: no empty histogram allocated first.
        let service = r.histogram(de)?;
        let intended = if present == 2 {
            Some(r.histogram(de)?)
        } else {
            None
        };
        let k = KindStats {
            service,
            intended,
            ops,
            bytes,
            misses,
            errors,
            service_sum_ns,
        };
        iv.kinds[kind as usize] = Some(k);
    }
    let n = r.u8()? as usize;
    for i in 0..n {
        let (kind, ekind) = (r.u8()? as usize, r.u8()? as usize);
        let code = r.u32()? as i32;
        let (Some(kind), Some(ekind)) = (OpKind::ALL.get(kind), ErrorKind::ALL.get(ekind)) else {
            return Err(WireError {
                rank,
                what: "unknown operation or error kind".into(),
            });
        };
        if i < ERROR_SAMPLES {
            iv.error_samples[i] = Some((*kind, OpError { kind: *ekind, code }));
        }
    }
    Ok(iv)
}

/// A rank's opening message for a run: who and where it is, its clock offset, its system.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct Hello {
    pub rank: u32,
    pub host: String,
    pub pid: u32,
    /// Its wall clock minus rank 0's, ns.
    pub clock_offset_ns: i64,
    pub clock_rtt_ns: u64,
    /// Its system capture (`results::system::SystemInfo`).
    pub system: serde_json::Value,
    /// Preparing its targets failed: why (the run is then called off on every rank).
    pub error: Option<String>,
}

/// One of a rank's workers at its end, times on rank 0's run clock.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct WorkerEndWire {
    pub worker: u32,
    pub end_reason: storlab_record::EndReason,
    pub measured_ops: u64,
    pub measure_start_ns: u64,
    pub last_completion_ns: u64,
    pub spare_waits: u64,
    #[serde(default)]
    pub spare_wait_ns: u64,
    /// Measured intended starts skipped for the latency limit.
    #[serde(default)]
    pub skipped_starts: u64,
    pub used: Vec<(String, String)>,
    /// A session that could not open: why.
    pub open_error: Option<String>,
    /// The CPUs its thread was pinned to (its workload's `cpus`), as read back.
    #[serde(default)]
    pub pinned_cpus: Option<storlab_model::cpus::CpuList>,
}

/// A rank's closing message for a run.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct Final {
    pub workers: Vec<WorkerEndWire>,
    /// CPU time of the rank's process over the run, ns.
    pub cpu_used_ns: u64,
    /// What it sent for this run before this message.
    pub bytes_sent: u64,
    pub messages_sent: u64,
    /// A training workload's accelerators on this rank: (target index, what each did).
    #[serde(default)]
    pub training: Vec<(usize, Vec<storlab_model::training::AcceleratorSteps>)>,
    /// Its own workers' measured figures per target and kind (its row of the rank table).
    #[serde(default)]
    pub totals: Vec<KindTotalsWire>,
    /// Each of its workers' measured counts and CPU time (their rows in the summary).
    #[serde(default)]
    pub worker_totals: Vec<WorkerTotalsWire>,
    /// Its children in the gather tree that it declared lost.
    #[serde(default)]
    pub lost: Vec<LostWire>,
    /// What gathering cost it (its shipper thread).
    #[serde(default)]
    pub gather: GatherWire,
}

/// One operation kind's measured totals on one target, histograms V2-serialized in base64.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct KindTotalsWire {
    pub target: u32,
    pub kind: u8,
    pub ops: u64,
    pub bytes: u64,
    pub misses: u64,
    pub errors: Vec<u64>,
    pub service: String,
    pub intended: Option<String>,
}

fn histogram_text(h: &Histogram<u64>) -> String {
    use base64::Engine;
    let mut out = Vec::new();
    V2Serializer::new()
        .serialize(h, &mut out)
        .expect("serializing into memory does not fail");
    base64::engine::general_purpose::STANDARD.encode(out)
}

fn histogram_of(text: &str) -> Option<Histogram<u64>> {
    use base64::Engine;
    let raw = base64::engine::general_purpose::STANDARD
        .decode(text)
        .ok()?;
    Deserializer::new().deserialize(&mut &raw[..]).ok()
}

impl KindTotalsWire {
    pub fn encode(target: u32, kind: usize, t: &KindTotals) -> KindTotalsWire {
        KindTotalsWire {
            target,
            kind: kind as u8,
            ops: t.ops,
            bytes: t.bytes,
            misses: t.misses,
            errors: t.errors.to_vec(),
            service: histogram_text(&t.service),
            intended: t.intended.as_ref().map(histogram_text),
        }
    }

    /// The totals back; None if a histogram does not decode.
    pub fn decode(&self) -> Option<KindTotals> {
        let mut errors = [0u64; ErrorKind::COUNT];
        for (d, s) in errors.iter_mut().zip(&self.errors) {
            *d = *s;
        }
        let intended = match &self.intended {
            Some(t) => Some(histogram_of(t)?),
            None => None,
        };
        Some(KindTotals {
            service: histogram_of(&self.service)?,
            intended,
            ops: self.ops,
            bytes: self.bytes,
            misses: self.misses,
            errors,
        })
    }
}

/// One worker's measured counts per kind and its CPU time in measured intervals.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct WorkerTotalsWire {
    pub worker: u32,
    pub cpu_ns: u64,
    pub wall_ns: u64,
    /// Per kind it ran: (kind, ops, bytes, errors, service sum ns, service max ns).
    pub kinds: Vec<(u8, u64, u64, u64, u64, u64)>,
}

/// A rank its parent in the gather tree declared lost: when it was last heard (rank 0's run
/// clock, ns), what it had sent, and its own workers' figures as they reached the parent.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct LostWire {
    pub rank: u32,
    pub last_heard_ns: u64,
    pub bytes: u64,
    pub messages: u64,
    pub totals: Vec<KindTotalsWire>,
}

/// What gathering cost one rank over a run: its shipper thread's CPU time, what it received
/// from its children and the histograms it added.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct GatherWire {
    pub cpu_ns: u64,
    pub bytes_received: u64,
    pub messages_received: u64,
    pub histogram_merges: u64,
}

/// Rank 0 to the others: stop issuing (sent with the run's index, so that a stop arriving
/// late is not taken for the next run's).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Stop {
    /// The stonewall: a rank finished its operations.
    Stonewall,
    /// Rank 0 was interrupted: stop, and skip the study's later runs.
    Interrupted,
    /// Rank 0's collector found steady state in the merged intervals of every rank.
    SteadyState,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_interval_survives_the_wire() {
        let mut iv = Interval::new(7, 1, &[OpKind::Read, OpKind::Write], true);
        iv.index = -2;
        iv.start_ns = 5;
        iv.end_ns = 1_000_000_005;
        iv.cpu_ns = 42;
        iv.last = true;
        {
            let k = iv.kinds[OpKind::Read as usize].as_mut().unwrap();
            for v in [1u64, 10, 100, 1000, 123_456, 9_999_999] {
                k.service.record(v).unwrap();
            }
            k.intended.as_mut().unwrap().record(77).unwrap();
            k.ops = 6;
            k.bytes = 6 * 4096;
            k.errors[ErrorKind::Timeout as usize] = 3;
            k.service_sum_ns = 10_124_566;
        }
        iv.error_samples[0] = Some((OpKind::Write, OpError::errno(libc::EIO)));
        let mut out = Vec::new();
        encode_interval(&iv, &mut V2Serializer::new(), &mut out);
        let back = decode_interval(&out, 3, &mut Deserializer::new()).unwrap();
        assert_eq!(
            (
                back.worker,
                back.target,
                back.index,
                back.start_ns,
                back.end_ns
            ),
            (7, 1, -2, 5, 1_000_000_005)
        );
        assert_eq!((back.cpu_ns, back.last), (42, true));
        let (a, b) = (
            iv.kinds[0].as_ref().unwrap(),
            back.kinds[0].as_ref().unwrap(),
        );
        assert_eq!(a.service, b.service);
        assert_eq!(a.intended, b.intended);
        assert_eq!(
            (a.ops, a.bytes, a.errors, a.service_sum_ns),
            (b.ops, b.bytes, b.errors, b.service_sum_ns)
        );
        assert!(back.kinds[OpKind::Write as usize].is_some());
        assert!(back.kinds[OpKind::Fsync as usize].is_none());
        assert_eq!(back.error_samples[0], iv.error_samples[0]);
        assert!(decode_interval(&out[..out.len() - 3], 3, &mut Deserializer::new()).is_err());
    }

    #[test]
    fn totals_survive_the_wire() {
        let mut t = KindTotals::new(true);
        for v in [1u64, 1000, 123_456_789] {
            t.service.record(v).unwrap();
        }
        t.intended.as_mut().unwrap().record(5).unwrap();
        t.ops = 3;
        t.errors[1] = 2;
        let w = KindTotalsWire::encode(2, 1, &t);
        let text = serde_json::to_string(&w).unwrap();
        let back: KindTotalsWire = serde_json::from_str(&text).unwrap();
        let back = back.decode().unwrap();
        assert_eq!(back.service, t.service);
        assert_eq!(back.intended, t.intended);
        assert_eq!((back.ops, back.errors), (3, t.errors));
        let bad = KindTotalsWire {
            service: "!".into(),
            ..w
        };
        assert!(bad.decode().is_none());
    }
}
