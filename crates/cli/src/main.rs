//! `nvo`: the command-line interface of the nvo overlay stack.
//!
//! Three families of subcommands: the API calls of nvod (`node`, `network`, `route`, `profile`,
//! `port`, `fdb`, `flood`, `flow`, `trace`, `counters`, `overlay`, `policy`, `endpoint`, `bgp`, `evpn`, `events`, `monitor`, `ui`; one per call, on the
//! socket given by `--socket` or `NVO_SOCKET`, as is `prober`, a control plane made of such
//! calls),
//! `lab` (a whole overlay of namespaces on this machine), and `decode` (tunnel layers of a
//! capture). Every subcommand prints text by default and JSON with `-o json`. A failure is one
//! line on stderr, `nvo: <what failed>`, and exit status 1 (usage errors are clap's, status 2).

mod capture;
mod cmd;
mod decode;
mod lab;
mod render;
mod table;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use nvo_cli::addr;

use cmd::api::{CountersArgs, FdbCmd, FloodCmd, NetworkCmd, PortCmd};
use cmd::bgp::{BgpCmd, EvpnCmd};
use cmd::cluster::ClusterCmd;
use cmd::decode::DecodeArgs;
use cmd::events::EventsArgs;
use cmd::flow::FlowCmd;
use cmd::lab::LabCmd;
use cmd::monitor::MonitorArgs;
use cmd::overlay::OverlayCmd;
use cmd::policy::{EndpointCmd, PolicyCmd};
use cmd::prober::ProberArgs;
use cmd::profile::ProfileCmd;
use cmd::route::RouteCmd;
use cmd::ui::UiArgs;
use cmd::{CliError, Format};

