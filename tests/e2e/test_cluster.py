"""Cluster mode on etcd (issue 19, items 1 and 2; docs/cluster.md): three nvods that share their
networks through a real three-member etcd cluster (Debian's etcd-server) and register their
locators under leases, so head-end flood lists follow membership.

     k1 10.0.N.1          k2 10.0.N.2          k3 10.0.N.3      containers: one per host and
        | c<N>               | c<N>               | c<N>        network N (made by this test)
   [ h1: nvod ]         [ h2: nvod ]         [ h3: nvod ]       [cluster] etcd = the three
        \\ eth0 .1           | eth0 .2           / eth0 .3      members, lease_ttl_s = 3
         +------------ nvo-<lab>-ul: br0 10.100.0.0/24 ------------+
           |.241 etcd m1   |.242 etcd m2   |.243 etcd m3   |.240 etcdctl / nvo --etcd
           (namespaces clt<pid>e1..e3 and clt<pid>c, tests/e2e/etcd.py)

The lab lists no network: every network comes from `nvo --etcd … network add`, and no flood list
is given, so the flood lists are the other hosts' leases. One lab and one etcd cluster serve the
whole module; the tests run in file order and each leaves the cluster converged (network 100 on
every host with a container on each) for the next. The nvods start before etcd does: cluster
mode must wait for it.

Runs on both datapaths (NVO_LAB_DATAPATH=ebpf | userspace, as scripts/test.sh does).
"""

import json
import os
import pathlib
import signal
import subprocess
import time

import pytest

from bgp_peers import nvod_pid
from conftest import BIN, NVO, RUN, Lab, api, dump_lab, kill_strays, run, wait_for
from etcd import EtcdCluster

HOSTS = ("h1", "h2", "h3")
LOCATORS = {h: f"10.100.0.{i + 1}" for i, h in enumerate(HOSTS)}
PREFIX = f"clt{os.getpid() % 10000}"
LEASE_TTL_S = 3
# How long an nvod may take to apply a change written to etcd (a watch event).
CONVERGE_S = 10

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (network namespaces)")


def topology(endpoints):
    eps = ", ".join(f"'{e}'" for e in endpoints)
    hosts = "\n".join(
        f"  - {{name: {h}, nvod: {{http_listen: ':9477', cluster: {{etcd: [{eps}], name: {h}, "
        f"lease_ttl_s: {LEASE_TTL_S}}}}}}}" for h in HOSTS)
    return f"underlay: {{family: ipv4, ipv4: 10.100.0.0/24, mtu: 1500}}\nhosts:\n{hosts}\n"


