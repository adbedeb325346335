//! Why a topology is refused: the file it is in, and either the YAML parser's message or the
//! check that failed, with the node, network or value at fault. Each message is one line.

use std::fmt;
use std::net::IpAddr;

use nvo_encap::spec::SpecError;

use super::{Family, MAX_NAME, VNI_MAX};
use crate::addr::{Cidr, Mac};

/// Why a topology is refused.
#[derive(Debug, thiserror::Error)]
pub enum TopologyError {
    /// The YAML does not match the schema.
    #[error("{file}: {}", one_line(.source))]
    Syntax {
        /// The file.
        file: String,
        /// The parser's error; its message, with line and column, is shown on one line.
        source: serde_norway::Error,
    },
    /// The YAML parses but does not make a lab.
    #[error("{file}: {error}")]
    Invalid {
        /// The file.
        file: String,
        /// What is wrong, naming the node, network or value (boxed: it is large, and
        /// every command's error would carry its size).
        #[source]
        error: Box<ValidationError>,
    },
}

/// An error's message with its line breaks turned into spaces.
pub(crate) fn one_line(error: &dyn fmt::Display) -> String {
    error.to_string().replace('\n', " ")
}

/// A lab, host or container name that cannot name a namespace or file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NameError {
    /// An empty name.
    #[error("{what} name is empty")]
    Empty {
        /// "lab", "host", "container".
        what: String,
    },
    /// A name over [`MAX_NAME`] bytes.
    #[error("{what} name {name:?} is longer than {MAX_NAME} characters")]
    TooLong {
        /// "lab", "host", "container".
        what: String,
        /// The name.
        name: String,
    },
    /// A name with other characters, or starting with `-` or `_`.
    #[error(
        "{what} name {name:?} may hold only letters, digits, '-' and '_', starting with a letter or digit"
    )]
    Characters {
        /// "lab", "host", "container".
        what: String,
        /// The name.
        name: String,
    },
}

