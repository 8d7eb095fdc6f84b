"""The strong tier without bubblewrap: Linux namespaces that an unprivileged process may create.

Self-contained (no dsstar imports): the sandbox worker imports it by path. `enter` moves the
calling process into new user, mount, pid, network, IPC and UTS namespaces; the process then
forks, and its child, the first process of the new pid namespace, calls `build_root`: a private
root file system that holds only what the allowlist names, each bound at its own path:

- read-only: the interpreter and its packages, system libraries, a few files of /etc (never all
  of it: /etc/shadow and friends stay out), the data folder;
- writable: the work folder; a size-capped private /tmp; /dev/null, zero, full, random, urandom;
- a /proc of the new pid namespace only (no other process of the machine can be seen, so no
  /proc/<pid>/environ of a neighbour holding an API key); no /sys, no home, no /run, no sockets.

When the first process of a pid namespace ends, the kernel kills every other process in it, so
nothing a script starts can outlive the worker, however it was daemonised.
"""

import ctypes
import errno
import os
import stat

CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC = 0x00020000, 0x04000000, 0x08000000
CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET = 0x10000000, 0x20000000, 0x40000000
ALL = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
MNT_DETACH = 2
ST_NOATIME, ST_NODIRATIME, ST_RELATIME, MS_RELATIME = 1024, 2048, 4096, 1 << 21
PIVOT_ROOT = {"x86_64": 155, "aarch64": 41}
DEVICES = ("null", "zero", "full", "random", "urandom")
ETC = ("passwd", "group", "nsswitch.conf", "hosts", "localtime", "timezone", "ld.so.cache", "ld.so.conf",
       "ld.so.conf.d", "ssl", "ca-certificates", "fonts", "mime.types", "os-release", "matplotlibrc")
STAGE = "/tmp"  # Where the new root is assembled (a tmpfs that only this namespace sees).
LIBC = ctypes.CDLL(None, use_errno=True)


def _check(result, what):
    if result != 0:
        code = ctypes.get_errno()
        raise OSError(code, f"{what}: {os.strerror(code)}")


def _mount(source, target, fstype, flags, data=None):
    _check(LIBC.mount(source and source.encode(), target.encode(), fstype and fstype.encode(), flags,
                      data and data.encode()), f"mount {target}")


def system_paths():
    """Read-only system paths every script needs (top-level links such as /lib -> usr/lib kept)."""
    return ["/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"] + [f"/etc/{name}" for name in ETC]


def enter(uid, gid, keep_uid=None):
    """New namespaces for this process; inside, uid 0 is our own uid. Started as root, `keep_uid`
    (an unprivileged user) maps to itself too, so scripts can be handed to it: a process may map
    only its own id once inside, so a helper left outside writes that wider map for us."""
    if keep_uid is None or uid != 0:
        _check(LIBC.unshare(ALL), "unshare")
        _write("/proc/self/setgroups", "deny")  # A map written from inside requires it.
        _write("/proc/self/uid_map", f"0 {uid} 1\n")
        _write("/proc/self/gid_map", f"0 {gid} 1\n")
        return
    ready_r, ready_w = os.pipe()
    me, helper = os.getpid(), os.fork()
    if helper == 0:
        try:
            os.close(ready_w)
            if os.read(ready_r, 1) == b"u":
                for kind, own in (("uid", uid), ("gid", gid)):
                    _write(f"/proc/{me}/{kind}_map", f"0 {own} 1\n{keep_uid} {keep_uid} 1\n")
                os._exit(0)
        finally:
            os._exit(1)
    os.close(ready_r)
    unshared = LIBC.unshare(ALL) == 0
    os.write(ready_w, b"u" if unshared else b"x")
    os.close(ready_w)
    _, status = os.waitpid(helper, 0)
    _check(0 if unshared else -1, "unshare")
    if status != 0:
        raise OSError(errno.EPERM, "could not write the user namespace's id maps")


def _write(path, text):
    with open(path, "w") as handle:
        handle.write(text)


