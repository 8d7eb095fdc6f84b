"""Small helpers of the security suite: snapshots of folders, finding processes, the escape attempts
every confined script makes first, and loopback listeners the scripts try to reach."""

from __future__ import annotations

import os
import secrets
import signal
import socket
import stat
import time
from pathlib import Path

# The API key of every test (set as OPENAI_API_KEY before each executor starts).
SECRET = "sk-test-" + secrets.token_hex(16)


def snapshot(folder: Path) -> dict[str, tuple]:
    """Every entry below `folder` and the folder itself: content (bytes, or a link's text), mode,
    owner, modification time, link count. Links are recorded, never followed."""
    found = {}
    paths = [folder] + sorted(folder.rglob("*")) if os.path.lexists(folder) else []
    for path in paths:
        st = os.lstat(path)
        if stat.S_ISLNK(st.st_mode):
            content = os.readlink(path)
        elif stat.S_ISREG(st.st_mode):
            content = path.read_bytes()
        else:
            content = None
        found[str(path.relative_to(folder))] = (content, st.st_mode, st.st_uid, st.st_gid, st.st_mtime_ns,
                                                st.st_nlink)
    return found


def differences(before: dict, after: dict) -> list[str]:
    return sorted(key for key in set(before) | set(after) if before.get(key) != after.get(key))


def disk_usage(folder: Path) -> int:
    """Bytes on disk below `folder` (st_blocks of every entry, links not followed)."""
    total = 0
    for dirpath, dirnames, filenames in os.walk(folder, followlinks=False):
        for name in dirnames + filenames:
            total += os.lstat(os.path.join(dirpath, name)).st_blocks * 512
    return total


# -- processes ------------------------------------------------------------------------------------

def _read(path: str) -> bytes:
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except OSError:
        return b""


def processes_with(marker: str) -> list[int]:
    """Pids of the host whose command line or environment holds `marker`."""
    needle = marker.encode()
    return [int(pid) for pid in os.listdir("/proc") if pid.isdigit() and pid != str(os.getpid())
            and (needle in _read(f"/proc/{pid}/cmdline") or needle in _read(f"/proc/{pid}/environ"))]


def processes_in(folder: Path) -> list[int]:
    """Pids of the host whose working directory is `folder` (compared by inode: a script's processes
    start there, whatever mount namespace they are in)."""
    target = os.stat(folder)
    found = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                st = os.stat(f"/proc/{pid}/cwd")
            except OSError:
                continue
            if (st.st_dev, st.st_ino) == (target.st_dev, target.st_ino):
                found.append(int(pid))
    return found


def describe(pids: list[int]) -> list[str]:
    """'pid: command line' of each, for failure messages."""
    return [f"{pid}: " + _read(f"/proc/{pid}/cmdline").replace(b"\0", b" ").decode(errors="replace")[:120]
            for pid in pids]


def wait_for(probe, seconds: float, step: float = 0.05):
    """Call `probe` until it returns something falsy or `seconds` pass; its last answer."""
    deadline = time.monotonic() + seconds
    answer = probe()
    while answer and time.monotonic() < deadline:
        time.sleep(step)
        answer = probe()
    return answer


def kill_all(pids: list[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


# -- what every script in a confined tier tries before its own attack ------------------------------

def escape_attempts(canary_files: list[Path], canary_dirs: list[Path], tmp_canary: Path) -> str:
    """Python code that tries to change each canary file (append, chmod, utime), to create a file in
    each canary folder and in the host /tmp; failures are silent (the fixtures check the result)."""
    return f"""
def _escape():
    import os
    def attempt(action, *args):
        try:
            action(*args)
        except Exception:
            pass
    for path in {[str(p) for p in canary_files]!r}:
        attempt(lambda: open(path, "a").write("tampered"))
        attempt(os.chmod, path, 0o777)
        attempt(os.utime, path, (0, 0))
    for folder in {[str(p) for p in canary_dirs]!r}:
        attempt(lambda: open(os.path.join(folder, "planted.txt"), "w").write("x"))
    attempt(lambda: open({str(tmp_canary)!r}, "w").write("x"))
_escape()
del _escape
"""


# -- listeners the scripts try to reach -----------------------------------------------------------

class Listeners:
    """A TCP and a UDP server on 127.0.0.1, a Unix socket with a path and an abstract one."""

    def __init__(self, folder: Path):
        folder.mkdir(exist_ok=True)
        folder.chmod(0o777)  # Reachable by any uid: only the sandbox may keep a script out.
        self.tcp = socket.socket()
        self.tcp.bind(("127.0.0.1", 0))
        self.tcp.listen()
        self.udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.udp.bind(("127.0.0.1", 0))
        self.unix_path = str(folder / "listener.sock")
        self.unix = socket.socket(socket.AF_UNIX)
        self.unix.bind(self.unix_path)
        os.chmod(self.unix_path, 0o777)
        self.unix.listen()
        self.abstract_name = "\0dsstar-test-" + secrets.token_hex(8)
        self.abstract = socket.socket(socket.AF_UNIX)
        self.abstract.bind(self.abstract_name)
        self.abstract.listen()

    @property
    def tcp_port(self) -> int:
        return self.tcp.getsockname()[1]

    @property
    def udp_port(self) -> int:
        return self.udp.getsockname()[1]

    def received(self) -> list[str]:
        """Which listeners got a connection or a datagram (waiting briefly for each)."""
        got = []
        for name, server in (("tcp", self.tcp), ("unix", self.unix), ("abstract", self.abstract)):
            server.settimeout(0.2)
            try:
                connection, _ = server.accept()
                connection.close()
                got.append(name)
            except OSError:
                pass
        self.udp.settimeout(0.2)
        try:
            self.udp.recv(64)
            got.append("udp")
        except OSError:
            pass
        return got

    def close(self) -> None:
        for server in (self.tcp, self.udp, self.unix, self.abstract):
            server.close()


def memory_held(pids: list[int]) -> int:
    """Bytes the processes hold together: each one's proportional set size (a page shared by n
    processes counts 1/n in each) where this process may read it, else its resident size."""
    total = 0
    for pid in pids:
        rollup = _read(f"/proc/{pid}/smaps_rollup")
        pss = [line.split()[1] for line in rollup.splitlines() if line.startswith(b"Pss:")]
        if pss:
            total += int(pss[0]) * 1024
            continue
        statm = _read(f"/proc/{pid}/statm").split()
        total += int(statm[1]) * os.sysconf("SC_PAGE_SIZE") if len(statm) > 1 else 0
    return total


def attempts(done: str) -> str:
    """Code for a hostile script: `attempt(what, action)` tries `action` and prints `<done> what`
    when the kernel lets it through, `refused what <why>` when it refuses."""
    return f"""
def attempt(what, action):
    try:
        action()
        print({done!r}, what, flush=True)
    except OSError as exc:
        print("refused", what, exc.strerror, flush=True)
"""
