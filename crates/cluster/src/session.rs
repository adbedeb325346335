//! The etcd session of one nvod: connect to one member (the next one at once when a session
//! ends; backoff 0.1 s doubling to at most 2 s once each failed in turn), register
//! this host under a lease of its own kept alive at TTL/3, read everything under the prefix
//! at one revision, hand that snapshot over, then watch from revision+1 and hand over a new
//! snapshot after every batch of events. Any error — etcd gone, the watch cancelled (e.g.
//! compacted), the lease lost — ends the session: the link is marked down, and the next
//! session reads everything again (a resync). Nothing here touches nvod's tables: losing etcd
//! leaves them as they are.
//!
//! ```text
//!  run ──► session ──► Client ─ lease grant, put hosts/NAME, range read P, watch P from rev+1
//!   ▲ backoff  │  ├─► snapshots (watch channel, whole maps)  ──► nvod's reconciler
//!   └──────────┘  └─► link (watch channel: connected, revision, last error, resyncs)
//! ```

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use etcd_client::{Client, ConnectOptions, EventType, GetOptions, PutOptions, WatchOptions};
use tokio::sync::watch;
use tokio::time::{timeout, Instant};

use crate::keys::{Key, Layout};
use crate::object::HostRecord;

/// The longest wait between two connection attempts.
pub const MAX_BACKOFF: Duration = Duration::from_secs(2);
const FIRST_BACKOFF: Duration = Duration::from_millis(100);
/// How long one request (or connection) may take before the session counts etcd as gone.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(3);

/// TLS files for https:// endpoints.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tls {
    /// CA certificate (PEM).
    pub ca_file: Option<PathBuf>,
    /// Client certificate (PEM).
    pub cert_file: Option<PathBuf>,
    /// Client key (PEM).
    pub key_file: Option<PathBuf>,
}

/// How to reach etcd.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Access {
    /// Endpoints, `http://` or `https://`.
    pub endpoints: Vec<String>,
    /// TLS files.
    pub tls: Tls,
    /// etcd user and password.
    pub user: Option<(String, String)>,
}

impl std::fmt::Debug for Access {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Access")
            .field("endpoints", &self.endpoints)
            .field("tls", &self.tls)
            .field("user", &self.user.as_ref().map(|(u, _)| u))
            .finish()
    }
}

impl Access {
    /// A client connected to `endpoints`, some of this access's (the session and the CLI's
    /// calls talk to one member at a time); errors say what failed, in etcd-client's words.
    pub(crate) async fn connect(&self, endpoints: &[String]) -> Result<Client, String> {
        let mut options = ConnectOptions::new()
            .with_connect_timeout(REQUEST_TIMEOUT)
            .with_timeout(REQUEST_TIMEOUT)
            .with_keep_alive(Duration::from_secs(2), REQUEST_TIMEOUT)
            .with_keep_alive_while_idle(true);
        if let Some((user, password)) = &self.user {
            options = options.with_user(user.clone(), password.clone());
        }
        let https = self.endpoints.iter().any(|e| e.starts_with("https://"));
        if https || self.tls != Tls::default() {
            options = options.with_tls(self.tls_options()?);
        }
        let client = timeout(REQUEST_TIMEOUT, Client::connect(endpoints, Some(options)))
            .await
            .map_err(|_| {
                format!(
                    "no answer from {} in {REQUEST_TIMEOUT:?}",
                    endpoints.join(",")
                )
            })?
            .map_err(|e| format!("cannot connect to {}: {e}", endpoints.join(",")))?;
        Ok(client)
    }

    fn tls_options(&self) -> Result<etcd_client::TlsOptions, String> {
        let read =
            |p: &PathBuf| std::fs::read(p).map_err(|e| format!("cannot read {}: {e}", p.display()));
        let mut tls = etcd_client::TlsOptions::new();
        if let Some(ca) = &self.tls.ca_file {
            tls = tls.ca_certificate(etcd_client::Certificate::from_pem(read(ca)?));
        }
        match (&self.tls.cert_file, &self.tls.key_file) {
            (Some(cert), Some(key)) => {
                tls = tls.identity(etcd_client::Identity::from_pem(read(cert)?, read(key)?));
            }
            (None, None) => {}
            _ => return Err("cert_file and key_file go together".to_owned()),
        }
        Ok(tls)
    }
}

/// What one nvod's session needs.
#[derive(Debug, Clone)]
pub struct Settings {
    /// How to reach etcd.
    pub access: Access,
    /// The key layout.
    pub layout: Layout,
    /// This host's registration.
    pub host: HostRecord,
    /// Its lease's TTL, seconds.
    pub lease_ttl_s: u32,
}

