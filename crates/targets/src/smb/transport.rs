//! The `smb` target's TCP transport, handed to the crate with `Connection::from_transport`.
//! It differs from the crate's own `TcpTransport` in three ways, each measured or observed:
//!
//! - TCP_NODELAY is set on the connected socket (the crate leaves Nagle's algorithm on: about
//!   1k IOPS at 12 outstanding reads against Samba without it, 11.8k with it).
//! - A message goes out in one `write` (transport header and parts copied into one buffer the
//!   transport keeps), where the crate's writes the 4-byte header and each part separately.
//! - Every read or write failure ends the connection (`NotConnected`): the crate's maps only
//!   EOF and aborts so, and its receive loop retries other errors (a reset) without end.
//!
//! It also counts requests sent and messages received, so that a session can say how many
//! requests were in flight on the wire at most (measured, not assumed from the queue depth),
//! and the interim responses (STATUS_PENDING: the server went asynchronous on a request that
//! took it longer than it waits before answering, 0.5 ms for Samba's reads and writes) with the
//! credits they granted, and the credits of every message: granted by the responses, charged and
//! asked for by the requests, and the most the client held, so that a run shows whether its
//! connection ever ran short of them (against Samba with 25 shares x 2 workers x 24 reads: 128
//! held from the logon on, at most 24 requests in flight: credits never limited it).

use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::time::Duration;

use smb_transport::{IoVec, SmbTransport, SmbTransportRead, SmbTransportWrite, TransportError};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};

type BoxFuture<'a, T> = Pin<Box<dyn std::future::Future<Output = T> + Send + 'a>>;

/// Messages sent and received on one connection, and the most in flight at once.
#[derive(Debug, Default)]
pub struct WireCounters {
    pub sent: AtomicU64,
    pub received: AtomicU64,
    in_flight: AtomicI64,
    pub max_in_flight: AtomicI64,
    /// Interim (STATUS_PENDING) responses received.
    pub interim: AtomicU64,
    /// Credits the interim responses granted.
    pub interim_credits: AtomicU64,
    /// Credits every response granted (interim ones included).
    pub credits_granted: AtomicU64,
    /// Credits the requests sent charged (a request without a charge costs 1).
    pub credits_charged: AtomicU64,
    /// The most credits a request asked for.
    pub max_credits_requested: AtomicU64,
    /// The most credits the client held (granted, not yet charged) after a response.
    pub max_credits_held: AtomicI64,
}

/// SMB2's protocol id at the start of a plain (not encrypted or compressed) message.
const SMB2_MAGIC: [u8; 4] = [0xFE, b'S', b'M', b'B'];
const STATUS_PENDING: u32 = 0x0000_0103;
const FLAG_ASYNC: u32 = 0x0000_0002;

/// The credits a plain SMB2 message's header carries (granted in a response, asked for in a
/// request) and its credit charge.
fn credit_fields(message: &[u8]) -> Option<(u16, u16)> {
    if message.len() < 64 || message[..4] != SMB2_MAGIC {
        return None;
    }
    let le16 = |at: usize| u16::from_le_bytes([message[at], message[at + 1]]);
    Some((le16(14), le16(6)))
}

/// The credits an interim response grants, if `message` is one.
fn interim_credits(message: &[u8]) -> Option<u16> {
    if message.len() < 64 || message[..4] != SMB2_MAGIC {
        return None;
    }
    let le32 = |at: usize| u32::from_le_bytes([message[at], message[at + 1], message[at + 2], message[at + 3]]);
    (le32(8) == STATUS_PENDING && le32(16) & FLAG_ASYNC != 0)
        .then(|| u16::from_le_bytes([message[14], message[15]]))
}

impl WireCounters {
    #[inline]
    fn on_send(&self, message: &[u8]) {
        if let Some((requested, charge)) = credit_fields(message) {
            self.credits_charged
                .fetch_add(charge.max(1) as u64, Ordering::Relaxed);
            self.max_credits_requested
                .fetch_max(requested as u64, Ordering::Relaxed);
        }
        self.sent.fetch_add(1, Ordering::Relaxed);
        let now = self.in_flight.fetch_add(1, Ordering::Relaxed) + 1;
        self.max_in_flight.fetch_max(now, Ordering::Relaxed);
    }

    /// An interim response (STATUS_PENDING) is a message too: the count of messages in
    /// flight never goes below zero.
    #[inline]
    fn on_receive(&self, message: &[u8]) {
        if let Some(credits) = interim_credits(message) {
            self.interim.fetch_add(1, Ordering::Relaxed);
            self.interim_credits
                .fetch_add(credits as u64, Ordering::Relaxed);
        }
        if let Some((granted, _)) = credit_fields(message) {
            let granted = self
                .credits_granted
                .fetch_add(granted as u64, Ordering::Relaxed)
                + granted as u64;
            // The connection starts with one credit.
            let held = 1 + granted as i64 - self.credits_charged.load(Ordering::Relaxed) as i64;
            self.max_credits_held.fetch_max(held, Ordering::Relaxed);
        }
        self.received.fetch_add(1, Ordering::Relaxed);
        let _ = self
            .in_flight
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| Some((n - 1).max(0)));
    }
}

