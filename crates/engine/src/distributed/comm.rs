//! MPI for distributed runs: starting it (MPI_THREAD_MULTIPLE: rank 0's receiving thread and
//! a rank's shipper thread talk while the main thread joins the collective start), who the
//! ranks are and on which hosts, the clock ping-pong, the agreed start, and sending and
//! receiving byte messages by tag.

use std::sync::OnceLock;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use mpi::collective::SystemOperation;
use mpi::environment::Universe;
use mpi::point_to_point::MatchedReceiveVec;
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;

use super::DistError;
use super::wire::{TAG_PING, TAG_PONG};

/// This process's place in the MPI job.
#[derive(Debug)]
pub struct Dist {
    pub rank: u32,
    pub size: u32,
    /// Per rank: its host (MPI's processor name).
    pub hosts: Vec<String>,
}

/// Holds MPI open; finalizes it when dropped.
pub struct MpiGuard {
    _universe: Universe,
}

static DIST: OnceLock<Dist> = OnceLock::new();

/// The MPI job this process runs in, once [`start`]ed.
pub fn current() -> Option<&'static Dist> {
    DIST.get()
}

/// Starts MPI when launched under mpirun/srun (as one of more than one process); None when
/// not launched so (storlab then runs as on its own).
pub fn start() -> Result<Option<MpiGuard>, DistError> {
    if super::launched_size().is_none() {
        return Ok(None);
    }
    let (universe, threading) = mpi::initialize_with_threading(mpi::Threading::Multiple)
        .ok_or_else(|| DistError::Mpi("MPI was already initialized".into()))?;
    if threading != mpi::Threading::Multiple {
        return Err(DistError::Mpi(format!(
            "the MPI library gives thread level {threading:?}; storlab needs MPI_THREAD_MULTIPLE"
        )));
    }
    let world = universe.world();
    let size = world.size() as u32;
    let rank = world.rank() as u32;
    let name = mpi::environment::processor_name().unwrap_or_else(|_| "unknown".into());
    const NAME: usize = 256;
    let mut mine = [0u8; NAME];
    let n = name.len().min(NAME);
    mine[..n].copy_from_slice(&name.as_bytes()[..n]);
    let mut all = vec![0u8; NAME * size as usize];
    world.all_gather_into(&mine[..], &mut all[..]);
    let hosts = all
        .chunks(NAME)
        .map(|c| {
            let end = c.iter().position(|b| *b == 0).unwrap_or(NAME);
            String::from_utf8_lossy(&c[..end]).into_owned()
        })
        .collect();
    let _ = DIST.set(Dist { rank, size, hosts });
    Ok(Some(MpiGuard {
        _universe: universe,
    }))
}

/// Wall clock, ns since the epoch.
pub fn wall_ns() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_nanos() as i64
}

fn world() -> SimpleCommunicator {
    SimpleCommunicator::world()
}

impl Dist {
    /// Ends every rank of the job (after an error on this one: the others would otherwise
    /// wait for it forever).
    pub fn abort(&self, code: i32) -> ! {
        world().abort(code)
    }

    pub fn host(&self) -> &str {
        &self.hosts[self.rank as usize]
    }

    pub fn send(&self, to: u32, tag: i32, bytes: &[u8]) {
        world().process_at_rank(to as i32).send_with_tag(bytes, tag);
    }

    /// Waits for a message with `tag` from `from`.
    pub fn receive(&self, from: u32, tag: i32) -> Vec<u8> {
        let (v, _) = world()
            .process_at_rank(from as i32)
            .receive_vec_with_tag::<u8>(tag);
        v
    }

    /// A message with `tag` from any rank, if one is waiting.
    pub fn try_receive_any(&self, tag: i32) -> Option<(u32, Vec<u8>)> {
        let (msg, status) = world()
            .any_process()
            .immediate_matched_probe_with_tag(tag)?;
        let (v, _) = (msg, status).matched_receive_vec::<u8>();
        Some((status.source_rank() as u32, v))
    }

    /// A message with `tag` from `from`, if one is waiting.
    pub fn try_receive(&self, from: u32, tag: i32) -> Option<Vec<u8>> {
        let (msg, status) = world()
            .process_at_rank(from as i32)
            .immediate_matched_probe_with_tag(tag)?;
        let (v, _) = (msg, status).matched_receive_vec::<u8>();
        Some(v)
    }

    /// Rank r (not 0): measures its wall clock's offset to rank 0's (its clock minus rank
    /// 0's, ns) and the round trip, from the ping-pong with the smallest round trip.
    pub fn measure_offset(&self, pings: u32) -> (i64, u64) {
        let mut best = (0i64, u64::MAX);
        for _ in 0..pings {
            let t0 = wall_ns();
            self.send(0, TAG_PING, &t0.to_le_bytes());
            let reply = self.receive(0, TAG_PONG);
            let t2 = wall_ns();
            let t1 = i64::from_le_bytes(reply[..8].try_into().unwrap_or([0; 8]));
            let rtt = (t2 - t0).max(0) as u64;
            if rtt < best.1 {
                best = ((t0 + t2) / 2 - t1, rtt);
            }
        }
        best
    }

    /// Rank 0: answers rank `from`'s ping-pong.
    pub fn serve_offset(&self, from: u32, pings: u32) {
        for _ in 0..pings {
            let _ = self.receive(from, TAG_PING);
            self.send(from, TAG_PONG, &wall_ns().to_le_bytes());
        }
    }

    /// Every rank: whether all opened their sessions; if so, rank 0's start (its wall
    /// clock, ns, and its run clock, ns), the same on every rank. `start_in` is how long
    /// after now rank 0 starts.
    pub fn agree_start(
        &self,
        ok_here: bool,
        rank0_clock_ns: u64,
        start_in: Duration,
    ) -> Option<(i64, u64)> {
        let w = world();
        let mine = ok_here as i32;
        let mut all = 0i32;
        w.all_reduce_into(&mine, &mut all, SystemOperation::min());
        if all == 0 {
            return None;
        }
        let mut start = [0u64; 2];
        if self.rank == 0 {
            start = [
                (wall_ns() + start_in.as_nanos() as i64) as u64,
                rank0_clock_ns + start_in.as_nanos() as u64,
            ];
        }
        w.process_at_rank(0).broadcast_into(&mut start[..]);
        Some((start[0] as i64, start[1]))
    }
}
