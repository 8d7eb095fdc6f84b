"""Isolation tiers, probed once per process and always reported, never silently lowered.

strong  bubblewrap: the data folder and system paths bound read-only, no home, the run folder
        the only writable place, a size-capped /tmp, no network, own pid namespace, dies with us.
medium  Landlock: read-only everywhere but the run folder, no TCP, no signals to processes
        outside; plus a private network namespace (no UDP or DNS either).
basic   rlimits, a clean environment, a separate session, an unprivileged user when we run as
        root and the data allows it, and the data-integrity check around every script.
"""

from __future__ import annotations

import ctypes
import functools
import shutil
import subprocess
import sys
from dataclasses import dataclass, field

from dsstar_cli.errors import SetupError

TIERS = ("strong", "medium", "basic")


@dataclass(frozen=True)
class TierProbe:
    available: dict[str, bool]
    details: dict[str, str] = field(default_factory=dict)
    landlock_abi: int = 0


def _landlock_abi() -> int:
    if not sys.platform.startswith("linux"):
        return 0
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        version = libc.syscall(444, None, 0, 1)  # LANDLOCK_CREATE_RULESET_VERSION
        return max(int(version), 0)
    except (OSError, AttributeError):
        return 0


def _run_ok(argv: list[str]) -> tuple[bool, str]:
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=10, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, str(exc)
    return proc.returncode == 0, (proc.stderr.strip().splitlines() or [""])[-1]


@functools.lru_cache(maxsize=1)
def probe() -> TierProbe:
    """What this machine supports; run once (a few milliseconds)."""
    details, available = {}, {"basic": True}
    bwrap = shutil.which("bwrap")
    if bwrap:
        ok, why = _run_ok([bwrap, "--ro-bind", "/", "/", "--unshare-net", "--unshare-pid", "--die-with-parent",
                           "true"])
        available["strong"], details["strong"] = ok, "bubblewrap" if ok else f"bubblewrap fails here: {why}"
    else:
        available["strong"], details["strong"] = False, "bubblewrap (bwrap) is not installed"
    abi = _landlock_abi()
    if abi < 1:
        available["medium"], details["medium"] = False, "Landlock is not available (Linux >= 5.13 needed)"
    else:
        ok, why = _run_ok([sys.executable, "-I", "-c", "import ctypes,os; l=ctypes.CDLL(None,use_errno=True); "
                           "f=0x40000000 if os.geteuid()==0 else 0x50000000; raise SystemExit(l.unshare(f)!=0)"])
        available["medium"] = ok
        details["medium"] = f"Landlock ABI {abi} + network namespace" if ok else \
            "network namespaces are not allowed here (unshare failed)"
    details["basic"] = "rlimits, clean environment, integrity check"
    return TierProbe(available, details, abi)


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
                         f"({found.details.get(required)}); install bubblewrap or lower sandbox.require")
    return tier