/// Everything under `networks/` and `hosts/` at one revision, as raw bytes by key.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Snapshot {
    /// The etcd revision it reflects (0: nothing read yet).
    pub revision: i64,
    /// Values by key.
    pub objects: BTreeMap<String, Vec<u8>>,
}

/// The state of the link to etcd.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Link {
    /// Whether a session is established (read done, watching).
    pub connected: bool,
    /// The last error, kept after reconnecting.
    pub last_error: Option<String>,
    /// Full reads after the first one.
    pub resyncs: u64,
    /// Full reads so far.
    pub reads: u64,
}

/// The channels the session feeds.
#[derive(Debug)]
pub struct Outputs {
    /// Snapshots, whole.
    pub snapshots: watch::Sender<Arc<Snapshot>>,
    /// The link.
    pub link: watch::Sender<Link>,
    /// Set to true to end: the session revokes its lease (so this host leaves the others'
    /// flood lists at once rather than after the TTL) and `run` returns.
    pub stop: watch::Receiver<bool>,
}

/// Completes once `stop` is true (or its sender is gone: nothing will stop it then).
async fn stopped(stop: &mut watch::Receiver<bool>) {
    if stop.wait_for(|&stop| stop).await.is_err() {
        std::future::pending::<()>().await;
    }
}

/// Runs sessions until `out.stop` turns true (or the task is dropped), one member at a time:
/// a session that ends goes on at once with the next endpoint, and only after each endpoint
/// failed in turn does it wait (backoff). A single connection balanced over every endpoint
/// would keep sending part of its requests, and the watch, to a member that died.
pub async fn run(settings: Settings, mut out: Outputs) {
    let mut backoff = FIRST_BACKOFF;
    let endpoints = settings.access.endpoints.len().max(1);
    let mut at = 0;
    // Endpoints tried, in turn, since a session was last up.
    let mut tried = 0;
    loop {
        if *out.stop.borrow() {
            return;
        }
        let mut up = false;
        let endpoint = settings.access.endpoints.get(at).cloned();
        let error = session(&settings, &mut out, &mut up, endpoint).await;
        if *out.stop.borrow() {
            log::info!("cluster: session ended ({error})");
            return;
        }
        if up {
            log::warn!("cluster: lost etcd: {error}; tables stay as they are, reconnecting");
            backoff = FIRST_BACKOFF;
            tried = 0;
        } else {
            log::debug!("cluster: etcd not reachable: {error}");
        }
        out.link.send_modify(|l| {
            l.connected = false;
            l.last_error = Some(error);
        });
        at = (at + 1) % endpoints;
        tried += 1;
        if tried < endpoints {
            continue;
        }
        tried = 0;
        tokio::select! {
            _ = tokio::time::sleep(backoff) => {}
            _ = stopped(&mut out.stop) => return,
        }
        backoff = (backoff * 2).min(MAX_BACKOFF);
    }
}

/// One session with `endpoint` (all of them when `None`): returns why it ended. `up` is set
/// once the first read was handed over.
async fn session(
    s: &Settings,
    out: &mut Outputs,
    up: &mut bool,
    endpoint: Option<String>,
) -> String {
    match session_inner(s, out, up, endpoint).await {
        Ok(never) => match never {},
        Err(e) => e,
    }
}

