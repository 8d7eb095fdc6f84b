"""The API key (issue 12, item 3): in dsstar's environment, in a neighbour process's environment and
in a `~/.env` file. The executor masks the key's value in a script's output, so the script prints
what it finds reversed and in base64: those copies show whether it could obtain the key at all."""

from __future__ import annotations

import base64

from security.support import SECRET

SCAN = r"""
import base64, os, re
def report(where, blob):
    for key in sorted(set(re.findall(rb"sk-test-[0-9a-f]+", blob))):
        print("FOUND", where, key[::-1].decode(), base64.b64encode(key).decode())
print("names", sorted(os.environ))
report("os.environ", "\n".join(f"{k}={v}" for k, v in os.environ.items()).encode())
try:
    pids = [pid for pid in os.listdir("/proc") if pid.isdigit() or pid == "self"]
except OSError as exc:
    pids = []
    print("refused /proc", exc.strerror)
for pid in pids:
    try:
        report(f"/proc/{pid}/environ", open(f"/proc/{pid}/environ", "rb").read())
    except OSError:
        pass
try:
    report("home .env", open(ENV_FILE, "rb").read())
except OSError as exc:
    print("refused home .env", exc.strerror)
print("scan done")
"""


def test_the_key_cannot_be_obtained(box, sleeper):
    result = box.run(f"ENV_FILE = {str(box.outside.env_file)!r}\n{SCAN}")
    assert "scan done" in result.stdout, result.stderr
    copies = (SECRET[::-1], base64.b64encode(SECRET.encode()).decode())
    found = [line for line in result.stdout.splitlines() if any(copy in line for copy in copies)]
    if box.confined:
        assert not found, found
    else:  # basic promises a clean environment only; reads of /proc and files are the user's.
        assert not [line for line in found if line.startswith("FOUND os.environ")], found
    names = next(line for line in result.stdout.splitlines() if line.startswith("names"))
    assert "OPENAI_API_KEY" not in names  # Every tier: the environment is a clean one.
