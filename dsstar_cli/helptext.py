"""How the command line presents itself: usage lines, the options table, and bad-argument errors.

Typer's defaults show `{data_dir} [question]` in usage lines and `<bool>` beside every flag; a
bad flag ends in a Rich box on stderr and nothing on stdout, even with --json. Here: the usage
line names arguments as the help describes them (DATA_DIR [QUESTION]), flags show no type, and a
usage error is one line on stderr plus, with --json, the error object on stdout (exit 2).
"""

from __future__ import annotations

import importlib
import sys

from typer.core import TyperArgument, TyperCommand, TyperGroup

from dsstar_cli.result import ExitCode, error_json


# The click that typer runs on: recent typers carry their own copy (typer._click), older ones use click.
_CLICK = TyperCommand.__mro__[1].__module__.rsplit(".", 1)[0]
_exceptions = importlib.import_module(f"{_CLICK}.exceptions")
ClickException = _exceptions.ClickException


def _flags_without_type(params: list) -> list:
    for param in params:
        if getattr(param, "is_flag", False) and param.metavar is None:
            param.metavar = ""  # A flag takes no value: no `<bool>` beside it.
    return params


class Group(TyperGroup):
    """The top-level command: flags shown without a type."""

    def get_params(self, ctx) -> list:
        return _flags_without_type(super().get_params(ctx))


class Command(TyperCommand):
    """A typer command whose usage line and options table read as the help text does."""

    def collect_usage_pieces(self, ctx) -> list[str]:
        pieces = [self.options_metavar] if self.options_metavar else []
        for param in self.get_params(ctx):
            if isinstance(param, TyperArgument):
                name = (param.metavar or param.name or "").upper()
                pieces.append(name if param.required else f"[{name}]")
        return pieces

    def get_params(self, ctx) -> list:
        return _flags_without_type(super().get_params(ctx))


def usage_failure(exc: Exception, argv: list[str]) -> int:
    """Report a bad command line: one line on stderr, the error object on stdout with --json."""
    if type(exc).__name__ == "NoArgsIsHelpError":  # `dsstar` alone: the help, as usual.
        exc.show()
        return ExitCode.USAGE
    message = exc.format_message()
    code = exc.exit_code if isinstance(exc, _exceptions.UsageError) else ExitCode.USAGE
    hint = ""
    ctx = getattr(exc, "ctx", None)
    if ctx is not None:
        hint = f" (see `{ctx.command_path} --help`)"
    sys.stderr.write(f"dsstar: error: {message}{hint}\n")
    if "--json" in argv:
        sys.stdout.write(error_json("usage", message, code) + "\n")
    return code
