//! The API subcommands: one per call of nvod's control API (docs/design/dataplane.md has the
//! table), made through `nvo_api::Client` on the socket given by `--socket` / `NVO_SOCKET`.
//!
//! Text output is the aligned tables of `cmd/view.rs`; `-o json` prints nvod's own answer,
//! pretty-printed, so a script sees exactly what the API says (a delete answers nothing and
//! prints nothing). Arguments are checked here before anything is sent (VNI range, MAC and IP
//! syntax), so a typo fails with clap's usage message rather than a round trip to nvod.

use std::net::IpAddr;

use clap::{Args, Subcommand, ValueEnum};
use nvo_api::{
    Bum, Client, ClientError, Counters, FdbAdd, FdbEntry, FloodAdd, FlushRequest, FlushScope,
    Network, NetworkSpec, NodeInfo, Port, PortKind, PortOffloads, PortSpec,
};
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::view;
use super::{print_json, CliError, Format};
use crate::addr::Mac;

/// Largest VNI: the field is 24 bits (RFC 7348 section 5).
const VNI_MAX: i64 = nvo_wire::VNI_MAX as i64;

pub(super) fn vni_parser() -> clap::builder::RangedI64ValueParser<u32> {
    clap::value_parser!(u32).range(1..=VNI_MAX)
}

/// `nvo network ...`
#[derive(Debug, Subcommand)]
pub enum NetworkCmd {
    /// List the networks with their MTU, BUM mode, flood list, ports and FDB sizes.
    #[command(after_help = "Example:\n  nvo network list\n  nvo -o json network list")]
    List,
    /// Show one network in full.
    #[command(after_help = "Example:\n  nvo network show 100")]
    Show {
        /// The network's VNI (1 to 16777215).
        #[arg(value_parser = vni_parser())]
        vni: u32,
    },
    /// Create a network (a tenant virtual network, one VNI).
    ///
    /// A network's frames travel in the tunnel protocol of its encapsulation profile, --encap:
    /// vxlan (the default), vxlan-gbp, vxlan-gpe, geneve, nvgre, overlay, stt, ipip, ip6ip6,
    /// ila (an IPv6 L3 network translated, not tunnelled; needs nvod's ila_locator), or
    /// a profile added with `nvo profile add` (`nvo profile list` shows them all). Some
    /// profiles take parameters, values written into every header the network sends: --param
    /// group=100 for vxlan-gbp's group policy ID, dst_node/src_node/ttl for overlay; `nvo
    /// profile show NAME` lists a profile's parameters. Every host of a network must use the
    /// same profile.
    ///
    /// Unset options take nvod's defaults: MTU = underlay MTU minus the profile's overhead
    /// (50 bytes for VXLAN over IPv4, 70 over IPv6), learning from ports and from tunnels on
    /// (from tunnels off for a VXLAN network made while BGP is configured: EVPN serves it),
    /// head-end replication to the --flood remotes, 4096 learned MACs at most, 300 s ageing.
    /// Fails if the VNI exists.
    #[command(
        after_help = "Example:\n  nvo network add 100 --flood 192.0.2.2 --flood 192.0.2.3\n  \
                      nvo network add 200 --no-learning --multicast 239.1.1.1\n  \
                      nvo network add 250 --no-tunnel-learning\n  \
                      nvo network add 300 --encap geneve --flood 192.0.2.2\n  \
                      nvo network add 400 --encap vxlan-gbp --param group=100 --flood 192.0.2.2\n  \
                      nvo profile list"
    )]
    Add(NetworkAddArgs),
    /// Delete a network; refused while ports are attached (delete them first).
    #[command(after_help = "Example:\n  nvo network del 100")]
    Del {
        /// The network's VNI.
        #[arg(value_parser = vni_parser())]
        vni: u32,
    },
}

