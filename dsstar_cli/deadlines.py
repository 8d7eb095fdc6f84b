"""Waiting with a deadline: a model call bounded by wall clock (socket timeouts are per read, so a
server that drips bytes defeats them), and a pause between attempts that ends at the run's
deadline or at a stop request from another thread."""

from __future__ import annotations

import threading
import time
from typing import Any, Callable

from dsstar_cli.errors import stop_signal


class RunDeadline(Exception):
    """The run's deadline passed while a call (or the wait before its next attempt) was in flight:
    the call was abandoned. Not a ModelError: the model did nothing wrong, the run is out of time."""


POLL_S = 0.1  # How often a waiting worker thread looks at its stop request (signals reach only the main thread).


class CallTimedOut(Exception):
    """`bounded_call`'s deadline passed first; the call goes on in its abandoned thread, unheard."""


def bounded_call(call: Callable[[], Any], deadline: float | None, stop: threading.Event | None = None) -> Any:
    """`call()`'s value (or its exception), waited for until `deadline` at most.

    Socket timeouts are per read, so a server that sends a byte every few seconds defeats them; the
    wall clock cannot be fooled. The call runs in a daemon thread and is abandoned at the deadline
    (CallTimedOut), on a signal (in the main thread, the wait is interrupted at once), or when `stop`
    is set: the abandoned thread holds nothing but its own request, whose result no one reads, so it
    cannot change the run's state, and it never keeps the process from exiting.
    """
    box: dict[str, Any] = {}
    finished = threading.Event()

    def target() -> None:
        try:
            box["value"] = call()
        except BaseException as exc:  # Handed to the waiting thread, or dropped with the call.
            box["error"] = exc
        finally:
            finished.set()

    threading.Thread(target=target, name="dsstar-model-call", daemon=True).start()
    while True:
        if stop is not None and stop.is_set():
            raise stop_signal(stop)
        remaining = None if deadline is None else deadline - time.monotonic()
        if remaining is not None and remaining <= 0:
            raise CallTimedOut()
        wait = POLL_S if stop is not None and (remaining is None or remaining > POLL_S) else remaining
        if finished.wait(wait):
            break
    if "error" in box:
        raise box["error"]
    return box["value"]


def pause(seconds: float, deadline: float | None, stop: threading.Event | None = None) -> None:
    """Sleep `seconds`, but no later than `deadline` (then RunDeadline) and not past a stop request."""
    end = time.monotonic() + seconds if deadline is None else min(time.monotonic() + seconds, deadline)
    while (left := end - time.monotonic()) > 0:
        if stop is None:
            time.sleep(left)  # In the main thread a signal interrupts it.
        elif stop.wait(min(left, POLL_S * 10)):
            raise stop_signal(stop)
    if stop is not None and stop.is_set():
        raise stop_signal(stop)
    if deadline is not None and time.monotonic() >= deadline:
        raise RunDeadline()


def earliest(*deadlines: float | None) -> float | None:
    known = [d for d in deadlines if d is not None]
    return min(known) if known else None
