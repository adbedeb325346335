//! `nvo bgp` / `nvo evpn`: what the command lines turn into, what is refused and how, and the
//! text views.

use clap::Parser;
use nvo_api::{MessageCounts, NeighborState, SessionState};

use super::*;
use crate::{Cli, Command};

fn parse(args: &[&str]) -> Cli {
    Cli::try_parse_from(std::iter::once("nvo").chain(args.iter().copied())).unwrap()
}

fn refuse(args: &[&str]) -> String {
    Cli::try_parse_from(std::iter::once("nvo").chain(args.iter().copied()))
        .unwrap_err()
        .to_string()
}

fn set_args(args: &[&str]) -> BgpSetArgs {
    let mut all = vec!["bgp", "set"];
    all.extend_from_slice(args);
    match parse(&all).command {
        Command::Bgp(BgpCmd::Set(a)) => a,
        other => panic!("{other:?}"),
    }
}

fn neighbor(addr: &str) -> NeighborSpec {
    NeighborSpec {
        address: addr.parse().unwrap(),
        asn: None,
        passive: None,
        port: None,
        description: None,
        password: None,
        password_set: None,
        ttl_security: None,
    }
}

fn config() -> BgpConfig {
    BgpConfig {
        asn: 65000,
        router_id: Ipv4Addr::new(192, 0, 2, 1),
        listen: None,
        listen_addresses: None,
        port: None,
        hold_time_s: None,
        connect_retry_s: None,
        graceful_restart_s: None,
        next_hop: None,
        dup_moves: None,
        dup_window_s: None,
        neighbors: vec![neighbor("192.0.2.254")],
        vnis: Vec::new(),
    }
}

#[test]
fn neighbors_take_their_options_after_commas() {
    assert_eq!(parse_neighbor("192.0.2.254"), Ok(neighbor("192.0.2.254")));
    let n = parse_neighbor("fd00::fe,asn=65001,passive,port=1179,description=rr east").unwrap();
    assert_eq!(
        n,
        NeighborSpec {
            asn: Some(65001),
            passive: Some(true),
            port: Some(1179),
            description: Some("rr east".into()),
            ..neighbor("fd00::fe")
        }
    );
}

#[test]
fn a_bad_neighbor_names_its_bad_part() {
    for (bad, want) in [
        (
            "192.0.2.x",
            "\"192.0.2.x\" is not an IP address; a neighbor is ADDR[,asn=N]",
        ),
        (
            "192.0.2.1,asn=abc",
            "AS number \"abc\" is not 1 to 4294967295",
        ),
        ("192.0.2.1,asn=0", "AS number \"0\" is not 1 to 4294967295"),
        ("192.0.2.1,asn", "asn needs a value, asn=..."),
        ("192.0.2.1,port=70000", "port \"70000\" is not 1 to 65535"),
        (
            "192.0.2.1,passive=yes",
            "passive takes no value (got passive=yes)",
        ),
        ("192.0.2.1,asn=1,asn=2", "asn given twice"),
        (
            "192.0.2.1,md5=secret",
            "unknown option \"md5\"; a neighbor is ADDR",
        ),
        ("192.0.2.1,", "empty option (a stray comma?)"),
        ("192.0.2.1:179", "\"192.0.2.1:179\" is not an IP address"),
    ] {
        let e = parse_neighbor(bad).unwrap_err().to_string();
        assert!(e.contains(want), "{bad}: {e}");
    }
    // clap quotes the whole value and the option, then our reason.
    let e = refuse(&[
        "bgp",
        "set",
        "--asn",
        "65000",
        "--router-id",
        "192.0.2.1",
        "--neighbor",
        "192.0.2.9,asn=x",
    ]);
    assert!(
        e.contains("'192.0.2.9,asn=x'") && e.contains("--neighbor"),
        "{e}"
    );
    assert!(e.contains("AS number \"x\""), "{e}");
}

