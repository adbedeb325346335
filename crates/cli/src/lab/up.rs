//! `nvo lab up`: carries a plan out. Order matters and is:
//!
//! 1. the underlay namespace and its bridge (IGMP/MLD snooping off, see `underlay`);
//! 2. each host's namespace with eth0 on the bridge (both address families, `nodad` so the
//!    addresses are usable at once), lo up;
//! 3. nvod on every nvo host, started together, then each waited for until `GET /v1/node`
//!    answers; kernel hosts get a VXLAN device and a bridge per network instead;
//! 4. the topology's user-defined profiles, POSTed to every nvod;
//! 5. the networks, through each nvod's API, with their profile and parameters and the flood
//!    list of the plan or the network's multicast group (kernel hosts: `bridge fdb append` per
//!    flood remote, or `group` on the VXLAN device; they make only VXLAN networks, validation
//!    keeps them out of the others). Unless the topology sets a network's MTU, nvod picks it
//!    from the profile's overhead, and the MTU it answers with is the one its containers get;
//! 6. the containers: namespace, veth pair (eth0 inside with its MAC, addresses and the
//!    network's MTU on that host; offloads left on everywhere, so kernel hosts are the
//!    kernel as users run it — a fair baseline — and nvod, on either datapath, takes the
//!    whole TSO frames and partial checksums a veth carries from them), and the host end
//!    attached as a port (nvo) or to the bridge (kernel).
//!
//! Each namespace and process goes into lab.json as it is made. On failure `up` removes what it
//! made (unless `--keep-on-failure`) and reports the first failure.

use std::collections::BTreeMap;
use std::fs::File;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use nvo_api::{
    Bum, Client, Network, NetworkSpec, NodeInfo, PortKind, PortSpec, ProfileInfo, ProfileSpec,
};

use super::down::teardown;
use super::plan::{ContainerPlan, HostPlan, Plan, UNDERLAY_BRIDGE};
use super::record::{LabRecord, ProcessRecord, Recorder, RECORD_FILE};
use super::sys::{self, bridge, exec_in, ip, run};
use super::topology::encap::on_vxlan_port;
use super::topology::{HostKind, NvodExtras, TopologyError, ValidationError};
use super::LabError;

/// Each network's tenant MTU on each host, by (host, VNI): what its containers' eth0 gets.
type Mtus = BTreeMap<(String, u32), u16>;

/// How long nvod gets to answer its API after start. The hosts start at once, and on the eBPF
/// datapath each nvod spends about 2 s of CPU in the kernel's verifier before it answers (a
/// five-host lab on two cores: ~6 s when idle, over 10 s when the machine is busy); an nvod
/// that exits is reported at once, not after this.
const API_WAIT: Duration = Duration::from_secs(30);

/// What `nvo lab up` was asked.
#[derive(Debug, Clone)]
pub struct UpOptions {
    /// The topology file.
    pub file: PathBuf,
    /// The nvod binary, if given.
    pub nvod: Option<PathBuf>,
    /// Leave a half-built lab in place on failure.
    pub keep_on_failure: bool,
    /// The datapath of nvo hosts whose topology does not choose one.
    pub datapath: Option<String>,
}