/// `nvo network add`.
#[derive(Debug, Args)]
pub struct NetworkAddArgs {
    /// The network's VNI (1 to 16777215).
    #[arg(value_parser = vni_parser())]
    pub vni: u32,
    /// Tenant MTU (default: underlay MTU minus the encapsulation overhead).
    #[arg(long)]
    pub mtu: Option<u16>,
    /// Do not learn MAC addresses from traffic at all, neither from ports nor from tunnels
    /// (static FDB entries, EVPN and flooding only).
    #[arg(long)]
    pub no_learning: bool,
    /// Do not learn the source MACs of local ports' frames (a bridge port's `learning off`).
    #[arg(long)]
    pub no_port_learning: bool,
    /// Do not learn MACs behind remote VTEPs from tunnel packets (the kernel VXLAN device's
    /// `nolearning`); the default for a VXLAN network created while BGP is configured (EVPN
    /// tells where remote MACs are).
    #[arg(long, conflicts_with = "tunnel_learning")]
    pub no_tunnel_learning: bool,
    /// Learn MACs from tunnel packets also on a network EVPN serves (on by default elsewhere).
    #[arg(long, conflicts_with = "no_learning")]
    pub tunnel_learning: bool,
    /// Send broadcast, unknown unicast and multicast to this underlay multicast group instead of
    /// replicating them to the flood list.
    #[arg(long, value_name = "GROUP")]
    pub multicast: Option<IpAddr>,
    /// Most learned MAC addresses kept (default 4096); beyond it the network stops learning.
    #[arg(long, value_name = "N")]
    pub max_learned: Option<u32>,
    /// Most learned MAC addresses one local port may hold (default nvod's learn_port_percent,
    /// 25 % of max-learned),
    /// so that one port flooding random source MACs cannot fill the network's table.
    #[arg(long, value_name = "N")]
    pub max_learned_per_port: Option<u32>,
    /// Most learned MAC addresses one remote VTEP may hold (default nvod's
    /// learn_remote_percent, 50 % of max-learned).
    #[arg(long, value_name = "N")]
    pub max_learned_per_remote: Option<u32>,
    /// Which remote VTEPs the network takes tunnel packets from: `known` (its flood list, the
    /// remotes of static and EVPN entries, overlay locators; others are dropped as
    /// unknown_remote) or `any`. Default: known, but any for --multicast without --flood.
    #[arg(long, value_name = "WHICH")]
    pub accept_remotes: Option<AcceptArg>,
    /// Seconds a learned MAC lives without traffic (default 300).
    #[arg(long, value_name = "SECS")]
    pub ageing: Option<u32>,
    /// A remote VTEP that receives a copy of every flooded frame (repeatable).
    #[arg(long, value_name = "IP")]
    pub flood: Vec<IpAddr>,
    /// Encapsulation profile (default vxlan; `nvo profile list` shows them).
    #[arg(long, value_name = "NAME")]
    pub encap: Option<String>,
    /// A parameter of the profile, decimal or 0x-prefixed hex (repeatable), e.g. group=100.
    #[arg(long = "param", value_name = "KEY=VALUE", value_parser = parse_param)]
    pub params: Vec<(String, u64)>,
    /// An L3 network: tunnels carry the containers' IP packets (vxlan-gpe: IPv4 and IPv6,
    /// ipip: IPv4, ip6ip6: IPv6), nvod answers their ARP requests and neighbor solicitations
    /// as their gateway and routes by prefix (`nvo route add`). Implied by ipip and ip6ip6.
    #[arg(long)]
    pub l3: bool,
}

/// Why a `--param KEY=VALUE` is refused, with the text as typed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParamError {
    /// No `=`.
    #[error("{0:?} is not KEY=VALUE (e.g. group=100)")]
    Syntax(String),
    /// Nothing before the `=`.
    #[error("{0:?} has no parameter name before '='")]
    NoKey(String),
    /// A value that is not an unsigned number.
    #[error("parameter {key}: {value:?} is not an unsigned number (decimal or 0x hex)")]
    Value {
        /// The parameter.
        key: String,
        /// Its value as typed.
        value: String,
    },
}

/// Parses `--param KEY=VALUE`: a non-empty key and an unsigned decimal or 0x-hex value.
pub fn parse_param(text: &str) -> Result<(String, u64), ParamError> {
    let Some((key, value)) = text.split_once('=') else {
        return Err(ParamError::Syntax(text.to_owned()));
    };
    let key = key.trim();
    if key.is_empty() {
        return Err(ParamError::NoKey(text.to_owned()));
    }
    let value = value.trim();
    let parsed = match value
        .strip_prefix("0x")
        .or_else(|| value.strip_prefix("0X"))
    {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => value.parse(),
    };
    let value = parsed.map_err(|_| ParamError::Value {
        key: key.to_owned(),
        value: value.to_owned(),
    })?;
    Ok((key.to_owned(), value))
}

