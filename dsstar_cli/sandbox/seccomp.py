"""A seccomp filter for generated scripts: the system calls a data script never needs are refused.

Self-contained (no dsstar imports): the sandbox worker imports it by path. The filter is a small
classic-BPF program built here rather than through libseccomp, which is a C library a machine may
lack; it checks the architecture first (any other ABI, such as 32-bit calls on x86_64, is
refused) and then answers EPERM for each listed call. Refused, whatever the tier:

- leaving or rebuilding the sandbox: mount and the new mount API, pivot_root, chroot, unshare,
  setns, and clone/clone3 asking for new namespaces (clone3 answers ENOSYS, so libc falls back to
  clone, whose flags a filter can read);
- reaching other processes: ptrace, process_vm_readv/writev;
- every socket (socket(2); socketpair stays, it connects nothing): no TCP, UDP, netlink, nor Unix
  sockets with a path or abstract, whatever namespace the script is in;
- devices, kernel and machine state: mknod, modules, kexec, bpf, perf, keyrings, userfaultfd,
  io_uring, handle-based opens, swap, reboot, clocks, hostname, quotas, syslog, ioperm.

`ungoverned=True` also refuses what nothing else governs in the medium tier (no namespaces, and
Landlock governs opening files, not metadata, IPC or sockets it did not see made):

- chmod, chown and utime, on any file the user owns;
- every extended-attribute call (set, get, list, remove; by path, link, descriptor and the *at
  forms), answered ENOTSUP like a file system without them (shutil.copy2 and `ls` go on): a
  POSIX ACL is an attribute, so setxattr('system.posix_acl_access') would change a mode;
- file_getattr/file_setattr (the inode flags and project id);
- SysV IPC (shm*, msg*, sem*): the host's segments, queues and semaphores are in reach otherwise;
- socketpair, sendmsg/sendmmsg and sendto with an address: a socketpair'd Unix datagram socket
  can send to any pathname socket of the user's (socket() is refused everywhere, so this was the
  one way to hold a socket; send(), which is sendto without an address, stays);
- inotify and fanotify: watches tell what happens to files outside (e.g. ~/.ssh).
"""

import ctypes
import errno
import platform
import struct

# name: (x86_64, aarch64 / asm-generic); None where the architecture has no such call.
SYSCALLS = {
    "ptrace": (101, 117), "process_vm_readv": (310, 270), "process_vm_writev": (311, 271),
    "mount": (165, 40), "umount2": (166, 39), "pivot_root": (155, 41), "chroot": (161, 51),
    "unshare": (272, 97), "setns": (308, 268), "mknod": (133, None), "mknodat": (259, 33),
    "sethostname": (170, 161), "setdomainname": (171, 162), "kexec_load": (246, 104),
    "kexec_file_load": (320, 294), "init_module": (175, 105), "finit_module": (313, 273),
    "delete_module": (176, 106), "bpf": (321, 280), "perf_event_open": (298, 241), "keyctl": (250, 219),
    "add_key": (248, 217), "request_key": (249, 218), "userfaultfd": (323, 282),
    "io_uring_setup": (425, 425), "io_uring_enter": (426, 426), "io_uring_register": (427, 427),
    "open_by_handle_at": (304, 265), "name_to_handle_at": (303, 264), "fsopen": (430, 430),
    "fsconfig": (431, 431), "fsmount": (432, 432), "fspick": (433, 433), "move_mount": (429, 429),
    "open_tree": (428, 428), "mount_setattr": (442, 442), "swapon": (167, 224), "swapoff": (168, 225),
    "reboot": (169, 142), "acct": (163, 89), "settimeofday": (164, 170), "clock_settime": (227, 112),
    "adjtimex": (159, 171), "clock_adjtime": (305, 266), "iopl": (172, None), "ioperm": (173, None),
    "quotactl": (179, 60), "syslog": (103, 116), "vhangup": (153, 58), "socket": (41, 198),
}
METADATA = {
    "chmod": (90, None), "fchmod": (91, 52), "fchmodat": (268, 53), "fchmodat2": (452, 452),
    "chown": (92, None), "fchown": (93, 55), "lchown": (94, None), "fchownat": (260, 54),
    "utime": (132, None), "utimes": (235, None), "futimesat": (261, None), "utimensat": (280, 88),
}
XATTR = {
    "setxattr": (188, 5), "lsetxattr": (189, 6), "fsetxattr": (190, 7), "getxattr": (191, 8),
    "lgetxattr": (192, 9), "fgetxattr": (193, 10), "listxattr": (194, 11), "llistxattr": (195, 12),
    "flistxattr": (196, 13), "removexattr": (197, 14), "lremovexattr": (198, 15), "fremovexattr": (199, 16),
    "setxattrat": (463, 463), "getxattrat": (464, 464), "listxattrat": (465, 465), "removexattrat": (466, 466),
}
UNGOVERNED = {
    "file_getattr": (468, 468), "file_setattr": (469, 469),
    "shmget": (29, 194), "shmat": (30, 196), "shmctl": (31, 195), "shmdt": (67, 197),
    "semget": (64, 190), "semop": (65, 193), "semctl": (66, 191), "semtimedop": (220, 192),
    "msgget": (68, 186), "msgsnd": (69, 189), "msgrcv": (70, 188), "msgctl": (71, 187),
    "socketpair": (53, 199), "sendmsg": (46, 211), "sendmmsg": (307, 269),
    "inotify_init": (253, None), "inotify_init1": (294, 26), "inotify_add_watch": (254, 27),
    "fanotify_init": (300, 262), "fanotify_mark": (301, 263),
}
SENDTO = (44, 206)  # Refused with an address (its fifth argument), allowed without (send()).
CLONE, CLONE3 = (56, 220), (435, 435)
# CLONE_NEWNS | NEWCGROUP | NEWUTS | NEWIPC | NEWUSER | NEWPID | NEWNET | NEWTIME
NEW_NAMESPACES = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000 | 0x80
ARCHES = {"x86_64": (0, 0xC000003E), "aarch64": (1, 0xC00000B7), "arm64": (1, 0xC00000B7)}
X32_BIT = 0x40000000

