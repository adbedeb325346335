use std::collections::BTreeMap;

use nvo_api::{BgpSummary, Counters, MessageCounts, NeighborState, SessionState};

use super::*;

fn map(pairs: &[(&str, u64)]) -> BTreeMap<String, u64> {
    pairs.iter().map(|&(k, v)| (k.to_owned(), v)).collect()
}

fn neighbor() -> NeighborState {
    NeighborState {
        address: "192.0.2.250".parse().unwrap(),
        asn: 65000,
        description: None,
        state: SessionState::Established,
        router_id: None,
        state_s: 12,
        established: 1,
        hold_time_s: Some(90),
        peer_restart_s: None,
        received: 4,
        stale: 0,
        sent: 2,
        messages_in: MessageCounts {
            update: 3,
            ..MessageCounts::default()
        },
        messages_out: MessageCounts::default(),
        treat_as_withdraw: 0,
        attributes_discarded: 0,
        ignored_routes: 0,
        last_error: None,
    }
}

fn snapshot() -> Snapshot {
    Snapshot {
        version: "0.1.0".into(),
        datapath: "ebpf".into(),
        counters: Counters {
            drops: map(&[
                ("unknown_vni", 5),
                ("hairpin", 0),
                ("a_reason_added_later", 2),
            ]),
            networks: [(100, map(&[("rx_port_frames", 9), ("a_new_counter", 1)]))].into(),
            ports: [("c\"1".to_owned(), map(&[("rx_bytes", 1500), ("drops", 1)]))].into(),
            underlay: map(&[("tx_packets", 7), ("tx_bytes", 700)]),
            stt: map(&[
                ("segments", 3),
                ("in_progress", 1),
                ("bytes_buffered", 9000),
                ("tx_frames_kernel", 11),
                ("tx_frames_software", 2),
            ]),
            overlay: map(&[("relayed", 0)]),
            remotes: Default::default(),
        },
        tables: vec![Table {
            name: "networks",
            entries: 1,
            limit: 4096,
        }],
        networks: vec![NetworkTables {
            vni: 100,
            profile: "vxlan".into(),
            tables: vec![Table {
                name: "learned_fdb",
                entries: 2,
                limit: 1024,
            }],
        }],
        ports: [("c\"1".to_owned(), 100)].into(),
        bgp: Some(BgpSummary {
            config: None,
            neighbors: vec![neighbor()],
            routes_local: 1,
            routes_received: 4,
            routes_installed: 4,
            duplicate_macs: 0,
            routes_dropped: 0,
            routes_refused: 0,
            listening: Vec::new(),
            connections_refused: 3,
            connections_ttl_refused: 0,
        }),
        stt_limit_bytes: 16 << 20,
        monitor_lost: crate::monitor::Lost {
            listener: 6,
            kernel: 2,
            rate: 9,
            ..Default::default()
        },
        cluster: Some(ClusterMetrics {
            connected: true,
            revision: 42,
            skipped: 2,
            invalid_total: 3,
            resyncs_total: 1,
            hosts: 3,
        }),
        worker_packets: Vec::new(),
        qos: vec![Policer {
            name: "silver".into(),
            passed_frames: 10,
            passed_bytes: 15_000,
            dropped_frames: 2,
            dropped_bytes: 3_000,
        }],
        meters: vec![Policer {
            name: "7".into(),
            passed_frames: 4,
            ..Policer::default()
        }],
    }
}

/// (name, type) of every TYPE line.
fn types(text: &str) -> Vec<(String, String)> {
    text.lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .map(|l| {
            let (name, kind) = l.split_once(' ').unwrap();
            (name.to_owned(), kind.to_owned())
        })
        .collect()
}

#[test]
fn every_family_has_one_type_and_counters_end_in_total() {
    let text = render(&snapshot()).unwrap();
    let types = types(&text);
    let mut names: Vec<&str> = types.iter().map(|(n, _)| n.as_str()).collect();
    names.sort_unstable();
    let before = names.len();
    names.dedup();
    assert_eq!(names.len(), before, "a family typed twice:\n{text}");
    for (name, kind) in &types {
        assert_eq!(
            kind == "counter",
            name.ends_with("_total"),
            "{name} is a {kind}"
        );
    }
    // Each sample belongs to the family typed last before it.
    let mut current = String::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            current = rest.split(' ').next().unwrap().to_owned();
        } else if !line.starts_with('#') {
            let name = line.split(['{', ' ']).next().unwrap();
            assert_eq!(name, current, "{line}");
        }
    }
}

