"""The limits every tier promises (basic included): the deadline, memory and output."""

from __future__ import annotations

import time


def test_the_deadline_ends_a_busy_loop_and_a_script_ignoring_sigterm(box):
    for code in ("while True: pass",
                 "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\ntime.sleep(3600)"):
        started = time.monotonic()
        result = box.run(code, timeout_s=0.5)
        assert result.timed_out and not result.ok, code
        # The script's own time (from its start to its end, kill included) is the deadline's to bound;
        # the wall time also holds the worker's start and the data checks, slow on a loaded machine.
        assert result.seconds < 0.5 + 3, f"{code!r} ran {result.seconds:.1f}s"
        assert time.monotonic() - started < 0.5 + 20, f"{code!r} took {time.monotonic() - started:.1f}s"


def test_memory_and_output_are_capped(box):
    result = box.run("b = bytearray(50 * 1024**3)")
    assert not result.ok and "MemoryError" in result.stderr and result.seconds < 3, result.stderr[-300:]
    result = box.run("import sys\nblock = 'x' * (1 << 20)\nfor _ in range(64):\n    sys.stdout.write(block)",
                     timeout_s=20)
    assert len(result.stdout) < 200_000 and "output truncated by dsstar" in result.stdout
