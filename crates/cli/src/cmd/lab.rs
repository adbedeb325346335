//! `nvo lab up|down|status|exec`: the arguments and what each prints. The work is in
//! `crate::lab`.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Subcommand;

use super::{print_json, CliError, Format};
use crate::lab::{down, status, up};

const UP_LONG: &str = "\
Build a lab from a topology file: the underlay, hosts and containers as network namespaces on
this machine, an nvod in each nvo host (configured through its API: profiles, then networks,
then ports), and the Linux kernel's VXLAN device and a bridge per network in each kernel host.
Each container's eth0 gets its network's MTU as its host's nvod chose it.

Everything made is written down as it is made in /run/nvo/lab/NAME/lab.json, so `nvo lab down`
removes it all. If a step fails, what was made is removed again (unless --keep-on-failure) and
the failing step is shown. nvod is --nvod PATH, else the nvod next to this nvo, else the one on
PATH; each nvod logs to /run/nvo/lab/NAME/HOST.log and listens on /run/nvo/lab/NAME/HOST.sock.

Topology file (YAML; defaults shown; examples/lab/demo.yaml has it with comments):

  name: demo                  # required; namespaces are nvo-<name>-<node>
  underlay:
    family: ipv4              # ipv4 | ipv6: the address family tunnels use
    ipv4: 10.100.0.0/24       # host i (0-based, in order) gets the (i+1)th address
    ipv6: fd00:100::/64       # host i gets ::(i+1); eth0 has both
    mtu: 1500                 # tenant MTU = this - the profile's overhead
  hosts:                      # required
    - name: h1                # required
      kind: nvo               # nvo (runs nvod) | kernel (Linux VXLAN device + bridge)
      vxlan_port: 4789        # 8472: the kernel's old default
      learning: true          # kernel hosts only (default: the network's)
      nvod: {outer_ttl: 64}   # nvo hosts only: extra nvod config keys (outer_ttl, outer_tos,
                              # outer_df, stt_reassembly_bytes, stt_reassembly_timeout_s,
                              # udp_gro, udp_gso, busy_poll_us, stt_offload, workers,
                              # datapath, xdp,
                              # http_max_connections, http_header_timeout_s,
                              # http_idle_timeout_s, and http_listen:
                              # ADDRESS:PORT, or :PORT for GET /metrics on the underlay address),
                              # openflow_listen: ADDRESS:PORT (OpenFlow 1.3 for ovs-ofctl, in
                              # the host's namespace, e.g. 127.0.0.1:6653; docs/openflow.md),
                              # and cluster: {etcd: [http://IP:2379], name: h1, prefix: /nvo/,
                              # lease_ttl_s: 10, ca_file, cert_file, key_file, username,
                              # password_file}: nvod's [cluster] table, as given (docs/cluster.md)
  networks:                   # created on every host
    - vni: 100                # required, 1..16777215
      name: red               # a label
      flood: auto             # auto: other hosts with a container in it | [h2, h3] | []
      learning: true          # false: no learning at all (the old form of the two below)
      learn_ports: true       # nvo hosts: learn the MACs of local ports (default true)
      learn_tunnels: true     # learn MACs from tunnel packets (default true; nvod's default
                              # is false when BGP is configured before the network is made);
                              # kernel hosts: nolearning on the VXLAN device when false
      encap: vxlan            # profile: a built-in (nvo profile list) or one of profiles:;
                              # kernel hosts speak vxlan only; ila (IPv6 underlay only): an
                              # L3 network translated, not tunnelled — each host gets the
                              # locator fd00:1a:0:<node id>::/64 (nvod's ila_locator), the
                              # others route it via its underlay address, and every host maps
                              # each container's ipv6 (its SIR address) to its host's locator
      params: {}              # the profile's parameters, e.g. {group: 100} for vxlan-gbp
      l3: false               # an L3 network (vxlan-gpe: IPv4+IPv6, ipip: IPv4, ip6ip6: IPv6;
                              # true for ipip/ip6ip6): nvod is the containers' gateway (ARP, ND;
                              # ipv6 containers get a default route via it); nvo route add
      mtu: 1450               # default: nvod's (underlay - the profile's overhead)
      multicast: 239.1.1.1    # optional: flood to this underlay group instead of a flood list
  containers:
    - name: red1              # required
      host: h1                # required
      vni: 100                # required
      ip: 10.0.0.1/24         # required
      ipv6: fd10::1/64        # optional
      mac: 02:00:00:64:00:01  # default: 02, the VNI, the container's ordinal
      labels: {app: web}      # optional: its port's labels (identity policy, nvo policy)
  profiles:                   # user-defined profiles, given to every nvod before the networks
    - name: mytun             # keys as in `nvo profile add --help`
      udp_port: 7777
      template: '0800 0000 0000 0000'
      vni: {offset: 4, len: 3}

