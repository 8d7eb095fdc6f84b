import pytest

from dsstar_cli.roles.parsing import extract_code, parse_route, parse_step, parse_verdict, route_why, verdict_reason


@pytest.mark.parametrize("reply, expected", [
    ("```python\nprint(1)\n```", "print(1)\n"),
    ("Here you go:\n```py\nx = 1\nprint(x)\n```\nDone.", "x = 1\nprint(x)\n"),
    ("```\nimport os\nprint(os.getcwd())\n```", "import os\nprint(os.getcwd())\n"),
    ("import pandas as pd\nprint(pd.__version__)", "import pandas as pd\nprint(pd.__version__)\n"),
    ("```python\na = 1\n```\nand the longer one\n```python\na = 1\nb = 2\nprint(a + b)\n```", "a = 1\nb = 2\nprint(a + b)\n"),
    ("```python\nprint('unterminated fence')", "print('unterminated fence')\n"),
])
def test_extract_code_finds_the_script(reply, expected):
    assert extract_code(reply) == expected


@pytest.mark.parametrize("reply", ["", "I cannot do that.", "Sure! Let me think about it.\nMore prose here.",
                                   "```json\n{\"a\": 1}\n```"])
def test_extract_code_returns_none_without_code(reply):
    assert extract_code(reply) is None


@pytest.mark.parametrize("reply, expected", [
    ("Yes", True), ("Yes.", True), ("**Yes**, the output answers it.", True), ("yes - fine", True),
    ("Verdict: Yes", True), ("No", False), ("No.", False), ("**No**: names missing", False),
    ("Not sufficient: the totals are not converted", False), ("Insufficient.", False),
    ("> No", False), ("\n\n  Yes\nbecause", True),
    ("I think the answer is yes", True), ("The answer would be no, sadly", False),
])
def test_parse_verdict(reply, expected):
    assert parse_verdict(reply) is expected


@pytest.mark.parametrize("reply", ["", "Maybe.", "It could be yes or no.", "Hard to say"])
def test_parse_verdict_unreadable(reply):
    assert parse_verdict(reply) is None


@pytest.mark.parametrize("reply, length, expected", [
    ("Add Step", 3, ("add", None)),
    ("**Add Step** because more work is needed", 2, ("add", None)),
    ("We should add a new step.", 2, ("add", None)),
    ("Step 2", 3, ("fix", 2)),
    ("Step 2.", 3, ("fix", 2)),
    ("The mistake is in step 1: wrong column.", 3, ("fix", 1)),
    ("**Step 3** filters the wrong month", 3, ("fix", 3)),
    ("Step #2 is wrong", 2, ("fix", 2)),
    ("Step 2 is wrong, then add step", 2, ("fix", 2)),
])
def test_parse_route(reply, length, expected):
    assert parse_route(reply, length) == expected


@pytest.mark.parametrize("reply, why", [
    ("Add Step\nThe output lacks the names.", "The output lacks the names."),
    ("**Step 2** - filters the wrong month", "filters the wrong month"),
    ("The mistake is in step 1: wrong column.", "wrong column."),
    ("Add Step", ""),
    ("Add Step: " + "word " * 300, ("word " * 240).strip() + " [...]"),  # Cut at a word, marked.
])
def test_route_why_is_what_follows_the_decision(reply, why):
    assert route_why(reply) == why


NAMES = "`wildfire_total_fires_p45_54.csv`, column *rate*_2023 and __init__.py"


@pytest.mark.parametrize("reply", [
    f"Step 2 - {NAMES} are misread",
    f"**Step 2**: {NAMES} are misread",
    f"Add Step\n{NAMES} are misread",
    f"__Add Step__ - {NAMES} are misread",
])
def test_the_routers_reason_keeps_names_as_the_model_wrote_them(reply):
    """The decision is read from a copy without markdown; the reason kept is the model's own text
    (wildfire_total_fires_p45_54.csv came back as 'wildfire total fires p45 54.csv')."""
    assert route_why(reply) == f"{NAMES} are misread"


@pytest.mark.parametrize("reply", [f"No\n{NAMES} are misread", f"**No.** {NAMES} are misread",
                                   f"Verdict: No - {NAMES} are misread", f"No:\n\n{NAMES}   are misread"])
def test_the_verifiers_reason_keeps_names_as_the_model_wrote_them(reply):
    assert verdict_reason(reply) == f"{NAMES}{'   ' if '   ' in reply else ' '}are misread"


@pytest.mark.parametrize("reply, expected", [
    ("2023.csv holds the fees: load it.", "2023.csv holds the fees: load it."),
    ("step1.csv is the first file: load it", "step1.csv is the first file: load it"),
    ("Load `fee_rules.json` and *merchant_data*.", "Load `fee_rules.json` and *merchant_data*."),
])
def test_a_plan_step_keeps_names_that_look_like_a_step_prefix(reply, expected):
    assert parse_step(reply) == expected


@pytest.mark.parametrize("reply, length", [("Step 5", 3), ("Step 0", 2), ("hmm", 2), ("", 1)])
def test_parse_route_out_of_range_or_unreadable(reply, length):
    assert parse_route(reply, length) is None


@pytest.mark.parametrize("reply, expected", [
    ("Load the CSV.", "Load the CSV."),
    ("Step 2: Join the merchants sheet.", "Join the merchants sheet."),
    ("**Next step:** filter March.", "filter March."),
    ("1. Group by merchant.", "Group by merchant."),
    ("- Compute the rate\n  per merchant", "Compute the rate per merchant"),
])
def test_parse_step(reply, expected):
    assert parse_step(reply) == expected


def test_parse_step_empty():
    assert parse_step("   ") is None


@pytest.mark.parametrize("reply, script, answer", [
    ("```answer\nGolden Gate Gaming\n```", None, "Golden Gate Gaming"),
    ("It is already printed.\n```answer\n\nDE: 1.50  \nFR: 2.00\n\n```", None, "DE: 1.50\nFR: 2.00"),
    ("```ANSWER\n42", None, "42"),                                               # unterminated fence
    ("```python\nprint(42)\n```", "print(42)\n", None),                          # the script path, as before
    ("```answer\n41\n```\n```python\nprint(42)\n```", "print(42)\n", None),      # a script wins: it computes
])
def test_the_finalizer_reply_is_an_answer_or_a_script(reply, script, answer):
    from dsstar_cli.roles.finalizer import FinalReply, parse

    assert parse(reply) == FinalReply(script=script, answer=answer)


@pytest.mark.parametrize("reply", ["", "42", "The answer is 42.", "```answer\n  \n```", "```answer\n```",
                                   "```answer\n1\n```\n```answer\n2\n```", "```text\n42\n```"])
def test_a_finalizer_reply_without_one_answer_or_a_script_is_unreadable(reply):
    from dsstar_cli.roles.finalizer import parse

    assert parse(reply) is None


def test_a_long_reason_is_cut_at_a_word_and_marked_not_mid_sentence():
    """A verifier's reason reached the planner ending '...restrict to 'CNV-high', print'."""
    reply = "No\n" + " ".join(f"word{i}" for i in range(400))
    reason = verdict_reason(reply)
    assert reason.endswith(" [...]") and len(reason) <= 1200 + 6
    assert reason[:-6].split(" ")[-1].startswith("word") and reason[:-6] in reply.replace("\n", " ")
    assert verdict_reason("No\nThe denominator is wrong.") == "The denominator is wrong."
