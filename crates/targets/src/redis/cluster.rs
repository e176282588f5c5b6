//! Redis Cluster mode of the `redis` target (`cluster = true`): each worker keeps a slot map
//! (16384 slots to the master serving them, from `CLUSTER SLOTS`) and one plain connection
//! per master, and sends each packed command to the master of its key's slot (CRC16 of the
//! key, or of its `{hash tag}`, modulo 16384, as the cluster specification defines it).
//!
//! Redirections and failovers are handled here: a `MOVED` reply points the slot at the node
//! it names and retries there (the whole map is read again before the next command); an `ASK`
//! reply sends `ASKING` and the command to the node it names once; a connection that fails
//! (the master died) is dropped and counted as the operation's error, and the map is read
//! again, from a node that still answers, before the next command, so once a replica has taken
//! over its slots the next command goes to it. `CLUSTERDOWN`, `TRYAGAIN`, `MASTERDOWN` and
//! `READONLY` and `LOADING` replies count as `unavailable` errors (the cluster refused to serve the slot now).
//!
//! Why not the `redis` crate's `ClusterConnection`: it parses every packed command back into a
//! value to route it (an allocation per argument per operation); this router reads the key out
//! of the packed bytes in place, so an operation allocates what one connection to one server
//! allocates (the parsed reply) and nothing more. The map and the connections are only
//! (re)built after an error or a redirection.

use std::time::Duration;

use redis::{ConnectionLike, ServerErrorKind, Value};

use storlab_model::{ErrorKind, OpError};

/// Slots of a Redis Cluster.
pub const SLOTS: usize = 16384;
/// No node known for a slot.
const NONE: u16 = u16::MAX;
/// Redirections followed for one command before it counts as unavailable.
const MAX_REDIRECTS: usize = 5;

pub const UNAVAILABLE: OpError = OpError {
    kind: ErrorKind::Unavailable,
    code: 0,
};

/// The hash slot of a key (the cluster specification's `HASH_SLOT`): CRC16 (XMODEM) of the
/// key, or of the text between its first `{` and the next `}` when that is not empty.
#[inline]
pub fn key_slot(key: &[u8]) -> u16 {
    let tagged = key.iter().position(|&b| b == b'{').and_then(|open| {
        let rest = &key[open + 1..];
        let close = rest.iter().position(|&b| b == b'}')?;
        (close > 0).then(|| &rest[..close])
    });
    crc16::State::<crc16::XMODEM>::calculate(tagged.unwrap_or(key)) % SLOTS as u16
}

/// Reads a RESP decimal ending in `\r\n` at `at`: (value, index after the `\r\n`).
#[inline]
fn decimal_at(buf: &[u8], mut at: usize) -> Option<(usize, usize)> {
    let mut n = 0usize;
    let start = at;
    while at < buf.len() && buf[at].is_ascii_digit() {
        n = n.checked_mul(10)?.checked_add((buf[at] - b'0') as usize)?;
        at += 1;
    }
    (at > start && buf.get(at..at + 2) == Some(b"\r\n")).then_some((n, at + 2))
}

/// The first packed command in `buf` (an array of bulk strings, as storlab packs them): its
/// length in bytes and its key (the second argument; none for a one-argument command).
#[inline]
pub fn split_command(buf: &[u8]) -> Option<(usize, Option<&[u8]>)> {
    if buf.first() != Some(&b'*') {
        return None;
    }
    let (args, mut at) = decimal_at(buf, 1)?;
    let mut key = None;
    for i in 0..args {
        if buf.get(at) != Some(&b'$') {
            return None;
        }
        let (len, from) = decimal_at(buf, at + 1)?;
        let to = from.checked_add(len)?;
        if buf.get(to..to + 2) != Some(b"\r\n") {
            return None;
        }
        if i == 1 {
            key = Some(&buf[from..to]);
        }
        at = to + 2;
    }
    Some((at, key))
}

/// One master (or a node named by a redirection).
struct Node {
    host: String,
    port: u16,
    conn: Option<redis::Connection>,
}

/// A worker's view of the cluster: the slot map and a connection per node.
pub struct Router {
    seeds: Vec<(String, u16)>,
    password: Option<String>,
    timeout: Duration,
    nodes: Vec<Node>,
    /// Each slot's node (an index into `nodes`), or NONE.
    slots: Box<[u16]>,
    /// Read the map again before the next command.
    stale: bool,
}

impl Router {
    pub fn new(seeds: Vec<(String, u16)>, password: Option<String>, timeout: Duration) -> Self {
        Router {
            seeds,
            password,
            timeout,
            nodes: Vec::new(),
            slots: vec![NONE; SLOTS].into_boxed_slice(),
            stale: true,
        }
    }

