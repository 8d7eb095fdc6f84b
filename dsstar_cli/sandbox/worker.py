"""The warm worker: a process started once per run, with a clean environment, that imports pandas
and numpy once and then forks one child per script, so a script starts in milliseconds instead
of paying ~300 ms of imports. It never runs generated code itself.

Run as `python -I worker.py CONFIG_JSON`, CONFIG_JSON naming the fd of its Unix socket. It is self-contained (no
dsstar imports) so it can run inside bubblewrap, which exposes only system paths.

Per request (JSON + the stdout/stderr pipe ends as SCM_RIGHTS) it forks a child that: starts a
new session, dies with the worker, takes the pipes as fd 1/2, closes every other descriptor, sets
rlimits (address space, CPU, file size, open files, no core), changes to the run folder, drops to
an unprivileged user when told, and runs the script as __main__. The worker answers
{"pid"} and then {"status"}; {"kill": true} from the executor ends the child early. Afterwards
every process the script left behind (its group, and daemons re-parented to the worker, which is
a child subreaper) is killed.
"""

import ctypes
import json
import os
import resource
import runpy
import select
import signal
import socket
import sys
import time
import traceback

PR_SET_PDEATHSIG, PR_SET_CHILD_SUBREAPER, PR_SET_NO_NEW_PRIVS = 1, 36, 38
CLONE_NEWNET, CLONE_NEWUSER = 0x40000000, 0x10000000
LIBC = ctypes.CDLL(None, use_errno=True)

# Landlock (Linux >= 5.13): filesystem access rights, TCP rights (ABI 4) and scopes (ABI 6).
FS_READ = 1 | 4 | 8                     # execute, read file, read dir
FS_ALL_ABI1 = (1 << 13) - 1
FS_REFER, FS_TRUNCATE, FS_IOCTL_DEV = 1 << 13, 1 << 14, 1 << 15
NET_TCP = 1 | 2                          # bind, connect
SCOPE_ABSTRACT_UNIX, SCOPE_SIGNAL = 1, 2
QUIET_SCANS = 3  # Empty scans in a row that end a sweep.


class RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]


class PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def _syscall(number, *args):
    result = LIBC.syscall(number, *args)
    if result < 0:
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
    return result


def landlock(writable, abi):
    """Read-only everywhere, read-write in `writable`; no TCP; no signals out of the sandbox."""
    fs_all = FS_ALL_ABI1 | (FS_REFER if abi >= 2 else 0) | (FS_TRUNCATE if abi >= 3 else 0) | (
        FS_IOCTL_DEV if abi >= 5 else 0)
    attr = RulesetAttr(fs_all, NET_TCP if abi >= 4 else 0, (SCOPE_ABSTRACT_UNIX | SCOPE_SIGNAL) if abi >= 6 else 0)
    size = ctypes.sizeof(RulesetAttr) if abi >= 6 else (16 if abi >= 4 else 8)
    ruleset = _syscall(444, ctypes.byref(attr), size, 0)
    for path, access in [("/", FS_READ)] + [(p, fs_all) for p in writable]:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
        try:
            allowed = access if os.path.isdir(path) else access & (1 | 2 | 4 | FS_TRUNCATE | FS_IOCTL_DEV)
            rule = PathBeneathAttr(allowed, fd)
            _syscall(445, ruleset, 1, ctypes.byref(rule), 0)
        finally:
            os.close(fd)
    if LIBC.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:  # Landlock requires it (or CAP_SYS_ADMIN).
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS)")
    _syscall(446, ruleset, 0)  # landlock_restrict_self: the same number on every architecture
    os.close(ruleset)


def isolate_network():
    """A private network namespace: no interface but a loopback that is down (UDP and DNS included)."""
    flags = CLONE_NEWNET if os.geteuid() == 0 else CLONE_NEWUSER | CLONE_NEWNET
    if LIBC.unshare(flags) != 0:
        raise OSError(ctypes.get_errno(), "unshare: " + os.strerror(ctypes.get_errno()))


def send(sock, message):
    sock.sendall((json.dumps(message) + "\n").encode())


