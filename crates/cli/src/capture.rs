//! Reading capture files: classic pcap (either byte order, micro- or nanosecond timestamps) and
//! pcapng, as written by tcpdump, tshark and dumpcap.
//!
//! Frames come out with the link type of the interface they were captured on, so that the
//! decoder knows where the first header starts.

use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use pcap_file::pcap::PcapReader;
use pcap_file::pcapng::blocks::interface_description::InterfaceDescriptionOption;
use pcap_file::pcapng::{Block, PcapNgReader};
use pcap_file::DataLink;

/// What a captured frame starts with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkType {
    /// An Ethernet header (LINKTYPE_ETHERNET).
    Ethernet,
    /// Linux cooked capture v1 (`tcpdump -i any`), 16-byte header.
    LinuxSll,
    /// Linux cooked capture v2, 20-byte header.
    LinuxSll2,
    /// A raw IPv4 or IPv6 packet, no link header.
    RawIp,
    /// Anything else: reported, not decoded.
    Other(u32),
}

impl From<DataLink> for LinkType {
    fn from(d: DataLink) -> Self {
        match d {
            DataLink::ETHERNET => LinkType::Ethernet,
            DataLink::LINUX_SLL => LinkType::LinuxSll,
            DataLink::LINUX_SLL2 => LinkType::LinuxSll2,
            DataLink::RAW | DataLink::IPV4 | DataLink::IPV6 => LinkType::RawIp,
            other => LinkType::Other(u32::from(other)),
        }
    }
}

/// One captured frame.
#[derive(Debug)]
pub struct Frame {
    /// Link type of the capturing interface.
    pub link: LinkType,
    /// Capture time since the Unix epoch, in nanoseconds.
    pub timestamp_ns: u128,
    /// Length of the frame on the wire (may exceed `data.len()` when the snap length cut it).
    pub original_len: u32,
    /// The captured bytes.
    pub data: Vec<u8>,
}

/// Why a capture could not be read.
#[derive(Debug, thiserror::Error)]
pub enum CaptureError {
    /// The file could not be opened or read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The capture file.
        path: PathBuf,
        /// What the operating system said.
        source: std::io::Error,
    },
    /// Neither a pcap nor a pcapng file.
    #[error("{path} is not a pcap or pcapng capture (magic {magic:#010x})")]
    NotACapture {
        /// The capture file.
        path: PathBuf,
        /// The first four bytes.
        magic: u32,
    },
    /// The capture's structure is broken (not just one packet in it).
    #[error("{path}: broken capture after {frames} frames: {reason}")]
    Broken {
        /// The capture file.
        path: PathBuf,
        /// Frames read before the damage.
        frames: usize,
        /// What the pcap reader said.
        reason: String,
    },
}

/// pcapng's default timestamp resolution: microseconds (10^-6 s).
const DEFAULT_TSRESOL: u8 = 6;
/// A packet naming an interface that no Interface Description Block declared.
const UNKNOWN_INTERFACE: (LinkType, u8) = (LinkType::Other(u32::MAX), DEFAULT_TSRESOL);

/// Converts pcapng timestamp units to nanoseconds. `tsresol` is 10^-n seconds, or 2^-n when its
/// top bit is set.
fn units_to_ns(units: u128, tsresol: u8) -> u128 {
    let n = u32::from(tsresol & 0x7f);
    if tsresol & 0x80 != 0 {
        units.saturating_mul(1_000_000_000) >> n.min(127)
    } else if n <= 9 {
        units.saturating_mul(10u128.pow(9 - n))
    } else {
        units / 10u128.saturating_pow(n - 9)
    }
}

const PCAPNG_MAGIC: u32 = 0x0a0d_0d0a;
const PCAP_MAGICS: [u32; 4] = [0xa1b2_c3d4, 0xd4c3_b2a1, 0xa1b2_3c4d, 0x4d3c_b2a1];

