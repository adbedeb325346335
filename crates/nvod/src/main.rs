//! nvod: the nvo daemon, one per host (docs/design/dataplane.md), and the composition root:
//! it wires the subsystems together — the datapath thread (nvo-datapath), the EVPN speaker
//! (nvo-evpn) — and keeps the config, the desired state and the API.
//!
//! ```text
//!  main thread: config, checks, then the control thread's tokio runtime
//!    ├─ API server (axum on the unix socket) ─► Control (desired state, state.json)
//!    ├─ metrics listener (http_listen, GET /metrics) ─► Control::snapshot (reads only)
//!    │    and the status page (GET /, /status.json) ─► Control::status_inputs (reads only)
//!    ├─ OpenFlow listener (openflow_listen; threads, openflow.rs) ─► Control (flow table)
//!    ├─ monitor task (monitor::run): datapath's event ring ─► GET /v1/monitor listeners
//!    │                                             │ Command + eventfd wake, oneshot reply
//!    │  EVPN speaker task (nvo_evpn::spawn) ──────┤ through control::bgp's DataPlane
//!    └─ datapath thread (nvo_datapath::start) ◄───┘  owns Pipeline, underlay, ports
//! ```
//!
//! Start-up order: read the config; refuse if the API socket's directory or file is another
//! user's, or another nvod answers on the socket; lock the state directory (refuse if another
//! nvod holds it, or if it is writable by others); read the state (refuse if corrupt); bind the
//! underlay; start the datapath; re-apply the state;
//! listen on the API socket and, when `http_listen` is set, the metrics address (refuse to
//! start if it cannot be bound). SIGTERM or SIGINT stops both listeners, then the datapath,
//! and removes the socket file.

mod api;
mod cluster;
mod config;
mod control;
mod convert;
mod metrics;
mod monitor;
mod openflow;
mod state;
mod status;
mod values;

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::Parser;
use tokio::sync::Mutex;

use crate::api::SocketError;
use crate::config::Config;
use crate::control::{Control, Failure};
use crate::state::{StateError, Store};

