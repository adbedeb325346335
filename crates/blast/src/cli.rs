//! The command line of `nvo-blast`: two subcommands, `send` and `recv`, checked by clap before
//! any socket is opened (a bad value is a usage error, exit status 2).

use std::net::SocketAddr;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};

use crate::sys::MAX_BATCH;

/// Largest UDP payload of one IPv4 datagram (65535 − 20 − 8).
pub const MAX_PAYLOAD: usize = 65_507;
/// Most source ports (flows) one sender uses.
pub const MAX_FLOWS: usize = 1024;

/// nvo-blast: a batched UDP packet-rate tool (sendmmsg/recvmmsg), because iperf3's UDP sender
/// is too slow to find where a data path stops keeping up.
#[derive(Debug, Parser)]
#[command(name = "nvo-blast", version, about, long_about = None)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// `send` or `recv`.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Send fixed-size UDP datagrams as fast as the kernel takes them, from FLOWS source ports.
    #[command(
        after_help = "Example:\n  nvo-blast send --dst 10.0.0.2:9000 --size 64 --seconds 5 --flows 4"
    )]
    Send(SendArgs),
    /// Count the datagrams that arrive and the rate they arrive at.
    #[command(after_help = "Example:\n  nvo-blast recv --bind 0.0.0.0:9000 --seconds 5 --json")]
    Recv(RecvArgs),
}

/// `nvo-blast send`.
#[derive(Debug, Clone, Args)]
pub struct SendArgs {
    /// Where to send (IPv4 or IPv6 address and port).
    #[arg(long, value_name = "IP:PORT")]
    pub dst: SocketAddr,
    /// Bytes of UDP payload per datagram (0 to 65507; above the path MTU the IP layer fragments).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(0..=MAX_PAYLOAD as i64))]
    pub size: u32,
    /// How long to send.
    #[arg(long, value_name = "S", value_parser = parse_seconds)]
    pub seconds: Duration,
    /// Datagrams per sendmmsg call (1 to 1024).
    #[arg(long, value_name = "N", default_value_t = 64, value_parser = clap::value_parser!(u32).range(1..=MAX_BATCH as i64))]
    pub batch: u32,
    /// Source ports to spread the datagrams over, one socket each, a batch at a time (1 to 1024):
    /// flows that tunnels can hash apart.
    #[arg(long, value_name = "K", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=MAX_FLOWS as i64))]
    pub flows: u32,
    /// Stop after this many datagrams even if time is left.
    #[arg(long, value_name = "N")]
    pub count: Option<u64>,
    /// Bytes every payload starts with, in hex (a tunnel header to send straight to a relay
    /// or a VTEP); instead of the "nvo-blast" mark. Longer than --size: refused.
    #[arg(long, value_name = "HEX", value_parser = parse_hex)]
    pub prefix: Option<HexBytes>,
    /// Print the report as one JSON object.
    #[arg(long)]
    pub json: bool,
}

/// `nvo-blast recv`.
#[derive(Debug, Clone, Args)]
pub struct RecvArgs {
    /// Address and port to receive on.
    #[arg(long, value_name = "IP:PORT")]
    pub bind: SocketAddr,
    /// Longest measurement: it starts at the first datagram, and also ends when none has come
    /// for --idle.
    #[arg(long, value_name = "S", value_parser = parse_seconds)]
    pub seconds: Duration,
    /// How long to wait for the first datagram before giving up (exit status 1).
    #[arg(long, value_name = "S", default_value = "10", value_parser = parse_seconds)]
    pub wait: Duration,
    /// The stream is over when nothing has arrived for this long.
    #[arg(long, value_name = "S", default_value = "0.5", value_parser = parse_seconds)]
    pub idle: Duration,
    /// Datagrams per recvmmsg call (1 to 1024).
    #[arg(long, value_name = "N", default_value_t = 64, value_parser = clap::value_parser!(u32).range(1..=MAX_BATCH as i64))]
    pub batch: u32,
    /// Socket receive buffer to ask for, in bytes (root gets it past net.core.rmem_max).
    #[arg(long, value_name = "BYTES", default_value_t = 4 << 20)]
    pub rcvbuf: usize,
    /// Print the report as one JSON object.
    #[arg(long)]
    pub json: bool,
}

