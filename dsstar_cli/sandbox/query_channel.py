"""The query channel between a script and dsstar's own process (engine: spark).

One end of a connected socketpair is handed to the script's process the way its stdout and stderr
pipes are (SCM_RIGHTS over the worker's socket), as descriptor 3; dsstar keeps the other. Nothing
is created inside the sandbox: the seccomp filter refuses socket() (and, in the medium tier,
socketpair and addressed sends), and the script only reads and writes the descriptor it was given.

Frames: a 4-byte big-endian length, then the body. The script sends one JSON frame {"sql": ...};
dsstar answers with a JSON frame {"ok": true, "rows": N} followed by one frame of Arrow IPC stream
bytes, or {"ok": false, "error": "..."}.

Self-contained (standard library only): the sandbox worker imports it by path.
"""

import json
import os
import struct

FD = 3                          # Where the script's process holds its end.
MAX_REQUEST_BYTES = 1 << 20     # One SQL statement.
HEADER = struct.Struct(">I")


def write_frame(fd: int, body: bytes) -> None:
    view = memoryview(HEADER.pack(len(body)) + body)
    while view:
        view = view[os.write(fd, view):]


def _read_exactly(fd: int, count: int) -> bytes | None:
    chunks, left = [], count
    while left:
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def read_frame(fd: int, limit: int) -> bytes | None:
    """The next frame's body; None when the other end has closed. A frame longer than `limit` is a
    broken peer: ValueError."""
    head = _read_exactly(fd, HEADER.size)
    if head is None:
        return None
    (size,) = HEADER.unpack(head)
    if size > limit:
        raise ValueError(f"a frame of {size} bytes, over the {limit} allowed")
    body = _read_exactly(fd, size) if size else b""
    if body is None:
        return None
    return body


def write_json(fd: int, message: dict) -> None:
    write_frame(fd, json.dumps(message).encode())


def read_json(fd: int, limit: int = MAX_REQUEST_BYTES) -> dict | None:
    body = read_frame(fd, limit)
    return None if body is None else json.loads(body)
