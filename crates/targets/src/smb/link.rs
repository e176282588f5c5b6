//! The `smb` target's connection to the server: one TCP connection (storlab's
//! [`transport`](super::transport), TCP_NODELAY set), one SMB session and one tree connect per
//! target, shared by its workers as the Windows redirector shares one session per client. It
//! is reconnected when it fails: the first slot to find it broken connects anew (logon, tree
//! connect), the others take the new one.
//!
//! Also here: preparing the test file (IOmeter's `iobw.tst`: created and filled once, reused
//! when it exists with at least the size asked, extended when shorter), and the errors of each
//! step, worded for the user and naming the target.

use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use rand::{Rng, SeedableRng};
use smb::{
    Connection, ConnectionConfig, CreateDisposition, CreateOptions, Dialect, FileAccessMask,
    FileAttributes, FileCreateArgs, GetLen, Resource, Session, Status, Tree, UncPath,
};

use super::transport::{NoDelayTcp, SocketFacts, WireCounters};

/// Where the target lives, from its URL.
#[derive(Clone)]
pub struct Endpoint {
    pub host: String,
    pub port: u16,
    pub user: String,
    pub password: String,
    pub share: String,
    /// The file's path inside the share, with backslashes.
    pub file: String,
}

/// What the user chose about the protocol.
#[derive(Debug, Clone, Copy)]
pub struct Protocol {
    /// None: the highest both sides speak.
    pub dialect: Option<Dialect>,
    pub encryption: smb::connection::EncryptionMode,
    /// Connecting, and each request.
    pub timeout: Duration,
}

/// A step that failed, worded for the user (the target's name and URL are added by the caller).
#[derive(Debug, thiserror::Error)]
pub enum LinkError {
    #[error("cannot resolve {host}: {source}")]
    Resolve {
        host: String,
        source: std::io::Error,
    },
    #[error("cannot connect to {addr} (is the SMB server running?): {source}")]
    Connect {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error("negotiating SMB with {addr} failed: {source}")]
    Negotiate { addr: SocketAddr, source: smb::Error },
    #[error("logging on as `{user}` was refused: {reason}")]
    Logon { user: String, reason: String },
    #[error("the server has no share `{share}` (or `{user}` may not use it): {reason}")]
    Share {
        share: String,
        user: String,
        reason: String,
    },
    #[error("opening `{file}` in share `{share}`: {reason}")]
    Open {
        file: String,
        share: String,
        reason: String,
    },
    #[error("`{file}` does not exist in share `{share}`: give `size` so that storlab can create it")]
    Missing { file: String, share: String },
    #[error("laying out `{file}` at byte {offset}: {reason}")]
    Fill {
        file: String,
        offset: u64,
        reason: String,
    },
    #[error("the runtime that drives the connection: {0}")]
    Runtime(String),
}

/// What the server and the client settled on.
#[derive(Debug, Clone)]
pub struct Negotiated {
    pub dialect: String,
    pub signing: String,
    pub encryption: String,
    pub max_read_bytes: u32,
    pub max_write_bytes: u32,
    pub nodelay: Result<bool, String>,
}

/// One live connection, session and tree connect.
pub struct Connected {
    pub generation: u64,
    // Field order is drop order: the tree before the session before the connection.
    pub tree: Tree,
    _session: Session,
    _connection: Connection,
    pub negotiated: Negotiated,
}

/// The target's connection, reconnected when it fails.
pub struct Link {
    pub endpoint: Endpoint,
    pub protocol: Protocol,
    current: tokio::sync::Mutex<Option<Arc<Connected>>>,
    generations: AtomicU64,
    /// Connections made after the first (each one a reconnect).
    pub reconnects: AtomicU64,
    /// Messages on the wire, over every connection of the link.
    pub counters: Arc<WireCounters>,
    client_guid: smb::Guid,
}

/// The status a server answered with, if the error is one.
fn status_of(e: &smb::Error) -> Option<u32> {
    match e {
        smb::Error::UnexpectedMessageStatus(s) | smb::Error::ReceivedErrorMessage(s, _) => Some(*s),
        _ => None,
    }
}

fn is_status(e: &smb::Error, status: Status) -> bool {
    status_of(e) == Some(status as u32)
}

impl Link {
    pub fn new(endpoint: Endpoint, protocol: Protocol) -> Link {
        Link {
            endpoint,
            protocol,
            current: tokio::sync::Mutex::new(None),
            generations: AtomicU64::new(0),
            reconnects: AtomicU64::new(0),
            counters: Arc::new(WireCounters::default()),
            client_guid: smb::Guid::generate(),
        }
    }

    fn address(&self) -> Result<SocketAddr, LinkError> {
        let e = &self.endpoint;
        let mut addrs = (e.host.as_str(), e.port)
            .to_socket_addrs()
            .map_err(|source| LinkError::Resolve {
                host: e.host.clone(),
                source,
            })?;
        addrs.next().ok_or_else(|| LinkError::Resolve {
            host: e.host.clone(),
            source: std::io::Error::new(std::io::ErrorKind::NotFound, "no address"),
        })
    }

