"""Scripts for TCP reachability checks, run with python3 -c inside a namespace (test_flows.py,
test_acl.py): CONNECT ADDR PORT TIMEOUT prints "ok" when a connection is made and a byte sent,
"fail <why>" otherwise; SERVE PORT SECONDS accepts (and closes) every connection on PORT for
that long.
"""

# A TCP connection attempt from inside a container: prints ok or fail.
CONNECT = r"""
import socket, sys
s = socket.socket()
s.settimeout(float(sys.argv[3]))
try:
    s.connect((sys.argv[1], int(sys.argv[2])))
    s.sendall(b"x")
    print("ok")
except OSError as e:
    print("fail", e)
"""

# A TCP server answering every connection, for the duration given.
SERVE = r"""
import socket, sys, time
ends = time.time() + float(sys.argv[2])
srv = socket.socket()
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("0.0.0.0", int(sys.argv[1])))
srv.listen(16)
srv.settimeout(0.5)
while time.time() < ends:
    try:
        c, _ = srv.accept()
        c.close()
    except OSError:
        pass
"""
