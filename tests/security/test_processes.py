"""Processes (issue 12, items 5 and 12): what a script starts ends with it, also when it kills its
worker and when dsstar itself is SIGKILLed; no signal or trace reaches a process outside the
script; thread and fork bombs end at a limit or at the deadline, and the next script still runs.

Processes are found on the host by a marker in their command line or environment, never through
the executor's own account of them."""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
import sys
import time

import pytest

from security.support import attempts, describe, kill_all, processes_in, processes_with, wait_for

CONFINED_ONLY = "a script may signal and trace the user's other processes"

# Starts two double-forked setsid daemons, a subprocess and a `sleep` (marked in its environment),
# and waits until all of them are running.
LEFTOVERS = """
import os, subprocess, sys, time
SLEEPER = "import sys, time; open(sys.argv[2], 'w').close(); time.sleep(300)"
def daemon(tag):
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            os.execv(sys.executable, [sys.executable, "-c", SLEEPER, MARKER + tag, "ready" + tag])
        os._exit(0)
    os.wait()
daemon("-daemon1")
daemon("-daemon2")
subprocess.Popen([sys.executable, "-c", SLEEPER, MARKER + "-child", "ready-child"])
subprocess.Popen(["sleep", "300"], env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "MARK": MARKER})
deadline = time.monotonic() + 10
while not all(os.path.exists("ready" + tag) for tag in ("-daemon1", "-daemon2", "-child")):
    if time.monotonic() > deadline:
        raise SystemExit("the leftovers did not start")
    time.sleep(0.01)
print("leftovers running", flush=True)
"""


# In a hostile script: try `action`, print whether the kernel delivered or refused it.
ATTEMPT = "import os, signal\n" + attempts("delivered")


def marker() -> str:
    return "dsstar-leftover-" + secrets.token_hex(6)


def assert_none_left(mark: str, seconds: float = 1.0) -> None:
    left = wait_for(lambda: processes_with(mark), seconds)
    details = describe(left)
    kill_all(left)
    assert not left, f"still running: {details}"


def test_leftovers_end_with_the_script(box):
    mark = marker()
    result = box.run(f"MARKER = {mark!r}\n{LEFTOVERS}")
    assert_none_left(mark)
    assert result.ok and "leftovers running" in result.stdout, result.stderr


def test_leftovers_end_when_the_script_kills_its_worker(box):
    mark = marker()
    kill_worker = ATTEMPT + """
group = os.getpgid(os.getppid())
if group not in (0, os.getpgid(0)):
    attempt("the worker's group", lambda: os.killpg(group, signal.SIGKILL))
attempt("the worker", lambda: os.kill(os.getppid(), signal.SIGKILL))
attempt("pid 1", lambda: os.kill(1, signal.SIGKILL))
time.sleep(0.5)
"""
    result = box.run(f"MARKER = {mark!r}\n{LEFTOVERS}\n{kill_worker}")
    assert_none_left(mark)
    assert "leftovers running" in result.stdout, result.stderr
    after = box.run("print('the next script runs')", "next")
    assert after.ok and "the next script runs" in after.stdout, after.stderr


SIGNALS = ATTEMPT + """
attempt("the neighbour", lambda: os.kill(NEIGHBOUR, signal.SIGKILL))
attempt("the worker", lambda: os.kill(os.getppid(), signal.SIGKILL))
attempt("pid 1", lambda: os.kill(1, signal.SIGKILL))
me, reachable = os.getpid(), []
for pid in range(1, PID_MAX):  # Signal 0 only asks whether a signal would be allowed: harmless to
                               # dsstar (here: pytest) and everything else, even if it were.
    try:
        if pid != me:
            os.kill(pid, 0)
            reachable.append(pid)
    except OSError:
        pass
print("reachable", reachable)
"""