async fn session_inner(
    s: &Settings,
    out: &mut Outputs,
    up: &mut bool,
    endpoint: Option<String>,
) -> Result<std::convert::Infallible, String> {
    let endpoints = match endpoint {
        Some(e) => vec![e],
        None => s.access.endpoints.clone(),
    };
    let mut client = s.access.connect(&endpoints).await?;
    let ttl = i64::from(s.lease_ttl_s.max(2));
    let lease = timeout(REQUEST_TIMEOUT, client.lease_grant(ttl, None))
        .await
        .map_err(|_| "lease grant: no answer".to_owned())?
        .map_err(|e| format!("lease grant: {e}"))?
        .id();
    let record = serde_json::to_vec(&s.host).map_err(|e| e.to_string())?;
    let host_key = s.layout.host(&s.host.name);
    timeout(
        REQUEST_TIMEOUT,
        client.put(
            host_key.clone(),
            record,
            Some(PutOptions::new().with_lease(lease)),
        ),
    )
    .await
    .map_err(|_| format!("put {host_key}: no answer"))?
    .map_err(|e| format!("put {host_key}: {e}"))?;
    let (mut keeper, mut answers) = client
        .lease_keep_alive(lease)
        .await
        .map_err(|e| format!("lease keep-alive: {e}"))?;
    let prefix = s.layout.prefix().to_owned();
    let read = timeout(
        REQUEST_TIMEOUT,
        client.get(prefix.clone(), Some(GetOptions::new().with_prefix())),
    )
    .await
    .map_err(|_| format!("read {prefix}: no answer"))?
    .map_err(|e| format!("read {prefix}: {e}"))?;
    let mut revision = read.header().map(|h| h.revision()).unwrap_or(0);
    let mut objects = BTreeMap::new();
    for kv in read.kvs() {
        if let Ok(key) = kv.key_str() {
            if s.layout.classify(key) != Key::Other {
                objects.insert(key.to_owned(), kv.value().to_vec());
            }
        }
    }
    let mut watch = client
        .watch(
            prefix.clone(),
            Some(
                WatchOptions::new()
                    .with_prefix()
                    .with_start_revision(revision + 1),
            ),
        )
        .await
        .map_err(|e| format!("watch {prefix}: {e}"))?;
    out.snapshots.send_replace(Arc::new(Snapshot {
        revision,
        objects: objects.clone(),
    }));
    out.link.send_modify(|l| {
        l.connected = true;
        if l.reads > 0 {
            l.resyncs += 1;
        }
        l.reads += 1;
    });
    *up = true;
    log::info!(
        "cluster: connected to {}, read {} objects at revision {revision}, host {} registered \
         (lease {lease:x}, ttl {ttl} s)",
        endpoints.join(","),
        objects.len(),
        s.host.name
    );
    let period = Duration::from_millis(u64::try_from(ttl).unwrap_or(10) * 1000 / 3);
    let mut tick = tokio::time::interval(period);
    let mut answered = Instant::now();
    loop {
        tokio::select! {
            message = watch.message() => {
                let Some(resp) = message.map_err(|e| format!("watch: {e}"))? else {
                    return Err("the watch stream ended".to_owned());
                };
                if resp.canceled() {
                    return Err(format!(
                        "the watch was cancelled ({}; compacted at {})",
                        resp.cancel_reason(),
                        resp.compact_revision()
                    ));
                }
                let mut changed = false;
                for event in resp.events() {
                    let Some(kv) = event.kv() else { continue };
                    let Ok(key) = kv.key_str() else { continue };
                    if s.layout.classify(key) == Key::Other {
                        continue;
                    }
                    changed = true;
                    match event.event_type() {
                        EventType::Put => {
                            objects.insert(key.to_owned(), kv.value().to_vec());
                        }
                        EventType::Delete => {
                            objects.remove(key);
                        }
                    }
                }
                if let Some(h) = resp.header() {
                    revision = revision.max(h.revision());
                }
                if changed {
                    out.snapshots.send_replace(Arc::new(Snapshot {
                        revision,
                        objects: objects.clone(),
                    }));
                }
            }
            answer = answers.message() => {
                match answer.map_err(|e| format!("lease keep-alive: {e}"))? {
                    Some(a) if a.ttl() > 0 => answered = Instant::now(),
                    Some(_) => return Err(format!("lease {lease:x} expired")),
                    None => return Err("the lease keep-alive stream ended".to_owned()),
                }
            }
            _ = stopped(&mut out.stop) => {
                let revoked = timeout(Duration::from_secs(1), client.lease_revoke(lease)).await;
                return Err(match revoked {
                    Ok(Ok(_)) => format!("stopped; lease {lease:x} revoked, {host_key} removed"),
                    Ok(Err(e)) => format!("stopped; lease {lease:x} not revoked: {e}"),
                    Err(_) => format!("stopped; lease {lease:x} not revoked: no answer"),
                });
            }
            _ = tick.tick() => {
                if answered.elapsed() > Duration::from_secs(u64::try_from(ttl).unwrap_or(10)) {
                    return Err(format!("no keep-alive answer for lease {lease:x} within its ttl"));
                }
                timeout(REQUEST_TIMEOUT, keeper.keep_alive())
                    .await
                    .map_err(|_| "lease keep-alive: no answer".to_owned())?
                    .map_err(|e| format!("lease keep-alive: {e}"))?;
            }
        }
    }
}

/// This host's locator, as registered (for callers that build [`Settings`]).
pub fn host_record(name: &str, locator: IpAddr, node_id: u32) -> HostRecord {
    HostRecord {
        name: name.to_owned(),
        locator,
        node_id,
    }
}
