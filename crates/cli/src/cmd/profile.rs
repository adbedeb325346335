//! `nvo profile list|show|add|del|keys|bind|unbind`: nvod's encapsulation profiles
//! (docs/design/encap.md) and the key bindings of keyed profiles.
//!
//! A profile is a tunnel protocol as data: the outer transport, the header template, where the
//! VNI, the receive key and the flow entropy sit. nvod ships the built-ins; `add` gives it a
//! user-defined one from a file, TOML or JSON by the file's extension, in the form of
//! `POST /v1/profiles` (`nvo_api::ProfileSpec`). The file is parsed and the profile checked
//! here (`ProfileSpec::to_profile`, the same rules nvod applies), so a mistake is reported with
//! the file's name before anything is sent.
//!
//! A keyed profile (vxlan-gpe-nsh: NSH service paths, keyed by SPI and SI) looks a received
//! packet up by its key rather than a VNI; `bind` says where a key leads, a local network or
//! a remote the packet is relayed to (`/v1/profiles/{name}/keys`). Keys are hex, checked and
//! written in one form (lowercase, no separators) here, so `unbind` names the key as nvod
//! lists it.

use std::net::IpAddr;
use std::path::{Path, PathBuf};

use clap::Subcommand;
use nvo_api::{Client, KeyBinding, ProfileInfo, ProfileSpec};
use nvo_encap::spec::SpecError;
use serde_json::Value;

use super::api::{done, segment, show, vni_parser};
use super::{view, CliError, Format};

/// The `profile add` help: a whole user-defined profile, every key explained.
const ADD_AFTER_HELP: &str = r#"Example:
  nvo profile add --file mytun.toml
  nvo network add 500 --encap mytun --flood 192.0.2.2

A user-defined profile in TOML (JSON takes the same keys), here an 8-byte header on UDP port
7777 that nvo does not ship: a flags byte that must have bit 0x08 set, a 24-bit VNI in bytes
4..7 and a 16-bit tag parameter in bytes 2..4:

  name = "mytun"                       # required, unique; networks name it with --encap
  udp_port = 7777                      # the outer transport: udp_port, or ip_protocol = 99
  template = "0800 0000 0000 0000"     # the header as sent, hex (spaces allowed); the VNI,
                                       # entropy and params are written over it
  vni = { offset = 4, len = 3 }        # where the VNI goes (big-endian, len 1 to 8 bytes)
  # key = { offset = 4, len = 3 }      # receive lookup key (default: the vni field)
  # entropy = { offset = 7, len = 1 }  # where per-flow entropy goes, if the header has room
  matches = [{ offset = 0, mask = "08", value = "08" }]   # must hold on receive
  # header_len = 8                     # default: the template's length; or variable:
                                       # { offset = 0, mask = 63, scale = 4, base = 8 }
  payload = "ethernet"                 # ethernet | ipv4 | ipv6 | nsh
  # payload_field = { offset = 3, len = 1, ethernet = 3, ipv4 = 1, ipv6 = 2 }
  params = [{ name = "tag", offset = 2, len = 2 }]        # --param tag=7 sets it per network
  # patches = [{ kind = "length", offset = 2, len = 2, adjust = 0 },
  #            { kind = "sequence", offset = 4, len = 4 }]
  # dont_learn = { offset = 1, mask = "40", value = "40" } # receiver must not learn

`nvo profile show vxlan` prints a built-in in this form: a starting point for a new one.
Profiles can also be given to nvod at start, as [[profile]] tables in its configuration file."#;