/// What connecting found out about the socket.
#[derive(Debug, Clone)]
pub struct SocketFacts {
    /// TCP_NODELAY as read back from the socket after setting it.
    pub nodelay: Result<bool, String>,
}

/// A connected TCP socket with TCP_NODELAY set, split into its halves.
pub struct NoDelayTcp {
    read: ReadPart,
    write: WritePart,
    peer: SocketAddr,
}

pub struct ReadPart {
    half: OwnedReadHalf,
    counters: Arc<WireCounters>,
}

pub struct WritePart {
    half: OwnedWriteHalf,
    /// One message: transport header and parts (kept, so sends reuse its memory).
    out: Vec<u8>,
    counters: Arc<WireCounters>,
}

impl NoDelayTcp {
    /// Connects within `timeout` and sets TCP_NODELAY.
    pub async fn connect(
        peer: SocketAddr,
        timeout: Duration,
        counters: Arc<WireCounters>,
    ) -> std::io::Result<(NoDelayTcp, SocketFacts)> {
        let stream = match tokio::time::timeout(timeout, TcpStream::connect(peer)).await {
            Ok(r) => r?,
            Err(_) => {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    format!("no answer within {} s", timeout.as_secs_f64()),
                ));
            }
        };
        let nodelay = stream
            .set_nodelay(true)
            .and_then(|()| stream.nodelay())
            .map_err(|e| e.to_string());
        let (r, w) = stream.into_split();
        Ok((
            NoDelayTcp {
                read: ReadPart {
                    half: r,
                    counters: counters.clone(),
                },
                write: WritePart {
                    half: w,
                    out: Vec::with_capacity(64 << 10),
                    counters,
                },
                peer,
            },
            SocketFacts { nodelay },
        ))
    }
}

/// Any failure of the socket ends the connection.
fn ended(_: std::io::Error) -> TransportError {
    TransportError::NotConnected
}

impl ReadPart {
    async fn receive_message(&mut self) -> Result<Vec<u8>, TransportError> {
        let mut header = [0u8; 4];
        self.half.read_exact(&mut header).await.map_err(ended)?;
        if header[0] != 0 {
            return Err(TransportError::InvalidMessage);
        }
        let len = u32::from_be_bytes([0, header[1], header[2], header[3]]) as usize;
        // The crate's interface returns each message as its own vector.
        let mut data = vec![0u8; len];
        self.half.read_exact(&mut data).await.map_err(ended)?;
        self.counters.on_receive(&data);
        Ok(data)
    }
}

impl WritePart {
    async fn send_message(&mut self, data: &IoVec) -> Result<(), TransportError> {
        let total = data.total_size();
        if total >= 1 << 24 {
            return Err(TransportError::InvalidMessage);
        }
        self.out.clear();
        self.out.push(0);
        self.out.extend_from_slice(&(total as u32).to_be_bytes()[1..]);
        for part in data.iter() {
            self.out.extend_from_slice(part);
        }
        self.half.write_all(&self.out).await.map_err(ended)?;
        self.counters.on_send(&self.out[4..]);
        Ok(())
    }
}

impl SmbTransportRead for ReadPart {
    fn receive_exact<'a>(&'a mut self, out: &'a mut [u8]) -> BoxFuture<'a, Result<(), TransportError>> {
        Box::pin(async move { self.half.read_exact(out).await.map(|_| ()).map_err(ended) })
    }

    fn receive<'a>(&'a mut self) -> BoxFuture<'a, Result<Vec<u8>, TransportError>> {
        Box::pin(self.receive_message())
    }
}

impl SmbTransportWrite for WritePart {
    fn send_raw<'a>(&'a mut self, buf: &'a [u8]) -> BoxFuture<'a, Result<(), TransportError>> {
        Box::pin(async move { self.half.write_all(buf).await.map_err(ended) })
    }

    fn send<'a>(&'a mut self, data: &'a IoVec) -> BoxFuture<'a, Result<(), TransportError>> {
        Box::pin(self.send_message(data))
    }
}

impl SmbTransportRead for NoDelayTcp {
    fn receive_exact<'a>(&'a mut self, out: &'a mut [u8]) -> BoxFuture<'a, Result<(), TransportError>> {
        self.read.receive_exact(out)
    }

    fn receive<'a>(&'a mut self) -> BoxFuture<'a, Result<Vec<u8>, TransportError>> {
        Box::pin(self.read.receive_message())
    }
}

impl SmbTransportWrite for NoDelayTcp {
    fn send_raw<'a>(&'a mut self, buf: &'a [u8]) -> BoxFuture<'a, Result<(), TransportError>> {
        self.write.send_raw(buf)
    }