/// Port kinds as typed on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum KindArg {
    /// An existing interface (the host end of a veth pair), read with AF_PACKET.
    Veth,
    /// A TAP device nvod creates with this name.
    Tap,
}

/// `nvo port ...`
#[derive(Debug, Subcommand)]
pub enum PortCmd {
    /// List the ports: interface, network, kind, whether nvod has the interface open, and a
    /// tagged port's VLAN mapping.
    #[command(visible_alias = "show", after_help = "Example:\n  nvo port list")]
    List,
    /// Attach an interface to a network as a port.
    ///
    /// A veth port is an interface that already exists in nvod's namespace (the host end of a
    /// pair whose other end is in a container); a tap port is a TAP device nvod creates. If the
    /// interface is missing, the port is kept and nvod opens it when it appears.
    #[command(
        after_help = "Example:\n  nvo port add c-red1 --vni 100\n  nvo port add vm1 --vni 100 --kind tap\n  \
                      nvo port add c-red1 --vni 100 --no-large-frames --tso off --gro off\n  \
                      nvo port add eth1 --access-vlan 10 --vni 100\n  \
                      nvo port add eth1 --trunk 10=100,20=200\n  \
                      nvo port add eth1 --trunk 10=100 --ethertype 0x88a8\n  \
                      nvo port add hv0 --shared --default-vni 300\n\n\
                      A tagged port (VLAN gateway): nvod pops the tag of each frame from it and \
                      pushes it onto each frame to it. An access port's frames carry its VLAN ID; a \
                      trunk's VLAN IDs map to networks. Untagged frames and unmapped VLANs are \
                      dropped (vlan_untagged, unknown_vlan); there is no native VLAN.\n\n\
                      A shared port (a hypervisor's uplink): its frames belong to networks by \
                      source MAC (and VLAN), one virtual port per VM (nvo vport add); frames \
                      from other MACs go to --default-vni if given (untagged only), else are \
                      dropped (unknown_vport).",
        group(clap::ArgGroup::new("tagged").args(["access_vlan", "trunk"]))
    )]
    Add {
        /// Interface name (at most 15 bytes).
        name: String,
        /// The network the port belongs to (not for a trunk or a shared port).
        #[arg(long, value_parser = vni_parser(), required_unless_present_any = ["trunk", "shared"], conflicts_with_all = ["trunk", "shared"])]
        vni: Option<u32>,
        /// A shared port: frames belong to networks by source MAC (and VLAN), one virtual
        /// port per VM, added with `nvo vport add`.
        #[arg(long, conflicts_with = "tagged")]
        shared: bool,
        /// The network of a shared port's untagged frames from MACs no virtual port names
        /// (default: dropped as unknown_vport).
        #[arg(long, value_name = "VNI", value_parser = vni_parser(), requires = "shared")]
        default_vni: Option<u32>,
        /// An access port: frames on the wire carry this VLAN ID (1-4094).
        #[arg(long, value_name = "VID", conflicts_with = "trunk")]
        access_vlan: Option<u16>,
        /// A trunk: VLAN ID=VNI pairs, comma-separated, e.g. 10=100,20=200.
        #[arg(long, value_name = "VID=VNI,...", value_parser = trunk_parser)]
        trunk: Option<nvo_api::TrunkMap>,
        /// The outer tag of a tagged port: 0x8100 (802.1Q, default) or 0x88a8 (802.1ad; the
        /// customer's inner 802.1Q tag is carried through).
        #[arg(long, value_name = "0x8100|0x88a8", requires = "tagged")]
        ethertype: Option<nvo_api::Ethertype>,
        /// Interface kind.
        #[arg(long, value_enum, default_value_t = KindArg::Veth)]
        kind: KindArg,
        /// Segment TSO/GSO frames from the port at once and deliver only finished frames to it
        /// (default: keep them whole; STT then carries a 64 KiB frame as one STT frame).
        #[arg(long)]
        no_large_frames: bool,
        /// Set the interface's TCP segmentation offload (ethtool tso) when nvod opens it.
        #[arg(long, value_enum, value_name = "on|off")]
        tso: Option<Switch>,
        /// Set the interface's generic segmentation offload (ethtool gso).
        #[arg(long, value_enum, value_name = "on|off")]
        gso: Option<Switch>,
        /// Set the interface's generic receive offload (ethtool gro).
        #[arg(long, value_enum, value_name = "on|off")]
        gro: Option<Switch>,
        /// Set the interface's transmit checksum offload (ethtool tx).
        #[arg(long, value_enum, value_name = "on|off")]
        tx_checksum: Option<Switch>,
    },
    /// Detach a port (its learned MAC addresses go with it).
    #[command(after_help = "Example:\n  nvo port del c-red1")]
    Del {
        /// Interface name.
        name: String,
    },
}

