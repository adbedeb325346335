#!/usr/bin/python3
"""Writes the ARP/ND suppression vectors of nvo-pipeline with scapy, an implementation nobody on
nvo wrote: requests a host sends, and the exact reply a suppressing VTEP must send back.

The output, crates/pipeline/tests/vectors/suppress.json, holds a list of vectors:

    {"name": ...,
     "frame": hex of the Ethernet frame host H1 sends on its port,
     "neighbor": {"ip", "mac"} the table is given before (EVPN-installed), or null,
     "reply": hex of the one frame that must come back out of H1's port, or null when the
              request must not be answered (it is forwarded as any frame),
     "snooped": {"ip", "mac"} the frame must teach the neighbour table about, or null}

crates/pipeline/tests/suppress.rs checks the pipeline against every vector, and regenerates the
file with this script (when /usr/bin/python3 has scapy) to check the two still agree.
Deterministic: no random values.

Usage: suppress_vectors.py OUT_JSON
"""

import json
import sys

from scapy import __version__ as scapy_version
from scapy.layers.inet6 import (ICMPv6ND_NA, ICMPv6ND_NS, ICMPv6NDOptDstLLAddr,
                                ICMPv6NDOptSrcLLAddr, IPv6)
from scapy.layers.l2 import ARP, Dot1Q, Ether
from scapy.packet import Padding

SOURCE = f"scapy {scapy_version} (crates/pipeline/tests/vectors/suppress_vectors.py)"

# H1 asks, on a local port; H2 is the host the table knows (behind a remote VTEP).
H1_MAC, H1_V4, H1_V6 = "02:00:00:00:00:01", "10.0.0.1", "fd00::1"
H2_MAC, H2_V4, H2_V6 = "02:00:00:00:00:02", "10.0.0.2", "fd00::2"
H2_SOLICITED = "ff02::1:ff00:2"  # RFC 4291 §2.7.1: ff02::1:ff00:0/104 + the low 24 bits
H2_SOLICITED_MAC = "33:33:ff:00:00:02"  # RFC 2464 §7
BROADCAST = "ff:ff:ff:ff:ff:ff"
VLAN = 100

KNOWN_V4 = {"ip": H2_V4, "mac": H2_MAC}
KNOWN_V6 = {"ip": H2_V6, "mac": H2_MAC}


def tagged(eth, vlan, payload):
    """`eth / payload`, behind an 802.1Q tag when vlan is set."""
    return eth / Dot1Q(vlan=vlan) / payload if vlan is not None else eth / payload


def arp_request(vlan=None, psrc=H1_V4, pdst=H2_V4, pad=False):
    frame = tagged(Ether(dst=BROADCAST, src=H1_MAC), vlan,
                   ARP(op=1, hwsrc=H1_MAC, psrc=psrc, hwdst="00:00:00:00:00:00", pdst=pdst))
    # A frame padded to the 60-byte Ethernet minimum, as a NIC or a kernel may send it.
    return frame / Padding(b"\x00" * (60 - len(frame))) if pad else frame


def arp_reply(vlan=None):
    """What the VTEP answers for H2: RFC 826, from H2's MAC to the requester's sender MAC."""
    return tagged(Ether(dst=H1_MAC, src=H2_MAC), vlan,
                  ARP(op=2, hwsrc=H2_MAC, psrc=H2_V4, hwdst=H1_MAC, pdst=H1_V4))


def ns(vlan=None, src=H1_V6, slla=True, hlim=255, cksum=None):
    icmp = ICMPv6ND_NS(tgt=H2_V6)
    if cksum is not None:
        icmp.cksum = cksum
    if slla:
        icmp = icmp / ICMPv6NDOptSrcLLAddr(lladdr=H1_MAC)
    return tagged(Ether(dst=H2_SOLICITED_MAC, src=H1_MAC), vlan,
                  IPv6(src=src, dst=H2_SOLICITED, hlim=hlim) / icmp)


