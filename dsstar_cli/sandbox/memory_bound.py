"""The memory of a script's processes bounded together, not each alone (RLIMIT_AS bounds one
process: a script that forks four children held four times memory_mb).

Two ways, the first that works here:

cgroup    the executor makes one per worker (`Cgroup.make`): cgroup v2 where our own cgroup's
          subtree is ours to write and offers the memory controller, or cgroup v1's memory
          hierarchy where we may write it (e.g. as root). Its limit is memory_mb with no swap,
          and at most MAX_PROCESSES tasks where the pids controller is there too. The worker joins
          it once it has imported pandas (`join`, through descriptors the executor opened, so it
          works inside namespaces): its own pages stay charged where they were, and every
          script's process is born in the group (joining per script cost ~10 ms on a loaded
          machine: cgroup v1 moves a task under a global lock). The kernel holds the limit
          (reclaiming, then killing in the group); the worker's `Watch` sees the kill in the
          group's counters and ends the script's other processes; should the kernel pick the
          worker itself, the executor sees the counter and says so.
watchdog  everywhere else the worker (the scripts' subreaper or pid-namespace init: it knows
          every descendant) sums their memory every WATCH_S (proportional set size where it may
          read it, else resident size) and kills them when the sum passes memory_mb. A script
          can overshoot by what it touches in WATCH_S.

Imports only the standard library: the worker imports it inside the sandbox.
"""

import errno
import os
import re
import secrets
import time

WATCH_S = 0.05
MAX_PROCESSES = 512
# An empty group of ours this old was left by a dsstar killed with kill -9 (a worker joins its
# group within a minute of its start, or gives up: worker_client.START_TIMEOUT_S).
STALE_S = 120
PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


# -- the executor's side: a cgroup for one worker's scripts -----------------------------------------

def _mounts():
    """(filesystem type, mount point, root, super options) of every cgroup mount."""
    found = []
    try:
        with open("/proc/self/mountinfo") as handle:
            for line in handle:
                left, right = line.split(" - ", 1)
                fields, kind = left.split(), right.split()
                if kind[0] in ("cgroup", "cgroup2"):
                    found.append((kind[0], fields[4], fields[3], kind[2].split(",")))
    except (OSError, IndexError, ValueError):
        pass
    return found


def _own_paths():
    """{controller or "" (v2): our cgroup's path} from /proc/self/cgroup."""
    found = {}
    try:
        with open("/proc/self/cgroup") as handle:
            for line in handle.read().splitlines():
                _, controllers, path = line.split(":", 2)
                for controller in controllers.split(",") if controllers else [""]:
                    found[controller] = path
    except (OSError, ValueError):
        pass
    return found


def _folder(mount, root, path):
    """Our cgroup's folder under a mount whose root is `root` (a container sees only its part)."""
    if root != "/" and not (path == root or path.startswith(root + "/")):
        return None
    relative = path[len(root):] if root != "/" else path
    return os.path.join(mount, relative.lstrip("/"))


def _remove_stale(parent):
    """Remove the empty groups a killed dsstar left beside ours (one with a process stays: rmdir
    refuses it; a young one may be another run's, not joined yet)."""
    try:
        names = [name for name in os.listdir(parent) if name.startswith("dsstar-")]
    except OSError:
        return
    for name in names:
        try:
            if time.time() - os.stat(os.path.join(parent, name)).st_mtime > STALE_S:
                os.rmdir(os.path.join(parent, name))
        except OSError:
            pass


def _write(folder, name, value):
    with open(os.path.join(folder, name), "w") as handle:
        handle.write(str(value))


