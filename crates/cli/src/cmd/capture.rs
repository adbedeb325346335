//! `nvo capture`: pcapng of what nvod sees, written to a file or stdout.
//!
//! nvod makes the capture (it has the privileges; this command needs only the API socket) and
//! streams it as `GET /v1/capture` answers it (docs/capture.md): a pcapng section, one
//! interface per tapped interface, the frames, and at the end one statistics block per
//! interface. The stream is passed on block by block as it arrives (so `nvo capture … | tshark
//! -r -` shows frames live), and the statistics blocks are read on the way: at the end a line
//! on stderr says how many frames were captured and how many were dropped — by the kernel
//! (socket queue full) or by nvod because this client read too slowly. The command ends when
//! nvod ends the capture (--count, --duration), on Ctrl-C, or when the reader of stdout goes.

use std::fs::File;
use std::io::{self, BufRead, BufWriter, Read, Write};
use std::path::PathBuf;

use clap::Args;
use nvo_api::Client;
use pcap_file::pcapng::blocks::interface_statistics::{
    InterfaceStatisticsBlock, InterfaceStatisticsOption,
};
use pcap_file::pcapng::{Block, PcapNgParser};

use super::api::segment;
use super::sse::open_stream;
use super::CliError;

/// pcapng block types read on the way.
const SHB: u32 = 0x0A0D_0D0A;
const EPB: u32 = 6;
const ISB: u32 = 5;
/// Largest block accepted: a frame of nvod's largest snap length and its options.
const MAX_BLOCK: u32 = 300 * 1024;

/// Arguments of `nvo capture`.
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("target").required(true).args(["network", "port", "underlay"])))]
pub struct CaptureArgs {
    /// Capture a network's inner frames (each once, where it enters the network here: from a
    /// local port's tenant, or decapsulated from the underlay).
    #[arg(long, value_name = "VNI")]
    network: Option<u32>,
    /// Capture a port's interface, both directions.
    #[arg(long, value_name = "NAME")]
    port: Option<String>,
    /// Capture the underlay: the tunnel packets of nvod's profiles (outer headers included).
    #[arg(long)]
    underlay: bool,
    /// Stop after COUNT frames.
    #[arg(short = 'c', long, value_name = "COUNT", value_parser = clap::value_parser!(u64).range(1..))]
    count: Option<u64>,
    /// Stop after SECS seconds.
    #[arg(long, value_name = "SECS", value_parser = clap::value_parser!(u64).range(1..=86400))]
    duration: Option<u64>,
    /// Bytes kept of each frame (64 to 262144; default all).
    #[arg(short = 's', long, value_name = "BYTES", value_parser = clap::value_parser!(u32).range(64..=262_144))]
    snaplen: Option<u32>,
    /// Write the pcapng here; `-` (the default) is stdout.
    #[arg(short = 'w', long, value_name = "FILE", default_value = "-")]
    write: PathBuf,
    /// A filter in tcpdump's language (pcap-filter(7)), e.g. `icmp and host 10.0.0.2`; for
    /// --network it applies to the inner frames. Its words are joined with spaces; options
    /// may come before or after it.
    #[arg(value_name = "FILTER")]
    filter: Vec<String>,
}

/// What a capture stream held.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Summary {
    /// Frames written.
    pub frames: u64,
    /// Dropped by the kernel (summed over interfaces), when nvod said.
    pub kernel_dropped: u64,
    /// Dropped by nvod for a slow reader.
    pub queue_dropped: u64,
    /// Whether the statistics blocks arrived (the capture ended, not cut).
    pub complete: bool,
}

/// Runs `nvo capture`.
pub fn capture(client: &Client, args: CaptureArgs) -> Result<(), CliError> {
    let path = query_path(&args);
    let body = open_stream(client, &path, "application/x-pcapng")?;
    let to_stdout = args.write.as_os_str() == "-";
    let out: Box<dyn Write> = if to_stdout {
        Box::new(io::stdout().lock())
    } else {
        let file = File::create(&args.write).map_err(|source| CliError::Write {
            path: args.write.clone(),
            source,
        })?;
        Box::new(file)
    };
    let mut out = BufWriter::new(out);
    let summary = match copy_blocks(body, &mut out) {
        Ok(summary) => summary,
        // Whoever read stdout is gone (`| head`, tshark -c): done, quietly.
        Err(Copy::Write(e)) if e.kind() == io::ErrorKind::BrokenPipe => return Ok(()),
        Err(Copy::Write(source)) => {
            return Err(CliError::Write {
                path: args.write.clone(),
                source,
            })
        }
        Err(Copy::Read(e)) => return Err(CliError::Capture(e)),
    };
    let mut line = format!("nvo capture: {} frames captured", summary.frames);
    if summary.complete {
        line += &format!(
            ", {} dropped by the kernel, {} dropped by nvod (this client read too slowly)",
            summary.kernel_dropped, summary.queue_dropped
        );
    } else {
        line += " (the stream was cut before nvod's counts)";
    }
    eprintln!("{line}");
    Ok(())
}

