//! The `memcached` target: a memcached server through the `memcache` crate (ASCII protocol),
//! one connection per worker. It takes YCSB workloads as YCSB's memcached binding does, less
//! scans (memcached has no order to scan in): a record is one item under the record's key,
//! its fields encoded as one value (storlab's record encoding, so that `dataintegrity` and
//! `verify = true` check each field); insert is `add` (an item already there is an error, as
//! YCSB's binding's `add` fails), a read is `get`, an update of all fields is `replace` (a
//! record that is not there is not found), and an update of one field reads the record and
//! writes it back whole (YCSB's binding replaces the item with the updated fields only, which
//! a later read of all fields would find short). Items never expire.
//!
//! Each operation runs in `submit`, timed alone by the worker. A connection that fails
//! mid-run counts the operation as a `connection` (or `timeout`) error; the crate's pool
//! opens a new connection for the next one.
//!
//! YCSB properties: `memcached.hosts` (`host[:port]`, the first of a list) and
//! `memcached.opTimeoutMillis`.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::{
    Capabilities, Completions, OptionError, Overlap, PrepareOptions, Region, Session,
    SessionParams, SessionUser, Submitted, Target, TargetConfig, TargetError, TargetType,
    YcsbBinding, YcsbBindingError, YcsbStore, claim_timeout_ms, claim_value, option_error, ycsb_op,
};
use storlab_model::units::Dur;
use storlab_model::{ErrorKind, Op, OpError, OpKind, WorkloadKind};
use storlab_workload::ycsb::record::encode_record;
use storlab_workload::ycsb::{Properties, RecordBuf};

pub const TYPE: TargetType = TargetType {
    name: "memcached",
    summary: "a memcached server: a YCSB record as one item (no scans)",
    options: &[
        ("host", "server address (default 127.0.0.1)"),
        ("port", "server port (default 11211)"),
        (
            "timeout",
            "connect, read and write timeout, e.g. \"2s\" (default 10s)",
        ),
    ],
    parse,
    file_server: None,
    ycsb: Some(YcsbBinding {
        names: &[],
        classes: &["site.ycsb.db.MemcachedClient"],
        batch: None,
        options: ycsb_options,
    }),
};

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct MemcachedConfig {
    #[serde(default = "default_host")]
    pub host: String,
    #[serde(default = "default_port")]
    pub port: u16,
    #[serde(default = "default_timeout")]
    pub timeout: Dur,
}

fn default_host() -> String {
    "127.0.0.1".into()
}
fn default_port() -> u16 {
    11211
}
fn default_timeout() -> Dur {
    Dur(Duration::from_secs(10))
}

fn parse(table: toml::Table) -> Result<TargetConfig, OptionError> {
    let c: MemcachedConfig = table.try_into().map_err(option_error)?;
    if c.timeout.0.is_zero() {
        return Err(OptionError {
            key: "timeout".into(),
            message: "timeout must be above 0".into(),
        });
    }
    Ok(TargetConfig::Memcached(c))
}

/// YCSB's memcached binding properties to this target's options.
fn ycsb_options(props: &mut Properties) -> Result<toml::Table, YcsbBindingError> {
    let mut t = toml::Table::new();
    if let Some((v, p)) = claim_value(props, "memcached.hosts") {
        let first = v.split(',').next().unwrap_or("").trim();
        let (host, port) = first.rsplit_once(':').unwrap_or((first, "11211"));
        let port: u16 = port.parse().map_err(|_| YcsbBindingError {
            property: p,
            reason: "expected host or host:port".into(),
        })?;
        t.insert("host".into(), host.into());
        t.insert("port".into(), (port as i64).into());
    }
    claim_timeout_ms(props, "memcached.opTimeoutMillis", &mut t)?;
    Ok(t)
}

/// YCSB's operations but scans.
const OPS: [OpKind; 4] = [
    OpKind::Read,
    OpKind::Update,
    OpKind::Insert,
    OpKind::ReadModifyWrite,
];

impl MemcachedConfig {
    fn describe(&self) -> String {
        format!("memcached target {}:{}", self.host, self.port)
    }

    /// A client of one connection to the server.
    fn connect(&self) -> Result<memcache::Client, memcache::MemcacheError> {
        let t = self.timeout.0;
        let url = format!("memcache://{}:{}?tcp_nodelay=true", self.host, self.port);
        memcache::Client::builder()
            .add_server(url)?
            .with_max_pool_size(1)
            .with_connection_timeout(t)
            .with_read_timeout(t)
            .with_write_timeout(t)
            .build()
    }
}

impl Target for MemcachedConfig {
    const TYPE: TargetType = TYPE;
    /// The server's version, asked once in `prepare`.
    type Shared = Vec<(String, String)>;

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            workloads: &[WorkloadKind::Ycsb],
            ops: &OPS,
            overlap: Overlap::None,
            in_process: false,
            writes_given_buffers: false,
            reads_records_back: true,
            keeps_ledger: false,
        }
    }

    fn prepare(&self, _opts: &PrepareOptions) -> Result<(Region, Self::Shared), TargetError> {
        let failed = |e: memcache::MemcacheError| {
            TargetError::Invalid(format!("{}: {e}", self.describe()))
        };
        let client = self.connect().map_err(failed)?;
        let versions = client.version().map_err(failed)?;
        let version = versions.into_iter().next().map(|(_, v)| v);
        let software = version.map(|v| ("memcached".to_string(), v));
        Ok((Region::default(), software.into_iter().collect()))
    }

    fn open<U: SessionUser>(
        &self,
        _: &Self::Shared,
        params: &SessionParams,
        user: U,
    ) -> Result<U::Output, TargetError> {
        let Some(w) = params.ycsb() else {
            return Err(TargetError::Invalid(
                "a memcached target runs ycsb workloads only".into(),
            ));
        };
        let client = self
            .connect()
            .map_err(|e| TargetError::Invalid(format!("{}: {e}", self.describe())))?;
        let session = MemcachedSession {
            client,
            record: RecordBuf::new(w, params.seed ^ ((params.worker as u64 + 1) << 32))
                .with_verify(params.kv_verify(), params.queue_depth),
            encoded: Vec::with_capacity(4096),
        };
        Ok(user.run(session))
    }

    fn software(&self, shared: &Self::Shared) -> Vec<(String, String)> {
        shared.clone()
    }
}