/// Builds the lab; returns its record.
pub fn up(opts: &UpOptions) -> Result<LabRecord, LabError> {
    let (topo, mut plan) = super::plan::load(&opts.file)?;
    if let Some(d) = &opts.datapath {
        if !super::topology::DATAPATHS.contains(&d.as_str()) {
            return Err(TopologyError::Invalid {
                file: opts.file.display().to_string(),
                error: Box::new(ValidationError::DatapathOption(d.clone())),
            }
            .into());
        }
        for h in &mut plan.hosts {
            h.nvod.datapath.get_or_insert_with(|| d.clone());
        }
    }
    preflight(&plan)?;
    let nvod = if plan.hosts.iter().any(|h| h.kind == HostKind::Nvo) {
        Some(find_nvod(opts.nvod.as_deref())?)
    } else {
        None
    };
    let topology = std::fs::canonicalize(&opts.file).unwrap_or_else(|_| opts.file.clone());
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let mut rec = Recorder::create(&plan.run_dir, LabRecord::new(&plan, &topology, now))?;
    match build(&plan, &topo.profiles, &mut rec, nvod.as_deref()) {
        Ok(()) => {
            rec.complete()?;
            Ok(rec.record)
        }
        Err(error) if opts.keep_on_failure => Err(LabError::UpKept {
            lab: plan.name,
            error: Box::new(error),
        }),
        Err(error) => {
            // The first failure is what the user needs; a teardown problem would hide it, and
            // `nvo lab down` can be run again.
            let _ = teardown(&rec.record, &[]);
            Err(LabError::UpFailed {
                lab: plan.name,
                error: Box::new(error),
            })
        }
    }
}

/// Everything checked before the first change, so a refused `up` leaves nothing behind.
fn preflight(plan: &Plan) -> Result<(), LabError> {
    if !sys::is_root() {
        return Err(LabError::NotRoot);
    }
    let mut tools = vec!["ip", "sysctl"];
    if plan.hosts.iter().any(|h| h.kind == HostKind::Kernel) {
        tools.push("bridge");
    }
    let kernel_host = |name: &str| plan.host(name).is_some_and(|h| h.kind == HostKind::Kernel);
    if plan.containers.iter().any(|c| kernel_host(&c.host)) {
        tools.push("ethtool");
    }
    for tool in tools {
        if sys::which(tool).is_none() {
            let source = std::io::Error::new(std::io::ErrorKind::NotFound, "not on PATH");
            return Err(LabError::Spawn {
                program: tool.to_owned(),
                source,
            });
        }
    }
    if plan.run_dir.join(RECORD_FILE).exists() {
        return Err(LabError::AlreadyUp(plan.name.clone()));
    }
    if let Some(ns) = plan
        .namespaces()
        .into_iter()
        .find(|ns| sys::netns_exists(ns))
    {
        return Err(LabError::NamespaceExists(ns));
    }
    Ok(())
}

/// nvod: `--nvod PATH`, else next to the running `nvo`, else on PATH.
pub fn find_nvod(explicit: Option<&Path>) -> Result<PathBuf, LabError> {
    if let Some(p) = explicit {
        if p.is_file() {
            return Ok(p.to_owned());
        }
        let source = std::io::Error::new(std::io::ErrorKind::NotFound, "no such file");
        return Err(LabError::Spawn {
            program: p.display().to_string(),
            source,
        });
    }
    let exe = std::env::current_exe().unwrap_or_default();
    let dir = exe.parent().unwrap_or(Path::new(".")).to_owned();
    let beside = dir.join("nvod");
    if beside.is_file() {
        return Ok(beside);
    }
    sys::which("nvod").ok_or(LabError::NvodMissing { beside: dir })
}

fn build(
    plan: &Plan,
    profiles: &[ProfileSpec],
    rec: &mut Recorder,
    nvod: Option<&Path>,
) -> Result<(), LabError> {
    underlay(plan, rec)?;
    for h in &plan.hosts {
        host(plan, h, rec)?;
        super::ila::host(plan, h)?;
    }
    let mut daemons = Vec::new();
    for h in plan.hosts.iter().filter(|h| h.kind == HostKind::Nvo) {
        if let Some(nvod) = nvod {
            daemons.push((h, start_nvod(plan, h, nvod, rec)?));
        }
    }
    for (h, child) in &mut daemons {
        wait_api(h, child)?;
        add_profiles(h, profiles)?;
    }
    let mut mtus = Mtus::new();
    for h in &plan.hosts {
        match h.kind {
            HostKind::Nvo => nvo_networks(plan, h, &mut mtus)?,
            HostKind::Kernel => kernel_networks(plan, h, &mut mtus)?,
        }
    }
    for c in &plan.containers {
        let Some(&mtu) = mtus.get(&(c.host.clone(), c.vni)) else {
            return Err(LabError::Command {
                command: format!("create container {}", c.name),
                message: format!("host {} has no network {}", c.host, c.vni),
            });
        };
        container(plan, c, rec, mtu)?;
    }
    super::ila::mappings(plan)
}

