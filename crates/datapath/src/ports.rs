//! The datapath's ports: interface name, kind and network of every port the control thread
//! added, with the open socket or TAP device when the interface is there.
//!
//! A port whose interface cannot be opened stays in the table, down, and [`Ports::retry`]
//! tries again (once a second, from the datapath loop): a container's veth may appear after
//! nvod restarts, and must not need an API call to come back.

use std::collections::{HashMap, HashSet};
use std::io;

use nvo_io::ethtool::{self, Offload};
use nvo_io::{FrameMeta, FramePort, PacketPort, TapPort};
use nvo_pipeline::vlan::{self, VlanTag};
use nvo_pipeline::{PortId, Vni};

use crate::command::PortKind;

/// One port.
#[derive(Debug)]
pub struct Port {
    /// Its id in the pipeline.
    pub id: PortId,
    /// Interface name.
    pub name: String,
    /// Kind of interface.
    pub kind: PortKind,
    /// Its network (kept for the log line when it comes up).
    pub vni: Vni,
    /// Whether TSO/GSO frames stay whole, from it and to it.
    pub large: bool,
    /// The interface offloads to set when it is opened.
    pub offloads: nvo_api::PortOffloads,
    /// The kernel datapath takes its frames: nvod only sends on it (never polled).
    pub kernel: bool,
    /// The open interface; `None` while it is down.
    pub io: Option<Box<dyn FramePort + Send>>,
    /// Captures tapping its interface now ([`Ports::tap`]).
    pub taps: u32,
    /// With several workers: the fanout group its packet sockets share and how many they are
    /// (a TAP device gets a queue per worker instead).
    pub fanout: Option<(u16, usize)>,
}

/// The PACKET_FANOUT group of a port's sockets: from the port's id (unique within nvod) and
/// the process (so that two nvods sharing a namespace are unlikely to pick the same group
/// for different interfaces, which the kernel refuses).
pub fn fanout_group(id: PortId) -> u16 {
    let salt = (std::process::id() as u16).rotate_left(7);
    (id.0 as u16) ^ salt
}

/// Every port, in a dense list (polled in order) with an index by id.
#[derive(Debug, Default)]
pub struct Ports {
    list: Vec<Port>,
    index: HashMap<PortId, usize>,
    /// Bumped whenever the set of open interfaces changes, so the loop knows to rebuild its
    /// poll list.
    generation: u64,
    /// VLAN circuits (nvo_pipeline::vlan) and virtual ports (nvo_pipeline::vport): a frame to
    /// one goes out of its trunk's or shared port's interface, under its tag if it has one.
    circuits: HashMap<PortId, (PortId, Option<VlanTag>)>,
    /// Shared ports: nvod reads them on either datapath, even with no virtual port yet.
    shared: HashSet<PortId>,
    /// Interfaces read by worker 0 alone because a port read there is policed (qos.rs), with
    /// whether the kernel path ran them and whether they kept large frames before.
    policed: HashMap<PortId, (bool, bool)>,
}

/// The largest frame a circuit takes (a jumbo frame); a longer one fails to send (tx_error).
const MAX_TAGGED: usize = 9216 + vlan::TAG_LEN;

