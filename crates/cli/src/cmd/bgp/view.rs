//! Text views of the BGP/EVPN answers: `nvo bgp summary` in the shape of FRR's `show bgp
//! summary`, `nvo bgp show` as TOML, `nvo evpn routes` as a table with flag codes.

use nvo_api::{BgpConfig, BgpSummary, EvpnRoute, MessageCounts, NeighborState, SessionState};
use serde::Serialize;

use crate::table::{list, Table};

/// A time in a state as FRR prints a peer's up/down time: `hh:mm:ss` under a day, then
/// `1d02h03m` under a week, `02w3d04h` under a year, `01y02w3d` beyond.
pub fn up_down(secs: u64) -> String {
    const MINUTE: u64 = 60;
    const HOUR: u64 = 60 * MINUTE;
    const DAY: u64 = 24 * HOUR;
    const WEEK: u64 = 7 * DAY;
    const YEAR: u64 = 365 * DAY;
    if secs < DAY {
        format!(
            "{:02}:{:02}:{:02}",
            secs / HOUR,
            secs % HOUR / MINUTE,
            secs % MINUTE
        )
    } else if secs < WEEK {
        format!(
            "{}d{:02}h{:02}m",
            secs / DAY,
            secs % DAY / HOUR,
            secs % HOUR / MINUTE
        )
    } else if secs < YEAR {
        format!(
            "{:02}w{}d{:02}h",
            secs / WEEK,
            secs % WEEK / DAY,
            secs % DAY / HOUR
        )
    } else {
        // Weeks and days of the year under way, as FRR counts them from the day of the year.
        let rest = secs % YEAR;
        format!(
            "{:02}y{:02}w{}d",
            secs / YEAR,
            rest / WEEK,
            rest % WEEK / DAY
        )
    }
}

/// A session state by its RFC 4271 name, as FRR and GoBGP show it.
fn state_name(s: SessionState) -> &'static str {
    match s {
        SessionState::Idle => "Idle",
        SessionState::Connect => "Connect",
        SessionState::Active => "Active",
        SessionState::OpenSent => "OpenSent",
        SessionState::OpenConfirm => "OpenConfirm",
        SessionState::Established => "Established",
    }
}

/// Every message counted, whatever its type.
fn messages(m: &MessageCounts) -> u64 {
    [
        m.open,
        m.update,
        m.notification,
        m.keepalive,
        m.route_refresh,
    ]
    .into_iter()
    .fold(0u64, u64::saturating_add)
}

/// Routes held from a peer, `12`, or `12 (3)` when 3 of them are stale.
fn received(n: &NeighborState) -> String {
    if n.stale > 0 {
        format!("{} ({})", n.received, n.stale)
    } else {
        n.received.to_string()
    }
}

