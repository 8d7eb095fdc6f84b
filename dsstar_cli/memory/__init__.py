"""A memory per data folder: a question asked again is answered from what a verified run found.

    dsstar ask DIR "Q"      first time: a full run; its verified answer is remembered
    dsstar ask DIR "Q"      again, files unchanged: the remembered answer at once (no model call,
                            no sandbox), said to come from that run; a run of its own in the history
    (a file it read changed) its verified script re-runs in the sandbox on the new files and only
                            the verifier is asked (replay.py); a No falls back to a full run
    dsstar ask ... --fresh  the memory is neither read nor written

The pieces: fingerprint.py (what an entry rests on), store.py (the SQLite index), recall.py (one
run's look-up and what is kept), replay.py (the re-check), instant.py (the answer at once),
inventory.py (`dsstar memory show|clear`). The runner calls `Recall.open`, then `at_once`,
`recheck` and `remember`, one line each.
"""

from dsstar_cli.memory.recall import Recall
from dsstar_cli.memory.store import MemoryUnavailable

__all__ = ["Recall", "MemoryUnavailable"]
