"""Errors that end a command before or outside the loop, each with its exit code."""


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