/// Reads every frame of a capture file. Frames read before a structural error are returned
/// together with the error so that a damaged capture still shows what it holds.
pub fn read_capture(path: &Path) -> (Vec<Frame>, Option<CaptureError>) {
    match read_inner(path) {
        Ok((frames, err)) => (frames, err),
        Err(e) => (Vec::new(), Some(e)),
    }
}

fn read_inner(path: &Path) -> Result<(Vec<Frame>, Option<CaptureError>), CaptureError> {
    let io = |source| CaptureError::Io {
        path: path.to_owned(),
        source,
    };
    let mut file = File::open(path).map_err(io)?;
    let mut magic = [0u8; 4];
    file.read_exact(&mut magic).map_err(io)?;
    file.seek(SeekFrom::Start(0)).map_err(io)?;
    let magic = u32::from_le_bytes(magic);
    let reader = BufReader::new(file);
    let broken = |frames: usize, reason: String| CaptureError::Broken {
        path: path.to_owned(),
        frames,
        reason,
    };
    let mut frames = Vec::new();
    if PCAP_MAGICS.contains(&magic) {
        let mut r = PcapReader::new(reader).map_err(|e| broken(0, e.to_string()))?;
        let link = LinkType::from(r.header().datalink);
        while let Some(p) = r.next_packet() {
            match p {
                Ok(p) => frames.push(Frame {
                    link,
                    timestamp_ns: p.timestamp.as_nanos(),
                    original_len: p.orig_len,
                    data: p.data.into_owned(),
                }),
                Err(e) => {
                    let n = frames.len();
                    return Ok((frames, Some(broken(n, e.to_string()))));
                }
            }
        }
        Ok((frames, None))
    } else if magic == PCAPNG_MAGIC {
        let mut r = PcapNgReader::new(reader).map_err(|e| broken(0, e.to_string()))?;
        // Per interface: its link type and timestamp resolution (pcapng §4.2, if_tsresol).
        let mut links: Vec<(LinkType, u8)> = Vec::new();
        while let Some(b) = r.next_block() {
            let block = match b {
                Ok(b) => b,
                Err(e) => {
                    let n = frames.len();
                    return Ok((frames, Some(broken(n, e.to_string()))));
                }
            };
            match block {
                Block::SectionHeader(_) => links.clear(),
                Block::InterfaceDescription(idb) => {
                    let tsresol = idb
                        .options
                        .iter()
                        .find_map(|o| match o {
                            InterfaceDescriptionOption::IfTsResol(r) => Some(*r),
                            _ => None,
                        })
                        .unwrap_or(DEFAULT_TSRESOL);
                    links.push((idb.linktype.into(), tsresol));
                }
                Block::EnhancedPacket(epb) => {
                    let (link, tsresol) = links
                        .get(epb.interface_id as usize)
                        .copied()
                        .unwrap_or(UNKNOWN_INTERFACE);
                    frames.push(Frame {
                        link,
                        // pcap-file hands over the raw timestamp units as if they were nanoseconds.
                        timestamp_ns: units_to_ns(epb.timestamp.as_nanos(), tsresol),
                        original_len: epb.original_len,
                        data: epb.data.into_owned(),
                    })
                }
                Block::SimplePacket(spb) => frames.push(Frame {
                    link: links.first().copied().unwrap_or(UNKNOWN_INTERFACE).0,
                    timestamp_ns: 0,
                    original_len: spb.original_len,
                    data: spb.data.into_owned(),
                }),
                _ => {}
            }
        }
        Ok((frames, None))
    } else {
        Err(CaptureError::NotACapture {
            path: path.to_owned(),
            magic: u32::from_be_bytes(magic.to_le_bytes()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::units_to_ns;

    #[test]
    fn pcapng_timestamp_resolutions() {
        assert_eq!(units_to_ns(1_500_000, 6), 1_500_000_000);
        assert_eq!(units_to_ns(7, 9), 7);
        assert_eq!(units_to_ns(3_000, 12), 3);
        assert_eq!(units_to_ns(1 << 20, 0x80 | 20), 1_000_000_000);
    }
}
