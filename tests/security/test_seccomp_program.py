"""The seccomp filter on every architecture it supports, run through a small classic-BPF
interpreter: the same calls are refused on x86_64 and aarch64, whatever machine runs the test."""

from __future__ import annotations

import errno
import struct

import pytest

from dsstar_cli.sandbox import seccomp

ALLOW, DENY, UNSUPPORTED = seccomp.RET_ALLOW, seccomp.RET_ERRNO | errno.EPERM, seccomp.RET_ERRNO | errno.EOPNOTSUPP


def run(code, arch: int, nr: int, args=(0, 0, 0, 0, 0, 0)) -> int:
    """What the kernel would answer for system call `nr` with `args` (a classic-BPF interpreter)."""
    data = struct.pack("<iIQ6Q", nr, arch, 0, *args)
    pc, acc = 0, 0
    while True:
        op, jt, jf, k = code[pc]
        if op == seccomp.LD_W_ABS:
            acc = struct.unpack_from("<I", data, k)[0]
        elif op == seccomp.RET_K:
            return k
        else:
            taken = {seccomp.JEQ_K: acc == k, seccomp.JGE_K: acc >= k, seccomp.JSET_K: bool(acc & k)}[op]
            pc += jt if taken else jf
        pc += 1


@pytest.mark.parametrize("machine", ["x86_64", "aarch64"])
def test_medium_refuses_what_landlock_does_not_govern(machine):
    column, arch = seccomp.ARCHES[machine]
    medium, strong = seccomp.program(ungoverned=True, machine=machine), seccomp.program(machine=machine)
    for table, answer in ((seccomp.UNGOVERNED, DENY), (seccomp.METADATA, DENY), (seccomp.XATTR, UNSUPPORTED)):
        for name, numbers in table.items():
            if numbers[column] is not None:
                assert run(medium, arch, numbers[column]) == answer, (machine, name)
                assert run(strong, arch, numbers[column]) == ALLOW, (machine, name)
    sendto = seccomp.SENDTO[column]
    assert run(medium, arch, sendto, (3, 0, 10, 0, 0x7FFF_0000_1000, 16)) == DENY
    assert run(medium, arch, sendto, (3, 0, 10, 0, 0x1_0000_0000, 16)) == DENY    # only the high half set
    assert run(medium, arch, sendto, (3, 0, 10, 0, 0, 0)) == ALLOW                 # send(): no address
    clone = seccomp.CLONE[column]
    assert run(medium, arch, clone, (0x01200011, 0, 0, 0, 0, 0)) == ALLOW          # a plain fork
    assert run(medium, arch, clone, (0x10000000, 0, 0, 0, 0, 0)) == DENY           # a new user namespace
    read = 0 if column == 0 else 63
    assert run(medium, arch, read) == ALLOW
    other = seccomp.ARCHES["aarch64" if machine == "x86_64" else "x86_64"][1]
    assert run(medium, other, read) == seccomp.RET_KILL_PROCESS