/// The request's path and query.
fn query_path(args: &CaptureArgs) -> String {
    let mut query = Vec::new();
    if let Some(vni) = args.network {
        query.push(format!("network={vni}"));
    }
    if let Some(port) = &args.port {
        query.push(format!("port={}", segment(port)));
    }
    if args.underlay {
        query.push("underlay=true".to_owned());
    }
    if let Some(count) = args.count {
        query.push(format!("count={count}"));
    }
    if let Some(duration) = args.duration {
        query.push(format!("duration={duration}"));
    }
    if let Some(snaplen) = args.snaplen {
        query.push(format!("snaplen={snaplen}"));
    }
    let filter = args.filter.join(" ");
    if !filter.trim().is_empty() {
        query.push(format!("filter={}", segment(filter.trim())));
    }
    format!("/v1/capture?{}", query.join("&"))
}

/// Why copying stopped.
#[derive(Debug)]
enum Copy {
    Read(io::Error),
    Write(io::Error),
}

/// Copies pcapng blocks from `body` to `out` as they come, each flushed at once (a reader of
/// stdout sees frames live; a capture stopped by Ctrl-C leaves a file of whole blocks),
/// reading frame counts and statistics on the way.
fn copy_blocks(mut body: impl BufRead, out: &mut impl Write) -> Result<Summary, Copy> {
    let mut summary = Summary::default();
    let mut swapped = false;
    let mut section: Option<PcapNgParser> = None;
    let mut block = Vec::new();
    loop {
        let mut head = [0u8; 8];
        match read_full(&mut body, &mut head).map_err(Copy::Read)? {
            0 => break,
            8 => {}
            n => {
                return Err(Copy::Read(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    format!("stream cut inside a block header ({n} of 8 bytes)"),
                )))
            }
        }
        let kind = u32::from_ne_bytes([head[0], head[1], head[2], head[3]]);
        if kind == SHB {
            // The byte-order magic decides how the section's numbers read.
            let mut magic = [0u8; 4];
            read_exact(&mut body, &mut magic)?;
            swapped = u32::from_ne_bytes(magic) != 0x1A2B_3C4D;
            block.clear();
            block.extend_from_slice(&head);
            block.extend_from_slice(&magic);
        } else {
            block.clear();
            block.extend_from_slice(&head);
        }
        let total = word(&head[4..8], swapped);
        if !(12..=MAX_BLOCK).contains(&total) || !total.is_multiple_of(4) {
            return Err(Copy::Read(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("bad pcapng block length {total}"),
            )));
        }
        let have = block.len();
        block.resize(total as usize, 0);
        read_exact(&mut body, &mut block[have..])?;
        match word(&block[0..4], swapped) {
            SHB => section = Some(PcapNgParser::new(&block).map_err(bad_block)?.1),
            EPB => summary.frames += 1,
            ISB => {
                let parsed = match section.as_mut() {
                    Some(section) => section.next_block(&block).map_err(bad_block)?.1,
                    None => return Err(bad_block("statistics before the section header")),
                };
                if let Block::InterfaceStatistics(isb) = parsed {
                    summary.complete = true;
                    read_statistics(&isb, &mut summary);
                }
            }
            _ => {}
        }
        out.write_all(&block).map_err(Copy::Write)?;
        out.flush().map_err(Copy::Write)?;
    }
    out.flush().map_err(Copy::Write)?;
    Ok(summary)
}

/// A 32-bit number of the section's byte order.
fn word(b: &[u8], swapped: bool) -> u32 {
    let v = u32::from_ne_bytes([b[0], b[1], b[2], b[3]]);
    if swapped {
        v.swap_bytes()
    } else {
        v
    }
}

/// Adds a statistics block's `isb_ifdrop` (the kernel's) and `isb_osdrop` (nvod's) to the
/// summary.
fn read_statistics(isb: &InterfaceStatisticsBlock<'_>, summary: &mut Summary) {
    for option in &isb.options {
        match option {
            InterfaceStatisticsOption::IsbIfDrop(n) => summary.kernel_dropped += n,
            InterfaceStatisticsOption::IsbOsDrop(n) => summary.queue_dropped += n,
            _ => {}
        }
    }
}

fn bad_block(e: impl std::fmt::Display) -> Copy {
    Copy::Read(io::Error::new(
        io::ErrorKind::InvalidData,
        format!("bad pcapng block from nvod: {e}"),
    ))
}

