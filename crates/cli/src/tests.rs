//! Argument parsing: what each command line turns into, what clap refuses, and that every
//! subcommand's help carries an example.

use clap::{CommandFactory, Parser};

use super::*;

fn parse(args: &[&str]) -> Cli {
    Cli::try_parse_from(std::iter::once("nvo").chain(args.iter().copied())).unwrap()
}

fn refuse(args: &[&str]) -> String {
    Cli::try_parse_from(std::iter::once("nvo").chain(args.iter().copied()))
        .unwrap_err()
        .to_string()
}

#[test]
fn clap_definition_is_consistent() {
    Cli::command().debug_assert();
}

#[test]
fn every_subcommand_explains_itself_with_an_example() {
    fn walk(cmd: &clap::Command, path: &str) {
        let path = format!("{path} {}", cmd.get_name());
        let subs: Vec<_> = cmd
            .get_subcommands()
            .filter(|s| s.get_name() != "help")
            .collect();
        if subs.is_empty() {
            let help = cmd
                .get_after_help()
                .map(|h| h.to_string())
                .unwrap_or_default();
            assert!(
                help.contains("Example"),
                "`{path}` has no example in its help"
            );
            assert!(cmd.get_about().is_some(), "`{path}` has no description");
        }
        for s in subs {
            walk(s, &path);
        }
    }
    walk(&Cli::command(), "");
}

#[test]
fn learning_flags_become_the_two_settings() {
    let body = |extra: &[&str]| {
        let mut argv = vec!["network", "add", "100"];
        argv.extend_from_slice(extra);
        let Command::Network(NetworkCmd::Add(a)) = parse(&argv).command else {
            panic!("not network add")
        };
        serde_json::to_value(cmd::api::network_spec(a)).unwrap()
    };
    assert_eq!(
        body(&["--no-tunnel-learning"]),
        serde_json::json!({"vni": 100, "learn_tunnels": false})
    );
    assert_eq!(
        body(&["--no-port-learning", "--tunnel-learning"]),
        serde_json::json!({"vni": 100, "learn_ports": false, "learn_tunnels": true})
    );
    assert_eq!(
        body(&["--no-learning"]),
        serde_json::json!({"vni": 100, "learning": false})
    );
    for conflict in [
        ["--no-tunnel-learning", "--tunnel-learning"],
        ["--no-learning", "--tunnel-learning"],
    ] {
        let mut argv = vec!["network", "add", "100"];
        argv.extend_from_slice(&conflict);
        assert!(
            refuse(&argv).contains("cannot be used with"),
            "{conflict:?}"
        );
    }
}

#[test]
fn network_add_takes_every_option() {
    let cli = parse(&[
        "network",
        "add",
        "100",
        "--mtu",
        "1400",
        "--no-learning",
        "--multicast",
        "239.1.1.1",
        "--max-learned",
        "10",
        "--ageing",
        "60",
        "--flood",
        "192.0.2.2",
        "--flood",
        "fd00::2",
    ]);
    let Command::Network(NetworkCmd::Add(a)) = cli.command else {
        panic!("{:?}", cli.command)
    };
    assert_eq!(
        (a.vni, a.mtu, a.no_learning, a.max_learned, a.ageing),
        (100, Some(1400), true, Some(10), Some(60))
    );
    assert_eq!(a.multicast, Some("239.1.1.1".parse().unwrap()));
    assert_eq!(a.flood.len(), 2);
}

#[test]
fn network_add_takes_a_profile_and_its_parameters() {
    let cli = parse(&[
        "network",
        "add",
        "200",
        "--encap",
        "vxlan-gbp",
        "--param",
        "group=100",
        "--param",
        "x=0x10",
    ]);
    let Command::Network(NetworkCmd::Add(a)) = cli.command else {
        panic!("{:?}", cli.command)
    };
    assert_eq!(a.encap.as_deref(), Some("vxlan-gbp"));
    assert_eq!(a.params, [("group".to_owned(), 100), ("x".to_owned(), 16)]);
    let e = refuse(&["network", "add", "1", "--param", "group"]);
    assert!(e.contains("\"group\" is not KEY=VALUE"), "{e}");
}