    fn open(&self, host: &str, port: u16) -> redis::RedisResult<redis::Connection> {
        let mut settings = redis::RedisConnectionInfo::default();
        if let Some(p) = &self.password {
            settings = settings.set_password(p);
        }
        let info = redis::IntoConnectionInfo::into_connection_info(redis::ConnectionAddr::Tcp(
            host.to_string(),
            port,
        ))?
        .set_redis_settings(settings);
        let conn = redis::Client::open(info)?.get_connection_with_timeout(self.timeout)?;
        conn.set_read_timeout(Some(self.timeout))?;
        conn.set_write_timeout(Some(self.timeout))?;
        Ok(conn)
    }

    /// The index of node host:port, added when new.
    fn node(&mut self, host: &str, port: u16) -> usize {
        if let Some(i) = self
            .nodes
            .iter()
            .position(|n| n.port == port && n.host == host)
        {
            return i;
        }
        self.nodes.push(Node {
            host: host.to_string(),
            port,
            conn: None,
        });
        self.nodes.len() - 1
    }

    fn conn(&mut self, i: usize) -> Result<&mut redis::Connection, OpError> {
        if self.nodes[i].conn.is_none() {
            let c = self
                .open(&self.nodes[i].host, self.nodes[i].port)
                .map_err(|e| super::error_of(&e))?;
            self.nodes[i].conn = Some(c);
        }
        self.nodes[i].conn.as_mut().ok_or(OpError {
            kind: ErrorKind::Connection,
            code: 0,
        })
    }

    /// Reads the slot map (`CLUSTER SLOTS`) from the first node that answers: nodes with an
    /// open connection first, then the seeds, then the others.
    pub fn refresh(&mut self) -> Result<(), OpError> {
        let mut order: Vec<(String, u16)> = Vec::new();
        for n in self.nodes.iter().filter(|n| n.conn.is_some()) {
            order.push((n.host.clone(), n.port));
        }
        for s in &self.seeds {
            if !order.contains(s) {
                order.push(s.clone());
            }
        }
        for n in self.nodes.iter().filter(|n| n.conn.is_none()) {
            let s = (n.host.clone(), n.port);
            if !order.contains(&s) {
                order.push(s);
            }
        }
        let mut last = OpError {
            kind: ErrorKind::Connection,
            code: 0,
        };
        for (host, port) in order {
            let i = self.node(&host, port);
            let reply = match self.conn(i) {
                Ok(c) => c.req_packed_command(b"*2\r\n$7\r\nCLUSTER\r\n$5\r\nSLOTS\r\n"),
                Err(e) => {
                    last = e;
                    continue;
                }
            };
            match reply {
                Ok(Value::Array(ranges)) if !ranges.is_empty() => {
                    self.apply(&ranges, &host);
                    self.stale = false;
                    return Ok(());
                }
                Ok(_) => last = UNAVAILABLE,
                Err(e) => {
                    last = super::error_of(&e);
                    self.nodes[i].conn = None;
                }
            }
        }
        Err(last)
    }

    /// Sets the map from a `CLUSTER SLOTS` reply (asked of `asked`: an empty address means
    /// that node).
    fn apply(&mut self, ranges: &[Value], asked: &str) {
        self.slots.fill(NONE);
        for r in ranges {
            let Value::Array(r) = r else { continue };
            let (Some(Value::Int(from)), Some(Value::Int(to)), Some(Value::Array(master))) =
                (r.first(), r.get(1), r.get(2))
            else {
                continue;
            };
            let host = match master.first() {
                Some(Value::BulkString(h)) if !h.is_empty() => {
                    String::from_utf8_lossy(h).into_owned()
                }
                _ => asked.to_string(),
            };
            let Some(Value::Int(port)) = master.get(1) else {
                continue;
            };
            let Ok(port) = u16::try_from(*port) else {
                continue;
            };
            let i = self.node(&host, port) as u16;
            let (from, to) = ((*from).max(0) as usize, (*to).max(0) as usize);
            for s in from..=to.min(SLOTS - 1) {
                self.slots[s] = i;
            }
        }
    }

