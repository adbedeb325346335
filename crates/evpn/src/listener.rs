//! The BGP listeners: one TCP socket per configured local address (`listen_addresses`, the
//! node's locator by default), never the wildcard unless the operator lists it.
//!
//! ```text
//!  Listeners::apply(settings) ── bind / close sockets, set TCP-MD5 keys and GTSM on them
//!  accept task (one per socket) ──(Accepted: stream, SYN's TTL)──► speaker ──► admit()
//! ```
//!
//! Each listening socket carries the TCP-MD5 key of every neighbour that has a password
//! (RFC 2385: the kernel then drops that neighbour's unsigned or badly signed SYNs, and the
//! accepted connection inherits the key), keeps each SYN's headers (`TCP_SAVE_SYN`) so that
//! [`admit`] can refuse a GTSM neighbour whose SYN came with a TTL below 255, and sends with
//! TTL 255 as soon as one neighbour uses GTSM (the SYN-ACK leaves from the listener, and a GTSM
//! peer drops it otherwise). When every neighbour of the socket's family uses GTSM, the
//! listener itself requires TTL 255, so the kernel drops low-TTL SYNs before any handshake.
//! Keys and options are updated in place when the configuration changes.

use std::collections::{BTreeSet, HashSet};
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::os::fd::AsFd;
use std::sync::Arc;
use std::time::Duration;

use nvo_io::tcp_auth;
use tokio::net::{TcpListener, TcpSocket, TcpStream};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::settings::{Neighbor, Settings};

/// Most addresses whose refused connections are each logged (after that, only counted).
const MAX_LOGGED: usize = 1024;

/// A connection a listener accepted.
#[derive(Debug)]
pub struct Accepted {
    /// The peer.
    pub from: SocketAddr,
    /// The connection.
    pub stream: TcpStream,
    /// The TTL (hop limit) its SYN arrived with, when the kernel kept it.
    pub syn_ttl: Option<u8>,
}

/// One listening socket.
#[derive(Debug)]
struct Open {
    addr: SocketAddr,
    listener: Arc<TcpListener>,
    task: JoinHandle<()>,
    /// Peers with a TCP-MD5 key on it.
    keyed: BTreeSet<IpAddr>,
}

impl Drop for Open {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The listening sockets in force.
#[derive(Debug)]
pub struct Listeners {
    open: Vec<Open>,
    tx: mpsc::Sender<Accepted>,
}

impl Listeners {
    /// No socket yet; accepted connections will go to `tx`.
    pub fn new(tx: mpsc::Sender<Accepted>) -> Listeners {
        Listeners {
            open: Vec::new(),
            tx,
        }
    }

    /// Listens where `settings` say (nowhere for None or `listen = false`), with their keys.
    pub fn apply(&mut self, settings: Option<&Settings>) {
        let want: Vec<SocketAddr> = match settings {
            Some(s) if s.listen => s
                .listen_addresses
                .iter()
                .map(|&ip| SocketAddr::new(ip, s.port))
                .collect(),
            _ => Vec::new(),
        };
        self.open.retain(|o| want.contains(&o.addr));
        let Some(settings) = settings else { return };
        for &addr in &want {
            if !self.open.iter().any(|o| o.addr == addr) {
                match bind(addr) {
                    Ok(listener) => {
                        let listener = Arc::new(listener);
                        let task = tokio::spawn(accept_loop(listener.clone(), self.tx.clone()));
                        log::info!("bgp: listening on {addr}");
                        self.open.push(Open {
                            addr,
                            listener,
                            task,
                            keyed: BTreeSet::new(),
                        });
                    }
                    Err(e) => log::error!(
                        "bgp: cannot listen on {addr} ({e}); check listen_addresses (an address \
                         of this host); only outgoing connections will be made from it"
                    ),
                }
            }
        }
        for open in &mut self.open {
            open.protect(&settings.neighbors);
        }
    }

