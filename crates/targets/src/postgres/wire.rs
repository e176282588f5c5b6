//! A small blocking PostgreSQL client for the pgbench session's hot path: prepared statements
//! run with Bind + Execute + Sync in one write, the reply read with blocking reads until
//! ReadyForQuery, on a std `TcpStream` (or Unix socket) with buffers allocated once per
//! connection. The wire format is `postgres-protocol`'s (message encoding, parsing and
//! authentication); only the socket and the request/reply loop are storlab's.
//!
//! Why it exists (hand-written where the library costs measured performance): the `postgres`
//! crate runs tokio-postgres on a current-thread runtime, with a channel and a queue node per
//! statement and readiness-based IO. Measured with `strace -f -c` at one client on pgbench's
//! tpcb-like transaction (7 statements), it made 7 sendto + 7 recvfrom + 14 epoll_wait per
//! transaction and about 61 allocations, where libpq (pgbench `-M prepared`) makes 7 sendto,
//! about 7.3 recvfrom and 0.34 ppoll; storlab ran at 0.45 of pgbench's tps with twice its
//! client CPU per transaction. Here a statement is one `write` and, usually, one `read`.
//!
//! Connecting follows the URL as parsed by `postgres::Config`: each host in order (its port,
//! connect_timeout), startup with user, database, options, application_name; trust,
//! cleartext, MD5 or SCRAM-SHA-256 authentication; with `target_session_attrs=read-write`, a
//! host answering `SHOW transaction_read_only` with `on` is skipped. No TLS (`sslmode=require`
//! is refused). The socket keeps what tokio-postgres set (TCP_NODELAY, keepalives,
//! TCP_USER_TIMEOUT) and adds a read timeout: the URL's tcp_user_timeout, else 10 s, so that a
//! server that stops answering (a powered-off leader) turns into an error and a reconnect,
//! never a hang.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::time::Duration;

use bytes::BytesMut;
use postgres::config::{Host, SslMode, TargetSessionAttrs};
use postgres::fallible_iterator::FallibleIterator;
use postgres_protocol::authentication::{md5_hash, sasl};
use postgres_protocol::message::backend::{ErrorFields, Message};
use postgres_protocol::message::frontend;
use postgres_protocol::{IsNull, Oid};

use storlab_model::ErrorKind;

/// The read timeout when the URL gives no tcp_user_timeout.
const DEFAULT_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// Bytes asked of the socket per read.
const READ_CHUNK: usize = 16 * 1024;

/// What went wrong on a connection.
#[derive(Debug, thiserror::Error)]
pub enum WireError {
    /// The socket failed or timed out, or the server closed it.
    #[error("connection: {0}")]
    Io(#[from] io::Error),
    /// The server answered a statement with ErrorResponse (its SQLSTATE); the connection
    /// stands unless the error was FATAL.
    #[error("server error, SQLSTATE {}", String::from_utf8_lossy(.sqlstate))]
    Server { sqlstate: [u8; 5], fatal: bool },
    /// The server sent what the protocol does not allow here: the connection is unusable.
    #[error("protocol: {0}")]
    Protocol(&'static str),
    /// Connecting failed (every host tried): why, per host.
    #[error("{0}")]
    Connect(String),
}

impl WireError {
    /// The error's kind for the results: serialization failures and deadlocks, lost
    /// connections, or other server errors.
    pub fn kind(&self) -> ErrorKind {
        match self {
            WireError::Server { sqlstate, fatal } => match sqlstate {
                b"40001" | b"40P01" => ErrorKind::Serialization,
                // Class 08: connection exceptions; FATAL: the server ends the session.
                [b'0', b'8', ..] => ErrorKind::Connection,
                _ if *fatal => ErrorKind::Connection,
                _ => ErrorKind::Other,
            },
            _ => ErrorKind::Connection,
        }
    }

    /// Whether the connection can run further statements after this error.
    pub fn connection_stands(&self) -> bool {
        self.kind() != ErrorKind::Connection
    }
}

/// A statement parameter, sent in binary.
#[derive(Clone, Copy)]
pub enum Param<'a> {
    Int4(i32),
    Text(&'a [u8]),
}

/// A statement to prepare: name, SQL, parameter types (0: the server infers).
pub struct Prepare<'a> {
    pub name: &'a str,
    pub sql: &'a str,
    pub types: &'a [Oid],
}

/// What a statement returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Reply {
    /// From the CommandComplete tag (0 for BEGIN and the like).
    pub rows_affected: u64,
    /// The first column of the first row, if it is a 4-byte binary value (an int4).
    pub first_int4: Option<i32>,
}

