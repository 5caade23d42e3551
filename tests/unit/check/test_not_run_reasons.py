"""`vime-lint check` says "not run" where a check had nothing to run on, and counts findings
once: an eval step without eval datasets (0 samples), a train step with no sample, and the same
agent finding seen by the hook stage and the train step (VIM186)."""

from __future__ import annotations

from pathlib import Path

import pytest

from vime.contract.errors import Violation
from vime.contract.grouping import group_findings
from vime_lint.runtime.harness import main

pytestmark = pytest.mark.unit

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "runtime_hooks"

EMPTY = '''
from vime.rollout.base_types import RolloutFnEvalOutput, RolloutFnTrainOutput


def generate_rollout(args, rollout_id, data_source, evaluation=False):
    if evaluation:
        return RolloutFnEvalOutput(data={})
    return RolloutFnTrainOutput(samples=[])
'''

#: a legacy plain dict on both paths (no eval branch): the eval output has no dataset entry
PLAIN_DICT = '''
from vime.utils.types import Sample


def generate_rollout(args, rollout_id, data_source, evaluation=False):
    groups = data_source.get_samples(args.rollout_batch_size)
    for group in groups:
        for k, sample in enumerate(group):
            sample.tokens = [101, 102, 103, 200 + k, 201]
            sample.response_length = 2
            sample.reward = float(k % 2)
            sample.status = Sample.Status.COMPLETED
    return {"samples": groups, "metrics": {}}
'''

NO_CALL = '''
async def run_agent(args, sample, base_url, api_key, **kwargs):
    return 1.0
'''


@pytest.fixture(autouse=True)
def _paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "nr_empty_rollout.py").write_text(EMPTY)
    (tmp_path / "nr_no_call_agent.py").write_text(NO_CALL)
    (tmp_path / "nr_plain_dict_rollout.py").write_text(PLAIN_DICT)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.syspath_prepend(str(FIXTURES))


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    return code, capsys.readouterr().out


def _row(out: str, inv_id: str) -> str:
    return next(line for line in out.splitlines() if line.startswith(f"{inv_id}  "))


def test_eval_checks_without_eval_datasets_are_not_run_with_the_reason(
        capsys: pytest.CaptureFixture[str]) -> None:
    # the default rollout's eval step has no dataset: 0 samples (VIM130 said "pass")
    code, out = _run(capsys, "--rollout-function-path", "nr_empty_rollout.generate_rollout")
    for inv_id in ("VIM130", "VIM131"):
        assert _row(out, inv_id).endswith("not run (no eval datasets)"), _row(out, inv_id)
    assert ("note: VIM130, VIM131 not run: no eval datasets configured, so the eval step "
            "returned no sample (--eval-datasets NAME") in out
    assert code == 1   # VIM102: the empty train step


@pytest.mark.parametrize("eval_sets", [(), ("--eval-datasets", "toy")])
def test_an_eval_output_of_the_wrong_shape_fails_vim130_and_the_note_names_only_vim131(
        capsys: pytest.CaptureFixture[str], eval_sets: tuple[str, ...]) -> None:
    # a plain dict on the eval path holds no readable sample, but VIM130 ran and failed: the
    # note said "VIM130, VIM131 not run" under a row "VIM130 ... FAIL"
    code, out = _run(capsys, "--rollout-function-path", "nr_plain_dict_rollout.generate_rollout",
                     *eval_sets)
    assert code == 1
    assert "FAIL (2 error(s)" in _row(out, "VIM130"), _row(out, "VIM130")
    assert "VIM130, VIM131 not run" not in out
    note = next(line for line in out.splitlines() if line.startswith("note: VIM131 not run: "))
    assert note.endswith("so the eval output has no held-out set to compare with the "
                         + ("training prompts" if eval_sets else "training prompts (--eval-"
                            "datasets NAME gives the dry run a synthetic held-out set, "
                            "--eval-prompt-data NAME FILE your own)")), note
    assert ("VIM130 above" in note) == bool(eval_sets)
    reason = "no eval samples" if eval_sets else "no eval datasets"
    assert _row(out, "VIM131").endswith(f"not run ({reason})"), _row(out, "VIM131")