    /// Sends one packed command to the master of `slot` and returns its reply, following
    /// redirections. A server error other than a redirection or an unavailable slot is
    /// returned as the reply.
    pub fn request(&mut self, slot: u16, cmd: &[u8]) -> Result<Value, OpError> {
        let mut ask: Option<usize> = None;
        for _ in 0..MAX_REDIRECTS {
            let i = match ask {
                Some(i) => i,
                None => {
                    if self.stale || self.slots[slot as usize] == NONE {
                        self.refresh()?;
                    }
                    match self.slots[slot as usize] {
                        NONE => return Err(UNAVAILABLE),
                        i => i as usize,
                    }
                }
            };
            let asking = ask.take().is_some();
            let conn = match self.conn(i) {
                Ok(c) => c,
                Err(e) => {
                    self.stale = true;
                    return Err(e);
                }
            };
            let sent = if asking {
                conn.req_packed_command(b"*1\r\n$6\r\nASKING\r\n")
                    .and_then(|_| conn.req_packed_command(cmd))
            } else {
                conn.req_packed_command(cmd)
            };
            match sent {
                Ok(Value::ServerError(e)) => match e.kind() {
                    Some(ServerErrorKind::Moved) | Some(ServerErrorKind::Ask) => {
                        let moved = e.kind() == Some(ServerErrorKind::Moved);
                        let Some((host, port)) = e.details().and_then(redirect_target) else {
                            return Err(UNAVAILABLE);
                        };
                        let j = self.node(host, port);
                        if moved {
                            self.slots[slot as usize] = j as u16;
                            self.stale = true;
                        } else {
                            ask = Some(j);
                        }
                    }
                    Some(
                        ServerErrorKind::ClusterDown
                        | ServerErrorKind::TryAgain
                        | ServerErrorKind::MasterDown
                        | ServerErrorKind::ReadOnly
                        | ServerErrorKind::BusyLoading,
                    ) => {
                        self.stale = true;
                        return Err(UNAVAILABLE);
                    }
                    _ => return Ok(Value::ServerError(e)),
                },
                Ok(v) => return Ok(v),
                Err(e) => {
                    self.nodes[i].conn = None;
                    self.stale = true;
                    return Err(super::error_of(&e));
                }
            }
        }
        Err(UNAVAILABLE)
    }

    /// Sends the `count` packed commands of `buf`, each to its key's master, one after the
    /// other, and returns their replies in order.
    pub fn request_all(&mut self, buf: &[u8], count: usize) -> Result<Vec<Value>, OpError> {
        let mut replies = Vec::with_capacity(count);
        let mut at = 0;
        for _ in 0..count {
            let (len, key) = split_command(&buf[at..]).ok_or(OpError {
                kind: ErrorKind::Invalid,
                code: 0,
            })?;
            let slot = key.map_or(0, key_slot);
            replies.push(self.request(slot, &buf[at..at + len])?);
            at += len;
        }
        Ok(replies)
    }

    /// The first node of the map that answers, for commands about the server (`INFO`).
    pub fn any(&mut self) -> Result<&mut redis::Connection, OpError> {
        if self.stale {
            self.refresh()?;
        }
        let i = self.slots[0];
        if i == NONE {
            return Err(UNAVAILABLE);
        }
        self.conn(i as usize)
    }
}

/// The address of a `MOVED`/`ASK` reply's details, `SLOT HOST:PORT`.
fn redirect_target(details: &str) -> Option<(&str, u16)> {
    let addr = details.split_whitespace().nth(1)?;
    let (host, port) = addr.rsplit_once(':')?;
    Some((host, port.parse().ok()?))
}

/// `host:port,host:port` (or one address) to seeds.
pub fn parse_seeds(text: &str) -> Result<Vec<(String, u16)>, String> {
    let mut out = Vec::new();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let part = part.strip_prefix("redis://").unwrap_or(part);
        let (host, port) = part
            .rsplit_once(':')
            .ok_or_else(|| format!("`{part}` is not HOST:PORT"))?;
        let port: u16 = port
            .parse()
            .ok()
            .filter(|p| *p > 0)
            .ok_or_else(|| format!("`{part}`: `{port}` is not a port number (1 to 65535)"))?;
        if host.is_empty() {
            return Err(format!("`{part}` has no host"));
        }
        out.push((host.to_string(), port));
    }
    if out.is_empty() {
        return Err("no HOST:PORT given".into());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_as_the_cluster_specification_computes_them() {
        // The specification's example: CRC16("123456789") = 0x31C3; Redis's CLUSTER KEYSLOT.
        assert_eq!(key_slot(b"123456789"), 0x31C3);
        assert_eq!(key_slot(b"foo"), 12182);
        assert_eq!(key_slot(b"{user1000}.following"), key_slot(b"user1000"));
        assert_eq!(key_slot(b"foo{}{bar}"), key_slot(b"foo{}{bar}"));
        assert_ne!(key_slot(b"foo{}{bar}"), key_slot(b"bar"));
        assert_eq!(key_slot(b"foo{{bar}}zap"), key_slot(b"{bar"));
    }

    #[test]
    fn commands_split_with_their_key() {
        let buf = b"*3\r\n$4\r\nHGET\r\n$2\r\nk1\r\n$1\r\nf\r\n*1\r\n$4\r\nPING\r\n";
        let (len, key) = split_command(buf).unwrap();
        assert_eq!(key, Some(&b"k1"[..]));
        assert_eq!(split_command(&buf[len..]), Some((14, None)));
        assert_eq!(split_command(b"*2\r\n$3\r\nGET\r\n$5\r\nk1\r\n"), None);
        assert_eq!(
            redirect_target("3999 10.0.0.2:6381"),
            Some(("10.0.0.2", 6381))
        );
        assert_eq!(
            parse_seeds("a:1, redis://b:2").unwrap(),
            vec![("a".into(), 1), ("b".into(), 2)]
        );
        assert!(parse_seeds("a").is_err());
        assert!(parse_seeds("a:0").is_err());
    }
}
