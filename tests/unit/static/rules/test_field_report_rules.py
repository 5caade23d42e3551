"""The static twins of failures reported in other frameworks (VIM023-VIM030) together: one
finding per mistake where two rules could see it, and the shared analyses they ask."""

from __future__ import annotations

import libcst as cst
import pytest

from vime.contract import HOOKS, INVARIANTS
from vime_lint.static._engine import file_context, lint_source
from vime_lint.static._model import options_from_mapping
from vime_lint.static.analysis._turn_loops import turn_loops
from vime_lint.static.rules import ALL_RULES
from vime_lint.static.rules._groups import group_params
from vime_lint.static.rules._reward_rule import reward_leaves

pytestmark = pytest.mark.unit

NEW = ("VIM023", "VIM024", "VIM025", "VIM026", "VIM027", "VIM028", "VIM029", "VIM030")


def _codes(code: str, options: dict | None = None) -> list[tuple[str, int]]:
    result = lint_source(code, "m.py", options_from_mapping(options or {}), rules=ALL_RULES)
    assert result.failure is None, result.failure
    return [(f.code, f.line) for f in result.findings]


def test_static_records_name_their_runtime_twins_both_ways() -> None:
    pairs = {"VIM023": "VIM121", "VIM024": "VIM122", "VIM025": "VIM123", "VIM027": "VIM124",
             "VIM028": "VIM128"}
    for static, runtime in pairs.items():
        assert runtime in INVARIANTS[static].twins
        assert static in INVARIANTS[runtime].twins
    for code in NEW:
        assert INVARIANTS[code].scope == "static"
        assert any(r.code() == code for r in ALL_RULES), code


def test_getattr_on_a_known_group_is_one_vim028_error_not_also_vim013() -> None:
    code = ("def f(ds):\n    for g in ds.get_samples(2):\n"
            "        if getattr(g, 'status', None):\n            pass\n"
            "        for s in g:\n            getattr(s, 'status', None)\n")
    found = _codes(code)
    assert ("VIM028", 3) in found and ("VIM013", 3) not in found
    assert ("VIM013", 6) in found  # a group's element may still be a fan-out list


def test_group_params_come_from_the_protocols_by_position() -> None:
    assert group_params("rollout_sample_filter_path") == frozenset({1})
    assert group_params("buffer_filter_path") == frozenset({2})
    assert group_params("custom_rm_path") == frozenset()
    assert HOOKS["rollout_sample_filter_path"].params[1] == "groups"


def test_reward_leaves_follow_names_helpers_and_batch_lists() -> None:
    code = ("def helper(x):\n    if x:\n        return 1.0\n    return {'s': 0.0}\n"
            "async def group_reward_func(args, samples, **kwargs):\n    out = []\n"
            "    for s in samples:\n        out.append(helper(s))\n    return out\n")
    module = cst.parse_module(code)
    ctx, _ = file_context("m.py", module, options_from_mapping({}))
    fn = ctx.definitions["group_reward_func"]
    assert isinstance(fn, cst.FunctionDef)
    leaves = reward_leaves(fn, ctx.hooks["group_reward_func"][0], ctx)
    assert [cst.Module([]).code_for_node(leaf.value) for leaf in leaves] == ["1.0", "{'s': 0.0}"]
    assert {leaf.via for leaf in leaves} == {("helper",)}


def test_turn_loops_need_a_grown_trajectory_sent_again() -> None:
    turns = ("async def f(sample):\n    text = ''\n    for _ in range(3):\n"
             "        out = await post(URL, {'prompt': sample.prompt + text})\n"
             "        text += out\n")
    samples = ("async def f(sample):\n    results = []\n    for _ in range(3):\n"
               "        out = await post(URL, {'prompt': sample.prompt})\n"
               "        results.append(out)\n        print(len(results))\n")
    for code, expected in ((turns, 1), (samples, 0)):
        module = cst.parse_module(code)
        ctx, _ = file_context("m.py", module, options_from_mapping({}))
        fn = module.body[0]
        assert isinstance(fn, cst.FunctionDef)
        assert len(turn_loops(ctx.semantic, fn)) == expected