class Cluster:
    """The module's lab, etcd cluster and containers, with the helpers the tests share."""

    def __init__(self, lab, etcd):
        self.lab, self.etcd = lab, etcd
        self.containers = {}  # (host, vni) -> namespace
        self.started = {}  # host -> the Popen of an nvod this test started again
        # Each nvod's command line, to start it again after a kill (same config and state).
        self.cmdlines = {h: [c.decode() for c in pathlib.Path(f"/proc/{nvod_pid(lab, h)}/cmdline")
                             .read_bytes().split(b"\0")[:-1]] for h in HOSTS}

    # -- etcd through nvo --etcd, from the client namespace --------------------------------------

    def nvo_etcd(self, *args, check=True, endpoints=None):
        eps = ",".join(endpoints or self.etcd.endpoints)
        return run("ip", "netns", "exec", self.etcd.client_ns, NVO, "--etcd", eps, *args, check=check)

    # -- what each nvod has -------------------------------------------------------------------

    def status(self, host):
        """GET /v1/cluster (what `nvo cluster status -o json` prints; its text form is checked in
        the bad-objects test)."""
        return api(self.lab, host, "GET", "/v1/cluster")

    def networks(self, host):
        return {n["vni"]: n for n in self.lab.nvo(host, "network", "list")}

    def flood(self, host, vni):
        n = self.networks(host).get(vni)
        return None if n is None else sorted(n["flood"])

    def others(self, host, extra=()):
        return sorted([LOCATORS[h] for h in HOSTS if h != host] + list(extra))

    def metrics(self, host):
        out = run("ip", "netns", "exec", self.etcd.client_ns, "curl", "-s", "--max-time", "5",
                  f"http://{LOCATORS[host]}:9477/metrics").stdout
        values = {}
        for line in out.splitlines():
            if line.startswith("nvo_cluster_"):
                name, _, value = line.rpartition(" ")
                values[name] = float(value)
        return values

    def wait_everywhere(self, predicate, what, timeout=CONVERGE_S, hosts=HOSTS):
        """Waits until PREDICATE(host) holds on every host; returns the seconds it took."""
        t0 = time.monotonic()
        for h in hosts:
            wait_for(lambda: predicate(h), timeout=max(1.0, timeout - (time.monotonic() - t0)),
                     what=f"{what} on {h}")
        return time.monotonic() - t0

    def wait_converged(self, vnis, hosts=HOSTS, timeout=CONVERGE_S, flood_extra=None):
        """Every host has exactly the cluster networks VNIS, each flooding to the others
        (plus FLOOD_EXTRA[vni])."""
        flood_extra = flood_extra or {}

        def ok(h):
            nets = self.networks(h)
            return sorted(nets) == sorted(vnis) and all(
                sorted(nets[v]["flood"]) == self.others(h, flood_extra.get(v, ())) for v in vnis)
        return self.wait_everywhere(ok, f"networks {sorted(vnis)} with full flood lists", timeout, hosts)

    # -- containers -----------------------------------------------------------------------------

    def attach(self, host, vni):
        """A container namespace on HOST in network VNI, 10.0.<vni % 256>.<host number>/24."""
        i = HOSTS.index(host) + 1
        ns = f"{PREFIX}{host}n{vni}"
        port = f"c{vni}"
        mtu = self.networks(host)[vni]["mtu"]
        run("ip", "netns", "add", ns)
        self.containers[(host, vni)] = ns
        run("ip", "-n", ns, "link", "set", "lo", "up")
        self.lab.exec(host, "ip", "link", "add", port, "mtu", str(mtu), "type", "veth", "peer", "name", "eth0",
                      "mtu", str(mtu), "netns", ns)
        run("ip", "-n", ns, "addr", "add", f"10.0.{vni % 256}.{i}/24", "dev", "eth0")
        for key in ("all", "default", "eth0"):
            run("ip", "netns", "exec", ns, "sysctl", "-qw", f"net.ipv6.conf.{key}.disable_ipv6=1", check=False)
        run("ip", "-n", ns, "link", "set", "eth0", "up")
        self.lab.exec(host, "ip", "link", "set", port, "up")
        self.lab.nvo(host, "port", "add", "--vni", str(vni), port)
        return ns

    def mac(self, host, vni):
        ns = self.containers[(host, vni)]
        return run("ip", "netns", "exec", ns, "cat", "/sys/class/net/eth0/address").stdout.strip()

    def ping(self, src, dst, vni, count=3, check=True, interval="0.2"):
        ns = self.containers[(src, vni)]
        addr = f"10.0.{vni % 256}.{HOSTS.index(dst) + 1}"
        return run("ip", "netns", "exec", ns, "ping", "-c", str(count), "-i", interval, "-W", "2", addr,
                   check=check, timeout=60 + count)

    def wait_ping(self, src, dst, vni, timeout=15):
        wait_for(lambda: self.ping(src, dst, vni, count=1, check=False).returncode == 0, timeout=timeout,
                 interval=0.3, what=f"ping {src} -> {dst} in {vni}")

    def kill_nvod(self, host, sig=signal.SIGKILL):
        pid = nvod_pid(self.lab, host)
        assert pid, f"no nvod on {host}"
        os.kill(pid, sig)
        wait_for(lambda: not pathlib.Path(f"/proc/{pid}").exists(), what=f"nvod on {host} to die")
        p = self.started.pop(host, None)
        if p is not None:
            p.wait(timeout=10)

    def start_nvod(self, host):
        """Starts HOST's nvod again as the lab did (module teardown stops it: the lab knows only
        the first nvod of each host)."""
        log = open(RUN / self.lab.name / f"{host}.log", "ab")
        self.started[host] = subprocess.Popen(["ip", "netns", "exec", self.lab.ns(host), *self.cmdlines[host]],
                                              stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                              start_new_session=True)
        log.close()
        wait_for(lambda: self.lab.nvo(host, "node", check=False).returncode == 0, timeout=15,
                 what=f"restarted nvod on {host} to answer")

    def reset(self):
        """Back to the state every test starts from, whatever the last one left: etcd whole and
        reachable, every nvod running, network 100 alone in etcd and on every host, a container
        on each host in it."""
        self.etcd.heal()
        for i in range(3):
            if not self.etcd.alive(i):
                self.etcd.start(i)
        self.etcd.wait_writable()
        for h in HOSTS:
            if nvod_pid(self.lab, h) is None:
                self.start_nvod(h)
        for key, value in self.etcd.get_prefix("/nvo/networks/").items():
            if key != "/nvo/networks/100":
                self.etcd.delete(key)
        if self.etcd.get("/nvo/networks/100") != '{"vni": 100}':
            self.etcd.put("/nvo/networks/100", {"vni": 100})
        for (h, vni), ns in list(self.containers.items()):
            if vni != 100:
                self.lab.nvo(h, "port", "del", f"c{vni}", check=False)
                run("ip", "netns", "del", ns, check=False)
                del self.containers[(h, vni)]
        self.wait_converged([100], timeout=30)
        for h in HOSTS:
            if (h, 100) not in self.containers:
                self.attach(h, 100)

    def close(self):
        for p in self.started.values():
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait(timeout=5)
        for ns in self.containers.values():
            run("ip", "netns", "del", ns, check=False)



