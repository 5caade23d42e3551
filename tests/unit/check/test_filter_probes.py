"""Dynamic sampling filter probes (``vime-lint check``, VIM308 and VIM309): a filter that drops
the groups with a learning signal, or compares the spread of rewards exactly, is named with the
groups that show it; vime's filters, the example filter and tolerant near-misses pass."""

from __future__ import annotations

from pathlib import Path

import pytest

from vime_lint.check.arguments import make_args, parse_check_args
from vime_lint.check.probe_run import run_filter_probes
from vime_lint.check.probes import FILTER_GROUPS, FILTER_PROBES, judge_filter

pytestmark = pytest.mark.unit

HERE = Path(__file__).resolve().parent
ROLLOUT = "vime.rollout.sft_rollout.generate_rollout"


@pytest.fixture(autouse=True)
def _on_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(HERE))


def probe(path: str, *argv: str) -> tuple[dict[str, str], list[str], list[str]]:
    args = make_args(parse_check_args(["--rollout-function-path", ROLLOUT,
                                       "--dynamic-sampling-filter-path", path, *argv]))
    out = run_filter_probes(args)
    return ({v.id: v.severity for v in out.findings}, [v.format() for v in out.findings],
            out.notes)


@pytest.mark.parametrize(("name", "expected"), [
    ("exact_zero_std", {"VIM309": "warning"}),
    ("exact_set_of_rewards", {"VIM309": "warning"}),
    ("keeps_only_all_correct", {"VIM308": "error"}),
    ("needs_a_full_score", {"VIM308": "warning"}),
])
def test_each_mistaken_filter_is_named(name: str, expected: dict[str, str]) -> None:
    ids, texts, _ = probe(f"probe_filters.{name}")
    assert ids == expected, texts
    assert all("probe_filters.py:" in t for t in texts)      # the filter's def, file and line


def test_the_message_shows_both_groups_and_the_fix() -> None:
    _, texts, _ = probe("probe_filters.exact_zero_std")
    assert "all equal rewards [0.5, 0.5, 0.5, 0.5] is dropped" in texts[0]
    assert "equal up to float noise rewards [0.5, 0.500000001" in texts[0]
    assert "is kept" in texts[0] and "pstdev(rewards) > 1e-6" in texts[0]
    _, texts, _ = probe("probe_filters.keeps_only_all_correct")
    assert "mixed 0/1 rewards [1.0, 0.0, 1.0, 0.0] is dropped" in texts[0]


@pytest.mark.parametrize("path", [
    "probe_filters.tolerant_std", "probe_filters.rounded_rewards",
    "probe_filters.keeps_everything",
    "vime.rollout.filter_hub.dynamic_sampling_filters.check_reward_nonzero_std",
    "vime.rollout.filter_hub.dynamic_sampling_filters.check_reward_nonzero_std_with_fallback",
    "examples.informative_groups_filter.dynamic_sampling_filter",
])
def test_correct_filters_pass(path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(HERE.parents[2]))
    ids, texts, notes = probe(path)
    assert ids == {}, texts
    assert any("on 4 groups" in n for n in notes)


def test_rewards_are_stored_under_the_reward_key() -> None:
    ids, texts, notes = probe("probe_filters.reads_dict_rewards", "--reward-key", "acc")
    assert ids == {}, (texts, notes)
    assert "no decision" not in notes[0]


def test_the_corpus_case_is_caught() -> None:
    """tests/corpus's `filter-exact-zero-std` kind: caught by these probes (kinds.toml)."""
    import sys

    sys.path.insert(0, str(HERE.parents[1] / "corpus" / "cases"))
    try:
        ids, _, _ = probe("filter_exact_zero_std.dynamic_sampling_filter")
    finally:
        sys.path.pop(0)
    assert ids == {"VIM309": "warning"}


def test_judge_filter_needs_a_decision_on_both_groups() -> None:
    assert judge_filter({"all equal": False, "equal up to float noise": None}) == []
    assert judge_filter({"mixed 0/1": None, "distinct continuous": None}) == []
    assert set(FILTER_GROUPS) == {"mixed 0/1", "distinct continuous", "all equal",
                                  "equal up to float noise"}
    assert FILTER_PROBES == ("VIM308", "VIM309")


def test_check_reports_the_filter_probes_and_no_probe_turns_them_off(
        capsys: pytest.CaptureFixture[str]) -> None:
    from vime_lint.runtime.harness import main

    argv = ["--rollout-function-path", ROLLOUT, "--dynamic-sampling-filter-path",
            "probe_filters.exact_zero_std"]
    code = main(argv)
    out = capsys.readouterr().out
    assert code == 1 and "VIM309  probe-filter-float-noise" in out and "WARN" in out
    main([*argv, "--no-probe"])
    out = capsys.readouterr().out
    assert "VIM309  probe-filter-float-noise      not run" in out
