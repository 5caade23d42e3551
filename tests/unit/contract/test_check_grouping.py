"""`vime-lint check` findings grouped per (invariant, field, hook), `--max-violations`, and
fix hints chosen by the actual failure (vime.contract.checks.values.reward_fix)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from vime.contract.errors import Violation
from vime.contract.grouping import field_pattern, group_findings
from vime.contract.reward import reward_fix
from vime_lint.runtime.harness import main

pytestmark = pytest.mark.unit

NO_REWARD = '''
from vime.rollout.base_types import RolloutFnEvalOutput, RolloutFnTrainOutput
from vime.utils.types import Sample


def generate_rollout(args, rollout_id, data_source, evaluation=False):
    groups = data_source.get_samples(args.rollout_batch_size)
    for group in groups:
        for k, sample in enumerate(group):
            sample.tokens = [11, 12, 13, 40 + k, 41]
            sample.response_length = 2
            sample.status = Sample.Status.COMPLETED
    if evaluation:
        flat = [s for g in groups for s in g]
        return RolloutFnEvalOutput(data={"toy": {"rewards": [0.0] * len(flat),
                                                 "truncated": [False] * len(flat),
                                                 "samples": flat}})
    return RolloutFnTrainOutput(samples=groups)
'''


@pytest.fixture
def no_reward_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    (tmp_path / "h18_no_reward.py").write_text(NO_REWARD)
    monkeypatch.syspath_prepend(str(tmp_path))
    return "h18_no_reward.generate_rollout"


def test_missing_reward_on_64x8_is_one_group_with_count_and_a_reward_fix(
        no_reward_module: str, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["--rollout-function-path", no_reward_module, "--rollout-batch-size", "64",
                 "--n-samples-per-prompt", "8"])
    out = capsys.readouterr().out
    assert code == 1
    findings = [line for line in out.splitlines() if line.startswith("VIM110 error:")]
    assert findings == ["VIM110 error: samples[0][0].reward (index=0) is None; every sample "
                        "needs a reward before training"]
    assert ("  512 findings at samples[*][*].reward: also samples[0][1].reward (index=1), "
            "samples[0][2].reward (index=2) and 509 more") in out
    fixes = [line for line in out.splitlines() if line.startswith("  fix:")]
    assert len(fixes) == 1 and "--reward-key" not in fixes[0]
    assert "set sample.reward to a float" in fixes[0]
    assert "--max-violations 512 lists them one by one" in out
    # the per-invariant table (one row per id) and a few lines: not one line per sample
    rest = [line for line in out.splitlines() if not re.match(r"VIM\d{3}  ", line)]
    assert len(rest) < 25, rest


def test_max_violations_lists_findings_one_by_one(
        no_reward_module: str, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["--rollout-function-path", no_reward_module, "--rollout-batch-size", "4",
                 "--n-samples-per-prompt", "2", "--max-violations", "3"])
    out = capsys.readouterr().out
    assert code == 1
    assert [line.split(" is None")[0] for line in out.splitlines()
            if line.startswith("VIM110 error:")] == [
        "VIM110 error: samples[0][0].reward (index=0)",
        "VIM110 error: samples[0][1].reward (index=1)",
        "VIM110 error: samples[1][0].reward (index=2)"]
    assert "... and 5 more (--max-violations 8 lists them all)" in out


def test_max_violations_must_be_positive(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--rollout-function-path", "x.y", "--max-violations", "0"]) == 2
    assert "--max-violations: must be >= 1, got 0" in capsys.readouterr().err


def test_groups_split_by_invariant_field_and_hook() -> None:
    def v(id_: str, where: str, context: str = "rollout `m.f`") -> Violation:
        return Violation(id_, "error", where, "bad", context=context)

    groups = group_findings([v("VIM108", "samples[0][0].loss_mask (index=0)"),
                             v("VIM108", "samples[3][1].loss_mask (index=7)"),
                             v("VIM108", "samples[0][0].tokens (index=0)"),
                             v("VIM110", "samples[0][0].reward (index=0)"),
                             v("VIM108", "samples[1][0].loss_mask (index=2)", "generate `m.g`")])
    assert [(g.first.id, field_pattern(g.first.where), len(g.findings)) for g in groups] == [
        ("VIM108", "samples[*][*].loss_mask", 2), ("VIM108", "samples[*][*].tokens", 1),
        ("VIM110", "samples[*][*].reward", 1), ("VIM108", "samples[*][*].loss_mask", 1)]
    assert groups[1].format() == groups[1].first.format()   # a single finding is unchanged


@pytest.mark.parametrize(("value", "key", "expected", "absent"), [
    (None, None, "set sample.reward to a float", "--reward-key"),
    (None, "acc", "set sample.reward to a float", "--reward-key"),
    ({"acc": 1.0}, None, "pass --reward-key naming one of ['acc']", "set sample.reward"),
    ({"acc": 1.0}, "score", "store 'score' in every reward dict", "set sample.reward"),
    (True, None, "not a bool", "--reward-key"),
    (np.float32(0.5), None, ".item()", "--reward-key"),
    (float("nan"), None, "finite float", "--reward-key"),
])
def test_reward_fix_follows_the_failure(value: object, key: str | None, expected: str,
                                        absent: str) -> None:
    fix = reward_fix(value, key)
    assert expected in fix and absent not in fix


def test_a_group_at_one_site_names_the_site_once() -> None:
    # the same site, other samples: the samples are named, not the site again
    found = [Violation("VIM140", "error", "generate input", "has status COMPLETED"),
             Violation("VIM140", "error", "generate input (index=0)", "has status COMPLETED"),
             Violation("VIM140", "error", "generate input (index=3)", "has status COMPLETED")]
    (group,) = group_findings(found)
    assert group.format().splitlines()[1] == "  3 findings at generate input: also index=0, index=3"
    # the same site and sample twice: nothing to list beyond the first
    same = [Violation("VIM140", "error", "generate input (index=2)", "has status COMPLETED"),
            Violation("VIM140", "error", "generate input (index=2)", "is None")]
    (group,) = group_findings(same)
    line = group.format().splitlines()[1]
    assert line == ("  2 findings at generate input: the first is shown, --max-violations 2 "
                    "lists each")
    assert "also" not in line
