"""The sandbox worker: started by the executor inside the chosen tier, it forks one child per
script. Warm, it imports pandas and numpy once, so a script starts in milliseconds instead of
paying ~300 ms of imports; cold (`once`), it serves a single script and ends. It never runs
generated code itself.

Run as `python -I worker.py CONFIG_JSON`. It imports only the standard library and its sibling
modules (namespaces, landlock, seccomp, privileges, duckdb_setup, memory_bound, and what scripts
import as `dsstar`: dsstar.py, query_channel.py, readonly_sql.py), found next to this file, so it also runs inside bubblewrap. CONFIG_JSON says:

  fd          its end of the Unix socket to the executor
  isolation   "namespaces" (strong, built in), "bubblewrap" (strong, already inside bwrap),
              "landlock" (medium) or "none" (basic)
  readable, writable   the allowlist of paths (namespaces and Landlock enforce it)
  landlock    the Landlock ABI to use (0: none); seccomp: install the system-call filter;
  ungoverned  also refuse what Landlock does not govern (seccomp.py); network "isolate": a private network namespace
  uid, keep_uid        who we are outside, and the unprivileged user scripts may be given
  preload     modules to import once; once: serve one script and end
  memory_mb   the bound on a script's processes together; cgroup: descriptors of the group its
              processes join (memory_bound.py), or absent: the worker watches their memory itself
  cgroup_files  what DuckDB reads of that group (readable in the medium tier)

Per request (JSON with the script's code + its stdout/stderr pipe ends as SCM_RIGHTS, and with
engine: spark the script's end of the query channel) it forks a child (in the worker's memory cgroup, when there is one) that starts a new session, takes the pipes as fd
1/2 (the channel as fd 3), closes every other descriptor, sets rlimits, changes to the work folder, becomes the
unprivileged user when told, drops every capability, enters a Landlock domain of its own (so it can
neither signal nor trace the worker), installs the seccomp filter, has DuckDB configured for the
sandbox when the script imports it (duckdb_setup.py), tells `dsstar` (dsstar.py) where its queries go, and runs the code as __main__. The worker
answers {"pid"} and then {"status"} (with "memory": a line for the script's stderr when its
processes together passed memory_mb and were killed); {"kill": true} ends the child early.
Afterwards every process the script left behind is killed: with namespaces the worker is the pid
namespace's first process and kills all the others; otherwise it is a child subreaper and kills its
group and the orphans re-parented to it.
"""

import builtins
import ctypes
import json
import linecache
import os
import resource
import select
import signal
import socket
import sys
import time
import traceback
import types

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dsstar as script_api  # noqa: E402 - what scripts import as `dsstar` (dsstar.sql)
import duckdb_setup  # noqa: E402
import query_channel  # noqa: E402
import landlock  # noqa: E402
import memory_bound  # noqa: E402
import namespaces  # noqa: E402
import privileges  # noqa: E402
import seccomp  # noqa: E402

PR_SET_PDEATHSIG, PR_SET_CHILD_SUBREAPER, PR_SET_DUMPABLE = 1, 36, 4
MEMORY_LIBRARY = ".dsstar-memory"  # memory/knowledge.py's LIBRARY_DIR: the folder's remembered functions
CLONE_NEWNET, CLONE_NEWUSER = 0x40000000, 0x10000000
LIBC = ctypes.CDLL(None, use_errno=True)
QUIET_SCANS = 3  # Empty scans in a row that end a sweep (as a pid namespace's init).
SWEEP_S = 10.0   # A sweep gives up after this long (a bomb that outpaces SIGKILL; never seen).
DEVICES_READ = ["/dev/urandom", "/dev/random"]
DEVICES_WRITE = ["/dev/null", "/dev/zero", "/dev/full"]
# The script's own memory map (resolved in its own process, so no other's): threadpoolctl, which
# scikit-learn calls on every fit, reads it to find the BLAS and OpenMP libraries, and raises without it.
OWN_PROC_FILES = ["/proc/self/maps"]


def isolate_network():
    """A private network namespace: no interface but a loopback that is down (UDP and DNS included)."""
    flags = CLONE_NEWNET if os.geteuid() == 0 else CLONE_NEWUSER | CLONE_NEWNET
    if LIBC.unshare(flags) != 0:
        raise OSError(ctypes.get_errno(), "unshare: " + os.strerror(ctypes.get_errno()))


def send(sock, message):
    sock.sendall((json.dumps(message) + "\n").encode())


def allowlist(config, for_script):
    """(readable, writable) for a Landlock domain. The worker reads /proc to find orphans; a script
    may only where /proc is private (its own pid namespace), and writes a private /tmp there.
    Elsewhere a script may read only its own cgroup and that cgroup's memory limit (for DuckDB) and
    its own memory map (for scikit-learn)."""
    private = config["isolation"] != "landlock"
    readable = config["readable"] + DEVICES_READ + (["/proc"] if private or not for_script else [])
    if not private:  # Without them DuckDB aborts on its first connection.
        readable += duckdb_setup.cgroup_files() + config.get("cgroup_files", []) + OWN_PROC_FILES
    writable = config["writable"] + DEVICES_WRITE + (["/tmp", "/dev/shm"] if private else [])
    return readable, writable


