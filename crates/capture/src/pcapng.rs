//! A pcapng writer (draft-ietf-opsawg-pcapng): the few blocks a capture stream needs, each
//! returned as bytes so that the stream can hand them on one by one.
//!
//! - Section Header Block, byte order of the host (readers detect it from the magic).
//! - Interface Description Blocks: link type Ethernet, the snap length, `if_name` and
//!   `if_description`; timestamps in microseconds (the default `if_tsresol`).
//! - Enhanced Packet Blocks, with `epb_flags` saying the direction (inbound / outbound).
//! - Interface Statistics Blocks at the end: `isb_ifrecv` (frames read), `isb_ifdrop`
//!   (dropped by the kernel, socket queue full), `isb_osdrop` (dropped by nvod: the client
//!   read too slowly), `isb_usrdeliv` (written to the stream). `nvo capture` reads them back
//!   to report the counts.
//!
//! pcapng rather than classic pcap because one stream carries several interfaces (the ports
//! and underlay of a network) with a direction per frame and the drop counts at the end, which
//! tshark, Wireshark and tcpdump all read.
//!
//! Written here rather than with `pcap-file`'s `PcapNgWriter` (the workspace's reader, used
//! by the tests): its 2.0 writer serialises every block twice (once into a sink to learn the
//! length), writes EPB timestamps in nanoseconds whatever `if_tsresol` says, and keeps the
//! whole stream's writer state, while each block here is built once, per frame, into the one
//! `Vec` the stream hands on.

/// Block types.
pub const SHB: u32 = 0x0A0D_0D0A;
/// Interface Description Block.
pub const IDB: u32 = 1;
/// Enhanced Packet Block.
pub const EPB: u32 = 6;
/// Interface Statistics Block.
pub const ISB: u32 = 5;

/// `isb_ifrecv`, `isb_ifdrop`, `isb_osdrop`, `isb_usrdeliv` option codes.
pub const ISB_IFRECV: u16 = 4;
/// Dropped by the interface (here: the kernel's socket queue).
pub const ISB_IFDROP: u16 = 5;
/// Dropped by the operating system (here: nvod's queue to the client).
pub const ISB_OSDROP: u16 = 7;
/// Delivered to the user.
pub const ISB_USRDELIV: u16 = 8;

const BYTE_ORDER_MAGIC: u32 = 0x1A2B_3C4D;
const OPT_END: u16 = 0;
const OPT_COMMENT: u16 = 1;
const IF_NAME: u16 = 2;
const IF_DESCRIPTION: u16 = 3;
const EPB_FLAGS: u16 = 2;

/// Direction of a frame, as `epb_flags` bits 0-1 say it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// Received by the interface.
    Inbound,
    /// Sent on the interface.
    Outbound,
}

/// Counts of one interface, for its statistics block.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Frames read from the interface that passed the filter.
    pub received: u64,
    /// Frames the kernel dropped.
    pub kernel_dropped: u64,
    /// Frames nvod dropped because the client was slow.
    pub queue_dropped: u64,
    /// Frames written to the stream.
    pub delivered: u64,
}

fn pad4(len: usize) -> usize {
    (len + 3) & !3
}

/// Assembles one block: type, length, body, options, length.
struct Block(Vec<u8>);

impl Block {
    /// A block of `kind` whose bytes, all told, take about `size`.
    fn new(kind: u32, size: usize) -> Block {
        let mut b = Vec::with_capacity(size);
        b.extend_from_slice(&kind.to_ne_bytes());
        b.extend_from_slice(&0u32.to_ne_bytes());
        Block(b)
    }

    fn u16(&mut self, v: u16) -> &mut Self {
        self.0.extend_from_slice(&v.to_ne_bytes());
        self
    }

    fn u32(&mut self, v: u32) -> &mut Self {
        self.0.extend_from_slice(&v.to_ne_bytes());
        self
    }

    fn u64(&mut self, v: u64) -> &mut Self {
        self.0.extend_from_slice(&v.to_ne_bytes());
        self
    }

    fn padded(&mut self, data: &[u8]) -> &mut Self {
        self.0.extend_from_slice(data);
        self.0
            .resize(self.0.len() + pad4(data.len()) - data.len(), 0);
        self
    }

    fn option(&mut self, code: u16, value: &[u8]) -> &mut Self {
        let len = u16::try_from(value.len()).unwrap_or(u16::MAX);
        self.u16(code).u16(len);
        self.padded(&value[..usize::from(len)])
    }

    fn finish(mut self, options: bool) -> Vec<u8> {
        if options {
            self.u16(OPT_END).u16(0);
        }
        let total = u32::try_from(self.0.len() + 4).unwrap_or(u32::MAX);
        self.0[4..8].copy_from_slice(&total.to_ne_bytes());
        self.0.extend_from_slice(&total.to_ne_bytes());
        self.0
    }
}

/// The Section Header Block that starts the stream; `comment` says what was captured.
pub fn section_header(comment: &str) -> Vec<u8> {
    let mut b = Block::new(SHB, 64 + comment.len());
    b.u32(BYTE_ORDER_MAGIC).u16(1).u16(0).u64(u64::MAX);
    b.option(OPT_COMMENT, comment.as_bytes());
    b.finish(true)
}

/// An Interface Description Block: Ethernet frames up to `snaplen` bytes.
pub fn interface(name: &str, description: &str, snaplen: u32) -> Vec<u8> {
    let mut b = Block::new(IDB, 64 + name.len() + description.len());
    b.u16(1).u16(0).u32(snaplen);
    b.option(IF_NAME, name.as_bytes());
    b.option(IF_DESCRIPTION, description.as_bytes());
    b.finish(true)
}

