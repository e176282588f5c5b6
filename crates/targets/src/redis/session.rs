//! A redis session: one worker's connection (one server, or a cluster's router), YCSB's
//! operations as Redis commands (a hash per record, `_indices` for scans), inserts pipelined
//! on one server.

use super::resp::{arg, bulk, header, java_hash, key_arg, number};
use super::*;

/// One worker's connection.
pub struct RedisSession {
    pub(super) config: RedisConfig,
    pub(super) link: Link,
    pub(super) record: RecordBuf,
    /// The packed command.
    pub(super) cmd: Vec<u8>,
    /// Inserts are pipelined (queue depth above 1, one server).
    pub(super) pipeline: bool,
    /// The queue depth asked, to say what was used instead in a cluster.
    pub(super) queue_depth: u32,
    /// Inserts submitted and not yet sent (pipelining only).
    pub(super) queue: Vec<(u32, YcsbOp)>,
    /// Bytes of each insert of a pipeline.
    pub(super) sizes: Vec<u32>,
}

/// A session's way to the data.
pub(super) enum Link {
    /// One server's connection; None after it failed: the next operation reconnects.
    Single(Option<redis::Connection>),
    /// A cluster: a connection per master, commands routed by slot.
    Cluster(Box<cluster::Router>),
}

pub(super) fn error_of(e: &redis::RedisError) -> OpError {
    let kind = if e.is_timeout() {
        ErrorKind::Timeout
    } else if e.is_io_error() || e.is_connection_dropped() || e.is_connection_refusal() {
        ErrorKind::Connection
    } else {
        ErrorKind::Other
    };
    OpError { kind, code: 0 }
}

const PROTOCOL: OpError = OpError {
    kind: ErrorKind::Other,
    code: 0,
};

impl RedisSession {
    fn conn(&mut self) -> Result<&mut redis::Connection, OpError> {
        let Link::Single(conn) = &mut self.link else {
            return Err(PROTOCOL);
        };
        if conn.is_none() {
            *conn = Some(self.config.connect().map_err(|e| error_of(&e))?);
        }
        conn.as_mut().ok_or(OpError {
            kind: ErrorKind::Connection,
            code: 0,
        })
    }

    /// Sends the packed command(s) and returns the replies; a failed connection is dropped.
    fn send(&mut self, count: usize) -> Result<Vec<Value>, OpError> {
        if let Link::Cluster(r) = &mut self.link {
            return r.request_all(&self.cmd, count);
        }
        let cmd = std::mem::take(&mut self.cmd);
        let result = match self.conn() {
            Ok(c) => {
                if count == 1 {
                    c.req_packed_command(&cmd).map(|v| vec![v])
                } else {
                    c.req_packed_commands(&cmd, 0, count)
                }
            }
            Err(e) => {
                self.cmd = cmd;
                return Err(e);
            }
        };
        self.cmd = cmd;
        result.map_err(|e| {
            let err = error_of(&e);
            if let Link::Single(conn) = &mut self.link
                && (err.kind != ErrorKind::Other || !conn.as_ref().is_some_and(|c| c.is_open()))
            {
                *conn = None;
            }
            err
        })
    }

    /// Packs `HMSET key field value ...` for one field or all.
    fn pack_hmset(&mut self, field: Option<u32>) {
        let r = &self.record;
        let n = field.map_or(r.field_count(), |_| 1);
        header(&mut self.cmd, 2 + 2 * n);
        arg(&mut self.cmd, b"HMSET");
        key_arg(&mut self.cmd, &self.config.key_prefix, &r.key);
        match field {
            Some(f) => {
                arg(&mut self.cmd, r.name(f as usize));
                arg(&mut self.cmd, &r.values[f as usize]);
            }
            None => {
                for i in 0..r.field_count() {
                    arg(&mut self.cmd, r.name(i));
                    arg(&mut self.cmd, &r.values[i]);
                }
            }
        }
    }

    /// Packs the read of the current key: HGETALL, or HMGET of one field.
    fn pack_read(&mut self, field: Option<u32>) {
        match field {
            None => {
                header(&mut self.cmd, 2);
                arg(&mut self.cmd, b"HGETALL");
                key_arg(&mut self.cmd, &self.config.key_prefix, &self.record.key);
            }
            Some(f) => {
                header(&mut self.cmd, 3);
                arg(&mut self.cmd, b"HMGET");
                key_arg(&mut self.cmd, &self.config.key_prefix, &self.record.key);
                arg(&mut self.cmd, self.record.name(f as usize));
            }
        }
    }