#[test]
fn profile_commands() {
    let Command::Profile(ProfileCmd::Add { file }) =
        parse(&["profile", "add", "--file", "p.toml"]).command
    else {
        panic!()
    };
    assert_eq!(file, PathBuf::from("p.toml"));
    assert!(refuse(&["profile", "add", "p.toml"]).contains("--file"));
    assert!(refuse(&["profile", "show"]).contains("NAME"));
    let help = Cli::command()
        .find_subcommand_mut("profile")
        .and_then(|p| p.find_subcommand_mut("add"))
        .map(|a| a.render_long_help().to_string())
        .unwrap();
    assert!(
        help.contains("udp_port = 7777") && help.contains("[[profile]]"),
        "{help}"
    );
    let help = Cli::command()
        .find_subcommand_mut("network")
        .and_then(|n| n.find_subcommand_mut("add"))
        .map(|a| a.render_long_help().to_string())
        .unwrap();
    assert!(
        help.contains("nvo profile list") && help.contains("--encap"),
        "{help}"
    );
}

#[test]
fn vnis_outside_24_bits_are_refused() {
    assert!(refuse(&["network", "show", "0"]).contains("0 is not in 1..=16777215"));
    assert!(refuse(&["fdb", "show", "16777216"]).contains("16777216"));
    assert!(refuse(&["port", "add", "c-x", "--vni", "-1"]).contains("-1"));
    let Command::Network(NetworkCmd::Show { vni }) =
        parse(&["network", "show", "16777215"]).command
    else {
        panic!()
    };
    assert_eq!(vni, 16_777_215);
}

#[test]
fn fdb_add_needs_exactly_one_destination_and_a_real_mac() {
    let cli = parse(&[
        "fdb",
        "add",
        "100",
        "02:00:00:00:00:02",
        "--remote",
        "192.0.2.2",
    ]);
    let Command::Fdb(FdbCmd::Add {
        vni,
        mac,
        remote,
        port,
        ..
    }) = cli.command
    else {
        panic!()
    };
    assert_eq!(
        (vni, mac.to_string(), port),
        (100, "02:00:00:00:00:02".to_owned(), None)
    );
    assert_eq!(remote, Some("192.0.2.2".parse().unwrap()));
    assert!(refuse(&["fdb", "add", "100", "02:00:00:00:00:02"]).contains("--remote"));
    assert!(refuse(&[
        "fdb",
        "add",
        "100",
        "02:00:00:00:00:02",
        "--remote",
        "1.2.3.4",
        "--port",
        "c"
    ])
    .contains("cannot be used with"));
    assert!(refuse(&["fdb", "del", "100", "02:00:00"]).contains("invalid mac address"));
    let Command::Fdb(FdbCmd::Flush { all, .. }) = parse(&["fdb", "flush", "100", "--all"]).command
    else {
        panic!()
    };
    assert!(all);
}

