//! `storlab serve`: a lab's stored results as a local web application. The list of runs with
//! filters, a run's report (the same HTML as `storlab report`), a comparison of runs ticked in
//! the list (the same as `storlab compare --html`) and the history of one study's target over
//! time. Server-rendered HTML, no script of its own; every page is read from the store and the
//! run folders when asked for (through `Store`'s public methods and the stored-results loaders
//! only), so a run stored meanwhile shows at the next load.
//!
//! The server is tiny_http (already storlab's, for `--metrics`): synchronous, a few threads
//! taking requests in turn, no async runtime. A request that cannot be answered gets a page
//! that says why (400 for a bad parameter, 404 for an unknown run, 503 when the store cannot
//! be read); a handler that panics gets a 500 page, and the server keeps serving.

mod pages;
mod query;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clap::Args;

use pages::Listed;
use query::{BadInput, Filters, HistoryQuery, Route};
use storlab_results::store::{RunRow, Store, StoreError, StoreLocation};
use storlab_results::stored::{self, LoadError, StoredRun};

pub(super) const SERVE_ABOUT: &str = "Serve the stored results as a local web application.

Pages: / the runs, with filters (study, target, system, status, from and to a UTC day) and
boxes to tick runs to compare; /run/RUN_ID a run's report (as `storlab report RUN_ID`);
/compare?run=A&run=B a comparison (as `storlab compare A B --html`); /history?study=S&target=T
a target's ops/s and p99 per run over time. Every page is read from the store when it is
asked for. Plain HTML: any browser, no JavaScript needed.

Listens on 127.0.0.1:8080 unless told otherwise (port 0: any free port); the address is
printed on stdout. A non-loopback address needs --token FILE (every request carries it;
a browser asks for it as a password); add --tls-cert and --tls-key (PEM files) so that the
token and the pages cross the network encrypted (https), else storlab warns.

Examples:
  storlab serve
  storlab serve --results /lab/storlab-results --listen 127.0.0.1:9000
  storlab serve --listen 0.0.0.0:8443 --token lab.token --tls-cert lab.crt --tls-key lab.key";

#[derive(Args)]
pub(super) struct ServeArgs {
    /// The address to listen on.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8080")]
    listen: SocketAddr,
    /// Requests handled at once.
    #[arg(long, value_name = "N", default_value_t = 4, value_parser = clap::value_parser!(u16).range(1..=64))]
    threads: u16,
    /// A file whose first line is a token (16 characters or more) that every request must
    /// carry: `Authorization: Bearer TOKEN`, or, in a browser, as the password it asks for
    /// (any user name). Needed to listen on an address other than loopback.
    #[arg(long, value_name = "FILE")]
    token: Option<std::path::PathBuf>,
    /// Serve over TLS (https) with this certificate chain (PEM, the server's certificate
    /// first); with --tls-key. Without it, a token given crosses the network in clear.
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    tls_cert: Option<std::path::PathBuf>,
    /// The private key (PEM) of --tls-cert.
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    tls_key: Option<std::path::PathBuf>,
    #[command(flatten)]
    store: super::StoreArgs,
}

/// `storlab serve`: serves until killed.
pub(super) fn serve(args: ServeArgs) -> Result<i32> {
    let flags = storlab_engine::access::AccessFlags {
        listen: "--listen",
        token: "--token",
        tls_cert: "--tls-cert",
        tls_key: "--tls-key",
    };
    let tls = args.tls_cert.as_deref().zip(args.tls_key.as_deref());
    let access =
        storlab_engine::access::Access::read(args.listen, args.token.as_deref(), tls, &flags)?;
    if let Some(warning) = access.clear_text_warning(args.listen, &flags) {
        eprintln!("storlab serve: {warning}");
    }
    let http = storlab_engine::http::HttpServer::bind(args.listen, access.tls.as_ref())?;
    let token = access.token;
    let location = args.store.location()?;
    println!(
        "storlab serve: {}://{}/ (results: {location})",
        http.scheme(),
        http.addr()
    );
    use std::io::Write as _;
    std::io::stdout().flush().context("writing the address")?;
    let server = http.server.clone();
    let workers: Vec<_> = (0..args.threads)
        .map(|i| {
            let (server, location, token) = (server.clone(), location.clone(), token.clone());
            std::thread::Builder::new()
                .name(format!("storlab-serve-{i}"))
                .spawn(move || take_requests(&server, &location, token.as_ref()))
        })
        .collect::<Result<_, _>>()
        .context("starting the server's threads")?;
    for w in workers {
        let _ = w.join();
    }
    Ok(0)
}