/// A check a parsed topology failed, naming the node, network or value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ValidationError {
    /// A bad lab, host or container name.
    #[error(transparent)]
    Name(#[from] NameError),
    /// `nvo lab down NAME` with neither a topology file nor a valid lab name.
    #[error("{0} (and no such topology file)")]
    NameNoFile(#[source] NameError),
    /// `nvo lab up --datapath` none of [`super::DATAPATHS`].
    #[error("--datapath {0:?}: use auto, ebpf or userspace")]
    DatapathOption(String),
    /// A profile or a network's encapsulation refused.
    #[error(transparent)]
    Encap(#[from] EncapError),

    /// A numeric `nvod.KEY` out of nvod's bounds.
    #[error("host {host}: nvod.{key} {value} is outside {range}")]
    NvodRange {
        /// The host.
        host: String,
        /// The key under `nvod`.
        key: &'static str,
        /// Its value.
        value: u64,
        /// The bounds, as `LOW..=HIGH`.
        range: &'static str,
    },
    /// `nvod.outer_ttl` or `nvod.outer_tos` a word other than "inherit".
    #[error("host {host}: nvod.{key} {word:?} is neither a number nor \"inherit\"")]
    NvodOuterWord {
        /// The host.
        host: String,
        /// The key under `nvod`.
        key: &'static str,
        /// The word.
        word: String,
    },
    /// `nvod.datapath` none of [`super::DATAPATHS`].
    #[error("host {host}: nvod.datapath {datapath:?} is none of auto, ebpf, userspace")]
    NvodDatapath {
        /// The host.
        host: String,
        /// The value.
        datapath: String,
    },
    /// `nvod.xdp` none of [`super::XDP_MODES`].
    #[error("host {host}: nvod.xdp {xdp:?} is none of auto, driver, generic, off")]
    NvodXdp {
        /// The host.
        host: String,
        /// The value.
        xdp: String,
    },
    /// `nvod.openflow_listen` not ADDRESS:PORT.
    #[error(
        "host {host}: nvod.openflow_listen {value:?} is not ADDRESS:PORT (\"127.0.0.1:6653\")"
    )]
    NvodOpenflowListen {
        /// The host.
        host: String,
        /// The value.
        value: String,
    },
    /// `nvod.http_listen` neither ADDRESS:PORT nor :PORT.
    #[error(
        "host {host}: nvod.http_listen {value:?} is neither ADDRESS:PORT (\"10.100.0.1:9477\") \
         nor :PORT (the host's underlay address)"
    )]
    NvodHttpListen {
        /// The host.
        host: String,
        /// The value.
        value: String,
    },

    /// `nvod.cluster` refused (the message names the key).
    #[error("host {host}: nvod.cluster: {message}")]
    NvodCluster {
        /// The host.
        host: String,
        /// What is wrong, with the value.
        message: String,
    },

    /// `underlay.ipv4` not IPv4.
    #[error("underlay.ipv4 {0} is not an IPv4 prefix")]
    UnderlayIpv4(Cidr),
    /// `underlay.ipv6` not IPv6.
    #[error("underlay.ipv6 {0} is not an IPv6 prefix")]
    UnderlayIpv6(Cidr),
    /// `underlay.mtu` out of 1280..=9000.
    #[error("underlay.mtu {0} is outside 1280..=9000")]
    UnderlayMtu(u16),
    /// An underlay prefix too small for the hosts.
    #[error("underlay prefix {prefix} has no room for {hosts} hosts")]
    UnderlayRoom {
        /// The prefix.
        prefix: Cidr,
        /// How many hosts it must hold.
        hosts: u128,
    },

    /// No `hosts:`.
    #[error("a lab needs at least one host")]
    NoHosts,
    /// A node named [`super::UNDERLAY_NODE`].
    #[error("{what} name {name:?} is reserved for the underlay namespace")]
    ReservedName {
        /// "host" or "container".
        what: &'static str,
        /// The name.
        name: String,
    },
    /// Two nodes with one name.
    #[error("node name {0:?} is used twice (hosts and containers share one name space)")]
    NameTwice(String),
    /// `vxlan_port: 0`.
    #[error("host {0}: vxlan_port 0 is not a port")]
    VxlanPortZero(String),
    /// `learning:` on an nvo host.
    #[error("host {0}: learning is for kind: kernel hosts; nvo hosts take it per network")]
    LearningOnNvo(String),
    /// `nvod:` on a kernel host.
    #[error("host {0}: nvod is for kind: nvo hosts; a kernel host runs no nvod")]
    NvodOnKernel(String),

    /// `labels:` on a container of a kernel host, whose bridge knows no identities.
    #[error("container {0}: labels are for containers on kind: nvo hosts (identity policy); its host is a kernel host")]
    LabelsOnKernel(String),

    /// A VNI out of 1..=[`VNI_MAX`].
    #[error("network vni {0} is outside 1..={VNI_MAX}")]
    VniRange(u32),
    /// Two networks with one VNI.
    #[error("network vni {0} is defined twice")]
    VniTwice(u32),
    /// `ila_mappings` on a network that is not an ILA one.
    #[error("network {0}: ila_mappings is for encap: ila networks only")]
    IlaMappingsNotIla(u32),
    /// A VXLAN network's MTU that does not fit the underlay's minus the VXLAN overhead.
    #[error(
        "network {vni}: mtu {mtu} is outside 68..={max} (underlay mtu minus {overhead} bytes of VXLAN)"
    )]
    VxlanMtu {
        /// The network.
        vni: u32,
        /// Its MTU.
        mtu: u16,
        /// The largest it may be.
        max: u16,
        /// The VXLAN overhead in the underlay's family.
        overhead: u16,
    },
    /// Another profile's network with an MTU over the underlay's.
    #[error("network {vni}: mtu {mtu} is outside 68..={max} (the underlay mtu)")]
    UnderlayBoundMtu {
        /// The network.
        vni: u32,
        /// Its MTU.
        mtu: u16,
        /// The underlay MTU.
        max: u16,
    },
    /// An STT network's MTU over what nvod takes.
    #[error("network {vni}: mtu {mtu} is outside 68..={max} (stt segments larger frames)")]
    SttMtu {
        /// The network.
        vni: u32,
        /// Its MTU.
        mtu: u16,
        /// The largest STT MTU.
        max: u16,
    },
    /// A `flood:` list naming a host not in `hosts:`.
    #[error("network {vni}: flood names unknown host {host:?}")]
    FloodUnknownHost {
        /// The network.
        vni: u32,
        /// The host named.
        host: String,
    },
    /// A `flood:` list naming a host twice.
    #[error("network {vni}: flood names host {host:?} twice")]
    FloodHostTwice {
        /// The network.
        vni: u32,
        /// The host named.
        host: String,
    },
    /// A group that is not a multicast address of the tunnels' family.
    #[error(
        "network {vni}: multicast {group} is not a multicast address of the underlay's family ({family:?}); use e.g. {}",
        group_example(*.family)
    )]
    MulticastGroup {
        /// The network.
        vni: u32,
        /// The group given.
        group: IpAddr,
        /// The tunnels' family.
        family: Family,
    },
    /// Both `multicast:` and `flood:`.
    #[error(
        "network {0}: give either multicast or flood, not both (multicast floods to the group)"
    )]
    MulticastAndFlood(u32),

    /// A container on a host not in `hosts:`.
    #[error("container {container}: unknown host {host:?}")]
    ContainerHost {
        /// The container.
        container: String,
        /// The host named.
        host: String,
    },
    /// A container in a VNI not in `networks:`.
    #[error("container {container}: vni {vni} is not in networks")]
    ContainerVni {
        /// The container.
        container: String,
        /// The VNI named.
        vni: u32,
    },
    /// A container `ip:` that is not an IPv4 host address.
    #[error("container {container}: ip {ip} is not an IPv4 host address with a prefix")]
    ContainerIp {
        /// The container.
        container: String,
        /// The address given.
        ip: Cidr,
    },
    /// A container `ipv6:` that is not an IPv6 host address.
    #[error("container {container}: ipv6 {ipv6} is not an IPv6 host address with a prefix")]
    ContainerIpv6 {
        /// The container.
        container: String,
        /// The address given.
        ipv6: Cidr,
    },
    /// Two containers of a network with one address.
    #[error("container {container}: address {addr} is already {other}'s in network {vni}")]
    AddressTaken {
        /// The container.
        container: String,
        /// The address.
        addr: IpAddr,
        /// The container that has it.
        other: String,
        /// The network.
        vni: u32,
    },
    /// A container MAC that is not unicast.
    #[error("container {container}: mac {mac} is not a unicast address")]
    MacNotUnicast {
        /// The container.
        container: String,
        /// Its MAC.
        mac: Mac,
    },
    /// Two containers with one MAC.
    #[error("container {container}: mac {mac} is already {other}'s")]
    MacTaken {
        /// The container.
        container: String,
        /// The MAC.
        mac: Mac,
        /// The container that has it.
        other: String,
    },

    /// Two hosts of a VXLAN network on different VXLAN ports.
    #[error(
        "network {vni}: hosts {first} (vxlan_port {first_port}) and {second} (vxlan_port {second_port}) must use the same port"
    )]
    PortMismatch {
        /// The network.
        vni: u32,
        /// The first host in it.
        first: String,
        /// Its port.
        first_port: u16,
        /// A host with another port.
        second: String,
        /// That port.
        second_port: u16,
    },
}

