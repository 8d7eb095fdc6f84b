"""Errors that end a command before or outside the loop, each with its exit code."""

from __future__ import annotations

import threading


class DsstarError(Exception):
    exit_code = 1
    kind = "error"


class UsageError(DsstarError):
    exit_code = 2
    kind = "usage"


class SetupError(DsstarError):
    """Configuration, model choice or credentials: fix the setup and run again."""

    exit_code = 4
    kind = "config"


class DataFolderError(DsstarError):
    exit_code = 6
    kind = "data_folder"


class Terminated(BaseException):
    """SIGTERM arrived: unwinds the run like Ctrl-C's KeyboardInterrupt, so the run folder is finished."""


class StopRequest(threading.Event):
    """Set by the main thread when Ctrl-C or SIGTERM arrives (only the main thread gets signals), so
    worker threads end their runs as the signal would have ended them."""

    def __init__(self) -> None:
        super().__init__()
        self.terminated = False

    def request(self, signal: BaseException) -> None:
        self.terminated = isinstance(signal, Terminated)
        self.set()


def stop_signal(stop: threading.Event) -> BaseException:
    """The exception a thread raises when `stop` is set: KeyboardInterrupt, or Terminated after SIGTERM."""
    return Terminated() if getattr(stop, "terminated", False) else KeyboardInterrupt()
