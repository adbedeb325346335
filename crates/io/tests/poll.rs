//! Poller and EventFd: waking the datapath thread from another thread.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::os::fd::AsFd;
use std::sync::Arc;
use std::time::{Duration, Instant};

use nvo_io::{EventFd, Poller};

#[test]
fn eventfd_wakes_a_waiting_poller() {
    let wake = Arc::new(EventFd::new().unwrap());
    let other = EventFd::new().unwrap();
    let mut poller = Poller::with_capacity(2);
    let i_other = poller.add(other.as_fd());
    let i_wake = poller.add(wake.as_fd());

    assert_eq!(
        poller.wait(Some(Duration::from_millis(20))).unwrap(),
        0,
        "nothing ready yet"
    );
    assert!(!poller.is_ready(i_wake));

    let notifier = Arc::clone(&wake);
    let started = Instant::now();
    let t = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(50));
        notifier.notify().unwrap();
        notifier.notify().unwrap();
    });
    assert_eq!(poller.wait(Some(Duration::from_secs(5))).unwrap(), 1);
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "woken by the notify, not the timeout"
    );
    assert!(poller.is_ready(i_wake) && !poller.is_ready(i_other));
    t.join().unwrap();
    assert_eq!(wake.drain().unwrap(), 2, "notifications coalesce");
    assert_eq!(wake.drain().unwrap(), 0);
    assert_eq!(
        poller.wait(Some(Duration::from_micros(10))).unwrap(),
        0,
        "drained: not ready"
    );
    assert!(!poller.is_ready(i_wake));
    poller.clear();
    assert!(poller.is_empty());
}
