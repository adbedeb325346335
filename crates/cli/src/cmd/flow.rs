//! `nvo flow add|del|show`: the flow table (`/v1/flows`), in the flow syntax operators already
//! write for `ovs-ofctl add-flow`, shown as `ovs-ofctl dump-flows` shows it.
//!
//! PORT is a port's interface name (a VLAN circuit: `eth1.10`), `tunnel` for frames from the
//! underlay (in_port=tunnel), or `all` for rules that apply to every port and the tunnel (no
//! `in_port`). nvod parses the flow, so its errors name the item at fault.

use clap::Subcommand;
use nvo_api::{Client, FlowDelete, FlowSpec, FlowTable, FlowsDeleted, Trace, TraceSpec};
use serde_json::Value;

use super::api::{done, segment, show};
use super::{CliError, Format};

/// The PORT that stands for every port.
const ALL: &str = "all";

/// `nvo flow ...`
#[derive(Debug, Subcommand)]
pub enum FlowCmd {
    /// Add a rule to PORT's frames (`all`: every port's), replacing the rule with the same
    /// match and priority.
    ///
    /// FLOW is in the syntax of `ovs-ofctl add-flow`: match fields (in_port, dl_src, dl_dst,
    /// dl_vlan, dl_type, nw_src, nw_dst, ipv6_src, ipv6_dst, nw_proto, ip_dscp, tp_src, tp_dst,
    /// tcp_flags, tun_id, shorthands ip/tcp/udp/icmp/arp/…), priority, cookie, idle_timeout,
    /// hard_timeout, then actions= (drop, normal, output:PORT, in_port, mod_dl_src,
    /// mod_dl_dst, push_vlan, pop_vlan, mod_vlan_vid, mod_vlan_pcp, mod_nw_tos, mod_nw_ttl,
    /// dec_ttl, meter:N: through meter N's bucket, see nvo meter; set_tunnel:VNI,
    /// set_field:IP->tun_dst, output:tunnel: encapsulated to that remote in network VNI, by
    /// default the port's). Every frame a port sends in
    /// meets the table before normal forwarding; a frame no rule matches is forwarded normally. Rules without timeouts survive a restart.
    /// PORT `tunnel` (in_port=tunnel) is the tunnel: frames decapsulated from the underlay
    /// for an L2 network meet the table too, with tun_id their VNI; a rule without in_port
    /// applies to them as well.
    /// On the eBPF datapath a port a rule covers is read by nvod, and a network whose tunnel
    /// frames a rule may match leaves the kernel (the table runs in userspace).
    #[command(
        after_help = "Example:\n  nvo flow add veth1 'priority=100,tcp,tp_dst=22,actions=drop'\n  \
                      nvo flow add all 'priority=200,tcp,nw_dst=10.91.0.2,tp_dst=5201,actions=drop'\n  \
                      nvo flow add veth1 'udp,actions=mod_nw_tos:184,normal'\n  \
                      nvo flow add tunnel 'priority=200,tun_id=100,tcp,tp_dst=5201,actions=drop'\n  \
                      nvo meter add 1 --rate 100mbit --burst 1m && \
                      nvo flow add veth1 'tcp,actions=meter:1,normal'\n  \
                      nvo flow add veth1 'udp,actions=set_tunnel:200,set_field:10.100.0.2->tun_dst,output:tunnel'"
    )]
    Add {
        /// The port (interface name), or `all`.
        port: String,
        /// The rule.
        flow: String,
    },
    /// Delete PORT's rules (`all`: every rule), or those within MATCH.
    #[command(
        after_help = "Example:\n  nvo flow del veth1 'tcp,tp_dst=22'\n  nvo flow del all\n  \
                      nvo flow del veth1 --strict 'priority=100,tcp,tp_dst=22'"
    )]
    Del {
        /// The port (interface name), or `all`.
        port: String,
        /// The match (flow syntax without actions=); every rule of PORT when left out.
        #[arg(value_name = "MATCH")]
        pattern: Option<String>,
        /// Only the rule with exactly this match and priority.
        #[arg(long)]
        strict: bool,
    },
    /// Show the rules with their counters (PORT: those that apply to it), as
    /// `ovs-ofctl dump-flows` does.
    #[command(
        after_help = "Example:\n  nvo flow show\n  nvo flow show veth1\n  nvo -o json flow show"
    )]
    Show {
        /// The port (interface name).
        port: Option<String>,
    },
}

