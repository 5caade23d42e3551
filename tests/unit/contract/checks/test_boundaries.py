"""vime.contract.checks.boundaries on exact results: every ``check_*`` call passes its values,
``args``, hook path, step and options through to its boundary's check (the context names the
hook and the step; the interval skips odd steps), ``boundary_problems`` (the dry run) passes
the settings, context and options and keeps each check's own defaults, and
``observed_boundaries`` records each check that ran."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from runtime_helpers import _quiet, make_args, make_sample

from vime.contract.checks.boundaries import (
    boundary_problems,
    check_agent_result,
    check_batch_reward_result,
    check_buffer_filter_result,
    check_convert_result,
    check_dynamic_filter_result,
    check_generate_result,
    check_generated_turns_result,
    check_group_rewards,
    check_reward_post_process_result,
    check_reward_result,
    check_sample_hook_result,
    check_sync_hook_result,
    check_token_boundaries,
    observed_boundaries,
)
from vime.contract.checks.chat import turn_framing
from vime.contract.checks.settings import CheckContext, CheckSettings
from vime.contract.errors import Violation
from vime.utils.tiny_model import build_tokenizer
from vime.utils.types import Sample

pytestmark = pytest.mark.unit

FN = "my_pkg.hooks.fn"
TOK = build_tokenizer()
CHATML = "<|im_start|>user\nWhat is 2+3?<|im_end|>\n<|im_start|>assistant\n"


def _enc(text: str) -> list[int]:
    return list(TOK.encode(text, add_special_tokens=False))


def _trajectory() -> tuple[str, list[int], list[tuple[int, int]], str]:
    """A trajectory whose prompt is not the rendering's (VIM194)."""
    tokens = [*_enc("x" + CHATML), *_enc("5"), TOK.eos_token_id]
    return ("agent trajectory (index=2)", tokens, [(len(tokens) - 2, len(tokens))], CHATML)


def _turn_sample() -> tuple[str, list[int], list[int], int]:
    """A custom generate's sample whose inserted turn lacks ChatML's newline (VIM194)."""
    parts = [("5<|im_end|>", 1), ("<|im_start|>user\nAnd 4+4?<|im_end|>\n"
                                  "<|im_start|>assistant\n", 0), ("8<|im_end|>", 1)]
    response = [t for text, _ in parts for t in _enc(text)]
    mask = [m for text, m in parts for _ in _enc(text)]
    return ("custom generate sample (index=1)", [*_enc(CHATML), *response], mask,
            len(response))


async def _reward() -> float:
    return 1.0


#: The agent hook's context: its label, its path and its argument, each once.
AGENT = "agent function `my_pkg.hooks.fn` (--agent-function-path)"

#: name -> (a call at step ``rollout_id`` that finds something, the context it names)
CALLS: dict[str, tuple[Callable[..., list[Violation]], str]] = {
    "generate": (lambda a, **kw: check_generate_result(Sample.Status.COMPLETED, make_sample(),
                                                       a, hook_path=FN, **kw),
                 "generate function `my_pkg.hooks.fn` (--custom-generate-function-path)"),
    "reward": (lambda a, **kw: check_reward_result(None, a, hook_path=FN, **kw),
               "reward function `my_pkg.hooks.fn` (--custom-rm-path)"),
    "batch reward": (lambda a, **kw: check_batch_reward_result([1.0], [make_sample()] * 2, a,
                                                               hook_path=FN, **kw),
                     "reward function `my_pkg.hooks.fn` (--custom-rm-path)"),
    "group rewards": (lambda a, **kw: check_group_rewards([make_sample(reward=None)], a,
                                                          hook_path=FN, **kw),
                      "dynamic sampling filter `my_pkg.hooks.fn` "
                      "(--dynamic-sampling-filter-path)"),
    "dynamic filter": (lambda a, **kw: check_dynamic_filter_result("x", a, hook_path=FN, **kw),
                       "dynamic sampling filter `my_pkg.hooks.fn` "
                       "(--dynamic-sampling-filter-path)"),
    "buffer filter": (lambda a, **kw: check_buffer_filter_result("x", [], 2, a, hook_path=FN,
                                                                 **kw),
                      "buffer filter `my_pkg.hooks.fn` (--buffer-filter-path)"),
    "sample hook": (lambda a, **kw: check_sample_hook_result("x", a, hook_path=FN, **kw),
                    "sample hook `my_pkg.hooks.fn` (--rollout-sample-hook-path)"),
    "post-process": (lambda a, **kw: check_reward_post_process_result("x", [make_sample()], a,
                                                                      hook_path=FN, **kw),
                     "reward post-process `my_pkg.hooks.fn` "
                     "(--custom-reward-post-process-path)"),
    "convert": (lambda a, **kw: check_convert_result("x", [make_sample()], a, hook_path=FN,
                                                     **kw),
                "convert function `my_pkg.hooks.fn` "
                "(--custom-convert-samples-to-train-data-path)"),
    "sync hook": (lambda a, **kw: check_sync_hook_result(_reward(), a, hook="custom_rm_path",
                                                         hook_path=FN, **kw),
                  "reward function `my_pkg.hooks.fn` (--custom-rm-path)"),
    "agent": (lambda a, **kw: check_agent_result(None, a, hook_path=FN, **kw),
              AGENT),
    "token boundaries": (lambda a, **kw: check_token_boundaries([_trajectory()], TOK, a,
                                                                hook_path=FN, **kw),
                         AGENT),
    "generated turns": (lambda a, **kw: check_generated_turns_result(
        [_turn_sample()], TOK, turn_framing(TOK), a, hook_path=FN, **kw),
        "generate function `my_pkg.hooks.fn` (--custom-generate-function-path)"),
}