/// Reads until `buf` is full or the stream ends; how many bytes came.
fn read_full(body: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match body.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

fn read_exact(body: &mut impl Read, buf: &mut [u8]) -> Result<(), Copy> {
    let got = read_full(body, buf).map_err(Copy::Read)?;
    if got < buf.len() {
        return Err(Copy::Read(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "stream cut inside a pcapng block",
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(kind: u32, body: &[u8]) -> Vec<u8> {
        let total = (12 + body.len()) as u32;
        let mut b = kind.to_ne_bytes().to_vec();
        b.extend_from_slice(&total.to_ne_bytes());
        b.extend_from_slice(body);
        b.extend_from_slice(&total.to_ne_bytes());
        b
    }

    fn stream() -> Vec<u8> {
        let mut shb = 0x1A2B_3C4Du32.to_ne_bytes().to_vec();
        shb.extend_from_slice(&[1, 0, 0, 0]);
        shb.extend_from_slice(&u64::MAX.to_ne_bytes());
        let mut s = block(SHB, &shb);
        s.extend(block(1, &[1, 0, 0, 0, 0, 0, 1, 0]));
        for _ in 0..3 {
            s.extend(block(EPB, &[0u8; 20]));
        }
        let mut isb = vec![0u8; 12];
        for (code, value) in [(4u16, 9u64), (5, 2), (7, 1), (8, 3)] {
            isb.extend_from_slice(&code.to_ne_bytes());
            isb.extend_from_slice(&8u16.to_ne_bytes());
            isb.extend_from_slice(&value.to_ne_bytes());
        }
        isb.extend_from_slice(&[0, 0, 0, 0]);
        s.extend(block(ISB, &isb));
        s
    }

    #[test]
    fn blocks_pass_unchanged_and_are_counted() {
        let input = stream();
        let mut out = Vec::new();
        let summary = copy_blocks(&input[..], &mut out).unwrap();
        assert_eq!(out, input);
        assert_eq!(
            summary,
            Summary {
                frames: 3,
                kernel_dropped: 2,
                queue_dropped: 1,
                complete: true
            }
        );
    }

    #[test]
    fn a_big_endian_stream_is_counted_too() {
        // Readers detect the byte order from the section header's magic (pcapng section
        // 4.1); on a little-endian host this section is the swapped one.
        let block = |kind: u32, body: &[u8]| {
            let total = (12 + body.len()) as u32;
            let mut b = kind.to_be_bytes().to_vec();
            b.extend_from_slice(&total.to_be_bytes());
            b.extend_from_slice(body);
            b.extend_from_slice(&total.to_be_bytes());
            b
        };
        let mut shb = 0x1A2B_3C4Du32.to_be_bytes().to_vec();
        shb.extend_from_slice(&[0, 1, 0, 0]);
        shb.extend_from_slice(&u64::MAX.to_be_bytes());
        let mut input = block(SHB, &shb);
        input.extend(block(1, &[0, 1, 0, 0, 0, 1, 0, 0]));
        input.extend(block(EPB, &[0u8; 20]));
        let mut isb = vec![0u8; 12];
        for (code, value) in [(5u16, 4u64), (7, 3)] {
            isb.extend_from_slice(&code.to_be_bytes());
            isb.extend_from_slice(&8u16.to_be_bytes());
            isb.extend_from_slice(&value.to_be_bytes());
        }
        isb.extend_from_slice(&[0, 0, 0, 0]);
        input.extend(block(ISB, &isb));
        let mut out = Vec::new();
        let summary = copy_blocks(&input[..], &mut out).unwrap();
        assert_eq!(out, input);
        assert_eq!(
            summary,
            Summary {
                frames: 1,
                kernel_dropped: 4,
                queue_dropped: 3,
                complete: true
            }
        );
    }

    #[test]
    fn a_cut_stream_is_an_error_and_a_stream_without_statistics_incomplete() {
        let input = stream();
        let mut out = Vec::new();
        assert!(copy_blocks(&input[..input.len() - 3], &mut out).is_err());
        let without: Vec<u8> = input[..input.len() - 76].to_vec();
        let summary = copy_blocks(&without[..], &mut Vec::new()).unwrap();
        assert!(!summary.complete);
        assert_eq!(summary.frames, 3);
    }

    #[test]
    fn filter_words_and_options_mix() {
        use clap::Parser;
        #[derive(Debug, Parser)]
        struct Cli {
            #[command(flatten)]
            args: CaptureArgs,
        }
        let cli = Cli::try_parse_from([
            "nvo",
            "--network",
            "100",
            "icmp",
            "and",
            "host",
            "10.0.0.2",
            "-c",
            "4",
        ])
        .unwrap();
        assert_eq!(
            query_path(&cli.args),
            "/v1/capture?network=100&count=4&filter=icmp%20and%20host%2010.0.0.2"
        );
        let cli =
            Cli::try_parse_from(["nvo", "--underlay", "--duration", "5", "-s", "96"]).unwrap();
        assert_eq!(
            query_path(&cli.args),
            "/v1/capture?underlay=true&duration=5&snaplen=96"
        );
        // One target, exactly.
        assert!(Cli::try_parse_from(["nvo", "icmp"]).is_err());
        assert!(Cli::try_parse_from(["nvo", "--underlay", "--port", "a"]).is_err());
        assert!(Cli::try_parse_from(["nvo", "--underlay", "-c", "0"]).is_err());
    }
}
