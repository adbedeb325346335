"""A hypervisor for the virtual-port tests (test_vport.py, test_acl.py): a namespace with a Linux
bridge br0, an uplink veth up0 whose peer hv0 goes into a lab host's namespace (to become a
shared port of its nvod), and one namespace per VM on the bridge, each with its MAC and address
on eth0 (MTU 1450, for the tunnel's overhead).

    vmN eth0 (MAC, IP)  ...
      |
    [ TAG-PID-hv: br0 ] -- up0 ==veth== hv0 (in the host's namespace)

The namespaces are the test's own and close() deletes them, killing what runs inside.
"""

import os
import signal

from conftest import run, wait_for
from ovs_peer import in_ns


class Hypervisor:
    """A namespace with a Linux bridge, an uplink into a host (hv0) and one namespace per VM."""

    def __init__(self, vms, tag="vpo"):
        """vms: {n: (mac, ip)}; tag starts the namespaces' names (TAG-PID-hv, TAG-PID-vmN)."""
        pid = os.getpid() % 100000
        self.spec = vms
        self.ns = f"{tag}-{pid}-hv"
        self.vms = {n: f"{tag}-{pid}-vm{n}" for n in vms}
        self.made = []

    def start(self, h1_ns):
        for ns in (self.ns, *self.vms.values()):
            run("ip", "netns", "add", ns)
            self.made.append(ns)
            run(*in_ns(ns, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1",
                       "net.ipv6.conf.default.disable_ipv6=1"))
            run(*in_ns(ns, "ip", "link", "set", "lo", "up"))
        run(*in_ns(self.ns, "ip", "link", "add", "br0", "type", "bridge"))
        run(*in_ns(self.ns, "ip", "link", "add", "up0", "type", "veth", "peer", "name", "hv0",
                   "netns", h1_ns))
        run(*in_ns(h1_ns, "sysctl", "-qw", "net.ipv6.conf.hv0.disable_ipv6=1"))
        run(*in_ns(h1_ns, "ip", "link", "set", "hv0", "up"))
        run(*in_ns(self.ns, "ip", "link", "set", "up0", "master", "br0", "up"))
        for n, ns in self.vms.items():
            mac, ip = self.spec[n]
            port = f"vm{n}"
            run(*in_ns(self.ns, "ip", "link", "add", port, "type", "veth", "peer", "name", "eth0",
                       "netns", ns))
            run(*in_ns(self.ns, "ip", "link", "set", port, "master", "br0", "up"))
            run(*in_ns(ns, "ip", "link", "set", "eth0", "address", mac, "mtu", "1450"))
            run(*in_ns(ns, "ip", "addr", "add", f"{ip}/24", "dev", "eth0"))
            run(*in_ns(ns, "ip", "link", "set", "eth0", "up"))
        run(*in_ns(self.ns, "ip", "link", "set", "br0", "up"))

    def ping(self, vm, addr, count=3, check=False):
        return run(*in_ns(self.vms[vm], "ping", "-c", count, "-i", "0.2", "-W", "2", addr),
                   check=check, timeout=30)

    def close(self):
        for ns in reversed(self.made):
            for pid in run("ip", "netns", "pids", ns, check=False).stdout.split():
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except OSError:
                    pass
            run("ip", "netns", "delete", ns, check=False)


def reachable(ping, what):
    """Waits until one ping gets through (the first may go while ARP resolves), then insists
    on a clean round."""
    wait_for(lambda: ping(1).returncode == 0, timeout=15, what=what)
    assert ping(3).returncode == 0, what
