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

#: an agent that builds its client from the arguments and never calls it
BUILT_NO_CALL = '''
import openai


async def run_agent(args, sample, base_url, api_key, evaluation=False):
    client = openai.AsyncOpenAI(base_url=base_url, api_key=api_key)
    del client
    return "1.0"
'''

#: an agent whose client goes elsewhere (the environment's server), not to base_url
ELSEWHERE = '''
import openai


async def run_agent(args, sample, base_url, api_key, evaluation=False):
    client = openai.AsyncOpenAI(base_url="http://127.0.0.1:9/v1", api_key="x")
    del client
    return 1.0
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
    (tmp_path / "nr_built_no_call_agent.py").write_text(BUILT_NO_CALL)
    (tmp_path / "nr_elsewhere_agent.py").write_text(ELSEWHERE)
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


@pytest.mark.parametrize(("agent", "built"), [("nr_built_no_call_agent", True),
                                              ("nr_elsewhere_agent", False),
                                              ("nr_no_call_agent", False)])
def test_vim186_fix_tells_a_client_never_called_from_one_built_elsewhere(
        capsys: pytest.CaptureFixture[str], agent: str, built: bool) -> None:
    # the fix said "build the client from the arguments" to an agent that had done so and
    # never called it
    from vime.contract.checks.agent import BUILT_BUT_NOT_CALLED_FIX
    from vime.contract.invariants import INVARIANTS

    code, out = _run(capsys, "--agent-function-path", f"{agent}.run_agent")
    assert code == 1
    fixes = {line.strip() for line in out.splitlines()
             if line.strip().startswith("fix: ") and "model call" in line}
    expected = BUILT_BUT_NOT_CALLED_FIX if built else INVARIANTS["VIM186"].fix
    assert fixes == {f"fix: {expected}"}, out
    assert "await" in expected and ("base_url=base_url" in expected) != built


def test_uses_base_url_reads_the_agents_source() -> None:
    from vime.contract.checks.agent import check_vim186, uses_base_url

    async def by_keyword(args, sample, base_url, api_key):  # noqa: ANN001, ANN202
        return Client(base_url=base_url)  # noqa: F821

    async def positional(args, sample, base_url, api_key):  # noqa: ANN001, ANN202
        return make(base_url, api_key)  # noqa: F821

    async def from_env(args, sample, base_url, api_key):  # noqa: ANN001, ANN202
        return Client(base_url="http://other")  # noqa: F821

    assert uses_base_url(by_keyword) is True and uses_base_url(positional) is True
    assert uses_base_url(from_env) is False and uses_base_url(len) is None
    assert check_vim186(1, "agent run", by_keyword) is None
    v = check_vim186(0, "agent run", by_keyword)
    w = check_vim186(0, "agent run", from_env)
    assert v is not None and w is not None and v.fix != w.fix and v.message == w.message