fn add_namespace(rec: &mut Recorder, ns: &str) -> Result<(), LabError> {
    rec.namespace(ns)?;
    run("ip", &["netns", "add", ns])?;
    ip(ns, "link set lo up")
}

/// The underlay: one bridge, a plain switch. Snooping is off so that it floods multicast to
/// every host, like a switch without IGMP/MLD snooping: the lab has no multicast router, and
/// with snooping on the bridge's forwarding of a group would depend on its querier state and
/// on each host's membership reports (which expire without a querier to renew them). Each
/// host's kernel still keeps only the groups it joined.
fn underlay(plan: &Plan, rec: &mut Recorder) -> Result<(), LabError> {
    let ns = &plan.underlay_ns;
    add_namespace(rec, ns)?;
    ip(
        ns,
        &format!("link add {UNDERLAY_BRIDGE} type bridge mcast_snooping 0"),
    )?;
    ip(ns, &format!("link set {UNDERLAY_BRIDGE} up"))
}

fn host(plan: &Plan, h: &HostPlan, rec: &mut Recorder) -> Result<(), LabError> {
    add_namespace(rec, &h.ns)?;
    let (ul, mtu, uplink, ns) = (&plan.underlay_ns, plan.underlay_mtu, &h.uplink, &h.ns);
    ip(
        ul,
        &format!("link add {uplink} mtu {mtu} type veth peer name eth0 mtu {mtu} netns {ns}"),
    )?;
    ip(
        ul,
        &format!("link set {uplink} master {UNDERLAY_BRIDGE} up"),
    )?;
    ip(ns, &format!("addr add {} dev eth0", h.ipv4))?;
    // nodad: a tentative address cannot be bound, and nvod binds its locator at once.
    ip(ns, &format!("addr add {} dev eth0 nodad", h.ipv6))?;
    ip(ns, "link set eth0 up")?;
    // Interfaces made from now on (container ports, VXLAN devices, bridges) are layer 2 only:
    // without this the host would send its own IPv6 router and multicast listener chatter
    // into the tenant networks.
    exec_in(ns, "sysctl -qw net.ipv6.conf.default.disable_ipv6=1")
}

/// nvod's configuration for a host (docs/design/dataplane.md, "nvod configuration").
pub fn nvod_config(plan: &Plan, h: &HostPlan) -> String {
    let quote = |s: &str| format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""));
    format!(
        "# Written by `nvo lab up` for host {host} of lab {lab}.\n\
         node_id = {id}\nlocator = {locator}\nvxlan_port = {port}\nunderlay_mtu = {mtu}\n\
         api_socket = {socket}\nstate_dir = {state}\nlog = \"info\"\n",
        host = h.name,
        lab = plan.name,
        id = h.node_id,
        locator = quote(&h.locator.to_string()),
        port = h.vxlan_port,
        mtu = plan.underlay_mtu,
        socket = quote(&h.socket.to_string_lossy()),
        state = quote(&h.state_dir.to_string_lossy()),
    ) + &nvod_extras(&h.nvod, h.locator)
        + &super::ila::config_line(plan, h)
        // A table comes after every top-level key.
        + &h.nvod.cluster.as_ref().map(|c| c.to_toml()).unwrap_or_default()
}

