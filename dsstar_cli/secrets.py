"""Keep API keys out of everything dsstar writes: run folders, JSON, the generated code's env."""

from __future__ import annotations

import os
import re

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
