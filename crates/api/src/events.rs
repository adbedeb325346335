//! `GET /v1/events`: the overlay's changes `nvo events` follows, one [`OverlayEvent`] per
//! server-sent event.

use serde::{Deserialize, Serialize};

use crate::types::LocatorSpec;

/// What happened to the object of an [`OverlayEvent`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EventAction {
    /// Created or replaced; the event carries the new value.
    Set,
    /// Deleted.
    Removed,
}

/// One event of `GET /v1/events`, a server-sent event stream: `event:` is the kind ("node",
/// "route" or "own", [`OverlayEvent::kind`]) and `data:` this value as one line of JSON,
/// `{"kind": ..., "action": "set"|"removed", ...}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum OverlayEvent {
    /// A node's locators were set, or the node removed.
    Node {
        /// Set or removed.
        action: EventAction,
        /// The node.
        node: u32,
        /// Its locators now (absent when removed).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        locators: Option<Vec<LocatorSpec>>,
    },
    /// A route was set or removed.
    Route {
        /// Set or removed.
        action: EventAction,
        /// The application ([`crate::OverlayApp::name`]).
        app: String,
        /// The destination node.
        dst: u32,
        /// Its next hops now (absent when removed).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        next_hops: Option<Vec<u32>>,
    },
    /// This node's own ID changed (action "set").
    Own {
        /// Always set.
        action: EventAction,
        /// The new own ID.
        node: u32,
    },
}

impl OverlayEvent {
    /// The event's kind, the name of its `event:` line.
    pub fn kind(&self) -> &'static str {
        match self {
            OverlayEvent::Node { .. } => "node",
            OverlayEvent::Route { .. } => "route",
            OverlayEvent::Own { .. } => "own",
        }
    }

    /// One line for the event, as `nvo events` and the status page show it: `kind action
    /// object details` (`node set 2 locators fd00::2@3`, `route removed ipv4 5`).
    pub fn summary(&self) -> String {
        let action = |a: &EventAction| match a {
            EventAction::Set => "set",
            EventAction::Removed => "removed",
        };
        let list = |items: Vec<String>| {
            if items.is_empty() {
                "-".to_owned()
            } else {
                items.join(",")
            }
        };
        match self {
            OverlayEvent::Node {
                action: a,
                node,
                locators,
            } => match locators {
                Some(l) => {
                    let items = l.iter().map(|l| format!("{}@{}", l.addr, l.weight));
                    format!(
                        "node {} {node} locators {}",
                        action(a),
                        list(items.collect())
                    )
                }
                None => format!("node {} {node}", action(a)),
            },
            OverlayEvent::Route {
                action: a,
                app,
                dst,
                next_hops,
            } => match next_hops {
                Some(h) => {
                    let items = h.iter().map(u32::to_string).collect();
                    format!("route {} {app} {dst} via {}", action(a), list(items))
                }
                None => format!("route {} {app} {dst}", action(a)),
            },
            OverlayEvent::Own { action: a, node } => format!("own {} {node}", action(a)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::OverlayApp;
    use serde_json::json;

    #[test]
    fn events_are_flat_objects_tagged_by_kind() {
        let e = OverlayEvent::Route {
            action: EventAction::Set,
            app: OverlayApp::Ethernet.to_string(),
            dst: 5,
            next_hops: Some(vec![2, 3]),
        };
        assert_eq!(e.kind(), "route");
        let v = serde_json::to_value(&e).unwrap();
        assert_eq!(
            v,
            json!({"kind": "route", "action": "set", "app": "ethernet", "dst": 5,
                "next_hops": [2, 3]})
        );
        assert_eq!(serde_json::from_value::<OverlayEvent>(v).unwrap(), e);
        let gone = OverlayEvent::Node {
            action: EventAction::Removed,
            node: 9,
            locators: None,
        };
        assert_eq!(
            serde_json::to_value(&gone).unwrap(),
            json!({"kind": "node", "action": "removed", "node": 9})
        );
        let own: OverlayEvent =
            serde_json::from_value(json!({"kind": "own", "action": "set", "node": 4})).unwrap();
        assert_eq!(own.kind(), "own");
    }

    #[test]
    fn summaries() {
        let node = OverlayEvent::Node {
            action: EventAction::Set,
            node: 2,
            locators: Some(vec![LocatorSpec {
                addr: "fd00::2".parse().unwrap(),
                weight: 3,
            }]),
        };
        assert_eq!(node.summary(), "node set 2 locators fd00::2@3");
        let route = OverlayEvent::Route {
            action: EventAction::Removed,
            app: "ipv4".to_owned(),
            dst: 5,
            next_hops: None,
        };
        assert_eq!(route.summary(), "route removed ipv4 5");
    }
}
