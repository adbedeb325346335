"""nvo-cni driven by the CNI project's own client, cnitool, on two nvo hosts.

   cniNa (10.50.0.1x)                     cniNb (10.50.0.2x)     container namespaces made here,
        | eth0 (ADDed by cnitool)              | eth0              attached by nvo-cni
        | nvcXXXXXXXXXXXX                      | nvcXXXXXXXXXXXX   host ends: ports of network 100
     +--------------+                     +--------------+
     | h1: nvod     |                     | h2: nvod     |       lab host namespaces
     +------+-------+                     +------+-------+
            | eth0                               | eth0
            +----------- ul: bridge -------------+               underlay 10.100.0.0/24

Addresses come from Debian's host-local (one data directory per host, disjoint ranges of one
/24), `bandwidth` and `portmap` are chained after nvo-cni in a conflist. Run it with
NVO_LAB_DATAPATH=ebpf and =userspace: the port attach path differs per datapath.
Needs root, cnitool and containernetworking-plugins (scripts/setup.sh installs them).
"""

import hashlib
import ipaddress
import json
import os
import pathlib
import re
import shutil
import subprocess

import pytest

from conftest import BIN, run

PLUGINS = pathlib.Path("/usr/lib/cni")
CNITOOL = shutil.which("cnitool") or "/usr/local/bin/cnitool"
NVO_CNI = BIN / "nvo-cni"
CNI_PATH = f"{BIN}:{PLUGINS}"



def need(*paths):
    """Fails (not skips) when a tool scripts/setup.sh installs is missing: a CI run without it
    would otherwise pass without testing anything."""
    missing = [str(p) for p in paths if not os.path.exists(p)]
    if missing:
        pytest.fail(f"missing {', '.join(missing)}: scripts/setup.sh installs them")


@pytest.fixture(autouse=True)
def cni_tools():
    need(PLUGINS / "host-local", CNITOOL)

TOPOLOGY = """
underlay: {family: ipv4, ipv4: 10.100.0.0/24, mtu: 1500}
hosts: [{name: h1}, {name: h2}]
networks: [{vni: 100, flood: [h1, h2]}]
"""

RANGES = {"h1": ("10.50.0.10", "10.50.0.19"), "h2": ("10.50.0.20", "10.50.0.29")}


def host_name(container_id, ifname):
    """nvo-cni's host-end name (crates/cni/src/link.rs): nvc + 48 bits of FNV-1a."""
    h = 0xCBF29CE484222325
    for b in container_id.encode() + b"\0" + ifname.encode():
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return "nvc%012x" % (h & 0xFFFFFFFFFFFF)


def netconf(lab, host, tmp_path, name="cnired", vni=100, **extra):
    start, end = RANGES[host]
    conf = {
        "cniVersion": "1.0.0",
        "name": name,
        "type": "nvo-cni",
        "vni": vni,
        "socket": str(lab.socket(host)),
        "ipam": {
            "type": "host-local",
            "ranges": [[{"subnet": "10.50.0.0/24", "rangeStart": start, "rangeEnd": end, "gateway": "10.50.0.1"}]],
            "routes": [{"dst": "10.60.0.0/16"}],
            "dataDir": str(tmp_path / f"ipam-{host}"),
        },
    }
    conf.update(extra)
    return conf


def write_conf(tmp_path, host, conf):
    d = tmp_path / f"net.d-{host}"
    d.mkdir(exist_ok=True)
    suffix = "conflist" if "plugins" in conf else "conf"
    (d / f"10-{conf['name']}.{suffix}").write_text(json.dumps(conf))
    return d


def cnitool_id(netns):
    """The container ID cnitool v1.1.2 passes: it ignores CNI_CONTAINERID and hashes the
    namespace path (cnitool/cnitool.go)."""
    return "cnitool-" + hashlib.sha512(f"/var/run/netns/{netns}".encode()).hexdigest()[:20]


def cnitool(lab, host, confdir, cmd, name, netns, check=True, cap_args=None):
    env = ["env", f"CNI_PATH={CNI_PATH}", f"NETCONFPATH={confdir}"]
    if cap_args is not None:
        env.append(f"CAP_ARGS={json.dumps(cap_args)}")
    return lab.exec(host, *env, CNITOOL, cmd, name, f"/var/run/netns/{netns}", check=check, timeout=60)