#[test]
fn ports_flood_and_counters() {
    let Command::Port(PortCmd::Add {
        name,
        vni,
        kind,
        no_large_frames,
        tso,
        ..
    }) = parse(&["port", "add", "c-red1", "--vni", "100"]).command
    else {
        panic!()
    };
    assert!(!no_large_frames && tso.is_none());
    let Command::Port(PortCmd::Add {
        no_large_frames,
        tso,
        gro,
        ..
    }) = parse(&[
        "port",
        "add",
        "c-red1",
        "--vni",
        "100",
        "--no-large-frames",
        "--tso",
        "off",
        "--gro",
        "on",
    ])
    .command
    else {
        panic!()
    };
    assert!(no_large_frames);
    assert_eq!(tso, Some(cmd::api::Switch::Off));
    assert_eq!(gro, Some(cmd::api::Switch::On));
    assert_eq!(
        (name.as_str(), vni, kind),
        ("c-red1", Some(100), cmd::api::KindArg::Veth)
    );
    let Command::Port(PortCmd::Add {
        vni,
        trunk,
        ethertype,
        ..
    }) = parse(&[
        "port",
        "add",
        "eth1",
        "--trunk",
        "10=100, 20=200",
        "--ethertype",
        "0x88a8",
    ])
    .command
    else {
        panic!()
    };
    assert_eq!(vni, None);
    assert_eq!(trunk, Some(nvo_api::TrunkMap(vec![(10, 100), (20, 200)])));
    assert_eq!(ethertype, Some(nvo_api::Ethertype(0x88a8)));
    for bad in [
        &["port", "add", "eth1", "--trunk", "10=100", "--vni", "100"][..],
        &["port", "add", "eth1", "--trunk", "10"],
        &["port", "add", "eth1", "--vni", "1", "--ethertype", "0x88a8"],
        &["port", "add", "eth1", "--access-vlan", "10"],
    ] {
        assert!(
            Cli::try_parse_from(std::iter::once("nvo").chain(bad.iter().copied())).is_err(),
            "{bad:?}"
        );
    }
    let Command::Port(PortCmd::Add { kind, .. }) =
        parse(&["port", "add", "t0", "--vni", "1", "--kind", "tap"]).command
    else {
        panic!()
    };
    assert_eq!(kind, cmd::api::KindArg::Tap);
    assert!(refuse(&["port", "add", "t0", "--vni", "1", "--kind", "vhost"]).contains("vhost"));
    assert!(refuse(&["flood", "add", "100", "not-an-ip"]).contains("not-an-ip"));
    let Command::Counters(c) = parse(&["counters", "--all"]).command else {
        panic!()
    };
    assert!(c.all);
}

#[test]
fn route_commands_take_an_ipv4_prefix() {
    let Command::Route(RouteCmd::Add {
        vni,
        prefix,
        remote,
    }) = parse(&[
        "route",
        "add",
        "100",
        "10.1.0.0/16",
        "--remote",
        "192.0.2.2",
    ])
    .command
    else {
        panic!()
    };
    assert_eq!((vni, prefix.to_string()), (100, "10.1.0.0/16".to_owned()));
    assert_eq!(remote, "192.0.2.2".parse::<std::net::IpAddr>().unwrap());
    let Command::Route(RouteCmd::Del { prefix, .. }) =
        parse(&["route", "del", "100", "10.0.0.2/32"]).command
    else {
        panic!()
    };
    assert_eq!(
        (prefix.addr.to_string(), prefix.len),
        ("10.0.0.2".into(), 32)
    );
    assert!(matches!(
        parse(&["route", "list", "7"]).command,
        Command::Route(RouteCmd::List { vni: 7 })
    ));
    assert!(refuse(&["route", "add", "100", "10.1.0.0/16"]).contains("--remote"));
    assert!(refuse(&[
        "route",
        "add",
        "100",
        "10.1.2.0/16",
        "--remote",
        "192.0.2.2"
    ])
    .contains("host bits set; use 10.1.0.0/16"));
    assert!(refuse(&["route", "del", "100", "fd00::1/64"]).contains("host bits set; use fd00::/64"));
    assert!(refuse(&["route", "list", "0"]).contains("0 is not in 1..=16777215"));
}