/// `nvo fdb ...`
#[derive(Debug, Subcommand)]
pub enum FdbCmd {
    /// Show a network's forwarding database: where each MAC address is, learned or static.
    #[command(after_help = "Example:\n  nvo fdb show 100")]
    Show {
        /// The network's VNI.
        #[arg(value_parser = vni_parser())]
        vni: u32,
    },
    /// Add a static entry: a MAC address behind a remote VTEP or a local port. Static entries
    /// persist across restarts and are never overwritten by learning.
    #[command(
        after_help = "Example:\n  nvo fdb add 100 02:00:00:00:00:02 --remote 192.0.2.2\n  \
                      nvo fdb add 100 02:00:00:00:00:01 --port c-red1\n  \
                      nvo fdb add 100 02:00:00:00:00:01 --port c-red1 --ip 10.0.0.1 --ip fd00::1\n  \
                      nvo fdb add 600 02:00:00:00:00:03 --node 174325763"
    )]
    #[command(group(clap::ArgGroup::new("dest").required(true).args(["remote", "port", "node"])))]
    Add {
        /// The network's VNI.
        #[arg(value_parser = vni_parser())]
        vni: u32,
        /// MAC address, like 02:00:00:00:00:01.
        mac: Mac,
        /// The remote VTEP (underlay address) the MAC is behind.
        #[arg(long, value_name = "IP")]
        remote: Option<IpAddr>,
        /// The local port the MAC is behind.
        #[arg(long, value_name = "NAME")]
        port: Option<String>,
        /// The overlay node the MAC is behind (networks on the overlay profile).
        #[arg(long, value_name = "NODE_ID")]
        node: Option<u32>,
        /// With --port: an address of the host (repeatable, at most 16). ARP/ND suppression
        /// answers for it and EVPN advertises it before the host has sent a frame.
        #[arg(long = "ip", value_name = "IP", requires = "port")]
        ips: Vec<IpAddr>,
    },
    /// Delete one entry, static or learned.
    #[command(after_help = "Example:\n  nvo fdb del 100 02:00:00:00:00:02")]
    Del {
        /// The network's VNI.
        #[arg(value_parser = vni_parser())]
        vni: u32,
        /// MAC address.
        mac: Mac,
    },
    /// Remove the learned entries of a network (with --all, the static ones too).
    #[command(after_help = "Example:\n  nvo fdb flush 100\n  nvo fdb flush 100 --all")]
    Flush {
        /// The network's VNI.
        #[arg(value_parser = vni_parser())]
        vni: u32,
        /// Remove static entries as well.
        #[arg(long)]
        all: bool,
    },
}

/// `nvo flood ...`
#[derive(Debug, Subcommand)]
pub enum FloodCmd {
    /// List the remote VTEPs a network replicates broadcast and unknown frames to.
    #[command(after_help = "Example:\n  nvo flood list 100")]
    List {
        /// The network's VNI.
        #[arg(value_parser = vni_parser())]
        vni: u32,
    },
    /// Add a remote VTEP to a network's flood list (head-end replication).
    #[command(after_help = "Example:\n  nvo flood add 100 192.0.2.3")]
    Add {
        /// The network's VNI.
        #[arg(value_parser = vni_parser())]
        vni: u32,
        /// The remote VTEP's underlay address.
        remote: IpAddr,
    },
    /// Remove a remote VTEP from a network's flood list.
    #[command(after_help = "Example:\n  nvo flood del 100 192.0.2.3")]
    Del {
        /// The network's VNI.
        #[arg(value_parser = vni_parser())]
        vni: u32,
        /// The remote VTEP's underlay address.
        remote: IpAddr,
    },
}