def build_root(readable, writable, tmp_mb):
    """Assemble and enter the private root (as the first process of the new pid namespace)."""
    _mount(None, "/", None, MS_REC | MS_PRIVATE)
    entries = _survey(readable, writable)  # Before the stage hides what lies under /tmp.
    _mount("tmpfs", STAGE, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=1m")
    for folder, size in (("/tmp", tmp_mb), ("/dev/shm", min(tmp_mb, 64))):  # First: paths below /tmp bind over it.
        os.makedirs(STAGE + folder, exist_ok=True)
        _mount("tmpfs", STAGE + folder, "tmpfs", MS_NOSUID | MS_NODEV, f"mode=1777,size={size}m")
    read_only_folders = []
    try:
        for path, kind, what, is_writable in entries:
            target = STAGE + path
            covered = any(path.startswith(folder + "/") for folder in read_only_folders)
            if kind == "link":
                if not covered:
                    os.makedirs(os.path.dirname(target), exist_ok=True)
                    os.symlink(what, target)
                continue
            if covered and not is_writable:
                continue  # Already visible, read-only, through the folder above it.
            if not covered:
                _make_mountpoint(target, kind == "dir")
            _bind(f"/proc/self/fd/{what}", target, read_only=not is_writable)
            if kind == "dir" and not is_writable:
                read_only_folders.append(path)
    finally:
        for _, kind, what, _ in entries:
            if kind != "link":
                os.close(what)
    for name in DEVICES:
        if os.path.exists(f"/dev/{name}"):
            _make_mountpoint(STAGE + f"/dev/{name}", False)
            _bind(f"/dev/{name}", STAGE + f"/dev/{name}", read_only=False, nodev=False)
    for name, target in (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"), ("stdout", "/proc/self/fd/1"),
                         ("stderr", "/proc/self/fd/2")):
        os.symlink(target, STAGE + f"/dev/{name}")
    os.makedirs(STAGE + "/proc", exist_ok=True)
    _mount("proc", STAGE + "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    os.chdir(STAGE)
    _pivot_root()
    _mount(None, "/", None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)
    LIBC.sethostname(b"dsstar-sandbox", 14)


def _survey(readable, writable):
    """(path, kind, fd or link text, writable) for each existing path, parents first. A link is
    mirrored as a link, and what it leads to is bound too; anything else is held open by an O_PATH
    descriptor, so the bind cannot be redirected between this look and the mount."""
    wanted = [(os.path.abspath(p), False) for p in readable] + [(os.path.abspath(p), True) for p in writable]
    entries, seen = [], set()
    while wanted:
        path, is_writable = wanted.pop(0)
        if path in seen or not os.path.lexists(path):
            continue
        seen.add(path)
        if os.path.islink(path):
            entries.append((path, "link", os.readlink(path), is_writable))
            wanted.append((os.path.realpath(path), is_writable))
            continue
        fd = os.open(path, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC)
        kind = "dir" if stat.S_ISDIR(os.fstat(fd).st_mode) else "file"
        entries.append((path, kind, fd, is_writable))
    return sorted(entries, key=lambda entry: (entry[0].count("/"), entry[0]))


def _make_mountpoint(target, folder):
    if folder:
        os.makedirs(target, exist_ok=True)
    elif not os.path.lexists(target):
        os.makedirs(os.path.dirname(target), exist_ok=True)
        open(target, "w").close()


def _bind(source, target, read_only, nodev=True):
    try:
        _mount(source, target, None, MS_BIND)
    except OSError as exc:  # A folder with mounts of its own below it must be bound with them.
        if exc.errno != errno.EINVAL:
            raise
        _mount(source, target, None, MS_BIND | MS_REC)
    flags = MS_REMOUNT | MS_BIND | MS_NOSUID | (MS_NODEV if nodev else 0) | (MS_RDONLY if read_only else 0)
    _mount(None, target, None, flags | _kept_flags(target))


def _kept_flags(target):
    """The source mount's own restrictions: a remount in a user namespace may not lift them."""
    found = os.statvfs(target).f_flag
    kept = found & (MS_NOSUID | MS_NODEV | MS_NOEXEC | ST_NOATIME | ST_NODIRATIME)
    return kept | (MS_RELATIME if found & ST_RELATIME else 0) | (MS_RDONLY if found & MS_RDONLY else 0)


def _pivot_root():
    """Make the current folder (the stage) the root and let go of the old one."""
    import platform

    number = PIVOT_ROOT.get(platform.machine())
    if number is None:
        raise OSError(errno.ENOSYS, f"pivot_root: unknown architecture {platform.machine()}")
    _check(LIBC.syscall(number, b".", b"."), "pivot_root")
    _check(LIBC.umount2(b".", MNT_DETACH), "umount old root")
    os.chdir("/")
