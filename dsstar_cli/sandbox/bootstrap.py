"""Child-side launcher: set resource limits, then run the generated script as __main__.

Run as `python -I bootstrap.py MEMORY_MB SCRIPT`. Doing this in the child (not in a
`preexec_fn`) keeps the parent safe to call from several threads at once.
"""

import resource
import runpy
import sys


def main() -> None:
    memory_mb, script = int(sys.argv[1]), sys.argv[2]
    limit = memory_mb * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    sys.argv = [script]
    runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    main()
