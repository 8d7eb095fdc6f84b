"""memory_mb bounds a script's processes together, in every tier (basic included): a script that
forks children, each under the per-process limit but together far over memory_mb, is ended, and
what its processes hold, read from /proc while it runs, stays near memory_mb. Where a cgroup can be
made (cgroup v1 as root, a delegated cgroup v2) the kernel holds the bound; the worker's watchdog
holds it everywhere else, and is also tried here where a cgroup could be made."""

from __future__ import annotations

import threading

import pytest

from security.support import memory_held, processes_in

MEMORY_MB = 1024        # the conftest's memory_mb
CHILDREN, BLOCK_MB = 6, 400  # 2.4 GB together, each child under the per-process 1 GB

# Each child writes its block (so it is resident), then holds it; the parent waits for them all.
FORKERS = f"""
import os, time
for _ in range({CHILDREN}):
    if os.fork() == 0:
        block = b"x" * ({BLOCK_MB} << 20)
        time.sleep(60)
        os._exit(0)
while True:
    try:
        os.wait()
    except ChildProcessError:
        break
print("survived")
"""


class PeakMemory(threading.Thread):
    """The most the processes in a work folder held together, looked at every few milliseconds."""

    def __init__(self, work):
        super().__init__(daemon=True)
        self.work, self.peak, self.done = work, 0, threading.Event()

    def run(self):
        while not self.done.wait(0.01):
            self.peak = max(self.peak, memory_held(processes_in(self.work)))

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *_):
        self.done.set()
        self.join()


def assert_bounded(box):
    with PeakMemory(box.work) as memory:
        result = box.run(FORKERS, timeout_s=30)
    peak_mb = memory.peak // 2**20
    # Unbounded they hold 2.4 GB until the deadline. The slack: the worker's share of the pages
    # its forks inherit, and what a child writes between two looks of the watchdog.
    assert peak_mb < MEMORY_MB * 1.5, f"the script's processes held {peak_mb} MB together"
    assert not result.ok and not result.timed_out, (result.timed_out, result.stderr[-500:])
    assert "survived" not in result.stdout
    assert "processes together" in result.stderr and f"memory_mb ({MEMORY_MB} MB)" in result.stderr, \
        result.stderr[-500:]
    assert box.run("print('next')").stdout == "next\n"  # The worker still serves.


@pytest.mark.executor(timeout_s=30)  # (The conftest's 5 s is short for 2.4 GB written on a loaded machine.)
def test_a_scripts_processes_together_stay_under_memory_mb(box):
    """The bound this machine gives (a cgroup as root here, the watchdog for most users)."""
    assert_bounded(box)


@pytest.mark.executor(memory_cgroup=False, timeout_s=30)
def test_the_watchdog_alone_keeps_the_processes_under_memory_mb(box):
    assert_bounded(box)