    async fn connect_once(&self) -> Result<Connected, LinkError> {
        let e = &self.endpoint;
        let addr = self.address()?;
        let (transport, facts): (NoDelayTcp, SocketFacts) =
            NoDelayTcp::connect(addr, self.protocol.timeout, self.counters.clone())
                .await
                .map_err(|source| LinkError::Connect { addr, source })?;
        let config = ConnectionConfig {
            timeout: Some(self.protocol.timeout),
            min_dialect: self.protocol.dialect,
            max_dialect: self.protocol.dialect,
            encryption_mode: self.protocol.encryption,
            // storlab reads no change notifications.
            disable_notifications: true,
            ..ConnectionConfig::default()
        };
        let connection = Connection::from_transport(Box::new(transport), &e.host, self.client_guid, config)
            .await
            .map_err(|source| LinkError::Negotiate { addr, source })?;
        let logon_error = |reason: String| LinkError::Logon {
            user: e.user.clone(),
            reason,
        };
        let identity = sspi::AuthIdentity {
            username: sspi::Username::parse(&e.user).map_err(|x| logon_error(x.to_string()))?,
            password: e.password.clone().into(),
        };
        let session = connection.authenticate(identity).await.map_err(|x| {
            logon_error(if is_status(&x, Status::LogonFailure) {
                "wrong user name or password (STATUS_LOGON_FAILURE)".into()
            } else {
                x.to_string()
            })
        })?;
        let share_error = |reason: String| LinkError::Share {
            share: e.share.clone(),
            user: e.user.clone(),
            reason,
        };
        let unc: UncPath = format!(r"\\{}\{}", e.host, e.share)
            .parse()
            .map_err(|x: smb::Error| share_error(x.to_string()))?;
        let tree = session.tree_connect(&unc).await.map_err(|x| {
            share_error(if is_status(&x, Status::BadNetworkName) {
                "STATUS_BAD_NETWORK_NAME".into()
            } else {
                x.to_string()
            })
        })?;
        let negotiated = match connection.conn_info() {
            Some(info) => Negotiated {
                dialect: dialect_name(info.negotiation.dialect_rev).into(),
                signing: match info.negotiation.signing_algo {
                    Some(a) => format!("{a:?}"),
                    None => "the dialect's default".into(),
                },
                encryption: match (info.negotiation.encryption_cipher, self.protocol.encryption) {
                    (Some(c), m) => format!("{c:?} offered, mode {m:?}"),
                    (None, m) => format!("no cipher negotiated, mode {m:?}"),
                },
                max_read_bytes: info.negotiation.max_read_size,
                max_write_bytes: info.negotiation.max_write_size,
                nodelay: facts.nodelay.clone(),
            },
            None => return Err(LinkError::Negotiate {
                addr,
                source: smb::Error::InvalidState("no negotiated connection".into()),
            }),
        };
        Ok(Connected {
            generation: 0,
            tree,
            _session: session,
            _connection: connection,
            negotiated,
        })
    }

    /// The live connection; a new one when there is none yet or when `failed` names the one
    /// that just failed.
    pub async fn connection(&self, failed: Option<u64>) -> Result<Arc<Connected>, LinkError> {
        let mut current = self.current.lock().await;
        if let Some(c) = current.as_ref()
            && failed != Some(c.generation)
        {
            return Ok(c.clone());
        }
        let mut c = self.connect_once().await?;
        c.generation = self.generations.fetch_add(1, Ordering::Relaxed) + 1;
        if c.generation > 1 {
            self.reconnects.fetch_add(1, Ordering::Relaxed);
        }
        let c = Arc::new(c);
        *current = Some(c.clone());
        Ok(c)
    }

    /// Drops the connection (inside the runtime: the crate's handles close themselves there).
    pub async fn close(&self) {
        self.current.lock().await.take();
    }

    fn open_args(disposition: CreateDisposition, writes: bool) -> FileCreateArgs {
        FileCreateArgs {
            disposition,
            attributes: FileAttributes::new(),
            options: CreateOptions::new(),
            desired_access: FileAccessMask::new()
                .with_file_read_data(true)
                .with_file_read_attributes(true)
                .with_file_write_data(writes)
                .with_file_write_attributes(writes),
        }
    }

    fn open_error(&self, reason: String) -> LinkError {
        LinkError::Open {
            file: self.endpoint.file.clone(),
            share: self.endpoint.share.clone(),
            reason,
        }
    }

    /// Opens the test file; None when it does not exist.
    pub async fn open_file(
        &self,
        c: &Connected,
        writes: bool,
    ) -> Result<Option<smb::File>, LinkError> {
        match c
            .tree
            .create(&self.endpoint.file, &Self::open_args(CreateDisposition::Open, writes))
            .await
        {
            Ok(Resource::File(f)) => Ok(Some(f)),
            Ok(_) => Err(self.open_error("not a regular file".into())),
            Err(e)
                if is_status(&e, Status::ObjectNameNotFound)
                    || is_status(&e, Status::ObjectPathNotFound) =>
            {
                Ok(None)
            }
            Err(e) => Err(self.open_error(e.to_string())),
        }
    }

