//! nvod's bounded HTTP/1.1 server: accepts connections on a listener (the API's unix socket,
//! the metrics TCP address) and serves each with hyper, within bounds a client cannot push
//! nvod past. Every listener nvod has goes through [`serve`]; [`Bounds`] says how tight.
//!
//! - At most `max_connections` (`api_max_connections`, `http_max_connections`) connections are served at once. At the cap, a new
//!   connection closes the least recently active connection that has no request running
//!   (a half-open one that never sent a byte goes first); when every connection has a request
//!   running, the new one is closed at once. A flood of idle connections therefore never
//!   locks a real client out, nvod's descriptors stay bounded, and no request is cut in the
//!   middle of a change (the control operations are not cancel-safe).
//! - A request's header must arrive within the header timeout of the connection opening
//!   or of the previous answer (hyper's header timer), and a connection with no request
//!   running on which no byte moves for the idle timeout is closed (a stalled upload, a
//!   client that stopped reading its answer).
//! - A body is read here, before the router sees the request: a declared `Content-Length`
//!   over the bounds' `max_body` ([`MAX_BODY`] on the API, 0 on metrics) is answered 413 at once, without reading a byte of the body, and a
//!   body (chunked, say) that grows past it is cut there with the same answer. The whole body
//!   must arrive within the idle timeout.
//! - Each connection's read buffer is capped, and everything a connection holds is freed when
//!   it closes; after a burst (the count falls to a quarter of its peak), nvod gives the
//!   freed heap back to the kernel ([`nvo_io::trim_heap`], glibc's `malloc_trim`): glibc keeps
//!   freed memory in its arenas otherwise, and RSS would stay at the burst's peak.
//!
//! ```text
//!  accept loop ──admit──► Registry (id → Conn: last activity, requests running, close)
//!      │                        ▲ evict LRU idle / forget on close
//!      └─spawn─► connection task: hyper http1 ◄─ Tracked<UnixStream> (stamps activity)
//!                    select { connection, close.notified(), idle watchdog, stop }
//! ```

use std::collections::HashMap;
use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use axum::http::{header, HeaderValue, Request, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Router;
use futures_util::StreamExt;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream, UnixListener, UnixStream};

use super::error::ApiFailure;
#[cfg(doc)]
use super::error::MAX_BODY;

/// How tight one listener's bounds are.
#[derive(Debug, Clone)]
pub struct Bounds {
    /// What the listener is, for log lines ("API", "metrics").
    pub name: &'static str,
    /// Connections served at once.
    pub max_connections: usize,
    /// Time to send a request's header.
    pub header_timeout: Duration,
    /// Time a connection may stay without moving a byte.
    pub idle_timeout: Duration,
    /// The config key of the idle timeout, for the 408 answer.
    pub idle_key: &'static str,
    /// Largest request body; 0 takes none.
    pub max_body: usize,
}

/// Where connections come from: a unix socket or a TCP address.
pub trait Listener {
    /// One accepted connection.
    type Io: AsyncRead + AsyncWrite + Unpin + Send + 'static;
    /// The next connection.
    fn accept_io(&self) -> impl Future<Output = io::Result<Self::Io>>;
}

impl Listener for UnixListener {
    type Io = UnixStream;
    async fn accept_io(&self) -> io::Result<UnixStream> {
        self.accept().await.map(|(stream, _)| stream)
    }
}

impl Listener for TcpListener {
    type Io = TcpStream;
    async fn accept_io(&self) -> io::Result<TcpStream> {
        let (stream, _) = self.accept().await?;
        // Answers are one write each: no need to wait for more to coalesce.
        let _ = stream.set_nodelay(true);
        Ok(stream)
    }
}

/// Largest read buffer of one connection: a header, or a slice of a body, never more.
const MAX_READ_BUFFER: usize = 64 * 1024;

/// Connections at once that count as a burst, after which freed memory is returned.
const BURST: usize = 32;