#[test]
fn vni_settings_take_rd_rts_and_flags() {
    let v = parse_vni_spec(
        "100,rd=192.0.2.1:100,rt=65000:100,import-rt=65000:1,export-rt=4200000000:7,no-advertise,no-arp-suppression",
    )
    .unwrap();
    assert_eq!(
        v,
        EvpnVniSpec {
            vni: 100,
            advertise: Some(false),
            rd: Some("192.0.2.1:100".into()),
            import_rt: Some(vec!["65000:100".into(), "65000:1".into()]),
            export_rt: Some(vec!["65000:100".into(), "4200000000:7".into()]),
            arp_suppression: Some(false),
        }
    );
    let plain = parse_vni_spec("16777215").unwrap();
    assert_eq!(
        (plain.vni, plain.import_rt, plain.rd),
        (16_777_215, None, None)
    );
    // Numbers are written canonically.
    assert_eq!(
        parse_vni_spec("7,rt=065000:007").unwrap().import_rt,
        Some(vec!["65000:7".into()])
    );
    for (bad, want) in [
        ("0", "\"0\" is not a VNI (1 to 16777215)"),
        ("16777216,rt=1:1", "\"16777216\" is not a VNI"),
        ("100,rd=65000", "rd \"65000\" is not ASN:N or IPv4:N"),
        ("100,rd=1:2,rd=1:3", "rd given twice"),
        (
            "100,rt=abc:1",
            "rt \"abc:1\": \"abc\" is neither an AS number nor an IPv4 address",
        ),
        (
            "100,import-rt=65000:x",
            "import-rt \"65000:x\": \"x\" is not a number",
        ),
        (
            "100,rt=192.0.2.1:70000",
            "after an IPv4 address the number is 0 to 65535",
        ),
        (
            "100,export-rt=4200000000:70000",
            "after a 4-octet AS number (over 65535)",
        ),
        ("100,rt", "rt needs a value"),
        ("100,no-advertise=1", "no-advertise takes no value"),
        (
            "100,suppress",
            "unknown option \"suppress\"; a network's settings are VNI[,rd=RD]",
        ),
    ] {
        let e = parse_vni_spec(bad).unwrap_err().to_string();
        assert!(e.contains(want), "{bad}: {e}");
    }
}

#[test]
fn scalars_are_checked_with_their_ranges() {
    assert_eq!(parse_asn("4294967295"), Ok(u32::MAX));
    assert_eq!(parse_hold_time("0"), Ok(0));
    assert_eq!(parse_hold_time("3"), Ok(3));
    assert!(parse_hold_time("2")
        .unwrap_err()
        .to_string()
        .contains("0 (no keepalives) or 3 to 65535"));
    assert!(parse_router_id("0.0.0.0")
        .unwrap_err()
        .to_string()
        .contains("nonzero"));
    assert!(parse_router_id("fd00::1")
        .unwrap_err()
        .to_string()
        .contains("not an IPv4 address"));
    assert!(parse_port("0")
        .unwrap_err()
        .to_string()
        .contains("1 to 65535"));
}

#[test]
fn bgp_set_builds_the_whole_config() {
    let c = set_args(&[
        "--asn",
        "65001",
        "--router-id",
        "192.0.2.1",
        "--neighbor",
        "192.0.2.254,asn=65000",
        "--neighbor",
        "fd00::fe,passive",
        "--no-listen",
        "--port",
        "1179",
        "--hold-time",
        "30",
        "--connect-retry",
        "2",
        "--graceful-restart",
        "0",
        "--next-hop",
        "198.51.100.1",
        "--dup-moves",
        "3",
        "--dup-window",
        "60",
        "--vni",
        "100,rt=65000:100",
    ])
    .config()
    .unwrap();
    assert_eq!(
        serde_json::to_value(&c).unwrap(),
        serde_json::json!({
            "asn": 65001, "router_id": "192.0.2.1", "listen": false, "port": 1179,
            "hold_time_s": 30, "connect_retry_s": 2, "graceful_restart_s": 0,
            "next_hop": "198.51.100.1", "dup_moves": 3, "dup_window_s": 60,
            "neighbors": [{"address": "192.0.2.254", "asn": 65000},
                          {"address": "fd00::fe", "passive": true}],
            "vnis": [{"vni": 100, "import_rt": ["65000:100"], "export_rt": ["65000:100"]}],
        })
    );
    // Only what was given is sent: nvod fills in the defaults.
    let c = set_args(&["--asn", "65000", "--router-id", "192.0.2.1"])
        .config()
        .unwrap();
    assert_eq!(
        serde_json::to_value(&c).unwrap(),
        serde_json::json!({"asn": 65000, "router_id": "192.0.2.1", "neighbors": []})
    );
    // The later of --listen / --no-listen wins.
    let c = set_args(&[
        "--asn",
        "1",
        "--router-id",
        "10.0.0.1",
        "--no-listen",
        "--listen",
    ]);
    assert_eq!(c.config().unwrap().listen, Some(true));
}