/// Why nvod stopped with an error after reading its config; logged as one line.
#[derive(Debug, thiserror::Error)]
enum RunError {
    /// The API socket could not be prepared, bound or served.
    #[error(transparent)]
    Socket(#[from] SocketError),
    /// The metrics address could not be bound.
    #[error(transparent)]
    Metrics(#[from] metrics::BindError),
    /// The state file could not be read.
    #[error(transparent)]
    State(#[from] StateError),
    /// The datapath did not start.
    #[error(transparent)]
    Datapath(#[from] nvo_datapath::StartError),
    /// The control thread's runtime did not start.
    #[error("cannot start the control thread's runtime: {0}")]
    Runtime(#[source] std::io::Error),
    /// The stored state could not be re-applied.
    #[error("{}", .0.message)]
    Restore(Failure),
    /// The OpenFlow address could not be bound.
    #[error("cannot listen for OpenFlow on {addr} (openflow_listen): {source}")]
    OpenFlow {
        /// The address.
        addr: std::net::SocketAddr,
        /// Why.
        source: std::io::Error,
    },
    /// A signal handler could not be installed.
    #[error("cannot catch {signal}: {source}")]
    Signal {
        /// "SIGTERM" or "SIGINT".
        signal: &'static str,
        /// Why.
        source: std::io::Error,
    },
}

/// nvod: the nvo daemon. Serves the control API on a unix socket and forwards tenant frames
/// between local ports (veth, TAP) and remote VTEPs in VXLAN.
#[derive(Debug, Parser)]
#[command(name = "nvod", version, about, after_help = config::KEYS_HELP)]
struct Args {
    /// Configuration file (TOML); without it every key takes its default.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let config = match config::load(args.config.as_deref()) {
        Ok(config) => config,
        Err(e) => return fail(&e),
    };
    init_log(&config.log);
    match run(config) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            log::error!("{message}");
            ExitCode::FAILURE
        }
    }
}

fn fail(e: &dyn std::fmt::Display) -> ExitCode {
    eprintln!("nvod: {e}");
    ExitCode::FAILURE
}

/// Logs to stderr with the config's filter; RUST_LOG, when set, wins.
fn init_log(filter: &str) {
    let filter = std::env::var("RUST_LOG").unwrap_or_else(|_| filter.to_owned());
    env_logger::Builder::new()
        .parse_filters(&filter)
        .format_timestamp_millis()
        .init();
}

fn run(config: Config) -> Result<(), RunError> {
    api::prepare_socket(&config.api_socket)?;
    let (store, state) = Store::open(&config.state_dir)?;
    let (recorder, monitor, records) = monitor::new();
    let datapath = nvo_datapath::start_monitored(&config.datapath_settings(), recorder)?;
    let offloads = datapath.offloads;
    let choice = datapath.choice.clone();
    log::info!("datapath: {} ({})", choice.datapath, choice.reason);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(RunError::Runtime)?;
    let handle = datapath.handle.clone();
    let result = runtime.block_on(async {
        let mut control = Control::new(config.clone(), offloads, store, state, handle);
        control.set_path(choice);
        control.set_monitor(monitor.clone());
        tokio::spawn(monitor::run(records, monitor, config.vxlan_port));
        control.restore().await.map_err(RunError::Restore)?;
        control.start_evpn();
        serve(&config, control, offloads).await
    });
    datapath.stop();
    if let Err(e) = std::fs::remove_file(&config.api_socket) {
        if e.kind() != std::io::ErrorKind::NotFound {
            log::warn!("cannot remove {}: {e}", config.api_socket.display());
        }
    }
    if result.is_ok() {
        log::info!("nvod stopped");
    }
    result
}

/// Listens on the API socket until SIGTERM or SIGINT.
async fn serve(
    config: &Config,
    control: Control,
    offloads: nvo_api::Offloads,
) -> Result<(), RunError> {
    use tokio::signal::unix::{signal, SignalKind};
    let catch = |kind, name| {
        signal(kind).map_err(|source| RunError::Signal {
            signal: name,
            source,
        })
    };
    let mut term = catch(SignalKind::terminate(), "SIGTERM")?;
    let mut int = catch(SignalKind::interrupt(), "SIGINT")?;
    let listener = api::bind(&config.api_socket, config.api.group.as_ref())?;
    let metrics_listener = match &config.http {
        Some(http) => Some((metrics::bind(http).await?, http)),
        None => None,
    };
    log::info!(
        "nvod {} started: node id {}, locator {}, vxlan port {}, underlay mtu {}, offloads \
         gro={} gso={}, api socket {}",
        env!("CARGO_PKG_VERSION"),
        config.node_id,
        config.locator,
        config.vxlan_port,
        config.underlay_mtu,
        offloads.gro,
        offloads.gso,
        config.api_socket.display()
    );
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let stopped = move || {
        let mut rx = stop_rx.clone();
        async move {
            let _ = rx.wait_for(|&stop| stop).await;
        }
    };
    let signals = async move {
        tokio::select! {
            _ = term.recv() => log::info!("SIGTERM: stopping"),
            _ = int.recv() => log::info!("SIGINT: stopping"),
        }
        let _ = stop_tx.send(true);
    };
    let shared = Arc::new(Mutex::new(control));
    if let Some(addr) = config.openflow_listen {
        let runtime = tokio::runtime::Handle::current();
        let dpid = u64::from(config.node_id);
        openflow::spawn(addr, shared.clone(), runtime, dpid)
            .map_err(|source| RunError::OpenFlow { addr, source })?;
    }
    let mut cluster = None;
    if let Some(settings) = &config.cluster {
        let (handle, stopper) = cluster::start(settings, config, shared.clone());
        shared.lock().await.set_cluster(handle);
        cluster = Some(stopper);
    }
    let metrics = async {
        if let Some((listener, http)) = metrics_listener {
            log::info!(
                "metrics on http://{0}/metrics, status page on http://{0}/",
                http.listen
            );
            metrics::serve(listener, http, shared.clone(), stopped()).await;
        }
    };
    let api = api::serve(
        listener,
        &config.api_socket,
        &config.api,
        shared.clone(),
        stopped(),
    );
    // Flow rules with timeouts expire once a second, for every datapath worker at once.
    let expiry = {
        let shared = shared.clone();
        let stop = stopped();
        async move {
            let mut tick = tokio::time::interval(std::time::Duration::from_secs(1));
            tokio::pin!(stop);
            loop {
                tokio::select! {
                    _ = tick.tick() => {
                        if let Err(e) = shared.lock().await.expire_flows().await {
                            log::warn!("flow rules with timeouts not expired: {}", e.message);
                        }
                    }
                    _ = &mut stop => break,
                }
            }
        }
    };
    tokio::join!(signals, api, metrics, expiry);
    if let Some(cluster) = cluster {
        cluster.stop().await;
    }
    shared.lock().await.evpn_shutdown().await;
    Ok(())
}
