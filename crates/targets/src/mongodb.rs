//! The `mongodb` target: a MongoDB server (or one speaking its protocol, such as FerretDB)
//! through the official `mongodb` crate's synchronous API, as YCSB's mongodb binding: one
//! document per record, `_id` the key, each field a binary value; the database from the URL
//! (default `ycsb`), the collection YCSB's `table`. Write concern and read preference are the
//! URL's options (`?w=1&readPreference=primary`), as with YCSB's binding.
//!
//! Sessions queue operations and execute them in `complete`: with a queue depth above one
//! (YCSB's `batchsize`), consecutive inserts go to the server as one `insertMany`, each insert
//! of the batch timed from its submission to the batch's end. The driver builds BSON
//! documents and keeps its own connection pool; a server that goes away gives `connection`
//! errors until the driver reconnects.
//!
//! YCSB properties: `mongodb.url` (default `mongodb://localhost:27017/ycsb?w=1`),
//! `batchsize` (the load's insert batch: the workload's queue depth).
//!
//! `server-cgroup` and `server-memory-to-data` hold the server's memory to a share of the
//! database's size (dbStats' `storageSize + indexSize`) for each run ([`crate::server_memory`]).

use std::time::Duration;

use mongodb::bson::{Bson, Document, doc, spec::BinarySubtype};
use mongodb::options::ClientOptions;
use mongodb::sync::{Client, Collection};
use serde::{Deserialize, Serialize};

use storlab_model::{ErrorKind, OpError, OpKind};
use crate::{Completion, Completions, OptionError, Overlap, PrepareOptions, Session, SessionParams, SessionUser, Submitted, TargetConfig, TargetError, TargetType, YcsbBinding, YcsbBindingError, YcsbStore, claim_value, option_error, ycsb_op};
use crate::server_memory::{DataSize, MemoryLimit, Share};
use storlab_model::units::Bytes;
use storlab_model::Op;
use storlab_model::YcsbOp;
use storlab_workload::{ycsb::Properties, ycsb::RecordBuf};

pub const TYPE: TargetType = TargetType {
    name: "mongodb",
    summary: "a MongoDB (or FerretDB) server: a document per YCSB record",
    options: &[
        (
            "url",
            "mongodb://[user:password@]host:port/database?w=1&readPreference=primary",
        ),
        (
            "server-cgroup",
            "the server's cgroup v2 folder (/sys/fs/cgroup/NAME); empty: none",
        ),
        (
            "server-memory-to-data",
            "memory.max of server-cgroup for each run: the server's own memory + this share of the database (the MongoDB brief: 150/460.04 = 0.326)",
        ),
        (
            "server-memory-headroom",
            "added to that limit for the server's own growth during the run (default 256MiB)",
        ),
    ],
    parse,
    file_server: None,
    ycsb: Some(YcsbBinding {
        names: &["mongodb-async"],
        classes: &["site.ycsb.db.MongoDbClient"],
        batch: Some("batchsize"),
        options: ycsb_options,
    }),
};

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct MongoConfig {
    #[serde(
        default = "default_url",
        serialize_with = "crate::serialize_redacted_url"
    )]
    pub url: String,
    /// The server's cgroup v2 folder, whose `memory.max` each run sets (with
    /// `server-memory-to-data`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_cgroup: Option<std::path::PathBuf>,
    /// The share of the database's size the server may cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_memory_to_data: Option<f64>,
    /// Added to the limit for the server's own memory growing during the run (connections,
    /// buffers): without it, a server that allocates past the limit is OOM-killed.
    #[serde(default = "default_headroom")]
    pub server_memory_headroom: Bytes,
}

/// 256 MiB: 0.17% of the MongoDB brief's 150 GB; at a quick run's scale, it keeps FerretDB
/// (about 20 MB of heap under 4 clients) alive.
fn default_headroom() -> Bytes {
    Bytes(256 << 20)
}

fn default_url() -> String {
    "mongodb://localhost:27017/ycsb?w=1".into()
}