Needs root, ip and sysctl; bridge and ethtool too for kernel hosts.";

/// `nvo lab ...`
#[derive(Debug, Subcommand)]
pub enum LabCmd {
    /// Build a lab from a topology file (namespaces, nvods, networks, containers).
    #[command(
        long_about = UP_LONG,
        after_help = "Example:\n  nvo lab up examples/lab/demo.yaml\n  nvo lab exec red1 -- ping -c 3 10.0.0.2\n  nvo lab down demo"
    )]
    Up {
        /// The topology file (YAML).
        file: PathBuf,
        /// The nvod binary to run in each nvo host.
        #[arg(long, value_name = "PATH")]
        nvod: Option<PathBuf>,
        /// On failure, leave what was built in place (for a look; `nvo lab down` removes it).
        #[arg(long)]
        keep_on_failure: bool,
        /// The datapath of every nvo host whose `nvod:` does not choose one: auto, ebpf or
        /// userspace (default: the NVO_LAB_DATAPATH environment variable, else nvod's own
        /// default, auto).
        #[arg(long, value_name = "auto|ebpf|userspace")]
        datapath: Option<String>,
    },
    /// Remove a lab: stop its processes (SIGTERM, SIGKILL after 2 s), delete its namespaces and
    /// its run directory. Works on half-built labs and labs whose nvod died.
    #[command(after_help = "Example:\n  nvo lab down demo\n  nvo lab down examples/lab/demo.yaml")]
    Down {
        /// The lab's name, or its topology file.
        #[arg(value_name = "NAME|FILE")]
        target: String,
    },
    /// List labs: their nodes, namespaces, addresses, nvod processes (running or dead) and API
    /// sockets.
    #[command(after_help = "Example:\n  nvo lab status\n  nvo -o json lab status demo")]
    Status {
        /// Only this lab.
        name: Option<String>,
    },
    /// Run a command in a node's namespace (a host, a container, or `ul` for the underlay),
    /// with this terminal; exits with the command's status. On an nvo host NVO_SOCKET is set
    /// to that host's nvod, so `nvo` commands talk to it.
    #[command(
        after_help = "Example:\n  nvo lab exec red1 -- ping -c 3 10.0.0.2\n  nvo lab exec h1 -- nvo fdb show 100\n  \
                      nvo lab exec ul -- tcpdump -ni br0 udp port 4789"
    )]
    Exec {
        /// The lab, when several labs have a node of that name.
        #[arg(long, value_name = "NAME")]
        lab: Option<String>,
        /// The node.
        node: String,
        /// The command and its arguments.
        #[arg(
            required = true,
            trailing_var_arg = true,
            allow_hyphen_values = true,
            value_name = "CMD"
        )]
        command: Vec<String>,
    },
}

/// Runs a lab subcommand.
pub fn run(cmd: LabCmd, format: Format) -> Result<ExitCode, CliError> {
    match cmd {
        LabCmd::Up {
            file,
            nvod,
            keep_on_failure,
            datapath,
        } => {
            let datapath = datapath.or_else(|| std::env::var("NVO_LAB_DATAPATH").ok());
            let record = up::up(&up::UpOptions {
                file,
                nvod,
                keep_on_failure,
                datapath,
            })?;
            let lab = status::lab_status(&record);
            match format {
                Format::Json => print_json(&lab)?,
                Format::Text => {
                    print!("{}", status::render(std::slice::from_ref(&lab)));
                    let first = |kind| record.nodes.iter().find(|n| n.kind == kind);
                    println!("\nNext:");
                    if let Some(c) = first(crate::lab::record::NodeKind::Container) {
                        println!("  nvo lab exec {} -- ping -c 3 <address>", c.name);
                    }
                    if let Some(h) = first(crate::lab::record::NodeKind::Nvo) {
                        println!("  nvo lab exec {} -- nvo network list", h.name);
                    }
                    println!("  nvo lab down {}", record.name);
                }
            }
        }
        LabCmd::Down { target } => {
            let report = down::down(&target)?;
            match format {
                Format::Json => print_json(&report)?,
                Format::Text => {
                    let plural = |n: usize, one: &str, many: &str| {
                        format!("{n} {}", if n == 1 { one } else { many })
                    };
                    println!(
                        "lab {} is down: {} stopped, {} removed",
                        report.lab,
                        plural(report.processes, "process", "processes"),
                        plural(report.namespaces, "namespace", "namespaces")
                    )
                }
            }
        }
        LabCmd::Status { name } => {
            let labs = status::status(name.as_deref())?;
            match format {
                Format::Json => print_json(&labs)?,
                Format::Text => print!("{}", status::render(&labs)),
            }
        }
        LabCmd::Exec { lab, node, command } => {
            return Ok(status::exec(lab.as_deref(), &node, &command)?)
        }
    }
    Ok(ExitCode::SUCCESS)
}