def plugin(lab, host, command, conf, container_id="", netns="", ifname="eth0"):
    """Calls nvo-cni as a runtime does, in HOST's namespace; returns (rc, decoded stdout)."""
    env = [f"CNI_COMMAND={command}", f"CNI_CONTAINERID={container_id}", f"CNI_IFNAME={ifname}",
           f"CNI_PATH={CNI_PATH}"]
    if netns:
        env.append(f"CNI_NETNS=/var/run/netns/{netns}")
    p = run("ip", "netns", "exec", lab.ns(host), "env", *env, NVO_CNI, input=json.dumps(conf), check=False)
    return p.returncode, (json.loads(p.stdout) if p.stdout.strip() else None)


def assert_cni_result(result, netns, ifname="eth0", version="1.0.0"):
    """The shape CNI spec 1.0 "Success" gives a result, checked field by field."""
    assert set(result) <= {"cniVersion", "interfaces", "ips", "routes", "dns"}, result
    assert result["cniVersion"] == version
    ifaces = result["interfaces"]
    assert isinstance(ifaces, list) and len(ifaces) >= 2, result
    for i in ifaces:
        assert set(i) <= {"name", "mac", "sandbox", "mtu"}, i
        assert isinstance(i["name"], str) and 0 < len(i["name"]) <= 15, i
        assert re.fullmatch(r"([0-9a-f]{2}:){5}[0-9a-f]{2}", i["mac"]), i
        assert "mtu" not in i or version != "1.0.0", "mtu is a 1.1 field"
    # Chained plugins may add host interfaces of their own (bandwidth's ifb device).
    host = [i for i in ifaces if not i.get("sandbox") and i["name"].startswith("nvc")]
    inside = [n for n, i in enumerate(ifaces) if i.get("sandbox") == f"/var/run/netns/{netns}" and i["name"] == ifname]
    assert len(host) == 1 and host[0]["name"].startswith("nvc") and len(inside) == 1, ifaces
    assert result["ips"], result
    for ip in result["ips"]:
        assert set(ip) <= {"address", "gateway", "interface"}, ip
        ipaddress.ip_interface(ip["address"])
        if "gateway" in ip:
            ipaddress.ip_address(ip["gateway"])
        assert ip["interface"] == inside[0], ip
    for r in result.get("routes", []):
        assert set(r) <= {"dst", "gw"}, r
        ipaddress.ip_network(r["dst"])
        if "gw" in r:
            ipaddress.ip_address(r["gw"])
    assert isinstance(result["dns"], dict), result
    return host[0]["name"], result["ips"][0]["address"].split("/")[0]


@pytest.fixture
def containers():
    """Makes container namespaces cni<pid><n>; deletes every one and cnitool's cached results
    for it, also when the test fails."""
    made = []

    def make():
        name = f"cni{os.getpid() % 100000}{len(made)}"
        run("ip", "netns", "add", name)
        made.append(name)
        run("ip", "-n", name, "link", "set", "lo", "up")
        return name

    yield make
    for name in made:
        run("ip", "netns", "del", name, check=False)
        for cached in pathlib.Path("/var/lib/cni/results").glob(f"*-{cnitool_id(name)}-*"):
            cached.unlink()


def ports(lab, host):
    return {p["name"]: p for p in lab.nvo(host, "port", "list")}


def link_exists(lab, host, name):
    return lab.exec(host, "ip", "link", "show", "dev", name, check=False).returncode == 0


def ipam_files(tmp_path, host):
    d = tmp_path / f"ipam-{host}" / "cnired"
    return sorted(p.name for p in d.iterdir() if re.fullmatch(r"[0-9.]+", p.name)) if d.exists() else []