def confine(config, request):
    """In the script's process, before its code: who it is and what it may do, for good."""
    if request.get("uid") is not None:
        privileges.become(request["uid"])
    privileges.drop_capabilities()
    if config.get("landlock"):
        landlock.restrict(*allowlist(config, for_script=True), config["landlock"])
    if config.get("seccomp"):
        seccomp.install(ungoverned=config.get("ungoverned", False))


def run_child(config, request, fds):
    """In the forked child: never returns."""
    try:
        os.setsid()
        LIBC.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.dup2(fds[0], 1)
        os.dup2(fds[1], 2)
        if len(fds) > 2:  # The query channel's end (engine: spark), as descriptor 3.
            os.dup2(fds[2], query_channel.FD)
        os.closerange(query_channel.FD + (len(fds) > 2), 65536)
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGPIPE):
            signal.signal(sig, signal.SIG_DFL)
        for name, value in request["limits"].items():
            resource.setrlimit(getattr(resource, name), (value, value))
        os.chdir(request["workdir"])
        sys.path.append(os.path.join(request["workdir"], MEMORY_LIBRARY))  # `from remembered import ...`
        confine(config, request)
        if request.get("duckdb"):
            duckdb_setup.install(request["duckdb"])
        script_api.install(request.get("engine"))
        os._exit(run_code(request["code"], request["filename"]) & 0xFF)
    except BaseException:  # noqa: B036
        try:
            traceback.print_exc()
            sys.stderr.flush()
        finally:
            os._exit(120)


def run_code(code, filename):
    """Run `code` as the __main__ module, as `python FILE` would; the exit code."""
    # The file itself lies where the script cannot read: tracebacks get its lines from here.
    linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
    module = types.ModuleType("__main__")
    module.__file__, module.__builtins__ = filename, builtins
    sys.modules["__main__"], sys.argv = module, [filename]
    status = 0
    try:
        exec(compile(code, filename, "exec"), module.__dict__)  # noqa: S102 - confined by now
    except SystemExit as exc:
        status = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        if exc.code is not None and not isinstance(exc.code, int):
            print(exc.code, file=sys.stderr)
    except BaseException:  # noqa: B036 - the script's own failure, reported like python would.
        kind, error, frames = sys.exc_info()
        traceback.print_exception(kind, error, frames.tb_next)  # From the script's frame on, not ours.
        status = 1
    sys.stdout.flush()
    sys.stderr.flush()
    return status


def sweep(pid, init):
    """Kill what the script left behind. As the pid namespace's init, kill(-1) reaches every other
    process in it. Otherwise we are a child subreaper: every process the script started is our
    child or below one, and when a process dies its children become ours before it can be reaped.
    So kill every child (the script's group first), reap, and go on until we have no child at all,
    not even a zombie: only then is nothing of the script left, however fast a fork chain moves
    (a scan of /proc alone can miss a process that is born and gone between two looks)."""
    deadline = time.monotonic() + SWEEP_S
    quiet = 0
    while time.monotonic() < deadline:
        if init:
            _kill(lambda: os.kill(-1, signal.SIGKILL))
            quiet = 0 if _reap() or _has_children() else quiet + 1
            if quiet >= QUIET_SCANS:
                return
        else:  # pid 0: no script in particular (the worker is going): every descendant.
            if pid:
                _kill(lambda: os.killpg(pid, signal.SIGKILL))
            for child in _children():
                _kill(lambda: os.kill(child, signal.SIGKILL))
            _reap()
            if not _has_any_child():
                return
        time.sleep(0.0005)


def _kill(action):
    try:
        action()
    except (ProcessLookupError, PermissionError):
        pass


def _children():
    """Our children (living), from /proc/self/task/*/children where the kernel has it."""
    try:
        found = []
        for task in os.listdir("/proc/self/task"):
            with open(f"/proc/self/task/{task}/children") as listed:
                found += [int(child) for child in listed.read().split()]
        return found
    except OSError:
        return _children_by_scan()


def _children_by_scan():
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


def _has_children():
    try:
        return os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return False


def _has_any_child():
    """Whether any child is left, living or a zombie (waitid answers ECHILD only when none is)."""
    try:
        os.waitid(os.P_ALL, 0, os.WEXITED | os.WSTOPPED | os.WCONTINUED | os.WNOHANG | os.WNOWAIT)
        return True
    except ChildProcessError:
        return False


def _reap():
    reaped = False
    while True:
        try:
            if os.waitpid(-1, os.WNOHANG) == (0, 0):
                return reaped
            reaped = True
        except ChildProcessError:
            return reaped


