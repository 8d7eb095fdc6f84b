"""Isolation tiers, probed once per process and always reported, never silently lowered.

strong  the script sees a private root holding only the interpreter, system libraries, a few
        files of /etc, the data folder (read-only) and its work folder; its own pids, no network,
        no capabilities, a Landlock domain and the seccomp filter of its own. Built into dsstar
        from Linux user namespaces (`namespaces`); where those are refused, bubblewrap gives the
        namespaces instead (`bubblewrap`), when it is installed.
medium  no namespaces: Landlock allows reading only the same allowlist and writing only the work
        folder, seccomp refuses sockets, tracing, devices, mounts, and what Landlock does not
        govern (chmod/chown/utime, extended attributes, SysV IPC, socketpair and addressed sends,
        inotify/fanotify), no capabilities; a private network namespace when the machine allows
        one. The promise it cannot keep (MEDIUM_GAPS): a script can stat any path (metadata is
        not Landlock's).
basic   rlimits, a clean environment, no capabilities, a separate session, an unprivileged user
        when we run as root and the data allows it, and the data-integrity check around every
        script. Not contained (BASIC_GAPS): a script can read and write whatever the user can,
        reach the network and signal the user's processes; `auto` ending here warns on every run.
Every tier bounds memory_mb for a script's processes together (memory_bound.py).
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
STRONG_BACKENDS = ("namespaces", "bubblewrap")  # In the order `auto` tries them.
WORKER = Path(__file__).with_name("worker.py")
# What the medium tier does not contain, said wherever the tier is described (doctor, README).
MEDIUM_GAPS = ("not contained: a script can read the metadata of any file (stat: size, owner, times, "
               "whether it exists)")
HOW_TO_GET_STRONG = ("allow unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1, or "
                     "kernel.apparmor_restrict_unprivileged_userns=0 on Ubuntu), or install bubblewrap")
# What the basic tier does not contain, said on every run `auto` ends there, by doctor and the README.
BASIC_GAPS = "a script can read and write whatever you can, reach the network and signal your processes"


@dataclass(frozen=True)
class TierProbe:
    available: dict[str, bool]
    details: dict[str, str] = field(default_factory=dict)
    landlock_abi: int = 0
    strong_backend: str | None = None   # "namespaces" or "bubblewrap": the one `auto` uses
    layers: str = ""                    # the kernel features every confined script gets


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


@functools.lru_cache(maxsize=1)
def bubblewrap_works() -> tuple[bool, str]:
    bwrap = shutil.which("bwrap")
    if not bwrap:
        return False, "bubblewrap (bwrap) is not installed"
    return _run_ok([bwrap, "--ro-bind", "/", "/", "--unshare-all", "--die-with-parent", "true"])


@functools.lru_cache(maxsize=1)
def network_namespace_works() -> bool:
    flags = "0x40000000" if os.geteuid() == 0 else "0x50000000"  # CLONE_NEWNET (| CLONE_NEWUSER)
    ok, _ = _run_ok([sys.executable, "-I", "-c", "import ctypes; l=ctypes.CDLL(None,use_errno=True); "
                     f"raise SystemExit(l.unshare({flags})!=0)"])
    return ok


def strong_detail(backend: str, layers: str) -> str:
    name = "built-in namespaces" if backend == "namespaces" else "bubblewrap"
    return f"{name} (user, mount, pid, network){' + ' + layers if layers else ''}"


@functools.lru_cache(maxsize=1)
def probe() -> TierProbe:
    """What this machine supports; run once (a few tens of milliseconds)."""
    details, available = {}, {"basic": True}
    linux = sys.platform.startswith("linux") and hasattr(os, "pidfd_open")
    abi = landlock.abi() if linux else 0
    filters = linux and seccomp.supported()
    layers = " + ".join(part for part, ok in ((f"Landlock ABI {abi}", abi >= 1), ("seccomp", filters)) if ok)
    backend, why_not = None, "not Linux"
    if linux:  # bubblewrap is only tried when the built-in namespaces are refused (each try costs a process).
        ok, why = _namespaces_work()
        ok_bwrap, why_bwrap = (False, "") if ok else bubblewrap_works()
        backend = "namespaces" if ok else "bubblewrap" if ok_bwrap else None
        why_not = f"user namespaces are refused here ({why or 'unknown reason'}); {why_bwrap}"
    available["strong"] = backend is not None
    details["strong"] = strong_detail(backend, layers) if backend else why_not
    available["medium"] = abi >= 1 and filters
    details["medium"] = (f"{layers} (+ a network namespace where allowed); {MEDIUM_GAPS}" if available["medium"] else
                         "Landlock (Linux >= 5.13) and seccomp are needed" if linux else "not Linux")
    details["basic"] = f"rlimits, clean environment, no capabilities, integrity check; not contained: {BASIC_GAPS}"
    return TierProbe(available, details, abi, backend, layers)


def strong_backend(requested: str) -> str:
    """The strong tier's backend: `requested` (auto = the first that works here), or a clear refusal."""
    found = probe()
    if requested == "auto":
        return found.strong_backend or "namespaces"
    if requested not in STRONG_BACKENDS:
        raise SetupError(f"sandbox.strong_backend must be auto, namespaces or bubblewrap, not {requested!r}")
    works, why = (found.strong_backend == "namespaces", found.details.get("strong")) if requested == "namespaces" \
        else bubblewrap_works()
    if not works:
        raise SetupError(f"the strong tier's {requested} backend does not work here ({why})")
    return requested


def for_scripts(requested: str, required: str) -> str:
    """The tier this machine gives scripts: `choose`, except that without Linux's pidfd only basic exists."""
    linux = sys.platform.startswith("linux") and hasattr(os, "pidfd_open")
    return choose(requested if linux else "basic", required)


def auto_warning(requested: str, chosen: str) -> str | None:
    """The line every run prints when `auto` found nothing better than basic: basic must be a choice,
    so it says what is not contained and how to get more, or to accept it (which silences it)."""
    if requested != "auto" or chosen != "basic":
        return None
    return (f"the sandbox is the basic tier (no Landlock and seccomp, no namespaces here): {BASIC_GAPS}. "
            f"For more, {HOW_TO_GET_STRONG} (or use Linux >= 5.13 for Landlock); to accept it, set sandbox.tier: basic")


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
