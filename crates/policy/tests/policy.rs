//! The issue's policy scenario at the table level, and decisions against a naive reference.
// Test setup on constant and generated input; a failure there should stop the test loudly.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Instant;

use nvo_policy::{Conntrack, Direction, FlowKey, Labels, Policy, PolicyError, PolicySpec, Reason};
use proptest::prelude::*;

/// One tenant's policy, as a controller would write it (JSON; the CLI reads YAML or JSON).
const TENANT: &str = r#"{
  "groups": [
    {"id": 100, "name": "web", "selector": "app=web"},
    {"id": 200, "name": "db", "selector": "app=db"}
  ],
  "rules": [
    {"name": "web-to-db", "from": ["web"], "to": ["db"], "action": "allow",
     "protocol": "tcp", "ports": ["5432"]}
  ]
}"#;

fn policy(json: &str) -> Policy {
    Policy::new(serde_json::from_str::<PolicySpec>(json).unwrap()).unwrap()
}

fn labels(app: &str) -> Labels {
    Labels::new([("app", app)]).unwrap()
}

#[test]
fn web_reaches_db_on_5432_only_and_tenants_do_not_meet() {
    // Three tenants with the same group names and label values; each has its own policy.
    let tenants: Vec<Policy> = (0..3).map(|_| policy(TENANT)).collect();
    for p in &tenants {
        let (web, db) = (p.identity(&labels("web")), p.identity(&labels("db")));
        assert_eq!((web, db), (100, 200));
        assert_eq!(p.identity(&labels("cache")), 0, "no group: unlabelled");
        let allowed = p.decide(web, db, 6, 5432);
        assert!(
            allowed.allow && allowed.reason == Reason::Rule(0),
            "{allowed:?}"
        );
        for (proto, port) in [(6, 22), (17, 5432), (1, 0)] {
            let d = p.decide(web, db, proto, port);
            assert!(
                !d.allow && d.reason == Reason::DefaultDeny,
                "{proto}/{port}: {d:?}"
            );
        }
        // db is selected; web is not: anything to web passes.
        assert!(p.decide(db, web, 6, 80).allow);
        assert_eq!(p.decide(0, web, 17, 53).reason, Reason::DefaultAllow);
        assert!(
            !p.decide(0, db, 6, 5432).allow,
            "an unlabelled source is not web"
        );
    }
    // A tenant whose web group has another ID: decisions use each network's own IDs.
    let other = policy(&TENANT.replace("\"id\": 100", "\"id\": 7"));
    assert_eq!(other.identity(&labels("web")), 7);
    assert!(
        !other.decide(100, 200, 6, 5432).allow,
        "tenant A's group 100 means nothing here"
    );
}

#[test]
fn established_flows_survive_a_policy_change_and_replies_pass() {
    let mut ct = Conntrack::new(16);
    let now = Instant::now();
    let key = FlowKey {
        network: 100,
        proto: 6,
        src: "10.0.0.1".parse().unwrap(),
        dst: "10.0.0.2".parse().unwrap(),
        sport: 40000,
        dport: 5432,
    };
    let p = policy(TENANT);
    assert!(p.decide(100, 200, 6, 5432).allow);
    ct.insert(key, now).unwrap();
    // The policy now denies it: a new flow is denied, the tracked one goes on both ways.
    let deny = policy(&TENANT.replace("\"allow\"", "\"deny\""));
    assert!(!deny.decide(100, 200, 6, 5432).allow);
    assert_eq!(ct.lookup(&key, false, now), Some(Direction::Original));
    assert_eq!(
        ct.lookup(&key.reversed(), false, now),
        Some(Direction::Reply)
    );
    let new = FlowKey {
        sport: 40001,
        ..key
    };
    assert_eq!(ct.lookup(&new, false, now), None);
}

