//! The metrics listener (issue 20): `GET /metrics` in the Prometheus text format on the TCP
//! address `http_listen`, through the same bounded server as the API ([`api::server`]), and
//! the status page beside it (`GET /`, `GET /status.json`: [`crate::status`]).
//!
//! It is read-only: its router has no path that changes anything, and it reaches the control
//! state only through [`Control::snapshot`](crate::control::Control::snapshot), the reads the
//! API's `GET /v1/counters`, `/v1/networks` and `/v1/bgp` make. No request body is accepted
//! (a declared one is answered 413), any method but GET and HEAD is answered 405.
//!
//! ```text
//!  Prometheus ──TCP──► api::server::serve (bounds: http_*) ──► GET /metrics
//!      control mutex (as any API read) ─► Control::snapshot ─► Command::Counters, Networks
//!      (datapath thread answers between batches), EVPN summary ─► nvo_observe::render
//! ```

use std::future::Future;
use std::time::Duration;

use axum::extract::State;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use tokio::net::TcpListener;

use crate::api::server::{self, Bounds};
use crate::api::Shared;
use crate::config::HttpSettings;
use crate::status::{self, events};

/// How long a scrape waits for the datapath and the EVPN speaker before answering 503.
const SCRAPE_TIMEOUT: Duration = Duration::from_secs(5);

/// Why the metrics listener could not start.
#[derive(Debug, thiserror::Error)]
#[error(
    "cannot listen for metrics on {addr} (http_listen): {source}; choose a free port on an \
     address of this host, or remove http_listen"
)]
pub struct BindError {
    /// The address.
    pub addr: std::net::SocketAddr,
    /// What the kernel said.
    pub source: std::io::Error,
}

/// Binds `http_listen`.
pub async fn bind(settings: &HttpSettings) -> Result<TcpListener, BindError> {
    TcpListener::bind(settings.listen)
        .await
        .map_err(|source| BindError {
            addr: settings.listen,
            source,
        })
}

/// Serves `/metrics` on `listener` until `shutdown` completes.
pub async fn serve(
    listener: TcpListener,
    settings: &HttpSettings,
    control: Shared,
    shutdown: impl Future<Output = ()> + Send + 'static,
) {
    let bounds = Bounds {
        name: "metrics",
        max_connections: settings.max_connections,
        header_timeout: settings.header_timeout,
        idle_timeout: settings.idle_timeout,
        idle_key: "http_idle_timeout_s",
        max_body: 0,
    };
    let recent = events::Recent::default();
    recent.push(
        "nvod",
        format!("status page listening on http://{}/", settings.listen),
    );
    let overlay_events = control.lock().await.subscribe();
    let follower = tokio::spawn(events::follow(overlay_events, recent.clone()));
    let page = status::Page::new(control.clone(), recent);
    server::serve(listener, router(control, page), &bounds, shutdown).await;
    follower.abort();
    log::debug!("metrics listener on {} closed", settings.listen);
}

/// `/metrics`, the status page, and plain-text answers for everything else.
fn router(control: Shared, page: status::Page) -> Router {
    Router::new()
        .route("/metrics", get(metrics))
        .with_state(control)
        .merge(status::routes(page))
        .fallback(not_found)
        .method_not_allowed_fallback(not_allowed)
}

async fn metrics(State(c): State<Shared>) -> Response {
    let snapshot =
        tokio::time::timeout(SCRAPE_TIMEOUT, async { c.lock().await.snapshot().await }).await;
    let text = match snapshot {
        Ok(Ok(snapshot)) => nvo_observe::render(&snapshot).map_err(|e| {
            (
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("cannot write the metrics: {e}; this is a bug in nvod\n"),
            )
        }),
        Ok(Err(failure)) => Err((
            StatusCode::SERVICE_UNAVAILABLE,
            format!("cannot read the counters: {}\n", failure.message),
        )),
        Err(_) => Err((
            StatusCode::SERVICE_UNAVAILABLE,
            format!(
                "the datapath did not answer within {} s; retry\n",
                SCRAPE_TIMEOUT.as_secs()
            ),
        )),
    };
    match text {
        Ok(text) => (
            [(
                header::CONTENT_TYPE,
                HeaderValue::from_static(nvo_observe::CONTENT_TYPE),
            )],
            text,
        )
            .into_response(),
        Err((status, message)) => plain(status, message),
    }
}

async fn not_found() -> Response {
    plain(
        StatusCode::NOT_FOUND,
        "not found: this listener serves GET /metrics, / (the status page) and /status.json\n"
            .to_owned(),
    )
}

async fn not_allowed() -> Response {
    let mut answer = plain(
        StatusCode::METHOD_NOT_ALLOWED,
        "method not allowed: this listener is read-only; use GET\n".to_owned(),
    );
    answer
        .headers_mut()
        .insert(header::ALLOW, HeaderValue::from_static("GET, HEAD"));
    answer
}

fn plain(status: StatusCode, message: String) -> Response {
    (
        status,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/plain; charset=utf-8"),
        )],
        message,
    )
        .into_response()
}
