//! Packet filters in tcpdump's language (pcap-filter(7)), compiled by libpcap.
//!
//! [`Filter::compile`] hands the expression to `pcap_compile` on a "dead" handle of the given
//! link type (no device is opened): libpcap's message comes back in [`FilterError`] unchanged,
//! so a user sees the same words tcpdump would print. A compiled filter is a classic BPF
//! program (`struct bpf_insn`, the same layout as the kernel's `struct sock_filter`); it is used
//! twice:
//!
//! - in the kernel: [`Filter::instructions`] for `SO_ATTACH_FILTER` on a capture socket
//!   ([`crate::CaptureSocket`]), so frames the filter refuses are never copied to nvod;
//! - in userspace: [`Filter::matches`] runs it on a frame nvod holds (`pcap_offline_filter`),
//!   e.g. an inner frame nvod decapsulated, which no socket filter can see.
//!
//! Linked against the system's libpcap (Debian: libpcap-dev to build, libpcap0.8 to run).
//! libpcap 1.8 and later compile filters thread-safely; each [`Filter`] owns its program.

use std::ffi::{CStr, CString};
use std::fmt;
use std::os::raw::{c_char, c_int, c_uint, c_void};

/// Link type of Ethernet frames (`DLT_EN10MB`).
pub const LINKTYPE_ETHERNET: i32 = 1;

/// `PCAP_NETMASK_UNKNOWN`: no netmask, so only `ip broadcast` fails to compile.
const NETMASK_UNKNOWN: u32 = 0xffff_ffff;

#[repr(C)]
struct BpfProgram {
    bf_len: c_uint,
    bf_insns: *mut libc::sock_filter,
}

#[repr(C)]
struct PktHdr {
    ts: libc::timeval,
    caplen: u32,
    len: u32,
}

#[link(name = "pcap")]
extern "C" {
    fn pcap_open_dead(linktype: c_int, snaplen: c_int) -> *mut c_void;
    fn pcap_close(p: *mut c_void);
    fn pcap_compile(
        p: *mut c_void,
        program: *mut BpfProgram,
        expr: *const c_char,
        optimize: c_int,
        netmask: u32,
    ) -> c_int;
    fn pcap_geterr(p: *mut c_void) -> *const c_char;
    fn pcap_freecode(program: *mut BpfProgram);
    fn pcap_offline_filter(
        program: *const BpfProgram,
        header: *const PktHdr,
        data: *const u8,
    ) -> c_int;
}

/// Why a filter expression was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FilterError {
    /// libpcap did not compile it; its message is kept as it said it.
    #[error("bad filter {expression:?}: {message}")]
    Syntax {
        /// The expression as given.
        expression: String,
        /// libpcap's explanation.
        message: String,
    },
    /// The expression holds a NUL byte, which C strings cannot carry.
    #[error("bad filter {0:?}: it contains a NUL byte")]
    Nul(String),
    /// libpcap could not even make a handle (out of memory).
    #[error("libpcap cannot open a handle of link type {0}")]
    Handle(i32),
}

/// A compiled filter; see the module docs.
pub struct Filter {
    program: BpfProgram,
    expression: String,
    snaplen: u32,
}

// SAFETY: the program is a heap array libpcap allocated for this value alone; nothing else
// points into it, and it is only read after compilation, so it may move to and be read from
// any thread.
unsafe impl Send for Filter {}
// SAFETY: as above: shared access only reads the instructions (pcap_offline_filter takes a
// const program and keeps no state between calls).
unsafe impl Sync for Filter {}

impl fmt::Debug for Filter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Filter")
            .field("expression", &self.expression)
            .field("instructions", &self.program.bf_len)
            .finish()
    }
}

impl Filter {
    /// Compiles `expression` for frames of `linktype` captured up to `snaplen` bytes. An empty
    /// expression compiles to a program that accepts everything (as tcpdump with no filter).
    pub fn compile(expression: &str, linktype: i32, snaplen: u32) -> Result<Filter, FilterError> {
        let expr = CString::new(expression).map_err(|_| FilterError::Nul(expression.to_owned()))?;
        let snap = c_int::try_from(snaplen).unwrap_or(c_int::MAX);
        // SAFETY: pcap_open_dead takes no pointers; a null return is checked below.
        let handle = unsafe { pcap_open_dead(linktype, snap) };
        if handle.is_null() {
            return Err(FilterError::Handle(linktype));
        }
        let mut program = BpfProgram {
            bf_len: 0,
            bf_insns: std::ptr::null_mut(),
        };
        // SAFETY: `handle` is the live handle opened above, `program` a live local libpcap
        // fills in, `expr` a NUL-terminated string alive across the call.
        let rc = unsafe { pcap_compile(handle, &mut program, expr.as_ptr(), 1, NETMASK_UNKNOWN) };
        let result = if rc == 0 {
            Ok(Filter {
                program,
                expression: expression.to_owned(),
                snaplen,
            })
        } else {
            // SAFETY: pcap_geterr returns a NUL-terminated buffer owned by the live handle;
            // it is copied before the handle closes.
            let message = unsafe { CStr::from_ptr(pcap_geterr(handle)) }
                .to_string_lossy()
                .into_owned();
            Err(FilterError::Syntax {
                expression: expression.to_owned(),
                message,
            })
        };
        // SAFETY: the handle came from pcap_open_dead and is not used after this; a compiled
        // program does not refer to its handle.
        unsafe { pcap_close(handle) };
        result
    }

