//! `GET /v1/capture`: a pcapng stream of what nvod sees (docs/capture.md, nvo-capture).
//!
//! The query names one target (`network=VNI`, `port=NAME` or `underlay=true`) and the bounds
//! (`count`, `duration` in seconds, `snaplen`) and a tcpdump-language `filter`. Everything that
//! can be refused is refused before the answer starts: a bad filter (libpcap's message) or
//! value is a 400, an unknown network or port a 404, [`nvo_capture::MAX_SESSIONS`] captures
//! already running a 409. Then the answer is 200 with `Content-Type: application/x-pcapng`
//! and a chunked body that ends with the capture (count, duration); the capture ends too when
//! the client closes the connection. The answer is marked [`Streaming`], so the connection
//! counts as busy while it streams: neither the idle timeout nor eviction cuts a quiet capture.

use std::convert::Infallible;
use std::sync::LazyLock;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{header, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use nvo_capture::{CaptureError, Request, Sessions};

use super::error::ApiFailure;
use super::server::Streaming;
use super::Shared;
use crate::control::Scope;

/// The captures of this nvod (one process, one cap).
static SESSIONS: LazyLock<Sessions> = LazyLock::new(Sessions::default);

/// Longest capture one request may ask for: a day.
const MAX_DURATION_S: u64 = 86_400;

/// What the query asks.
#[derive(Debug, PartialEq)]
struct Query {
    scope: Scope,
    filter: String,
    count: Option<u64>,
    duration: Option<Duration>,
    snaplen: u32,
}

pub async fn capture(State(c): State<Shared>, uri: Uri) -> Result<Response, ApiFailure> {
    let query = parse_query(uri.query().unwrap_or_default()).map_err(bad)?;
    // Resolved and tapped under one lock: the port cannot go in between.
    let (target, ports) = {
        let control = c.lock().await;
        let target = control.capture_target(&query.scope)?;
        let ports = control.capture_ports(&query.scope);
        control.tap(&ports, true).await?;
        (target, ports)
    };
    // From here on, however the capture ends (refused, finished, client gone), the ports are
    // untapped when this guard goes.
    let untap = Untap {
        control: c.clone(),
        ports,
    };
    let comment = format!("nvo capture {}", uri.query().unwrap_or_default());
    let request = Request {
        target,
        filter: query.filter,
        count: query.count,
        duration: query.duration,
        snaplen: query.snaplen,
        comment,
    };
    let capture = SESSIONS.start(request).map_err(refusal)?;
    let stream = futures_util::stream::unfold((capture, untap), |(mut capture, untap)| async {
        let block = capture.next().await?;
        Some((Ok::<_, Infallible>(Bytes::from(block)), (capture, untap)))
    });
    let mut answer = (
        [
            (header::CONTENT_TYPE, "application/x-pcapng"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        Body::from_stream(stream),
    )
        .into_response();
    answer.extensions_mut().insert(Streaming);
    Ok(answer)
}

/// Untaps a capture's ports when dropped (see [`crate::control::Control::tap`]).
struct Untap {
    control: Shared,
    ports: Vec<nvo_pipeline::PortId>,
}

impl Drop for Untap {
    fn drop(&mut self) {
        if self.ports.is_empty() {
            return;
        }
        let (control, ports) = (self.control.clone(), std::mem::take(&mut self.ports));
        // Dropped on the API's runtime (the answer's body, or the handler on a refusal).
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                if let Err(e) = control.lock().await.tap(&ports, false).await {
                    log::warn!("capture ended; untapping its ports failed: {}", e.message);
                }
            });
        }
    }
}

/// Ends every running capture (nvod is stopping).
pub fn stop_all() {
    SESSIONS.stop_all();
}

fn bad(message: String) -> ApiFailure {
    ApiFailure::new(StatusCode::BAD_REQUEST, message)
}

