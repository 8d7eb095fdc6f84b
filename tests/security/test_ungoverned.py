"""What Landlock does not govern (issue 22): extended attributes, SysV IPC, Unix sockets made with
socketpair, inotify. Without namespaces (medium) only the seccomp filter keeps a script from them;
in strong they reach nothing of the host's. Each attack aims at something of the host's that the
script's own user could reach (in a folder every user can enter, owned by the script's uid), and
the test looks at that thing afterwards: its mode and attributes, the segment's reader, the
listener, the watched folder's events."""

from __future__ import annotations

import ctypes
import os
import secrets
import shutil
import socket
import threading
import time
from pathlib import Path

import pytest

from security.support import attempts

CONFINED_ONLY = "a script may do what the user can do"
IPC_CREAT, IPC_RMID = 0o1000, 0


@pytest.fixture
def host_folder(box):
    """A folder of the host's outside every run, that the script's user can enter and owns."""
    folder = Path(f"/tmp/dsstar-host-{secrets.token_hex(6)}")
    folder.mkdir(mode=0o755)
    os.chmod(folder, 0o777)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def own(path: Path, box) -> None:
    """Give `path` to the user the box's scripts run as (nobody, as root where it can run)."""
    if box.executor.uid is not None:
        os.chown(path, box.executor.uid, box.executor.uid)


XATTRS = "import os\n" + attempts("done") + """
# An access ACL granting group and others read: user::rw-, group::r--, other::r--.
acl = bytes.fromhex("02000000" "0100060000000000" "0400040000000000" "2000040000000000")
attempt("acl", lambda: os.setxattr(TARGET, "system.posix_acl_access", acl))
attempt("set", lambda: os.setxattr(TARGET, "user.planted", b"1"))
attempt("remove", lambda: os.removexattr(TARGET, "user.secret"))
attempt("list", lambda: print("listed", os.listxattr(TARGET)))
attempt("get", lambda: print("got", os.getxattr(TARGET, "user.secret")))
"""


@pytest.mark.tiers("strong", "medium", reason=CONFINED_ONLY)
def test_extended_attributes_of_an_outside_file(box, host_folder):
    target = host_folder / "private.txt"
    target.write_text("the user's own\n")
    target.chmod(0o600)
    hidden = "secret-" + secrets.token_hex(6)
    os.setxattr(target, "user.secret", hidden.encode())
    own(target, box)
    before = (os.stat(target).st_mode, sorted(os.listxattr(target)))
    result = box.run(f"TARGET = {str(target)!r}\n{XATTRS}")
    assert (os.stat(target).st_mode, sorted(os.listxattr(target))) == before, result.stdout
    assert os.getxattr(target, "user.secret") == hidden.encode()
    assert "user.secret" not in result.stdout and hidden not in result.stdout, result.stdout
    assert result.ok and result.stdout.count("refused") == 5, result.stdout + result.stderr


SHARED_MEMORY = """
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
shmid = libc.shmget(KEY, 0, 0)
if shmid < 0:
    print("refused shmget", os.strerror(ctypes.get_errno()))
else:
    address = libc.shmat(shmid, None, 0o10000)  # SHM_RDONLY
    if address in (None, ctypes.c_void_p(-1).value):
        print("refused shmat", os.strerror(ctypes.get_errno()))
    else:
        print("read", ctypes.string_at(address, 64))
"""


@pytest.mark.tiers("strong", "medium", reason=CONFINED_ONLY)
def test_a_host_shared_memory_segment(box):
    libc = ctypes.CDLL(None, use_errno=True)
    libc.shmat.restype = ctypes.c_void_p
    key = int.from_bytes(os.urandom(3), "big") + 1
    shmid = libc.shmget(key, 4096, IPC_CREAT | 0o666)
    assert shmid >= 0, os.strerror(ctypes.get_errno())
    try:
        address = libc.shmat(shmid, None, 0)
        hidden = ("secret-" + secrets.token_hex(6)).encode()
        ctypes.memmove(address, hidden, len(hidden))
        result = box.run(f"KEY = {key}\n{SHARED_MEMORY}")
        libc.shmdt(ctypes.c_void_p(address))
    finally:
        libc.shmctl(shmid, IPC_RMID, None)
    assert hidden.decode() not in result.stdout, result.stdout
    assert result.ok and "refused" in result.stdout, result.stdout + result.stderr


SOCKETPAIR = "import socket\n" + attempts("sent") + """
def pair():
    return socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)[0]
attempt("sendto", lambda: pair().sendto(b"leak-sendto", PATH))
attempt("sendmsg", lambda: pair().sendmsg([b"leak-sendmsg"], [], 0, PATH))
"""


@pytest.mark.tiers("strong", "medium", reason=CONFINED_ONLY)
def test_a_pathname_datagram_socket_through_socketpair(box, host_folder):
    path = str(host_folder / "listener.sock")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    listener.bind(path)
    os.chmod(path, 0o777)
    try:
        result = box.run(f"PATH = {path!r}\n{SOCKETPAIR}")
        listener.settimeout(0.2)
        received = []
        try:
            while True:
                received.append(listener.recv(64))
        except OSError:
            pass
    finally:
        listener.close()
    assert received == [], received
    assert result.ok and result.stdout.count("refused") == 2, result.stdout + result.stderr


INOTIFY = """
import ctypes, os, select
libc = ctypes.CDLL(None, use_errno=True)
fd = libc.inotify_init1(0)
if fd < 0:
    print("refused inotify_init1", os.strerror(ctypes.get_errno()))
elif libc.inotify_add_watch(fd, FOLDER.encode(), 0x100) < 0:  # IN_CREATE
    print("refused inotify_add_watch", os.strerror(ctypes.get_errno()))
else:
    open("watching", "w").close()
    if select.select([fd], [], [], 3)[0]:
        print("event", os.read(fd, 4096))
"""


@pytest.mark.tiers("strong", "medium", reason=CONFINED_ONLY)
def test_watching_an_outside_folder(box, host_folder):
    """A file made in a folder of the user's while the script watches it: the script must not see its name."""
    name = "made-" + secrets.token_hex(6)

    def make_file():
        deadline = time.monotonic() + 5
        while not (box.work / "watching").exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        (host_folder / name).write_text("x")

    maker = threading.Thread(target=make_file)
    maker.start()
    result = box.run(f"FOLDER = {str(host_folder)!r}\n{INOTIFY}")
    maker.join()
    assert name not in result.stdout, result.stdout
    assert result.ok and "refused" in result.stdout, result.stdout + result.stderr