    /// The expression as given.
    pub fn expression(&self) -> &str {
        &self.expression
    }

    /// The program, for the kernel (`struct sock_filter` has `struct bpf_insn`'s layout).
    pub fn instructions(&self) -> &[libc::sock_filter] {
        if self.program.bf_insns.is_null() {
            return &[];
        }
        // SAFETY: libpcap allocated `bf_len` instructions at `bf_insns`; they live, unchanged,
        // until `pcap_freecode` in Drop, and `&self` keeps them alive for the slice's lifetime.
        unsafe { std::slice::from_raw_parts(self.program.bf_insns, self.program.bf_len as usize) }
    }

    /// Whether the frame `data` (captured bytes; `wire_len` on the wire) passes.
    pub fn matches(&self, data: &[u8], wire_len: usize) -> bool {
        let caplen = data.len().min(self.snaplen as usize);
        let header = PktHdr {
            ts: libc::timeval {
                tv_sec: 0,
                tv_usec: 0,
            },
            caplen: u32::try_from(caplen).unwrap_or(u32::MAX),
            len: u32::try_from(wire_len.max(caplen)).unwrap_or(u32::MAX),
        };
        // SAFETY: the program is live (see `instructions`); the header is a live local whose
        // caplen does not exceed `data.len()`, so the interpreter reads within `data`.
        unsafe { pcap_offline_filter(&self.program, &header, data.as_ptr()) != 0 }
    }
}

impl Drop for Filter {
    fn drop(&mut self) {
        // SAFETY: the program was filled by a successful pcap_compile and is freed once, here.
        unsafe { pcap_freecode(&mut self.program) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An Ethernet + IPv4 + ICMP echo request, 10.0.0.1 -> 10.0.0.2 (bytes as scapy builds
    /// `Ether()/IP(src=..., dst=...)/ICMP()` with zero MACs).
    fn icmp_frame() -> Vec<u8> {
        let mut f = vec![0u8; 12];
        f.extend_from_slice(&[0x08, 0x00]);
        f.extend_from_slice(&[
            0x45, 0, 0, 28, 0, 1, 0, 0, 64, 1, 0x66, 0xdd, 10, 0, 0, 1, 10, 0, 0, 2,
        ]);
        f.extend_from_slice(&[8, 0, 0xf7, 0xff, 0, 0, 0, 0]);
        f
    }

    #[test]
    fn filters_match_what_tcpdump_would() {
        let icmp = Filter::compile("icmp and host 10.0.0.2", LINKTYPE_ETHERNET, 65535).unwrap();
        assert!(icmp.matches(&icmp_frame(), 42));
        let udp = Filter::compile("udp", LINKTYPE_ETHERNET, 65535).unwrap();
        assert!(!udp.matches(&icmp_frame(), 42));
        let other = Filter::compile("host 10.0.0.9", LINKTYPE_ETHERNET, 65535).unwrap();
        assert!(!other.matches(&icmp_frame(), 42));
        assert!(!icmp.instructions().is_empty());
    }

    #[test]
    fn an_empty_filter_accepts_everything() {
        let all = Filter::compile("", LINKTYPE_ETHERNET, 65535).unwrap();
        assert!(all.matches(&icmp_frame(), 42));
        assert!(all.matches(&[0u8; 14], 14));
    }

    #[test]
    fn bad_filters_carry_libpcap_message() {
        let e = Filter::compile("icmp andd", LINKTYPE_ETHERNET, 65535).unwrap_err();
        let text = e.to_string();
        assert!(text.starts_with("bad filter \"icmp andd\": "), "{text}");
        assert!(text.contains("syntax error"), "{text}");
        let e = Filter::compile("port 99999", LINKTYPE_ETHERNET, 65535).unwrap_err();
        assert!(e.to_string().contains("port"), "{e}");
        let e = Filter::compile("a\0b", LINKTYPE_ETHERNET, 65535).unwrap_err();
        assert_eq!(e, FilterError::Nul("a\0b".into()));
    }
}