def run_child(request, fds):
    """In the forked child: never returns."""
    try:
        os.setsid()
        LIBC.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.dup2(fds[0], 1)
        os.dup2(fds[1], 2)
        os.closerange(3, 65536)
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGPIPE):
            signal.signal(sig, signal.SIG_DFL)
        limits = request["limits"]
        for name, value in limits.items():
            resource.setrlimit(getattr(resource, name), (value, value))
        os.chdir(request["workdir"])
        if request.get("uid") is not None:
            os.setgroups([])
            os.setgid(request["uid"])
            os.setuid(request["uid"])
        sys.argv = [request["script"]]
        code = 0
        try:
            runpy.run_path(request["script"], run_name="__main__")
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
            if exc.code is not None and not isinstance(exc.code, int):
                print(exc.code, file=sys.stderr)
        except BaseException:  # noqa: B036 - the script's own failure, reported like python would.
            traceback.print_exc()
            code = 1
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code & 0xFF)
    except BaseException:  # noqa: B036
        try:
            traceback.print_exc()
            sys.stderr.flush()
        finally:
            os._exit(120)


def sweep(pid):
    """Kill what the script left behind: its process group, and orphans re-parented to us. A fork
    bomb keeps making more, and an orphan can reach us a moment after the script's exit is
    reported, so scan until a few scans in a row (a millisecond apart) find nothing."""
    quiet = 0
    for _ in range(500):
        try:
            os.killpg(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        orphans = _children()
        for child in orphans:
            try:
                os.kill(child, signal.SIGKILL)
            except ProcessLookupError:
                pass
        _reap()
        quiet = 0 if orphans or _group_alive(pid) else quiet + 1
        if quiet >= QUIET_SCANS:
            return
        time.sleep(0.001)


def _children():
    me, found = str(os.getpid()), []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as stat:
                    fields = stat.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if fields[1] == me and fields[0] != "Z":
                found.append(int(entry))
    return found


def _group_alive(pgid):
    try:
        os.killpg(pgid, 0)
        return True
    except (ProcessLookupError, PermissionError):
        return False


def _reap():
    while True:
        try:
            if os.waitpid(-1, os.WNOHANG) == (0, 0):
                return
        except ChildProcessError:
            return


def wait_child(sock, pid):
    """The child's exit status, killing its group early when the executor asks."""
    pidfd = os.pidfd_open(pid)
    try:
        while True:
            ready, _, _ = select.select([pidfd, sock], [], [])
            if sock in ready:
                message = sock.recv(65536)
                if not message or b"kill" in message:
                    try:
                        os.killpg(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                    if not message:
                        sock = None  # The executor is gone; still reap, then serve() ends.
            if pidfd in ready:
                return os.waitpid(pid, 0)[1]
            if sock is None:
                return os.waitpid(pid, 0)[1]
    finally:
        os.close(pidfd)


def serve(sock):
    while True:
        data, fds, _, _ = socket.recv_fds(sock, 1 << 20, 2)
        if not data:
            return  # The executor closed the socket: the run is over.
        messages = [json.loads(line) for line in data.splitlines() if line.strip()]
        requests = [m for m in messages if "script" in m]  # A late "kill" for a finished script is moot.
        if not requests:
            for fd in fds:
                os.close(fd)
            continue
        request = requests[-1]
        sys.stdout.flush()
        pid = os.fork()
        if pid == 0:
            sock.close()
            run_child(request, fds)
        for fd in fds:
            os.close(fd)
        send(sock, {"pid": pid})
        status = wait_child(sock, pid)
        sweep(pid)
        send(sock, {"status": status})


def main():
    config = json.loads(sys.argv[1])
    LIBC.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)  # Never outlive the run.
    LIBC.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)         # Orphans come back to us, to be swept.
    signal.signal(signal.SIGINT, signal.SIG_IGN)             # Ctrl-C is the executor's to handle.
    sock = socket.socket(fileno=config["fd"])
    for module in config.get("preload", []):
        try:
            __import__(module)
        except Exception:  # A missing optional library only costs its import time later.
            pass
    if config.get("network") == "isolate":
        isolate_network()
    if config.get("landlock"):
        landlock(config["writable"], config["landlock"])
    send(sock, {"ready": True})
    serve(sock)


if __name__ == "__main__":
    main()
