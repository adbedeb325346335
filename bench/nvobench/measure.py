"""The measurements, each taken once per call (the run repeats them):

- `tcp`: iperf3 from c1 to c2, N parallel streams; the receiver's goodput, and the CPU time of
  the whole machine (both cores, /proc/stat) over the client's run per gigabit carried.
- `udp`: nvo-blast from c1 (4 source ports, batches of 64) to c2; the rate the receiver
  actually got (first datagram to last), what the sender pushed, and the CPU time of the
  whole machine over the send per datagram delivered.
- `rtt`: `ping -s 100` (128-byte IP packets) every 2 ms, parsed per reply: mean, p99 and
  jitter = the mean absolute difference of successive RTTs (RFC 3550's D, unsmoothed).
- `sanity`: three pings, before anything is measured.
- `memory`: VmRSS and VmHWM of a daemon.

Each returns a dict of plain numbers (the raw sample kept in the JSON); a failure raises
`CommandFailed` or `MeasureFailed` with the reason, and the run records it.
"""

import json
import os
import re
import statistics
import subprocess
import time

from .sh import CommandFailed, in_ns, run, tail

IPERF_PORT = 5201
BLAST_PORT = 9000
BLAST_FLOWS = 4
BLAST_BATCH = 64
# Seconds an incomplete datagram waits for its fragments in c2 (net.ipv4.ipfrag_time, per
# namespace; the kernel's default is 30). A lossy path leaves incomplete datagrams behind that
# fill the 4 MiB reassembly memory, and with 30 s they would starve the rest of the run and
# the next one; with 1 s they expire while the run goes on, and a pause clears them after it.
FRAG_TIME = 1
# IPv4 and UDP headers: the largest UDP payload a scenario carries unfragmented is its tenant
# MTU minus this (1422 at 1450; nvod's profiles have other MTUs).
IP_UDP = 28
_REPLY = re.compile(r"icmp_seq=(\d+) .*time=([\d.]+) ms")
_CLK_TCK = os.sysconf("SC_CLK_TCK")


class MeasureFailed(Exception):
    """A measurement ran but produced no usable figure."""


def cpu_jiffies():
    """(busy, total) jiffies of all CPUs from /proc/stat; busy excludes idle and iowait."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    # user nice system idle iowait irq softirq steal guest guest_nice; guest time is already
    # inside user, so only the first eight count.
    total = sum(fields[:8])
    return total - fields[3] - fields[4], total


def background_busy(seconds=2.0):
    """Fraction of all CPUs busy over `seconds` while the run does nothing: other people's load."""
    b0, t0 = cpu_jiffies()
    time.sleep(seconds)
    b1, t1 = cpu_jiffies()
    return (b1 - b0) / max(t1 - t0, 1)


def wait_listening(ns, proto, port, timeout=5.0):
    """Waits until something in `ns` listens on `port` (`proto` "t" or "u")."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        out = run(in_ns(ns, "ss", f"-Hln{proto}", f"sport = :{port}"), check=False).stdout
        if out.strip():
            return
        time.sleep(0.05)
    raise MeasureFailed(f"nothing listens on port {port} in {ns} after {timeout} s")


def sanity(sc):
    """Three pings from c1 to c2; returns None when traffic passes, else the reason."""
    p = run(in_ns(sc.client_ns, "ping", "-c", "3", "-i", "0.2", "-W", "2", sc.server_ip),
            timeout=20, check=False)
    if p.returncode == 0:
        return None
    return f"ping {sc.server_ip} from c1 got no reply: {tail(p.stdout + p.stderr, 2)}"


def prepare_server(sc):
    """Sets c2's reassembly timeout (see FRAG_TIME)."""
    run(in_ns(sc.server_ns, "sysctl", "-qw", f"net.ipv4.ipfrag_time={FRAG_TIME}"))


def start_iperf_server(sc, inv):
    sc.iperf_server = inv.spawn(in_ns(sc.server_ns, "iperf3", "-s", "-p", IPERF_PORT))
    wait_listening(sc.server_ns, "t", IPERF_PORT)