    /// IOmeter's `iobw.tst`: reuses the file when it holds at least `size` bytes, else
    /// creates or extends it and fills it with incompressible data. Returns the bytes the
    /// region addresses and what was done.
    pub async fn prepare_file(&self, size: Option<u64>) -> Result<(u64, Layout), LinkError> {
        let c = self.connection(None).await?;
        let existing = self.open_file(&c, size.is_some()).await?;
        let (file, had) = match (existing, size) {
            (Some(f), _) => {
                let len = f.get_len().await.map_err(|e| self.open_error(e.to_string()))?;
                (f, len)
            }
            (None, None) => {
                return Err(LinkError::Missing {
                    file: self.endpoint.file.clone(),
                    share: self.endpoint.share.clone(),
                });
            }
            (None, Some(_)) => {
                let created = c
                    .tree
                    .create(&self.endpoint.file, &Self::open_args(CreateDisposition::Create, true))
                    .await
                    .map_err(|e| self.open_error(format!("creating it: {e}")))?;
                match created {
                    Resource::File(f) => (f, 0),
                    _ => return Err(self.open_error("not a regular file".into())),
                }
            }
        };
        let want = size.unwrap_or(had);
        let file = Arc::new(file);
        let layout = if had >= want {
            Layout::Reused { file_bytes: had }
        } else {
            self.fill(&c, file.clone(), had, want).await?;
            if had == 0 {
                Layout::Created { file_bytes: want }
            } else {
                Layout::Extended {
                    from_bytes: had,
                    file_bytes: want,
                }
            }
        };
        // Closed here rather than by the crate's drop, which sends the CLOSE from a task of
        // its own: on a runtime driven by the workers, that task would run during the
        // measurement.
        file.close()
            .await
            .map_err(|e| self.open_error(format!("closing it: {e}")))?;
        Ok((want, layout))
    }

    /// Writes incompressible data from `from` to `to`, eight chunks in flight.
    async fn fill(
        &self,
        c: &Connected,
        file: Arc<smb::File>,
        from: u64,
        to: u64,
    ) -> Result<(), LinkError> {
        let chunk = (c.negotiated.max_write_bytes as u64).clamp(64 << 10, 1 << 20);
        let mut rng = rand::rngs::SmallRng::seed_from_u64(from ^ 0x5107_1ab0);
        let mut data = vec![0u8; chunk as usize];
        rng.fill_bytes(&mut data);
        let mut tasks = tokio::task::JoinSet::new();
        let mut pos = from;
        while pos < to || !tasks.is_empty() {
            while pos < to && tasks.len() < 8 {
                let n = (to - pos).min(chunk) as usize;
                let mut block = data[..n].to_vec();
                // Each chunk differs from the others (no dedup).
                block[..8.min(n)].copy_from_slice(&pos.to_le_bytes()[..8.min(n)]);
                let f = file.clone();
                let at = pos;
                tasks.spawn(async move { (at, n, f.write_block(&block, at, None).await) });
                pos += n as u64;
            }
            if let Some(done) = tasks.join_next().await {
                let (at, n, r) = done.map_err(|e| LinkError::Runtime(e.to_string()))?;
                let fill_error = |reason: String| LinkError::Fill {
                    file: self.endpoint.file.clone(),
                    offset: at,
                    reason,
                };
                match r {
                    Ok(w) if w == n => {}
                    Ok(w) => return Err(fill_error(format!("{w} of {n} bytes written"))),
                    Err(e) => return Err(fill_error(e.to_string())),
                }
            }
        }
        file.flush()
            .await
            .map_err(|e| LinkError::Fill {
                file: self.endpoint.file.clone(),
                offset: to,
                reason: format!("flushing: {e}"),
            })
    }
}

/// What preparing the test file did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    Created { file_bytes: u64 },
    Extended { from_bytes: u64, file_bytes: u64 },
    Reused { file_bytes: u64 },
}

impl Layout {
    pub fn describe(self) -> String {
        match self {
            Layout::Created { file_bytes } => {
                format!("created and filled ({file_bytes} bytes)")
            }
            Layout::Extended {
                from_bytes,
                file_bytes,
            } => format!("extended from {from_bytes} to {file_bytes} bytes and filled"),
            Layout::Reused { file_bytes } => {
                format!("reused as it was ({file_bytes} bytes, not rewritten)")
            }
        }
    }
}

pub fn dialect_name(d: Dialect) -> &'static str {
    match d {
        Dialect::Smb0202 => "2.0.2",
        Dialect::Smb021 => "2.1",
        Dialect::Smb030 => "3.0",
        Dialect::Smb0302 => "3.0.2",
        Dialect::Smb0311 => "3.1.1",
    }
}