/// A multicast group of `family` to suggest.
fn group_example(family: Family) -> &'static str {
    match family {
        Family::Ipv4 => "239.1.1.1",
        Family::Ipv6 => "ff0e::1:1",
    }
}

/// Why a topology's profiles or a network's encapsulation are refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EncapError {
    /// A user profile named like a built-in one.
    #[error("profiles: {0:?} is the name of a built-in profile; give yours another")]
    BuiltinName(String),
    /// Two user profiles with one name.
    #[error("profiles: {0:?} is defined twice")]
    ProfileTwice(String),
    /// A user profile the engine refuses.
    #[error("profiles: {}", one_line(.0))]
    Profile(#[from] SpecError),
    /// A network whose profile is neither built in nor in `profiles:`.
    #[error(
        "network {vni}: encap {encap:?} is neither a built-in profile nor in profiles (known: {})",
        .known.join(", ")
    )]
    UnknownEncap {
        /// The network.
        vni: u32,
        /// The profile it names.
        encap: String,
        /// The profiles there are.
        known: Vec<String>,
    },
    /// A network parameter its profile does not have.
    #[error(
        "network {vni}: encap {encap} has no parameter {key:?} (its parameters: {})",
        param_list(.params)
    )]
    UnknownParam {
        /// The network.
        vni: u32,
        /// Its profile.
        encap: String,
        /// The parameter given.
        key: String,
        /// The profile's parameters.
        params: Vec<String>,
    },
    /// A parameter value wider than its field.
    #[error(
        "network {vni}: parameter {key} = {value} does not fit its {bytes} bytes (at most {max})"
    )]
    ParamTooLarge {
        /// The network.
        vni: u32,
        /// The parameter.
        key: String,
        /// Its value.
        value: u64,
        /// Its field's width in bytes.
        bytes: u8,
        /// The largest value that fits.
        max: u64,
    },
    /// A kernel host in a network of another profile than VXLAN.
    #[error(
        "network {vni}: host {host} is kind: kernel, whose VXLAN device speaks encap vxlan only, not {encap}"
    )]
    KernelHost {
        /// The network.
        vni: u32,
        /// The kernel host.
        host: String,
        /// The network's profile.
        encap: String,
    },
}

/// A profile's parameter names as listed in a message: comma-separated, or "none".
fn param_list(params: &[String]) -> String {
    if params.is_empty() {
        "none".to_owned()
    } else {
        params.join(", ")
    }
}