#[test]
fn bad_policies_are_refused_with_what_is_wrong() {
    let refused = |json: &str| Policy::new(serde_json::from_str(json).unwrap()).unwrap_err();
    let g = |id: u16, name: &str| {
        format!(r#"{{"id": {id}, "name": "{name}", "selector": "app={name}"}}"#)
    };
    assert_eq!(
        refused(&format!(r#"{{"groups": [{}]}}"#, g(0, "a"))),
        PolicyError::GroupId("a".into())
    );
    assert_eq!(
        refused(&format!(r#"{{"groups": [{}, {}]}}"#, g(1, "a"), g(1, "b"))),
        PolicyError::GroupId("b".into())
    );
    assert_eq!(
        refused(&format!(r#"{{"groups": [{}]}}"#, g(1, "any"))),
        PolicyError::GroupName("any".into())
    );
    let rule = |body: &str| {
        format!(
            r#"{{"groups": [{}], "rules": [{{"name": "r", "action": "allow", {body}}}]}}"#,
            g(1, "a")
        )
    };
    assert!(matches!(
        refused(&rule(r#""to": ["b"]"#)),
        PolicyError::UnknownGroup { .. }
    ));
    assert!(matches!(
        refused(&rule(r#""protocol": "gre""#)),
        PolicyError::Protocol { .. }
    ));
    assert!(matches!(
        refused(&rule(r#""protocol": "icmp", "ports": ["1"]"#)),
        PolicyError::Port { .. }
    ));
    assert!(matches!(
        refused(&rule(r#""protocol": "tcp", "ports": ["90-80"]"#)),
        PolicyError::Port { .. }
    ));
    assert!(matches!(
        refused(r#"{"groups": [{"id": 1, "name": "a", "selector": "app in ()"}]}"#),
        PolicyError::Label { .. }
    ));
    assert!(serde_json::from_str::<PolicySpec>(r#"{"groups": [], "rulez": []}"#).is_err());
}

/// A rule in the reference: (from, to: None = any), allow, protocol, port range.
type RefRule = (
    Option<u16>,
    Option<u16>,
    bool,
    Option<u8>,
    Option<(u16, u16)>,
);

fn reference(rules: &[RefRule], from: u16, to: u16, proto: u8, port: u16) -> (bool, Reason) {
    let hit = |r: &RefRule| {
        r.0.is_none_or(|f| f == from)
            && r.1.is_none_or(|t| t == to)
            && r.3.is_none_or(|p| p == proto)
            && r.4.is_none_or(|(lo, hi)| lo <= port && port <= hi)
    };
    for allow in [false, true] {
        for (i, r) in rules.iter().enumerate() {
            if r.2 == allow && hit(r) {
                return (allow, Reason::Rule(i));
            }
        }
    }
    let selected = rules.iter().any(|r| r.1.is_none_or(|t| t == to));
    if selected {
        (false, Reason::DefaultDeny)
    } else {
        (true, Reason::DefaultAllow)
    }
}

fn rule() -> impl Strategy<Value = RefRule> {
    (
        proptest::option::of(1u16..4),
        proptest::option::of(1u16..4),
        any::<bool>(),
        proptest::option::of(prop::sample::select(vec![6u8, 17])),
        proptest::option::of((1u16..20, 0u16..10)),
    )
        .prop_map(|(f, t, a, p, ports)| {
            (
                f,
                t,
                a,
                p,
                ports.filter(|_| p.is_some()).map(|(lo, n)| (lo, lo + n)),
            )
        })
}

proptest! {
    #[test]
    fn decisions_match_the_reference(
        rules in proptest::collection::vec(rule(), 0..12),
        packets in proptest::collection::vec((0u16..4, 1u16..4, prop::sample::select(vec![6u8, 17, 1]), 0u16..32), 1..32),
    ) {
        let name = |g: u16| format!("g{g}");
        let spec = PolicySpec {
            groups: (1..4)
                .map(|g| nvo_policy::GroupSpec { id: g, name: name(g), selector: format!("g={g}") })
                .collect(),
            rules: rules
                .iter()
                .enumerate()
                .map(|(i, r)| nvo_policy::RuleSpec {
                    name: format!("r{i}"),
                    from: r.0.map(name).into_iter().collect(),
                    to: r.1.map(name).into_iter().collect(),
                    action: if r.2 { nvo_policy::Action::Allow } else { nvo_policy::Action::Deny },
                    protocol: r.3.map(|p| if p == 6 { "tcp".into() } else { "udp".into() }),
                    ports: r.4.map(|(lo, hi)| format!("{lo}-{hi}")).into_iter().collect(),
                })
                .collect(),
        };
        let p = Policy::new(spec).unwrap();
        for (from, to, proto, port) in packets {
            let d = p.decide(from, to, proto, port);
            prop_assert_eq!((d.allow, d.reason), reference(&rules, from, to, proto, port));
        }
    }
}