def wait_child(sock, pid, watch):
    """(The child's exit status, the line saying its processes passed memory_mb or None), killing
    its group early when the executor asks or when `watch` finds them over the bound (the sweep
    after it ends the rest)."""
    pidfd = os.pidfd_open(pid)
    over = None
    try:
        while True:
            ready, _, _ = select.select([pidfd] + ([sock] if sock else []), [], [], memory_bound.WATCH_S)
            if sock in ready:
                message = sock.recv(65536)
                if not message or b"kill" in message:
                    _kill(lambda: os.killpg(pid, signal.SIGKILL))
                    if not message:
                        sock = None  # The executor is gone; still reap, then serve() ends.
            if pidfd in ready:
                return os.waitpid(pid, 0)[1], over or watch.over()
            if over is None:
                over = watch.over()
                if over:
                    _kill(lambda: os.killpg(pid, signal.SIGKILL))
    finally:
        os.close(pidfd)


def serve(config, sock):
    init = config["isolation"] == "namespaces"
    while True:
        data, fds, _, _ = socket.recv_fds(sock, 1 << 24, 3)
        if not data:
            return  # The executor closed the socket: the run is over.
        while not data.endswith(b"\n"):  # A long script arrives in several pieces.
            more = sock.recv(1 << 24)
            if not more:
                return
            data += more
        messages = [json.loads(line) for line in data.splitlines() if line.strip()]
        codes = [i for i, m in enumerate(messages) if "code" in m]  # A "kill" before them is moot (late).
        if not codes:
            for fd in fds:
                os.close(fd)
            continue
        request = messages[codes[-1]]
        # A stop that came right behind the script, in the same read, is for this script.
        killed = any("kill" in m for m in messages[codes[-1] + 1:])
        sys.stdout.flush()
        watch = memory_bound.Watch(config.get("memory_mb"), config.get("cgroup"))
        pid = os.fork()
        if pid == 0:
            sock.close()
            run_child(config, request, fds)
        for fd in fds:
            os.close(fd)
        if killed:
            _kill(lambda: os.kill(pid, signal.SIGKILL))
        send(sock, {"pid": pid})
        status, over = wait_child(sock, pid, watch)
        sweep(pid, init)
        send(sock, {"status": status, **({"memory": over} if over else {})})
        if config.get("once"):
            return


def enter_namespaces(config, sock):
    """New namespaces; the rest of the worker runs as the first process of the new pid namespace,
    and this process only waits for it (and dies with the executor, taking it along)."""
    namespaces.enter(os.getuid(), os.getgid(), config.get("keep_uid"))
    pid = os.fork()
    if pid:
        sock.close()
        _, status = os.waitpid(pid, 0)
        os._exit(os.waitstatus_to_exitcode(status) & 0xFF if os.WIFEXITED(status) else 1)
    LIBC.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    namespaces.build_root(config["readable"], config["writable"], config.get("tmp_mb", 256))


def probe(config):
    """`worker.py --probe CONFIG`: build the namespaces and the root, then end (0: they work here)."""
    namespaces.enter(os.getuid(), os.getgid(), config.get("keep_uid"))
    pid = os.fork()
    if pid == 0:
        try:
            namespaces.build_root(config["readable"], config["writable"], 1)
            os._exit(0 if os.listdir("/proc") else 1)
        except BaseException as exc:  # noqa: B036
            print(exc, file=sys.stderr)
            os._exit(1)
    _, status = os.waitpid(pid, 0)
    raise SystemExit(os.waitstatus_to_exitcode(status))


def main():
    if sys.argv[1] == "--probe":
        probe(json.loads(sys.argv[2]))
    config = json.loads(sys.argv[1])
    LIBC.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)  # Never outlive the run.
    signal.signal(signal.SIGINT, signal.SIG_IGN)             # Ctrl-C is the executor's to handle.
    sock = socket.socket(fileno=config["fd"])
    try:
        if config["isolation"] == "namespaces":
            enter_namespaces(config, sock)
        else:
            LIBC.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)  # Orphans come back to us, to be swept.
            # Without a pid namespace, nothing kills our scripts' processes if we die: when the
            # executor dies (even by SIGKILL) we get SIGTERM instead, and sweep before we go.
            signal.signal(signal.SIGTERM, lambda *_: (sweep(0, init=False), os._exit(0)))
            LIBC.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
            if config.get("network") == "isolate":
                isolate_network()
        LIBC.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)  # Nothing of ours can be read through /proc/<pid>/mem.
        for module in config.get("preload", []):
            try:
                __import__(module)
            except Exception:  # A missing optional library only costs its import time later.
                pass
        memory_bound.join(config.get("cgroup"))  # After the preloads: only what its scripts hold counts.
        if config.get("landlock"):  # The worker's own domain; each script nests one inside it.
            landlock.restrict(*allowlist(config, for_script=False), config["landlock"])
    except OSError as exc:
        send(sock, {"ready": False, "error": str(exc)})
        raise SystemExit(3) from exc
    send(sock, {"ready": True})
    serve(config, sock)


if __name__ == "__main__":
    main()