/// `nvo bgp summary`: a header on the speaker and its routes, then one row per neighbor; a
/// DESCRIPTION column only when some neighbor has one.
pub fn summary_view(s: &BgpSummary) -> String {
    let Some(c) = &s.config else {
        return "bgp is not configured; `nvo bgp set --asn N --router-id A --neighbor ADDR` \
                starts the speaker\n"
            .to_owned();
    };
    let mut lost = String::new();
    if s.routes_dropped > 0 {
        lost += &format!("; {} dropped (table full)", s.routes_dropped);
    }
    if s.routes_refused > 0 {
        lost += &format!("; {} refused by the data path", s.routes_refused);
    }
    let listening: Vec<String> = s.listening.iter().map(|a| a.to_string()).collect();
    let mut refused = String::new();
    if s.connections_refused > 0 {
        refused += &format!(
            "; {} connections refused (not a neighbor)",
            s.connections_refused
        );
    }
    if s.connections_ttl_refused > 0 {
        refused += &format!(
            "; {} refused (ttl security: ttl below 255)",
            s.connections_ttl_refused
        );
    }
    // An nvod from before `listening` sends none: then say nothing rather than "nothing".
    let listen_line = if !listening.is_empty() {
        format!("Listening on {}{refused}\n", list(&listening))
    } else if c.listen == Some(false) || !refused.is_empty() {
        format!("Listening on nothing (outgoing connections only){refused}\n")
    } else {
        String::new()
    };
    let mut out = format!(
        "BGP router identifier {}, local AS {}\n\
         EVPN routes: {} local, {} received, {} installed; {} duplicate MACs{lost}\n\
         {listen_line}\n",
        c.router_id, c.asn, s.routes_local, s.routes_received, s.routes_installed, s.duplicate_macs
    );
    let described = s.neighbors.iter().any(|n| n.description.is_some());
    let mut header = vec![
        "NEIGHBOR", "AS", "STATE", "UP/DOWN", "RECEIVED", "SENT", "MSG_IN", "MSG_OUT",
    ];
    if described {
        header.push("DESCRIPTION");
    }
    header.push("LAST_ERROR");
    let mut t = Table::new(&header)
        .right(1)
        .right(3)
        .right(4)
        .right(5)
        .right(6)
        .right(7);
    for n in &s.neighbors {
        let mut row = vec![
            n.address.to_string(),
            n.asn.to_string(),
            state_name(n.state).to_owned(),
            up_down(n.state_s),
            received(n),
            n.sent.to_string(),
            messages(&n.messages_in).to_string(),
            messages(&n.messages_out).to_string(),
        ];
        if described {
            row.push(n.description.clone().unwrap_or_else(|| "-".to_owned()));
        }
        row.push(n.last_error.clone().unwrap_or_else(|| "-".to_owned()));
        t.row(row);
    }
    out.push_str(&t.to_string());
    out
}

/// `nvo bgp show`: the configuration as TOML under `[bgp]`, or a line saying there is none.
pub fn config_view(c: Option<&BgpConfig>) -> String {
    #[derive(Serialize)]
    struct Section<'a> {
        bgp: &'a BgpConfig,
    }
    let Some(c) = c else {
        return "# bgp is not configured; `nvo bgp set` configures it\n".to_owned();
    };
    match toml::to_string(&Section { bgp: c }) {
        Ok(text) => format!("# bgp configuration in force, defaults filled in\n{text}"),
        // Every field of BgpConfig has a TOML form; should that change, JSON still shows it.
        Err(e) => format!(
            "# (cannot be shown as TOML: {e})\n{}\n",
            serde_json::to_string_pretty(c).unwrap_or_default()
        ),
    }
}

/// A route's flags: * best, S stale, D duplicate MAC, st sticky MAC; "-" for none.
fn flags(r: &EvpnRoute) -> String {
    let codes: Vec<&str> = [
        (r.best, "*"),
        (r.stale, "S"),
        (r.duplicate, "D"),
        (r.sticky, "st"),
    ]
    .into_iter()
    .filter_map(|(on, code)| on.then_some(code))
    .collect();
    list(&codes)
}

/// `nvo evpn routes`: a legend line, then one row per route.
pub fn routes_view(routes: &[EvpnRoute]) -> String {
    let mut t = Table::new(&[
        "TYPE", "VNI", "MAC", "IP", "VTEP", "SEQ", "SOURCE", "RD", "RT", "FLAGS",
    ])
    .right(1)
    .right(5);
    for r in routes {
        t.row([
            r.route_type.to_string(),
            r.vni.to_string(),
            r.mac.clone().unwrap_or_else(|| "-".to_owned()),
            r.ip.map_or_else(|| "-".to_owned(), |ip| ip.to_string()),
            r.vtep.to_string(),
            r.seq.to_string(),
            r.source.clone(),
            r.rd.clone(),
            list(&r.rt),
            flags(r),
        ]);
    }
    format!("Flags: * best, S stale, D duplicate MAC, st sticky MAC\n{t}")
}