enum Stream {
    Tcp(TcpStream),
    Unix(UnixStream),
}

impl Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.read(buf),
            Stream::Unix(s) => s.read(buf),
        }
    }
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.write_all(buf),
            Stream::Unix(s) => s.write_all(buf),
        }
    }
}

/// One connection: the socket and its buffers.
pub struct WireConn {
    stream: Stream,
    /// Received bytes not parsed yet.
    rbuf: BytesMut,
    /// Where a read lands before it is appended to `rbuf` (no zeroing per read).
    scratch: Box<[u8]>,
    wbuf: BytesMut,
    /// The transaction status of the last ReadyForQuery: b'I' idle, b'T' in a transaction,
    /// b'E' in a failed transaction.
    pub status: u8,
}

fn serialize(p: Param<'_>, buf: &mut BytesMut) -> Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
    match p {
        Param::Int4(v) => buf.extend_from_slice(&v.to_be_bytes()),
        Param::Text(t) => buf.extend_from_slice(t),
    }
    Ok(IsNull::No)
}

/// The SQLSTATE, whether the severity is FATAL or PANIC, and the message.
fn error_fields(mut fields: ErrorFields<'_>) -> ([u8; 5], bool, String) {
    let mut code = *b"XX000";
    let mut fatal = false;
    let mut message = String::new();
    while let Ok(Some(f)) = fields.next() {
        match f.type_() {
            b'C' if f.value_bytes().len() == 5 => code.copy_from_slice(f.value_bytes()),
            b'V' => fatal = matches!(f.value_bytes(), b"FATAL" | b"PANIC"),
            b'M' => message = String::from_utf8_lossy(f.value_bytes()).into_owned(),
            _ => {}
        }
    }
    (code, fatal, message)
}

/// The row count at the end of a CommandComplete tag (`UPDATE 1`, `INSERT 0 1`).
fn rows_of(tag: &str) -> u64 {
    tag.rsplit(' ').next().and_then(|n| n.parse().ok()).unwrap_or(0)
}

fn sockopt(fd: i32, level: i32, name: i32, value: i32) -> io::Result<()> {
    // SAFETY: a valid socket and a pointer to an int of the size passed.
    let r = unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            &value as *const i32 as *const libc::c_void,
            std::mem::size_of::<i32>() as libc::socklen_t,
        )
    };
    if r == 0 { Ok(()) } else { Err(io::Error::last_os_error()) }
}

/// The TCP options tokio-postgres sets from the URL, and the read timeout.
fn tune(s: &TcpStream, config: &postgres::Config) -> io::Result<()> {
    s.set_nodelay(true)?;
    let fd = s.as_raw_fd();
    if config.get_keepalives() {
        sockopt(fd, libc::SOL_SOCKET, libc::SO_KEEPALIVE, 1)?;
        let idle = config.get_keepalives_idle().as_secs().clamp(1, i32::MAX as u64) as i32;
        sockopt(fd, libc::IPPROTO_TCP, libc::TCP_KEEPIDLE, idle)?;
        if let Some(i) = config.get_keepalives_interval() {
            let i = i.as_secs().clamp(1, i32::MAX as u64) as i32;
            sockopt(fd, libc::IPPROTO_TCP, libc::TCP_KEEPINTVL, i)?;
        }
        if let Some(n) = config.get_keepalives_retries() {
            sockopt(fd, libc::IPPROTO_TCP, libc::TCP_KEEPCNT, n.min(i32::MAX as u32) as i32)?;
        }
    }
    if let Some(t) = config.get_tcp_user_timeout() {
        let ms = t.as_millis().min(i32::MAX as u128) as i32;
        sockopt(fd, libc::IPPROTO_TCP, libc::TCP_USER_TIMEOUT, ms)?;
    }
    Ok(())
}

/// A socket's read or write timeout says so: the system reports it as EAGAIN ("Resource
/// temporarily unavailable"), which reads like a fault of the client.
fn timed_out(e: io::Error) -> io::Error {
    match e.kind() {
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => io::Error::new(
            io::ErrorKind::TimedOut,
            "no answer within the socket timeout (the URL's tcp_user_timeout, else 10 s)",
        ),
        _ => e,
    }
}

