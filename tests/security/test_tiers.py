"""Which tier a machine without bubblewrap gets: with `bwrap` hidden from PATH, the strong tier still
comes from dsstar's own namespaces (on a machine that allows unprivileged user namespaces, as
this suite's machines do), and `auto` chooses it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

PROBE = """
import json
from dsstar_cli.sandbox import tiers
found = tiers.probe()
print(json.dumps({"available": found.available, "backend": found.strong_backend,
                  "auto": tiers.choose("auto", "basic"), "details": found.details}))
"""


def path_without_bubblewrap() -> str:
    bwrap = shutil.which("bwrap")
    hidden = os.path.dirname(os.path.realpath(bwrap)) if bwrap else None
    folders = [folder for folder in os.environ.get("PATH", "").split(os.pathsep)
               if folder and not (hidden and os.path.realpath(folder) == hidden)
               and not os.path.exists(os.path.join(folder, "bwrap"))]
    return os.pathsep.join(folders)


def test_without_bubblewrap_the_default_tier_is_strong():
    env = {**os.environ, "PATH": path_without_bubblewrap()}
    assert shutil.which("bwrap", path=env["PATH"]) is None
    proc = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    found = json.loads(proc.stdout)
    assert found["available"]["strong"], found["details"]
    assert found["backend"] == "namespaces" and found["auto"] == "strong", found