/// The `nvod:` keys of a host, one `key = value` line each; `locator` completes an
/// `http_listen` given as `:PORT`.
fn nvod_extras(x: &NvodExtras, locator: std::net::IpAddr) -> String {
    let http_listen = x.http_listen.as_ref().map(|v| match v.strip_prefix(':') {
        Some(port) => std::net::SocketAddr::new(locator, port.parse().unwrap_or(0)).to_string(),
        None => v.clone(),
    });
    let lines = [
        x.outer_ttl.as_ref().map(|v| format!("outer_ttl = {v}")),
        x.outer_tos.as_ref().map(|v| format!("outer_tos = {v}")),
        x.outer_df.map(|v| format!("outer_df = {v}")),
        x.stt_reassembly_bytes
            .map(|v| format!("stt_reassembly_bytes = {v}")),
        x.stt_reassembly_timeout_s
            .map(|v| format!("stt_reassembly_timeout_s = {v}")),
        x.udp_gro.map(|v| format!("udp_gro = {v}")),
        x.udp_gso.map(|v| format!("udp_gso = {v}")),
        x.busy_poll_us.map(|v| format!("busy_poll_us = {v}")),
        x.stt_offload.map(|v| format!("stt_offload = \"{v}\"")),
        x.workers.map(|v| format!("workers = {v}")),
        x.datapath.as_ref().map(|v| format!("datapath = \"{v}\"")),
        x.xdp.as_ref().map(|v| format!("xdp = \"{v}\"")),
        http_listen.map(|v| format!("http_listen = \"{v}\"")),
        x.openflow_listen
            .as_ref()
            .map(|v| format!("openflow_listen = \"{v}\"")),
        x.http_max_connections
            .map(|v| format!("http_max_connections = {v}")),
        x.http_header_timeout_s
            .map(|v| format!("http_header_timeout_s = {v}")),
        x.http_idle_timeout_s
            .map(|v| format!("http_idle_timeout_s = {v}")),
    ];
    lines.into_iter().flatten().map(|l| l + "\n").collect()
}

fn start_nvod(
    plan: &Plan,
    h: &HostPlan,
    nvod: &Path,
    rec: &mut Recorder,
) -> Result<Child, LabError> {
    fn write(path: &Path) -> impl FnOnce(std::io::Error) -> LabError + '_ {
        move |source| LabError::Write {
            path: path.to_owned(),
            source,
        }
    }
    std::fs::write(&h.config, nvod_config(plan, h)).map_err(write(&h.config))?;
    // nvod refuses a state directory others may write: create it 0700 whatever the umask.
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&h.state_dir)
        .map_err(write(&h.state_dir))?;
    std::fs::set_permissions(&h.state_dir, std::fs::Permissions::from_mode(0o700))
        .map_err(write(&h.state_dir))?;
    // A socket file left by an nvod that was killed would make the readiness check lie.
    let _ = std::fs::remove_file(&h.socket);
    let log = File::create(&h.log).map_err(write(&h.log))?;
    let log2 = log.try_clone().map_err(write(&h.log))?;
    let child = Command::new("ip")
        .args(["netns", "exec", &h.ns])
        .arg(nvod)
        .arg("--config")
        .arg(&h.config)
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(log2)
        // Its own process group: a Ctrl-C meant for a script that ran `nvo lab up` must not
        // kill the lab's daemons; `nvo lab down` stops them.
        .process_group(0)
        .spawn()
        .map_err(|source| LabError::Spawn {
            program: "ip netns exec".to_owned(),
            source,
        })?;
    let pid = child.id();
    rec.process(ProcessRecord {
        node: h.name.clone(),
        pid,
        start_time: sys::start_time(pid),
        program: nvod.display().to_string(),
    })?;
    Ok(child)
}