def test_cnitool_add_check_del_across_hosts(lab_factory, containers, tmp_path):
    lab = lab_factory(TOPOLOGY)
    mtu = {h: lab.nvo(h, "network", "list")[0]["mtu"] for h in ("h1", "h2")}
    attached = {}
    for host in ("h1", "h2"):
        ns = containers()
        confdir = write_conf(tmp_path, host, netconf(lab, host, tmp_path))
        cid = cnitool_id(ns)
        out = cnitool(lab, host, confdir, "add", "cnired", ns)
        veth, addr = assert_cni_result(json.loads(out.stdout), ns)
        assert veth == host_name(cid, "eth0")
        attached[host] = (ns, confdir, cid, veth, addr)
        # The host end is a port of network 100 that nvod has open; both ends at nvod's MTU.
        assert ports(lab, host)[veth]["vni"] == 100 and ports(lab, host)[veth]["up"]
        inner = json.loads(run("ip", "-n", ns, "-j", "addr", "show", "dev", "eth0").stdout)[0]
        outer = json.loads(lab.exec(host, "ip", "-j", "link", "show", "dev", veth).stdout)[0]
        assert inner["mtu"] == outer["mtu"] == mtu[host], (inner["mtu"], outer["mtu"], mtu)
        assert "UP" in inner["flags"] and "UP" in outer["flags"]
        assert any(a["local"] == addr and a["prefixlen"] == 24 for a in inner["addr_info"]), inner
        route = run("ip", "-n", ns, "route", "show", "10.60.0.0/16").stdout
        assert "via 10.50.0.1 dev eth0" in route, route
        assert ipam_files(tmp_path, host) == [addr]
    (ns1, conf1, cid1, veth1, addr1), (ns2, conf2, cid2, veth2, addr2) = attached["h1"], attached["h2"]
    assert addr1 != addr2
    run("ip", "netns", "exec", ns1, "ping", "-c", "3", "-i", "0.2", "-W", "2", addr2, timeout=30)
    run("ip", "netns", "exec", ns2, "ping", "-c", "3", "-i", "0.2", "-W", "2", addr1, timeout=30)
    assert lab.counters("h1")["networks"]["100"]["encap_unicast"] > 0

    cnitool(lab, "h1", conf1, "check", "cnired", ns1)
    # The host end deleted by hand: CHECK says the attachment is broken.
    lab.exec("h1", "ip", "link", "del", veth1)
    p = cnitool(lab, "h1", conf1, "check", "cnired", ns1, check=False)
    assert p.returncode != 0 and f"host interface {veth1} is gone" in p.stderr, p.stderr
    # DEL twice: both succeed; port, veth and address are gone.
    for _ in range(2):
        cnitool(lab, "h1", conf1, "del", "cnired", ns1)
    assert veth1 not in ports(lab, "h1") and not link_exists(lab, "h1", veth1)
    assert ipam_files(tmp_path, "h1") == []
    # On h2: another MTU, then a missing address, then a missing port — CHECK names each.
    run("ip", "-n", ns2, "link", "set", "eth0", "mtu", "1400")
    p = cnitool(lab, "h2", conf2, "check", "cnired", ns2, check=False)
    assert p.returncode != 0 and f"mtu 1400, want up and mtu {mtu['h2']}" in p.stderr, p.stderr
    run("ip", "-n", ns2, "link", "set", "eth0", "mtu", str(mtu["h2"]))
    cnitool(lab, "h2", conf2, "check", "cnired", ns2)
    run("ip", "-n", ns2, "addr", "del", f"{addr2}/24", "dev", "eth0")
    p = cnitool(lab, "h2", conf2, "check", "cnired", ns2, check=False)
    assert p.returncode != 0 and f"eth0 lacks address {addr2}/24" in p.stderr, p.stderr
    run("ip", "-n", ns2, "addr", "add", f"{addr2}/24", "dev", "eth0")
    cnitool(lab, "h2", conf2, "check", "cnired", ns2)
    # The port goes from nvod by hand: CHECK names it; DEL still succeeds.
    lab.nvo("h2", "port", "del", veth2)
    p = cnitool(lab, "h2", conf2, "check", "cnired", ns2, check=False)
    assert p.returncode != 0 and f"has no port {veth2}" in p.stderr, p.stderr
    for _ in range(2):
        cnitool(lab, "h2", conf2, "del", "cnired", ns2)
    assert not link_exists(lab, "h2", veth2) and ipam_files(tmp_path, "h2") == []
    # DEL of a container whose namespace is gone succeeds too.
    run("ip", "netns", "del", ns2)
    rc, out = plugin(lab, "h2", "DEL", netconf(lab, "h2", tmp_path), cid2, ns2)
    assert rc == 0 and out is None


