"""`vime-lint check` says which turns never ran because the response budget was used up (the
check's default is 32 tokens): a custom generate's later turn that vime's generate never sent,
and an agent's calls the endpoint refused; "clean" is then "clean as far as it ran"."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from vime.rollout.budget_refusals import BudgetRefusal, note_refusal, recording
from vime_lint.runtime.harness import main

pytestmark = pytest.mark.unit

RESUME = '''
from vime.rollout.vllm_rollout import generate as vllm_generate


async def generate(args, sample, sampling_params):
    sample = await vllm_generate(args, sample, sampling_params)      # turn 1
    if sample.status == sample.Status.TRUNCATED:                     # cut short: go on once
        sample.status = sample.Status.PENDING
        sample = await vllm_generate(args, sample, sampling_params)  # turn 2
    return sample
'''

OBSERVATION = '''
from vime.rollout.vllm_rollout import generate as vllm_generate
from vime.utils.data import load_tokenizer

OBS = "\\nObservation: the calculator says the answer is not that, try again please.\\n"


async def generate(args, sample, sampling_params):
    sample = await vllm_generate(args, sample, sampling_params)      # turn 1
    if sample.status != sample.Status.COMPLETED:
        return sample
    tok = load_tokenizer(args.hf_checkpoint)
    room = sampling_params["max_tokens"] - sample.response_length
    ids = tok.encode(OBS, add_special_tokens=False)[:room]           # the observation, cut
    sample.append_response_tokens(args, tokens=ids, trainable=False, text=tok.decode(ids))
    sample.status = sample.Status.PENDING
    return await vllm_generate(args, sample, sampling_params)        # turn 2
'''


@pytest.fixture(autouse=True)
def _paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "br_resume.py").write_text(RESUME)
    (tmp_path / "br_observation.py").write_text(OBSERVATION)
    monkeypatch.syspath_prepend(str(tmp_path))


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(["--dry-run-engine", "stand-in", *argv])
    return code, capsys.readouterr().out



def _verdict(out: str) -> str:
    """The last line's qualification after ``clean`` or ``0 error(s), N warning(s)``; fails on
    any error. The stand-in alternates its two replies in the order requests arrive, so which
    samples of a group score alike varies from run to run: a VIM171 warning (zero reward
    spread in every group) may come or not, and must not change the qualification."""
    last = out.splitlines()[-1]
    found = re.fullmatch(r"vime-lint check: (?:clean|0 error\(s\), \d+ warning\(s\))"
                         r"(?: (.*))?", last)
    assert found, out
    return found.group(1) or ""

def test_a_second_turn_with_no_budget_left_is_named_and_clean_is_qualified(
        capsys: pytest.CaptureFixture[str]) -> None:
    code, out = _run(capsys, "--custom-generate-function-path", "br_resume.generate",
                     "--rm-type", "math", "--label-key", "label",
                     "--rollout-max-response-len", "2")
    assert code == 0, out      # a note, not a finding: the same budget truncates in training
    assert ("note: --custom-generate-function-path `br_resume.generate`: 6 generate call(s) on "
            "4 sample(s) were never sent for lack of response budget") in out
    assert ("sample index=0 already held 2 response tokens (2 from the engine's turn(s) "
            "before) against --rollout-max-response-len=2; pass your launch's "
            "--rollout-max-response-len") in out
    assert _verdict(out) == ("as far as it ran (turns refused for lack of budget did not "
                             "run: see the notes)")


def test_the_checks_default_budget_is_named_with_what_turn_1_used(
        capsys: pytest.CaptureFixture[str]) -> None:
    code, out = _run(capsys, "--custom-generate-function-path", "br_observation.generate",
                     "--rm-type", "math", "--label-key", "label")
    # turn 1: the stand-in's '42' and end of sequence (3 byte-level tokens), then 29 tokens
    # of observation fill the 32-token default: turn 2 is never sent
    assert ("already held 32 response tokens (3 from the engine's turn(s) before, 29 appended "
            "by the generate function) against --rollout-max-response-len=32 (the check's "
            "default)") in out, out


def test_an_agents_refused_calls_are_the_cause_named_not_the_stand_in(
        capsys: pytest.CaptureFixture[str]) -> None:
    code, out = _run(capsys, "--agent-function-path", "examples.openai_agent.run_agent",
                     "--label-key", "label")
    assert ("note: --agent-function-path `examples.openai_agent.run_agent`: the endpoint "
            "refused ") in out, out
    assert "for lack of response budget (answered finish_reason='length' with no text" in out
    assert "against --rollout-max-response-len=32 (the check's default)" in out
    if "VIM117 warning" in out:   # the agent's answers were cut short: said, not blamed
        assert "constant rewards (VIM117, VIM171) can come from the refused calls above" in out
        assert "score the stand-in's scripted answers" not in out
    code, out = _run(capsys, "--agent-function-path", "examples.openai_agent.run_agent",
                     "--label-key", "label", "--rollout-max-response-len", "512")
    assert "the endpoint refused" not in out and "refused calls" not in out, out


def test_refusals_are_kept_only_while_recording() -> None:
    refusal = BudgetRefusal("generate", 3, 32, 3, 32, "--rollout-max-response-len")
    note_refusal(refusal)   # no one listens: nothing kept, nothing raised
    with recording() as outer:
        with recording() as inner:
            note_refusal(refusal)
        note_refusal(refusal)
    note_refusal(refusal)
    assert inner == [refusal] and outer == [refusal, refusal]


#: a two-turn generate with its own budget check before turn 2 (as the docs suggest): at the
#: check's default budget a first call that fills it skips turn 2 without a refusal
OWN_CHECK = '''
from vime.rollout.vllm_rollout import generate as vllm_generate

FEEDBACK = [10, 65, 114, 101, 32, 121, 111, 117, 32, 115, 117, 114, 101, 63, 10]


async def generate(args, sample, sampling_params, evaluation=False):
    budget = sampling_params["max_tokens"]
    sample = await vllm_generate(args, sample, sampling_params)          # turn 1
    if sample.response_length >= budget:
        return sample
    sample.append_response_tokens(args, tokens=FEEDBACK, trainable=False,
                                  text="\\nAre you sure?\\n")
    sample.status = sample.Status.PENDING
    return await vllm_generate(args, sample, sampling_params)            # turn 2
'''

#: the stand-in's replies made longer than the check's 32-token default (a real model's)
LONG = ("42 is the answer, as the sum of the two numbers in the question shows when added "
        "up", "no idea what the answer to this question is, I cannot work it out at all")


@pytest.mark.parametrize(("argv", "default"), [((), True),
                                               (("--rollout-max-response-len", "2"), False)])
def test_a_first_call_that_fills_the_budget_leaves_no_room_for_turn_2(
        capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        argv: tuple[str, ...], default: bool) -> None:
    # the trial: turn 2 never ran at the 32-token default and the check said "clean"
    import vime_lint.check.engine as engine

    monkeypatch.setattr(engine, "STAND_IN_REPLIES", LONG)
    (tmp_path / "br_own_check.py").write_text(OWN_CHECK)
    code, out = _run(capsys, "--custom-generate-function-path", "br_own_check.generate",
                     "--rm-type", "math", "--label-key", "label", *argv)
    budget = "32 (the check's default: your launch did not pass one)" if default else "2"
    assert ("note: --custom-generate-function-path `br_own_check.generate`: its first engine "
            "call used the whole response budget on every sample (") in out, out
    assert (f"finish reason length: TRUNCATED at --rollout-max-response-len={budget}), so no "
            "later turn had room: the turns after the first were not exercised; pass your "
            "launch's --rollout-max-response-len (or a larger one) to run them") in out
    assert "never sent for lack of response budget" not in out   # no call was refused
    assert _verdict(out) == ("as far as it ran (turns after a first call that filled the "
                             "budget did not run: see the notes)"), out


def test_turn_2_that_ran_gets_no_budget_note(capsys: pytest.CaptureFixture[str],
                                             tmp_path: Path) -> None:
    (tmp_path / "br_own_check.py").write_text(OWN_CHECK)
    code, out = _run(capsys, "--custom-generate-function-path", "br_own_check.generate",
                     "--rm-type", "math", "--label-key", "label")
    assert "first engine call used the whole response budget" not in out
    assert _verdict(out) == "", out
    # a passed budget equal to the default is not "the check's default"
    from vime_lint.check.arguments import parse_check_args

    assert parse_check_args(["--rollout-max-response-len", "32"]).dry_run_defaulted == [
        "n_samples_per_prompt", "rollout_batch_size"]
    assert "rollout_max_response_len" in parse_check_args([]).dry_run_defaulted


def test_engine_calls_are_kept_only_while_someone_listens() -> None:
    from vime.rollout.budget_refusals import (
        EngineCall,
        engine_calls,
        listening_to_calls,
        note_call,
    )

    call = EngineCall(0, 0, 32, True, 32, "--rollout-max-response-len")
    assert not listening_to_calls()
    note_call(call)                                   # no one listens: nothing is kept
    with engine_calls() as outer, engine_calls() as inner:
        assert listening_to_calls()
        note_call(call)
    assert outer == inner == [call] and not listening_to_calls()
