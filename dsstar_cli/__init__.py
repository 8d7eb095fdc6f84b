"""dsstar: ask a folder of data files a question, get a verified answer (the DS-STAR method)."""

import time

__version__ = "0.1.0"
STARTED = time.monotonic()  # The process's start, near enough: a run's --timeout counts from here.