def test_a_helper_reached_from_two_hooks_reports_once() -> None:
    code = ("async def _episode(args, sample):\n    text = ''\n    while True:\n"
            "        out = await post(URL, {'text': text,\n"
            "                               'max_new_tokens': args.rollout_max_response_len})\n"
            "        text += out\n"
            "async def generate(args, sample, sampling_params):\n"
            "    return await _episode(args, sample)\n"
            "async def custom_generate(args, sample, sampling_params):\n"
            "    return await _episode(args, sample)\n")
    assert _codes(code).count(("VIM027", 5)) == 1


def test_fan_out_segments_may_share_metadata_not_token_lists() -> None:
    code = ("from vime.utils.types import Sample\n"
            "def generate_rollout(args, rollout_id, data_source, evaluation=False):\n"
            "    meta, tokens = {}, [1, 2]\n    segments = []\n    for i in range(3):\n"
            "        seg = Sample(prompt='p')\n        seg.rollout_id = 7\n"
            "        seg.metadata = meta\n        seg.tokens = tokens\n"
            "        segments.append(seg)\n")
    found = [f for f in _codes(code) if f[0] == "VIM025"]
    assert found == [("VIM025", 9)]


def _vim024(code: str, options: dict | None = None) -> list[tuple[int, str, str, str]]:
    result = lint_source(code, "m.py", options_from_mapping(options or {}), rules=ALL_RULES)
    assert result.failure is None, result.failure
    return [(f.line, f.severity, f.message, f.fix_hint or "") for f in result.findings
            if f.code == "VIM024"]


def test_a_tensor_or_string_reward_stored_by_a_rollout_names_hook_field_and_fix() -> None:
    code = ("import torch\n"
            "from vime.rollout.base_types import RolloutFnTrainOutput\n"
            "def _finish(s, score):\n    s.reward = str(score)\n"
            "def generate_rollout(args, rollout_id, data_source, evaluation=False):\n"
            "    groups = data_source.get_samples(2)\n"
            "    for g in groups:\n        for s in g:\n"
            "            score_tensor = torch.tensor([1.0, 0.5])\n"
            "            s.reward = score_tensor.mean()\n"
            "            _finish(s, 1.0)\n"
            "            if evaluation:\n                s.reward = f'{s.label}'\n"
            "    return RolloutFnTrainOutput(samples=groups)\n")
    found = {line: (sev, msg, fix) for line, sev, msg, fix in _vim024(code)}
    assert sorted(found) == [4, 10, 13]
    sev, msg, fix = found[10]
    assert sev == "error"
    assert msg == ("rollout function `generate_rollout` sets `s.reward` to a torch tensor "
                   "(`score_tensor.mean()`), not a Python number")
    assert fix == "store float(x) (x.item() for a one-element tensor or array)"
    sev, msg, fix = found[4]
    assert sev == "error" and msg == ("rollout function `generate_rollout` sets `s.reward` in "
                                      "`_finish` to a string (`str(score)`), not a Python number")
    assert fix.startswith("store a number, not a string: compare the parsed answer")
    sev, msg, _ = found[13]
    assert sev == "warning"
    assert msg.endswith("only on the eval path (`if evaluation:`), whose samples are not "
                        "converted to training data")


def test_a_string_reward_is_an_error_in_a_generate_and_a_reward_function() -> None:
    gen = ("async def generate(args, sample, sampling_params):\n"
           "    sample.reward = '1'\n    return sample\n")
    [(line, sev, msg, _)] = _vim024(gen)
    assert (line, sev) == (2, "error")
    assert msg.startswith("custom generate function `generate` sets `sample.reward` to a string")
    rm = ("async def reward_func(args, sample, **kwargs):\n"
          "    return f'{len(sample.response)}'\n")
    [(line, sev, msg, fix)] = _vim024(rm)
    assert (line, sev) == (2, "error")
    assert msg == ("reward function `reward_func` returns a string (`f'{len(sample.response)}'`),"
                   " not a Python number")
    assert fix.startswith("return a number, not a string")


def test_severities_follow_the_records() -> None:
    errors = {"VIM023", "VIM024", "VIM025", "VIM028", "VIM029"}
    for code in NEW:
        assert INVARIANTS[code].severity == ("error" if code in errors else "warning"), code