@pytest.fixture(scope="module")
def cl(tmp_path_factory):
    name = f"cl{os.getpid() % 10000}"
    lab = None
    # The members hang off the lab's underlay bridge, so every host reaches them directly.
    etcd = EtcdCluster(PREFIX, bridge_ns=f"nvo-{name}-ul")
    path = tmp_path_factory.mktemp("cluster") / f"{name}.yaml"
    path.write_text(f"name: {name}\n" + topology(etcd.endpoints))
    c = None
    try:
        run(NVO, "lab", "up", path, "--nvod", BIN / "nvod", timeout=240)
        lab = Lab(name, path)
        # Before etcd exists: each nvod serves its API, in cluster mode, not connected.
        c = Cluster(lab, etcd)
        c.before_etcd = {h: c.status(h) for h in HOSTS}
        etcd.start_all()
        yield c
    except BaseException:
        if lab is not None:
            dump_lab(name)
        print(etcd.log_tail())
        raise
    finally:
        if c is not None:
            c.close()
        etcd.close()
        if lab is not None:
            kill_strays(name)
        run(NVO, "lab", "down", name, check=False, timeout=60)
        left = [n for n in run("ip", "netns", "list").stdout.split()
                if n.startswith(f"nvo-{name}-") or n.startswith(PREFIX)]
        assert not left, f"namespaces left behind: {left}"


# The tests that build the starting state themselves; every other test starts from reset().
BUILDERS = ("test_nvods_start_before_etcd_then_connect_and_register",
            "test_a_network_written_once_appears_on_every_nvod_and_carries_traffic")


@pytest.fixture(autouse=True)
def each_test(request, cl):
    """Resets the shared lab and etcd before a test (so one failure does not fail the rest);
    shows the logs after a failed one."""
    if request.node.originalname not in BUILDERS:
        cl.reset()
    yield
    rep = getattr(request.node, "rep_call", None)
    if rep is not None and rep.failed:
        dump_lab(cl.lab.name)
        print(cl.etcd.log_tail())
        for h in HOSTS:
            print(h, json.dumps(cl.status(h)) if nvod_pid(cl.lab, h) else "nvod not running")


def test_nvods_start_before_etcd_then_connect_and_register(cl):
    for h in HOSTS:
        s = cl.before_etcd[h]
        assert s["enabled"] is True and s["connected"] is False, s
        assert s["name"] == h and s["prefix"] == "/nvo/" and s["endpoints"] == cl.etcd.endpoints, s
    want_hosts = [{"name": h, "locator": LOCATORS[h], "node_id": i + 1} for i, h in enumerate(HOSTS)]
    cl.wait_everywhere(lambda h: cl.status(h)["connected"] and sorted(cl.status(h)["hosts"], key=lambda x: x["name"])
                       == want_hosts, "connected, three hosts registered", timeout=20)
    for h in HOSTS:
        node = cl.lab.nvo(h, "node")
        assert node["cluster"]["connected"] is True and node["cluster"]["revision"] > 0, node
        m = cl.metrics(h)
        assert m.get("nvo_cluster_connected") == 1 and m.get("nvo_cluster_hosts") == 3, m
    # Each registration is under a lease: the key exists now and says who and where.
    regs = cl.etcd.get_prefix("/nvo/hosts/")
    assert {k: json.loads(v) for k, v in regs.items()} == {f"/nvo/hosts/{h['name']}": h for h in want_hosts}