@pytest.mark.tiers("strong", "medium", reason=CONFINED_ONLY)
def test_no_signal_reaches_a_process_outside_the_script(box, sleeper):
    with open("/proc/sys/kernel/pid_max") as handle:  # Guess every pid, up to a bound that covers ours.
        pid_max = max(min(int(handle.read()), 1 << 18), os.getpid() + 1, sleeper.proc.pid + 1)
    code = f"NEIGHBOUR, PID_MAX = {sleeper.proc.pid}, {pid_max}\n{SIGNALS}"
    result = box.run(code)
    assert result.ok, result.stderr
    assert "delivered" not in result.stdout, result.stdout
    assert "reachable []" in result.stdout, result.stdout
    assert sleeper.proc.poll() is None, "the neighbour was killed"
    after = box.run("print('the next script runs')", "next")
    assert after.ok and "the next script runs" in after.stdout, after.stderr


KERNEL = """
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
def attempt(what, call, *args):
    if call(*args) == 0:
        print("done", what)
    else:
        print("refused", what, os.strerror(ctypes.get_errno()))
PTRACE_ATTACH, CLONE_NEWUSER, CLONE_NEWNS = 16, 0x10000000, 0x00020000
attempt("ptrace the worker", libc.ptrace, PTRACE_ATTACH, os.getppid(), None, None)
attempt("ptrace the neighbour", libc.ptrace, PTRACE_ATTACH, NEIGHBOUR, None, None)
os.makedirs("mnt", exist_ok=True)
attempt("mount", libc.mount, b"none", b"mnt", b"tmpfs", 0, None)
attempt("unshare", libc.unshare, CLONE_NEWUSER | CLONE_NEWNS)
"""


@pytest.mark.tiers("strong", "medium", reason=CONFINED_ONLY)
def test_ptrace_mount_and_new_namespaces_are_refused(box, sleeper):
    result = box.run(f"NEIGHBOUR = {sleeper.proc.pid}\n{KERNEL}")
    assert result.ok, result.stderr
    assert "done" not in result.stdout and result.stdout.count("refused") == 4, result.stdout


# -- dsstar killed during a script ------------------------------------------------------------------

DRIVER = """
import json, sys
from pathlib import Path
from dsstar_cli.sandbox import Executor
base, tier, warm, options = Path(sys.argv[1]), sys.argv[2], sys.argv[3] == "warm", json.loads(sys.argv[4])
executor = Executor(base / "run" / "work", base / "data", timeout_s=120, memory_mb=1024, tier=tier, warm=warm,
                    **options)
executor.run((base / "script.py").read_text(), "hostile")
"""


def test_leftovers_end_when_dsstar_is_killed(tier_and_path, tmp_path):
    mark = marker()
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "sales.csv").write_text("region,units\nnorth,10\n")
    # The code goes through a file: the driver's own command line must not carry the marker.
    (tmp_path / "script.py").write_text(f"MARKER = {mark!r}\n{LEFTOVERS}\ntime.sleep(300)\n")
    argv = [sys.executable, "-c", DRIVER, str(tmp_path), tier_and_path.kind,
            "warm" if tier_and_path.warm else "cold", json.dumps(tier_and_path.options)]
    driver = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        # Two daemons, a subprocess and a `sleep`, all started by the script inside the driver's sandbox.
        wait_for(lambda: len(processes_with(mark)) < 4 and driver.poll() is None, 30)
        assert driver.poll() is None and len(processes_with(mark)) >= 4, \
            f"the script did not start: {driver.stderr.read() if driver.poll() is not None else processes_with(mark)}"
        driver.send_signal(signal.SIGKILL)
        driver.wait()
        assert_none_left(mark, seconds=3)
    finally:
        driver.kill()
        driver.wait()
        kill_all(processes_with(mark))


# -- bombs (item 12) -------------------------------------------------------------------------------

ENDLESS_BOMB = """
import os, threading, time
forks = threads = 0
while True:
    try:
        threading.Thread(target=time.sleep, args=(600,), daemon=True).start()
        threads += 1
    except Exception:  # At the memory limit: RuntimeError or MemoryError. Keep trying, endlessly.
        pass
    if forks < 300:  # Enough to test the sweep, not enough to take the machine's pids.
        try:
            if os.fork() == 0:
                time.sleep(600)
                os._exit(0)
            forks += 1
            if forks % 50 == 0:
                print("forks", forks, "threads", threads, flush=True)
        except Exception:
            pass
"""