def test_bad_configurations_fail_with_their_code_and_leave_nothing(lab_factory, containers, tmp_path):
    lab = lab_factory(TOPOLOGY)
    ns = containers()
    cid = "cnitest-bad"
    veth = host_name(cid, "eth0")
    good = netconf(lab, "h1", tmp_path)
    no_vni = {k: v for k, v in good.items() if k != "vni"}
    bad_ipam = netconf(lab, "h1", tmp_path)
    bad_ipam["ipam"]["ranges"] = [[{"subnet": "10.50.0.0/24", "rangeStart": "10.99.0.1"}]]
    cases = [
        (no_vni, 7, "vni missing"),
        (netconf(lab, "h1", tmp_path, vni=999), 7, "vni 999: nvod has no such network"),
        (netconf(lab, "h1", tmp_path, vni=1 << 24), 7, "vni 16777216"),
        ({**good, "cniVersion": "0.3.1"}, 1, "cniVersion"),
        ({**good, "socket": "/run/nvo/none.sock"}, 11, "cannot reach nvod"),
        ({**good, "ipam": {"type": "no-such-ipam"}}, 7, "not in CNI_PATH"),
        # host-local refuses a range outside its subnet after the veth and port were made:
        # ADD rolls them back.
        (bad_ipam, None, "ipam plugin host-local"),
    ]
    for conf, want, text in cases:
        rc, err = plugin(lab, "h1", "ADD", conf, cid, ns)
        assert rc != 0 and err is not None, (conf, err)
        assert set(err) <= {"cniVersion", "code", "msg", "details"} and isinstance(err["code"], int), err
        if want is not None:
            assert err["code"] == want, (conf, err)
        assert text in err["msg"], err
        assert not link_exists(lab, "h1", veth), f"{text}: veth left behind"
        assert veth not in ports(lab, "h1"), f"{text}: port left behind"
        links = json.loads(run("ip", "-n", ns, "-j", "link", "show").stdout)
        assert [l["ifname"] for l in links] == ["lo"], f"{text}: {links}"
        assert ipam_files(tmp_path, "h1") == []
    # An interface name already taken in the container: code 103, the existing one untouched.
    run("ip", "-n", ns, "link", "add", "eth0", "type", "veth", "peer", "name", "cnipeer")
    rc, err = plugin(lab, "h1", "ADD", good, cid, ns)
    assert rc != 0 and err["code"] == 103, err
    assert not link_exists(lab, "h1", veth) and veth not in ports(lab, "h1")
    assert run("ip", "-n", ns, "link", "show", "eth0", check=False).returncode == 0
    # The daemon kept running through all of it.
    assert lab.nvo("h1", "network", "list")[0]["vni"] == 100


def test_status_gc_and_version(lab_factory, containers, tmp_path):
    lab = lab_factory(TOPOLOGY)
    conf = netconf(lab, "h1", tmp_path, cniVersion="1.1.0")
    rc, out = plugin(lab, "h1", "VERSION", {"cniVersion": "1.1.0"})
    assert rc == 0 and out["supportedVersions"] == ["1.0.0", "1.1.0"]
    rc, out = plugin(lab, "h1", "STATUS", conf)
    assert rc == 0 and out is None
    rc, out = plugin(lab, "h1", "STATUS", {**conf, "vni": 4242})
    assert rc != 0 and out["code"] == 50, out
    keep, drop = containers(), containers()
    for ns in (keep, drop):
        rc, out = plugin(lab, "h1", "ADD", conf, f"cid-{ns}", ns)
        assert rc == 0, out
        # 1.1 results carry each interface's MTU.
        assert_cni_result(out, ns, version="1.1.0")
        assert all(i["mtu"] == lab.nvo("h1", "network", "list")[0]["mtu"] for i in out["interfaces"])
    gc = {**conf, "cni.dev/valid-attachments": [{"containerID": f"cid-{keep}", "ifname": "eth0"}]}
    rc, out = plugin(lab, "h1", "GC", gc)
    assert rc == 0, out
    names = ports(lab, "h1")
    assert host_name(f"cid-{keep}", "eth0") in names and host_name(f"cid-{drop}", "eth0") not in names
    assert not link_exists(lab, "h1", host_name(f"cid-{drop}", "eth0"))
    for ns in (keep, drop):
        assert plugin(lab, "h1", "DEL", conf, f"cid-{ns}", ns)[0] == 0
    assert not any(n.startswith("nvc") for n in ports(lab, "h1"))


