//! `nvod --help`'s list of configuration keys, kept apart from the parsing in config.rs.

/// The text `nvod --help` shows after the options: every configuration key.
pub const KEYS_HELP: &str = "\
Configuration file (TOML, every key optional):
  node_id = 1                      32-bit overlay node ID, 1 to 4294967295
                                   (default: derived from the locator: an IPv4 locator as a
                                   number, a hash of an IPv6 one)
  locator = \"192.0.2.1\"            underlay address tunnels are sent from and received on
                                   (default: the source address the kernel picks for the
                                   default route; set it on hosts with several uplinks)
  vxlan_port = 4789                UDP port VXLAN is received on and sent to; 8472 talks to
                                   hosts using the Linux kernel's old default
  underlay_mtu = 1500              MTU of the underlay, 1280 to 65535; a network's MTU
                                   defaults to this minus 50 (IPv4 locator) or 70 (IPv6)
  api_socket = \"/run/nvo/nvod.sock\"
                                   unix socket of the control API (the parent directory is
                                   created; a stale socket file is replaced)
  api_group = \"nvo\"                group of the API socket (a name from /etc/group, or a
                                   gid): its members may use the API, as with docker's
                                   socket (default: nvod's own group). The socket is 0660
                                   whatever the umask; nvod refuses to start if the
                                   socket's directory is writable by others or owned by
                                   another user than root or nvod's, or if an existing
                                   socket file is another user's
  api_max_connections = 256        API connections served at once, 1 to 65536; at the cap a
                                   new connection closes the least recently active one that
                                   has no request in progress (or is itself closed when
                                   every one has), so a flood of idle connections cannot
                                   lock the API out
  api_header_timeout_s = 10        seconds a connection has to send a request's header,
                                   from its opening or the previous answer, 1 to 3600
  api_idle_timeout_s = 60          seconds without a byte either way (a stalled request
                                   body, a client not reading its answer) before a
                                   connection with no request running is closed, 1 to 3600
  http_listen = \"127.0.0.1:9477\"  TCP address serving GET /metrics (Prometheus text format;
                                   docs/metrics.md) and the status page at / (`nvo ui`;
                                   docs/status-page.md); off unless set. Read-only, no API
                                   privileges; bounded by http_max_connections = 64,
                                   http_header_timeout_s = 10 and http_idle_timeout_s = 60
                                   as the api_ keys bound the API; no request body
  openflow_listen = \"127.0.0.1:6653\"  TCP address of the OpenFlow 1.3 listener a controller
                                   (or `ovs-ofctl -O OpenFlow13 ... tcp:127.0.0.1:6653`)
                                   programs the flow table through; off unless set. Plain
                                   TCP, no authentication: keep it on loopback or a
                                   management network. OpenFlow port numbers are nvod's
                                   port ids (docs/openflow.md)
  port_kinds = [\"veth\", \"tap\"]     kinds of interface that may be ports: link kinds as
                                   `ethtool -i` names the driver (\"veth\", \"macvlan\",
                                   \"ipvlan\", \"dummy\", ...) and \"tap\" (a TAP device).
                                   Loopback, the interface holding the locator and any
                                   interface with an underlay address are refused whatever
                                   this says
  state_dir = \"/var/lib/nvo\"       where the desired state (networks, ports, static FDB
                                   entries, flood lists) is kept across restarts: state.json
                                   and state.journal (one fsynced line per API write). Created
                                   0700 (files 0600); refused if group or others may write it
                                   or another user owns it; locked: one nvod per directory
  entropy_ports = 16               outer UDP source ports used for flow entropy, from 49152
                                   up, 1 to 16383
  multicast_ttl = 8                TTL (IPv4) or hop limit (IPv6) of what networks with a
                                   multicast BUM group flood to it, 1 to 255; 1 keeps the
                                   group on the locator's link
  outer_ttl = 64                   TTL (IPv4) or hop limit (IPv6) of every tunnel packet,
                                   1 to 255, or \"inherit\": the inner packet's (default: the
                                   kernel's, 64)
  outer_tos = 0                    TOS (IPv4) or traffic class (IPv6) of every tunnel
                                   packet, 0 to 255, or \"inherit\": the inner packet's DSCP
                                   and ECN (RFC 6040 normal mode; default 0)
  outer_df = true                  set Don't Fragment on outer IPv4 packets (default: the
                                   kernel's path-MTU discovery setting)
  udp_gro = true                   receive tunnel datagrams coalesced (UDP GRO) when the
                                   kernel can; false turns it off (to measure its effect)
  udp_gso = true                   send runs of equal datagrams as one message (UDP GSO)
                                   when the kernel can; false turns it off
  stt_reassembly_bytes = 16777216  most bytes of STT frames held in reassembly, 65536 to
                                   1073741824; the least recently used frame is evicted first
  stt_reassembly_timeout_s = 30    seconds an incomplete STT frame is kept, 1 to 3600
  stt_offload = \"auto\"             who cuts STT frames into segments: \"auto\" hands each
                                   frame whole to the kernel's TCP segmentation through a
                                   TUN device nvod makes (nvostt0; IPv4 locators; needs
                                   net.ipv4.conf.all.rp_filter = 0), falling back to nvod's
                                   own segmenter with one warning when it cannot; \"off\"
                                   always segments in nvod (counters: stt tx_frames_kernel,
                                   tx_frames_software)
  ila_locator = \"fd00:1::/64\"     this node's ILA locator, a /64 (default: none; ILA
                                   networks, encap \"ila\", need it): nvod makes the TUN
                                   device nvoila0 (a queue per worker), routes the prefix
                                   to it and writes translated packets to it for the kernel
                                   to route; needs net.ipv6.conf.all.forwarding = 1 and
                                   `ip` on PATH. Other hosts route the prefix to this one
  busy_poll_us = 0                 microseconds the userspace datapath polls on after a
                                   packet before it sleeps again, 0 (off) to 100000: lower
                                   latency for CPU time spent while traffic flows
  workers = <CPUs>                 userspace datapath threads, 1 to 64 (default: one per
                                   CPU nvod may run on); flows are spread over them by one
                                   symmetric hash of the inner flow (BPF programs on the
                                   ports' PACKET_FANOUT and the tunnels' SO_REUSEPORT
                                   groups), a flow's two directions on one worker, each
                                   worker with its own copy of the tables.
                                   1 is a single thread. With datapath \"ebpf\" running, one
                                   handles what reaches userspace
  learn_port_percent = 25          default share of a network's max_learned one local port
                                   may hold (max_learned_per_port of networks created
                                   without one), 1 to 100; beyond it the port's frames
                                   with new source MACs are dropped (port_learn_limit)
  learn_remote_percent = 50        the same for one remote VTEP (max_learned_per_remote),
                                   1 to 100
  datapath = \"auto\"                 which datapath forwards: \"ebpf\" (the kernel fast path:
                                   tc eBPF programs on the ports and the locator's
                                   interface; nvod refuses to start if the kernel refuses
                                   them), \"userspace\" (nvod's own threads), or \"auto\"
                                   (ebpf where it loads, else userspace, with one log line
                                   saying why). Networks the kernel path cannot carry (STT,
                                   L3 networks, IPv6 underlays, ...) run in userspace either
                                   way; `nvo node` shows the choice and the reason
  xdp = \"auto\"                      where the kernel path relays overlay packets for other
                                   nodes: \"driver\" (XDP in the NIC's driver), \"generic\"
                                   (XDP in the stack), \"off\" (the tc program), or \"auto\"
                                   (driver where the locator's interface is not a veth, else
                                   tc; a failed attach falls back to tc with a log line).
                                   driver and generic refuse to start when the kernel
                                   refuses them
  [[profile]]                      a user-defined encapsulation profile (repeatable); the
                                   keys are those of POST /v1/profiles (docs/openapi.yaml),
                                   e.g. name, udp_port, template, vni, matches
  [bgp]                            the EVPN speaker at first start (docs/design/evpn.md):
                                   asn, router_id, neighbors = [{address = \"...\"}], and
                                   the other keys of PUT /v1/bgp (listen_addresses,
                                   default the locator; per neighbour password for TCP-MD5
                                   and ttl_security for GTSM); once set through the API,
                                   the API's configuration (kept in state.json) wins
  [limits]                         table bounds (beyond one, the API answers 409 naming the
                                   key and its value); each key 1 to the bound shown:
    networks = 4096                networks (65536)
    ports = 1024                   ports over all networks (65536)
    flood_per_network = 256        remotes in one flood list (256: the kernel path's)
    static_fdb_per_network = 16384 static FDB entries of one network (1048576)
    learned_fdb_per_network = 65536
                                   the largest max_learned a network may ask for (1048576)
    evpn_fdb_per_network = 262144  EVPN-installed FDB entries of one network (4194304)
    neighbors_per_network = 262144 IP-to-MAC entries of one network (4194304)
    routes_per_network = 1024      routes of one L3 network (1024)
    profiles = 64                  encapsulation profiles, built-ins included (64: the
                                   kernel path's)
    keys = 65536                   bound receive keys and parameter sets (1048576)
    overlay_nodes = 4096           overlay nodes (65536)
    locators_per_node = 8          locators of one overlay node (8: the kernel path's)
    overlay_routes = 16384         routes of one overlay application (1048576)
    next_hops_per_route = 16       next hops of one overlay route (64)
  [cluster]                        cluster mode (docs/cluster.md): desired state in etcd
    etcd = [\"http://10.1.0.1:2379\"] etcd endpoints, http:// or https://; setting it turns
                                   cluster mode on (nvod starts and serves its API while etcd
                                   is away, and retries at most every 2 s)
    prefix = \"/nvo/\"               where the objects live; must start and end with '/'
                                   (networks at PREFIX networks/VNI, hosts at PREFIX hosts/NAME)
    name = \"h1\"                    this host's name in the cluster (default: the hostname)
    lease_ttl_s = 10               TTL of this host's registration lease, 2 to 300, kept alive
                                   every TTL/3; the registration vanishes when nvod loses etcd
                                   for longer than the TTL
    ca_file = \"ca.pem\"             TLS for https:// endpoints: CA, client certificate and key
    cert_file = \"client.pem\"       (cert_file and key_file go together)
    key_file = \"client-key.pem\"
    username = \"nvo\"               etcd authentication (both or neither): the password is
    password_file = \"/etc/nvo/pw\"  the first line of password_file
  log = \"info\"                     log level (error, warn, info, debug, trace) or an
                                   env_logger filter such as \"info,nvo_evpn=debug\"
                                   (nvod's parts log as nvod, nvo_datapath, nvo_evpn, ...);
                                   RUST_LOG overrides it";