    /// Checks a read's reply for the current key: (bytes, found).
    fn check_read(&self, reply: &Value, field: Option<u32>) -> Result<(u32, bool), OpError> {
        let r = &self.record;
        match (field, reply) {
            (None, Value::Array(items)) => {
                if items.is_empty() {
                    return Ok((0, false));
                }
                let mut bytes = 0u32;
                let mut seen = 0;
                for pair in items.chunks(2) {
                    let (Some(name), Some(value)) =
                        (pair.first().and_then(bulk), pair.get(1).and_then(bulk))
                    else {
                        return Err(PROTOCOL);
                    };
                    bytes += (name.len() + value.len()) as u32;
                    match r.field_index(name) {
                        Some(i) if r.verify(i, value) => seen += 1,
                        _ => return Err(OpError::INTEGRITY),
                    }
                }
                if r.verifying() && seen != r.field_count() {
                    return Err(OpError::INTEGRITY);
                }
                Ok((bytes, true))
            }
            (None, Value::Map(items)) => {
                if items.is_empty() {
                    return Ok((0, false));
                }
                let mut bytes = 0u32;
                for (n, v) in items {
                    let (Some(name), Some(value)) = (bulk(n), bulk(v)) else {
                        return Err(PROTOCOL);
                    };
                    bytes += (name.len() + value.len()) as u32;
                    match r.field_index(name) {
                        Some(i) if r.verify(i, value) => {}
                        _ => return Err(OpError::INTEGRITY),
                    }
                }
                if r.verifying() && items.len() != r.field_count() {
                    return Err(OpError::INTEGRITY);
                }
                Ok((bytes, true))
            }
            (Some(f), Value::Array(items)) => match items.first() {
                Some(Value::Nil) | None => Ok((0, false)),
                Some(v) => {
                    let value = bulk(v).ok_or(PROTOCOL)?;
                    if !r.verify(f as usize, value) {
                        return Err(OpError::INTEGRITY);
                    }
                    Ok((value.len() as u32, true))
                }
            },
            (_, Value::ServerError(_)) => Err(PROTOCOL),
            _ => Err(PROTOCOL),
        }
    }

    fn read(&mut self, field: Option<u32>) -> Result<(u32, bool), OpError> {
        self.cmd.clear();
        self.pack_read(field);
        let replies = self.send(1)?;
        self.check_read(&replies[0], field)
    }

    fn update(&mut self, field: Option<u32>) -> Result<u32, OpError> {
        match field {
            Some(f) => self.record.fill(f as usize),
            None => self.record.fill_all(),
        }
        self.cmd.clear();
        self.pack_hmset(field);
        let replies = self.send(1)?;
        ok_reply(&replies[0])?;
        Ok(self.record.key.len() as u32
            + field.map_or(self.record.value_bytes(), |f| {
                self.record.values[f as usize].len() as u32
            }))
    }

    /// Packs the insert of the current key (HMSET of every field, ZADD to the index) after
    /// what `cmd` holds: two commands.
    fn pack_insert(&mut self) {
        self.record.fill_all();
        self.pack_hmset(None);
        header(&mut self.cmd, 4);
        arg(&mut self.cmd, b"ZADD");
        key_arg(&mut self.cmd, &self.config.key_prefix, INDEX);
        let mut text = [0u8; 21];
        arg(
            &mut self.cmd,
            number(java_hash(&self.record.key) as i64, &mut text),
        );
        key_arg(&mut self.cmd, &self.config.key_prefix, &self.record.key);
    }

    /// Checks the two replies of one insert of `bytes` (key and values).
    fn insert_replies(replies: &[Value], bytes: u32) -> Result<u32, OpError> {
        ok_reply(replies.first().ok_or(PROTOCOL)?)?;
        if matches!(replies.get(1), Some(Value::ServerError(_)) | None) {
            return Err(PROTOCOL);
        }
        Ok(bytes)
    }

    fn record_bytes(&self) -> u32 {
        self.record.key.len() as u32 + self.record.value_bytes()
    }

    fn insert(&mut self) -> Result<u32, OpError> {
        self.cmd.clear();
        self.pack_insert();
        let replies = self.send(2)?;
        Self::insert_replies(&replies, self.record_bytes())
    }

    /// Sends the inserts `queue[from..to]` as one pipeline and reports each.
    fn insert_pipeline(&mut self, from: usize, to: usize, out: &mut Completions) {
        self.cmd.clear();
        self.sizes.clear();
        for i in from..to {
            if let (slot, YcsbOp::Insert { keynum }) = self.queue[i] {
                self.record.set_key(keynum);
                self.record.begin_write(Some(slot));
                self.pack_insert();
                self.sizes.push(self.record_bytes());
            }
        }
        let replies = self.send(2 * (to - from));
        for i in from..to {
            let slot = self.queue[i].0;
            let result = match &replies {
                Ok(r) => {
                    let j = 2 * (i - from);
                    Self::insert_replies(r.get(j..j + 2).unwrap_or_default(), self.sizes[i - from])
                }
                Err(e) => Err(*e),
            };
            self.record.end_write(
                Some(slot),
                crate::write_outcome(&result.map(|n| (n, true))),
            );
            out.push(Completion {
                slot,
                result,
                found: result.is_ok(),
            });
        }
    }

