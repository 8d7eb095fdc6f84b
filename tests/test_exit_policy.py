"""One exit-code policy for one run, a batch of questions and a benchmark."""

from dsstar_cli.batch import batch_exit_code
from dsstar_cli.bench.harness import bench_exit_code
from dsstar_cli.result import ExitCode, exit_code_for, overall_exit_code


def test_the_most_serious_code_wins_and_bench_counts_only_runs_that_did_not_run():
    assert overall_exit_code([]) == ExitCode.VERIFIED
    assert overall_exit_code([0, 3, 7]) == ExitCode.COST_LIMIT
    assert overall_exit_code([0, 3, 1, 5]) == ExitCode.MODEL_UNREACHABLE
    assert overall_exit_code([5, 130]) == ExitCode.INTERRUPTED
    assert overall_exit_code([0, 3, 1, 8], answers_count=False) == ExitCode.VERIFIED
    assert overall_exit_code([3, 4], answers_count=False) == ExitCode.SETUP
    rows = [{"outcome": "unverified", "error_kind": None}, {"outcome": "failed", "error_kind": None}]
    assert bench_exit_code(rows) == ExitCode.VERIFIED  # Every task ran, right or wrong.
    rows.append({"outcome": "interrupted", "error_kind": "SIGTERM"})
    assert bench_exit_code(rows) == ExitCode.TERMINATED
    assert batch_exit_code([]) == ExitCode.VERIFIED


def test_one_run_maps_outcome_and_error_kind():
    assert exit_code_for("verified", None) == 0 and exit_code_for("time_limit", None) == 8
    assert exit_code_for("failed", "model_config") == 4 and exit_code_for("failed", None) == 1
    assert exit_code_for("interrupted", "SIGINT") == 130 and exit_code_for("interrupted", "SIGTERM") == 143