def test_chained_with_bandwidth_and_portmap(lab_factory, containers, tmp_path):
    lab = lab_factory(TOPOLOGY)
    first = netconf(lab, "h1", tmp_path, name="cnichain")
    del first["cniVersion"], first["name"]
    conflist = {
        "cniVersion": "1.0.0",
        "name": "cnichain",
        "plugins": [
            first,
            {"type": "bandwidth", "capabilities": {"bandwidth": True}},
            {"type": "portmap", "capabilities": {"portMappings": True}, "snat": True},
        ],
    }
    confdir = write_conf(tmp_path, "h1", conflist)
    shape = {"ingressRate": 8_000_000, "ingressBurst": 1_000_000}
    if os.environ.get("NVO_LAB_DATAPATH") != "ebpf":
        # Shaping what the container sends needs an `ingress` qdisc on the host end; the eBPF
        # datapath's clsact holds that slot, so there bandwidth fails with "file exists"
        # (docs/cni.md, "Chaining").
        shape.update(egressRate=8_000_000, egressBurst=1_000_000)
    caps = {
        "bandwidth": shape,
        "portMappings": [{"hostPort": 18080, "containerPort": 80, "protocol": "tcp"}],
    }
    ns, peer = containers(), containers()
    out = cnitool(lab, "h1", confdir, "add", "cnichain", ns, cap_args=caps)
    veth, addr = assert_cni_result(json.loads(out.stdout), ns)
    # bandwidth shaped the host end (token bucket towards the container) ...
    qdisc = lab.exec("h1", "tc", "qdisc", "show", "dev", veth).stdout
    assert "tbf" in qdisc, qdisc
    # ... and portmap wrote its DNAT rule for the container's address.
    nat = lab.exec("h1", "iptables-save", "-t", "nat").stdout
    assert "--dport 18080" in nat and f"{addr}:80" in nat, nat
    # Traffic still flows through the shaped port to a container on the other host.
    confdir2 = write_conf(tmp_path, "h2", netconf(lab, "h2", tmp_path))
    out2 = cnitool(lab, "h2", confdir2, "add", "cnired", peer)
    _, addr2 = assert_cni_result(json.loads(out2.stdout), peer)
    run("ip", "netns", "exec", ns, "ping", "-c", "3", "-i", "0.2", "-W", "2", addr2, timeout=30)
    # CHECK runs the chain in order: nvo-cni, bandwidth, portmap. Debian's portmap 1.1.1 then
    # looks for IPv6 rules an IPv4-only container never had (containernetworking/plugins#819);
    # reaching that error means nvo-cni's and bandwidth's CHECK passed.
    p = cnitool(lab, "h1", confdir, "check", "cnichain", ns, cap_args=caps, check=False)
    assert p.returncode == 0 or "could not check ipv6 dnat" in p.stderr, p.stderr
    for _ in range(2):
        cnitool(lab, "h1", confdir, "del", "cnichain", ns, cap_args=caps)
    nat = lab.exec("h1", "iptables-save", "-t", "nat").stdout
    assert f"{addr}:80" not in nat, nat
    assert not link_exists(lab, "h1", veth) and veth not in ports(lab, "h1")
    cnitool(lab, "h2", confdir2, "del", "cnired", peer)


CTR_SCRIPT = r"""
set -u
mkdir -p /opt/cni/bin /etc/cni/net.d
mount --bind "$BINS" /opt/cni/bin
mount --bind "$CONFS" /etc/cni/net.d
containerd --config "$WORK/containerd.toml" >"$WORK/containerd.log" 2>&1 &
cd_pid=$!
for _ in $(seq 100); do [ -S "$WORK/containerd.sock" ] && break; sleep 0.1; done
ctr -a "$WORK/containerd.sock" run --rm --cni --rootfs "$WORK/rootfs" cnictr1 \
    /bin/sh -c "ip -o addr show dev eth0; ping -c 3 -W 2 $PEER"
rc=$?
kill "$cd_pid"
wait "$cd_pid"
exit $rc
"""