def test_a_network_written_once_appears_on_every_nvod_and_carries_traffic(cl):
    t0 = time.monotonic()
    cl.nvo_etcd("network", "add", "100")
    spec = json.loads(cl.etcd.get("/nvo/networks/100"))
    assert spec["vni"] == 100 and "flood" not in spec, spec
    cl.wait_converged([100])
    appeared = time.monotonic() - t0
    for h in HOSTS:
        cl.attach(h, 100)
    cl.wait_ping("h1", "h2", 100)
    cl.wait_ping("h1", "h3", 100)
    print(f"network 100: on every nvod {appeared:.2f}s after the write, ping on all "
          f"{time.monotonic() - t0:.2f}s (containers attached in between)")
    cl.ping("h2", "h3", 100)
    for h in HOSTS:
        assert cl.status(h)["networks"] == [100]
        assert cl.lab.nvo(h, "network", "show", "100")["ports"] == ["c100"]
    listed = cl.nvo_etcd("network", "list").stdout
    assert "100" in listed, listed


def test_the_cli_refuses_bad_networks_before_etcd(cl):
    rev = cl.etcd.revision()
    for args in (["0"], ["16777216"], ["101", "--mtu", "100"], ["101", "--mtu", "70000"], ["x"]):
        p = cl.nvo_etcd("network", "add", *args, check=False)
        assert p.returncode != 0 and p.stderr.strip(), (args, p.stdout, p.stderr)
    assert cl.etcd.revision() == rev, "a refused network reached etcd"
    assert cl.etcd.get_prefix("/nvo/networks/").keys() == {"/nvo/networks/100"}
    p = cl.nvo_etcd("network", "del", "4242", check=False)
    assert p.returncode == 1 and "4242" in p.stderr, p.stderr


def test_deleted_once_gone_from_all_but_kept_where_ports_are_attached(cl):
    cl.nvo_etcd("network", "add", "101")
    cl.nvo_etcd("network", "add", "102")
    cl.wait_converged([100, 101, 102])
    cl.attach("h1", 102)
    cl.nvo_etcd("network", "del", "101")
    cl.nvo_etcd("network", "del", "102")
    assert cl.etcd.get_prefix("/nvo/networks/").keys() == {"/nvo/networks/100"}
    cl.wait_converged([100], hosts=("h2", "h3"))
    # h1 keeps 102 (a port is attached) and says why; it drops 101.
    wait_for(lambda: sorted(cl.networks("h1")) == [100, 102], timeout=CONVERGE_S, what="h1 to drop 101 only")

    def why(h):
        return [s for s in cl.status(h)["skipped"] if s["key"] == "/nvo/networks/102"]
    skipped = wait_for(lambda: why("h1"), what="h1 to report 102 as skipped")
    assert "c102" in skipped[0]["error"], skipped
    cl.ping("h1", "h2", 100)
    # Detached, the port no longer holds it: written again and deleted again, it goes.
    cl.lab.nvo("h1", "port", "del", "c102")
    run("ip", "netns", "del", cl.containers.pop(("h1", 102)))
    cl.nvo_etcd("network", "add", "102")
    cl.wait_converged([100, 102])
    cl.nvo_etcd("network", "del", "102")
    cl.wait_converged([100])
    assert not why("h1")


def leader(cl):
    status = json.loads(cl.etcd.etcdctl("endpoint", "status", "-w", "json").stdout)
    lead = status[0]["Status"]["leader"]
    return next(i for i, s in enumerate(status) if s["Status"]["header"]["member_id"] == lead)