#: Correct multi-turn tool code in the style of the field's examples: a template dict copied per
#: sample, observations masked in the middle of the response, the per-turn budget shrinking,
#: gathered results, float rewards on every path, a narrow except for an unparsable answer.
REALISTIC = '''
import asyncio
import copy

from vime.rollout.base_types import RolloutFnEvalOutput, RolloutFnTrainOutput
from vime.rollout.vllm_rollout import generate as engine_generate
from vime.utils.async_utils import run
from vime.utils.types import Sample

TEMPLATE = {"tool": "calculator", "turns": 0}


async def generate(args, sample, sampling_params, evaluation=False):
    sample.metadata = copy.deepcopy(TEMPLATE)
    for turn in range(3):
        left = args.rollout_max_response_len - sample.response_length
        if left <= 0:
            sample.status = Sample.Status.TRUNCATED
            break
        params = dict(sampling_params, max_tokens=left)
        sample = await engine_generate(args, sample, params)
        if "CALL" not in (sample.response or ""):
            break
        observation = [5, 6, 7]
        sample.append_response_tokens(tokens=observation, loss_mask=[0] * len(observation),
                                      log_probs=[0.0] * len(observation))
        sample.metadata["turns"] = turn + 1
    return sample


async def reward_func(args, sample, **kwargs):
    try:
        answer = float((sample.response or "").split()[-1])
    except (ValueError, IndexError):
        return 0.0
    return 1.0 if str(answer) == str(float(sample.label)) else 0.0


def generate_rollout(args, rollout_id, data_source, evaluation=False):
    groups = data_source.get_samples(args.rollout_batch_size)

    async def one_group(group):
        for sample in group:
            sample.metadata = dict(TEMPLATE)
        done = await asyncio.gather(*(generate(args, s, {}) for s in group))
        for sample in done:
            sample.reward = await reward_func(args, sample)
        return list(done)

    async def all_groups():
        return await asyncio.gather(*(one_group(g) for g in groups))

    groups = run(all_groups())
    if evaluation:
        flat = [s for g in groups for s in g]
        return RolloutFnEvalOutput(data={"calc": {"rewards": [s.reward for s in flat],
                                                  "truncated": [False] * len(flat),
                                                  "samples": flat}})
    return RolloutFnTrainOutput(samples=groups)
'''


def test_realistic_multi_turn_module_trips_none_of_the_new_rules() -> None:
    found = _codes(REALISTIC)
    assert [c for c in found if c[0] in NEW] == []


def test_a_generate_returning_an_empty_list_is_told_so_and_made_samples_are_not_followed(
        ) -> None:
    """VIM036 on a custom generate function: `return []` is reported for what it is (no
    sample; the generate boundary fails the call), not as a sample missing its fields, and the
    samples an imported helper builds (kekmodel/slime's tau2 step sampler) are not followed."""
    code = ("from .steps import to_step_samples\n"
            "async def generate(args, sample, sampling_params):\n"
            "    if sample.label is None:\n        return []\n"
            "    samples = to_step_samples(await play(args, sampling_params))\n"
            "    return samples\n")
    result = lint_source(code, "m.py", options_from_mapping({}), rules=ALL_RULES)
    found = [f for f in result.findings if f.code == "VIM036"]
    assert [(f.line, f.severity) for f in found] == [(4, "error")]
    assert "returns an empty list, which holds no sample" in found[0].message
    assert "without `tokens`" not in found[0].message
    assert "Sample.Status.ABORTED" in (found[0].fix_hint or "")


def test_vim036_fix_names_the_fields_it_misses() -> None:
    """A rollout whose samples never get `response_length` is told to set that field (with how),
    not the generic `sample.reward = ...`."""
    code = ("from vime.rollout.base_types import RolloutFnEvalOutput, RolloutFnTrainOutput\n"
            "from vime.utils.types import Sample\n"
            "def generate_rollout(args, rollout_id, data_source, evaluation=False):\n"
            "    if evaluation:\n        return RolloutFnEvalOutput(data={})\n"
            "    groups = data_source.get_samples(2)\n"
            "    for g in groups:\n        for s in g:\n"
            "            s.tokens = [1, 2]\n            s.reward = 1.0\n"
            "            s.status = Sample.Status.COMPLETED\n"
            "    return RolloutFnTrainOutput(samples=groups)\n")
    result = lint_source(code, "m.py", options_from_mapping({}), rules=ALL_RULES)
    found = [f for f in result.findings if f.code == "VIM036"]
    assert len(found) == 1, result.findings
    assert "set response_length on every sample" in found[0].fix_hint
    assert "sample.response_length = len(response_ids)" in found[0].fix_hint
    assert "sample.reward" not in found[0].fix_hint