/// `nvo counters`.
#[derive(Debug, Args)]
pub struct CountersArgs {
    /// Show zero counters too (text output hides them).
    #[arg(long)]
    pub all: bool,
}

/// Percent-encodes a path segment or a query value (interface and profile names, capture
/// filters may hold characters a URL reserves).
pub(super) fn segment(s: &str) -> String {
    nvo_api::query::encode(s)
}

/// Prints an answer: nvod's JSON as is, or its typed form through `text`.
pub(crate) fn show<T: DeserializeOwned>(
    format: Format,
    answer: Value,
    text: impl FnOnce(&T) -> String,
) -> Result<(), CliError> {
    match format {
        Format::Json => print_json(&answer),
        Format::Text => {
            let typed: T =
                serde_json::from_value(answer).map_err(|e| ClientError::Protocol(e.to_string()))?;
            print!("{}", text(&typed));
            Ok(())
        }
    }
}

/// Prints the answer to a change: a confirmation line, or nvod's JSON when it sent any.
pub(crate) fn done(format: Format, answer: Value, message: String) -> Result<(), CliError> {
    match format {
        Format::Text => println!("{message}"),
        Format::Json if !answer.is_null() => print_json(&answer)?,
        Format::Json => {}
    }
    Ok(())
}

/// `nvo node`.
pub fn node(client: &Client, format: Format) -> Result<(), CliError> {
    show(format, client.get("/v1/node")?, |n: &NodeInfo| {
        view::node(n).to_string()
    })
}

/// `nvo network ...`.
pub fn network(client: &Client, format: Format, cmd: NetworkCmd) -> Result<(), CliError> {
    match cmd {
        NetworkCmd::List => show(format, client.get("/v1/networks")?, |n: &Vec<Network>| {
            view::networks(n).to_string()
        }),
        NetworkCmd::Show { vni } => {
            show(format, client.get(&format!("/v1/networks/{vni}"))?, |n| {
                view::network(n).to_string()
            })
        }
        NetworkCmd::Add(args) => {
            let answer = client.post("/v1/networks", &network_spec(args))?;
            show(format, answer, |n| view::network(n).to_string())
        }
        NetworkCmd::Del { vni } => {
            client.delete(&format!("/v1/networks/{vni}"))?;
            done(format, Value::Null, format!("deleted network {vni}"))
        }
    }
}

/// The API body for `nvo network add`.
pub fn network_spec(args: NetworkAddArgs) -> NetworkSpec {
    NetworkSpec {
        vni: args.vni,
        mtu: args.mtu,
        learning: args.no_learning.then_some(false),
        learn_ports: args.no_port_learning.then_some(false),
        learn_tunnels: if args.no_tunnel_learning {
            Some(false)
        } else {
            args.tunnel_learning.then_some(true)
        },
        bum: args.multicast.map(|group| Bum::Multicast { group }),
        max_learned: args.max_learned,
        ageing_s: args.ageing,
        flood: (!args.flood.is_empty()).then_some(args.flood),
        encap: args.encap,
        params: (!args.params.is_empty()).then(|| args.params.into_iter().collect()),
        l3: args.l3.then_some(true),
        accept_remotes: args.accept_remotes.map(|a| match a {
            AcceptArg::Known => nvo_api::AcceptRemotes::Known,
            AcceptArg::Any => nvo_api::AcceptRemotes::Any,
        }),
        max_learned_per_port: args.max_learned_per_port,
        max_learned_per_remote: args.max_learned_per_remote,
    }
}

/// `--accept-remotes`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum AcceptArg {
    /// Only remotes the network knows.
    Known,
    /// Any remote (plain flood-and-learn).
    Any,
}

/// An offload switch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Switch {
    /// Turn it on.
    On,
    /// Turn it off.
    Off,
}