fn parse(table: toml::Table) -> Result<TargetConfig, OptionError> {
    let mut c: MongoConfig = table.try_into().map_err(option_error)?;
    // `server-cgroup = "${STORLAB_MONGODB_CGROUP:-}"`: empty when not given.
    c.server_cgroup = c.server_cgroup.filter(|p| !p.as_os_str().is_empty());
    let error = |key: &str, message: &str| OptionError {
        key: key.into(),
        message: message.into(),
    };
    match (&c.server_cgroup, c.server_memory_to_data) {
        (_, Some(share)) if !(share.is_finite() && share > 0.0) => {
            return Err(error("server-memory-to-data", "expected a share above 0 (0.326)"));
        }
        (Some(p), None) => {
            let message = format!(
                "server-cgroup {} is given without server-memory-to-data (the share of the database the server may cache)",
                p.display()
            );
            return Err(error("server-memory-to-data", &message));
        }
        _ => {}
    }
    if !c.url.starts_with("mongodb://") && !c.url.starts_with("mongodb+srv://") {
        return Err(OptionError {
            key: "url".into(),
            message: "expected mongodb://host:port/database".into(),
        });
    }
    Ok(TargetConfig::Mongodb(c))
}

fn ycsb_options(props: &mut Properties) -> Result<toml::Table, YcsbBindingError> {
    let mut t = toml::Table::new();
    if let Some((v, _)) = claim_value(props, "mongodb.url") {
        t.insert("url".into(), v.into());
    }
    Ok(t)
}

// Queued inserts go to the server together (a pipeline, an insertMany); other operations
// run one at a time.
crate::ycsb_store::server_target!(
    MongoConfig,
    Overlap::Batched {
        kinds: &[OpKind::Insert],
        max_queue_depth: 1024,
    },
    memory = server_memory
);

impl MongoConfig {
    fn client(&self) -> Result<(Client, String), TargetError> {
        let fail = |e: mongodb::error::Error| TargetError::Invalid(format!("mongodb: {e}"));
        let mut opts = ClientOptions::parse(&self.url).run().map_err(fail)?;
        if opts.server_selection_timeout.is_none() {
            opts.server_selection_timeout = Some(Duration::from_secs(10));
        }
        if opts.connect_timeout.is_none() {
            opts.connect_timeout = Some(Duration::from_secs(10));
        }
        let db = opts
            .default_database
            .clone()
            .unwrap_or_else(|| "ycsb".into());
        Ok((Client::with_options(opts).map_err(fail)?, db))
    }

    /// Checks the server answers and asks its version (and FerretDB's, if it is FerretDB).
    fn server_version(&self, _opts: &PrepareOptions) -> Result<Vec<(String, String)>, TargetError> {
        let (client, db) = self.client()?;
        let info = client
            .database(&db)
            .run_command(doc! { "buildInfo": 1 })
            .run()
            .map_err(|e| TargetError::Invalid(format!("mongodb: buildInfo: {e}")))?;
        let mut out = Vec::new();
        if let Ok(v) = info.get_str("version") {
            out.push(("mongodb".to_string(), v.to_string()));
        }
        if let Ok(f) = info.get_document("ferretdb") {
            if let Ok(v) = f.get_str("version") {
                out.push(("ferretdb".to_string(), v.to_string()));
            }
        } else if let Ok(v) = info.get_str("ferretdbVersion") {
            out.push(("ferretdb".to_string(), v.to_string()));
        }
        Ok(out)
    }

    /// With `server-cgroup`, holds the server to `server-memory-to-data` of the database for
    /// the run (dbStats' storageSize + indexSize: what it holds on disk, indexes included).
    /// Without a share (the server's memory not limited), nothing.
    fn server_memory(&self, _opts: &PrepareOptions) -> Result<Option<MemoryLimit>, TargetError> {
        let (Some(cgroup), Some(share)) = (&self.server_cgroup, self.server_memory_to_data) else {
            return Ok(None);
        };
        let (client, db) = self.client()?;
        let stats = client
            .database(&db)
            .run_command(doc! { "dbStats": 1, "scale": 1 })
            .run()
            .map_err(|e| TargetError::Invalid(format!("mongodb: dbStats: {e}")))?;
        let bytes = |key: &str| match stats.get(key) {
            Some(Bson::Int32(v)) => (*v).max(0) as u64,
            Some(Bson::Int64(v)) => (*v).max(0) as u64,
            Some(Bson::Double(v)) if v.is_finite() && *v > 0.0 => *v as u64,
            _ => 0,
        };
        let data = DataSize {
            bytes: bytes("storageSize") + bytes("indexSize"),
            measured_by: "dbStats storageSize + indexSize",
        };
        let share = Share {
            of_data: share,
            headroom_bytes: self.server_memory_headroom.0,
        };
        MemoryLimit::set(cgroup, share, data).map(Some)
    }