/// nvo: multi-tenant network virtualization overlays for Linux.
#[derive(Debug, Parser)]
#[command(name = "nvo", version, about, long_about = None)]
struct Cli {
    /// Output format.
    #[arg(short, long, global = true, value_enum, default_value_t = Format::Text)]
    output: Format,
    /// nvod's API socket.
    #[arg(long, global = true, env = "NVO_SOCKET", default_value = nvo_api::DEFAULT_SOCKET, value_name = "PATH")]
    socket: PathBuf,
    /// Cluster mode: `network add|del|list|show`, `profile add|del|list|show` and `overlay
    /// node|route set|del|list` write and read the cluster's objects in etcd at these
    /// endpoints (comma-separated http:// or https:// URLs) instead of asking the local nvod;
    /// every nvod of the cluster converges to them.
    #[arg(
        long,
        global = true,
        env = "NVO_ETCD",
        value_delimiter = ',',
        value_name = "URL[,URL...]"
    )]
    etcd: Vec<String>,
    /// The cluster's key prefix (with --etcd), as nvod's [cluster] prefix.
    #[arg(long, global = true, default_value = nvo_cluster::DEFAULT_PREFIX, value_name = "PREFIX")]
    etcd_prefix: String,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Show the node: ID, locator, VXLAN port, underlay MTU, offloads, version.
    #[command(
        after_help = "Example:\n  nvo node\n  nvo --socket /run/nvo/lab/demo/h1.sock -o json node"
    )]
    Node,
    /// List, show, create and delete networks (tenant VNIs, each with its encapsulation).
    ///
    /// With --etcd (or NVO_ETCD), the cluster's network objects in etcd instead of the local
    /// nvod's networks: `add` checks the object as every nvod will (nothing is written when it
    /// is refused), `del` removes it, `list` shows the objects, invalid ones with why.
    #[command(
        subcommand,
        after_help = "Example:\n  nvo network list\n  \
                      nvo --etcd http://10.1.0.1:2379 network add 100 --mtu 1400\n  \
                      nvo --etcd http://10.1.0.1:2379,http://10.1.0.2:2379 network list\n  \
                      NVO_ETCD=http://10.1.0.1:2379 nvo network del 100"
    )]
    Network(NetworkCmd),
    /// List, add and delete the routes of an L3 network (IPv4 or IPv6 prefix -> remote tunnel
    /// end).
    #[command(subcommand)]
    Route(RouteCmd),
    /// List, show, add and delete encapsulation profiles: the tunnel protocols networks use.
    ///
    /// Every network carries its frames in one profile's header (`nvo network add --encap`).
    /// Built in: vxlan, vxlan-gbp, vxlan-gpe, geneve, nvgre, overlay (nvo's routing header),
    /// ipip, ip6ip6, stt and vxlan-gpe-nsh; `nvo profile add` teaches nvod a new UDP or IP
    /// protocol from a file, without a rebuild. A keyed profile (vxlan-gpe-nsh, keyed by NSH
    /// service path and index) delivers or relays by key: `nvo profile bind`.
    ///
    /// With --etcd (or NVO_ETCD), the cluster's profile objects in etcd instead: `add` checks
    /// the file as every nvod will (nothing is written when it is refused), `del` removes the
    /// object, `list` and `show` show the objects, invalid ones with why. Every nvod makes
    /// them before the networks that use them; key bindings stay per host.
    #[command(
        subcommand,
        after_help = "Example:\n  nvo profile list\n  \
                      nvo --etcd http://10.1.0.1:2379 profile add --file mytun.toml\n  \
                      nvo --etcd http://10.1.0.1:2379 network add 500 --encap mytun\n  \
                      nvo --etcd http://10.1.0.1:2379 profile list"
    )]
    Profile(ProfileCmd),
    /// List, attach and detach ports (interfaces of a network).
    #[command(subcommand)]
    Port(PortCmd),
    /// Show and change the virtual ports of a shared port: each VM's MAC behind a hypervisor's
    /// uplink, assigned to a network (VM-VP).
    #[command(subcommand)]
    Vport(cmd::vport::VportCmd),
    /// Show and change QoS profiles (a policer per port or virtual port, DSCP marking) and
    /// attach them to ports and virtual ports.
    #[command(subcommand)]
    Qos(cmd::qos::QosCmd),
    /// Show and change flow-table meters: numbered token-bucket policers that flow rules
    /// police through with the action meter:N, one bucket per meter.
    #[command(subcommand)]
    Meter(cmd::meter::MeterCmd),
    /// Show and change ACL profiles (named lists of flow rules) and attach them to ports and
    /// virtual ports, where they become flow-table rules.
    #[command(subcommand)]
    Acl(cmd::acl::AclCmd),
    /// Show and change a network's forwarding database (MAC -> port or remote VTEP).
    #[command(subcommand)]
    Fdb(FdbCmd),
    /// Add, delete and show flow-table rules (ovs-ofctl flow syntax) on ports' frames.
    #[command(subcommand)]
    Flow(FlowCmd),
    /// Trace a frame from a port, or from the tunnel (`underlay`), through the flow table and
    /// normal forwarding, without sending or counting it (as ovs-appctl ofproto/trace): the
    /// rule that matches, its actions, where the frame would go.
    ///
    /// `underlay` traces a frame decapsulated from the underlay for network --vni N: it meets
    /// the table as in_port=tunnel with tun_id=N, then delivery to the network's ports.
    #[command(
        after_help = "Example:\n  nvo trace veth1 'tcp,nw_src=10.91.0.1,nw_dst=10.91.0.2,tp_dst=22'\n  \
                      nvo trace veth1 'dl_dst=02:00:00:00:00:02,udp,tp_dst=53'\n  \
                      nvo trace underlay 'tcp,nw_dst=10.91.0.2,tp_dst=5201' --vni 100\n  \
                      nvo trace underlay 'dl_dst=02:00:00:00:00:02,ip' --vni 100 --remote 10.100.0.2"
    )]
    Trace(cmd::flow::TraceArgs),
    /// Show and change a network's flood list (remote VTEPs for broadcast and unknown frames).
    #[command(subcommand)]
    Flood(FloodCmd),
    /// Show the data path's counters: drops by reason, per network, per port, underlay, per
    /// remote (userspace datapath), STT reassembly.
    #[command(
        after_help = "Example:\n  nvo counters\n  nvo counters --all\n  nvo -o json counters"
    )]
    Counters(CountersArgs),
    /// Show and change the routed overlay: this node's ID and locators, other nodes' locators,
    /// and the routes between node IDs, per application.
    ///
    /// Networks on the `overlay` profile send their frames to node IDs rather than to underlay
    /// addresses: each packet goes to the next hop its destination's route names (the
    /// destination itself when it has no route), at one of that node's locators chosen by
    /// weight, and nodes on the way relay it without decapsulating it.
    ///
    /// With --etcd (or NVO_ETCD), `node set|del|list|show` and `route set|del|list` write and
    /// read the cluster's overlay objects in etcd instead; every nvod sets them in its tables.
    #[command(
        subcommand,
        after_help = "Example:\n  nvo overlay show\n  \
                      nvo --etcd http://10.1.0.1:2379 overlay node set 2 192.0.2.2\n  \
                      nvo --etcd http://10.1.0.1:2379 overlay route set ethernet 3 2\n  \
                      nvo --etcd http://10.1.0.1:2379 overlay node list"
    )]
    Overlay(OverlayCmd),
    /// Apply, show, delete and trace identity policies: groups of labelled endpoints and
    /// allow/deny rules between them, per network.
    #[command(subcommand)]
    Policy(PolicyCmd),
    /// Label endpoints (ports, addresses of a network): their labels make their policy group.
    #[command(subcommand)]
    Endpoint(EndpointCmd),
    /// Configure and watch nvod's BGP/EVPN speaker: its sessions with route reflectors.
    ///
    /// With BGP configured, nvod advertises the MACs/IPs behind its ports and the networks it
    /// serves as EVPN routes (RFC 7432, 8365) and installs what its peers advertise into the
    /// FDB, flood lists and ARP/ND suppression tables; `nvo evpn routes` lists those routes.
    #[command(subcommand)]
    Bgp(BgpCmd),
    /// Show the EVPN routes nvod's BGP speaker holds (`nvo bgp` configures it).
    #[command(subcommand)]
    Evpn(EvpnCmd),
    /// Follow nvod's events (overlay node, locator and route changes), one line per event.
    ///
    /// Runs until nvod closes the stream, --count events have arrived, or Ctrl-C. `-o json`
    /// prints each event as the JSON line nvod sent.
    #[command(after_help = "Example:\n  nvo events\n  nvo -o json events --count 1")]
    Events(EventsArgs),
    /// Follow the datapath live: drops with their reason, MACs learned/moved/aged, floods.
    ///
    /// One line per event: UTC time, type, then its fields — a drop's reason, network, port,
    /// length and a one-line decode of the packet (MACs, EtherType, IPs, protocol and ports;
    /// a tunnel packet's VNI and inner frame); a flood's copies; a MAC's old and new place.
    /// Both datapaths (userspace and eBPF) feed it. nvod applies the filters. Events never
    /// slow the datapath: when this listener (or nvod's ring) falls behind, events are lost,
    /// counted, and shown as a `lost` line. While nobody listens the datapath records nothing (one flag check per packet).
    /// Runs until nvod closes the stream, --count events, or Ctrl-C; `-o json` prints each
    /// event as the JSON line nvod sent (docs/monitor.md lists the fields).
    #[command(
        after_help = "Examples:\n  nvo monitor\n  nvo monitor --type drop --reason unknown_vni\n  \
                            nvo monitor --network 100 --type learn,move,age\n  \
                            nvo -o json monitor --port veth-a --count 10"
    )]
    Monitor(MonitorArgs),
    /// Choose each overlay destination's path by measurement: direct, or through one relay.
    ///
    /// A RON-style control plane on nvod's API: every --interval seconds it probes, for every
    /// node of the locator table, the direct path and the path through each other node, scores
    /// each (mean RTT + loss x --loss-penalty-us) and installs the best one (a route to the
    /// relay, or no route for direct) when it beats the current path by --hysteresis for
    /// --confirm rounds in a row. Routes with several next hops (trees) are left alone. Prints
    /// one line per change (-o json: one object per round); errors go to stderr and the
    /// prober goes on. Runs until Ctrl-C, or for --once / --rounds N rounds.
    #[command(
        after_help = "Example:\n  nvo prober\n  nvo prober --interval 5 --hysteresis 0.3 --confirm 3\n  \
                      nvo -o json prober --once --confirm 1"
    )]
    Prober(ProberArgs),
    /// Build, list, enter and remove labs: whole overlays of network namespaces on this machine.
    #[command(subcommand)]
    Lab(LabCmd),
    /// Decode the tunnel layers of every packet in a capture (pcap or pcapng).
    ///
    /// Shows, per packet, the outer addresses and ports, the tunnel protocol and its
    /// identifiers (VNI, VSID, STT context, NSH SPI/SI, overlay node IDs and TTL) and the inner
    /// Ethernet addresses. Tunnels are recognised by port: VXLAN on UDP 4789 and 8472,
    /// VXLAN-GPE on 4790, Geneve on 6081, nvo's overlay header on 60002, STT on TCP 7471, and
    /// GRE/NVGRE on IP protocol 47; add ports with the options below. A packet whose headers do
    /// not parse is shown as MALFORMED with the reason, and decoding goes on.
    #[command(
        after_help = "Example:\n  nvo decode samples/tunnels.pcap\n  nvo -o json decode --vxlan-port 9999 capture.pcapng"
    )]
    Decode(DecodeArgs),
    /// Capture what nvod sees, as pcapng: a network's inner frames, a port, or the underlay.
    ///
    /// nvod makes the capture and streams it over the API socket, so this needs no privilege
    /// beyond the socket. --network VNI shows the network's frames (inner: tenant addresses),
    /// each once where it enters the network here — sent by a local port's tenant, or
    /// decapsulated from a tunnel packet of that VNI arriving on the underlay. --port NAME
    /// shows a port's interface, both directions. --underlay shows the tunnel packets of
    /// nvod's profiles, outer headers included. FILTER is a tcpdump filter (pcap-filter(7));
    /// for --network it applies to the inner frame. The capture ends after -c frames,
    /// --duration seconds, or on Ctrl-C; at the end a line on stderr gives the frames captured
    /// and dropped. At most 4 captures run at once per nvod; none costs anything when none runs.
    #[command(
        after_help = "Example:\n  nvo capture --network 100 -c 4 -w ping.pcapng icmp\n  \
                      nvo capture --underlay -c 10 | tshark -r - -V\n  \
                      nvo capture --port veth-a --duration 30 -w a.pcapng 'arp or icmp6'\n  \
                      nvo capture --network 100 -s 128 host 10.0.0.2 and tcp port 80"
    )]
    Capture(cmd::capture::CaptureArgs),
    /// Print the URL of nvod's status page (--open: open it in the desktop's browser).
    ///
    /// The page is served by nvod itself on its `http_listen` address, beside /metrics: this
    /// host, the peers it knows, its networks, tunnel traffic with live rates, top drop
    /// reasons and recent events, refreshing every second; read-only. Without `http_listen`
    /// in nvod's config there is no page, and `nvo ui` says how to turn it on.
    #[command(after_help = "Example:\n  nvo ui\n  nvo ui --open\n  nvo -o json ui")]
    Ui(UiArgs),
    /// Cluster mode (nvod's [cluster] table): what the local nvod made of the objects in etcd.
    #[command(subcommand)]
    Cluster(ClusterCmd),
}