def tcp(sc, streams, seconds):
    """One iperf3 run; Gbit/s received, retransmits, CPU seconds per gigabit."""
    cmd = in_ns(sc.client_ns, "iperf3", "-c", sc.server_ip, "-p", IPERF_PORT, "-t", seconds,
                "-P", streams, "-J", "--connect-timeout", "3000")
    b0, t0 = cpu_jiffies()
    p = run(cmd, timeout=seconds + 30, check=False)
    b1, t1 = cpu_jiffies()
    try:
        doc = json.loads(p.stdout)
    except ValueError as e:
        raise MeasureFailed(f"iperf3 printed no JSON (exit {p.returncode}): {tail(p.stderr)}") from e
    if "error" in doc:
        raise MeasureFailed(f"iperf3: {doc['error']}")
    received = doc["end"]["sum_received"]
    gbit = received["bytes"] * 8 / 1e9
    if gbit <= 0:
        raise MeasureFailed("iperf3 carried nothing")
    cpu_s = (b1 - b0) / _CLK_TCK
    return {
        "gbps": received["bits_per_second"] / 1e9,
        "gbit": gbit,
        "retransmits": doc["end"].get("sum_sent", {}).get("retransmits"),
        "cpu_s": cpu_s,
        "cpu_s_per_gbit": cpu_s / gbit,
        "cpu_busy": (b1 - b0) / max(t1 - t0, 1),
    }


def udp(sc, inv, blast, size, seconds):
    """One nvo-blast run of `size`-byte payloads; delivered kpps and Mbit/s, loss."""
    recv = inv.spawn(in_ns(sc.server_ns, blast, "recv", "--bind", f"0.0.0.0:{BLAST_PORT}",
                           "--seconds", seconds + 5, "--wait", 10, "--idle", 0.5, "--json"))
    try:
        wait_listening(sc.server_ns, "u", BLAST_PORT)
        b0, _ = cpu_jiffies()
        send = run(in_ns(sc.client_ns, blast, "send", "--dst", f"{sc.server_ip}:{BLAST_PORT}",
                         "--size", size, "--seconds", seconds, "--flows", BLAST_FLOWS,
                         "--batch", BLAST_BATCH, "--json"), timeout=seconds + 30)
        b1, _ = cpu_jiffies()
        out, err = recv.communicate(timeout=seconds + 20)
    finally:
        inv.stop(recv)
        if size > sc.tenant_mtu - IP_UDP:
            time.sleep(FRAG_TIME + 0.5)
    s = json.loads(send.stdout)
    try:
        r = json.loads(out)
    except ValueError as e:
        raise MeasureFailed(f"nvo-blast recv: {tail(err)}") from e
    if r["packets"] == 0:
        raise MeasureFailed(f"nothing arrived ({s['packets']} datagrams sent; "
                            f"{s.get('first_error') or 'no send error'})")
    return {
        "kpps": r["pps"] / 1e3,
        "mbps": r["mbps"],
        "cpu_us_per_packet": (b1 - b0) / _CLK_TCK * 1e6 / r["packets"],
        "sent_kpps": s["pps"] / 1e3,
        "loss": max(0.0, 1 - r["packets"] / s["packets"]) if s["packets"] else None,
        "sent": s["packets"],
        "received": r["packets"],
        "send_errors": s["errors"],
    }


def rtt(sc, count):
    """`count` pings of 128-byte IP packets every 2 ms; RTT mean, p99, jitter in µs."""
    p = run(in_ns(sc.client_ns, "ping", "-s", "100", "-i", "0.002", "-c", count, "-W", "1",
                  sc.server_ip), timeout=count * 0.01 + 30, check=False)
    replies = sorted((int(seq), float(ms) * 1000) for seq, ms in _REPLY.findall(p.stdout))
    if len(replies) < max(10, count // 2):
        raise MeasureFailed(f"only {len(replies)} of {count} pings answered: {tail(p.stdout, 2)}")
    us = [t for _, t in replies]
    ordered = sorted(us)
    # p99 by nearest rank: the smallest RTT at or above 99 % of the replies.
    p99 = ordered[min(len(ordered) - 1, -(-99 * len(ordered) // 100) - 1)]
    diffs = [abs(b - a) for a, b in zip(us, us[1:])]
    return {
        "avg_us": statistics.fmean(us),
        "p99_us": p99,
        "jitter_us": statistics.fmean(diffs),
        "diff_var_us2": statistics.pvariance([b - a for a, b in zip(us, us[1:])]),
        "loss": 1 - len(us) / count,
        "replies": len(us),
    }


def memory(pid):
    """VmRSS and VmHWM (peak) of process `pid` in KiB, and its name."""
    fields = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            fields[key] = value.strip()
    kib = lambda k: int(fields[k].split()[0]) if k in fields else None
    return {"name": fields.get("Name"), "rss_kib": kib("VmRSS"), "hwm_kib": kib("VmHWM")}


def safely(what, fn, *args):
    """Runs one measurement; returns (sample, None) or (None, reason)."""
    try:
        return fn(*args), None
    except (CommandFailed, MeasureFailed, OSError, ValueError, KeyError,
            subprocess.SubprocessError) as e:
        return None, f"{what}: {e}"


__all__ = ["CommandFailed", "MeasureFailed", "background_busy", "cpu_jiffies", "memory",
           "prepare_server", "rtt", "safely", "sanity", "start_iperf_server", "tcp", "udp"]