    /// The addresses listened on.
    pub fn addresses(&self) -> Vec<SocketAddr> {
        self.open.iter().map(|o| o.addr).collect()
    }
}

impl Open {
    /// Sets the TCP-MD5 keys and the TTL options for `neighbors` on the socket.
    fn protect(&mut self, neighbors: &[Neighbor]) {
        let fd = self.listener.as_fd();
        // An IPv4 socket hears IPv4 peers only; an IPv6 one both (v4-mapped).
        let fits = |n: &&Neighbor| self.addr.is_ipv6() || n.address.is_ipv4();
        let mine: Vec<&Neighbor> = neighbors.iter().filter(fits).collect();
        let mut keyed = BTreeSet::new();
        for n in &mine {
            let Some(password) = &n.password else {
                continue;
            };
            match tcp_auth::set_md5_key(fd, n.address, password.0.as_bytes()) {
                Ok(()) => {
                    keyed.insert(n.address);
                }
                Err(e) => log::error!(
                    "bgp: cannot set the tcp-md5 key of neighbor {} on {} ({e}); its connections \
                     to us will fail",
                    n.address,
                    self.addr
                ),
            }
        }
        for gone in self.keyed.difference(&keyed) {
            if let Err(e) = tcp_auth::set_md5_key(fd, *gone, b"") {
                log::warn!(
                    "bgp: cannot remove the tcp-md5 key of {gone} on {} ({e})",
                    self.addr
                );
            }
        }
        self.keyed = keyed;
        let any = mine.iter().any(|n| n.ttl_security);
        let all = any && mine.iter().all(|n| n.ttl_security);
        if let Err(e) = tcp_auth::set_gtsm(fd, any, all) {
            log::error!("bgp: cannot set ttl security on {} ({e})", self.addr);
        }
    }
}

/// A listening socket on `addr` that keeps SYN headers.
fn bind(addr: SocketAddr) -> io::Result<TcpListener> {
    let socket = if addr.is_ipv4() {
        TcpSocket::new_v4()?
    } else {
        TcpSocket::new_v6()?
    };
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    tcp_auth::save_syn(socket.as_fd())?;
    socket.listen(64)
}

async fn accept_loop(listener: Arc<TcpListener>, tx: mpsc::Sender<Accepted>) {
    loop {
        match listener.accept().await {
            Ok((stream, from)) => {
                let syn_ttl = tcp_auth::syn_ttl(stream.as_fd()).unwrap_or(None);
                let accepted = Accepted {
                    from,
                    stream,
                    syn_ttl,
                };
                if tx.send(accepted).await.is_err() {
                    return;
                }
            }
            Err(e) => {
                log::warn!("bgp: accept failed: {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
}

/// Why an accepted connection is closed at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// The address is no configured neighbour.
    NotNeighbor,
    /// A GTSM neighbour's SYN came with a TTL below 255.
    Ttl(u8),
}

/// Checks a connection from neighbour `spec` (None: no neighbour) and, for a GTSM one, makes
/// the kernel drop whatever arrives below TTL 255 from now on.
pub fn admit(accepted: &Accepted, spec: Option<&Neighbor>) -> Result<(), Refused> {
    let Some(spec) = spec else {
        return Err(Refused::NotNeighbor);
    };
    if spec.ttl_security {
        if let Some(ttl) = accepted.syn_ttl.filter(|&t| t < 255) {
            return Err(Refused::Ttl(ttl));
        }
        if let Err(e) = tcp_auth::set_gtsm(accepted.stream.as_fd(), true, true) {
            log::warn!(
                "bgp: cannot set ttl security on the connection from {} ({e})",
                accepted.from
            );
        }
    }
    Ok(())
}

/// Addresses whose refused connections were logged: each once, so that a host that keeps
/// trying fills no log.
#[derive(Debug, Default)]
pub struct RefusalLog {
    seen: HashSet<(IpAddr, bool)>,
}

impl RefusalLog {
    /// Logs a refusal of a connection from `from`, once per address and reason.
    pub fn log(&mut self, from: SocketAddr, why: Refused) {
        let key = (from.ip(), matches!(why, Refused::Ttl(_)));
        if self.seen.len() >= MAX_LOGGED || !self.seen.insert(key) {
            return;
        }
        match why {
            Refused::NotNeighbor => log::warn!(
                "bgp: connection from {from} refused: not a configured neighbour (logged once \
                 per address; counted as connections_refused)"
            ),
            Refused::Ttl(ttl) => log::warn!(
                "bgp: connection from {from} refused: ttl security is on and its SYN came with \
                 ttl {ttl}, not 255 (more than one hop away, or not sending with ttl 255; logged \
                 once per address; counted as connections_ttl_refused)"
            ),
        }
        if self.seen.len() == MAX_LOGGED {
            log::warn!("bgp: {MAX_LOGGED} addresses refused; further ones are only counted");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn neighbor(ttl_security: bool) -> Neighbor {
        Neighbor {
            address: "127.0.0.1".parse().unwrap(),
            asn: 65000,
            passive: false,
            port: 179,
            description: None,
            password: None,
            ttl_security,
        }
    }

    async fn accepted_with_ttl(syn_ttl: Option<u8>) -> Accepted {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let _c = TcpStream::connect(l.local_addr().unwrap()).await.unwrap();
        let (stream, from) = l.accept().await.unwrap();
        Accepted {
            from,
            stream,
            syn_ttl,
        }
    }

    #[tokio::test]
    async fn admits_neighbours_and_refuses_the_rest() {
        let a = accepted_with_ttl(Some(64)).await;
        assert_eq!(admit(&a, None), Err(Refused::NotNeighbor));
        assert_eq!(admit(&a, Some(&neighbor(false))), Ok(()));
        assert_eq!(admit(&a, Some(&neighbor(true))), Err(Refused::Ttl(64)));
        let direct = accepted_with_ttl(Some(255)).await;
        assert_eq!(admit(&direct, Some(&neighbor(true))), Ok(()));
    }

    #[tokio::test]
    async fn listens_only_where_told() {
        let (tx, _rx) = mpsc::channel(4);
        let mut l = Listeners::new(tx);
        let base = crate::settings::tests::base();
        let mut config = base.clone();
        config.port = Some(0);
        config.listen_addresses = Some(vec!["127.0.0.1".parse().unwrap()]);
        // Port 0 is refused by the settings; bind an ephemeral one by hand instead.
        let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = free.local_addr().unwrap().port();
        drop(free);
        config.port = Some(port);
        let s = Settings::resolve(&config, "127.0.0.1".parse().unwrap()).unwrap();
        l.apply(Some(&s));
        assert_eq!(
            l.addresses(),
            vec![SocketAddr::new("127.0.0.1".parse().unwrap(), port)]
        );
        // Not on another loopback address: only the one configured.
        assert!(std::net::TcpStream::connect(("127.0.0.2", port)).is_err());
        assert!(std::net::TcpStream::connect(("127.0.0.1", port)).is_ok());
        l.apply(None);
        assert!(l.addresses().is_empty());
    }

    /// The neighbour's key on the listener makes the kernel drop its unsigned SYNs; taking
    /// the password out of the configuration removes the key from the same socket.
    #[tokio::test]
    async fn keys_are_set_and_removed_in_place() {
        let (tx, _rx) = mpsc::channel(4);
        let mut l = Listeners::new(tx);
        let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = free.local_addr().unwrap().port();
        drop(free);
        let mut config = crate::settings::tests::base();
        config.port = Some(port);
        config.neighbors[0].address = "127.0.0.1".parse().unwrap();
        config.neighbors[0].password = Some(nvo_api::Password("s3cret".into()));
        let locator: IpAddr = "127.0.0.1".parse().unwrap();
        let connects = || {
            let to = SocketAddr::new(locator, port);
            std::net::TcpStream::connect_timeout(&to, Duration::from_millis(500)).is_ok()
        };
        l.apply(Some(&Settings::resolve(&config, locator).unwrap()));
        assert!(
            !connects(),
            "an unsigned SYN from a keyed neighbour got through"
        );
        config.neighbors[0].password = None;
        l.apply(Some(&Settings::resolve(&config, locator).unwrap()));
        assert!(connects());
    }
}