fn run(cli: Cli) -> Result<ExitCode, CliError> {
    let client = nvo_api::Client::new(&cli.socket);
    let format = cli.output;
    match cli.command {
        Command::Node => cmd::api::node(&client, format)?,
        Command::Network(c) if !cli.etcd.is_empty() => {
            let etcd = cmd::cluster::Etcd {
                endpoints: cli.etcd,
                prefix: cli.etcd_prefix,
            };
            cmd::cluster::network(&etcd, format, c)?
        }
        Command::Network(c) => cmd::api::network(&client, format, c)?,
        Command::Cluster(c) => cmd::cluster::cluster(&client, format, c)?,
        Command::Route(c) => cmd::route::route(&client, format, c)?,
        Command::Profile(c) if !cli.etcd.is_empty() => {
            let etcd = cmd::cluster::Etcd {
                endpoints: cli.etcd,
                prefix: cli.etcd_prefix,
            };
            cmd::cluster::profile(&etcd, format, c)?
        }
        Command::Profile(c) => cmd::profile::profile(&client, format, c)?,
        Command::Port(c) => cmd::api::port(&client, format, c)?,
        Command::Vport(c) => cmd::vport::vport(&client, format, c)?,
        Command::Qos(c) => cmd::qos::qos(&client, format, c)?,
        Command::Meter(c) => cmd::meter::meter(&client, format, c)?,
        Command::Acl(c) => cmd::acl::acl(&client, format, c)?,
        Command::Fdb(c) => cmd::api::fdb(&client, format, c)?,
        Command::Flood(c) => cmd::api::flood(&client, format, c)?,
        Command::Flow(c) => cmd::flow::flow(&client, format, c)?,
        Command::Trace(a) => cmd::flow::trace(&client, format, a)?,
        Command::Counters(a) => cmd::api::counters(&client, format, a)?,
        Command::Overlay(c) if !cli.etcd.is_empty() => {
            let etcd = cmd::cluster::Etcd {
                endpoints: cli.etcd,
                prefix: cli.etcd_prefix,
            };
            cmd::cluster_overlay::overlay(&etcd, format, c)?
        }
        Command::Overlay(c) => cmd::overlay::overlay(&client, format, c)?,
        Command::Policy(c) => cmd::policy::policy(&client, format, c)?,
        Command::Endpoint(c) => cmd::policy::endpoint(&client, format, c)?,
        Command::Bgp(c) => cmd::bgp::bgp(&client, format, c)?,
        Command::Evpn(c) => cmd::bgp::evpn(&client, format, c)?,
        Command::Events(a) => cmd::events::events(&client, format, a)?,
        Command::Capture(a) => cmd::capture::capture(&client, a)?,
        Command::Monitor(a) => cmd::monitor::monitor(&client, format, a)?,
        Command::Prober(a) => cmd::prober::prober(&client, format, a)?,
        Command::Lab(c) => return cmd::lab::run(c, format),
        Command::Ui(a) => cmd::ui::ui(&client, format, &a)?,
        Command::Decode(args) => return Ok(cmd::decode::run(args, format)),
    }
    Ok(ExitCode::SUCCESS)
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        // With --etcd a refused value (a VNI out of range...) is a refused cluster object:
        // exit status 1 and nothing written, as for the checks made after parsing.
        Err(e) if e.use_stderr() && etcd_given() => {
            let _ = e.print();
            return ExitCode::FAILURE;
        }
        Err(e) => e.exit(),
    };
    match run(cli) {
        Ok(code) => code,
        Err(e) => {
            // One line, whatever the message holds (nvod's error text included).
            let message = e.to_string().replace(['\r', '\n'], " ");
            eprintln!("nvo: {message}");
            ExitCode::FAILURE
        }
    }
}

/// Whether --etcd or NVO_ETCD is given (for a command line clap refused).
fn etcd_given() -> bool {
    std::env::var_os("NVO_ETCD").is_some_and(|v| !v.is_empty())
        || std::env::args().any(|a| a == "--etcd" || a.starts_with("--etcd="))
}

#[cfg(test)]
mod tests;