#[test]
fn the_required_series_are_there() {
    let text = render(&snapshot()).unwrap();
    for want in [
        "nvo_build_info{version=\"0.1.0\"} 1\n",
        "nvo_datapath_info{datapath=\"ebpf\"} 1\n",
        "nvo_drops_total{reason=\"unknown_vni\"} 5\n",
        // A reason the table gains later shows up by itself.
        "nvo_drops_total{reason=\"a_reason_added_later\"} 2\n",
        "nvo_network_rx_port_frames_total{vni=\"100\"} 9\n",
        "nvo_network_a_new_counter_total{vni=\"100\"} 1\n",
        "nvo_port_rx_bytes_total{port=\"c\\\"1\"} 1500\n",
        "nvo_underlay_tx_bytes_total 700\n",
        "nvo_stt_reassembly_segments_total 3\n",
        "nvo_stt_reassembly_frames_in_progress 1\n",
        "nvo_stt_reassembly_buffered_bytes 9000\n",
        // STT transmit's counters, from the same map, under their own prefix.
        "nvo_stt_tx_frames_kernel_total 11\n",
        "nvo_stt_tx_frames_software_total 2\n",
        "nvo_table_entries{table=\"networks\"} 1\n",
        "nvo_table_limit{table=\"networks\"} 4096\n",
        "nvo_network_table_entries{vni=\"100\",table=\"learned_fdb\"} 2\n",
        "nvo_network_table_limit{vni=\"100\",table=\"learned_fdb\"} 1024\n",
        "nvo_network_info{vni=\"100\",profile=\"vxlan\"} 1\n",
        "nvo_profile_networks{profile=\"vxlan\"} 1\n",
        "nvo_bgp_session_state{neighbor=\"192.0.2.250\",state=\"established\"} 1\n",
        "nvo_bgp_session_state{neighbor=\"192.0.2.250\",state=\"idle\"} 0\n",
        "nvo_bgp_messages_received_total{neighbor=\"192.0.2.250\",type=\"update\"} 3\n",
        "nvo_bgp_prefixes_received{neighbor=\"192.0.2.250\"} 4\n",
        "nvo_bgp_connections_refused_total{reason=\"not_neighbor\"} 3\n",
        "nvo_monitor_events_lost_total{stage=\"listener\"} 6\n",
        "nvo_monitor_events_lost_total{stage=\"kernel\"} 2\n",
        "nvo_monitor_events_lost_total{stage=\"datapath\"} 0\n",
        "nvo_monitor_events_lost_total{stage=\"rate\"} 9\n",
        "# TYPE nvo_stt_reassembly_frames_in_progress gauge\n",
        "nvo_cluster_connected 1\n",
        "nvo_cluster_revision 42\n",
        "nvo_cluster_objects_skipped 2\n",
        "nvo_cluster_invalid_objects_total 3\n",
        "nvo_cluster_resyncs_total 1\n",
        "nvo_cluster_hosts 3\n",
        "# TYPE nvo_cluster_invalid_objects_total counter\n",
        "# TYPE nvo_cluster_connected gauge\n",
        "# HELP nvo_network_a_new_counter_total The network counter a_new_counter",
    ] {
        assert!(text.contains(want), "{want:?} missing from\n{text}");
    }
}

#[test]
fn workers_gauge_and_per_worker_packets() {
    let snap = Snapshot {
        worker_packets: vec![12, 30],
        ..snapshot()
    };
    let text = render(&snap).unwrap();
    assert!(text.contains("nvo_datapath_workers 2\n"), "{text}");
    assert!(
        text.contains("nvo_datapath_worker_packets_total{worker=\"0\"} 12\n")
            && text.contains("nvo_datapath_worker_packets_total{worker=\"1\"} 30\n"),
        "{text}"
    );
    let old = render(&Snapshot::default()).unwrap();
    assert!(old.contains("nvo_datapath_workers 1\n"), "{old}");
}

#[test]
fn no_bgp_no_bgp_families() {
    let snap = Snapshot {
        bgp: None,
        ..snapshot()
    };
    let text = render(&snap).unwrap();
    assert!(!text.contains("nvo_bgp_"), "{text}");
    let empty = render(&Snapshot::default()).unwrap();
    assert!(empty.contains("nvo_build_info"), "{empty}");
}

#[test]
fn cluster_families_only_in_cluster_mode() {
    let off = Snapshot {
        cluster: None,
        ..snapshot()
    };
    let text = render(&off).unwrap();
    assert!(!text.contains("nvo_cluster_"), "{text}");
    let down = Snapshot {
        cluster: Some(ClusterMetrics::default()),
        ..snapshot()
    };
    let text = render(&down).unwrap();
    assert!(text.contains("nvo_cluster_connected 0\n"), "{text}");
}

#[test]
fn qos_profiles_and_meters_have_their_counters() {
    let text = render(&snapshot()).unwrap();
    for line in [
        "nvo_qos_conformed_frames_total{profile=\"silver\"} 10",
        "nvo_qos_conformed_bytes_total{profile=\"silver\"} 15000",
        "nvo_qos_policed_frames_total{profile=\"silver\"} 2",
        "nvo_qos_policed_bytes_total{profile=\"silver\"} 3000",
        "nvo_meter_passed_frames_total{meter=\"7\"} 4",
        "nvo_meter_dropped_frames_total{meter=\"7\"} 0",
    ] {
        assert!(text.lines().any(|l| l == line), "{line} missing in\n{text}");
    }
    // No profile, no meter: no series (an exposition leaves out families without any).
    let empty = render(&Snapshot {
        qos: Vec::new(),
        meters: Vec::new(),
        ..snapshot()
    })
    .unwrap();
    assert!(!empty.contains("nvo_meter_") && !empty.contains("nvo_qos_"));
}