def test_an_endless_bomb_ends_at_the_deadline(box):
    box.run("print('the worker is up')", "first")
    workers = set(processes_in(box.work))  # Warm: the worker's processes; cold: none.
    started = time.monotonic()
    result = box.run(ENDLESS_BOMB, timeout_s=1.5)
    assert time.monotonic() - started < 1.5 + 5, f"the step took {time.monotonic() - started:.1f}s"
    assert not result.ok and result.timed_out, (result.stdout[-300:], result.stderr[-300:])
    left = wait_for(lambda: set(processes_in(box.work)) - workers, 1)
    assert not left, f"{len(left)} processes of the bomb outlived the step"
    after = box.run("print('the next script runs')", "next")
    assert after.ok and "the next script runs" in after.stdout, after.stderr


THREAD_BOMB = """
import os, threading, time
started = 0
try:
    for _ in range(5000):
        threading.Thread(target=time.sleep, args=(600,), daemon=True).start()
        started += 1
    print("no limit: started", started, "threads", flush=True)
except (RuntimeError, OSError, MemoryError) as exc:
    print("limit after", started, "threads:", type(exc).__name__, exc, flush=True)
os._exit(0)
"""


def test_a_thread_bomb_meets_a_limit_before_the_deadline(box):
    """The memory limit (RLIMIT_AS) bounds threads in every tier: the bomb must stop on an error
    ("can't start new thread"), well before the deadline."""
    result = box.run(THREAD_BOMB, timeout_s=5)
    assert not result.timed_out, f"no limit: the deadline ended it ({result.stdout[-200:]!r})"
    assert "limit after" in result.stdout, result.stdout + result.stderr[-300:]


# A chain: each process starts the next in a new session and exits at once (a new pid every few
# hundred microseconds, never two alive for long), writing a byte to `beat` as it goes.
FORK_CHAIN = """
import os, time
if os.fork() == 0:
    beat = os.open("beat", os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    while True:
        os.setsid() if os.getsid(0) != os.getpid() else None
        os.write(beat, b".")
        if os.fork():
            os._exit(0)
time.sleep(0.3)
print("chain running", flush=True)
"""


def beats_stop(beat, seconds: float = 0.5) -> bool:
    """The chain's heartbeat file stops growing (over `seconds`)."""
    size = beat.stat().st_size if beat.exists() else 0
    time.sleep(seconds)
    return (beat.stat().st_size if beat.exists() else 0) == size


def test_a_fork_chain_ends_with_the_step_and_with_dsstar(box):
    beat = box.work / "beat"
    for round in range(2):  # Each step, and again after the worker (dsstar's side) is closed.
        before = beat.stat().st_size if beat.exists() else 0
        result = box.run(FORK_CHAIN, f"chain{round}")
        assert result.ok and "chain running" in result.stdout, result.stderr
        assert beat.stat().st_size > before + 2, "the chain did not run"
        assert beats_stop(beat), "the fork chain outlived its step"
    box.executor.close()
    assert beats_stop(box.work / "beat"), "the fork chain outlived dsstar's executor"


OWN_MAP = """
import os
print("own map:", "python" in open("/proc/self/maps").read())
for pid in (os.getppid(), 1):
    try:
        print("read", pid, len(open(f"/proc/{pid}/maps").read()))
    except OSError as exc:
        print("refused", pid, exc.strerror)
"""


@pytest.mark.tiers("strong", "medium", reason="basic promises no confinement of reads")
def test_a_script_reads_its_own_memory_map_and_no_other(box):
    """scikit-learn needs the script's own /proc/self/maps (threadpoolctl); the medium tier allows that
    one file, resolved in the script's own process: its worker's map (addresses of the process that
    forks every script) and any other stay out of reach."""
    result = box.run(OWN_MAP, "maps")
    assert result.ok, result.stderr
    assert "own map: True" in result.stdout
    assert "read " not in result.stdout, result.stdout