class Cgroup:
    """A cgroup of our own for one worker's scripts; `make` answers None where none can be made."""

    def __init__(self, version, folders, events, limit_mb):
        self.version = version      # "v1" or "v2"
        self.limit_mb = limit_mb
        self.folders = folders      # the group's folders (v1: one per hierarchy, memory first)
        self.events = events        # the file counting its out-of-memory kills
        self.fds = []
        self.max_processes = False  # whether pids.max holds too

    @classmethod
    def make(cls, memory_mb):
        name = "dsstar-" + secrets.token_hex(6)
        for build in (cls._v2, cls._v1):
            try:
                made = build(name, memory_mb)
            except OSError:
                made = None
            if made:
                return made
        return None

    @classmethod
    def _v2(cls, name, limit_mb):
        own = _own_paths().get("")
        for kind, mount, root, _ in _mounts():
            parent = _folder(mount, root, own) if kind == "cgroup2" and own else None
            if not parent or not os.access(os.path.join(parent, "cgroup.procs"), os.W_OK):
                continue
            with open(os.path.join(parent, "cgroup.subtree_control")) as handle:
                if "memory" not in handle.read().split():
                    return None
            folder = os.path.join(parent, name)
            _remove_stale(parent)
            os.mkdir(folder)
            made = cls("v2", [folder], os.path.join(folder, "memory.events"), limit_mb)
            try:
                _write(folder, "memory.max", limit_mb * 1024 * 1024)
                for setting, value in (("memory.swap.max", 0), ("memory.oom.group", 1), ("pids.max", MAX_PROCESSES)):
                    if os.path.exists(os.path.join(folder, setting)):
                        _write(folder, setting, value)
                        made.max_processes = made.max_processes or setting == "pids.max"
            except OSError:
                made.remove()
                raise
            return made
        return None

    @classmethod
    def _v1(cls, name, limit_mb):
        own, folders = _own_paths(), {}
        for kind, mount, root, options in _mounts():
            for controller in ("memory", "pids"):
                if kind == "cgroup" and controller in options and controller in own:
                    parent = _folder(mount, root, own[controller])
                    if parent and os.access(parent, os.W_OK):
                        folders[controller] = os.path.join(parent, name)
        if "memory" not in folders:
            return None
        made = cls("v1", [], os.path.join(folders["memory"], "memory.oom_control"), limit_mb)
        limit = limit_mb * 1024 * 1024
        try:
            for controller, folder in sorted(folders.items()):  # memory first: folders[0]
                _remove_stale(os.path.dirname(folder))
                os.mkdir(folder)
                made.folders.append(folder)
                if controller == "pids":
                    _write(folder, "pids.max", MAX_PROCESSES)
                    made.max_processes = True
                    continue
                _write(folder, "memory.limit_in_bytes", limit)
                swap = os.path.join(folder, "memory.memsw.limit_in_bytes")
                _write(folder, *(("memory.memsw.limit_in_bytes", limit) if os.path.exists(swap)
                                 else ("memory.swappiness", 0)))
        except OSError:
            made.remove()
            raise
        return made

    def open(self):
        """{"procs": descriptors a process writes "0" to to join, "events": the OOM counter's}:
        opened here, so the worker needs no path into /sys (it has none in the strong tier)."""
        if not self.fds:
            self.fds = [os.open(os.path.join(folder, "cgroup.procs"), os.O_WRONLY) for folder in self.folders]
            self.fds.append(os.open(self.events, os.O_RDONLY))
        return {"procs": self.fds[:-1], "events": self.fds[-1]}

    def oom_kills(self):
        """How many processes the kernel has killed in the group for memory (the executor's look)."""
        return oom_kills(self.open()["events"])

    def limit_files(self):
        """What DuckDB reads of the group a script is in (the medium tier lets scripts read them)."""
        return [os.path.join(self.folders[0], "memory.max" if self.version == "v2" else "memory.limit_in_bytes")]

    def remove(self):
        """Close our descriptors and remove the group (empty once the worker and its scripts are gone)."""
        for fd in self.fds:
            os.close(fd)
        self.fds = []
        for folder in reversed(self.folders):
            for _ in range(100):  # Killed processes leave the group when they are gone: a moment.
                try:
                    os.rmdir(folder)
                    break
                except OSError as exc:
                    if exc.errno != errno.EBUSY:
                        break
                    time.sleep(0.005)