    fn open_session<U: SessionUser>(
        &self,
        params: &SessionParams,
        user: U,
    ) -> Result<U::Output, TargetError> {
        let Some(w) = params.ycsb() else {
            return Err(TargetError::Invalid(
                "a mongodb target runs ycsb workloads only".into(),
            ));
        };
        let (client, db) = self.client()?;
        let coll = client.database(&db).collection::<Document>(&w.table);
        let qd = params.queue_depth.max(1) as usize;
        let session = MongoSession {
            coll,
            record: RecordBuf::new(w, params.seed ^ ((params.worker as u64 + 1) << 32))
                .with_verify(params.kv_verify(), params.queue_depth),
            batching: qd > 1,
            batch: Vec::with_capacity(qd),
            batch_slots: Vec::with_capacity(qd),
            _client: client,
        };
        Ok(user.run(session))
    }
}

/// One worker's session.
pub struct MongoSession {
    coll: Collection<Document>,
    record: RecordBuf,
    /// Inserts are gathered into insertMany batches (queue depth above 1).
    batching: bool,
    /// Inserts gathered for one insertMany.
    batch: Vec<Document>,
    batch_slots: Vec<u32>,
    _client: Client,
}

fn error_of(e: &mongodb::error::Error) -> OpError {
    use mongodb::error::ErrorKind as K;
    let kind = match *e.kind {
        K::Io(_) | K::ConnectionPoolCleared { .. } | K::ServerSelection { .. } => {
            ErrorKind::Connection
        }
        K::InvalidArgument { .. } => ErrorKind::Invalid,
        _ => ErrorKind::Other,
    };
    OpError { kind, code: 0 }
}

fn value_bytes(v: &Bson) -> Option<&[u8]> {
    match v {
        Bson::Binary(b) => Some(&b.bytes),
        Bson::String(s) => Some(s.as_bytes()),
        _ => None,
    }
}

/// Checks a document against the record's current key: (bytes, all good).
fn check_doc(rec: &RecordBuf, d: &Document, field: Option<u32>) -> (u32, bool) {
    let mut bytes = 0u32;
    let mut good = true;
    let mut seen = 0;
    for (name, v) in d {
        if name == "_id" {
            continue;
        }
        let Some(value) = value_bytes(v) else {
            good = false;
            continue;
        };
        bytes += value.len() as u32;
        match rec.field_index(name.as_bytes()) {
            Some(i) if field.is_none_or(|f| f as usize == i) => {
                seen += 1;
                good &= rec.verify(i, value);
            }
            _ => good = false,
        }
    }
    let want = field.map_or(rec.field_count(), |_| 1);
    (
        bytes,
        good && (seen == want || !rec.verifying() && seen > 0),
    )
}

fn binary(v: &[u8]) -> Bson {
    Bson::Binary(mongodb::bson::Binary {
        subtype: BinarySubtype::Generic,
        bytes: v.to_vec(),
    })
}

impl MongoSession {
    fn projection(&self, field: Option<u32>) -> Option<Document> {
        field.map(|f| {
            let name = std::str::from_utf8(self.record.name(f as usize)).unwrap_or("");
            doc! { name: 1 }
        })
    }

    fn read(&mut self, field: Option<u32>) -> Result<(u32, bool), OpError> {
        let mut find = self.coll.find_one(doc! { "_id": self.record.key_str() });
        if let Some(p) = self.projection(field) {
            find = find.projection(p);
        }
        let Some(d) = find.run().map_err(|e| error_of(&e))? else {
            return Ok((0, false));
        };
        let (bytes, good) = check_doc(&self.record, &d, field);
        if !good {
            return Err(OpError::INTEGRITY);
        }
        Ok((bytes + self.record.key.len() as u32, true))
    }

    fn update(&mut self, field: Option<u32>) -> Result<(u32, bool), OpError> {
        let mut set = Document::new();
        let fields: &mut dyn Iterator<Item = usize> = match field {
            Some(f) => &mut std::iter::once(f as usize),
            None => &mut (0..self.record.field_count()),
        };
        let mut bytes = self.record.key.len() as u32;
        for i in fields {
            self.record.fill(i);
            let name = std::str::from_utf8(self.record.name(i)).unwrap_or("");
            bytes += self.record.values[i].len() as u32;
            set.insert(name, binary(&self.record.values[i]));
        }
        let r = self
            .coll
            .update_one(doc! { "_id": self.record.key_str() }, doc! { "$set": set })
            .run()
            .map_err(|e| error_of(&e))?;
        Ok((bytes, r.matched_count > 0))
    }