/// One worker's connection and record buffers.
pub struct MemcachedSession {
    client: memcache::Client,
    record: RecordBuf,
    /// The record's fields encoded as one value.
    encoded: Vec<u8>,
}

/// A failed command: a broken or timed-out connection, or anything else the server said.
fn error_of(e: &memcache::MemcacheError) -> OpError {
    let kind = match e {
        memcache::MemcacheError::IOError(io) => match io.kind() {
            std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock => ErrorKind::Timeout,
            _ => ErrorKind::Connection,
        },
        memcache::MemcacheError::PoolError(_) => ErrorKind::Connection,
        _ => ErrorKind::Other,
    };
    OpError { kind, code: 0 }
}

impl MemcachedSession {
    /// The item of the current record, if there is one.
    fn get(&self) -> Result<Option<Vec<u8>>, OpError> {
        let key = self.record.key_str();
        self.client.get::<Vec<u8>>(key).map_err(|e| error_of(&e))
    }

    /// Bytes moved by a write of the encoded record.
    fn written(&self) -> u32 {
        (self.record.key.len() + self.encoded.len()) as u32
    }
}

impl YcsbStore for MemcachedSession {
    fn record(&mut self) -> &mut RecordBuf {
        &mut self.record
    }

    fn read(&mut self, field: Option<u32>) -> Result<(u32, bool), OpError> {
        let Some(value) = self.get()? else {
            return Ok((0, false));
        };
        if !self.record.check_encoded(&value, field) {
            return Err(OpError::INTEGRITY);
        }
        Ok(((self.record.key.len() + value.len()) as u32, true))
    }

    fn update(&mut self, field: Option<u32>) -> Result<(u32, bool), OpError> {
        match field {
            Some(f) => {
                let Some(current) = self.get()? else {
                    return Ok((0, false));
                };
                if !self.record.take_encoded(&current) {
                    return Err(OpError::INTEGRITY);
                }
                self.record.fill(f as usize);
                encode_record(&self.record.values, &mut self.encoded);
                let value: &[u8] = &self.encoded;
                self.client
                    .set(self.record.key_str(), value, 0)
                    .map_err(|e| error_of(&e))?;
                Ok((self.written(), true))
            }
            None => {
                self.record.fill_all();
                encode_record(&self.record.values, &mut self.encoded);
                let value: &[u8] = &self.encoded;
                match self.client.replace(self.record.key_str(), value, 0) {
                    Ok(()) => Ok((self.written(), true)),
                    Err(memcache::MemcacheError::CommandError(
                        memcache::CommandError::KeyNotFound,
                    )) => Ok((0, false)),
                    Err(e) => Err(error_of(&e)),
                }
            }
        }
    }

    fn insert(&mut self) -> Result<(u32, bool), OpError> {
        self.record.fill_all();
        encode_record(&self.record.values, &mut self.encoded);
        let value: &[u8] = &self.encoded;
        self.client
            .add(self.record.key_str(), value, 0)
            .map_err(|e| error_of(&e))?;
        Ok((self.written(), true))
    }

    fn scan(&mut self, _count: u64, _field: Option<u32>) -> Result<(u32, bool), OpError> {
        // The capabilities list no scan: the plan refuses a workload with one.
        Err(OpError {
            kind: ErrorKind::Invalid,
            code: libc::EINVAL,
        })
    }
}

impl Session for MemcachedSession {
    #[inline]
    fn submit(&mut self, _slot: u32, op: Op) -> Result<Submitted, OpError> {
        let op = ycsb_op(op)?;
        Ok(Submitted::done(self.run(op)))
    }

    fn complete(&mut self, _min: u32, _out: &mut Completions) -> Result<(), OpError> {
        Ok(())
    }

    fn read_back(&mut self, keynum: u64) -> Option<storlab_verify::kv::ReadBack> {
        Some(crate::read_back(self, keynum))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use storlab_workload::ycsb::Origin;

    fn options(pairs: &[(&str, &str)]) -> Result<toml::Table, YcsbBindingError> {
        let mut props = Properties::new();
        for (k, v) in pairs {
            props.set(k, v, Origin::Override { index: 0 });
        }
        ycsb_options(&mut props)
    }

    #[test]
    fn ycsb_properties_become_options() {
        let t = options(&[
            ("memcached.hosts", "10.0.0.5:11311,10.0.0.6"),
            ("memcached.opTimeoutMillis", "0"),
        ])
        .unwrap();
        assert_eq!(t["host"].as_str(), Some("10.0.0.5"));
        assert_eq!(t["port"].as_integer(), Some(11311));
        assert_eq!(t["timeout"].as_str(), Some("1ms"));
        let t = options(&[("memcached.hosts", "cache")]).unwrap();
        assert_eq!(t["port"].as_integer(), Some(11211));
        let e = options(&[("memcached.opTimeoutMillis", "2s")]).unwrap_err();
        assert_eq!(e.reason, "expected milliseconds");
        assert!(options(&[("memcached.hosts", "cache:x")]).is_err());
    }
}
