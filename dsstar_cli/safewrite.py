"""Writing a file whole where someone may have planted a link: a fresh file under a random name
(O_EXCL | O_NOFOLLOW: never an existing file or a link), renamed over the target (a rename replaces a
link instead of writing through it, and a crash never leaves half a file behind)."""

from __future__ import annotations

import os
import secrets


def replace_file(folder: int, name: str, text: str) -> None:
    """Write `text` as `name` in the folder open as descriptor `folder`."""
    tmp = f".{name}.{secrets.token_hex(8)}.tmp"
    handle = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=folder)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
        os.replace(tmp, name, src_dir_fd=folder, dst_dir_fd=folder)
    except BaseException:
        try:
            os.unlink(tmp, dir_fd=folder)
        except OSError:
            pass
        raise