fn wait_api(h: &HostPlan, child: &mut Child) -> Result<NodeInfo, LabError> {
    let client = Client::new(&h.socket);
    let deadline = Instant::now() + API_WAIT;
    let reason = loop {
        if let Ok(Some(status)) = child.try_wait() {
            break format!("exited ({status}) before its API answered");
        }
        match client.get::<NodeInfo>("/v1/node") {
            Ok(node) => return Ok(node),
            Err(e) if Instant::now() >= deadline => {
                break format!("did not answer within {} s: {e}", API_WAIT.as_secs())
            }
            Err(_) => sleep(Duration::from_millis(100)),
        }
    };
    for line in sys::tail(&h.log, 10) {
        eprintln!("  {}.log: {line}", h.name);
    }
    Err(LabError::NvodStart {
        host: h.name.clone(),
        reason,
        log: h.log.clone(),
    })
}

/// Gives an nvod the topology's user-defined profiles.
fn add_profiles(h: &HostPlan, profiles: &[ProfileSpec]) -> Result<(), LabError> {
    let client = Client::new(&h.socket);
    for p in profiles {
        client
            .post::<_, ProfileInfo>("/v1/profiles", p)
            .map_err(|source| LabError::Profile {
                host: h.name.clone(),
                profile: p.name.clone(),
                source,
            })?;
    }
    Ok(())
}

/// Creates the networks on an nvo host; each one's MTU is what nvod answers with.
fn nvo_networks(plan: &Plan, h: &HostPlan, mtus: &mut Mtus) -> Result<(), LabError> {
    let client = Client::new(&h.socket);
    for n in &plan.networks {
        let spec = NetworkSpec {
            vni: n.vni,
            mtu: n.mtu,
            learning: (!n.learning).then_some(false),
            learn_ports: n.learn_ports,
            learn_tunnels: n.learn_tunnels,
            ageing_s: n.ageing_s,
            max_learned: n.max_learned,
            flood: Some(n.flood_for(&h.name).to_vec()),
            bum: n.multicast.map(|group| Bum::Multicast { group }),
            encap: Some(n.encap.clone()),
            params: (!n.params.is_empty()).then(|| n.params.clone()),
            l3: n.l3,
            accept_remotes: n.accept_remotes,
            max_learned_per_port: n.max_learned_per_port,
            max_learned_per_remote: None,
        };
        let made: Network =
            client
                .post("/v1/networks", &spec)
                .map_err(|source| LabError::Network {
                    host: h.name.clone(),
                    vni: n.vni,
                    encap: n.encap.clone(),
                    source,
                })?;
        mtus.insert((h.name.clone(), n.vni), made.mtu);
    }
    Ok(())
}

/// Creates a VXLAN device and a bridge per VXLAN network on a kernel host.
fn kernel_networks(plan: &Plan, h: &HostPlan, mtus: &mut Mtus) -> Result<(), LabError> {
    let (ns, port, local) = (&h.ns, h.vxlan_port, h.locator);
    // Validation keeps kernel hosts out of every network of another profile.
    for n in plan.networks.iter().filter(|n| on_vxlan_port(&n.encap)) {
        let (vni, mtu) = (n.vni, n.kernel_mtu);
        mtus.insert((h.name.clone(), vni), mtu);
        let learns = n.learn_tunnels.unwrap_or(n.learning);
        let learning = if h.learning.unwrap_or(learns) {
            ""
        } else {
            "nolearning"
        };
        // With a group the device joins it on eth0 and floods to it; else it floods to the
        // all-zeros FDB entries added below.
        let group = n
            .multicast
            .map(|g| format!(" group {g}"))
            .unwrap_or_default();
        let vxlan =
            format!("vxlan id {vni} dstport {port} local {local}{group} dev eth0 {learning}");
        ip(ns, &format!("link add vx{vni} type {vxlan}"))?;
        ip(ns, &format!("link set vx{vni} mtu {mtu}"))?;
        ip(ns, &format!("link add br{vni} mtu {mtu} type bridge"))?;
        ip(ns, &format!("link set vx{vni} master br{vni} up"))?;
        ip(ns, &format!("link set br{vni} up"))?;
        // Head-end replication: the all-zeros entry lists where broadcast and unknown frames go.
        for remote in n.flood_for(&h.name) {
            bridge(
                ns,
                &format!("fdb append 00:00:00:00:00:00 dev vx{vni} dst {remote}"),
            )?;
        }
    }
    Ok(())
}

