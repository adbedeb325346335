//! `nvo decode`: the tunnel layers of every packet in a capture, one line each or one JSON
//! document. The exit status is 0 when the whole file was read (malformed packets are reported,
//! not fatal) and 1 when it is not a capture or breaks off; frames before the damage are shown.

use std::path::PathBuf;
use std::process::ExitCode;

use serde::Serialize;

use crate::cmd::Format;
use crate::{capture, decode, render};

#[derive(Debug, clap::Args)]
pub struct DecodeArgs {
    /// The capture file.
    file: PathBuf,
    /// Also decode this UDP destination port as VXLAN (repeatable).
    #[arg(long = "vxlan-port", value_name = "PORT")]
    vxlan: Vec<u16>,
    /// Also decode this UDP destination port as VXLAN-GPE (repeatable).
    #[arg(long = "gpe-port", value_name = "PORT")]
    gpe: Vec<u16>,
    /// Also decode this UDP destination port as Geneve (repeatable).
    #[arg(long = "geneve-port", value_name = "PORT")]
    geneve: Vec<u16>,
    /// Also decode this UDP destination port as nvo's overlay header (repeatable).
    #[arg(long = "overlay-port", value_name = "PORT")]
    overlay: Vec<u16>,
    /// Also decode this TCP destination port as STT (repeatable).
    #[arg(long = "stt-port", value_name = "PORT")]
    stt: Vec<u16>,
}

#[derive(Debug, Serialize)]
struct PacketOut {
    index: usize,
    timestamp_ns: u128,
    len: u32,
    #[serde(flatten)]
    decoded: decode::Decoded,
}

#[derive(Debug, Serialize)]
struct Summary {
    packets: usize,
    tunnelled: usize,
    malformed: usize,
}

#[derive(Debug, Serialize)]
struct DecodeOut {
    file: PathBuf,
    packets: Vec<PacketOut>,
    summary: Summary,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

pub fn run(args: DecodeArgs, format: Format) -> ExitCode {
    let mut ports = decode::Ports::default();
    ports.vxlan.extend(args.vxlan);
    ports.vxlan_gpe.extend(args.gpe);
    ports.geneve.extend(args.geneve);
    ports.overlay.extend(args.overlay);
    ports.stt.extend(args.stt);

    let (frames, error) = capture::read_capture(&args.file);
    let packets: Vec<PacketOut> = frames
        .iter()
        .enumerate()
        .map(|(i, f)| PacketOut {
            index: i + 1,
            timestamp_ns: f.timestamp_ns,
            len: f.original_len,
            decoded: decode::decode(f.link, &f.data, &ports),
        })
        .collect();
    let summary = Summary {
        packets: packets.len(),
        tunnelled: packets.iter().filter(|p| p.decoded.is_tunnel()).count(),
        malformed: packets
            .iter()
            .filter(|p| p.decoded.malformed.is_some())
            .count(),
    };
    let status = if error.is_some() {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    };
    match format {
        Format::Text => {
            for p in &packets {
                println!("{}", render::packet_line(p.index, &p.decoded));
            }
            if !packets.is_empty() || error.is_none() {
                println!(
                    "{} packets, {} tunnelled, {} malformed",
                    summary.packets, summary.tunnelled, summary.malformed
                );
            }
            if let Some(e) = error {
                eprintln!("nvo decode: {e}");
            }
        }
        Format::Json => {
            let out = DecodeOut {
                file: args.file,
                packets,
                summary,
                error: error.map(|e| e.to_string()),
            };
            match serde_json::to_string_pretty(&out) {
                Ok(s) => println!("{s}"),
                Err(e) => {
                    eprintln!("nvo decode: cannot encode JSON: {e}");
                    return ExitCode::FAILURE;
                }
            }
        }
    }
    status
}