/// Answers requests until the server stops; a handler's panic answers 500, not the thread.
fn take_requests(
    server: &tiny_http::Server,
    store: &StoreLocation,
    token: Option<&storlab_engine::access::Token>,
) {
    for request in server.incoming_requests() {
        let method = request.method().clone();
        let url = request.url().to_string();
        let authorization = request
            .headers()
            .iter()
            .find(|h| h.field.equiv("Authorization"))
            .map(|h| h.value.as_str().to_string());
        let admitted = token.is_none_or(|t| t.admits(authorization.as_deref()));
        let answer = if admitted {
            guarded(|| answer(&method, &url, store))
        } else {
            Failure::Unauthorized.page()
        };
        let mut response =
            tiny_http::Response::from_string(answer.body).with_status_code(answer.status);
        if !admitted
            && let Ok(h) =
                tiny_http::Header::from_bytes("WWW-Authenticate", storlab_engine::access::CHALLENGE)
        {
            response.add_header(h);
        }
        for (name, value) in [
            ("Content-Type", "text/html; charset=utf-8"),
            ("Cache-Control", "no-store"),
            ("X-Content-Type-Options", "nosniff"),
        ] {
            // Constant, valid headers: from_bytes only fails on bytes they hold none of.
            if let Ok(h) = tiny_http::Header::from_bytes(name, value) {
                response.add_header(h);
            }
        }
        // A browser that went away is its own business.
        let _ = request.respond(response);
    }
}

/// `make`'s page, or a 500 page when it panics (the thread goes on to the next request).
fn guarded(make: impl FnOnce() -> Answer) -> Answer {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(make)).unwrap_or_else(|_| {
        Failure::Broken("storlab serve failed on this request (a bug: see its output)".into())
            .page()
    })
}

/// A page and its HTTP status.
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    pub body: String,
}

/// Why a request got no page of its own.
#[derive(Debug)]
enum Failure {
    Bad(BadInput),
    NotFound(String),
    StoreDown(String),
    Broken(String),
    Method(String),
    /// A request without the token (`--token`).
    Unauthorized,
}

impl From<BadInput> for Failure {
    fn from(b: BadInput) -> Failure {
        Failure::Bad(b)
    }
}

impl Failure {
    fn page(&self) -> Answer {
        let (status, title, detail) = match self {
            Failure::Bad(b) => (400, "bad request", format!("{}: {}", b.parameter, b.why)),
            Failure::NotFound(d) => (404, "not found", d.clone()),
            Failure::StoreDown(d) => (503, "the results store cannot be read", d.clone()),
            Failure::Broken(d) => (500, "cannot show this", d.clone()),
            Failure::Unauthorized => (
                401,
                "a token is needed",
                "this storlab serve was started with --token: send Authorization: Bearer TOKEN, or give the token as the password".to_string(),
            ),
            Failure::Method(m) => (
                405,
                "method not allowed",
                format!("storlab serve answers GET only, not {m}"),
            ),
        };
        Answer {
            status,
            body: pages::error_page(status, title, &detail),
        }
    }
}

/// The answer to one request: its page, or the page that says why there is none.
pub fn answer(method: &tiny_http::Method, url: &str, store: &StoreLocation) -> Answer {
    let page = if *method == tiny_http::Method::Get {
        route_and_render(url, store)
    } else {
        Err(Failure::Method(method.to_string()))
    };
    page.map(|body| Answer { status: 200, body })
        .unwrap_or_else(|f| f.page())
}

fn route_and_render(url: &str, store: &StoreLocation) -> Result<String, Failure> {
    let (path, query) = url.split_once('?').unwrap_or((url, ""));
    let pairs = query::parse_query(query)?;
    match query::route(path)? {
        Route::List => list(&Filters::parse(&pairs)?, store),
        Route::Run(id) => run_report(&id, store),
        Route::Compare => compare(&query::compared_runs(&pairs)?, store),
        Route::History => history(&HistoryQuery::parse(&pairs)?, store),
        Route::Unknown(p) => Err(Failure::NotFound(format!(
            "no page {p}: storlab serve has /, /run/RUN_ID, /compare and /history"
        ))),
    }
}

