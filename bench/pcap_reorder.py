#!/usr/bin/python3
"""Where does a TCP stream get reordered? Reads pcaps of the same iperf3 stream taken at several
points of its path (tcpdump -s 100, Ethernet or raw IPv6 captures) and counts, per capture, the
data packets that arrive below the highest sequence number seen yet while carrying bytes not
seen before (reordered: a later packet overtook them) apart from those that carry only bytes
already seen (retransmissions). GSO super-packets count as one packet each. IPv6 only (the ILA
study); the stream is the one with the most packets to a port in 5200..5299 (iperf3).

    bench/pcap_reorder.py h1-c-i1.pcap h1-eth0.pcap h2-eth0.pcap i2-eth0.pcap

docs/ila.md ("Reordering") used it to find where ILA's spurious retransmits start.
"""

import bisect
import collections
import struct
import sys


def packets(path):
    """(source port, sequence number, payload length) of each IPv6 TCP data packet."""
    with open(path, "rb") as f:
        head = f.read(24)
        end = "<" if struct.unpack("<I", head[:4])[0] in (0xA1B2C3D4, 0xA1B23C4D) else ">"
        link = struct.unpack(end + "I", head[20:24])[0]
        while len(rec := f.read(16)) == 16:
            data = f.read(struct.unpack(end + "IIII", rec)[2])
            if link == 1 and data[12:14] != b"\x86\xdd":
                continue
            ip = data[14:] if link == 1 else data
            if len(ip) < 60 or ip[0] >> 4 != 6 or ip[6] != 6:
                continue
            tcp = ip[40:]
            if not 5200 <= struct.unpack(">H", tcp[2:4])[0] < 5300:
                continue
            n = struct.unpack(">H", ip[4:6])[0] - (tcp[12] >> 4) * 4
            if n > 0:
                yield struct.unpack(">H", tcp[:2])[0], struct.unpack(">I", tcp[4:8])[0], n


def covered(spans, a, b):
    i = bisect.bisect_right(spans, [a, float("inf")]) - 1
    return i >= 0 and spans[i][0] <= a and spans[i][1] >= b


def add(spans, a, b):
    bisect.insort(spans, [a, b])
    merged = []
    for s in spans:
        if merged and s[0] <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], s[1])
        else:
            merged.append(s)
    spans[:] = merged


def main():
    for path in sys.argv[1:]:
        every = list(packets(path))
        if not every:
            print(f"{path}: no iperf3 data packets")
            continue
        port = collections.Counter(p[0] for p in every).most_common(1)[0][0]
        spans, high, last, at = [], None, None, 0
        total = late = again = 0
        for sport, seq, n in every:
            if sport != port:
                continue
            total += 1
            step = (seq - (seq if last is None else last)) & 0xFFFFFFFF
            at += step - (1 << 32) if step >= 1 << 31 else step  # unwrapped sequence
            last = seq
            if high is not None and at < high:
                if covered(spans, at, at + n):
                    again += 1
                else:
                    late += 1
            add(spans, at, at + n)
            high = at + n if high is None else max(high, at + n)
        print(f"{path}: {total} data packets, {late} reordered, {again} retransmitted")


if __name__ == "__main__":
    main()
