//! `nvo vport add|del|show`: the virtual ports per MAC of a shared port (VM-VP) — each VM's MAC
//! behind a hypervisor's uplink, the network its frames belong to, and its counters
//! (`/v1/ports/{port}/vports`). A shared port is added with `nvo port add PORT --shared`.

use clap::Subcommand;
use nvo_api::{Client, Port, Vport, VportSpec};
use serde_json::Value;

use super::api::{done, segment, show, vni_parser};
use super::{print_json, CliError, Format};
use crate::table::Table;

/// `nvo vport ...`
#[derive(Debug, Subcommand)]
pub enum VportCmd {
    /// Assign a VM's MAC on a shared port to a network: frames from the MAC (with the VLAN
    /// ID, if given) belong to the network, and frames to it leave the shared port (tagged
    /// if the virtual port is).
    #[command(after_help = "Example:\n  nvo port add hv0 --shared\n  \
                      nvo vport add hv0 02:00:00:00:01:01 --vni 100\n  \
                      nvo vport add hv0 02:00:00:00:01:03 --vni 200 --vlan 20\n\n\
                      Frames from a MAC no virtual port names are dropped (unknown_vport), \
                      unless the shared port has a default network (--default-vni) and the \
                      frame is untagged.")]
    Add {
        /// The shared port.
        port: String,
        /// The VM's MAC address.
        mac: String,
        /// The network its frames belong to.
        #[arg(long, value_parser = vni_parser())]
        vni: u32,
        /// The 802.1Q VLAN ID its frames carry on the shared port (1-4094); default untagged.
        #[arg(long, value_name = "VID", value_parser = clap::value_parser!(u16).range(1..=4094))]
        vlan: Option<u16>,
    },
    /// Remove a VM's virtual port (its MAC goes from its network's FDB).
    #[command(after_help = "Example:\n  nvo vport del hv0 02:00:00:00:01:01")]
    Del {
        /// The shared port.
        port: String,
        /// The VM's MAC address.
        mac: String,
    },
    /// Show the virtual ports of a shared port (or of every shared port) with their counters.
    #[command(
        visible_alias = "list",
        after_help = "Example:\n  nvo vport show hv0\n  nvo vport show\n  nvo -o json vport show hv0"
    )]
    Show {
        /// The shared port (default: every shared port).
        port: Option<String>,
    },
}

/// Runs `nvo vport ...`.
pub fn vport(client: &Client, format: Format, cmd: VportCmd) -> Result<(), CliError> {
    match cmd {
        VportCmd::Add {
            port,
            mac,
            vni,
            vlan,
        } => {
            let body = VportSpec { mac, vni, vlan };
            let answer: Value =
                client.post(&format!("/v1/ports/{}/vports", segment(&port)), &body)?;
            let name = answer["name"].as_str().unwrap_or_default().to_owned();
            let vlan = vlan.map_or_else(String::new, |v| format!(", vlan {v}"));
            done(
                format,
                answer,
                format!("virtual port {name}: network {vni}{vlan}"),
            )
        }
        VportCmd::Del { port, mac } => {
            client.delete(&format!(
                "/v1/ports/{}/vports/{}",
                segment(&port),
                segment(&mac)
            ))?;
            done(
                format,
                Value::Null,
                format!("virtual port {port}/{mac} deleted"),
            )
        }
        VportCmd::Show { port: Some(port) } => {
            let answer = client.get(&format!("/v1/ports/{}/vports", segment(&port)))?;
            show(format, answer, |v: &Vec<Vport>| table(v).to_string())
        }
        VportCmd::Show { port: None } => {
            let ports: Vec<Port> = client.get("/v1/ports")?;
            let mut all = Vec::new();
            for p in ports.iter().filter(|p| p.shared.is_some()) {
                let list: Vec<Vport> =
                    client.get(&format!("/v1/ports/{}/vports", segment(&p.name)))?;
                all.extend(list);
            }
            match format {
                Format::Json => print_json(&all),
                Format::Text => {
                    print!("{}", table(&all));
                    Ok(())
                }
            }
        }
    }
}

/// The virtual-port table: name, VLAN, network and counters.
pub fn table(vports: &[Vport]) -> Table {
    let mut t = Table::new(&[
        "PORT", "MAC", "VLAN", "VNI", "RX", "RX BYTES", "TX", "TX BYTES", "DROPS",
    ])
    .right(3)
    .right(4)
    .right(5)
    .right(6)
    .right(7)
    .right(8);
    for v in vports {
        t.row([
            v.port.clone(),
            v.mac.clone().unwrap_or_else(|| "(default)".to_owned()),
            v.vlan.map_or_else(|| "-".to_owned(), |v| v.to_string()),
            v.vni.to_string(),
            v.rx_frames.to_string(),
            v.rx_bytes.to_string(),
            v.tx_frames.to_string(),
            v.tx_bytes.to_string(),
            v.drops.to_string(),
        ]);
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_shows_the_default_and_tagged_virtual_ports() {
        let vp = |mac: Option<&str>, vlan, vni, rx| Vport {
            port: "hv0".into(),
            name: format!("hv0/{}", mac.unwrap_or("default")),
            mac: mac.map(str::to_owned),
            vni,
            vlan,
            qos: None,
            acl: None,
            rx_frames: rx,
            rx_bytes: rx * 100,
            tx_frames: 1,
            tx_bytes: 98,
            drops: 0,
        };
        let rows = [
            vp(Some("02:00:00:00:01:01"), None, 100, 3),
            vp(Some("02:00:00:00:01:03"), Some(20), 200, 12),
            vp(None, None, 300, 0),
        ];
        assert_eq!(
            table(&rows).to_string(),
            "PORT  MAC                VLAN  VNI  RX  RX BYTES  TX  TX BYTES  DROPS\n\
             hv0   02:00:00:00:01:01  -     100   3       300   1        98      0\n\
             hv0   02:00:00:00:01:03  20    200  12      1200   1        98      0\n\
             hv0   (default)          -     300   0         0   1        98      0\n"
        );
    }
}
