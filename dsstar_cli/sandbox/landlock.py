"""Landlock (Linux >= 5.13): an allowlist of the files a process may touch, kept by the kernel.

Self-contained (no dsstar imports): the sandbox worker imports it by path. `restrict` starts a new
Landlock domain for the calling process and everything it starts later: read (and execute) under
`readable`, everything under `writable`, nothing anywhere else. With ABI 4 TCP bind/connect are
refused too, and with ABI 6 the domain is scoped: no signals to, and no abstract Unix sockets of,
processes outside it. Landlock also refuses ptrace of any process outside the domain, so a script
in its own nested domain can neither trace nor signal the worker that started it.
"""

import ctypes
import os
import stat

CREATE_RULESET, ADD_RULE, RESTRICT_SELF = 444, 445, 446  # the same numbers on every architecture
CREATE_RULESET_VERSION, RULE_PATH_BENEATH = 1, 1
EXECUTE, WRITE_FILE, READ_FILE, READ_DIR = 1, 2, 4, 8
ALL_ABI1 = (1 << 13) - 1
REFER, TRUNCATE, IOCTL_DEV = 1 << 13, 1 << 14, 1 << 15
FILE_RIGHTS = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV  # the rights a non-folder can carry
READ = EXECUTE | READ_FILE | READ_DIR
NET_BIND_TCP, NET_CONNECT_TCP = 1, 2
SCOPE_ABSTRACT_UNIX, SCOPE_SIGNAL = 1, 2
PR_SET_NO_NEW_PRIVS = 38
LIBC = ctypes.CDLL(None, use_errno=True)


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


def abi() -> int:
    """The kernel's Landlock ABI version; 0 when Landlock is missing or disabled."""
    try:
        return max(int(LIBC.syscall(CREATE_RULESET, None, 0, CREATE_RULESET_VERSION)), 0)
    except (OSError, AttributeError):
        return 0


def all_rights(version: int) -> int:
    return ALL_ABI1 | (REFER if version >= 2 else 0) | (TRUNCATE if version >= 3 else 0) | (
        IOCTL_DEV if version >= 5 else 0)


def restrict(readable, writable, version):
    """Allow read under `readable` and everything under `writable`; nothing else. Irrevocable.

    Paths that do not exist are skipped (a read-only list is the same on every machine)."""
    handled = all_rights(version)
    attr = RulesetAttr(handled, (NET_BIND_TCP | NET_CONNECT_TCP) if version >= 4 else 0,
                       (SCOPE_ABSTRACT_UNIX | SCOPE_SIGNAL) if version >= 6 else 0)
    size = ctypes.sizeof(RulesetAttr) if version >= 6 else (16 if version >= 4 else 8)
    ruleset = _syscall(CREATE_RULESET, ctypes.byref(attr), size, 0)
    try:
        for paths, access in ((readable, READ), (writable, handled)):
            for path in paths:
                _allow(ruleset, path, access)
        if LIBC.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:  # Landlock requires it (or CAP_SYS_ADMIN).
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS)")
        _syscall(RESTRICT_SELF, ruleset, 0)
    finally:
        os.close(ruleset)


def _allow(ruleset, path, access):
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except FileNotFoundError:
        return
    try:
        if not stat.S_ISDIR(os.fstat(fd).st_mode):
            access &= FILE_RIGHTS
        rule = PathBeneathAttr(access, fd)
        _syscall(ADD_RULE, ruleset, RULE_PATH_BENEATH, ctypes.byref(rule), 0)
    finally:
        os.close(fd)