fn port_of(port: String) -> Option<String> {
    (port != ALL).then_some(port)
}

/// Runs `nvo flow ...`.
pub fn flow(client: &Client, format: Format, cmd: FlowCmd) -> Result<(), CliError> {
    match cmd {
        FlowCmd::Add { port, flow } => {
            let body = FlowSpec {
                port: port_of(port.clone()),
                flow: flow.clone(),
            };
            let answer: Value = client.post("/v1/flows", &body)?;
            done(format, answer, format!("port {port}: flow added: {flow}"))
        }
        FlowCmd::Del {
            port,
            pattern,
            strict,
        } => {
            let body = FlowDelete {
                port: port_of(port.clone()),
                pattern,
                strict,
            };
            let answer: Value = client.post("/v1/flows/delete", &body)?;
            let n = serde_json::from_value::<FlowsDeleted>(answer.clone())
                .map(|d| d.deleted)
                .unwrap_or(0);
            done(format, answer, format!("port {port}: {n} flow(s) deleted"))
        }
        FlowCmd::Show { port } => {
            let path = match port {
                Some(p) => format!("/v1/flows?port={}", segment(&p)),
                None => "/v1/flows".to_owned(),
            };
            show(format, client.get(&path)?, dump)
        }
    }
}

/// The table as `ovs-ofctl dump-flows` prints it.
pub fn dump(t: &FlowTable) -> String {
    let mut out = String::new();
    for f in &t.flows {
        // The cookie leads the line already; the rule's text repeats it when not zero.
        let text = match f.flow.split_once(',') {
            Some((first, rest)) if first.starts_with("cookie=") => rest,
            _ => f.flow.as_str(),
        };
        out.push_str(&format!(
            " cookie={:#x}, duration={:.3}s, table=0, n_packets={}, n_bytes={}, {text}\n",
            f.cookie, f.duration_s, f.n_packets, f.n_bytes
        ));
    }
    out.push_str(&format!(
        "# {} of {} rules; {} lookups, {} matched\n",
        t.rules, t.capacity, t.lookups, t.matched
    ));
    out
}

/// `nvo trace PORT|underlay FRAME-SPEC`: what the flow table and normal forwarding would do
/// with a frame from PORT, or from the tunnel for network `--vni`, without sending it (as
/// `ovs-appctl ofproto/trace`).
#[derive(Debug, clap::Args)]
pub struct TraceArgs {
    /// The port the frame comes in on (interface name), or `underlay`: from the tunnel.
    pub port: String,
    /// The frame's fields in the flow syntax without actions (fields left out are zero).
    #[arg(value_name = "FRAME-SPEC")]
    pub flow: String,
    /// The VNI a frame from the underlay arrives with (its tun_id); needed with `underlay`.
    #[arg(long)]
    pub vni: Option<u32>,
    /// The remote VTEP a frame from the underlay comes from (checked against the network's
    /// accept_remotes).
    #[arg(long)]
    pub remote: Option<std::net::IpAddr>,
}

/// Runs `nvo trace`.
pub fn trace(client: &Client, format: Format, args: TraceArgs) -> Result<(), CliError> {
    let body = TraceSpec {
        port: args.port,
        flow: args.flow,
        vni: args.vni,
        remote: args.remote,
    };
    let answer: Value = client.post("/v1/trace", &body)?;
    show(format, answer, |t: &Trace| {
        let mut out: String = t.steps.iter().map(|s| format!("{s}\n")).collect();
        out.push_str(&format!("Final: {}\n", t.result));
        out
    })
}