/// The store, opened to read; one that is missing or cannot be read is down (a missing
/// SQLite file is not made).
fn open_store(location: &StoreLocation) -> Result<Store, Failure> {
    if let StoreLocation::Sqlite(file) = location
        && !file.is_file()
    {
        return Err(Failure::StoreDown(format!(
            "no results store at {} (runs store their results there; start storlab serve with --results, --store or STORLAB_STORE)",
            file.display()
        )));
    }
    // Read only: serve never writes into the store it shows (an empty file, a store of an
    // older version: said, with the way out).
    Store::open_to_read(location).map_err(down)
}

fn down(e: StoreError) -> Failure {
    Failure::StoreDown(e.to_string())
}

/// A run's summary: its folder's, else the one the store keeps (a shared store's run whose
/// folder is on another machine); None for a run without one (running, not written).
fn summary_of(store: &Store, row: &RunRow) -> Option<storlab_results::summary::RunSummary> {
    stored::read_summary(Path::new(&row.folder))
        .ok()
        .or_else(|| store.summary(&row.run_id).ok())
}

fn list(f: &Filters, location: &StoreLocation) -> Result<String, Failure> {
    let store = open_store(location)?;
    let all: Vec<Listed> = store
        .list()
        .map_err(down)?
        .into_iter()
        .map(|row| {
            let folder = PathBuf::from(&row.folder);
            // A run without a readable summary (running, failed to write) lists no targets.
            let summary = summary_of(&store, &row);
            // The system's host name; a run whose folder is elsewhere: its client's.
            let system = stored::read_system(&folder)
                .ok()
                .flatten()
                .and_then(|s| s.hostname)
                .or_else(|| {
                    let s = summary.as_ref()?;
                    s.targets
                        .first()
                        .map(|t| t.client.clone())
                        .filter(|c| !c.is_empty())
                });
            Listed {
                targets: summary
                    .as_ref()
                    .map(|s| s.targets.iter().map(|t| t.name.clone()).collect())
                    .unwrap_or_default(),
                p99_ns: summary.map(|s| s.total.service_latency.p99_ns),
                system,
                row,
            }
        })
        .collect();
    let shown: Vec<&Listed> = all
        .iter()
        .filter(|l| {
            let is = |want: &Option<String>, have: &str| want.as_deref().is_none_or(|w| w == have);
            is(&f.study, &l.row.study)
                && is(&f.status, &l.row.status)
                && f.target.as_ref().is_none_or(|t| l.targets.contains(t))
                && f.system
                    .as_ref()
                    .is_none_or(|s| l.system.as_ref() == Some(s))
                && f.day_matches(&l.row.started_at)
        })
        .collect();
    // Newest first.
    let shown: Vec<&Listed> = shown.into_iter().rev().collect();
    Ok(pages::list_page(&all, &shown, f, &location.to_string()))
}

/// One stored run by its exact id (never a path, never a pattern).
fn load_run(store: &Store, rows: &[RunRow], id: &str) -> Result<StoredRun, Failure> {
    let row = rows.iter().find(|r| r.run_id == id).ok_or_else(|| {
        Failure::NotFound(format!(
            "no run `{id}` in the results store (the list at / has every stored run)"
        ))
    })?;
    stored::load_run_by_id(store, &row.run_id).map_err(|e| match e {
        LoadError::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound => {
            Failure::NotFound(format!(
                "run `{id}` ({}) has no stored results in {}: nothing to report",
                row.status, row.folder
            ))
        }
        LoadError::Store(e) => down(e),
        e => Failure::Broken(format!("run `{id}`: {e}")),
    })
}

fn run_report(id: &str, location: &StoreLocation) -> Result<String, Failure> {
    let store = open_store(location)?;
    let run = load_run(&store, &store.list().map_err(down)?, id)?;
    Ok(pages::with_nav(
        &storlab_report::html::report_html_compared(&[run], None, None),
    ))
}

fn compare(ids: &[String], location: &StoreLocation) -> Result<String, Failure> {
    let store = open_store(location)?;
    let rows = store.list().map_err(down)?;
    let sides = ids
        .iter()
        .map(|id| {
            Ok(storlab_results::comparison::sides::Side {
                label: id.clone(),
                runs: vec![load_run(&store, &rows, id)?],
            })
        })
        .collect::<Result<Vec<_>, Failure>>()?;
    let c = storlab_results::comparison::sides::compare_sides(&sides);
    Ok(pages::with_nav(&storlab_report::compare::render_html(
        &c, 0.95,
    )))
}

