"""Start-up: `dsstar --help` and `dsstar ask --help` against `python -c "import litellm"` in the same
environment. Target: at least 6x faster (heavy imports are deferred until a command needs them)."""

from __future__ import annotations

from _common import DSSTAR, PYTHON, clean_env, median, show, time_command

RUNS = 7


def main() -> None:
    print(f"start-up, median of {RUNS} runs (one warm-up each)")
    litellm = median(time_command([PYTHON, "-c", "import litellm"], RUNS))
    show('python -c "import litellm"', f"{litellm * 1000:.0f} ms")
    # The fairer baseline: litellm told not to fetch its price list (as dsstar tells it).
    offline = median(time_command([PYTHON, "-c", "import litellm"], RUNS,
                                  env=clean_env(LITELLM_LOCAL_MODEL_COST_MAP="True")))
    show('  same, LITELLM_LOCAL_MODEL_COST_MAP=True', f"{offline * 1000:.0f} ms")
    litellm = min(litellm, offline)  # Ratios below are against the faster of the two.
    for argv in (["--help"], ["ask", "--help"], ["--version"]):
        took = median(time_command(DSSTAR + argv, RUNS))
        ratio = litellm / took
        verdict = "meets" if ratio >= 6 else "MISSES"
        show(f"dsstar {' '.join(argv)}", f"{took * 1000:.0f} ms", f"{ratio:.1f}x faster ({verdict} target >= 6x)")


if __name__ == "__main__":
    main()