fn container(plan: &Plan, c: &ContainerPlan, rec: &mut Recorder, mtu: u16) -> Result<(), LabError> {
    let Some(host) = plan.host(&c.host) else {
        let message = format!("no host {}", c.host);
        return Err(LabError::Command {
            command: format!("attach {}", c.name),
            message,
        });
    };
    add_namespace(rec, &c.ns)?;
    let (ns, host_ns, port) = (&c.ns, &c.host_ns, &c.port);
    ip(
        host_ns,
        &format!("link add {port} mtu {mtu} type veth peer name eth0 mtu {mtu} netns {ns}"),
    )?;
    ip(ns, &format!("link set eth0 address {}", c.mac))?;
    ip(ns, &format!("addr add {} dev eth0", c.ip))?;
    if let Some(v6) = c.ipv6 {
        ip(ns, &format!("addr add {v6} dev eth0 nodad"))?;
    }
    ip(ns, "link set eth0 up")?;
    match host.kind {
        HostKind::Kernel => ip(host_ns, &format!("link set {port} master br{} up", c.vni)),
        HostKind::Nvo => {
            ip(host_ns, &format!("link set {port} up"))?;
            super::ila::container(plan, c, mtu)?;
            let spec = PortSpec {
                name: port.clone(),
                vni: c.vni,
                kind: PortKind::Veth,
                offloads: None,
                vlan: None,
                shared: None,
            };
            let client = Client::new(&host.socket);
            let api = |source| LabError::Api {
                host: host.name.clone(),
                source,
            };
            client
                .post::<_, serde_json::Value>("/v1/ports", &spec)
                .map_err(api)?;
            if !c.labels.is_empty() {
                client
                    .put::<_, serde_json::Value>(&format!("/v1/ports/{port}/labels"), &c.labels)
                    .map_err(api)?;
            }
            if c.ipv6.is_none() {
                return Ok(());
            }
            // An L3 network's gateway has an IPv6 address (link-local): the container's IPv6
            // default route goes through it, so prefixes off its own subnet are routed too. IPv4
            // has no such address: on-link prefixes only, by proxy ARP.
            let net: Network = client
                .get(&format!("/v1/networks/{}", c.vni))
                .map_err(api)?;
            match net.gateway_ipv6 {
                Some(gw) => ip(ns, &format!("-6 route add default via {gw} dev eth0")),
                None => Ok(()),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lab::topology::Topology;

    #[test]
    fn nvod_config_names_the_hosts_files_and_locator() {
        let yaml = "name: demo6\nunderlay: {family: ipv6}\nhosts: [{name: h1}, {name: h2, vxlan_port: 8472}]\n";
        let topo = Topology::parse("t.yaml", yaml).unwrap();
        let plan = Plan::new(&topo, Path::new("/run/nvo/lab")).unwrap();
        let config = nvod_config(&plan, &plan.hosts[1]);
        assert_eq!(
            config,
            "# Written by `nvo lab up` for host h2 of lab demo6.\n\
             node_id = 2\nlocator = \"fd00:100::2\"\nvxlan_port = 8472\nunderlay_mtu = 1500\n\
             api_socket = \"/run/nvo/lab/demo6/h2.sock\"\nstate_dir = \"/run/nvo/lab/demo6/h2.state\"\n\
             log = \"info\"\n"
        );
        let yaml = "name: t\nhosts: [{name: h1, nvod: {outer_ttl: 9, outer_df: false, stt_reassembly_timeout_s: 5, busy_poll_us: 50, stt_offload: off}}]\n";
        let plan = Plan::new(
            &Topology::parse("t.yaml", yaml).unwrap(),
            Path::new("/run/nvo/lab"),
        )
        .unwrap();
        let config = nvod_config(&plan, &plan.hosts[0]);
        assert!(
            config.ends_with(
                "log = \"info\"\nouter_ttl = 9\nouter_df = false\nstt_reassembly_timeout_s = 5\n\
                 busy_poll_us = 50\n\
                 stt_offload = \"off\"\n"
            ),
            "{config}"
        );
    }

    #[test]
    fn http_listen_takes_an_address_or_the_hosts_own() {
        let yaml =
            "name: t\nhosts: [{name: h1, nvod: {http_listen: ':9477', http_header_timeout_s: 2}}, \
                    {name: h2, nvod: {http_listen: '127.0.0.1:9100'}}]\n";
        let plan = Plan::new(
            &Topology::parse("t.yaml", yaml).unwrap(),
            Path::new("/run/nvo/lab"),
        )
        .unwrap();
        let config = nvod_config(&plan, &plan.hosts[0]);
        assert!(
            config.ends_with("http_listen = \"10.100.0.1:9477\"\nhttp_header_timeout_s = 2\n"),
            "{config}"
        );
        let config = nvod_config(&plan, &plan.hosts[1]);
        assert!(
            config.ends_with("http_listen = \"127.0.0.1:9100\"\n"),
            "{config}"
        );
        for bad in ["9477", ":0", "host:9477", ":x"] {
            let yaml = format!("name: t\nhosts: [{{name: h1, nvod: {{http_listen: '{bad}'}}}}]\n");
            let e = Topology::parse("t.yaml", &yaml).unwrap_err().to_string();
            assert!(e.contains("http_listen"), "{bad}: {e}");
        }
    }

    #[test]
    fn nvod_cluster_becomes_the_cluster_table() {
        let yaml = "name: t\nhosts: [{name: h1, nvod: {http_listen: ':9477', cluster: \
                    {etcd: ['http://10.1.0.1:2379', 'http://10.1.0.2:2379'], name: h1, \
                    lease_ttl_s: 3, prefix: /t/}}}, {name: h2}]\n";
        let plan = Plan::new(
            &Topology::parse("t.yaml", yaml).unwrap(),
            Path::new("/run/nvo/lab"),
        )
        .unwrap();
        let config = nvod_config(&plan, &plan.hosts[0]);
        let parsed: toml::Value = toml::from_str(&config).unwrap();
        assert_eq!(
            parsed["http_listen"].as_str(),
            Some("10.100.0.1:9477"),
            "{config}"
        );
        let c = &parsed["cluster"];
        let etcd: Vec<&str> = c["etcd"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|v| v.as_str())
            .collect();
        assert_eq!(etcd, ["http://10.1.0.1:2379", "http://10.1.0.2:2379"]);
        assert_eq!(
            (
                c["name"].as_str(),
                c["lease_ttl_s"].as_integer(),
                c["prefix"].as_str()
            ),
            (Some("h1"), Some(3), Some("/t/"))
        );
        let config = nvod_config(&plan, &plan.hosts[1]);
        assert!(!config.contains("[cluster]"), "{config}");
        for (bad, want) in [
            ("{etcd: []}", "etcd lists no endpoint"),
            ("{etcd: ['h:2379']}", "must be http://HOST:PORT"),
            ("{etcd: ['http://a:1'], lease_ttl_s: 0}", "lease_ttl_s 0"),
            ("{etcd: ['http://a:1'], ttl: 3}", "ttl"),
        ] {
            let yaml = format!("name: t\nhosts: [{{name: h1, nvod: {{cluster: {bad}}}}}]\n");
            let e = Topology::parse("t.yaml", &yaml).unwrap_err().to_string();
            assert!(e.contains(want), "{bad}: {e}");
        }
    }

    #[test]
    fn an_explicit_nvod_must_exist() {
        let err = find_nvod(Some(Path::new("/nonexistent/nvod")))
            .unwrap_err()
            .to_string();
        assert!(err.contains("/nonexistent/nvod"), "{err}");
    }
}