def how_bounded(cgroup=True, nobody=False):
    """How memory_mb and the number of a script's processes are held here, in a few words (doctor,
    the run's sandbox report). `nobody`: scripts run as that user (RLIMIT_NPROC counts for them)."""
    made = Cgroup.make(64) if cgroup else None
    if made:
        made.remove()
    memory = (f"memory_mb holds for a script's processes together (a cgroup {made.version})" if made else
              f"memory_mb holds for a script's processes together (dsstar sums their memory every "
              f"{int(WATCH_S * 1000)} ms{': no cgroup can be made here' if cgroup else ''})")
    if made and made.max_processes or nobody:
        return f"{memory}; at most {MAX_PROCESSES} processes" + ("" if made and made.max_processes else " (as nobody)")
    return f"{memory}; no limit on their number (a fork bomb runs until the deadline or your own ulimit -u)"


# -- the worker's side ------------------------------------------------------------------------------

def join(cgroup):
    """The calling process (the worker) into the group, for good (a no-op without one)."""
    for fd in (cgroup or {}).get("procs", []):
        os.write(fd, b"0")
        os.close(fd)


def over_line(memory_mb):
    """What the script's stderr says when the kernel held the group's limit."""
    return (f"dsstar: the script's processes together reached memory_mb ({memory_mb} MB); "
            "the kernel killed one, and dsstar ended the others")


def oom_kills(fd):
    """How many processes the kernel has killed in the group for memory."""
    found = re.search(rb"^oom_kill (\d+)", os.pread(fd, 4096, 0), re.M)
    return int(found.group(1)) if found else 0


class Watch:
    """Whether the script's processes together passed memory_mb: the group's kill counter moved
    (cgroup), or the worker's descendants hold more than the limit (watchdog)."""

    def __init__(self, memory_mb, cgroup):
        self.memory_mb = memory_mb  # None: no bound to watch (the worker's probe).
        self.events = (cgroup or {}).get("events")
        self.kills = oom_kills(self.events) if self.events is not None else 0

    def over(self):
        """One line saying so when the script is past its bound, else None."""
        if self.memory_mb is None:
            return None
        if self.events is not None:
            return over_line(self.memory_mb) if oom_kills(self.events) > self.kills else None
        pids = descendants(os.getpid())
        total = sum(memory_of(pid) for pid in pids)
        if total > self.memory_mb * 1024 * 1024:
            return (f"dsstar: the script's {len(pids)} processes together held {total // 2**20} MB, past "
                    f"memory_mb ({self.memory_mb} MB); dsstar killed them all")
        return None


def descendants(root):
    """Every process below `root`, from /proc/PID/task/TID/children (or one scan of /proc)."""
    if not os.path.exists(f"/proc/{root}/task/{root}/children"):
        return _descendants_by_scan(root)  # A kernel without the children files.
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        children = []
        try:
            for task in os.listdir(f"/proc/{pid}/task"):
                with open(f"/proc/{pid}/task/{task}/children") as listed:
                    children += [int(child) for child in listed.read().split()]
        except OSError:  # Gone meanwhile: its children come back to the worker, found next time.
            pass
        found += children
        todo += children
    return found


def _descendants_by_scan(root):
    parents = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as stat:
                    parents[int(entry)] = int(stat.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
    found, todo = [], [root]
    while todo:
        parent = todo.pop()
        children = [pid for pid, ppid in parents.items() if ppid == parent]
        found += children
        todo += children
    return found


def memory_of(pid):
    """Bytes a process holds: its proportional set size (pages shared with others counted in
    part) where we may read it, else its resident size."""
    try:
        with open(f"/proc/{pid}/smaps_rollup", "rb") as handle:
            found = re.search(rb"^Pss:\s+(\d+) kB", handle.read(), re.M)
        if found:
            return int(found.group(1)) * 1024
    except OSError:
        pass
    try:
        with open(f"/proc/{pid}/statm") as handle:
            return int(handle.read().split()[1]) * PAGE
    except (OSError, ValueError, IndexError):
        return 0
