//! The status page's recent events: a small bounded list, newest replacing oldest, that any
//! part of nvod can push `{time, type, text}` entries into. For now the overlay events nvod
//! streams on `GET /v1/events` feed it ([`follow`]).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::SystemTime;

use nvo_api as api;
use serde::Serialize;
use tokio::sync::broadcast;

/// Events kept.
pub const RECENT: usize = 50;

/// One event as the page shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Event {
    /// When, RFC 3339 in UTC with milliseconds.
    pub time: String,
    /// What kind: `overlay.node`, `overlay.route`, `overlay.own`, `nvod`, `lagged`, ...
    #[serde(rename = "type")]
    pub kind: String,
    /// One line.
    pub text: String,
}

/// The recent events, shared between their writers and the status handler.
#[derive(Debug, Clone, Default)]
pub struct Recent(Arc<Mutex<VecDeque<Event>>>);

impl Recent {
    /// Adds an event stamped now, dropping the oldest beyond [`RECENT`].
    pub fn push(&self, kind: impl Into<String>, text: impl Into<String>) {
        let event = Event {
            time: rfc3339(SystemTime::now()),
            kind: kind.into(),
            text: text.into(),
        };
        let mut list = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        while list.len() >= RECENT {
            list.pop_front();
        }
        list.push_back(event);
    }

    /// The events, oldest first.
    pub fn list(&self) -> Vec<Event> {
        let list = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        list.iter().cloned().collect()
    }
}

/// Copies overlay events into `recent` until the stream closes.
pub async fn follow(mut rx: broadcast::Receiver<api::OverlayEvent>, recent: Recent) {
    loop {
        match rx.recv().await {
            Ok(event) => recent.push(format!("overlay.{}", event.kind()), event.summary()),
            Err(broadcast::error::RecvError::Lagged(n)) => {
                recent.push("lagged", format!("{n} overlay events missed"));
            }
            Err(broadcast::error::RecvError::Closed) => return,
        }
    }
}

/// `t` as `YYYY-MM-DDTHH:MM:SS.mmmZ`.
pub fn rfc3339(t: SystemTime) -> String {
    let t = jiff::Timestamp::try_from(t).unwrap_or(jiff::Timestamp::UNIX_EPOCH);
    format!("{t:.3}")
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use std::time::{Duration, UNIX_EPOCH};

    use super::*;

    #[test]
    fn times_are_rfc3339_utc() {
        assert_eq!(rfc3339(UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
        // 2000-02-29 (a leap day of a century leap year), 13:14:15.678.
        let t = UNIX_EPOCH + Duration::from_millis(951_830_055_678);
        assert_eq!(rfc3339(t), "2000-02-29T13:14:15.678Z");
        let t = UNIX_EPOCH + Duration::from_secs(1_798_761_599);
        assert_eq!(rfc3339(t), "2026-12-31T23:59:59.000Z");
    }

    #[test]
    fn the_list_keeps_the_newest() {
        let recent = Recent::default();
        for i in 0..RECENT + 5 {
            recent.push("test", format!("event {i}"));
        }
        let list = recent.list();
        assert_eq!(list.len(), RECENT);
        assert_eq!(list[0].text, "event 5");
        assert_eq!(list[RECENT - 1].text, format!("event {}", RECENT + 4));
        let json = serde_json::to_value(&list[0]).unwrap();
        assert_eq!(json["type"], "test");
        assert!(json["time"].as_str().unwrap().ends_with('Z'));
    }

    #[tokio::test]
    async fn overlay_events_are_followed() {
        let (tx, rx) = broadcast::channel(4);
        let recent = Recent::default();
        let task = tokio::spawn(follow(rx, recent.clone()));
        tx.send(api::OverlayEvent::Node {
            action: api::EventAction::Set,
            node: 7,
            locators: Some(vec![api::LocatorSpec {
                addr: "10.0.0.7".parse().unwrap(),
                weight: 1,
            }]),
        })
        .unwrap();
        tx.send(api::OverlayEvent::Route {
            action: api::EventAction::Removed,
            app: "default".to_owned(),
            dst: 9,
            next_hops: None,
        })
        .unwrap();
        drop(tx);
        task.await.unwrap();
        let list = recent.list();
        assert_eq!(list.len(), 2);
        assert_eq!(list[0].kind, "overlay.node");
        assert_eq!(list[0].text, "node set 7 locators 10.0.0.7@1");
        assert_eq!(list[1].kind, "overlay.route");
        assert_eq!(list[1].text, "route removed default 9");
    }
}
