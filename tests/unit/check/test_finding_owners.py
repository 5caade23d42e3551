"""Under vime's own rollout, `vime-lint check` names the user's hook a finding is about (its
`def`'s FILE:LINE), not vime's rollout module: a generate-boundary finding raised while the
rollout ran names the custom generate; a reward finding on the output names the reward."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

TWO_TURNS_NO_PENDING = '''
from vime.rollout.vllm_rollout import generate as vllm_generate


async def generate(args, sample, sampling_params):
    sample = await vllm_generate(args, sample, sampling_params)
    return await vllm_generate(args, sample, sampling_params)   # status still COMPLETED
'''

TWO_TURNS = '''
from vime.rollout.vllm_rollout import generate as vllm_generate


async def generate(args, sample, sampling_params):
    sample = await vllm_generate(args, sample, sampling_params)
    if sample.response_length >= sampling_params["max_tokens"]:
        return sample
    sample.status = sample.Status.PENDING
    return await vllm_generate(args, sample, sampling_params)
'''

#: a generate that leaves every sample PENDING (VIM111 on the status it sets)
PENDING_FOREVER = '''
from vime.rollout.vllm_rollout import generate as vllm_generate


async def generate(args, sample, sampling_params):
    sample = await vllm_generate(args, sample, sampling_params)
    sample.status = sample.Status.PENDING
    return sample
'''

TEXT_REWARD = '''
async def reward_func(args, sample):
    return "1.0"
'''


@pytest.fixture()
def hooks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "owner_generate.py").write_text(TWO_TURNS_NO_PENDING)
    (tmp_path / "owner_reward.py").write_text(TEXT_REWARD)
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


def _check(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    from vime_lint.runtime.harness import main

    code = main(["--rollout-function-path", "vime.rollout.vllm_rollout.generate_rollout",
                 *argv, "--no-probe"])
    return code, capsys.readouterr().out


def test_a_generate_boundary_finding_names_the_custom_generate(
        hooks: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = _check(capsys, "--custom-generate-function-path", "owner_generate.generate",
                       "--rm-type", "math", "--label-key", "label")
    assert code == 1 and "VIM140 error" in out, out
    contexts = [line for line in out.splitlines() if line.startswith("  in ")]
    assert contexts and all(f"{hooks / 'owner_generate.py'}:5:" in c for c in contexts
                            if "VIM140" not in c), contexts
    assert "rollout_fn.py" not in out, out
    # the rollout raised, so its output (B5) was never checked: not "pass"
    assert re.search(r"^VIM124\s+length-budget\s+not run \(the train step stopped\)$", out,
                     re.M), out


def test_a_reward_finding_on_the_output_names_the_reward(
        hooks: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = _check(capsys, "--custom-rm-path", "owner_reward.reward_func")
    assert code == 1 and "samples[0][0].reward" in out, out
    assert f"{hooks / 'owner_reward.py'}:2:" in out and "rollout_fn.py" not in out, out


@pytest.mark.parametrize("argv", [(), ("--custom-generate-function-path",
                                       "owner_two_turn.generate")])
def test_a_finding_no_user_hook_owns_says_vimes_default_rollout_not_a_file_inside_vime(
        hooks: Path, capsys: pytest.CaptureFixture[str], argv: tuple[str, ...]) -> None:
    # VIM118 (the label key, not a field a user hook sets) read "in .../vime/rollout/vllm/
    # rollout_fn.py:38: rollout `vime.rollout.vllm_rollout.generate_rollout` ..."
    (hooks / "owner_two_turn.py").write_text(TWO_TURNS)
    code, out = _check(capsys, "--rm-type", "math", *argv)
    assert "VIM118 warning" in out, out
    context = out.split("VIM118 warning", 1)[1].split("\n  in ", 1)[1].splitlines()[0]
    assert context.startswith("vime's default rollout: rollout "
                              "`vime.rollout.vllm_rollout.generate_rollout` "
                              "(--rollout-function-path) step 0"), context
    assert "rollout_fn.py" not in out and "/vime/rollout/" not in out, out


def test_a_generated_field_finding_still_names_the_users_generate(
        hooks: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (hooks / "owner_pending.py").write_text(PENDING_FOREVER)
    code, out = _check(capsys, "--custom-generate-function-path", "owner_pending.generate",
                       "--rm-type", "math", "--label-key", "label")
    assert code == 1, out
    contexts = [line for line in out.splitlines() if line.startswith("  in ")]
    # samples[0][0].status (index=0): the "(index=0)" hid the field, so it named vime's rollout
    assert "samples[0][0].status (index=0) is PENDING" in out, out
    assert contexts and all(f"{hooks / 'owner_pending.py'}:5:" in c for c in contexts), out
