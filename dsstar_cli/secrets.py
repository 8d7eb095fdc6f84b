"""Keep API keys out of everything dsstar writes: run folders, JSON, the generated code's env."""

from __future__ import annotations

import ctypes
import os
import re
import sys

from dsstar_cli.textmap import map_fields, map_strings

# Environment variable names that hold credentials, whatever the provider.
SECRET_NAME = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH)", re.IGNORECASE)
MIN_SECRET_LEN = 8
MASK = "[REDACTED]"


def secret_values(env: dict[str, str] | None = None) -> list[str]:
    """The values of credential-like variables, longest first (so substrings cannot leak)."""
    env = os.environ if env is None else env
    values = {v for k, v in env.items() if SECRET_NAME.search(k) and len(v) >= MIN_SECRET_LEN}
    return sorted(values, key=len, reverse=True)


def redact(text: str, secrets: list[str] | None = None) -> str:
    for value in secret_values() if secrets is None else secrets:
        text = text.replace(value, MASK)
    return text


def protect_process() -> None:
    """Keep this process's secrets from generated code (Linux; elsewhere a no-op).

    PR_SET_DUMPABLE=0 makes /proc/<our pid>/{environ,mem} readable only with ptrace rights, and
    the values of credential-like variables are overwritten in the C environment block, which is
    what /proc/<pid>/environ shows. Python's own copy (os.environ, which litellm reads) keeps them.
    """
    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL(None)
        libc.prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE = 4
        environ = ctypes.POINTER(ctypes.c_char_p).in_dll(libc, "environ")
        addresses = ctypes.cast(environ, ctypes.POINTER(ctypes.c_void_p))
        i = 0
        while environ[i]:
            name, _, value = environ[i].partition(b"=")
            if SECRET_NAME.search(name.decode(errors="replace")) and value:
                ctypes.memset(addresses[i] + len(name) + 1, ord("*"), len(value))
            i += 1
    except (OSError, ValueError, AttributeError):
        pass  # Best effort: the sandbox tiers are the main defence.


def redact_tree(value, secrets: list[str]):
    """`value` with every string inside it (dicts and lists walked) redacted."""
    return map_strings(value, lambda text: redact(text, secrets))


def redacting(sink):
    """An event sink that sees every event with credential values masked (the display, --json)."""
    secrets = secret_values()
    if not secrets:
        return sink

    def emit(event):
        sink(map_fields(event, lambda text: redact(text, secrets)))

    return emit