/// An Enhanced Packet Block of interface `interface` (its index in IDB order), at
/// `micros` since the Unix epoch, `wire_len` bytes long on the wire, of which `data` kept.
pub fn packet(
    interface: u32,
    micros: u64,
    data: &[u8],
    wire_len: usize,
    direction: Direction,
) -> Vec<u8> {
    // Per frame: sized at once (header 28, data, flags option 8, end 4, length 4).
    let mut b = Block::new(EPB, 44 + pad4(data.len()));
    let captured = u32::try_from(data.len()).unwrap_or(u32::MAX);
    let original = u32::try_from(wire_len.max(data.len())).unwrap_or(u32::MAX);
    b.u32(interface)
        .u32((micros >> 32) as u32)
        .u32(micros as u32)
        .u32(captured)
        .u32(original)
        .padded(data);
    let flags: u32 = match direction {
        Direction::Inbound => 1,
        Direction::Outbound => 2,
    };
    b.option(EPB_FLAGS, &flags.to_ne_bytes());
    b.finish(true)
}

/// An Interface Statistics Block of `interface` at `micros`.
pub fn statistics(interface: u32, micros: u64, stats: &Stats) -> Vec<u8> {
    let mut b = Block::new(ISB, 80);
    b.u32(interface)
        .u32((micros >> 32) as u32)
        .u32(micros as u32);
    b.option(ISB_IFRECV, &stats.received.to_ne_bytes());
    b.option(ISB_IFDROP, &stats.kernel_dropped.to_ne_bytes());
    b.option(ISB_OSDROP, &stats.queue_dropped.to_ne_bytes());
    b.option(ISB_USRDELIV, &stats.delivered.to_ne_bytes());
    b.finish(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pcap_file::pcapng::blocks::enhanced_packet::EnhancedPacketOption;
    use pcap_file::pcapng::blocks::interface_statistics::InterfaceStatisticsOption;
    use pcap_file::pcapng::{Block as PBlock, PcapNgReader};

    #[test]
    fn pcap_file_reads_what_we_write() {
        let frame: Vec<u8> = (0..61u8).collect();
        let mut out = section_header("nvo capture --network 100");
        out.extend(interface("veth-a", "port veth-a", 262_144));
        out.extend(interface("eth0", "underlay eth0", 96));
        out.extend(packet(
            0,
            1_700_000_000_123_456,
            &frame,
            61,
            Direction::Inbound,
        ));
        out.extend(packet(
            1,
            1_700_000_000_223_456,
            &frame[..5],
            1500,
            Direction::Outbound,
        ));
        let stats = Stats {
            received: 9,
            kernel_dropped: 1,
            queue_dropped: 2,
            delivered: 6,
        };
        out.extend(statistics(1, 1_700_000_001_000_000, &stats));

        let mut reader = PcapNgReader::new(&out[..]).unwrap();
        let mut blocks = Vec::new();
        while let Some(block) = reader.next_block() {
            blocks.push(block.unwrap().into_owned());
        }
        assert_eq!(blocks.len(), 5, "{blocks:?}");
        match &blocks[0] {
            PBlock::InterfaceDescription(idb) => assert_eq!(idb.snaplen, 262_144),
            other => panic!("not an IDB: {other:?}"),
        }
        match &blocks[2] {
            PBlock::EnhancedPacket(epb) => {
                assert_eq!(epb.interface_id, 0);
                assert_eq!(&epb.data[..], &frame[..]);
                assert_eq!(epb.original_len, 61);
                // pcap-file 2.0 hands the raw 64-bit count back as nanoseconds, whatever
                // `if_tsresol` says (microseconds by default, which tshark applies).
                assert_eq!(epb.timestamp.as_nanos(), 1_700_000_000_123_456);
                assert_eq!(epb.options, [EnhancedPacketOption::Flags(1)]);
            }
            other => panic!("not an EPB: {other:?}"),
        }
        match &blocks[3] {
            PBlock::EnhancedPacket(epb) => {
                assert_eq!(epb.interface_id, 1);
                assert_eq!(&epb.data[..], &frame[..5]);
                assert_eq!(epb.original_len, 1500);
                assert_eq!(epb.options, [EnhancedPacketOption::Flags(2)]);
            }
            other => panic!("not an EPB: {other:?}"),
        }
        match &blocks[4] {
            PBlock::InterfaceStatistics(isb) => {
                assert_eq!(isb.interface_id, 1);
                assert_eq!(
                    isb.options,
                    [
                        InterfaceStatisticsOption::IsbIfRecv(9),
                        InterfaceStatisticsOption::IsbIfDrop(1),
                        InterfaceStatisticsOption::IsbOsDrop(2),
                        InterfaceStatisticsOption::IsbUsrDeliv(6),
                    ]
                );
            }
            other => panic!("not an ISB: {other:?}"),
        }
    }

    #[test]
    fn blocks_are_padded_to_four_bytes() {
        for n in 0..9 {
            let data = vec![0xaa; n];
            let block = packet(0, 0, &data, n, Direction::Inbound);
            assert_eq!(block.len() % 4, 0);
            let total = u32::from_ne_bytes([block[4], block[5], block[6], block[7]]);
            assert_eq!(total as usize, block.len());
        }
    }
}
