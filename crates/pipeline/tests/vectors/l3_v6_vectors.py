#!/usr/bin/python3
"""Writes the IPv6 Neighbor Discovery vectors of an L3 network's gateway with scapy, an
implementation nobody on nvo wrote.

The output, crates/pipeline/tests/vectors/l3_v6.json, holds:

    "ns":    hex of the NS container C1 (fd00:1::1) sends for fd00:1::9 on its port,
    "na":    hex of the NA the gateway must answer with: from the gateway MAC, router,
             solicited and override, target link-layer option = gateway MAC (RFC 4861 §7.2.4),
    "probe": hex of the NS the gateway sends on every port for fd00:1::2, which nobody announced:
             from its EUI-64 link-local address (RFC 4291 app. A) to fd00:1::2's solicited-node
             group (RFC 4291 §2.7.1, RFC 2464 §7), source link-layer option = gateway MAC.
    "rs":    hex of the router solicitation C1 sends from its link-local address to all-routers
             (RFC 4861 §4.1), source link-layer option = C1's MAC,
    "mld":   hex of the MLDv2 report C1 sends to ff02::16 for its solicited-node group, behind a
             Hop-by-Hop Router Alert option (RFC 3810 §5.2, RFC 2711).

crates/pipeline/tests/l3_v6.rs checks the pipeline against them. Deterministic.

Usage: l3_v6_vectors.py OUT_JSON
"""

import json
import sys

from scapy import __version__ as scapy_version
from scapy.layers.inet6 import (ICMPv6MLDMultAddrRec, ICMPv6MLReport2, ICMPv6ND_NA,
                                ICMPv6ND_NS, ICMPv6ND_RS, ICMPv6NDOptDstLLAddr,
                                ICMPv6NDOptSrcLLAddr, IPv6, IPv6ExtHdrHopByHop, RouterAlert)
from scapy.layers.l2 import Ether

GW_MAC, GW_LL = "02:6e:76:00:00:64", "fe80::6e:76ff:fe00:64"
C1_MAC, C1_V6 = "02:00:00:00:00:01", "fd00:1::1"
TARGET = "fd00:1::9"

ns = (Ether(dst="33:33:ff:00:00:09", src=C1_MAC)
      / IPv6(src=C1_V6, dst="ff02::1:ff00:9", hlim=255)
      / ICMPv6ND_NS(tgt=TARGET) / ICMPv6NDOptSrcLLAddr(lladdr=C1_MAC))
na = (Ether(dst=C1_MAC, src=GW_MAC)
      / IPv6(src=TARGET, dst=C1_V6, hlim=255)
      / ICMPv6ND_NA(R=1, S=1, O=1, tgt=TARGET) / ICMPv6NDOptDstLLAddr(lladdr=GW_MAC))
probe = (Ether(dst="33:33:ff:00:00:02", src=GW_MAC)
         / IPv6(src=GW_LL, dst="ff02::1:ff00:2", hlim=255)
         / ICMPv6ND_NS(tgt="fd00:1::2") / ICMPv6NDOptSrcLLAddr(lladdr=GW_MAC))
C1_LL = "fe80::1"
rs = (Ether(dst="33:33:00:00:00:02", src=C1_MAC)
      / IPv6(src=C1_LL, dst="ff02::2", hlim=255)
      / ICMPv6ND_RS() / ICMPv6NDOptSrcLLAddr(lladdr=C1_MAC))
mld = (Ether(dst="33:33:00:00:00:16", src=C1_MAC)
       / IPv6(src=C1_LL, dst="ff02::16", hlim=1)
       / IPv6ExtHdrHopByHop(options=[RouterAlert(value=0)])
       / ICMPv6MLReport2(records=[ICMPv6MLDMultAddrRec(rtype=4, dst="ff02::1:ff00:1")]))

out = {
    "source": f"scapy {scapy_version} (crates/pipeline/tests/vectors/l3_v6_vectors.py)",
    "ns": bytes(ns).hex(),
    "na": bytes(na).hex(),
    "probe": bytes(probe).hex(),
    "rs": bytes(rs).hex(),
    "mld": bytes(mld).hex(),
}
with open(sys.argv[1], "w") as f:
    json.dump(out, f, indent=1)
    f.write("\n")
