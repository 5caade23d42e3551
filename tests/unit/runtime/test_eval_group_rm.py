"""`--group-rm` in evaluation: each eval prompt's samples are scored as one group, as in training,
so `vime-lint check` (and `vime train` with evaluation) run with a batch reward."""

from __future__ import annotations

from pathlib import Path

import pytest

from vime_lint.runtime.harness import main

pytestmark = pytest.mark.unit

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "runtime_hooks"


def test_eval_with_group_rm_scores_each_prompt_as_a_group(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.syspath_prepend(str(FIXTURES))
    import vime_ref_group_rm

    vime_ref_group_rm.CALLS.clear()
    data = tmp_path / "eval.jsonl"
    data.write_text('{"input": "What is 20+22?", "label": "42"}\n'
                    '{"input": "What is 1+2?", "label": "3"}\n')
    code = main(["--rollout-function-path", "vime.rollout.vllm_rollout.generate_rollout",
                 "--dry-run-engine", "stand-in", "--group-rm",
                 "--custom-rm-path", "vime_ref_group_rm.group_reward",
                 "--eval-prompt-data", "toy", str(data), "--label-key", "label",
                 "--n-samples-per-eval-prompt", "3"])
    out, err = capsys.readouterr()
    assert code == 0, out + err
    assert "not supported for evaluation" not in err
    eval_calls = [c for c in vime_ref_group_rm.CALLS if len(c) == 3]
    # two eval prompts, three samples each, one call per prompt with its own group index
    assert sorted({g for g, _ in c} == {c[0][0]} for c in eval_calls) == [True, True]
    assert sorted(c[0][0] for c in eval_calls) == [0, 1]