/// A positive, finite number of seconds, fractions allowed (`0.5`), at most a day.
pub fn parse_seconds(text: &str) -> Result<Duration, String> {
    let secs: f64 = text
        .parse()
        .map_err(|_| format!("{text:?} is not a number of seconds"))?;
    if !(secs > 0.0 && secs <= 86_400.0) {
        return Err(format!(
            "{text} s is out of range: give 0 < seconds <= 86400"
        ));
    }
    Ok(Duration::from_secs_f64(secs))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Command, String> {
        Cli::try_parse_from(std::iter::once("nvo-blast").chain(args.iter().copied()))
            .map(|c| c.command)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn send_takes_a_prefix_in_hex() {
        let send = |prefix: &str| {
            parse(&[
                "send",
                "--dst",
                "10.0.0.2:9000",
                "--size",
                "64",
                "--seconds",
                "1",
                "--prefix",
                prefix,
            ])
        };
        let Command::Send(a) = send("01 07:40ff").unwrap() else {
            panic!("not send");
        };
        assert_eq!(a.prefix, Some(HexBytes(vec![1, 7, 0x40, 0xff])));
        assert!(send("0").is_err());
        assert!(send("zz").is_err());
    }

    #[test]
    fn send_takes_its_defaults() {
        let Command::Send(a) = parse(&[
            "send",
            "--dst",
            "10.0.0.2:9000",
            "--size",
            "64",
            "--seconds",
            "5",
        ])
        .unwrap() else {
            panic!("not send");
        };
        assert_eq!(a.dst, "10.0.0.2:9000".parse().unwrap());
        assert_eq!((a.size, a.batch, a.flows), (64, 64, 1));
        assert_eq!(a.seconds, Duration::from_secs(5));
        assert_eq!(a.count, None);
        assert!(!a.json);
    }

    #[test]
    fn send_takes_every_option() {
        let args = [
            "send",
            "--dst",
            "[fd10::2]:9",
            "--size",
            "8900",
            "--seconds",
            "0.25",
            "--batch",
            "1024",
            "--flows",
            "16",
            "--count",
            "10000",
            "--json",
        ];
        let Command::Send(a) = parse(&args).unwrap() else {
            panic!("not send");
        };
        assert!(a.dst.is_ipv6());
        assert_eq!((a.size, a.batch, a.flows), (8900, 1024, 16));
        assert_eq!(a.seconds, Duration::from_millis(250));
        assert_eq!(a.count, Some(10_000));
        assert!(a.json);
    }

    #[test]
    fn recv_takes_its_defaults() {
        let Command::Recv(a) =
            parse(&["recv", "--bind", "0.0.0.0:9000", "--seconds", "3", "--json"]).unwrap()
        else {
            panic!("not recv");
        };
        assert_eq!(a.bind.port(), 9000);
        assert_eq!(a.seconds, Duration::from_secs(3));
        assert_eq!(a.wait, Duration::from_secs(10));
        assert_eq!(a.idle, Duration::from_millis(500));
        assert_eq!((a.batch, a.rcvbuf), (64, 4 << 20));
        assert!(a.json);
    }

    #[test]
    fn out_of_range_values_are_refused_with_the_value() {
        let base = ["send", "--dst", "10.0.0.2:9000", "--seconds", "1"];
        let with = |extra: &[&str]| {
            let mut v = base.to_vec();
            v.extend_from_slice(extra);
            parse(&v).unwrap_err()
        };
        assert!(with(&["--size", "65508"]).contains("65508"));
        assert!(with(&["--size", "64", "--batch", "0"]).contains('0'));
        assert!(with(&["--size", "64", "--batch", "1025"]).contains("1025"));
        assert!(with(&["--size", "64", "--flows", "2000"]).contains("2000"));
        let e = parse(&[
            "send",
            "--dst",
            "10.0.0.2",
            "--size",
            "64",
            "--seconds",
            "1",
        ]);
        assert!(e.unwrap_err().contains("10.0.0.2"));
        let e = parse(&["recv", "--bind", "0.0.0.0:9", "--seconds", "-1"]);
        assert!(e.unwrap_err().contains("-1"));
    }

    #[test]
    fn required_options_are_required() {
        assert!(parse(&["send", "--dst", "10.0.0.2:9000", "--seconds", "1"])
            .unwrap_err()
            .contains("--size"));
        assert!(parse(&["recv", "--bind", "0.0.0.0:9"])
            .unwrap_err()
            .contains("--seconds"));
        assert!(parse(&[]).is_err());
    }

    #[test]
    fn seconds_must_be_positive_and_finite() {
        assert_eq!(parse_seconds("0.5").unwrap(), Duration::from_millis(500));
        for bad in ["0", "-2", "nan", "inf", "1e9", "five", ""] {
            assert!(parse_seconds(bad).is_err(), "{bad}");
        }
    }
}

/// Bytes given in hex on the command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HexBytes(pub Vec<u8>);

/// Hex digits (spaces and colons allowed between bytes) as bytes.
fn parse_hex(text: &str) -> Result<HexBytes, String> {
    let digits: String = text.chars().filter(|c| !matches!(c, ' ' | ':')).collect();
    if !digits.len().is_multiple_of(2) {
        return Err(format!("{text:?}: an odd number of hex digits"));
    }
    (0..digits.len())
        .step_by(2)
        .map(|i| {
            u8::from_str_radix(&digits[i..i + 2], 16)
                .map_err(|_| format!("{text:?}: not hex at {:?}", &digits[i..i + 2]))
        })
        .collect::<Result<Vec<u8>, String>>()
        .map(HexBytes)
}