    fn send<'a>(&'a mut self, data: &'a IoVec) -> BoxFuture<'a, Result<(), TransportError>> {
        Box::pin(self.write.send_message(data))
    }
}

impl SmbTransport for NoDelayTcp {
    /// Already connected when handed to the crate.
    fn connect<'a>(
        &'a mut self,
        _server_name: &'a str,
        _address: SocketAddr,
    ) -> BoxFuture<'a, Result<(), TransportError>> {
        Box::pin(async { Err(TransportError::AlreadyConnected) })
    }

    fn default_port(&self) -> u16 {
        445
    }

    fn split(
        self: Box<Self>,
    ) -> Result<(Box<dyn SmbTransportRead>, Box<dyn SmbTransportWrite>), TransportError> {
        let NoDelayTcp { read, write, .. } = *self;
        Ok((Box::new(read), Box::new(write)))
    }

    fn remote_address(&self) -> Result<SocketAddr, TransportError> {
        Ok(self.peer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_in_flight_never_go_below_zero() {
        let c = WireCounters::default();
        c.on_send(&[]);
        c.on_send(&[]);
        c.on_receive(&[]);
        c.on_receive(&[]);
        c.on_receive(&[]); // an interim response
        c.on_send(&[]);
        assert_eq!(c.max_in_flight.load(Ordering::Relaxed), 2);
        assert_eq!(c.in_flight.load(Ordering::Relaxed), 1);
    }

    /// A 64-byte SMB2 header with the given status, flags and credits.
    fn header(status: u32, flags: u32, credits: u16) -> Vec<u8> {
        let mut h = vec![0u8; 64];
        h[..4].copy_from_slice(&SMB2_MAGIC);
        h[8..12].copy_from_slice(&status.to_le_bytes());
        h[14..16].copy_from_slice(&credits.to_le_bytes());
        h[16..20].copy_from_slice(&flags.to_le_bytes());
        h
    }

    #[test]
    fn interim_responses_and_their_credits_are_counted() {
        let c = WireCounters::default();
        c.on_receive(&header(STATUS_PENDING, FLAG_ASYNC | 1, 7));
        // The final response of the same request (async, success, no credits), a synchronous
        // success, a pending status without the async flag, an encrypted message.
        c.on_receive(&header(0, FLAG_ASYNC | 1, 0));
        c.on_receive(&header(0, 1, 3));
        c.on_receive(&header(STATUS_PENDING, 1, 5));
        let mut encrypted = header(STATUS_PENDING, FLAG_ASYNC, 9);
        encrypted[0] = 0xFD;
        c.on_receive(&encrypted);
        assert_eq!(c.interim.load(Ordering::Relaxed), 1);
        assert_eq!(c.interim_credits.load(Ordering::Relaxed), 7);
        assert_eq!(c.received.load(Ordering::Relaxed), 5);
    }

    #[test]
    fn credits_granted_charged_asked_for_and_held_are_counted() {
        let c = WireCounters::default();
        // A request charging 2 credits and asking for 40; one without a charge (costs 1).
        let mut read = header(0, 0, 40);
        read[6..8].copy_from_slice(&2u16.to_le_bytes());
        c.on_send(&read);
        c.on_send(&header(0, 0, 1));
        // Its response grants 33 (the connection's first credit and 33, less 3 charged: 31
        // held), an interim one 1 (32 held), the final response of that one none.
        c.on_receive(&header(0, 1, 33));
        c.on_receive(&header(STATUS_PENDING, FLAG_ASYNC | 1, 1));
        c.on_receive(&header(0, FLAG_ASYNC | 1, 0));
        assert_eq!(c.credits_charged.load(Ordering::Relaxed), 3);
        assert_eq!(c.credits_granted.load(Ordering::Relaxed), 34);
        assert_eq!(c.max_credits_requested.load(Ordering::Relaxed), 40);
        assert_eq!(c.max_credits_held.load(Ordering::Relaxed), 32);
    }

    #[test]
    fn one_write_carries_header_and_parts_and_nodelay_is_set() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();
            let counters = Arc::new(WireCounters::default());
            let (mut t, facts) = NoDelayTcp::connect(addr, Duration::from_secs(5), counters)
                .await
                .unwrap();
            assert_eq!(facts.nodelay, Ok(true));
            let (mut server, _) = listener.accept().await.unwrap();
            let msg = IoVec::from(vec![b"abc".to_vec(), b"de".to_vec()]);
            SmbTransportWrite::send(&mut t, &msg).await.unwrap();
            let mut got = [0u8; 9];
            server.read_exact(&mut got).await.unwrap();
            assert_eq!(&got, b"\x00\x00\x00\x05abcde");
            server.write_all(b"\x00\x00\x00\x02xy").await.unwrap();
            assert_eq!(SmbTransportRead::receive(&mut t).await.unwrap(), b"xy");
            drop(server);
            assert!(matches!(
                SmbTransportRead::receive(&mut t).await,
                Err(TransportError::NotConnected)
            ));
        });
    }
}