# Classic BPF opcodes and seccomp return values.
LD_W_ABS, JEQ_K, JGE_K, JSET_K, RET_K = 0x20, 0x15, 0x35, 0x45, 0x06
RET_ALLOW, RET_ERRNO, RET_KILL_PROCESS = 0x7FFF0000, 0x00050000, 0x80000000
NR_OFFSET, ARCH_OFFSET, ARG0_OFFSET = 0, 4, 16
ARG4_LOW, ARG4_HIGH = 16 + 8 * 4, 16 + 8 * 4 + 4  # Both halves of a 64-bit argument (little-endian).
PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 38, 22, 2


def supported() -> bool:
    return platform.machine() in ARCHES


def _numbers(table: dict, column: int) -> list[int]:
    return sorted({pair[column] for pair in table.values() if pair[column] is not None})


def program(ungoverned: bool = False, machine: str | None = None) -> list[tuple[int, int, int, int]]:
    """The filter as (code, jt, jf, k) instructions."""
    column, audit_arch = ARCHES[machine or platform.machine()]
    refused = {**SYSCALLS, **({**METADATA, **UNGOVERNED} if ungoverned else {})}
    numbers = _numbers(refused, column)
    deny, unsupported = RET_ERRNO | errno.EPERM, RET_ERRNO | errno.EOPNOTSUPP
    code = [(LD_W_ABS, 0, 0, ARCH_OFFSET), (JEQ_K, 1, 0, audit_arch), (RET_K, 0, 0, RET_KILL_PROCESS),
            (LD_W_ABS, 0, 0, NR_OFFSET)]
    if column == 0:  # x32 calls on x86_64 share the arch value: refuse them all.
        code += [(JGE_K, 0, 1, X32_BIT), (RET_K, 0, 0, deny)]
    code += [(JEQ_K, 0, 1, CLONE3[column]), (RET_K, 0, 0, RET_ERRNO | errno.ENOSYS)]
    for number in numbers:
        code += [(JEQ_K, 0, 1, number), (RET_K, 0, 0, deny)]
    if ungoverned:
        for number in _numbers(XATTR, column):
            code += [(JEQ_K, 0, 1, number), (RET_K, 0, 0, unsupported)]
        # sendto: refused when either half of the address pointer is set (then the number is reloaded).
        code += [(JEQ_K, 0, 6, SENDTO[column]), (LD_W_ABS, 0, 0, ARG4_LOW), (JEQ_K, 0, 2, 0),
                 (LD_W_ABS, 0, 0, ARG4_HIGH), (JEQ_K, 1, 0, 0), (RET_K, 0, 0, deny), (RET_K, 0, 0, RET_ALLOW)]
    # clone: allowed unless it asks for a namespace (the argument is read last: it replaces the number).
    code += [(JEQ_K, 0, 3, CLONE[column]), (LD_W_ABS, 0, 0, ARG0_OFFSET), (JSET_K, 0, 1, NEW_NAMESPACES),
             (RET_K, 0, 0, deny), (RET_K, 0, 0, RET_ALLOW)]
    return code


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def install(ungoverned: bool = False) -> None:
    """Apply the filter to this thread and everything it starts later (irrevocable)."""
    libc = ctypes.CDLL(None, use_errno=True)
    code = program(ungoverned)
    raw = b"".join(struct.pack("HBBI", *instruction) for instruction in code)
    buffer = ctypes.create_string_buffer(raw, len(raw))
    fprog = _SockFprog(len(code), ctypes.cast(buffer, ctypes.c_void_p))
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS)")
    if libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_SECCOMP)")