/// `nvo port ...`.
pub fn port(client: &Client, format: Format, cmd: PortCmd) -> Result<(), CliError> {
    match cmd {
        PortCmd::List => show(format, client.get("/v1/ports")?, |p: &Vec<Port>| {
            view::ports(p).to_string()
        }),
        PortCmd::Add {
            name,
            vni,
            access_vlan,
            trunk,
            ethertype,
            shared,
            default_vni,
            kind,
            no_large_frames,
            tso,
            gso,
            gro,
            tx_checksum,
        } => {
            let kind = match kind {
                KindArg::Veth => PortKind::Veth,
                KindArg::Tap => PortKind::Tap,
            };
            let on = |s: Option<Switch>| s.map(|s| s == Switch::On);
            let offloads = PortOffloads {
                large_frames: no_large_frames.then_some(false),
                tso: on(tso),
                gso: on(gso),
                gro: on(gro),
                tx_checksum: on(tx_checksum),
            };
            let tagged = access_vlan.is_some() || trunk.is_some();
            let spec = PortSpec {
                name,
                vni: vni.unwrap_or(0),
                kind,
                offloads: (offloads != PortOffloads::default()).then_some(offloads),
                vlan: tagged.then_some(nvo_api::PortVlan {
                    access: access_vlan,
                    trunk,
                    ethertype,
                }),
                shared: shared.then_some(nvo_api::SharedPort { default_vni }),
            };
            let answer = client.post("/v1/ports", &spec)?;
            show(format, answer, |p: &Port| {
                view::ports(std::slice::from_ref(p)).to_string()
            })
        }
        PortCmd::Del { name } => {
            client.delete(&format!("/v1/ports/{}", segment(&name)))?;
            done(format, Value::Null, format!("deleted port {name}"))
        }
    }
}

/// Parses `--trunk 10=100,20=200`.
fn trunk_parser(s: &str) -> Result<nvo_api::TrunkMap, String> {
    let mut pairs = Vec::new();
    for item in s.split(',').map(str::trim).filter(|i| !i.is_empty()) {
        let (vid, vni) = item
            .split_once('=')
            .ok_or_else(|| format!("{item:?} is not VID=VNI (e.g. 10=100)"))?;
        let vid = vid
            .trim()
            .parse::<u16>()
            .map_err(|_| format!("vlan id {vid:?} is not a number 1-4094"))?;
        let vni = vni
            .trim()
            .parse::<u32>()
            .map_err(|_| format!("vni {vni:?} is not a number 1-16777215"))?;
        pairs.push((vid, vni));
    }
    if pairs.is_empty() {
        return Err("a trunk needs at least one VID=VNI pair".to_owned());
    }
    Ok(nvo_api::TrunkMap(pairs))
}

/// `nvo fdb ...`.
pub fn fdb(client: &Client, format: Format, cmd: FdbCmd) -> Result<(), CliError> {
    match cmd {
        FdbCmd::Show { vni } => {
            let answer = client.get(&format!("/v1/networks/{vni}/fdb"))?;
            show(format, answer, |e: &Vec<FdbEntry>| view::fdb(e).to_string())
        }
        FdbCmd::Add {
            vni,
            mac,
            remote,
            port,
            node,
            ips,
        } => {
            let dest = match (&remote, &port, node) {
                (Some(ip), _, _) => format!("remote {ip}"),
                (None, Some(p), _) => format!("port {p}"),
                (None, None, Some(n)) => format!("node {n}"),
                (None, None, None) => String::new(),
            };
            let body = FdbAdd {
                mac: mac.to_string(),
                port,
                remote,
                node,
                ips: (!ips.is_empty()).then_some(ips),
            };
            let answer: Value = client.post(&format!("/v1/networks/{vni}/fdb"), &body)?;
            done(
                format,
                answer,
                format!("added {mac} -> {dest} to network {vni}"),
            )
        }
        FdbCmd::Del { vni, mac } => {
            client.delete(&format!("/v1/networks/{vni}/fdb/{mac}"))?;
            done(
                format,
                Value::Null,
                format!("deleted {mac} from network {vni}"),
            )
        }
        FdbCmd::Flush { vni, all } => {
            let scope = if all {
                FlushScope::All
            } else {
                FlushScope::Learned
            };
            let answer: Value = client.post(
                &format!("/v1/networks/{vni}/fdb/flush"),
                &FlushRequest { scope },
            )?;
            show(format, answer, |r: &nvo_api::FlushResult| {
                let what = if all { "entries" } else { "learned entries" };
                format!("flushed {} {what} from network {vni}\n", r.flushed)
            })
        }
    }
}