/// How long a stop waits for running requests before dropping the connections.
const STOP_GRACE: Duration = Duration::from_secs(5);

/// One served connection, as the registry sees it.
#[derive(Debug)]
struct Conn {
    /// Milliseconds since the registry's epoch when a byte last moved (or it was accepted).
    last: AtomicU64,
    /// Requests running (handler called, answer not yet returned).
    running: AtomicU32,
    /// A request body is being read: its own deadline answers 408, not the idle watchdog.
    /// Such a connection may still be evicted (no handler runs yet).
    reading: AtomicBool,
    /// Told when the connection must close now (evicted).
    close: tokio::sync::Notify,
}

/// The connections being served.
#[derive(Debug)]
struct Registry {
    epoch: Instant,
    max: usize,
    next_id: AtomicU64,
    conns: Mutex<HashMap<u64, Arc<Conn>>>,
    /// Connections closed to make room, and refused at once (every one busy).
    evicted: AtomicU64,
    refused: AtomicU64,
    /// Most connections at once since the heap was last trimmed.
    peak: AtomicUsize,
}

impl Registry {
    fn now_ms(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// A slot for a new connection: free, or taken from the least recently active idle
    /// connection; `None` when every connection has a request running.
    fn admit(&self) -> Option<(u64, Arc<Conn>)> {
        let mut conns = self.conns.lock().unwrap_or_else(PoisonError::into_inner);
        if conns.len() >= self.max {
            let victim = conns
                .iter()
                .filter(|(_, c)| c.running.load(Ordering::Acquire) == 0)
                .min_by_key(|(_, c)| c.last.load(Ordering::Relaxed))
                .map(|(&id, _)| id);
            let Some(victim) = victim else {
                self.refused.fetch_add(1, Ordering::Relaxed);
                return None;
            };
            if let Some(conn) = conns.remove(&victim) {
                conn.close.notify_one();
            }
            self.evicted.fetch_add(1, Ordering::Relaxed);
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let conn = Arc::new(Conn {
            last: AtomicU64::new(self.now_ms()),
            running: AtomicU32::new(0),
            reading: AtomicBool::new(false),
            close: tokio::sync::Notify::new(),
        });
        conns.insert(id, conn.clone());
        self.peak.fetch_max(conns.len(), Ordering::Relaxed);
        Some((id, conn))
    }

    /// Drops a closed connection; true when a burst has just ended (the count fell to a
    /// quarter of a peak of at least [`BURST`]), the moment to return freed memory.
    fn forget(&self, id: u64) -> bool {
        let mut conns = self.conns.lock().unwrap_or_else(PoisonError::into_inner);
        conns.remove(&id);
        let peak = self.peak.load(Ordering::Relaxed);
        if peak >= BURST && conns.len() <= peak / 4 {
            self.peak.store(conns.len(), Ordering::Relaxed);
            return true;
        }
        false
    }

    fn len(&self) -> usize {
        self.conns
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }
}

/// Serves `router` on `listener` until `shutdown` completes; then lets running requests end
/// (at most [`STOP_GRACE`]) and closes every connection.
pub async fn serve<L: Listener>(
    listener: L,
    router: Router,
    limits: &Bounds,
    shutdown: impl Future<Output = ()> + Send + 'static,
) {
    let registry = Arc::new(Registry {
        epoch: Instant::now(),
        max: limits.max_connections,
        next_id: AtomicU64::new(0),
        conns: Mutex::new(HashMap::new()),
        evicted: AtomicU64::new(0),
        refused: AtomicU64::new(0),
        peak: AtomicUsize::new(0),
    });
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let mut shutdown = std::pin::pin!(shutdown);
    let mut accept_warned: Option<Instant> = None;
    let mut cap_warned: Option<Instant> = None;
    loop {
        let accepted = tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept_io() => accepted,
        };
        let stream = match accepted {
            Ok(stream) => stream,
            Err(e) => {
                // EMFILE, ENFILE, ENOBUFS...: transient; the connection waits in the backlog.
                if accept_warned.is_none_or(|t| t.elapsed() > Duration::from_secs(60)) {
                    log::warn!("{}: cannot accept a connection: {e}; retrying", limits.name);
                    accept_warned = Some(Instant::now());
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let evicted = registry.evicted.load(Ordering::Relaxed);
        let Some((id, conn)) = registry.admit() else {
            log::debug!(
                "{} connection refused: all {} have a request running",
                limits.name,
                registry.max
            );
            drop(stream);
            continue;
        };
        if registry.evicted.load(Ordering::Relaxed) != evicted
            && cap_warned.is_none_or(|t| t.elapsed() > Duration::from_secs(60))
        {
            log::warn!(
                "{} connections at their cap ({}): closing the least recently active idle ones \
                 to admit new ones",
                limits.name,
                registry.max
            );
            cap_warned = Some(Instant::now());
        }
        let made_room = registry.evicted.load(Ordering::Relaxed) != evicted;
        let task = Connection {
            registry: registry.clone(),
            id,
            conn,
            router: router.clone(),
            limits: limits.clone(),
            stop: stop_rx.clone(),
        };
        tokio::spawn(task.run(stream));
        if made_room {
            // Let the evicted connection's task run and close its descriptor before the next
            // accept: under a flood, closing must keep pace with accepting, or nvod's
            // descriptors would still grow with the flood.
            tokio::task::yield_now().await;
        }
    }
    let _ = stop_tx.send(true);
    let deadline = Instant::now() + STOP_GRACE;
    while registry.len() > 0 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    log::debug!(
        "{} server stopped: {} connections closed to make room, {} refused while all were busy",
        limits.name,
        registry.evicted.load(Ordering::Relaxed),
        registry.refused.load(Ordering::Relaxed)
    );
}

/// One connection's task.
struct Connection {
    registry: Arc<Registry>,
    id: u64,
    conn: Arc<Conn>,
    router: Router,
    limits: Bounds,
    stop: tokio::sync::watch::Receiver<bool>,
}

impl Connection {
    async fn run<S: AsyncRead + AsyncWrite + Unpin + Send + 'static>(mut self, stream: S) {
        let io = TokioIo::new(Tracked {
            inner: stream,
            conn: self.conn.clone(),
            registry: self.registry.clone(),
        });
        let router = TowerToHyperService::new(self.router.clone());
        let conn = self.conn.clone();
        let registry = self.registry.clone();
        let idle_timeout = self.limits.idle_timeout;
        let body_bounds = (self.limits.max_body, self.limits.idle_key);
        let service = hyper::service::service_fn(move |req: Request<Incoming>| {
            let router = router.clone();
            let conn = conn.clone();
            let registry = registry.clone();
            async move {
                conn.reading.store(true, Ordering::Relaxed);
                let buffered = buffer_body(req, idle_timeout, body_bounds).await;
                conn.reading.store(false, Ordering::Relaxed);
                conn.last.store(registry.now_ms(), Ordering::Relaxed);
                let req = match buffered {
                    Ok(req) => req,
                    Err(answer) => return Ok::<_, Infallible>(answer),
                };
                let running = Running::new(&conn, &registry);
                match hyper::service::Service::call(&router, req).await {
                    Ok(answer) if answer.extensions().get::<Streaming>().is_some() => {
                        Ok(stream_running(answer, running))
                    }
                    Ok(answer) => Ok(answer),
                    Err(never) => match never {},
                }
            }
        });
        let mut builder = hyper::server::conn::http1::Builder::new();
        builder
            .timer(TokioTimer::new())
            .header_read_timeout(self.limits.header_timeout)
            .max_buf_size(MAX_READ_BUFFER);
        let connection = builder.serve_connection(io, service);
        let mut connection = std::pin::pin!(connection);
        let mut stopping = *self.stop.borrow();
        if stopping {
            connection.as_mut().graceful_shutdown();
        }
        loop {
            tokio::select! {
                served = connection.as_mut() => {
                    if let Err(e) = served {
                        log::debug!("{} connection closed: {e}", self.limits.name);
                    }
                    break;
                }
                () = self.conn.close.notified() => {
                    log::debug!("{} connection closed to make room for a new one", self.limits.name);
                    break;
                }
                () = idle(&self.conn, &self.registry, idle_timeout) => {
                    log::debug!("{} connection closed: idle for {idle_timeout:?}", self.limits.name);
                    break;
                }
                changed = self.stop.changed(), if !stopping => {
                    stopping = true;
                    if changed.is_ok() {
                        connection.as_mut().graceful_shutdown();
                    }
                }
            }
        }
        if self.registry.forget(self.id) {
            // A burst is over: give the memory its connections freed back to the kernel.
            nvo_io::trim_heap();
        }
    }
}

/// Completes when the connection has had no request running and moved no byte for
/// `timeout`.
async fn idle(conn: &Conn, registry: &Registry, timeout: Duration) {
    let timeout_ms = u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX);
    loop {
        let now = registry.now_ms();
        let due = conn.last.load(Ordering::Relaxed).saturating_add(timeout_ms);
        let busy = conn.running.load(Ordering::Acquire) > 0 || conn.reading.load(Ordering::Relaxed);
        if due <= now && !busy {
            return;
        }
        let wait = due.saturating_sub(now).max(100);
        tokio::time::sleep(Duration::from_millis(wait)).await;
    }
}

/// Marks an answer whose body streams for as long as something lasts (a capture): its
/// request counts as running until the body ends or the client goes, so the idle timeout and
/// eviction leave a quiet stream alone (the handler bounds it instead).
#[derive(Debug, Clone, Copy)]
pub struct Streaming;

/// `answer` with `running` held until its body has been sent or dropped.
fn stream_running(answer: Response, running: Running) -> Response {
    let (parts, body) = answer.into_parts();
    let body = body.into_data_stream().map(move |chunk| {
        let _held = &running;
        chunk
    });
    Response::from_parts(parts, Body::from_stream(body))
}

/// Counts a request as running while alive.
struct Running(Arc<Conn>, Arc<Registry>);

impl Running {
    fn new(conn: &Arc<Conn>, registry: &Arc<Registry>) -> Running {
        conn.running.fetch_add(1, Ordering::AcqRel);
        Running(conn.clone(), registry.clone())
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        // The answer is about to be written: the idle timeout counts from now.
        self.0.last.store(self.1.now_ms(), Ordering::Relaxed);
        self.0.running.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Reads the whole body (at most `max_body`, within `timeout`) before the router sees the
/// request, so that no handler waits on a client; a declared length over the limit is
/// answered before anything is read. `idle_key` names the timeout's config key.
async fn buffer_body(
    req: Request<Incoming>,
    timeout: Duration,
    (max_body, idle_key): (usize, &'static str),
) -> Result<Request<Body>, Response> {
    let declared = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    let max_body = super::policy::body_limit(req.method(), req.uri().path(), max_body);
    if declared.is_some_and(|n| n > max_body as u64) {
        return Err(too_large(declared, max_body));
    }
    let (parts, body) = req.into_parts();
    let read = async {
        let mut stream = Body::new(body).into_data_stream();
        let mut bytes = Vec::new();
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.map_err(|e| {
                closing(ApiFailure::new(
                    StatusCode::BAD_REQUEST,
                    format!("cannot read the request body: {e}"),
                ))
            })?;
            if bytes.len() + chunk.len() > max_body {
                return Err(too_large(None, max_body));
            }
            bytes.extend_from_slice(&chunk);
        }
        Ok(Bytes::from(bytes))
    };
    match tokio::time::timeout(timeout, read).await {
        Ok(Ok(bytes)) => Ok(Request::from_parts(parts, Body::from(bytes))),
        Ok(Err(answer)) => Err(answer),
        Err(_) => Err(closing(ApiFailure::new(
            StatusCode::REQUEST_TIMEOUT,
            format!(
                "the request body did not arrive within {} s ({idle_key}); send it at once",
                timeout.as_secs()
            ),
        ))),
    }
}

/// 413, closing the connection (the body is left unread).
fn too_large(declared: Option<u64>, max_body: usize) -> Response {
    let what = match declared {
        Some(n) => format!("request body of {n} bytes (Content-Length)"),
        None => "request body".to_owned(),
    };
    let message = if max_body == 0 {
        format!("{what} refused: this listener takes no request body; send none")
    } else {
        format!("{what} is larger than {max_body} bytes; send less")
    };
    closing(ApiFailure::new(StatusCode::PAYLOAD_TOO_LARGE, message))
}

fn closing(failure: ApiFailure) -> Response {
    let mut answer = failure.into_response();
    answer
        .headers_mut()
        .insert(header::CONNECTION, HeaderValue::from_static("close"));
    answer
}

/// The connection's socket, stamping the registry's clock on every byte moved.
struct Tracked<S> {
    inner: S,
    conn: Arc<Conn>,
    registry: Arc<Registry>,
}

impl<S> Tracked<S> {
    fn stamp(&self) {
        self.conn
            .last
            .store(self.registry.now_ms(), Ordering::Relaxed);
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Tracked<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        if matches!(polled, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            self.stamp();
        }
        polled
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Tracked<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.inner).poll_write(cx, buf);
        if matches!(polled, Poll::Ready(Ok(n)) if n > 0) {
            self.stamp();
        }
        polled
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        if matches!(polled, Poll::Ready(Ok(n)) if n > 0) {
            self.stamp();
        }
        polled
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn registry(max: usize) -> Registry {
        Registry {
            epoch: Instant::now(),
            max,
            next_id: AtomicU64::new(0),
            conns: Mutex::new(HashMap::new()),
            evicted: AtomicU64::new(0),
            refused: AtomicU64::new(0),
            peak: AtomicUsize::new(0),
        }
    }

    #[test]
    fn at_the_cap_the_least_recently_active_idle_connection_makes_room() {
        let r = registry(3);
        let (a, ca) = r.admit().unwrap();
        let (b, cb) = r.admit().unwrap();
        let (c, cc) = r.admit().unwrap();
        // a is the oldest but runs a request; b moved a byte after c.
        ca.running.store(1, Ordering::Release);
        ca.last.store(0, Ordering::Relaxed);
        cb.last.store(20, Ordering::Relaxed);
        cc.last.store(10, Ordering::Relaxed);
        let (d, _) = r.admit().unwrap();
        let ids: Vec<u64> = {
            let mut ids: Vec<u64> = r.conns.lock().unwrap().keys().copied().collect();
            ids.sort_unstable();
            ids
        };
        assert_eq!(
            ids,
            [a, b, d],
            "c, idle and least recently active, made room"
        );
        assert_eq!(r.evicted.load(Ordering::Relaxed), 1);
        // When every connection runs a request, the new one is refused instead.
        for conn in r.conns.lock().unwrap().values() {
            conn.running.store(1, Ordering::Release);
        }
        assert!(r.admit().is_none());
        assert_eq!(r.refused.load(Ordering::Relaxed), 1);
        assert_eq!(r.len(), 3);
        let _ = c;
    }

    #[test]
    fn a_burst_ends_when_the_count_falls_to_a_quarter_of_its_peak() {
        let r = registry(1000);
        let ids: Vec<u64> = (0..BURST).map(|_| r.admit().unwrap().0).collect();
        let mut ended = Vec::new();
        for id in ids {
            ended.push(r.forget(id));
        }
        // Exactly once: when the count reached BURST / 4, then the peak is reset.
        assert_eq!(ended.iter().filter(|&&e| e).count(), 1);
        assert!(ended[BURST - BURST / 4 - 1]);
        assert!(!r.forget(12345));
    }
}
