//! nvod: the nvo daemon, one per host (docs/design/dataplane.md), and the composition root:
//! it wires the subsystems together — the datapath thread (nvo-datapath), the EVPN speaker
//! (nvo-evpn) — and keeps the config, the desired state and the API.
//!
//! ```text
//!  main thread: config, checks, then the control thread's tokio runtime
//!    ├─ API server (axum on the unix socket) ─► Control (desired state, state.json)
//!    │                                             │ Command + eventfd wake, oneshot reply
//!    │  EVPN speaker task (nvo_evpn::spawn) ──────┤ through control::bgp's DataPlane
//!    └─ datapath thread (nvo_datapath::start) ◄───┘  owns Pipeline, underlay, ports
//! ```
//!
//! Start-up order: read the config; refuse if another nvod answers on the API socket; read the
//! state file (refuse if corrupt); bind the underlay; start the datapath; re-apply the state;
//! listen. SIGTERM or SIGINT stops the API, then the datapath, and removes the socket file.

mod api;
mod config;
mod control;
mod convert;
mod state;
mod values;

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::Parser;
use tokio::sync::Mutex;

use crate::config::Config;
use crate::control::Control;
use crate::state::Store;

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

fn run(config: Config) -> Result<(), String> {
    api::prepare_socket(&config.api_socket).map_err(|e| e.to_string())?;
    let store = Store::open(&config.state_dir).map_err(|e| e.to_string())?;
    let state = store.load().map_err(|e| e.to_string())?;
    let datapath = nvo_datapath::start(&config.datapath_settings()).map_err(|e| e.to_string())?;
    let offloads = datapath.offloads;
    let choice = datapath.choice.clone();
    log::info!("datapath: {} ({})", choice.datapath, choice.reason);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the control thread's runtime: {e}"))?;
    let handle = datapath.handle.clone();
    let result = runtime.block_on(async {
        let mut control = Control::new(config.clone(), offloads, store, state, handle);
        control.set_path(choice);
        control.restore().await.map_err(|f| f.message)?;
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
) -> Result<(), String> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term =
        signal(SignalKind::terminate()).map_err(|e| format!("cannot catch SIGTERM: {e}"))?;
    let mut int =
        signal(SignalKind::interrupt()).map_err(|e| format!("cannot catch SIGINT: {e}"))?;
    let listener = api::bind(&config.api_socket).map_err(|e| e.to_string())?;
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
    let shutdown = async move {
        tokio::select! {
            _ = term.recv() => log::info!("SIGTERM: stopping"),
            _ = int.recv() => log::info!("SIGINT: stopping"),
        }
    };
    let shared = Arc::new(Mutex::new(control));
    let served = api::serve(listener, &config.api_socket, shared.clone(), shutdown)
        .await
        .map_err(|e| e.to_string());
    shared.lock().await.evpn_shutdown().await;
    served
}