/// `nvo flood ...`.
pub fn flood(client: &Client, format: Format, cmd: FloodCmd) -> Result<(), CliError> {
    match cmd {
        FloodCmd::List { vni } => {
            let answer = client.get(&format!("/v1/networks/{vni}/flood"))?;
            show(format, answer, |f: &Vec<IpAddr>| view::flood(f).to_string())
        }
        FloodCmd::Add { vni, remote } => {
            let answer: Value =
                client.post(&format!("/v1/networks/{vni}/flood"), &FloodAdd { remote })?;
            done(format, answer, format!("network {vni} floods to {remote}"))
        }
        FloodCmd::Del { vni, remote } => {
            client.delete(&format!(
                "/v1/networks/{vni}/flood/{}",
                segment(&remote.to_string())
            ))?;
            done(
                format,
                Value::Null,
                format!("network {vni} no longer floods to {remote}"),
            )
        }
    }
}

/// `nvo counters`.
pub fn counters(client: &Client, format: Format, args: CountersArgs) -> Result<(), CliError> {
    show(format, client.get("/v1/counters")?, |c: &Counters| {
        view::counters(c, args.all)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn network_add_sends_only_what_was_given() {
        let spec = network_spec(NetworkAddArgs {
            vni: 100,
            mtu: None,
            no_learning: false,
            no_port_learning: false,
            no_tunnel_learning: false,
            tunnel_learning: false,
            multicast: None,
            max_learned: None,
            max_learned_per_port: None,
            max_learned_per_remote: None,
            accept_remotes: None,
            ageing: None,
            flood: vec![],
            encap: None,
            params: vec![],
            l3: false,
        });
        assert_eq!(serde_json::to_string(&spec).unwrap(), r#"{"vni":100}"#);
        let spec = network_spec(NetworkAddArgs {
            vni: 7,
            mtu: Some(1400),
            no_learning: true,
            no_port_learning: false,
            no_tunnel_learning: false,
            tunnel_learning: false,
            multicast: Some("239.1.1.1".parse().unwrap()),
            max_learned: Some(10),
            max_learned_per_port: Some(2),
            max_learned_per_remote: Some(3),
            accept_remotes: Some(AcceptArg::Any),
            ageing: Some(60),
            flood: vec!["192.0.2.2".parse().unwrap()],
            encap: Some("vxlan-gbp".into()),
            params: vec![("group".into(), 100)],
            l3: false,
        });
        assert_eq!(
            serde_json::to_value(&spec).unwrap(),
            serde_json::json!({"vni": 7, "mtu": 1400, "learning": false,
                "bum": {"mode": "multicast", "group": "239.1.1.1"},
                "max_learned": 10, "ageing_s": 60, "flood": ["192.0.2.2"],
                "encap": "vxlan-gbp", "params": {"group": 100},
                "accept_remotes": "any", "max_learned_per_port": 2,
                "max_learned_per_remote": 3})
        );
    }

    #[test]
    fn params_are_key_equals_unsigned_value() {
        assert_eq!(parse_param("group=100"), Ok(("group".into(), 100)));
        assert_eq!(parse_param("spi=0x2a"), Ok(("spi".into(), 42)));
        for (bad, want) in [
            ("group", "not KEY=VALUE"),
            ("=5", "no parameter name"),
            ("group=-1", "\"-1\" is not an unsigned number"),
            ("group=0xzz", "\"0xzz\""),
        ] {
            let e = parse_param(bad).unwrap_err().to_string();
            assert!(e.contains(want), "{bad}: {e}");
        }
    }

    #[test]
    fn path_segments_are_escaped() {
        assert_eq!(segment("c-red1"), "c-red1");
        assert_eq!(segment("fd00::1"), "fd00::1");
        assert_eq!(segment("a b/%"), "a%20b%2F%25");
    }
}