#[test]
fn bgp_set_refuses_what_cannot_be_meant() {
    let e = set_args(&[
        "--asn",
        "1",
        "--router-id",
        "10.0.0.1",
        "--neighbor",
        "10.0.0.9",
        "--neighbor",
        "10.0.0.9,passive",
    ])
    .config()
    .unwrap_err();
    assert_eq!(e.to_string(), "neighbor 10.0.0.9 given twice");
    let e = set_args(&[
        "--asn",
        "1",
        "--router-id",
        "10.0.0.1",
        "--vni",
        "5",
        "--vni",
        "5,no-advertise",
    ])
    .config()
    .unwrap_err();
    assert_eq!(e.to_string(), "--vni 5 given twice");
    for (args, want) in [
        (&["--router-id", "10.0.0.1"][..], "--asn"),
        (&["--asn", "1"][..], "--router-id"),
        (
            &["--asn", "1", "--router-id", "10.0.0.1", "--hold-time", "1"][..],
            "hold time \"1\"",
        ),
        (
            &[
                "--asn",
                "1",
                "--router-id",
                "10.0.0.1",
                "--graceful-restart",
                "4096",
            ][..],
            "4096",
        ),
        (
            &[
                "--asn",
                "1",
                "--router-id",
                "10.0.0.1",
                "--connect-retry",
                "0",
            ][..],
            "0",
        ),
    ] {
        let mut all = vec!["bgp", "set"];
        all.extend_from_slice(args);
        let e = refuse(&all);
        assert!(e.contains(want), "{args:?}: {e}");
    }
}