def test_one_etcd_member_killed_changes_nothing_and_writes_still_work(cl):
    before = {h: cl.networks(h) for h in HOSTS}
    lost = leader(cl)
    cl.etcd.kill(lost)
    try:
        survivors = [e for i, e in enumerate(cl.etcd.endpoints) if i != lost]
        cl.etcd.wait_writable(endpoints=survivors)
        # For 10 s (three lease TTLs) nothing may change: every host keeps its networks and its
        # full flood lists (no lease lost), and traffic flows.
        t0 = time.monotonic()
        while time.monotonic() - t0 < 3 * LEASE_TTL_S + 1:
            for h in HOSTS:
                nets = cl.networks(h)
                assert nets.keys() == before[h].keys(), (h, f"{time.monotonic() - t0:.1f}s", cl.status(h))
                assert sorted(nets[100]["flood"]) == cl.others(h), \
                    (h, f"{time.monotonic() - t0:.1f}s after the kill", cl.status(h))
            time.sleep(0.5)
        cl.ping("h1", "h3", 100)
        # The CLI is given every endpoint, the dead one included, as an operator would.
        cl.nvo_etcd("network", "add", "103")
        cl.wait_converged([100, 103], timeout=20)
        cl.wait_everywhere(lambda h: cl.status(h)["connected"], "connected", timeout=20)
        cl.ping("h2", "h1", 100)
    finally:
        cl.etcd.start(lost)
    cl.etcd.wait_writable()


def test_etcd_unreachable_for_30s_traffic_continues_and_changes_apply_on_return(cl):
    cl.nvo_etcd("network", "add", "103")
    cl.wait_converged([100, 103])
    cl.ping("h1", "h2", 100)
    c2 = cl.mac("h2", 100)
    assert any(e["mac"] == c2 and e["origin"] == "learned" for e in cl.lab.fdb("h1", 100))
    resyncs = {h: cl.metrics(h).get("nvo_cluster_resyncs_total", 0) for h in HOSTS}
    before = {h: cl.networks(h) for h in HOSTS}
    t_cut = time.monotonic()
    cl.etcd.cut(list(LOCATORS.values()))
    healed = False
    try:
        # Traffic during the whole outage: 0.2 s apart, none may be lost.
        pinger = subprocess.Popen(["ip", "netns", "exec", cl.containers[("h1", 100)], "ping", "-q", "-c", "130",
                                   "-i", "0.2", "-W", "1", "10.0.100.2"], stdout=subprocess.PIPE, text=True)
        # Each nvod notices and says so (its lease keep-alives go unanswered).
        took = cl.wait_everywhere(lambda h: cl.lab.nvo(h, "node")["cluster"]["connected"] is False,
                                  "nvod to report etcd lost", timeout=4 * LEASE_TTL_S + 5)
        print(f"etcd lost: reported by every nvod within {took:.1f}s")
        for h in HOSTS:
            assert cl.metrics(h).get("nvo_cluster_connected") == 0
        # Changes made meanwhile, by a client etcd still answers: a new network, a deletion, a
        # flood-only change of the network in use.
        cl.nvo_etcd("network", "add", "104")
        cl.nvo_etcd("network", "del", "103")
        # `network add` of a VNI in etcd replaces its object.
        cl.nvo_etcd("network", "add", "100", "--flood", "10.100.0.99")
        assert json.loads(cl.etcd.get("/nvo/networks/100")) == {"vni": 100, "flood": ["10.100.0.99"]}
        out, _ = pinger.communicate(timeout=60)
        # Nothing changed on the nvods while cut off.
        for h in HOSTS:
            assert cl.networks(h).keys() == before[h].keys(), h
        wait_for(lambda: time.monotonic() - t_cut >= 30, timeout=40, what="30 s of outage")
        assert " 130 received" in out, out
        cl.etcd.heal()
        healed = True
        t_heal = time.monotonic()
        cl.wait_converged([100, 104], timeout=30, flood_extra={100: ["10.100.0.99"]})
        print(f"etcd back: every nvod converged {time.monotonic() - t_heal:.1f}s after the cut ended")
        cl.wait_everywhere(lambda h: cl.status(h)["connected"], "connected again", timeout=20)
        # Only the difference was applied: network 100 was not re-created, so h1's learned MAC
        # of c2 (no traffic since the ping above ended) is still there.
        assert any(e["mac"] == c2 and e["origin"] == "learned" for e in cl.lab.fdb("h1", 100)), \
            cl.lab.fdb("h1", 100)
        rev = cl.etcd.revision()
        cl.wait_everywhere(lambda h: cl.status(h)["revision"] >= rev - 3, "a recent revision")
        for h in HOSTS:
            assert cl.metrics(h).get("nvo_cluster_resyncs_total", 0) > resyncs[h]
        cl.ping("h3", "h1", 100)
    finally:
        if not healed:
            cl.etcd.heal()