def test_vim131_without_eval_datasets_is_not_run_even_when_the_eval_returns_samples(
        capsys: pytest.CaptureFixture[str]) -> None:
    code, out = _run(capsys, "--rollout-function-path", "vime_ref_good.generate_rollout")
    assert code == 0, out
    assert _row(out, "VIM130").endswith("pass")              # 4 eval samples were checked
    assert _row(out, "VIM131").endswith("not run (no eval datasets)")
    code, out = _run(capsys, "--rollout-function-path", "vime_ref_good.generate_rollout",
                     "--eval-datasets", "toy")
    assert "not run (no eval datasets)" not in out and "VIM131 not run" not in out


def test_an_empty_train_step_leaves_the_per_sample_checks_not_run(
        capsys: pytest.CaptureFixture[str]) -> None:
    code, out = _run(capsys, "--rollout-function-path", "nr_empty_rollout.generate_rollout")
    assert code == 1
    assert _row(out, "VIM102").endswith("FAIL (1 error(s))")
    for inv_id in ("VIM103", "VIM110", "VIM117", "VIM124", "VIM181"):
        assert _row(out, inv_id).endswith("not run (no train samples)"), _row(out, inv_id)
    assert _row(out, "VIM101").endswith("pass")


@pytest.mark.parametrize(("batch", "count", "more"), [(2, 4, 1), (3, 6, 3)])
def test_vim186_counts_each_sample_once(capsys: pytest.CaptureFixture[str], batch: int,
                                        count: int, more: int) -> None:
    # the hook stage and the train step both run the agent on sample index 0: one finding
    code, out = _run(capsys, "--agent-function-path", "nr_no_call_agent.run_agent",
                     "--rollout-batch-size", str(batch))
    assert code == 1
    assert _row(out, "VIM186").endswith(f"FAIL ({count} error(s))"), _row(out, "VIM186")
    assert f"  {count} findings at agent run: also index=" in out
    assert out.count("(index=0) recorded no model call") == 1
    assert f" and {more} more\n" in out
    assert f"({count} findings in 1 group(s); --max-violations {count} lists" in out


def test_a_group_counts_repeated_findings_once() -> None:
    found = [Violation("VIM186", "error", f"agent run (index={i})", "recorded no call",
                       context="agent `a.b` step 0") for i in (0, 0, 1, 2, 3)]
    (group,) = group_findings(found)
    text = group.format()
    assert "  4 findings at agent run: also index=1, index=2 and 1 more" in text


RAISES = '''
async def reward_func(args, sample):
    value = {"a": 1}["b"]
    return float(value)
'''


@pytest.mark.parametrize(("argv", "reasons"), [
    ((), {"VIM150": "no custom reward",
          "VIM185": "no agent", "VIM160": "no filter",
          "VIM162": "no sample hook, reward post-process or convert hook",
          "VIM190": "trainer hooks: vime train only", "VIM128": "seen only where code raises",
          "VIM300": "no reward function to probe", "VIM308": "no dynamic filter to probe"}),
    (("--rm-type", "math", "--no-probe"), {"VIM300": "--no-probe", "VIM311": "--no-probe",
                                           "VIM308": "--no-probe"}),
    (("--rm-type", "math"), {"VIM307": "no --group-rm"}),
    (("--agent-function-path", "nr_no_call_agent.run_agent", "--check-token-boundaries", "0"),
     {"VIM194": "--check-token-boundaries 0", "VIM150": "no custom reward"}),
    (("--custom-rm-path", "nr_raises_reward.reward_func", "--no-probe"),
     {"VIM150": "the hook stage stopped", "VIM103": "the train step stopped",
      }),
])
def test_every_not_run_row_gives_its_reason(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                            argv: tuple[str, ...],
                                            reasons: dict[str, str]) -> None:
    # README: "not run" comes with the reason; VIM128, VIM140, VIM150, VIM300-VIM311 and
    # others printed a bare "not run"
    (tmp_path / "nr_raises_reward.py").write_text(RAISES)
    _, out = _run(capsys, *argv)
    rows = [line for line in out.splitlines() if line[:3] == "VIM" and "  " in line[:8]]
    assert rows and not [r for r in rows if r.endswith("not run")], out
    assert not [r for r in rows if "not reached" in r], out
    for inv_id, reason in reasons.items():
        assert _row(out, inv_id).endswith(f"not run ({reason})"), _row(out, inv_id)