#[test]
fn neighbor_and_evpn_command_lines() {
    match parse(&[
        "bgp",
        "neighbor",
        "add",
        "fd00::fe",
        "--asn",
        "65000",
        "--passive",
    ])
    .command
    {
        Command::Bgp(BgpCmd::Neighbor(NeighborCmd::Add {
            address,
            asn,
            passive,
            port,
            ..
        })) => {
            assert_eq!(
                (address.to_string(), asn, passive, port),
                ("fd00::fe".into(), Some(65000), true, None)
            );
        }
        other => panic!("{other:?}"),
    }
    match parse(&["evpn", "routes", "--vni", "100", "--type", "2"]).command {
        Command::Evpn(EvpnCmd::Routes { vni, route_type }) => {
            assert_eq!(
                routes_path(vni, route_type),
                "/v1/evpn/routes?vni=100&type=2"
            );
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(routes_path(None, Some(3)), "/v1/evpn/routes?type=3");
    assert_eq!(routes_path(None, None), "/v1/evpn/routes");
    assert!(refuse(&["evpn", "routes", "--type", "1"]).contains("--type"));
    assert!(refuse(&["evpn", "routes", "--vni", "0"]).contains("--vni"));
}

#[test]
fn neighbor_edits_refuse_what_does_not_fit() {
    let mut c = config();
    add_neighbor(&mut c, neighbor("fd00::fe")).unwrap();
    assert_eq!(c.neighbors.len(), 2);
    let e = add_neighbor(&mut c, neighbor("fd00::fe"))
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "bgp already has neighbor fd00::fe; to change it: nvo bgp neighbor del fd00::fe, then add it"
    );
    del_neighbor(&mut c, "192.0.2.254".parse().unwrap()).unwrap();
    assert_eq!(c.neighbors, [neighbor("fd00::fe")]);
    let e = del_neighbor(&mut c, "192.0.2.9".parse().unwrap())
        .unwrap_err()
        .to_string();
    assert_eq!(e, "bgp has no neighbor 192.0.2.9; its neighbors: fd00::fe");
    del_neighbor(&mut c, "fd00::fe".parse().unwrap()).unwrap();
    let e = del_neighbor(&mut c, "fd00::fe".parse().unwrap())
        .unwrap_err()
        .to_string();
    assert!(e.ends_with("its neighbors: -"), "{e}");
}

#[test]
fn up_down_reads_like_frr() {
    assert_eq!(up_down(0), "00:00:00");
    assert_eq!(up_down(3723), "01:02:03");
    assert_eq!(up_down(86_399), "23:59:59");
    assert_eq!(up_down(86_400 + 2 * 3600 + 3 * 60 + 4), "1d02h03m");
    assert_eq!(up_down(2 * 604_800 + 3 * 86_400 + 4 * 3600), "02w3d04h");
    assert_eq!(up_down(365 * 86_400 + 604_800 + 86_400), "01y01w1d");
}

fn state(addr: &str, state: SessionState) -> NeighborState {
    NeighborState {
        address: addr.parse().unwrap(),
        asn: 65000,
        description: None,
        state,
        router_id: None,
        state_s: 0,
        established: 0,
        hold_time_s: None,
        peer_restart_s: None,
        received: 0,
        stale: 0,
        sent: 0,
        messages_in: MessageCounts::default(),
        messages_out: MessageCounts::default(),
        treat_as_withdraw: 0,
        attributes_discarded: 0,
        ignored_routes: 0,
        last_error: None,
    }
}

fn summary() -> BgpSummary {
    let up = NeighborState {
        state_s: 3723,
        received: 12,
        stale: 3,
        sent: 4,
        messages_in: MessageCounts {
            open: 1,
            update: 5,
            keepalive: 100,
            ..Default::default()
        },
        messages_out: MessageCounts {
            open: 1,
            update: 2,
            keepalive: 99,
            ..Default::default()
        },
        ..state("192.0.2.254", SessionState::Established)
    };
    let down = NeighborState {
        asn: 65001,
        state_s: 90_000,
        last_error: Some("connect: connection refused".into()),
        ..state("fd00::fe", SessionState::Active)
    };
    BgpSummary {
        config: Some(config()),
        neighbors: vec![up, down],
        routes_local: 4,
        routes_received: 12,
        routes_installed: 9,
        duplicate_macs: 1,
        routes_dropped: 0,
        routes_refused: 0,
        listening: vec!["192.0.2.1:179".parse().unwrap()],
        connections_refused: 0,
        connections_ttl_refused: 0,
    }
}

#[test]
fn summary_has_a_header_and_a_row_per_neighbor() {
    let mut s = summary();
    assert_eq!(
        summary_view(&s),
        "BGP router identifier 192.0.2.1, local AS 65000\n\
         EVPN routes: 4 local, 12 received, 9 installed; 1 duplicate MACs\n\
         Listening on 192.0.2.1:179\n\
         \n\
         NEIGHBOR        AS  STATE         UP/DOWN  RECEIVED  SENT  MSG_IN  MSG_OUT  LAST_ERROR\n\
         192.0.2.254  65000  Established  01:02:03    12 (3)     4     106      102  -\n\
         fd00::fe     65001  Active       1d01h00m         0     0       0        0  connect: connection refused\n"
    );
    // A description adds its column, before the last error.
    s.neighbors[0].description = Some("rr1".into());
    let text = summary_view(&s);
    assert!(
        text.contains("MSG_OUT  DESCRIPTION  LAST_ERROR\n"),
        "{text}"
    );
    assert!(text.contains("102  rr1          -\n"), "{text}");
    assert!(text.contains("0  -            connect"), "{text}");
    // Routes lost to a full table or refused by the data path show on the header line.
    s.routes_dropped = 3;
    s.routes_refused = 2;
    let text = summary_view(&s);
    assert!(
        text.contains("1 duplicate MACs; 3 dropped (table full); 2 refused by the data path\n"),
        "{text}"
    );
    s.config = None;
    assert!(summary_view(&s).starts_with("bgp is not configured; `nvo bgp set"));
}

#[test]
fn config_shows_as_toml_under_bgp() {
    let mut c = config();
    c.neighbors[0].asn = Some(65001);
    c.vnis.push(EvpnVniSpec {
        vni: 100,
        advertise: None,
        rd: None,
        import_rt: Some(vec!["65000:100".into()]),
        export_rt: None,
        arp_suppression: Some(false),
    });
    let text = config_view(Some(&c));
    assert!(text.starts_with("# bgp configuration in force"), "{text}");
    assert!(
        text.contains("[bgp]\nasn = 65000\nrouter_id = \"192.0.2.1\"\n"),
        "{text}"
    );
    assert!(
        text.contains("[[bgp.neighbors]]\naddress = \"192.0.2.254\"\nasn = 65001\n"),
        "{text}"
    );
    assert!(
        text.contains(
            "[[bgp.vnis]]\nvni = 100\nimport_rt = [\"65000:100\"]\narp_suppression = false\n"
        ),
        "{text}"
    );
    assert!(config_view(None).contains("not configured"));
}

#[test]
fn routes_show_flags_and_dashes() {
    let routes: Vec<EvpnRoute> = serde_json::from_value(serde_json::json!([
        {"type": 2, "rd": "192.0.2.9:100", "vni": 100, "mac": "02:00:00:00:00:09",
         "ip": "10.0.0.9", "vtep": "192.0.2.9", "source": "192.0.2.254", "seq": 2,
         "rt": ["65000:100"], "best": true, "stale": true, "sticky": true},
        {"type": 2, "rd": "192.0.2.1:100", "vni": 100, "mac": "02:00:00:00:00:01",
         "vtep": "192.0.2.1", "source": "local", "seq": 0, "rt": ["65000:100", "65000:1"],
         "best": false, "duplicate": true},
        {"type": 3, "rd": "192.0.2.9:100", "vni": 100, "vtep": "192.0.2.9",
         "source": "192.0.2.254", "seq": 0, "rt": [], "best": true}
    ]))
    .unwrap();
    assert_eq!(
        routes_view(&routes),
        "Flags: * best, S stale, D duplicate MAC, st sticky MAC\n\
         TYPE  VNI  MAC                IP        VTEP       SEQ  SOURCE       RD             RT                 FLAGS\n\
         2     100  02:00:00:00:00:09  10.0.0.9  192.0.2.9    2  192.0.2.254  192.0.2.9:100  65000:100          *,S,st\n\
         2     100  02:00:00:00:00:01  -         192.0.2.1    0  local        192.0.2.1:100  65000:100,65000:1  D\n\
         3     100  -                  -         192.0.2.9    0  192.0.2.254  192.0.2.9:100  -                  *\n"
    );
}

#[test]
fn neighbors_take_a_password_file_and_ttl_security() {
    let dir = std::env::temp_dir().join(format!("nvo-bgp-pw-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("pw");
    std::fs::write(&file, "s3cret\n").unwrap();
    let n = parse_neighbor(&format!(
        "192.0.2.254,password-file={},ttl-security",
        file.display()
    ))
    .unwrap();
    assert_eq!(n.password, Some(nvo_api::Password("s3cret".into())));
    assert_eq!(n.ttl_security, Some(true));
    std::fs::write(&file, "\n").unwrap();
    let e = parse_neighbor(&format!("192.0.2.254,password-file={}", file.display()))
        .unwrap_err()
        .to_string();
    assert!(e.contains("0 bytes"), "{e}");
    let e = parse_neighbor("192.0.2.254,password-file=/nonexistent/pw")
        .unwrap_err()
        .to_string();
    assert!(e.contains("/nonexistent/pw"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_summary_says_where_it_listens_and_what_it_refused() {
    let mut s = summary();
    s.listening.clear();
    s.connections_refused = 3;
    s.connections_ttl_refused = 1;
    let text = summary_view(&s);
    assert!(
        text.contains(
            "Listening on nothing (outgoing connections only); 3 connections refused (not a \
             neighbor); 1 refused (ttl security: ttl below 255)\n"
        ),
        "{text}"
    );
}

#[test]
fn listen_addresses_are_sent_only_when_given() {
    let c = set_args(&["--asn", "65000", "--router-id", "192.0.2.1"])
        .config()
        .unwrap();
    assert_eq!(c.listen_addresses, None);
    let c = set_args(&[
        "--asn",
        "65000",
        "--router-id",
        "192.0.2.1",
        "--listen-address",
        "192.0.2.1",
        "--listen-address",
        "2001:db8::1",
    ])
    .config()
    .unwrap();
    assert_eq!(
        c.listen_addresses,
        Some(vec![
            "192.0.2.1".parse().unwrap(),
            "2001:db8::1".parse().unwrap()
        ])
    );
}