BAD = {
    "/nvo/networks/110": "this is not json {",
    "/nvo/networks/111": '{"vni": "111"}',
    "/nvo/networks/112": '{"vni": 112, "mtu": "big"}',
    "/nvo/networks/16777216": '{"vni": 16777216}',
    "/nvo/networks/0": '{"vni": 0}',
    "/nvo/networks/113": '{"vni": 114}',
    "/nvo/networks/115": '{"vni": 115, "colour": "red"}',
    "/nvo/networks/116": '{"vni": 116, "mtu": 65000}',
    "/nvo/networks/117": '{"vni": 117, "encap": "no-such-profile"}',
    "/nvo/networks/abc": '{"vni": 118}',
}


def test_bad_objects_in_etcd_are_skipped_reported_and_disturb_nothing(cl):
    invalid = {h: cl.metrics(h).get("nvo_cluster_invalid_objects_total", 0) for h in HOSTS}
    for key, value in BAD.items():
        cl.etcd.put(key, value)
    # A valid object written after them is applied: the watch was not derailed.
    cl.nvo_etcd("network", "add", "120")

    def reported(h):
        skipped = {s["key"]: s["error"] for s in cl.status(h)["skipped"]}
        return skipped if set(BAD) <= set(skipped) else None
    cl.wait_converged([100, 120])
    for h in HOSTS:
        skipped = wait_for(lambda: reported(h), timeout=CONVERGE_S, what=f"{h} to report every bad object")
        for key, error in skipped.items():
            assert error and "\n" not in error, (key, error)
        assert "114" in skipped["/nvo/networks/113"] and "113" in skipped["/nvo/networks/113"], skipped
        m = cl.metrics(h)
        assert m["nvo_cluster_objects_skipped"] >= len(BAD), m
        assert m["nvo_cluster_invalid_objects_total"] >= invalid[h] + len(BAD), m
        assert sorted(cl.networks(h)) == [100, 120]
        text = run(NVO, "--socket", cl.lab.socket(h), "cluster", "status").stdout
        assert "/nvo/networks/110" in text, text
    cl.ping("h1", "h2", 100)
    # A valid object replacing an invalid one is applied; the rest stay skipped.
    cl.etcd.put("/nvo/networks/115", {"vni": 115})
    cl.wait_converged([100, 115, 120])
    for h in HOSTS:
        assert "/nvo/networks/115" not in {s["key"] for s in cl.status(h)["skipped"]}
    # Deleted, bad objects leave the list.
    for key in [*BAD, "/nvo/networks/120"]:
        cl.etcd.delete(key)
    cl.wait_converged([100])
    cl.wait_everywhere(lambda h: cl.status(h)["skipped"] == [], "the skipped list to empty")
    cl.ping("h1", "h3", 100)


def test_an_nvod_restarted_while_a_change_is_made_converges(cl):
    cl.nvo_etcd("network", "add", "130")
    cl.wait_converged([100, 130])
    cl.kill_nvod("h2")
    cl.nvo_etcd("network", "del", "130")
    cl.nvo_etcd("network", "add", "131")
    cl.start_nvod("h2")
    # From its state file it has 100 (and its port) at once, and 130 until etcd answers; then
    # it converges from etcd: 130 gone, 131 there.
    t0 = time.monotonic()
    cl.wait_converged([100, 131], timeout=20)
    print(f"restarted nvod converged {time.monotonic() - t0:.1f}s after it answered")
    assert cl.lab.nvo("h2", "network", "show", "100")["ports"] == ["c100"]
    cl.wait_ping("h1", "h2", 100)


def test_a_host_whose_lease_expires_leaves_the_others_flood_lists(cl):
    cl.kill_nvod("h3")
    t0 = time.monotonic()

    def gone(h):
        return cl.flood(h, 100) == [LOCATORS[x] for x in HOSTS if x not in (h, "h3")] \
            and "h3" not in [x["name"] for x in cl.status(h)["hosts"]]
    cl.wait_everywhere(gone, "h3 to leave the flood list", timeout=LEASE_TTL_S + 10, hosts=("h1", "h2"))
    print(f"h3 left the flood lists {time.monotonic() - t0:.1f}s after its nvod was killed (TTL {LEASE_TTL_S}s)")
    assert "/nvo/hosts/h3" not in cl.etcd.get_prefix("/nvo/hosts/")
    cl.ping("h1", "h2", 100)
    cl.start_nvod("h3")
    cl.wait_converged([100], timeout=20)
    cl.wait_ping("h1", "h3", 100)