/// `nvo profile ...`
#[derive(Debug, Subcommand)]
pub enum ProfileCmd {
    /// List the encapsulation profiles: built-in and user-defined, with their transport,
    /// header length, payload and parameters.
    #[command(after_help = "Example:\n  nvo profile list\n  nvo -o json profile list")]
    List,
    /// Show one profile in full, in the TOML form `nvo profile add` reads.
    #[command(
        after_help = "Example:\n  nvo profile show vxlan-gbp\n  nvo -o json profile show geneve"
    )]
    Show {
        /// The profile's name.
        name: String,
    },
    /// Add a user-defined profile (a tunnel protocol nvo does not ship) from a TOML or JSON
    /// file; networks then use it with `nvo network add VNI --encap NAME`. nvod keeps it across
    /// restarts. Fails if the name is taken.
    #[command(after_help = ADD_AFTER_HELP)]
    Add {
        /// The profile, TOML (.toml) or JSON (.json).
        #[arg(long, value_name = "FILE")]
        file: PathBuf,
    },
    /// Delete a user-defined profile; refused for built-ins and profiles from nvod's
    /// configuration file, and while a network uses it.
    #[command(after_help = "Example:\n  nvo profile del mytun")]
    Del {
        /// The profile's name.
        name: String,
    },
    /// List the keys bound on a keyed profile (vxlan-gpe-nsh) and where each leads.
    #[command(after_help = "Example:\n  nvo profile keys vxlan-gpe-nsh")]
    Keys {
        /// The profile's name.
        name: String,
    },
    /// Bind a key of a keyed profile to a local network or a remote to relay to.
    ///
    /// Packets received with the key are delivered into a local network (--local VNI) or
    /// relayed, header kept but for its hop count, to a remote (--forward IP). Replaces the
    /// key's binding if it has one.
    ///
    /// For vxlan-gpe-nsh the key is the NSH service path: the SPI (3 bytes) then the service
    /// index (1 byte), in hex; a relayed packet's SI is decremented, and one whose SI runs out
    /// is dropped (drop reason hop_limit).
    #[command(after_help = BIND_AFTER_HELP)]
    #[command(group(clap::ArgGroup::new("target").required(true).args(["local", "forward"])))]
    Bind {
        /// The profile's name.
        name: String,
        /// The key, hex: 1 to 8 bytes, spaces or colons allowed between bytes.
        #[arg(value_parser = parse_key)]
        key: String,
        /// Deliver into the local network with this VNI.
        #[arg(long, value_name = "VNI", value_parser = vni_parser())]
        local: Option<u32>,
        /// Relay to this remote (underlay address).
        #[arg(long, value_name = "IP")]
        forward: Option<IpAddr>,
    },
    /// Remove a key's binding; packets with the key are then dropped.
    #[command(after_help = "Example:\n  nvo profile unbind vxlan-gpe-nsh 00000aff")]
    Unbind {
        /// The profile's name.
        name: String,
        /// The key, hex, as listed by `nvo profile keys`.
        #[arg(value_parser = parse_key)]
        key: String,
    },
}

/// The `profile bind` examples: service path 10 through two hosts, the first relaying (its SI
/// goes from 255 to 254 on the way), the second delivering.
const BIND_AFTER_HELP: &str = "Example:
  # on the first host: SPI 10, SI 255 is relayed to 192.0.2.3
  nvo profile bind vxlan-gpe-nsh 00000aff --forward 192.0.2.3
  # on 192.0.2.3: SPI 10, SI 254 is delivered into network 100
  nvo profile bind vxlan-gpe-nsh 00000afe --local 100
  nvo profile keys vxlan-gpe-nsh";

/// A key binding's key that is not 1 to 8 bytes of hex, as typed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("key {0:?} is not 1 to 8 bytes of hex (e.g. 00000aff: SPI 10, SI 255)")]
pub struct KeyError(pub String);

/// Parses a key: 1 to 8 bytes of hex, whitespace or colons allowed between the digits, as nvod
/// reads it; answers it lowercase without separators, the form nvod lists and `unbind` names.
pub fn parse_key(text: &str) -> Result<String, KeyError> {
    let digits: String = text
        .chars()
        .filter(|c| !c.is_whitespace() && *c != ':')
        .collect();
    let valid = !digits.is_empty()
        && digits.len().is_multiple_of(2)
        && digits.len() <= 16
        && digits.chars().all(|c| c.is_ascii_hexdigit());
    if !valid {
        return Err(KeyError(text.to_owned()));
    }
    Ok(digits.to_ascii_lowercase())
}

/// Runs `nvo profile ...`.
pub fn profile(client: &Client, format: Format, cmd: ProfileCmd) -> Result<(), CliError> {
    match cmd {
        ProfileCmd::List => show(
            format,
            client.get("/v1/profiles")?,
            |p: &Vec<ProfileInfo>| view::profiles(p).to_string(),
        ),
        ProfileCmd::Show { name } => show(
            format,
            client.get(&format!("/v1/profiles/{}", segment(&name)))?,
            view::profile,
        ),
        ProfileCmd::Add { file } => {
            let spec = read_spec(&file)?;
            let answer = client.post("/v1/profiles", &spec)?;
            show(format, answer, view::profile)
        }
        ProfileCmd::Del { name } => {
            client.delete(&format!("/v1/profiles/{}", segment(&name)))?;
            done(format, Value::Null, format!("deleted profile {name}"))
        }
        ProfileCmd::Keys { name } => {
            let answer = client.get(&format!("/v1/profiles/{}/keys", segment(&name)))?;
            show(format, answer, |k: &Vec<KeyBinding>| {
                view::keys(&name, k).to_string()
            })
        }
        ProfileCmd::Bind {
            name,
            key,
            local,
            forward,
        } => {
            let target = match (local, forward) {
                (Some(vni), _) => format!("local network {vni}"),
                (None, Some(ip)) => format!("forward {ip}"),
                (None, None) => String::new(),
            };
            let body = KeyBinding {
                key: key.clone(),
                local,
                forward,
            };
            let answer: Value =
                client.post(&format!("/v1/profiles/{}/keys", segment(&name)), &body)?;
            done(
                format,
                answer,
                format!("profile {name}: key {key} -> {target}"),
            )
        }
        ProfileCmd::Unbind { name, key } => {
            client.delete(&format!("/v1/profiles/{}/keys/{key}", segment(&name)))?;
            done(
                format,
                Value::Null,
                format!("profile {name}: key {key} unbound"),
            )
        }
    }
}

