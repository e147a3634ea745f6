"""The suite's own checks on CI: golden files are never rewritten there, and a
skipped test fails the run (tests/conftest.py)."""

import pytest
from _pytest.reports import CollectReport, TestReport
from conftest import SKIPPED_ON_CI, fail_a_skip_on_ci, golden, on_ci, regenerating


@pytest.mark.parametrize("value, ci", [("true", True), ("1", True), ("yes", True), ("", False),
                                       ("0", False), ("false", False), ("False", False)])
def test_ci_is_any_value_but_empty_zero_or_false(value, ci):
    assert on_ci({"CI": value}) is ci
    assert on_ci({}) is False


def test_regeneration_is_refused_on_ci():
    assert regenerating({"BEONET_REGEN": "1"}) is True
    assert regenerating({"BEONET_REGEN": "0", "CI": "true"}) is False
    with pytest.raises(pytest.UsageError, match="BEONET_REGEN=1 with CI=true: golden files are "
                                                "compared on CI, never rewritten"):
        regenerating({"BEONET_REGEN": "1", "CI": "true"})


def test_golden_does_not_rewrite_a_file_on_ci(tmp_path, monkeypatch):
    path = tmp_path / "out.txt"
    path.write_text("kept\n", encoding="utf-8")
    monkeypatch.setenv("BEONET_REGEN", "1")
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.UsageError):
        golden(path, "new\n")
    assert path.read_text(encoding="utf-8") == "kept\n"
    monkeypatch.delenv("BEONET_REGEN")
    with pytest.raises(AssertionError, match="differs from"):
        golden(path, "new\n")


def _skipped(reason="needs cc, not installed here", **extra):
    report = TestReport("tests/t.py::test_x", ("tests/t.py", 1, "test_x"), {}, "skipped",
                        ("tests/t.py", 1, "Skipped: " + reason), "setup")
    for key, value in extra.items():
        setattr(report, key, value)
    return report


def test_a_skip_is_a_failure_on_ci_naming_the_reason():
    report = fail_a_skip_on_ci(_skipped(), {"CI": "true"})
    assert report.failed and report.longrepr == SKIPPED_ON_CI + "Skipped: needs cc, not installed here"


def test_a_skip_stays_a_skip_off_ci_and_an_expected_failure_stays_one():
    assert fail_a_skip_on_ci(_skipped(), {}).skipped
    assert fail_a_skip_on_ci(_skipped(wasxfail="known"), {"CI": "true"}).skipped
    passed = TestReport("tests/t.py::test_x", ("tests/t.py", 1, "test_x"), {}, "passed", None, "call")
    assert fail_a_skip_on_ci(passed, {"CI": "true"}).passed


def test_a_module_skipped_at_collection_fails_on_ci():
    report = CollectReport("tests/t.py", "skipped", ("tests/t.py", 1, "Skipped: not root"), [])
    assert fail_a_skip_on_ci(report, {"CI": "true"}).failed


def test_hypothesis_draws_new_examples_on_ci_as_elsewhere():
    """CI=true would load Hypothesis's "ci" profile (derandomised); conftest keeps the default."""
    import hypothesis
    assert hypothesis.settings.default.derandomize is False