    /// The current record as a document.
    fn document(&mut self) -> Document {
        self.record.fill_all();
        let mut d = Document::new();
        d.insert("_id", self.record.key_str());
        for i in 0..self.record.field_count() {
            let name = std::str::from_utf8(self.record.name(i)).unwrap_or("");
            d.insert(name, binary(&self.record.values[i]));
        }
        d
    }

    fn scan(&mut self, count: u64, field: Option<u32>) -> Result<(u32, bool), OpError> {
        let mut find = self
            .coll
            .find(doc! { "_id": { "$gte": self.record.key_str() } })
            .sort(doc! { "_id": 1 })
            .limit(count.min(i64::MAX as u64) as i64);
        if let Some(p) = self.projection(field) {
            find = find.projection(p);
        }
        let cursor = find.run().map_err(|e| error_of(&e))?;
        let mut bytes = 0u32;
        let mut good = true;
        let mut n = 0;
        for d in cursor {
            let d = d.map_err(|e| error_of(&e))?;
            let key = d.get_str("_id").unwrap_or("");
            self.record.key.clear();
            self.record.key.extend_from_slice(key.as_bytes());
            let (b, g) = check_doc(&self.record, &d, field);
            bytes = bytes.saturating_add(b + key.len() as u32);
            good &= g;
            n += 1;
        }
        if !good {
            return Err(OpError::INTEGRITY);
        }
        Ok((bytes, n > 0))
    }

    fn insert_document(&mut self) -> Result<(u32, bool), OpError> {
        let d = self.document();
        let n = self.record.key.len() as u32 + self.record.value_bytes();
        self.coll.insert_one(d).run().map_err(|e| error_of(&e))?;
        Ok((n, true))
    }

    /// Sends the gathered inserts as one insertMany.
    fn flush(&mut self, out: &mut Completions) {
        if self.batch.is_empty() {
            return;
        }
        let per = (self.record.key.len() as u32 + self.record.value_bytes()).max(1);
        let docs = std::mem::take(&mut self.batch);
        let mut docs = docs;
        let result = if docs.len() == 1
            && let Some(d) = docs.pop()
        {
            self.coll.insert_one(d).run().map(|_| ())
        } else {
            self.coll.insert_many(docs).ordered(false).run().map(|_| ())
        };
        let result = result.map(|()| per).map_err(|e| error_of(&e));
        for slot in self.batch_slots.drain(..) {
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
}

impl YcsbStore for MongoSession {
    fn record(&mut self) -> &mut RecordBuf {
        &mut self.record
    }
    fn read(&mut self, field: Option<u32>) -> Result<(u32, bool), OpError> {
        MongoSession::read(self, field)
    }
    fn update(&mut self, field: Option<u32>) -> Result<(u32, bool), OpError> {
        MongoSession::update(self, field)
    }
    fn insert(&mut self) -> Result<(u32, bool), OpError> {
        self.insert_document()
    }
    fn scan(&mut self, count: u64, field: Option<u32>) -> Result<(u32, bool), OpError> {
        MongoSession::scan(self, count, field)
    }
}

impl Session for MongoSession {
    /// Queued inserts go to the server as one insertMany in `complete`.
    fn starts_in_complete(&self) -> bool {
        true
    }

    #[inline]
    fn submit(&mut self, slot: u32, op: Op) -> Result<Submitted, OpError> {
        let op = ycsb_op(op)?;
        if self.batching
            && let YcsbOp::Insert { keynum } = op
        {
            self.record.set_key(keynum);
            self.record.begin_write(Some(slot));
            let d = self.document();
            self.batch.push(d);
            self.batch_slots.push(slot);
            return Ok(Submitted::Queued);
        }
        Ok(Submitted::done(self.run(op)))
    }

    fn complete(&mut self, _min: u32, out: &mut Completions) -> Result<(), OpError> {
        self.flush(out);
        Ok(())
    }

    fn read_back(&mut self, keynum: u64) -> Option<storlab_verify::kv::ReadBack> {
        Some(crate::read_back(self, keynum))
    }
}
