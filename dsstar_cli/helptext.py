"""How the command line presents itself: usage lines, the options table, and bad-argument errors.

Typer's defaults show `{data_dir} [question]` in usage lines and `<bool>` beside every flag; a
bad flag ends in a Rich box on stderr and nothing on stdout, even with --json. Here: the usage
line names arguments as the help describes them (DATA_DIR [QUESTION]), flags show no type, a
usage error is one line on stderr plus, with --json, the error object on stdout (exit 2), and
`-V`/`--version` works after any command (`dsstar ask -V`), as `-h` does.
"""

from __future__ import annotations

import copy
import importlib
import sys

from typer.core import TyperArgument, TyperCommand, TyperGroup

from dsstar_cli.result import ExitCode, error_json


# The click that typer runs on: recent typers carry their own copy (typer._click), older ones use click.
_CLICK = TyperCommand.__mro__[1].__module__.rsplit(".", 1)[0]
_exceptions = importlib.import_module(f"{_CLICK}.exceptions")
ClickException = _exceptions.ClickException


def _with_version(command, ctx, params: list) -> list:
    """`params` and `-V`/`--version`, as `dsstar` itself declares it, so `dsstar ask -V` works as
    `dsstar -V` does: eager (it answers before a missing argument is noticed), hidden (the top-level
    help lists it once), and passing nothing to the command. A copy of the top-level option, rather
    than one built here, since typer's versions build their options differently."""
    if any("--version" in getattr(param, "opts", ()) for param in params):
        return params  # `dsstar` itself.
    if getattr(command, "_version_param", None) is None:  # One object: click orders callbacks by identity.
        top = [param for param in ctx.find_root().command.params if "--version" in getattr(param, "opts", ())]
        if not top:
            return params
        command._version_param = copy.copy(top[0])
        command._version_param.expose_value = False
        command._version_param.hidden = True
    return [*params, command._version_param]


def _flags_without_type(params: list) -> list:
    for param in params:
        if getattr(param, "is_flag", False) and param.metavar is None:
            param.metavar = ""  # A flag takes no value: no `<bool>` beside it.
    return params


class Group(TyperGroup):
    """A command with subcommands: flags shown without a type, -V/--version taken."""

    def get_params(self, ctx) -> list:
        return _flags_without_type(_with_version(self, ctx, super().get_params(ctx)))


def default_group(command: str) -> type:
    """A Group that runs `command` when no subcommand is named, options included: `dsstar config` is
    `dsstar config show`, `dsstar config --json` is `dsstar config show --json` (as `llm logs` is
    `llm logs list`; `dsstar runs` lists the runs likewise). A word that names no command is still
    refused as one."""

    class DefaultGroup(Group):
        def parse_args(self, ctx, args: list[str]) -> list[str]:
            named = args and not args[0].startswith("-")
            asks = args and args[0] in (*ctx.help_option_names, "-V", "--version")
            if not named and not asks:
                args = [command, *args]
            return super().parse_args(ctx, args)

    return DefaultGroup


class Command(TyperCommand):
    """A typer command whose usage line and options table read as the help text does; every command
    of dsstar's uses it (a command without it shows `--help -h <bool>` and refuses -V)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        if self.epilog:  # One paragraph, wrapped to the terminal (the source's line breaks cut lines short).
            self.epilog = " ".join(self.epilog.split())

    def collect_usage_pieces(self, ctx) -> list[str]:
        pieces = [self.options_metavar] if self.options_metavar else []
        for param in self.get_params(ctx):
            if isinstance(param, TyperArgument):
                name = (param.metavar or param.name or "").upper()
                pieces.append(name if param.required else f"[{name}]")
        return pieces

    def get_params(self, ctx) -> list:
        return _flags_without_type(_with_version(self, ctx, super().get_params(ctx)))


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
