"""``vime-lint check`` builds each B4 hook's call from the contract (``HOOKS[hook].params`` and
``HookBoundary.inputs``) and checks the result at that boundary, as training does."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from vime.contract.checks.boundaries import HOOK_BOUNDARIES
from vime.contract.hooks import HOOKS
from vime_lint.runtime.harness import main

pytestmark = pytest.mark.unit

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "runtime_hooks"

#: The boundaries whose hook the dry run calls and checks through ``DryRun._call_checked``.
CALLED_FROM_THE_TABLE = {"sample_hook_result", "dynamic_filter_result", "buffer_filter_result",
                         "reward_post_process_result", "convert_result"}


def test_recorded_inputs_are_parameters_of_the_hook() -> None:
    with_inputs = {name for name, b in HOOK_BOUNDARIES.items() if b.inputs is not None}
    assert with_inputs == CALLED_FROM_THE_TABLE
    for name in with_inputs:
        bound = HOOK_BOUNDARIES[name]
        params = HOOKS[bound.hook].params
        assert bound.inputs is not None
        assert "args" not in bound.inputs and set(bound.inputs) <= set(params), (name, params)


HOOKS_SOURCE = '''
    from vime.utils.types import Sample

    CALLS = []

    def sample_hook(args, sample, rollout_id=None, evaluation=None):
        CALLS.append(("sample_hook", type(sample).__name__, rollout_id, evaluation))
        return "not a sample"                                    # VIM162

    def dynamic_filter(args, samples):
        CALLS.append(("dynamic_filter", len(samples)))
        return None                                              # VIM160

    def buffer_filter(args, rollout_id, buffer, num_samples):
        CALLS.append(("buffer_filter", rollout_id, len(buffer), num_samples))
        return buffer[:2]                                        # VIM161: 2 > num_samples=1

    def post_process(args, samples):
        CALLS.append(("post_process", len(samples)))
        return [0.0] * len(samples)                              # VIM162: not a pair

    def convert(args, samples):
        CALLS.append(("convert", len(samples)))
        return {"tokens": []}                                    # VIM162: missing keys
'''


def test_each_b4_hook_is_called_with_its_parameters_and_checked(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "b4_hooks.py").write_text(textwrap.dedent(HOOKS_SOURCE), encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.syspath_prepend(str(FIXTURES))
    monkeypatch.delitem(sys.modules, "b4_hooks", raising=False)
    code = main(["--rollout-function-path", "vime_ref_good.generate_rollout",
                 "--rollout-sample-hook-path", "b4_hooks.sample_hook",
                 "--dynamic-sampling-filter-path", "b4_hooks.dynamic_filter",
                 "--buffer-filter-path", "b4_hooks.buffer_filter",
                 "--custom-reward-post-process-path", "b4_hooks.post_process",
                 "--custom-convert-samples-to-train-data-path", "b4_hooks.convert",
                 "--n-samples-per-prompt", "4", "--no-probe"])
    out = capsys.readouterr().out
    import b4_hooks

    calls = {c[0]: c[1:] for c in b4_hooks.CALLS}
    assert calls["sample_hook"] == ("Sample", 0, False)          # optional keywords passed
    assert calls["buffer_filter"] == (None, 2, 1)                # rollout_id, buffer, num_samples
    assert code == 1, out
    assert calls["dynamic_filter"] == (4,) and calls["post_process"] == calls["convert"]
    for vid in ("VIM160", "VIM161", "VIM162"):
        assert f"{vid} error" in out, out
    assert "has 2 groups, more than num_samples=1" in out
    assert "expected a pair (raw_rewards, rewards)" in out
    assert "is missing" in out