#[test]
fn key_bindings_need_exactly_one_target() {
    let Command::Profile(ProfileCmd::Bind {
        name,
        key,
        local,
        forward,
    }) = parse(&[
        "profile",
        "bind",
        "vxlan-gpe-nsh",
        "00:00:0A:FF",
        "--forward",
        "192.0.2.3",
    ])
    .command
    else {
        panic!()
    };
    assert_eq!(
        (name.as_str(), key.as_str(), local),
        ("vxlan-gpe-nsh", "00000aff", None)
    );
    assert_eq!(forward, Some("192.0.2.3".parse().unwrap()));
    let Command::Profile(ProfileCmd::Bind { local, .. }) = parse(&[
        "profile",
        "bind",
        "vxlan-gpe-nsh",
        "00000afe",
        "--local",
        "100",
    ])
    .command
    else {
        panic!()
    };
    assert_eq!(local, Some(100));
    assert!(refuse(&["profile", "bind", "p", "00000aff"]).contains("--local"));
    assert!(refuse(&[
        "profile",
        "bind",
        "p",
        "00000aff",
        "--local",
        "1",
        "--forward",
        "192.0.2.3"
    ])
    .contains("cannot be used with"));
    assert!(refuse(&["profile", "bind", "p", "0aff0", "--local", "1"]).contains("not 1 to 8 bytes"));
    assert!(refuse(&["profile", "bind", "p", "01", "--local", "0"]).contains("0 is not in"));
    let Command::Profile(ProfileCmd::Unbind { key, .. }) =
        parse(&["profile", "unbind", "vxlan-gpe-nsh", "00 00 0a ff"]).command
    else {
        panic!()
    };
    assert_eq!(key, "00000aff");
    assert!(matches!(
        parse(&["profile", "keys", "vxlan-gpe-nsh"]).command,
        Command::Profile(ProfileCmd::Keys { .. })
    ));
}

#[test]
fn global_options_go_anywhere() {
    let cli = parse(&["network", "list", "-o", "json", "--socket", "/tmp/x.sock"]);
    assert_eq!(cli.output, Format::Json);
    assert_eq!(cli.socket, PathBuf::from("/tmp/x.sock"));
    if std::env::var_os("NVO_SOCKET").is_none() {
        assert_eq!(
            parse(&["node"]).socket,
            PathBuf::from(nvo_api::DEFAULT_SOCKET)
        );
    }
}

#[test]
fn lab_exec_passes_the_command_through_with_or_without_dashes() {
    for args in [
        &["lab", "exec", "red1", "--", "ping", "-c", "3", "10.0.0.2"][..],
        &["lab", "exec", "red1", "ping", "-c", "3", "10.0.0.2"][..],
    ] {
        let Command::Lab(LabCmd::Exec { lab, node, command }) = parse(args).command else {
            panic!()
        };
        assert_eq!((lab, node.as_str()), (None, "red1"));
        assert_eq!(command, ["ping", "-c", "3", "10.0.0.2"]);
    }
    let Command::Lab(LabCmd::Exec { lab, command, .. }) = parse(&[
        "lab", "exec", "--lab", "demo", "h1", "--", "nvo", "-o", "json", "node",
    ])
    .command
    else {
        panic!()
    };
    assert_eq!(lab.as_deref(), Some("demo"));
    assert_eq!(command, ["nvo", "-o", "json", "node"]);
    assert!(refuse(&["lab", "exec", "red1"]).contains("CMD"));
}

#[test]
fn lab_up_and_down() {
    let Command::Lab(LabCmd::Up {
        file,
        nvod,
        keep_on_failure,
        datapath,
    }) = parse(&[
        "lab",
        "up",
        "examples/lab/demo.yaml",
        "--nvod",
        "/x/nvod",
        "--keep-on-failure",
        "--datapath",
        "ebpf",
    ])
    .command
    else {
        panic!()
    };
    assert_eq!(datapath.as_deref(), Some("ebpf"));
    assert_eq!(file, PathBuf::from("examples/lab/demo.yaml"));
    assert_eq!(nvod, Some(PathBuf::from("/x/nvod")));
    assert!(keep_on_failure);
    let help = Cli::command()
        .find_subcommand_mut("lab")
        .and_then(|l| l.find_subcommand_mut("up"))
        .map(|u| u.render_long_help().to_string())
        .unwrap();
    assert!(
        help.contains("flood: auto")
            && help.contains("vxlan_port: 4789")
            && help.contains("encap: vxlan")
            && help.contains("profiles:"),
        "{help}"
    );
    assert!(refuse(&["lab", "down"]).contains("NAME|FILE"));
}