/// The index of an interface in nvod's namespace, from sysfs (`ip netns exec` mounts the
/// namespace's own), without a system call nvod could only make with `unsafe`.
fn ifindex(name: &str) -> Option<u32> {
    let path = std::path::Path::new("/sys/class/net")
        .join(name)
        .join("ifindex");
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// Opens (veth) or creates (tap) the interface of a port, and sets the offloads asked for. A
/// veth the kernel datapath runs (`kernel`) is opened to send only.
/// A trunk's veth (`tagged`) reads the VLAN tags the kernel takes out of its frames.
pub fn open(
    name: &str,
    kind: PortKind,
    offloads: &nvo_api::PortOffloads,
    kernel: bool,
    tagged: bool,
    fanout: Option<(u16, usize)>,
) -> io::Result<Box<dyn FramePort + Send>> {
    let port: Box<dyn FramePort + Send> = match kind {
        PortKind::Veth if kernel => Box::new(PacketPort::open_send_only(name)?),
        PortKind::Veth => {
            let p = if tagged {
                PacketPort::open_tagged(name)?
            } else {
                PacketPort::open(name)?
            };
            if let Some((group, members)) = fanout {
                p.join_fanout(group, members)?;
            }
            Box::new(p)
        }
        PortKind::Tap => Box::new(TapPort::create_queue(name, true, fanout.is_some())?),
    };
    let knobs = [
        (Offload::Tso, offloads.tso),
        (Offload::Gso, offloads.gso),
        (Offload::Gro, offloads.gro),
        (Offload::TxChecksum, offloads.tx_checksum),
    ];
    for (feature, on) in knobs {
        if let Some(on) = on {
            ethtool::set_offload(name, feature, on).map_err(|e| {
                io::Error::new(
                    e.kind(),
                    format!(
                        "cannot turn {feature} {} on {name}: {e}",
                        if on { "on" } else { "off" }
                    ),
                )
            })?;
        }
    }
    Ok(port)
}

impl Ports {
    /// Adds a port (open or not).
    pub fn insert(&mut self, port: Port) {
        self.index.insert(port.id, self.list.len());
        self.list.push(port);
        self.generation += 1;
    }

    /// Adds trunk `trunk`'s circuits (or a shared port's virtual ports): frames to each leave
    /// through the trunk under its tag.
    pub fn insert_circuits(
        &mut self,
        trunk: PortId,
        tags: impl Iterator<Item = (PortId, Option<VlanTag>)>,
    ) {
        for (circuit, tag) in tags {
            self.circuits.insert(circuit, (trunk, tag));
        }
    }

    /// Marks port `id` a shared port (nvo_pipeline::vport): read by nvod, no kernel port.
    pub fn insert_shared(&mut self, id: PortId) {
        self.shared.insert(id);
    }

    /// The interface port `id`'s frames are read on: its trunk or shared port, or itself.
    pub fn reader(&self, id: PortId) -> PortId {
        self.circuits.get(&id).map_or(id, |&(reader, _)| reader)
    }

    /// Makes interface `id` read by worker 0 alone, by nvod on either datapath (`on`: a port
    /// read there is policed, or a metered flow rule covers it, and a policer or meter must
    /// see all its frames: metering.rs), or gives it back to the
    /// kernel path or to every worker as it was. Refused when the interface cannot be opened
    /// anew; a TAP port (a queue per worker) is left as it is, a port that is down opens so
    /// when it comes up.
    pub fn set_policed(
        &mut self,
        id: PortId,
        on: bool,
        worker: usize,
        workers: usize,
    ) -> io::Result<()> {
        let tagged = self.is_tagged(id);
        let Some(&at) = self.index.get(&id) else {
            return Ok(());
        };
        let Some(port) = self.list.get_mut(at) else {
            return Ok(());
        };
        if port.kind == PortKind::Tap {
            return Ok(());
        }
        let before = self
            .policed
            .get(&id)
            .copied()
            .unwrap_or((port.kernel, port.large));
        let (kernel, fanout, large) = if on {
            // Worker 0 reads it alone (no fanout group); the others only send on it. Its
            // frames are segmented at receive: the policer drops segments, not 64 KiB frames
            // (a whole GSO frame lost at once stalls TCP far below the rate).
            (worker != 0, None, false)
        } else {
            if !self.policed.contains_key(&id) {
                return Ok(());
            }
            let (kernel, large) = before;
            (
                kernel,
                (workers > 1 && !kernel).then(|| (fanout_group(id), workers)),
                large,
            )
        };
        // Only once the interface is open anew does anything change (a refusal leaves it
        // as it was).
        if port.io.is_some() && (port.kernel != kernel || port.fanout != fanout) {
            port.io = Some(open(
                &port.name,
                port.kind,
                &port.offloads,
                kernel,
                tagged,
                fanout,
            )?);
            self.generation += 1;
        }
        port.kernel = kernel;
        port.fanout = fanout;
        port.large = large;
        if on {
            self.policed.insert(id, before);
        } else {
            self.policed.remove(&id);
        }
        Ok(())
    }

    /// Reopens veth `id` for the kernel path (`kernel`: nvod only sends on it) or for nvod to
    /// read (flows.rs: a flow rule covers it). A policed, tagged or shared interface is left
    /// as it is (nvod reads those anyway). Whether it changed; refused (unchanged) when the
    /// interface cannot be opened anew.
    pub fn set_kernel(&mut self, id: PortId, kernel: bool) -> io::Result<bool> {
        let tagged = self.is_tagged(id);
        if tagged || self.policed.contains_key(&id) {
            return Ok(false);
        }
        let Some(port) = self.index.get(&id).and_then(|&at| self.list.get_mut(at)) else {
            return Ok(false);
        };
        if port.kind != PortKind::Veth || port.kernel == kernel {
            return Ok(false);
        }
        if port.io.is_some() {
            // The old socket closes before the new one opens.
            port.io = None;
            self.generation += 1;
            port.io = Some(open(
                &port.name,
                port.kind,
                &port.offloads,
                kernel,
                false,
                port.fanout,
            )?);
        }
        port.kernel = kernel;
        Ok(true)
    }

    /// Removes one circuit or virtual port.
    pub fn remove_circuit(&mut self, id: PortId) {
        self.circuits.remove(&id);
    }

    /// Removes a port, closing its interface (a TAP device nvod created disappears with it),
    /// and the circuits of a trunk (the virtual ports of a shared port).
    pub fn remove(&mut self, id: PortId) -> Option<Port> {
        self.circuits.retain(|_, (trunk, _)| *trunk != id);
        self.shared.remove(&id);
        self.policed.remove(&id);
        let at = self.index.remove(&id)?;
        let port = self.list.swap_remove(at);
        if let Some(moved) = self.list.get(at) {
            self.index.insert(moved.id, at);
        }
        self.generation += 1;
        Some(port)
    }

    /// Whether interface `id` is read by worker 0 alone ([`Ports::set_policed`]).
    pub fn is_policed(&self, id: PortId) -> bool {
        self.policed.contains_key(&id)
    }

    /// Whether interface `id` is a shared port or a trunk of VLAN circuits: nvod reads it on
    /// either datapath, with its tags.
    pub fn is_tagged(&self, id: PortId) -> bool {
        self.shared.contains(&id) || self.circuits.values().any(|&(t, _)| t == id)
    }

    /// The port with this id.
    pub fn get(&self, id: PortId) -> Option<&Port> {
        self.list.get(*self.index.get(&id)?)
    }

    /// The port at position `at` of the list.
    pub fn at(&self, at: usize) -> Option<&Port> {
        self.list.get(at)
    }

    /// Every port, in list order.
    pub fn iter(&self) -> impl Iterator<Item = &Port> {
        self.list.iter()
    }

    /// Changes whenever a port is added, removed, opened or closed.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Sends one frame out of a port; an unknown or down port is an error. A frame to a VLAN
    /// circuit leaves its trunk tagged.
    pub fn send(&self, id: PortId, frame: &[u8]) -> io::Result<()> {
        match self.circuits.get(&id) {
            Some(&(trunk, Some(tag))) => return self.send_tagged(trunk, tag, frame),
            Some(&(shared, None)) => return self.send(shared, frame),
            None => {}
        }
        let port = self
            .index
            .get(&id)
            .and_then(|&at| self.list.get(at))
            .and_then(|p| p.io.as_ref())
            .ok_or_else(|| io::Error::from(io::ErrorKind::NotConnected))?;
        port.send(frame)
    }

    /// Pushes `tag` onto `frame` and sends it out of trunk `trunk`.
    fn send_tagged(&self, trunk: PortId, tag: VlanTag, frame: &[u8]) -> io::Result<()> {
        let mut buf = [0u8; MAX_TAGGED];
        let len = vlan::push(frame, tag, &mut buf).ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                "frame too long for a vlan circuit",
            )
        })?;
        self.send(trunk, &buf[..len])
    }

    /// Sends a frame with offload metadata (a GSO frame, a partial checksum) out of a port.
    /// A VLAN circuit's frames are finished here (segmented, checksummed), then tagged.
    pub fn send_meta(&self, id: PortId, frame: &[u8], meta: &FrameMeta) -> io::Result<()> {
        if let Some(&(trunk, tag)) = self.circuits.get(&id) {
            return meta
                .finish_here(frame, &mut |f| match tag {
                    Some(tag) => self.send_tagged(trunk, tag, f),
                    None => self.send(trunk, f),
                })
                .map(drop);
        }
        let port = self
            .index
            .get(&id)
            .and_then(|&at| self.list.get(at))
            .ok_or_else(|| io::Error::from(io::ErrorKind::NotConnected))?;
        let io = port
            .io
            .as_ref()
            .ok_or_else(|| io::Error::from(io::ErrorKind::NotConnected))?;
        if port.large {
            io.send_meta(frame, meta)
        } else {
            meta.finish_here(frame, &mut |f| io.send(f)).map(drop)
        }
    }

    /// Whether a port takes GSO frames whole: it keeps large frames and its socket or TAP
    /// device has the virtio-net header (so the kernel, not nvod, segments them).
    pub fn takes_large(&self, id: PortId) -> bool {
        self.get(id)
            .is_some_and(|p| p.large && p.io.as_ref().is_some_and(|io| io.vnet_hdr()))
    }

    /// What the kernel datapath needs to know of every port. A trunk (a shared port) is none
    /// of its ports: its circuits (virtual ports) are, as ports nvod serves itself (the kernel
    /// punts frames for them).
    pub fn infos(&self, circuit_vni: impl Fn(PortId) -> Option<Vni>) -> Vec<nvo_ebpf::PortInfo> {
        let trunks: Vec<PortId> = self.circuits.values().map(|&(t, _)| t).collect();
        let plain = self
            .list
            .iter()
            .filter(|p| !trunks.contains(&p.id) && !self.shared.contains(&p.id))
            .map(|p| nvo_ebpf::PortInfo {
                id: p.id,
                vni: p.vni,
                name: p.name.clone(),
                ifindex: p.io.as_ref().map(|io| io.ifindex()),
                // A veth nvod reads (a policed one, qos.rs; one flow rules cover, flows.rs) is
                // the kernel's no more.
                veth: p.kind == PortKind::Veth && p.kernel && !self.policed.contains_key(&p.id),
                tapped: p.taps > 0,
            });
        let circuits = self.circuits.iter().filter_map(|(&id, &(trunk, _))| {
            let t = self.get(trunk)?;
            Some(nvo_ebpf::PortInfo {
                id,
                vni: circuit_vni(id)?,
                name: t.name.clone(),
                ifindex: t.io.as_ref().map(|io| io.ifindex()),
                veth: false,
                tapped: false,
            })
        });
        plain.chain(circuits).collect()
    }

    /// Counts a capture starting (`on`) or ending on port `id`'s interface; while any runs,
    /// the kernel datapath delivers to the port through its host end, where the capture sees
    /// it. An unknown port (removed meanwhile) has nothing to count.
    pub fn tap(&mut self, id: PortId, on: bool) {
        let Some(port) = self.index.get(&id).and_then(|&at| self.list.get_mut(at)) else {
            return;
        };
        port.taps = if on {
            port.taps.saturating_add(1)
        } else {
            port.taps.saturating_sub(1)
        };
    }

    /// Whether the port at position `at` keeps TSO/GSO frames whole.
    pub fn large_at(&self, at: usize) -> bool {
        self.list.get(at).is_some_and(|p| p.large)
    }

    /// Handles a receive error on the port at `at`. A socket reports ENETDOWN once when its
    /// link goes down, and keeps working when it comes back up; but when the interface is
    /// deleted the socket is unbound for good. So the port is closed (and retried every
    /// second) only when its interface is gone or is another one by now.
    pub fn failed(&mut self, at: usize, why: &io::Error) {
        let Some(port) = self.list.get_mut(at) else {
            return;
        };
        let same = port
            .io
            .as_ref()
            .is_some_and(|io| ifindex(&port.name) == Some(io.ifindex()));
        if !same && port.io.take().is_some() {
            log::warn!(
                "port {} (network {}) is down: {why}; retrying every second",
                port.name,
                port.vni
            );
            self.generation += 1;
        }
    }

    /// Tries to open every port that is down; logs each one that comes up.
    pub fn retry(&mut self) {
        let mut changed = false;
        let circuits = &self.circuits;
        let shared = &self.shared;
        for port in self.list.iter_mut().filter(|p| p.io.is_none()) {
            let tagged =
                shared.contains(&port.id) || circuits.values().any(|&(trunk, _)| trunk == port.id);
            let fanout = port.fanout;
            if let Ok(io) = open(
                &port.name,
                port.kind,
                &port.offloads,
                port.kernel,
                tagged,
                fanout,
            ) {
                log::info!("port {} (network {}) is up", port.name, port.vni);
                port.io = Some(io);
                changed = true;
            }
        }
        if changed {
            self.generation += 1;
        }
    }
}
