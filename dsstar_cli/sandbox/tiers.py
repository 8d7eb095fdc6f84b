"""Isolation tiers, probed once per process and always reported, never silently lowered.

strong  the script sees a private root holding only the interpreter, system libraries, a few
        files of /etc, the data folder (read-only) and its work folder; its own pids, no network,
        no capabilities, a Landlock domain and the seccomp filter of its own. Built into dsstar
        from Linux user namespaces (`namespaces`); where those are refused, bubblewrap gives the
        namespaces instead (`bubblewrap`), when it is installed.
medium  no namespaces: Landlock allows reading only the same allowlist and writing only the work
        folder, seccomp refuses sockets, tracing, devices, mounts and chmod/chown/utime, no
        capabilities; a private network namespace when the machine allows one.
basic   rlimits, a clean environment, no capabilities, a separate session, an unprivileged user
        when we run as root and the data allows it, and the data-integrity check around every
        script. Nothing stops a script reading what the user can read.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from dsstar_cli.errors import SetupError
from dsstar_cli.sandbox import landlock, namespaces, seccomp

TIERS = ("strong", "medium", "basic")
WORKER = Path(__file__).with_name("worker.py")
HOW_TO_GET_STRONG = ("allow unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1, or "
                     "kernel.apparmor_restrict_unprivileged_userns=0 on Ubuntu), or install bubblewrap")


@dataclass(frozen=True)
class TierProbe:
    available: dict[str, bool]
    details: dict[str, str] = field(default_factory=dict)
    landlock_abi: int = 0
    strong_backend: str | None = None   # "namespaces" or "bubblewrap"
    network_namespace: bool = False     # medium: a private network namespace can be made


def python_paths() -> list[str]:
    """Where the interpreter and its packages live (a venv and the Python it was made from)."""
    return sorted({sys.base_prefix, sys.prefix, sys.base_exec_prefix, sys.exec_prefix})


def readable_paths(data_dir: Path, extra: list[str] | None = None) -> list[str]:
    """What a script may read: system paths, the interpreter, the data folder (and opted-in links)."""
    return namespaces.system_paths() + python_paths() + [str(data_dir)] + list(extra or [])


def _run_ok(argv: list[str]) -> tuple[bool, str]:
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=20, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, str(exc)
    return proc.returncode == 0, (proc.stderr.strip().splitlines() or [""])[-1]


def _namespaces_work() -> tuple[bool, str]:
    config = {"readable": namespaces.system_paths() + python_paths(), "writable": []}
    return _run_ok([sys.executable, "-I", str(WORKER), "--probe", json.dumps(config)])


def _bubblewrap_works() -> tuple[bool, str]:
    bwrap = shutil.which("bwrap")
    if not bwrap:
        return False, "bubblewrap (bwrap) is not installed"
    return _run_ok([bwrap, "--ro-bind", "/", "/", "--unshare-all", "--die-with-parent", "true"])


def _network_namespace_works() -> bool:
    flags = "0x40000000" if os.geteuid() == 0 else "0x50000000"  # CLONE_NEWNET (| CLONE_NEWUSER)
    ok, _ = _run_ok([sys.executable, "-I", "-c", "import ctypes; l=ctypes.CDLL(None,use_errno=True); "
                     f"raise SystemExit(l.unshare({flags})!=0)"])
    return ok


@functools.lru_cache(maxsize=1)
def probe() -> TierProbe:
    """What this machine supports; run once (a few tens of milliseconds)."""
    details, available = {}, {"basic": True}
    linux = sys.platform.startswith("linux") and hasattr(os, "pidfd_open")
    abi = landlock.abi() if linux else 0
    filters = linux and seccomp.supported()
    layers = " + ".join(part for part, ok in ((f"Landlock ABI {abi}", abi >= 1), ("seccomp", filters)) if ok)
    backend, why_not = None, "not Linux" if not linux else ""
    if linux:
        ok, why = _namespaces_work()
        if ok:
            backend = "namespaces"
        else:
            ok_bwrap, why_bwrap = _bubblewrap_works()
            backend = "bubblewrap" if ok_bwrap else None
            why_not = f"user namespaces are refused here ({why or 'unknown reason'}); {why_bwrap}"
    available["strong"] = backend is not None
    details["strong"] = (f"{'built-in namespaces' if backend == 'namespaces' else 'bubblewrap'} (user, mount, "
                         f"pid, network){' + ' + layers if layers else ''}") if backend else why_not
    netns = linux and _network_namespace_works()
    available["medium"] = abi >= 1 and filters
    details["medium"] = (f"{layers}{' + network namespace' if netns else ''}" if available["medium"] else
                         "Landlock (Linux >= 5.13) and seccomp are needed" if linux else "not Linux")
    details["basic"] = "rlimits, clean environment, no capabilities, integrity check"
    return TierProbe(available, details, abi, backend, netns)


def choose(requested: str, required: str) -> str:
    """The tier to use: `requested` (auto = the strongest available), refusing anything below `required`."""
    found = probe()
    if requested == "auto":
        tier = next(t for t in TIERS if found.available.get(t))
    elif not found.available.get(requested):
        raise SetupError(f"sandbox tier {requested!r} is not available here: {found.details.get(requested)}")
    else:
        tier = requested
    if TIERS.index(tier) > TIERS.index(required):
        raise SetupError(f"sandbox.require is {required!r} but the best tier here is {tier!r} "
                         f"({found.details.get(required)}); {HOW_TO_GET_STRONG}, or lower sandbox.require")
    return tier
