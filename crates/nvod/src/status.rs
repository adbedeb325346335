//! The status page (issue 20): a read-only web page at `/` on the metrics listener
//! (`http_listen`), and the JSON it polls, `/status.json` (docs/status-page.md).
//!
//! - [`model`]: the JSON, built from the control state's reads (pure, unit-tested).
//! - [`events`]: the bounded list of recent events the page shows.
//! - [`csp`]: the page's Content-Security-Policy (hashes of its inline style and script).
//! - [`watch`]: while the page is polled, a monitor listener feeding drops and MAC changes
//!   into the recent events.
//! - `status/page.html`: the page, embedded in the binary; plain JavaScript, no framework.
//!
//! Read-only as `/metrics` is: the handlers reach the control state only through
//! `Control::status_inputs`, reads the API's GETs make, under the same control mutex; the
//! listener takes no request body and answers 405 to anything but GET and HEAD.
//!
//! ```text
//!  browser ──TCP──► api::server::serve (bounds: http_*) ──► GET /            page.html
//!                                                         └► GET /status.json
//!      control mutex ─► Control::status_inputs ─► model::build ◄─ events::Recent
//!  Control::subscribe (overlay events) ─► events::follow ─► events::Recent
//!  polled: Control::monitor_subscribe ─► watch (drops, learn/move/age) ─► events::Recent
//! ```

pub mod csp;
pub mod events;
pub mod model;
pub mod watch;

use std::time::{Duration, Instant};

use axum::extract::State;
use axum::http::{header, HeaderName, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};

use crate::api::Shared;

/// The page.
pub const PAGE: &str = include_str!("status/page.html");

/// How long a poll waits for the datapath and the EVPN speaker before answering 503.
const POLL_TIMEOUT: Duration = Duration::from_secs(5);

/// What the status handlers share.
#[derive(Debug, Clone)]
pub struct Page {
    control: Shared,
    recent: events::Recent,
    started: Instant,
    watch: watch::Watch,
}

impl Page {
    /// The status of `control`, with `recent` events; uptime counts from now.
    pub fn new(control: Shared, recent: events::Recent) -> Page {
        Page {
            control,
            recent,
            started: Instant::now(),
            watch: watch::Watch::new(watch::IDLE),
        }
    }
}

/// `/` and `/status.json`.
pub fn routes(page: Page) -> Router {
    Router::new()
        .route("/", get(html))
        .route("/status.json", get(json))
        .with_state(page)
}

/// Headers every status answer carries: nothing cached, nothing sniffed, no framing.
fn strict(mut answer: Response, content_type: &'static str, policy: &str) -> Response {
    let h = answer.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    if let Ok(value) = HeaderValue::from_str(policy) {
        h.insert(HeaderName::from_static("content-security-policy"), value);
    }
    answer
}

async fn html() -> Response {
    strict(
        PAGE.into_response(),
        "text/html; charset=utf-8",
        csp::page_policy(PAGE),
    )
}

async fn json(State(page): State<Page>) -> Response {
    let inputs = tokio::time::timeout(POLL_TIMEOUT, async {
        let control = page.control.lock().await;
        if page.watch.poll() {
            match control.monitor_subscribe(watch::TYPES) {
                Ok(listener) => page.watch.start(listener, page.recent.clone()),
                Err(failure) => {
                    log::debug!("status page: no monitor events: {}", failure.message);
                    page.watch.stopped();
                }
            }
        }
        control.status_inputs().await
    })
    .await;
    let answer = match inputs {
        Ok(Ok(inputs)) => {
            let process = model::Process {
                name: hostname(),
                uptime_ms: u64::try_from(page.started.elapsed().as_millis()).unwrap_or(u64::MAX),
                time: events::rfc3339(std::time::SystemTime::now()),
            };
            Json(model::build(&inputs, &process, page.recent.list())).into_response()
        }
        Ok(Err(failure)) => unavailable(format!("cannot read the status: {}", failure.message)),
        Err(_) => unavailable(format!(
            "the datapath did not answer within {} s; retry",
            POLL_TIMEOUT.as_secs()
        )),
    };
    strict(answer, "application/json", "default-src 'none'")
}

fn unavailable(message: String) -> Response {
    (
        StatusCode::SERVICE_UNAVAILABLE,
        Json(nvo_api::ApiError { error: message }),
    )
        .into_response()
}

/// The kernel's host name (namespaces of one machine share it; the locator tells them apart).
fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_owned())
        .unwrap_or_default()
}