    fn scan(&mut self, count: u64, field: Option<u32>) -> Result<(u32, bool), OpError> {
        let mut score = [0u8; 21];
        let mut limit = [0u8; 21];
        self.cmd.clear();
        header(&mut self.cmd, 7);
        arg(&mut self.cmd, b"ZRANGEBYSCORE");
        key_arg(&mut self.cmd, &self.config.key_prefix, INDEX);
        arg(
            &mut self.cmd,
            number(java_hash(&self.record.key) as i64, &mut score),
        );
        arg(&mut self.cmd, b"+inf");
        arg(&mut self.cmd, b"LIMIT");
        arg(&mut self.cmd, b"0");
        arg(
            &mut self.cmd,
            number(count.min(i64::MAX as u64) as i64, &mut limit),
        );
        let replies = self.send(1)?;
        let Value::Array(keys) = &replies[0] else {
            return Err(PROTOCOL);
        };
        if keys.is_empty() {
            return Ok((0, false));
        }
        // One round trip for all the records, as a pipeline.
        self.cmd.clear();
        let mut n = 0;
        for k in keys {
            let key = bulk(k).ok_or(PROTOCOL)?;
            let key = key
                .strip_prefix(self.config.key_prefix.as_bytes())
                .ok_or(PROTOCOL)?;
            self.record.key.clear();
            self.record.key.extend_from_slice(key);
            self.pack_read(field);
            n += 1;
        }
        let records = self.send(n)?;
        let mut bytes = 0u32;
        let mut failed = None;
        for (k, reply) in keys.iter().zip(&records) {
            self.record.key.clear();
            let key = bulk(k).unwrap_or_default();
            self.record.key.extend_from_slice(
                key.strip_prefix(self.config.key_prefix.as_bytes())
                    .unwrap_or(key),
            );
            match self.check_read(reply, field) {
                Ok((b, _)) => bytes = bytes.saturating_add(b),
                Err(e) => failed = Some(e),
            }
        }
        match failed {
            Some(e) => Err(e),
            None => Ok((bytes, true)),
        }
    }
}

fn ok_reply(v: &Value) -> Result<(), OpError> {
    match v {
        Value::Okay | Value::SimpleString(_) | Value::Int(_) => Ok(()),
        _ => Err(PROTOCOL),
    }
}

impl YcsbStore for RedisSession {
    fn record(&mut self) -> &mut RecordBuf {
        &mut self.record
    }
    fn read(&mut self, field: Option<u32>) -> Result<(u32, bool), OpError> {
        RedisSession::read(self, field)
    }
    fn update(&mut self, field: Option<u32>) -> Result<(u32, bool), OpError> {
        RedisSession::update(self, field).map(|n| (n, true))
    }
    fn insert(&mut self) -> Result<(u32, bool), OpError> {
        RedisSession::insert(self).map(|n| (n, true))
    }
    fn scan(&mut self, count: u64, field: Option<u32>) -> Result<(u32, bool), OpError> {
        RedisSession::scan(self, count, field)
    }
}

impl Session for RedisSession {
    /// Queued inserts go to the server as one pipeline in `complete`.
    fn starts_in_complete(&self) -> bool {
        true
    }

    #[inline]
    fn submit(&mut self, slot: u32, op: Op) -> Result<Submitted, OpError> {
        let op = ycsb_op(op)?;
        if self.pipeline && matches!(op, YcsbOp::Insert { .. }) {
            self.queue.push((slot, op));
            return Ok(Submitted::Queued);
        }
        Ok(Submitted::done(self.run(op)))
    }

    #[inline]
    fn complete(&mut self, _min: u32, out: &mut Completions) -> Result<(), OpError> {
        match self.queue.len() {
            0 => {}
            1 => {
                let (slot, op) = self.queue[0];
                out.push(Completion::of(slot, self.run(op)));
            }
            n => self.insert_pipeline(0, n, out),
        }
        self.queue.clear();
        Ok(())
    }

    fn read_back(&mut self, keynum: u64) -> Option<storlab_verify::kv::ReadBack> {
        Some(crate::read_back(self, keynum))
    }

    fn used(&self) -> Vec<(&'static str, String)> {
        if self.queue_depth > 1 && !self.pipeline {
            vec![(
                "execution",
                format!(
                    "one insert at a time (queue depth {} asked): a Redis Cluster pipeline would be sent command by command, each insert timed to the last reply",
                    self.queue_depth
                ),
            )]
        } else {
            Vec::new()
        }
    }
}