/// The read (and write) timeout: the URL's tcp_user_timeout, else 10 s.
pub fn read_timeout(config: &postgres::Config) -> Duration {
    config
        .get_tcp_user_timeout()
        .copied()
        .filter(|t| !t.is_zero())
        .unwrap_or(DEFAULT_READ_TIMEOUT)
}

fn open_stream(config: &postgres::Config, i: usize) -> Result<Stream, String> {
    let port = match config.get_ports() {
        [] => 5432,
        [p] => *p,
        ps => *ps.get(i).ok_or("fewer ports than hosts")?,
    };
    let timeout = read_timeout(config);
    let connect_timeout = config.get_connect_timeout().copied().filter(|t| !t.is_zero());
    match &config.get_hosts()[i] {
        Host::Unix(dir) => {
            let path = dir.join(format!(".s.PGSQL.{port}"));
            let s = UnixStream::connect(&path).map_err(|e| format!("{}: {e}", path.display()))?;
            s.set_read_timeout(Some(timeout)).map_err(|e| e.to_string())?;
            s.set_write_timeout(Some(timeout)).map_err(|e| e.to_string())?;
            Ok(Stream::Unix(s))
        }
        Host::Tcp(host) => {
            let addrs: Vec<SocketAddr> = match config.get_hostaddrs().get(i) {
                Some(ip) => vec![SocketAddr::new(*ip, port)],
                None => (host.as_str(), port)
                    .to_socket_addrs()
                    .map_err(|e| format!("{host}:{port}: {e}"))?
                    .collect(),
            };
            let mut last = format!("{host}:{port}: no address");
            for a in addrs {
                let s = match connect_timeout {
                    Some(t) => TcpStream::connect_timeout(&a, t),
                    None => TcpStream::connect(a),
                };
                match s.and_then(|s| {
                    tune(&s, config)?;
                    s.set_read_timeout(Some(timeout))?;
                    s.set_write_timeout(Some(timeout))?;
                    Ok(s)
                }) {
                    Ok(s) => return Ok(Stream::Tcp(s)),
                    Err(e) => last = format!("{a}: {e}"),
                }
            }
            Err(last)
        }
    }
}

