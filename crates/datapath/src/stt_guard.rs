//! Keeps the kernel's TCP stack from answering STT segments.
//!
//! STT segments are IP protocol 6 to port 7471. nvod reads them on a raw socket, which gets a
//! copy; the kernel's TCP stack gets the original, finds no connection and answers with a RST
//! (RFC 793 §3.4, "reset generation"). Those RSTs would reach the sending VTEP's TCP stack and
//! show on the wire. A raw socket sees packets only after the input hooks, so the RSTs are
//! stopped on the way out instead: an nftables table of nvod's own, in nvod's network
//! namespace, drops every outgoing TCP segment from port 7471 with the RST flag (nvod's own
//! segments never carry it). The table is created when the first STT network appears and
//! removed when nvod stops; a table left by a crashed nvod is replaced.

use std::io::{self, Write};
use std::process::{Command, Stdio};

/// The nftables table nvod owns.
pub const TABLE: &str = "nvo_stt";

/// Installed while alive; removes the table when dropped.
#[derive(Debug)]
pub struct RstGuard(());

impl RstGuard {
    /// Installs (or replaces) the table.
    pub fn install() -> io::Result<RstGuard> {
        // `add` then `delete` then `add` makes the load idempotent: an old table goes.
        let ruleset = format!(
            "add table inet {TABLE}\n\
             delete table inet {TABLE}\n\
             table inet {TABLE} {{\n\
             \tchain output {{\n\
             \t\ttype filter hook output priority 0; policy accept;\n\
             \t\ttcp sport 7471 tcp flags & rst == rst counter drop comment \"stt: the kernel must not reset stt segments\"\n\
             \t}}\n\
             }}\n"
        );
        nft(&ruleset).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!(
                    "cannot install the nftables rule that keeps the kernel from answering stt \
                     segments with tcp resets: {e} (is the nftables package installed?)"
                ),
            )
        })?;
        log::info!("nftables table inet {TABLE} drops the kernel's resets to stt segments");
        Ok(RstGuard(()))
    }
}

impl Drop for RstGuard {
    fn drop(&mut self) {
        if let Err(e) = nft(&format!("delete table inet {TABLE}\n")) {
            log::warn!("cannot remove nftables table inet {TABLE}: {e}");
        }
    }
}

/// Runs `nft -f -` with `ruleset` on its standard input.
fn nft(ruleset: &str) -> io::Result<()> {
    let mut child = Command::new("nft")
        .args(["-f", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin.write_all(ruleset.as_bytes())?;
    }
    let out = child.wait_with_output()?;
    if out.status.success() {
        Ok(())
    } else {
        Err(io::Error::other(format!(
            "nft said: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )))
    }
}