def test_ctr_run_cni_uses_nvo_cni(lab_factory, containers, tmp_path):
    """containerd's own client runs a busybox container on h1 with `ctr run --cni`, networked
    by nvo-cni from /etc/cni/net.d, and it pings a cnitool container on h2. ctr always reads
    /opt/cni/bin and /etc/cni/net.d: both are bind mounts in a private mount namespace."""
    need(shutil.which("containerd") or "containerd (on PATH)", "/bin/busybox")
    lab = lab_factory(TOPOLOGY)
    peer = containers()
    confdir2 = write_conf(tmp_path, "h2", netconf(lab, "h2", tmp_path))
    _, addr2 = assert_cni_result(json.loads(cnitool(lab, "h2", confdir2, "add", "cnired", peer).stdout), peer)
    work = tmp_path / "ctr"
    (work / "rootfs" / "bin").mkdir(parents=True)
    for d in ("proc", "sys", "dev", "etc", "tmp"):
        (work / "rootfs" / d).mkdir()
    shutil.copy("/bin/busybox", work / "rootfs" / "bin" / "busybox")
    for applet in ("sh", "ip", "ping"):
        (work / "rootfs" / "bin" / applet).symlink_to("busybox")
    bins = work / "bin"
    bins.mkdir()
    for name, src in (("nvo-cni", NVO_CNI), ("host-local", PLUGINS / "host-local")):
        shutil.copy(src, bins / name)
    confs = work / "net.d"
    confs.mkdir()
    (confs / "10-cnired.conflist").write_text(json.dumps({
        "cniVersion": "1.0.0", "name": "cnired",
        "plugins": [{k: v for k, v in netconf(lab, "h1", tmp_path).items() if k not in ("cniVersion", "name")}],
    }))
    (work / "containerd.toml").write_text(
        f'version = 2\nroot = "{work}/root"\nstate = "{work}/state"\n'
        'disabled_plugins = ["io.containerd.grpc.v1.cri"]\n'
        f'[grpc]\n  address = "{work}/containerd.sock"\n')
    created = [d for d in ("/opt/cni/bin", "/etc/cni/net.d", "/opt/cni", "/etc/cni") if not os.path.exists(d)]
    try:
        env = dict(os.environ, BINS=str(bins), CONFS=str(confs), WORK=str(work), PEER=addr2)
        # nsenter, not `ip netns exec`: that remounts /sys, and runc needs the cgroup mounts under it.
        p = subprocess.run(["nsenter", f"--net=/var/run/netns/{lab.ns('h1')}", "unshare", "--mount", "--propagation",
                            "private", "sh", "-c", CTR_SCRIPT], env=env, capture_output=True, text=True, timeout=120)
        assert p.returncode == 0, f"{p.stdout}\n{p.stderr}\n{(work / 'containerd.log').read_text()[-2000:]}"
        assert re.search(r"eth0\s+inet 10\.50\.0\.1\d/24", p.stdout), p.stdout
        assert " 0% packet loss" in p.stdout, p.stdout
        # --rm ran DEL: no port, no lease left on h1.
        assert not any(n.startswith("nvc") for n in ports(lab, "h1"))
        assert ipam_files(tmp_path, "h1") == []
    finally:
        for d in created:
            if os.path.isdir(d) and not os.listdir(d):
                os.rmdir(d)
    cnitool(lab, "h2", confdir2, "del", "cnired", peer)


def test_parallel_adds_and_dels(lab_factory, containers, tmp_path):
    """A runtime starts pods in parallel: eight ADDs at once get eight ports and eight distinct
    addresses (host-local locks its store, nvod serialises its API), then eight DELs at once
    leave nothing."""
    from concurrent.futures import ThreadPoolExecutor

    lab = lab_factory(TOPOLOGY)
    conf = netconf(lab, "h1", tmp_path)
    conf["ipam"]["ranges"][0][0]["rangeEnd"] = "10.50.0.40"
    namespaces = [containers() for _ in range(8)]
    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(lambda ns: plugin(lab, "h1", "ADD", conf, f"par-{ns}", ns), namespaces))
    assert all(rc == 0 for rc, _ in answers), answers
    addrs = {assert_cni_result(out, ns)[1] for (_, out), ns in zip(answers, namespaces)}
    assert len(addrs) == 8
    assert sum(n.startswith("nvc") for n in ports(lab, "h1")) == 8
    with ThreadPoolExecutor(8) as pool:
        rcs = list(pool.map(lambda ns: plugin(lab, "h1", "DEL", conf, f"par-{ns}", ns)[0], namespaces))
    assert rcs == [0] * 8
    assert not any(n.startswith("nvc") for n in ports(lab, "h1")) and ipam_files(tmp_path, "h1") == []