def na_reply(vlan=None):
    """RFC 4861 §7.2.4: solicited and override (not a router), to the solicitation's source,
    with the target link-layer address option; hop limit 255; scapy computes the checksum."""
    return tagged(Ether(dst=H1_MAC, src=H2_MAC), vlan,
                  IPv6(src=H2_V6, dst=H1_V6, hlim=255)
                  / ICMPv6ND_NA(R=0, S=1, O=1, tgt=H2_V6)
                  / ICMPv6NDOptDstLLAddr(lladdr=H2_MAC))


def unsolicited_na(tlla=True):
    icmp = ICMPv6ND_NA(R=0, S=0, O=1, tgt=H1_V6)
    if tlla:
        icmp = icmp / ICMPv6NDOptDstLLAddr(lladdr=H1_MAC)
    return Ether(dst="33:33:00:00:00:01", src=H1_MAC) / IPv6(src=H1_V6, dst="ff02::1", hlim=255) / icmp


def vector(name, frame, neighbor, reply, snooped):
    return {
        "name": name,
        "frame": bytes(frame).hex(),
        "neighbor": neighbor,
        "reply": bytes(reply).hex() if reply is not None else None,
        "snooped": snooped,
    }


def vectors():
    h1_v4 = {"ip": H1_V4, "mac": H1_MAC}
    h1_v6 = {"ip": H1_V6, "mac": H1_MAC}
    return [
        vector("arp_request", arp_request(), KNOWN_V4, arp_reply(), h1_v4),
        vector("arp_request_tagged", arp_request(vlan=VLAN), KNOWN_V4, arp_reply(vlan=VLAN), h1_v4),
        vector("arp_request_padded", arp_request(pad=True), KNOWN_V4, arp_reply(), h1_v4),
        vector("arp_request_unknown_target", arp_request(), None, None, h1_v4),
        # RFC 5227 §3: an announcement (gratuitous ARP) asks nobody, even for a known address.
        vector("arp_gratuitous", arp_request(pdst=H1_V4), {"ip": H1_V4, "mac": H2_MAC}, None, h1_v4),
        # RFC 5227 §2.1.1: a probe (sender 0.0.0.0) is the host's duplicate address check.
        vector("arp_probe", arp_request(psrc="0.0.0.0"), KNOWN_V4, None, None),
        vector("arp_reply_snooped",
               Ether(dst=H2_MAC, src=H1_MAC) / ARP(op=2, hwsrc=H1_MAC, psrc=H1_V4, hwdst=H2_MAC, pdst=H2_V4),
               KNOWN_V4, None, h1_v4),
        vector("ns", ns(), KNOWN_V6, na_reply(), h1_v6),
        vector("ns_tagged", ns(vlan=VLAN), KNOWN_V6, na_reply(vlan=VLAN), h1_v6),
        # No source link-layer option: answered to the Ethernet source, nothing snooped.
        vector("ns_without_slla", ns(slla=False), KNOWN_V6, na_reply(), None),
        vector("ns_unknown_target", ns(), None, None, h1_v6),
        # RFC 4862 §5.4.2: duplicate address detection, from ::, never answered.
        vector("ns_dad", ns(src="::", slla=False), KNOWN_V6, None, None),
        # RFC 4861 §7.1.1: a hop limit other than 255 or a bad checksum: not a solicitation.
        vector("ns_hop_limit_64", ns(hlim=64), KNOWN_V6, None, None),
        vector("ns_bad_checksum", ns(cksum=0x1234), KNOWN_V6, None, None),
        vector("na_unsolicited", unsolicited_na(), None, None, h1_v6),
        vector("na_without_tlla", unsolicited_na(tlla=False), None, None, h1_v6),
    ]


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    with open(sys.argv[1], "w", encoding="utf-8") as out:
        json.dump({"source": SOURCE, "vectors": vectors()}, out, indent=1)
        out.write("\n")


if __name__ == "__main__":
    main()
