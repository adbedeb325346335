"""The etcd test cluster of tests/e2e/etcd.py on its own, before the cluster tests lean on it:

   <p>br: br0 ── <p>e1 .241 m1 │ <p>e2 .242 m2 │ <p>e3 .243 m3 │ <p>c .240 (etcdctl)
              └─ <p>o .239: an outsider, the stand-in for an nvod host (cut / heal)

It must: take writes, keep taking them with a member killed (and take the member back),
shut an outsider out while cut and let it in after heal, and leave no namespace, veth or
etcd process behind — also when the test body fails.
"""

import os
import subprocess
import time

import pytest

from etcd import EtcdCluster, _in, _sh

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (network namespaces)")

PREFIX = f"clt{os.getpid() % 10000}f"


def namespaces():
    return set(_sh("ip", "netns", "list").stdout.split())


def etcd_pids(cluster):
    return [p.pid for p in cluster.procs if p is not None and p.poll() is None]


@pytest.fixture
def cluster():
    c = EtcdCluster(PREFIX, net="10.99.0", first=241)
    c.start_all()
    outsider = f"{PREFIX}o"
    _sh("ip", "netns", "add", outsider)
    try:
        _in(c.bridge_ns, "ip", "link", "add", f"{PREFIX}vo", "type", "veth", "peer", "name", "eth0",
            "netns", outsider)
        _in(c.bridge_ns, "ip", "link", "set", f"{PREFIX}vo", "master", "br0", "up")
        _in(outsider, "ip", "addr", "add", "10.99.0.239/24", "dev", "eth0")
        _in(outsider, "ip", "link", "set", "eth0", "up")
        c.outsider = outsider
        yield c
    finally:
        _sh("ip", "netns", "del", outsider, check=False)
        c.close()


def outsider_get(c, key, timeout_s=2):
    return _in(c.outsider, "env", "ETCDCTL_API=3", "etcdctl", f"--endpoints={','.join(c.endpoints)}",
               f"--dial-timeout={timeout_s}s", f"--command-timeout={timeout_s}s", "get", key,
               "--print-value-only", check=False, timeout=30)


def test_put_get_delete_and_any_bytes(cluster):
    cluster.put("/t/a", {"vni": 1})
    cluster.put("/t/b", "--not json {")
    assert cluster.get("/t/a") == '{"vni": 1}'
    assert cluster.get("/t/b") == "--not json {"
    assert cluster.get_prefix("/t/") == {"/t/a": '{"vni": 1}', "/t/b": "--not json {"}
    assert cluster.delete("/t/", prefix=True) == 2
    assert cluster.get("/t/a") is None


def test_a_killed_member_leaves_a_writable_cluster_and_comes_back(cluster):
    cluster.put("/t/k", "1")
    cluster.kill(0)
    assert not cluster.alive(0)
    t0 = time.monotonic()
    cluster.wait_writable(timeout=15, endpoints=cluster.endpoints[1:])
    print(f"first write {time.monotonic() - t0:.2f}s after m1 was killed")
    cluster.put("/t/k", "2", endpoints=cluster.endpoints[1:])
    cluster.start(0)
    # m1 catches up from the others: its own endpoint serves the write made while it was away.
    deadline = time.monotonic() + 15
    while True:
        p = cluster.etcdctl("get", "/t/k", "--print-value-only", "--consistency=s",
                            endpoints=cluster.endpoints[:1], check=False)
        if p.returncode == 0 and p.stdout.strip() == "2":
            break
        assert time.monotonic() < deadline, f"m1 did not catch up: {p.stdout} {p.stderr}\n{cluster.log_tail()}"
        time.sleep(0.3)


def test_cut_shuts_out_the_hosts_but_not_the_client(cluster):
    cluster.put("/t/c", "before")
    assert outsider_get(cluster, "/t/c").stdout.strip() == "before"
    cluster.cut(["10.99.0.239"])
    p = outsider_get(cluster, "/t/c")
    assert p.returncode != 0, p.stdout
    cluster.put("/t/c", "during")  # the test's client is never cut
    cluster.heal()
    p = outsider_get(cluster, "/t/c", timeout_s=5)
    assert p.stdout.strip() == "during", p.stderr


def test_close_removes_everything_even_after_a_failure():
    c = EtcdCluster(f"{PREFIX}x"[:10], net="10.98.0")
    with pytest.raises(RuntimeError):
        with c:
            pids = etcd_pids(c)
            assert len(pids) == 3
            assert {c.member_ns(0), c.client_ns, c.bridge_ns} <= namespaces()
            raise RuntimeError("a test body failing")
    left = [n for n in namespaces() if n.startswith(c.prefix)]
    assert not left, left
    for pid in pids:
        assert not os.path.exists(f"/proc/{pid}") or "zombie" in open(f"/proc/{pid}/status").read().lower()
    assert not c.dir.exists()
    c.close()  # twice is harmless


def test_a_failed_start_cleans_up():
    # The members start, but the cluster is made to look as if it never became writable.
    c = EtcdCluster(f"{PREFIX}y"[:10], net="10.97.0")
    c.wait_writable = lambda timeout=20, endpoints=None: (_ for _ in ()).throw(AssertionError("no quorum"))
    with pytest.raises(AssertionError):
        c.start_all()
    left = [n for n in namespaces() if n.startswith(c.prefix)]
    assert not left, left
    assert not any(p for p in c.procs)
    assert subprocess.run(["pgrep", "-f", "--", f"--initial-cluster-token {c.token}"],
                          capture_output=True).returncode == 1
