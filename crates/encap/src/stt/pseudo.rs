//! The TCP pseudo-header sum (RFC 793 §3.1, RFC 8200 §8.1) in the form the kernel leaves in a
//! TCP checksum field it has not finished: folded, not complemented.
//!
//! The kernel writes that form whenever the checksum is left to someone else
//! (`CHECKSUM_PARTIAL`): a GSO frame handed to it with the virtio-net `NEEDS_CSUM` flag (its
//! `tcp_gso_segment` then puts the sum for each segment's own length there), and a frame that
//! GRO put together (`tcp4_gro_complete`/`tcp6_gro_complete`: `~tcp_v4_check(len, …, 0)`).
//! A raw socket receives the bytes as they are, so a receiver sees this form on segments that
//! crossed a veth with checksum offload or were merged by GRO, both of which the kernel
//! verified or trusts.

use std::net::IpAddr;

/// The pseudo-header sum of a TCP segment of `tcp_len` bytes (header included) from `src` to
/// `dst`, folded to 16 bits and not complemented; `None` for addresses of different families.
pub fn pseudo_header_sum(src: IpAddr, dst: IpAddr, tcp_len: u32) -> Option<u16> {
    let mut sum: u64 = u64::from(nvo_wire::ip_proto::TCP);
    let mut add = |bytes: &[u8]| {
        for pair in bytes.chunks(2) {
            let hi = u64::from(pair[0]) << 8;
            sum += hi | pair.get(1).map_or(0, |&lo| u64::from(lo));
        }
    };
    match (src, dst) {
        (IpAddr::V4(s), IpAddr::V4(d)) => {
            add(&s.octets());
            add(&d.octets());
        }
        (IpAddr::V6(s), IpAddr::V6(d)) => {
            add(&s.octets());
            add(&d.octets());
        }
        _ => return None,
    }
    sum += u64::from(tcp_len >> 16) + u64::from(tcp_len & 0xffff);
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    Some(sum as u16)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ipv4_sum_by_hand() {
        // 192.0.2.1 → 192.0.2.2, 1000 bytes: c000+0201+c000+0202+0006+03e8 = 0x187f1,
        // folded 0x87f2.
        let (a, b) = ("192.0.2.1".parse().unwrap(), "192.0.2.2".parse().unwrap());
        assert_eq!(pseudo_header_sum(a, b, 1000), Some(0x87f2));
    }

    #[test]
    fn ipv6_sum_and_families() {
        let (a, b): (IpAddr, IpAddr) = (
            "2001:db8::1".parse().unwrap(),
            "2001:db8::2".parse().unwrap(),
        );
        // (2001+0db8) twice, +1 +2, +6, +0x14: 0x5b72+3+6+0x14 = 0x5b8f.
        assert_eq!(pseudo_header_sum(a, b, 20), Some(0x5b8f));
        assert_eq!(pseudo_header_sum(a, "192.0.2.1".parse().unwrap(), 20), None);
    }
}
