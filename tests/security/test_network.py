"""The network (issue 12, items 2 and 11): servers this test starts on the loopback (TCP, UDP), a Unix
socket with a path in a folder the test owns, an abstract Unix socket. No script may reach any of
them, and the servers themselves say whether anything arrived. (No DNS test: whether a lookup
fails depends on the machine being offline, not on the sandbox.)"""

from __future__ import annotations

import pytest

from security.support import Listeners

NO_NETWORK = "the network is not isolated"

CONNECT = """
import socket
def attempt(what, family, kind, address):
    try:
        s = socket.socket(family, kind)
        s.settimeout(1)
        if kind == socket.SOCK_DGRAM:
            s.sendto(b"leak", address)
        else:
            s.connect(address)
            s.sendall(b"leak")
        print("reached", what)
    except OSError as exc:
        print("refused", what, exc.strerror)
"""


@pytest.fixture
def listeners(outside):
    found = Listeners(outside.base / "sockets")
    yield found
    found.close()


@pytest.mark.tiers("strong", "medium", reason=NO_NETWORK)
def test_tcp_and_udp_to_a_loopback_server(box, listeners):
    result = box.run(f"{CONNECT}\n"
                     f"attempt('tcp', socket.AF_INET, socket.SOCK_STREAM, ('127.0.0.1', {listeners.tcp_port}))\n"
                     f"attempt('udp', socket.AF_INET, socket.SOCK_DGRAM, ('127.0.0.1', {listeners.udp_port}))")
    assert "refused tcp" in result.stdout and "refused udp" in result.stdout, result.stdout + result.stderr
    assert [got for got in listeners.received() if got in ("tcp", "udp")] == []


@pytest.mark.tiers("strong", "medium", reason=NO_NETWORK)
def test_unix_sockets_with_a_path_and_abstract(box, listeners):
    result = box.run(f"{CONNECT}\n"
                     f"attempt('unix', socket.AF_UNIX, socket.SOCK_STREAM, {listeners.unix_path!r})\n"
                     f"attempt('abstract', socket.AF_UNIX, socket.SOCK_STREAM, {listeners.abstract_name!r})")
    assert "refused unix" in result.stdout and "refused abstract" in result.stdout, result.stdout + result.stderr
    assert [got for got in listeners.received() if got in ("unix", "abstract")] == []