/// Why a profile file is not a profile; each message is on one line.
#[derive(Debug, thiserror::Error)]
pub enum SpecFileError {
    /// Not TOML of a profile's shape (boxed: the error is large).
    #[error("{}", one_line(.0))]
    Toml(Box<toml::de::Error>),
    /// Not JSON of a profile's shape.
    #[error("{}", one_line(.0))]
    Json(#[from] serde_json::Error),
    /// Neither `.toml` nor `.json`.
    #[error("extension {0:?} is neither .toml nor .json; name the file after its format")]
    Extension(String),
    /// A spec that does not make a profile.
    #[error("{}", one_line(.0))]
    Spec(#[from] SpecError),
}

/// A parser's message on one line, as `nvo` prints every error.
fn one_line(error: &dyn std::fmt::Display) -> String {
    error
        .to_string()
        .replace(['\r', '\n'], " ")
        .trim()
        .to_owned()
}

/// Reads a profile file, TOML or JSON by its extension, and checks the profile it describes.
pub fn read_spec(path: &Path) -> Result<ProfileSpec, CliError> {
    let text = std::fs::read_to_string(path).map_err(|source| CliError::Read {
        path: path.to_owned(),
        source,
    })?;
    let bad = |source: SpecFileError| CliError::File {
        path: path.to_owned(),
        source,
    };
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
    let spec: ProfileSpec = match ext.to_ascii_lowercase().as_str() {
        "toml" => toml::from_str(&text).map_err(|e| bad(SpecFileError::Toml(Box::new(e))))?,
        "json" => serde_json::from_str(&text).map_err(|e| bad(e.into()))?,
        other => return Err(bad(SpecFileError::Extension(other.to_owned()))),
    };
    spec.to_profile().map_err(|e| bad(e.into()))?;
    Ok(spec)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(name: &str, text: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("nvo-cli-profile-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path
    }

    /// The TOML lines of the `profile add` help, comments and indentation removed.
    fn help_example() -> String {
        ADD_AFTER_HELP
            .lines()
            .skip_while(|l| !l.trim_start().starts_with("name ="))
            .take_while(|l| !l.trim().is_empty())
            .map(|l| l.split('#').next().unwrap_or("").trim())
            .filter(|l| !l.is_empty())
            .collect::<Vec<_>>()
            .join("\n")
    }

    #[test]
    fn keys_are_hex_bytes_written_one_way() {
        assert_eq!(parse_key("00000AFF").unwrap(), "00000aff");
        assert_eq!(parse_key("00 00 0a ff").unwrap(), "00000aff");
        assert_eq!(parse_key("00:00:0a:ff").unwrap(), "00000aff");
        assert_eq!(parse_key("0102030405060708").unwrap().len(), 16);
        for bad in ["", "abc", "0g", "010203040506070809", " : "] {
            let e = parse_key(bad).unwrap_err().to_string();
            assert!(e.contains(&format!("{bad:?}")), "{bad}: {e}");
        }
    }

    #[test]
    fn the_help_example_is_a_valid_profile() {
        let spec = read_spec(&write("help.toml", &help_example())).unwrap();
        assert_eq!((spec.name.as_str(), spec.udp_port), ("mytun", Some(7777)));
        assert_eq!(spec.params.len(), 1);
    }

    #[test]
    fn toml_and_json_read_alike() {
        let toml = read_spec(&write("a.toml", &help_example())).unwrap();
        let json = serde_json::to_string(&toml).unwrap();
        assert_eq!(read_spec(&write("a.JSON", &json)).unwrap(), toml);
    }

    #[test]
    fn bad_files_name_the_file_and_the_fault() {
        let e = read_spec(&write("x.yaml", "name: x"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("x.yaml") && e.contains("\"yaml\""), "{e}");
        let e = read_spec(&write("b.toml", "name = \"b\"\nudp_port = 1\ncolour = 3\n"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("b.toml") && e.contains("colour"), "{e}");
        assert_eq!(e.lines().count(), 1, "{e}");
        let e = read_spec(&write("c.toml", "name = \"c\"\ntemplate = \"00\"\n"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("exactly one of udp_port and ip_protocol"), "{e}");
        let e = read_spec(&write(
            "d.toml",
            "name = \"d\"\nudp_port = 1\ntemplate = \"0g\"\n",
        ))
        .unwrap_err()
        .to_string();
        assert!(e.contains("\"0g\""), "{e}");
        let e = read_spec(Path::new("/nonexistent/p.toml"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("cannot read /nonexistent/p.toml"), "{e}");
    }
}