fn refusal(e: CaptureError) -> ApiFailure {
    let status = match e {
        CaptureError::Filter(_) | CaptureError::Snaplen(_) | CaptureError::Inner(_) => {
            StatusCode::BAD_REQUEST
        }
        CaptureError::Busy(_) | CaptureError::Nothing(_) => StatusCode::CONFLICT,
        CaptureError::Open(_) => StatusCode::CONFLICT,
        CaptureError::Thread(_) => StatusCode::INTERNAL_SERVER_ERROR,
    };
    ApiFailure::new(status, e.to_string())
}

fn parse_query(query: &str) -> Result<Query, String> {
    let mut scope = None;
    let mut q = Query {
        scope: Scope::Underlay,
        filter: String::new(),
        count: None,
        duration: None,
        snaplen: nvo_capture::DEFAULT_SNAPLEN,
    };
    let mut set_scope = |s: Scope| {
        if scope.replace(s).is_some() {
            return Err("name one of network, port and underlay, not several".to_owned());
        }
        Ok(())
    };
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        let value =
            nvo_api::query::decode(value).ok_or_else(|| format!("{key}: bad percent-encoding"))?;
        let number = |max: u64| {
            value
                .parse::<u64>()
                .ok()
                .filter(|n| (1..=max).contains(n))
                .ok_or_else(|| format!("{key} {value:?}: expected a whole number from 1 to {max}"))
        };
        match key {
            "network" => {
                let vni = value
                    .parse::<u32>()
                    .ok()
                    .filter(|v| *v < 1 << 24)
                    .ok_or_else(|| format!("network {value:?}: expected a VNI, 0 to 16777215"))?;
                set_scope(Scope::Network(vni))?;
            }
            "port" if !value.is_empty() => set_scope(Scope::Port(value.clone()))?,
            "underlay" if value == "true" || value.is_empty() => set_scope(Scope::Underlay)?,
            "underlay" if value == "false" => {}
            "filter" => q.filter = value.clone(),
            "count" => q.count = Some(number(u64::MAX)?),
            "duration" => q.duration = Some(Duration::from_secs(number(MAX_DURATION_S)?)),
            "snaplen" => {
                let n = number(u64::from(nvo_capture::DEFAULT_SNAPLEN))?;
                q.snaplen = u32::try_from(n).unwrap_or(nvo_capture::DEFAULT_SNAPLEN);
            }
            _ => {
                return Err(format!(
                    "unknown or empty query parameter {key:?}; capture takes network, port, \
                     underlay, filter, count, duration and snaplen"
                ))
            }
        }
    }
    q.scope = scope.ok_or("name what to capture: network=VNI, port=NAME or underlay=true")?;
    Ok(q)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_parse() {
        let q = parse_query("network=100&count=4&duration=10&filter=icmp%20and+host%2010.0.0.1")
            .unwrap();
        assert_eq!(q.scope, Scope::Network(100));
        assert_eq!(q.count, Some(4));
        assert_eq!(q.duration, Some(Duration::from_secs(10)));
        assert_eq!(q.filter, "icmp and host 10.0.0.1");
        assert_eq!(q.snaplen, nvo_capture::DEFAULT_SNAPLEN);
        assert_eq!(
            parse_query("port=veth0").unwrap().scope,
            Scope::Port("veth0".into())
        );
        assert_eq!(parse_query("underlay=true&snaplen=96").unwrap().snaplen, 96);
    }

    #[test]
    fn bad_queries_say_what_is_wrong() {
        let e = |q: &str| parse_query(q).unwrap_err();
        assert!(e("").contains("name what to capture"));
        assert!(e("network=1&port=a").contains("not several"));
        assert!(e("network=16777216").contains("expected a VNI"));
        assert!(e("underlay=true&count=0").contains("count \"0\""));
        assert!(e("underlay=true&duration=x").contains("duration"));
        assert!(e("underlay=true&filter=%zz").contains("percent"));
        assert!(e("underlay=true&colour=red").contains("unknown"));
    }
}