fn history(q: &HistoryQuery, location: &StoreLocation) -> Result<String, Failure> {
    let store = open_store(location)?;
    let runs = storlab_results::comparison::history::load(
        &store,
        &q.study,
        &q.target,
        q.step.as_deref(),
        HISTORY_CONFIDENCE,
    )
    .map_err(down)?;
    if runs.is_empty() {
        return Err(Failure::NotFound(format!(
            "no run of study `{}`{} has figures of a target `{}`",
            q.study,
            q.step
                .as_ref()
                .map(|s| format!(" (step `{s}`)"))
                .unwrap_or_default(),
            q.target
        )));
    }
    Ok(pages::history_page(q, &runs, HISTORY_CONFIDENCE))
}

/// The confidence of the history page's intervals and change points.
const HISTORY_CONFIDENCE: f64 = 0.95;

#[cfg(test)]
mod tests {
    use super::*;

    fn status(url: &str, results: &Path) -> u16 {
        answer(
            &tiny_http::Method::Get,
            url,
            &StoreLocation::in_folder(results),
        )
        .status
    }

    #[test]
    fn every_request_gets_a_page_with_the_status_it_deserves() {
        let dir = tempfile::tempdir().unwrap();
        let none = dir.path().join("nothing-stored");
        // Without a store: the pages that read it say it is down, and none is made.
        for url in [
            "/",
            "/?study=s",
            "/run/x",
            "/compare?run=a&run=b",
            "/history?study=s&target=t",
        ] {
            assert_eq!(status(url, &none), 503, "{url}");
        }
        assert!(!none.exists(), "serving made a results folder");
        // The request's own faults come first, store or not.
        for url in [
            "/?from=2026-02-30",
            "/?x=1",
            "/compare",
            "/compare?run=a",
            "/history",
            "/run/%",
            "/?study=%FF",
        ] {
            assert_eq!(status(url, &none), 400, "{url}");
        }
        for url in ["/favicon.ico", "/run/a/b", "/run/", "//"] {
            assert_eq!(status(url, &none), 404, "{url}");
        }
        let post = answer(
            &tiny_http::Method::Post,
            "/",
            &StoreLocation::in_folder(&none),
        );
        assert_eq!(post.status, 405);
        assert!(post.body.contains("GET only, not POST"), "{}", post.body);
    }

    #[test]
    fn a_handler_that_panics_answers_500() {
        let a = guarded(|| panic!("a bug"));
        assert_eq!(a.status, 500);
        assert!(a.body.contains("failed on this request"), "{}", a.body);
        assert_eq!(
            guarded(|| Answer {
                status: 200,
                body: String::new()
            })
            .status,
            200
        );
    }

    /// An empty results.db is said, with the way out, and left as it was (serve does not
    /// write a schema into it).
    #[test]
    fn an_empty_store_file_is_said_and_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("results.db");
        std::fs::write(&file, b"").unwrap();
        let page = answer(
            &tiny_http::Method::Get,
            "/",
            &StoreLocation::in_folder(dir.path()),
        );
        assert_eq!(page.status, 503);
        assert!(
            page.body.contains("the results index is damaged")
                && page.body.contains("storlab results reindex"),
            "{}",
            page.body
        );
        assert_eq!(
            std::fs::metadata(&file).unwrap().len(),
            0,
            "nothing written"
        );
    }

    #[test]
    fn an_empty_store_lists_nothing_and_knows_no_run() {
        let dir = tempfile::tempdir().unwrap();
        Store::open(dir.path()).unwrap();
        let list = answer(
            &tiny_http::Method::Get,
            "/",
            &StoreLocation::in_folder(dir.path()),
        );
        assert_eq!(list.status, 200);
        assert!(list.body.contains("0 of 0 runs") && list.body.contains("No stored run"));
        let run = answer(
            &tiny_http::Method::Get,
            "/run/r%25",
            &StoreLocation::in_folder(dir.path()),
        );
        assert_eq!(run.status, 404);
        // The id is taken as it is, never as a pattern (`%` matches anything in LIKE).
        assert!(run.body.contains("no run `r%`"), "{}", run.body);
        assert_eq!(status("/history?study=s&target=t", dir.path()), 404);
    }
}
