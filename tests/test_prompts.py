"""What each role is shown: long output cut keeping the evidence, the verifier's reason, and the
shared context marked for providers' prompt caches."""

from __future__ import annotations

from dsstar_cli.model import uses_cache_control, with_cache_breakpoints
from dsstar_cli.roles import keep_evidence
from dsstar_cli.roles.parsing import verdict_reason
from dsstar_cli.roles.verifier import parse as parse_verifier


def test_a_long_output_keeps_its_labelled_results_and_its_end():
    noise = "\n".join(f"{i:5d} {'x' * 60}" for i in range(400))
    text = ("unmatched names: ['Foo Beach', 'Bar Beach']\n" + noise + "\nrows checked: 400\n" + noise
            + "\nper-beach check: 12 of 14 ok\nfinal answer: 42.5")
    kept = keep_evidence(text, 6000)
    assert len(kept) <= 6000
    for line in ("unmatched names: ['Foo Beach', 'Bar Beach']", "rows checked: 400", "final answer: 42.5"):
        assert line in kept  # The middle cut of head + tail lost the first two.
    assert f"{len(text):,} characters printed" in kept
    assert keep_evidence("short: 1", 6000) == "short: 1"


def test_the_verifiers_reason_is_kept_with_its_verdict():
    assert parse_verifier("No\nThe output is the total, not the cost per acre.") == (
        False, "The output is the total, not the cost per acre.")
    assert parse_verifier("**Yes** - it prints the rounded mean.") == (True, "it prints the rounded mean.")
    assert parse_verifier("Maybe later.") is None
    assert verdict_reason("No") == ""


def test_the_shared_context_is_marked_for_anthropic_prompt_caching():
    context = "intro\n\n# Documents\nrules\n\n# Question\nq?\n\n# Data files (2)\n## a.csv\ncolumns"
    messages = [{"role": "system", "content": context}, {"role": "user", "content": "You are the CODER"}]
    assert uses_cache_control("anthropic/claude-sonnet-4-5") and not uses_cache_control("openai/gpt-4.1")
    marked = with_cache_breakpoints(messages)
    blocks = marked[0]["content"]
    assert "".join(b["text"] for b in blocks) == context  # Nothing lost or added,
    assert blocks[0]["text"].endswith("q?") and blocks[1]["text"].startswith("\n\n# Data files")  # split where
    assert all(b["cache_control"] == {"type": "ephemeral"} for b in blocks)  # the verifier's prompt ends.
    assert marked[1] == messages[1]
    brief = with_cache_breakpoints([{"role": "system", "content": context.split("\n\n# Data files")[0]}])
    assert brief[0]["content"] == [blocks[0]]  # The verifier's prefix is the same first block.


def test_the_coder_and_the_debugger_are_told_the_versions_the_scripts_run_with():
    """pandas 3 reads text columns as dtype 'str': a script that looks for 'object' columns finds
    none (a lab helper's script searched no text at all). The scripts' own interpreter's versions
    are in both prompts."""
    import importlib.metadata

    from dsstar_cli.roles import coder, debugger
    from dsstar_cli.roles.context import RunContext

    context = RunContext(full="shared", brief="brief", data_dir="/data")
    pandas = importlib.metadata.version("pandas")
    for messages in (coder.messages(context, ["Load."], None, 6000),
                     debugger.messages(context, "print(1)", "Traceback ...\nKeyError: 'a'")):
        text = messages[-1]["content"]
        assert f"pandas {pandas}" in text and "Python 3." in text and "duckdb " in text
        assert ("dtype 'str'" in text) == (int(pandas.split(".")[0]) >= 3)
        for name in ("scipy", "statsmodels", "scikit-learn", "matplotlib"):  # The stack, read at run time.
            assert f"{name} {importlib.metadata.version(name)}" in text, name
        assert "figures/" in text and "plt.show()" in text  # Where charts go; never a window.


def _table(path: str, words: str, size: int) -> "FileDescription":
    from dsstar_cli.analyzer import FileDescription

    return FileDescription(path, "csv", 1000, "builtin", f"columns: {words}\n" + "x " * size)


def test_the_files_a_script_reads_are_described_within_the_tables_budget():
    """The verifier's and finalizer's context: the shared prefix, then the files the script reads,
    fitted to the description budget as the retriever fits them (the question's best match
    described, the others listed by name); a script reading no data file adds nothing."""
    from dsstar_cli.analyzer.retriever import Selection
    from dsstar_cli.roles.context import build_context

    files = [_table("fees.csv", "fee rate merchant", 3000), _table("sub/payments.csv", "amount", 3000),
             _table("other.csv", "nothing", 3000)]
    context = build_context("Which fee rate applies?", None, "/data", Selection(files), 64_000,
                            description_tokens=1000)
    code = "a = pd.read_csv(f'{DATA_DIR}/fees.csv')\nb = pd.read_csv(DATA_DIR + '/sub/payments.csv')"
    text = context.for_script(code)
    assert text.startswith(context.brief + "\n\n# Data files the script reads (2)\n")
    assert "## fees.csv" in text and "fee rate merchant" in text  # The question's match, in full;
    assert "## sub/payments.csv" not in text and "- sub/payments.csv: " in text  # the other only listed,
    assert "other.csv" not in text  # and a file the script does not read not at all.
    roomy = build_context("Which fee rate applies?", None, "/data", Selection(files), 64_000)
    assert "## sub/payments.csv" in roomy.for_script(code)  # The default budget holds both.
    assert context.for_script("print(42)") == context.brief
