//! The classifier against a deliberately naive reference (STYLE.md: WireGuard's allowedips
//! selftest): for random rule sets — installed, some removed again — and random packets, the
//! rule tuple-space search finds is the one a scan of every rule finds: highest priority,
//! then first installed.
// Test setup on generated input; a failure there should stop the test loudly.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Instant;

use nvo_flow::{Classifier, Field, Key, Match, Rule, RuleId};
use proptest::prelude::*;

/// Values from small ranges, so that rules and packets collide often.
fn small_key() -> impl Strategy<Value = Key> {
    (0u8..3, 0u8..2, 0u8..4, 0u8..4, 0u16..4, 0u8..3).prop_map(|(port, et, src, dst, tp, proto)| {
        let mut k = Key::default();
        k.set(Field::InPort, port.into());
        k.set(Field::EthType, if et == 0 { 0x0800 } else { 0x86dd });
        k.set(
            Field::IpSrc,
            0x0a00_0000 | u128::from(src) << 8 | u128::from(src),
        );
        k.set(Field::IpDst, 0x0a00_0000 | u128::from(dst) << 8);
        k.set(Field::TpDst, u128::from(20 + tp));
        k.set(Field::IpProto, [6, 17, 1][usize::from(proto)]);
        k
    })
}

/// A match constraining a random subset of fields, exactly or by prefix, to values drawn
/// from the same small ranges.
fn small_match() -> impl Strategy<Value = Match> {
    (small_key(), any::<u8>(), 0u32..33).prop_map(|(k, which, len)| {
        let mut m = Match::any();
        for (bit, field) in [
            Field::InPort,
            Field::EthType,
            Field::IpSrc,
            Field::IpDst,
            Field::TpDst,
            Field::IpProto,
        ]
        .into_iter()
        .enumerate()
        {
            if which & (1 << bit) == 0 {
                continue;
            }
            m = match field {
                Field::IpSrc | Field::IpDst => m.with_prefix(field, k.get(field), len, true),
                _ => m.with(field, k.get(field)),
            };
        }
        m
    })
}

fn naive(rules: &[(RuleId, u16, Match)], key: &Key) -> Option<RuleId> {
    rules
        .iter()
        .filter(|(_, _, m)| m.matches(key))
        .min_by_key(|(id, p, _)| (std::cmp::Reverse(*p), *id))
        .map(|(id, _, _)| *id)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn the_classifier_finds_what_a_scan_finds(
        rules in proptest::collection::vec((0u16..8, small_match()), 0..60),
        removals in proptest::collection::vec(any::<prop::sample::Index>(), 0..10),
        keys in proptest::collection::vec(small_key(), 1..40),
    ) {
        let now = Instant::now();
        let mut c = Classifier::new(1000);
        let mut installed: Vec<(RuleId, u16, Match)> = Vec::new();
        for (i, (priority, m)) in rules.into_iter().enumerate() {
            let done = c.insert(Rule::new(priority, m, i), now).unwrap();
            if let Some(old) = done.replaced {
                installed.retain(|(id, _, _)| *id != old);
            }
            installed.push((done.id, priority, m));
        }
        for ix in removals {
            if installed.is_empty() {
                break;
            }
            let (id, _, _) = installed.remove(ix.index(installed.len()));
            prop_assert!(c.remove(id).is_some());
        }
        prop_assert_eq!(c.len(), installed.len());
        for k in &keys {
            prop_assert_eq!(c.lookup(k), naive(&installed, k), "key {:?}", k);
        }
    }
}