@pytest.mark.parametrize("name", list(CALLS))
def test_each_check_names_its_hook_and_step_and_follows_the_interval(name: str) -> None:
    call, context = CALLS[name]
    with _quiet():
        found = call(make_args(contract_check="warn", contract_check_interval=2), rollout_id=4)
        skipped = call(make_args(contract_check="warn", contract_check_interval=2),
                       rollout_id=3)
    assert found, name
    assert {v.context for v in found} == {f"{context} step 4"}
    assert skipped == []


def test_the_reward_checks_read_the_eval_reward_key_on_eval_steps_only() -> None:
    args = make_args(contract_check="warn", reward_key="score", eval_reward_key="acc")
    reward = {"score": 1.0}
    with _quiet():
        assert check_reward_result(reward, args) == []
        assert check_batch_reward_result([reward], [make_sample()], args) == []
        found = [*check_reward_result(reward, args, evaluation=True, index=5),
                 *check_batch_reward_result([reward], [make_sample(index=9)], args,
                                            evaluation=True)]
    assert [(v.id, v.where) for v in found] == [
        ("VIM110", "reward function result (index=5)"),
        ("VIM110", "batch reward function result[0] (index=9)")]
    assert all("--eval-reward-key" in v.message + v.fix for v in found), found


def test_the_agent_check_defaults_to_no_calls_and_none_in_flight_and_names_the_index() -> None:
    args = make_args(contract_check="warn")
    with _quiet():
        assert [(v.id, v.where) for v in check_agent_result(None, args)] == [
            ("VIM186", "agent run")]
        found = check_agent_result(None, args, index=3, calls=2, in_flight=1)
    assert [(v.id, v.where) for v in found] == [("VIM187", "agent run (index=3)")]
    assert "returned while 1 model call(s) were still running" in found[0].message


def test_boundary_problems_passes_settings_context_and_options_and_keeps_the_defaults() -> None:
    s = CheckSettings.from_args(make_args(reward_key="score", eval_reward_key="acc"))
    ctx = CheckContext.for_hook("dynamic_sampling_filter_path", FN)

    def rows(name: str, *values: Any, **options: Any) -> list[tuple[str, str]]:
        return [(v.id, v.where) for v in boundary_problems(name, *values, settings=s, ctx=ctx,
                                                           **options)]

    assert rows("reward_result", {"score": 1.0}) == []
    assert rows("reward_result", {"score": 1.0}, evaluation=True, index=2) == [
        ("VIM110", "reward function result (index=2)")]
    assert rows("batch_reward_result", [{"score": 1.0}], [make_sample()]) == []
    assert rows("generate_result", Sample.Status.PENDING, make_sample()) == []
    assert rows("agent_result", None) == [("VIM186", "agent run")]
    assert rows("dynamic_filter_result", "x") == [("VIM160", f"{FN} result")]
    assert [v.where for v in boundary_problems(
        "token_boundaries", [_trajectory()], settings=s, ctx=ctx, tokenizer=TOK)] == [
        "agent trajectory (index=2)"]


def test_observed_boundaries_records_every_check_that_ran_with_its_context() -> None:
    args = make_args(contract_check="warn", contract_check_interval=2)
    with _quiet(), observed_boundaries() as seen:
        check_reward_result(None, args, hook_path=FN, rollout_id=2)
        check_reward_result(1.0, args, hook_path=FN, rollout_id=2)
        check_reward_result(None, args, hook_path=FN, rollout_id=3)      # skipped: no record
    assert [(name, [(v.id, v.context) for v in found]) for name, found in seen] == [
        ("reward_result",
         [("VIM150", f"reward function `{FN}` (--custom-rm-path) step 2")]),
        ("reward_result", [])]
    with _quiet():
        check_reward_result(None, args, hook_path=FN, rollout_id=2)
    assert len(seen) == 2                                                 # closed: no record


def test_every_hook_has_a_label_so_no_context_names_its_argument_twice() -> None:
    from vime.contract.checks.settings import _HOOK_LABELS
    from vime.contract.hooks import HOOKS

    assert set(_HOOK_LABELS) == set(HOOKS)
    assert all(label and not label.startswith("--") for label in _HOOK_LABELS.values())
