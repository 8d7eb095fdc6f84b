"""Give up privileges for good: every capability, and the user id when told to.

Self-contained (no dsstar imports): the sandbox worker imports it by path. Run in each script's
process before its code: without capabilities even uid 0 cannot make device nodes, mount, change
the host name or override file permissions, and an emptied bounding set plus no_new_privs keeps
any program the script executes (set-uid ones included) from getting them back.
"""

import ctypes
import os

PR_CAPBSET_DROP, PR_SET_SECUREBITS, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 24, 28, 47, 4
PR_SET_NO_NEW_PRIVS, PR_SET_DUMPABLE = 38, 4
# NOROOT, NO_SETUID_FIXUP, NO_CAP_AMBIENT_RAISE and their locks; KEEP_CAPS locked off.
SECUREBITS = 0x01 | 0x02 | 0x04 | 0x08 | 0x20 | 0x40 | 0x80
LAST_CAP = 63
LINUX_CAPABILITY_VERSION_3 = 0x20080522
LIBC = ctypes.CDLL(None, use_errno=True)


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


def become(uid):
    """Switch to `uid` (and its group), with no supplementary groups."""
    os.setgroups([])
    os.setgid(uid)
    os.setuid(uid)


def drop_capabilities():
    """Empty every capability set. Calls a process without the rights for them fail harmlessly."""
    LIBC.prctl(PR_SET_SECUREBITS, SECUREBITS, 0, 0, 0)
    for cap in range(LAST_CAP + 1):
        LIBC.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0)
    LIBC.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    header, data = _CapHeader(LINUX_CAPABILITY_VERSION_3, 0), (_CapData * 2)()
    if LIBC.capset(ctypes.byref(header), data) != 0:
        raise OSError(ctypes.get_errno(), "capset: " + os.strerror(ctypes.get_errno()))
    if LIBC.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS)")


def capabilities():
    """The effective capability mask of this process (from /proc when it is there, else None)."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("CapEff:"):
                    return int(line.split()[1], 16)
    except OSError:
        return None
    return None
