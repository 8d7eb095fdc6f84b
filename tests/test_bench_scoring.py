"""The benchmark scorers: every DABStep matching rule and quirk its README lists, and KramaBench's
answer types."""

from __future__ import annotations

import pytest

from dsstar_cli.bench import dabstep, kramabench


@pytest.mark.parametrize("answer, expected", [
    ("NL", "NL"), ("  nl ", "NL"),                                   # trimmed, lower-cased
    ("24.47", "24.465811"),                                          # rounded to the coarser precision
    ("1,234.50", "1234.5"), ("$1,234.5", "1234.50"),                 # ',' and '$' removed
    ("0.120132", "0.12013"),                                         # both < 1: within 1e-4
    ("-13.57", "13.57"),                                             # the minus sign is ignored
    ("A:13.57", "E:13.57"),                                          # text around the first number ignored
    ("B, A, C", "a;b;c"), ("[a, b]", "b, a"),                        # lists: order and brackets never matter
    ("1.0, 2.004", "2.00, 1"),                                       # list items compared with the same rules
    ("The answer is 42", "42 items"),                                # rule 3: both contain a number
    ("Not Applicable", "not applicable"), ("not-applicable", "Not Applicable"),  # non-word chars dropped
    ("GlobalCard", "globalcard!"),
])
def test_dabstep_matches(answer, expected):
    assert dabstep.match(answer, expected)


@pytest.mark.parametrize("answer, expected", [
    ("0.12", "0.120132"),            # both < 1, difference above 1e-4
    ("0,99", "0.99"),                # a decimal comma is a thousands comma: 099 vs 0.99
    ("NL", "B. BE"), ("NL", "Not Applicable"), ("NL", "0.120132"),
    ("a, b", "a, b, c"),             # different lengths
    ("a, b", "a, d"),
    ("12.5", "no number here"),      # rule 1 with no number on one side
])
def test_dabstep_does_not_match(answer, expected):
    assert not dabstep.match(answer, expected)


def test_dabstep_rounds_to_the_coarser_side_both_ways():
    assert dabstep.match("13.6", "13.57")       # 13.57 rounded to 1 decimal is 13.6
    assert not dabstep.match("13.5", "13.57")   # 13.6 != 13.5, and 0.1 is beyond the tolerance
    # Decimals are counted on the float, as the official scorer does: 100 is "100.0", one decimal.
    assert dabstep.match("100", "100.04")
    assert not dabstep.match("100", "100.4")


def test_dabstep_score_is_symmetric_on_the_listed_quirks():
    for a, b in [("24.47", "24.465811"), ("A:13.57", "E:13.57"), ("0.12", "0.120132"), ("0,99", "0.99")]:
        assert dabstep.match(a, b) == dabstep.match(b, a)


@pytest.mark.parametrize("answer, expected, kind, score", [
    ("2111635", 2111635, "numeric_exact", 1.0),
    ("2,111,635", "2111635", "numeric_exact", 1.0),
    ("40.0", "40", "numeric_exact", 1.0),
    ("40.1", "40", "numeric_exact", 0.0),
    ("Bank Account", "Bank Account", "string_exact", 1.0),
    ("bank account ", "Bank Account", "string_exact", 1.0),
    ("Bank", "Bank Account", "string_exact", 0.0),
    ("13.17", "13.1628", "numeric_approximate", 1.0),      # within 1 %
    ("15", "13.1628", "numeric_approximate", 1 - (15 - 13.1628) / 13.1628),
    ("['Arizona', 'Ohio']", ["Arizona", "Ohio"], "list_exact", 1.0),
    ("Ohio, Arizona", ["Arizona", "Ohio"], "list_exact", 1.0),
    ("[2010, 2011]", [2010, 2011, 2012, 2013], "list_exact", 2 * 1 * 0.5 / 1.5),
    ("Boston-Cambridge-Newton, MA-NH Metropolitan Statistical Area",
     ["Boston-Cambridge-Newton, MA-NH Metropolitan Statistical Area"], "list_exact", 1.0),
])
def test_kramabench_scores(answer, expected, kind, score):
    assert kramabench.score(answer, expected, kind) == pytest.approx(score, abs=1e-4)


def test_kramabench_approximate_strings_use_similarity():
    assert kramabench.correct("District of Columbia", "District of Columbia", "string_approximate")
    assert 0.5 < kramabench.score("District Columbia", "District of Columbia", "string_approximate") < 0.99
    assert not kramabench.correct("Delaware", "District of Columbia", "string_approximate")
