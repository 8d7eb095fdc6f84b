"""The example answers the docs quote are the ones computed from sample_data/, not typed by hand."""

from conftest import ROOT
from sample_answers import answers


def test_the_sample_data_page_quotes_the_computed_answers():
    page = (ROOT / "docs" / "sample-data.md").read_text()
    for question, answer in answers().items():
        assert f"| {question} | {answer} |" in page, question


def test_readme_setup_is_the_two_make_commands_ci_runs():
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    assert "make install" in readme and "make test" in readme
    assert "make install" in ci and "make test" in ci