impl WireConn {
    /// Connects to the first host of `config` that accepts (and, with
    /// target_session_attrs=read-write, is writable), then prepares `statements`.
    pub fn connect(config: &postgres::Config, statements: &[Prepare<'_>]) -> Result<WireConn, WireError> {
        if config.get_ssl_mode() == SslMode::Require {
            return Err(WireError::Connect("sslmode=require: storlab's pgbench client speaks without TLS".into()));
        }
        let hosts = config.get_hosts().len().max(1);
        if config.get_hosts().is_empty() {
            return Err(WireError::Connect("no host in the URL".into()));
        }
        let mut why = Vec::new();
        for i in 0..hosts {
            let attempt = open_stream(config, i)
                .map_err(WireError::Connect)
                .and_then(|stream| {
                    let mut c = WireConn::over(stream);
                    c.startup(config)?;
                    Ok(c)
                })
                .and_then(|mut c| {
                    if config.get_target_session_attrs() == TargetSessionAttrs::ReadWrite
                        && c.simple_query_first_value("SHOW transaction_read_only")? == "on"
                    {
                        return Err(WireError::Connect("read-only (target_session_attrs=read-write)".into()));
                    }
                    c.prepare(statements)?;
                    Ok(c)
                });
            match attempt {
                Ok(c) => return Ok(c),
                Err(e) => why.push(format!("host {}: {e}", i + 1)),
            }
        }
        Err(WireError::Connect(why.join("; ")))
    }

    fn over(stream: Stream) -> WireConn {
        WireConn {
            stream,
            rbuf: BytesMut::with_capacity(2 * READ_CHUNK),
            scratch: vec![0u8; READ_CHUNK].into_boxed_slice(),
            wbuf: BytesMut::with_capacity(4096),
            status: b'I',
        }
    }

    /// The next backend message, reading from the socket as needed.
    fn next_message(&mut self) -> Result<Message, WireError> {
        loop {
            if let Some(m) = Message::parse(&mut self.rbuf)? {
                return Ok(m);
            }
            let n = self.stream.read(&mut self.scratch).map_err(timed_out)?;
            if n == 0 {
                return Err(WireError::Io(io::ErrorKind::UnexpectedEof.into()));
            }
            self.rbuf.extend_from_slice(&self.scratch[..n]);
        }
    }

    fn send(&mut self) -> Result<(), WireError> {
        self.stream.write_all(&self.wbuf).map_err(timed_out)?;
        self.wbuf.clear();
        Ok(())
    }

    fn startup(&mut self, config: &postgres::Config) -> Result<(), WireError> {
        let user = config
            .get_user()
            .ok_or(WireError::Connect("no user in the URL".into()))?;
        let mut params = vec![("client_encoding", "UTF8"), ("user", user)];
        params.push(("database", config.get_dbname().unwrap_or(user)));
        if let Some(o) = config.get_options() {
            params.push(("options", o));
        }
        if let Some(a) = config.get_application_name() {
            params.push(("application_name", a));
        }
        frontend::startup_message(params, &mut self.wbuf)?;
        self.send()?;
        let password = config.get_password();
        let need = || WireError::Connect("the server asks for a password; the URL has none".into());
        let mut scram: Option<sasl::ScramSha256> = None;
        loop {
            match self.next_message()? {
                Message::AuthenticationOk => {}
                Message::AuthenticationCleartextPassword => {
                    frontend::password_message(password.ok_or_else(need)?, &mut self.wbuf)?;
                    self.send()?;
                }
                Message::AuthenticationMd5Password(body) => {
                    let hash = md5_hash(user.as_bytes(), password.ok_or_else(need)?, body.salt());
                    frontend::password_message(hash.as_bytes(), &mut self.wbuf)?;
                    self.send()?;
                }
                Message::AuthenticationSasl(body) => {
                    let mut mechanisms = body.mechanisms();
                    let mut scram_offered = false;
                    while let Some(m) = mechanisms.next()? {
                        scram_offered |= m == sasl::SCRAM_SHA_256;
                    }
                    if !scram_offered {
                        return Err(WireError::Connect("the server offers no SASL mechanism storlab speaks (SCRAM-SHA-256)".into()));
                    }
                    let s = sasl::ScramSha256::new(password.ok_or_else(need)?, sasl::ChannelBinding::unsupported());
                    frontend::sasl_initial_response(sasl::SCRAM_SHA_256, s.message(), &mut self.wbuf)?;
                    self.send()?;
                    scram = Some(s);
                }
                Message::AuthenticationSaslContinue(body) => {
                    let s = scram.as_mut().ok_or(WireError::Protocol("SASL continue before SASL start"))?;
                    s.update(body.data())?;
                    frontend::sasl_response(s.message(), &mut self.wbuf)?;
                    self.send()?;
                }
                Message::AuthenticationSaslFinal(body) => {
                    let s = scram.as_mut().ok_or(WireError::Protocol("SASL final before SASL start"))?;
                    s.finish(body.data())?;
                }
                Message::ErrorResponse(body) => {
                    let (code, _, message) = error_fields(body.fields());
                    return Err(WireError::Connect(format!("{message} (SQLSTATE {})", String::from_utf8_lossy(&code))));
                }
                Message::ReadyForQuery(r) => {
                    self.status = r.status();
                    return Ok(());
                }
                Message::BackendKeyData(_) | Message::ParameterStatus(_) | Message::NoticeResponse(_) => {}
                _ => return Err(WireError::Connect("the server asks for an authentication storlab does not speak (trust, password, md5, scram-sha-256 only)".into())),
            }
        }
    }

    /// Runs `sql` as a simple Query; returns the first column of its first row as text.
    fn simple_query_first_value(&mut self, sql: &str) -> Result<String, WireError> {
        frontend::query(sql, &mut self.wbuf)?;
        self.send()?;
        let mut value = None;
        let mut failed = None;
        loop {
            match self.next_message()? {
                Message::DataRow(row) if value.is_none() => {
                    let mut ranges = row.ranges();
                    if let Some(Some(r)) = ranges.next()? {
                        value = Some(String::from_utf8_lossy(&row.buffer()[r]).into_owned());
                    }
                }
                Message::ErrorResponse(body) => {
                    let (code, _, message) = error_fields(body.fields());
                    failed = Some(format!("{sql}: {message} (SQLSTATE {})", String::from_utf8_lossy(&code)));
                }
                Message::ReadyForQuery(r) => {
                    self.status = r.status();
                    break;
                }
                _ => {}
            }
        }
        match failed {
            Some(f) => Err(WireError::Connect(f)),
            None => value.ok_or(WireError::Protocol("no row")),
        }
    }

    /// Parses the statements (one Sync for all).
    fn prepare(&mut self, statements: &[Prepare<'_>]) -> Result<(), WireError> {
        for s in statements {
            frontend::parse(s.name, s.sql, s.types.iter().copied(), &mut self.wbuf)?;
        }
        frontend::sync(&mut self.wbuf);
        self.send()?;
        let mut failed = None;
        loop {
            match self.next_message()? {
                Message::ErrorResponse(body) => {
                    let (code, _, message) = error_fields(body.fields());
                    failed = Some(format!("preparing: {message} (SQLSTATE {})", String::from_utf8_lossy(&code)));
                }
                Message::ReadyForQuery(r) => {
                    self.status = r.status();
                    break;
                }
                _ => {}
            }
        }
        failed.map_or(Ok(()), |f| Err(WireError::Connect(f)))
    }

    /// Runs a prepared statement: Bind (unnamed portal, binary parameters and results),
    /// Execute, Sync in one write; reads the reply to ReadyForQuery.
    #[inline]
    pub fn execute(&mut self, statement: &str, params: &[Param<'_>]) -> Result<Reply, WireError> {
        self.wbuf.clear();
        frontend::bind("", statement, [1i16], params.iter().copied(), serialize, [1i16], &mut self.wbuf)
            .map_err(|_| WireError::Protocol("a parameter did not encode"))?;
        frontend::execute("", 0, &mut self.wbuf)?;
        frontend::sync(&mut self.wbuf);
        self.send()?;
        self.reply()
    }

    /// Reads one statement's reply, to ReadyForQuery.
    fn reply(&mut self) -> Result<Reply, WireError> {
        let mut reply = Reply::default();
        let mut failed = None;
        loop {
            match self.next_message()? {
                Message::BindComplete | Message::NoData | Message::EmptyQueryResponse => {}
                Message::DataRow(row) => {
                    if reply.first_int4.is_none() {
                        let mut ranges = row.ranges();
                        if let Ok(Some(Some(r))) = ranges.next() {
                            reply.first_int4 = <[u8; 4]>::try_from(&row.buffer()[r])
                                .ok()
                                .map(i32::from_be_bytes);
                        }
                    }
                }
                Message::CommandComplete(c) => reply.rows_affected = rows_of(c.tag()?),
                Message::ErrorResponse(body) => {
                    let (sqlstate, fatal) = error_code(body.fields());
                    failed = Some(WireError::Server { sqlstate, fatal });
                }
                Message::ReadyForQuery(r) => {
                    self.status = r.status();
                    break;
                }
                Message::NoticeResponse(_) | Message::ParameterStatus(_) | Message::NotificationResponse(_) => {}
                _ => return Err(WireError::Protocol("unexpected message in a statement's reply")),
            }
        }
        match failed {
            Some(e) => Err(e),
            None => Ok(reply),
        }
    }
}

/// The SQLSTATE and FATAL-ness of an error, without its message (no allocation).
fn error_code(mut fields: ErrorFields<'_>) -> ([u8; 5], bool) {
    let mut code = *b"XX000";
    let mut fatal = false;
    while let Ok(Some(f)) = fields.next() {
        match f.type_() {
            b'C' if f.value_bytes().len() == 5 => code.copy_from_slice(f.value_bytes()),
            b'V' => fatal = matches!(f.value_bytes(), b"FATAL" | b"PANIC"),
            _ => {}
        }
    }
    (code, fatal)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A backend message: tag, length, body.
    fn msg(tag: u8, body: &[u8]) -> Vec<u8> {
        let mut m = vec![tag];
        m.extend_from_slice(&((body.len() + 4) as u32).to_be_bytes());
        m.extend_from_slice(body);
        m
    }

    /// A connection over one end of a socket pair, the canned reply written to the other.
    fn canned(reply: &[u8]) -> (WireConn, UnixStream) {
        let (a, mut b) = UnixStream::pair().unwrap();
        b.write_all(reply).unwrap();
        (WireConn::over(Stream::Unix(a)), b)
    }

    #[test]
    fn a_select_reply_gives_its_int4_and_an_update_its_row_count() {
        let mut bytes = msg(b'2', &[]);
        // DataRow: 1 column, 4 bytes, -42.
        let mut row = 1u16.to_be_bytes().to_vec();
        row.extend_from_slice(&4i32.to_be_bytes());
        row.extend_from_slice(&(-42i32).to_be_bytes());
        bytes.extend(msg(b'D', &row));
        bytes.extend(msg(b'C', b"SELECT 1\0"));
        bytes.extend(msg(b'Z', b"T"));
        bytes.extend(msg(b'2', &[]));
        bytes.extend(msg(b'C', b"INSERT 0 1\0"));
        bytes.extend(msg(b'Z', b"T"));
        let (mut c, mut peer) = canned(&bytes);
        let r = c.execute("s1", &[Param::Int4(7)]).unwrap();
        assert_eq!(r, Reply { rows_affected: 1, first_int4: Some(-42) });
        assert_eq!(c.status, b'T');
        let r = c.execute("s2", &[Param::Int4(1), Param::Text(b"tag")]).unwrap();
        assert_eq!(r, Reply { rows_affected: 1, first_int4: None });
        // What was sent first: Bind, Execute, Sync.
        drop(c);
        let mut sent = Vec::new();
        peer.read_to_end(&mut sent).unwrap();
        let mut expect = Vec::new();
        let mut bind = b"\0s1\0".to_vec();
        bind.extend_from_slice(&[0, 1, 0, 1, 0, 1, 0, 0, 0, 4, 0, 0, 0, 7, 0, 1, 0, 1]);
        expect.extend(msg(b'B', &bind));
        expect.extend(msg(b'E', &[0, 0, 0, 0, 0]));
        expect.extend(msg(b'S', &[]));
        assert_eq!(&sent[..expect.len()], &expect[..]);
    }

    #[test]
    fn a_reply_split_across_reads_is_reassembled() {
        let mut bytes = msg(b'2', &[]);
        bytes.extend(msg(b'C', b"UPDATE 3\0"));
        bytes.extend(msg(b'Z', b"T"));
        let (a, mut b) = UnixStream::pair().unwrap();
        let writer = std::thread::spawn(move || {
            for chunk in bytes.chunks(3) {
                b.write_all(chunk).unwrap();
                std::thread::sleep(Duration::from_millis(1));
            }
            b
        });
        let mut c = WireConn::over(Stream::Unix(a));
        assert_eq!(c.execute("s", &[]).unwrap().rows_affected, 3);
        drop(writer.join().unwrap());
    }

    #[test]
    fn errors_keep_their_sqlstate_and_kind() {
        let mut bytes = msg(b'E', b"SERROR\0VERROR\0C40001\0Mcould not serialize\0\0");
        bytes.extend(msg(b'Z', b"E"));
        bytes.extend(msg(b'E', b"SFATAL\0VFATAL\0C57P01\0Mterminating\0\0"));
        let (mut c, peer) = canned(&bytes);
        peer.shutdown(std::net::Shutdown::Write).unwrap();
        let e = c.execute("s", &[]).unwrap_err();
        assert!(
            matches!(&e, WireError::Server { sqlstate, fatal: false } if sqlstate == b"40001")
        );
        assert_eq!(e.kind(), ErrorKind::Serialization);
        assert!(e.connection_stands());
        assert_eq!(c.status, b'E');
        // FATAL, then the socket closes before ReadyForQuery: a lost connection.
        let e = c.execute("s", &[]).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Connection);
        assert!(!e.connection_stands());
        assert_eq!(
            WireError::Server { sqlstate: *b"23505", fatal: false }.kind(),
            ErrorKind::Other
        );
        assert_eq!(
            WireError::Server { sqlstate: *b"57P01", fatal: true }.kind(),
            ErrorKind::Connection
        );
    }

    #[test]
    fn a_silent_server_is_a_timeout_not_a_hang() {
        let (a, _b) = UnixStream::pair().unwrap();
        a.set_read_timeout(Some(Duration::from_millis(50))).unwrap();
        let mut c = WireConn::over(Stream::Unix(a));
        let e = c.execute("s", &[]).unwrap_err();
        assert!(matches!(e, WireError::Io(_)));
        assert!(e.to_string().contains("no answer within"), "{e}");
        assert_eq!(e.kind(), ErrorKind::Connection);
        let c = |url: &str| url.parse::<postgres::Config>().unwrap();
        assert_eq!(read_timeout(&c("postgresql://u@h/db")), DEFAULT_READ_TIMEOUT);
        let mut t = c("postgresql://u@h/db");
        t.tcp_user_timeout(Duration::from_millis(3000));
        assert_eq!(read_timeout(&t), Duration::from_millis(3000));
    }

    #[test]
    fn command_tags_give_row_counts() {
        assert_eq!(rows_of("UPDATE 1"), 1);
        assert_eq!(rows_of("INSERT 0 1"), 1);
        assert_eq!(rows_of("BEGIN"), 0);
        assert_eq!(rows_of("SELECT 12"), 12);
    }
}
