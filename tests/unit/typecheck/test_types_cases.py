"""``vime-lint types``: each kind of type mistake is caught at the user's line, correct example
modules (with and without their own annotations) give nothing, and no user file changes.

All case files are checked by one mypy run (a session fixture), so the suite pays for mypy's
cold start once.
"""

from __future__ import annotations

import hashlib
import textwrap
from pathlib import Path
from typing import Any

import libcst as cst
import pytest

from vime_lint.static._config import Config
from vime_lint.static._model import Finding
from vime_lint.typecheck.check import TypesOutcome, TypesSettings, check_paths

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[3]

#: case file -> (source, [(line, code, text the message holds)]).
CASES: dict[str, tuple[str, list[tuple[int, str, str]]]] = {
    "prompt_as_str.py": ('''
        async def reward_func(args, sample):
            text = sample.prompt.lower()
            return float("answer" in text)
        ''', [(2, "VIM201", "`sample.prompt` is `str | list[dict[str, Any]]` (Sample.prompt); mypy: "
                           'Item "list[dict[str, Any]]" of "str | list[dict[str, Any]]" has no '
                           'attribute "lower"\nhelp: narrow it first: '
                           "`if isinstance(sample.prompt, str)")]),
    # openreward-cookbook's shape: metadata kept as JSON text (slime keeps the data's string;
    # vime parses a JSON-string metadata column into a dict)
    "metadata_as_json_text.py": ('''
        import json

        async def reward_func(args, sample, **kwargs):
            meta = json.loads(sample.metadata)
            return float(meta["score"])

        async def generate(args, sample, sampling_params):
            sample.metadata = json.dumps({"turns": 2})
            return sample
        ''', [(4, "VIM201", "`sample.metadata` is `dict[str, Any]`"),
            (8, "VIM202", "`sample.metadata` is `dict[str, Any]`")]),
    "tokens_as_ndarray.py": ('''
        import numpy as np

        async def generate(args, sample, sampling_params):
            sample.tokens = np.array([1, 2, 3], dtype=np.int64)
            sample.loss_mask = np.ones(2, dtype=np.int32)
            return sample
        ''', [(4, "VIM202", "`sample.tokens` is `list[int]`"),
            (5, "VIM202", "`sample.loss_mask` is `list[int] | None`")]),
    "reward_tensor.py": ('''
        import torch

        async def reward_func(args, sample):
            return torch.tensor(1.0)
        ''', [(4, "VIM200", 'got "Tensor"')]),
    "reward_numpy.py": ('''
        import numpy as np

        async def reward_func(args, sample):
            return np.float32(len(sample.response))
        ''', [(4, "VIM200", "`reward_func` returns `float | dict[str, Any]` (RewardFunction)")]),
    "reward_none_on_a_path.py": ('''
        async def reward_func(args, sample):
            if sample.label is None:
                return None
            return float(sample.response.strip() == sample.label)
        ''', [(3, "VIM200", 'got "None"')]),
    "reward_falls_off.py": ('''
        async def reward_func(args, sample):
            if sample.response:
                return 1.0
        ''', [(1, "VIM200", "Missing return statement")]),
    # found by its conventional name alone, with a parameter the hook does not pass (slime's
    # own `log_rollout_data` in megatron_utils/data.py, which no launch passes): a warning
    "loose_log_rollout_data.py": ('''
        def log_rollout_data(rollout_id, args, rollout_data):
            print(rollout_id, len(rollout_data))
        ''', [(1, "VIM200", "by its conventional name alone, and it has parameters that "
                           "hook does not pass")]),
    # the documented agent signature (docs/contract.md: `async def run_agent(args, sample,
    # base_url, api_key, evaluation=...)`) found by its conventional name: `evaluation` is a
    # keyword the hook is passed, not an extra parameter, so the finding stays an error
    "agent_documented_signature.py": ('''
        async def run_agent(args, sample, base_url, api_key, evaluation=False):
            return "1.0"
        ''', [(2, "VIM200", "`run_agent` returns `float | dict[str, Any] | None` "
                           "(AgentFunction); mypy: Incompatible return value type")]),
    # a helper annotated with a contract type it does not return hides the value from the
    # hook's own check: an error at the helper's return
    "helper_returns_other_than_its_contract_annotation.py": ('''
        from vime.utils.types import Sample

        async def _collect(args, data_source) -> list[list[Sample]]:
            return {"groups": data_source.get_samples(4)}

        def generate_rollout(args, rollout_id, data_source, evaluation=False):
            import asyncio
            return asyncio.run(_collect(args, data_source))
        ''', [(4, "VIM201", "list[list[Sample]]"),
            # and the hook returns what the annotation says: the legacy bare list
            (8, "VIM200", "a legacy form there, which vime wraps with a DeprecationWarning")]),
    "rollout_returns_list.py": ('''
        def generate_rollout(args, rollout_id, data_source, evaluation=False):
            groups = data_source.get_samples(args.rollout_batch_size)
            return groups
        ''', [(3, "VIM200", 'got "list[list[Sample]]", expected "RolloutFnTrainOutput | '
                           'RolloutFnEvalOutput"')]),
    "rollout_returns_dict.py": ('''
        from vime.rollout.base_types import RolloutFnEvalOutput

        def generate_rollout(args, rollout_id, data_source, evaluation=False):
            if evaluation:
                return RolloutFnEvalOutput(data={})
            groups = data_source.get_samples(args.rollout_batch_size)
            return {"samples": groups, "metrics": {}}
        ''', [(7, "VIM200", 'got "dict[str, Collection[list[Sample]]]", expected '
                           '"RolloutFnTrainOutput | RolloutFnEvalOutput"')]),
    # the same raw values on the other path: a dict on the eval path is the legacy form, a
    # list there fails (as `vime-lint rollout`'s VIM003 and the run's VIM101 say)
    "rollout_returns_dict_on_eval.py": ('''
        from vime.rollout.base_types import RolloutFnTrainOutput

        def generate_rollout(args, rollout_id, data_source, evaluation=False):
            if evaluation:
                return {"held_out": {"rewards": [1.0]}}
            return RolloutFnTrainOutput(samples=data_source.get_samples(1))
        ''', [(5, "VIM200", "a bare dict on the eval path (evaluation=True): a legacy form")]),
    "rollout_returns_list_on_eval.py": ('''
        from vime.rollout.base_types import RolloutFnTrainOutput

        def generate_rollout(args, rollout_id, data_source, evaluation=False):
            groups = data_source.get_samples(args.rollout_batch_size)
            if not evaluation:
                return RolloutFnTrainOutput(samples=groups)
            return groups
        ''', [(7, "VIM200", "a bare list on the eval path (evaluation=True): "
                           "call_rollout_fn raises")]),
    "data_source_default_methods.py": ('''
        from vime.rollout.base_types import RolloutFnEvalOutput, RolloutFnTrainOutput

        def generate_rollout(args, rollout_id, data_source, evaluation=False):
            if evaluation:
                return RolloutFnEvalOutput(data={})
            n = data_source.get_buffer_length()
            data_source.no_such_method()
            return RolloutFnTrainOutput(samples=data_source.get_samples(n))
        ''', [(6, "VIM201", '"DataSource" has no attribute "get_buffer_length"'),
              (7, "VIM201", '"DataSource" has no attribute "no_such_method"')]),
    "metrics_list.py": ('''
        from vime.rollout.base_types import RolloutFnTrainOutput

        def generate_rollout(args, rollout_id, data_source, evaluation=False):
            groups = data_source.get_samples(4)
            return RolloutFnTrainOutput(samples=groups, metrics={"rollout/me/acc": [0.5, 1.0]})
        ''', [(5, "VIM202", "`RolloutFnTrainOutput.metrics` is `dict[str, float] | None`")]),
    "metrics_str.py": ('''
        from vime.rollout.base_types import RolloutFnTrainOutput

        def generate_rollout(args, rollout_id, data_source, evaluation=False):
            groups = data_source.get_samples(4)
            metrics = {"rollout/me/tag": "run-1"}
            return RolloutFnTrainOutput(samples=groups, metrics=metrics)
        ''', [(6, "VIM202", '"dict[str, str]"')]),
    "status_string.py": ('''
        async def generate(args, sample, sampling_params):
            sample.status = "completed"
            return sample
        ''', [(2, "VIM202", "`sample.status` is `Sample.Status` (Sample.status)")]),
    "reward_read_as_float.py": ('''
        from vime.rollout.filter_hub.base_types import DynamicFilterOutput

        def dynamic_sampling_filter(args, samples):
            keep = samples[0].reward > 0.5
            return DynamicFilterOutput(keep=keep)
        ''', [(4, "VIM201", "`samples[0].reward` is `float | dict[str, Any] | None`")]),
    "helper_gets_the_sample.py": ('''
        def _score(s, word="answer"):
            return s.prompt.lower().count(word)

        async def reward_func(args, sample):
            return float(_score(sample))
        ''', [(2, "VIM201", "via reward_func(sample)")]),
    "stale_parameter_name.py": ('''
        def generate_rollout(args, rollout_id, data_buffer, evaluation=False):
            return data_buffer.get_samples(2)
        ''', [(2, "VIM200", 'got "list[list[Sample]]"')]),
    "wider_annotation.py": ('''
        from vime.utils.types import Sample

        async def reward_func(args, sample: Sample | None) -> float:
            return float(len(sample.prompt.lower()))
        ''', [(4, "VIM201", "`sample.prompt` is `str | list[dict[str, Any]]`")]),
    "annotation_conflict.py": ('''
        async def reward_func(args, sample: dict) -> str:
            return "1.0"
        ''', [(1, "VIM203", "`sample` is `Sample` (RewardFunction)"),
              (1, "VIM203", "`reward_func` returns `float | dict[str, Any]`"),
              # the body is checked with the contract's types (what vime passes): a str reward
              (2, "VIM200", 'got "str"')]),
    "reward_str.py": ('''
        async def reward_func(args, sample):
            return sample.response
        ''', [(2, "VIM200", 'got "str"')]),
    "tokens_from_text.py": ('''
        async def generate(args, sample, sampling_params):
            sample.tokens = sample.response.split()
            return sample
        ''', [(2, "VIM202", "`sample.tokens` is `list[int]` (Sample.tokens)")]),
    "group_of_samples_expected.py": ('''
        from vime.rollout.base_types import RolloutFnTrainOutput

        def generate_rollout(args, rollout_id, data_source, evaluation=False):
            groups = data_source.get_samples(4)
            return RolloutFnTrainOutput(samples=[s for g in groups for s in g])
        ''', [(5, "VIM202", "`RolloutFnTrainOutput.samples` is")]),
    "eval_output_missing.py": ('''
        from vime.rollout.base_types import RolloutFnTrainOutput

        def generate_rollout(args, rollout_id, data_source, evaluation=False):
            if evaluation:
                return None
            return RolloutFnTrainOutput(samples=data_source.get_samples(4))
        ''', [(5, "VIM200", 'got "None"')]),
    "attribute_not_a_field.py": ('''
        async def generate(args, sample, sampling_params):
            sample.loss_masks = [1]
            sample.my_score = 0.5
            sample.own_note = "kept"
            return sample

        def read_back(sample):
            return sample.own_note
        ''', [(2, "VIM031", "did you mean `loss_mask`?"),
              (3, "VIM031", "sets `my_score`, which is not a Sample field")]),
    "helper_annotated_sample.py": ('''
        import torch

        from vime.utils.types import Sample

        def _fill(sample: Sample, text: str) -> None:
            sample.response = text
            sample.reward = torch.tensor(1.0)
            sample.reward = "1.0"
            sample.loss_mask = [1] * len(sample.tokens)

        async def generate(args, sample, sampling_params):
            _fill(sample, "x")
            return sample
        ''', [(7, "VIM202", 'has type "Tensor"'), (8, "VIM202", 'has type "str"')]),
    "helper_two_calls_deep.py": ('''
        def _inner(s):
            return s.prompt.lower()

        def _outer(s):
            return _inner(s)

        async def reward_func(args, sample):
            return float(len(_outer(sample)))
        ''', [(2, "VIM201", "in `_inner` (types from RewardFunction, via reward_func(sample), "
                           "via _outer(s)), reached from `reward_func`")]),
    "helper_of_a_group.py": ('''
        from vime.utils.types import Sample

        def _mean_reward(groups: list[list[Sample]]) -> float:
            return sum(s.reward for g in groups for s in g) / len(groups)

        async def reward_func(args, sample):
            return 1.0
        ''', [(4, "VIM201", "(Sample.reward)")]),
    # The loop name rebound to the group's one sample (miles' sft rollout): the new type is
    # checked, so a tensor stored into it is still reported.
    "group_unpacked_into_the_loop_name.py": ('''
        import torch

        from vime.rollout.base_types import RolloutFnTrainOutput

        def generate_rollout(args, rollout_id, data_source, evaluation=False):
            samples = data_source.get_samples(4)
            for sample in samples:
                (sample,) = sample
                sample.reward = torch.tensor(1.0)
            return RolloutFnTrainOutput(samples=samples)
        ''', [(9, "VIM202", 'has type "Tensor"')]),
    # Calls of vime's functions whose arguments do not fit them: said in the contract's words,
    # with the call to write, once per call (mypy's sentences about it merged).
    "call_missing_rollout_id.py": ('''
        from vime.rollout.base_types import finalize_rollout_groups

        def generate_rollout(args, rollout_id, data_source, evaluation=False):
            groups = data_source.get_samples(2)
            return finalize_rollout_groups(args, groups)
        ''', [(5, "VIM201", "the call `finalize_rollout_groups(args, groups)` passes no "
                           "`rollout_id`; `groups` lands in `rollout_id`: vime's "
                           "`finalize_rollout_groups(args, rollout_id, groups, metrics=None, *, "
                           "controller=None)` (vime.rollout.base_types) raises TypeError on it "
                           "when the hook runs; mypy: Missing positional argument \"groups\"")]),
    "call_default_rollout_without_rollout_id.py": ('''
        from vime.rollout import sft_rollout
        from vime.rollout.vllm_rollout import generate_rollout as base_rollout

        def generate_rollout(args, rollout_id, data_source, evaluation=False):
            if evaluation:
                return base_rollout(args, data_source, evaluation=True)
            return sft_rollout.generate_rollout(args, data_source)
        ''', [(6, "VIM201", "the call `base_rollout(args, data_source, evaluation=True)` passes "
                           "no `rollout_id`; `data_source` lands in `rollout_id`: vime's "
                           "`generate_rollout(args, rollout_id, data_source, evaluation=False)` "
                           "(vime.rollout.vllm_rollout)"),
              (7, "VIM201", "\nhelp: pass the hook's own `rollout_id` as the 2nd argument: "
                            "`sft_rollout.generate_rollout(args, rollout_id, data_source)`")]),
    "call_generate_and_a_data_source_method.py": ('''
        import vime.rollout.vllm_rollout as vr
        from vime.rollout.base_types import RolloutFnTrainOutput

        async def generate(args, sample, sampling_params):
            sample = await vr.generate(args, sample)
            return await vr.generate(args, sample, sampling_params, True)

        def generate_rollout(args, rollout_id, data_source, evaluation=False):
            return RolloutFnTrainOutput(samples=data_source.get_samples())
        ''', [(5, "VIM201", "the call `vr.generate(args, sample)` passes no `sampling_params`"
                           ": vime's `generate(args, sample, sampling_params)` "
                           "(vime.rollout.vllm_rollout) raises TypeError on it when the hook "
                           "runs; mypy: Missing positional argument \"sampling_params\" in call to "
                           "\"generate\"\nhelp: pass the hook's own `sampling_params` as the "
                           "3rd argument: `vr.generate(args, sample, sampling_params)`"),
              (6, "VIM201", "passes 4 positional arguments where it takes 3: vime's "
                            "`generate(args, sample, sampling_params)` (vime.rollout.vllm_rollout)"
                            " raises TypeError on it when the hook runs; mypy: "),
              (9, "VIM201", "the call `data_source.get_samples()` passes no `num_samples`: "
                            "vime's `get_samples(num_samples)` (vime.rollout.data_source."
                            "DataSource) raises TypeError on it when the hook runs; mypy: ")]),
    "call_with_a_misspelt_keyword.py": ('''
        from vime.rollout.base_types import RolloutFnTrainOutput, finalize_rollout_groups

        def generate_rollout(args, rollout_id, data_source, evaluation=False):
            groups = data_source.get_samples(2)
            if len(groups) > 1:
                return finalize_rollout_groups(args, rollout_id, groups, metric={})
            return RolloutFnTrainOutput(sample=groups)
        ''', [(6, "VIM201", "passes `metric=`, which it has no parameter for: vime's "
                           "`finalize_rollout_groups(args, rollout_id, groups, metrics=None, *, "
                           "controller=None)` (vime.rollout.base_types) raises TypeError on it "
                           "when the hook runs; mypy: Unexpected keyword argument \"metric\""),
              (7, "VIM201", "\nhelp: rename `sample=` to `samples=`: "
                            "`RolloutFnTrainOutput(samples=groups)`")]),
}

#: Correct code that must give no finding: a wrapper of the default rollout that edits its
#: output (the `evaluation` overloads), an agent written against the `openai` SDK as its docs
#: show (`messages=` lists of dicts, not the SDK's TypedDicts).
CLEAN: dict[str, str] = {
    "wrapper_of_the_default_rollout.py": '''
        from vime.rollout.vllm_rollout import generate_rollout as base_rollout

        def generate_rollout(args, rollout_id, data_source, evaluation=False):
            if evaluation:
                return base_rollout(args, rollout_id, data_source, evaluation=True)
            out = base_rollout(args, rollout_id, data_source, evaluation=False)
            out.samples = out.samples[: args.rollout_batch_size]
            out.metrics = {**(out.metrics or {}), "rollout/wrapper/groups": float(len(out.samples))}
            return out
        ''',
    "wrapper_of_the_sft_rollout.py": '''
        from vime.rollout import sft_rollout

        def generate_rollout(args, rollout_id, data_source, evaluation=False):
            if evaluation:
                ev = sft_rollout.generate_rollout(args, rollout_id, data_source, evaluation=True)
                ev.data = {k: v for k, v in ev.data.items() if v["samples"]}
                return ev
            out = sft_rollout.generate_rollout(args, rollout_id, data_source)
            out.samples = list(reversed(out.samples))
            return out
        ''',
    "openai_sdk_agent.py": '''
        from openai import AsyncOpenAI

        async def run_agent(args, sample, base_url, api_key, **kwargs):
            client = AsyncOpenAI(base_url=base_url, api_key=api_key)
            question = sample.prompt if isinstance(sample.prompt, str) else ""
            messages = [{"role": "system", "content": "Answer briefly."},
                        {"role": "user", "content": question}]
            reply = await client.chat.completions.create(model="policy", messages=messages)
            answer = reply.choices[0].message.content or ""
            messages.append({"role": "assistant", "content": answer})
            messages.append({"role": "user", "content": "Are you sure?"})
            reply = await client.chat.completions.create(
                model="policy", messages=[{"role": "user", "content": question}], max_tokens=8)
            return float(str(sample.label) in answer)
        ''',
    # miles' sft rollout: each group of one is unpacked into the loop's own name.
    # A name rebound to `None` (mypy called it "None into a typed local"): Python allows it,
    # and the type checked afterwards is the new one (allow_redefinition_new).
    "none_into_a_local.py": '''
        async def reward_func(args, sample):
            best = 0.0
            if not sample.response:
                best = None
            return 1.0
        ''',
    "group_of_one_unpacked.py": '''
        from vime.rollout.base_types import RolloutFnTrainOutput

        def generate_rollout(args, rollout_id, data_source, evaluation=False):
            samples = data_source.get_samples(args.rollout_batch_size)
            for i, sample in enumerate(samples):
                (sample,) = sample
                messages = sample.prompt
                sample.tokens = [1, 2, 3]
                sample.response_length = 2
                sample.reward = 0
                sample.loss_mask = [1, 1]
            return RolloutFnTrainOutput(samples=samples)
        ''',
    # A filter written for miles, whose package is in the project (MILES below): its output
    # class is miles', not vime's; at run time under miles it is right, under vime the import
    # fails (VIM012 of `vime-lint rollout`): no nominal mismatch from `types`.
    "miles_filter.py": '''
        from miles.rollout.filter_hub.base_types import DynamicFilterOutput

        def check_no_aborted(args, samples, **kwargs):
            for sample in samples:
                if sample.status == sample.Status.ABORTED:
                    return DynamicFilterOutput(keep=False, reason="aborted")
            return DynamicFilterOutput(keep=True)
        ''',
}

#: A stand-in for miles' package in the project folder (what `miles_filter.py` imports).
MILES = {
    "miles/__init__.py": "",
    "miles/rollout/__init__.py": "",
    "miles/rollout/filter_hub/__init__.py": "",
    "miles/rollout/filter_hub/base_types.py": (
        "from dataclasses import dataclass\n\n\n@dataclass\nclass DynamicFilterOutput:\n"
        "    keep: bool\n    reason: str | None = None\n"),
}

#: mypy's own strictness, no contract type violated: nothing by default, VIM204 (a warning)
#: only when selected (`--extend-select VIM204`). file -> (source, [(line, text)]).
STRICT: dict[str, tuple[str, list[tuple[int, str]]]] = {
    "needs_annotation.py": ('''
        async def reward_func(args, sample):
            seen = []
            return float(len(seen))
        ''', [(2, "var-annotated")]),
    "object_from_untyped_container.py": ('''
        async def reward_func(args, sample):
            weights = {"exact": 1.0, "name": "w"}
            return float(weights["exact"] + 1)
        ''', [(3, "`object`")]),
    "optional_not_narrowed.py": ('''
        async def reward_func(args, sample):
            table = {"yes": 1.0, "no": 0.0}
            return table.get(sample.response.strip())
        ''', [(3, 'got "float | None"')]),
    "mode_union_not_narrowed.py": ('''
        from vime.rollout.vllm_rollout import generate_rollout as base

        def generate_rollout(args, rollout_id, data_source, evaluation=False):
            out = base(args, rollout_id, data_source, evaluation=evaluation)
            if evaluation:
                return out
            out.samples = out.samples[:2]
            return out
        ''', [(7, 'Item "RolloutFnEvalOutput"')]),
    "fan_out_group_not_narrowed.py": ('''
        from vime.rollout.vllm_rollout import generate_rollout as base

        def generate_rollout(args, rollout_id, data_source, evaluation=False):
            if evaluation:
                return base(args, rollout_id, data_source, evaluation=True)
            out = base(args, rollout_id, data_source, evaluation=False)
            for group in out.samples:
                for s in group:
                    s.metadata["wrapped"] = True
            return out
        ''', [(9, 'Item "list[Sample]"')]),
    "own_return_annotation_stricter.py": ('''
        def reward_func(args, sample) -> float:
            return {"score": 1.0}
        ''', [(2, "the hook's own return annotation is stricter")]),
    # slime's rollout_buffer_example: a helper's own `-> dict[str, Any]` where it returns the
    # data source's groups; what reaches vime is checked at the hook's return
    "own_helper_return_annotation.py": ('''
        import asyncio
        from typing import Any

        async def _collect(args, data_source) -> dict[str, Any]:
            return data_source.get_samples(args.rollout_batch_size)

        def generate_rollout(args, rollout_id, data_source, evaluation=False):
            groups: Any = asyncio.run(_collect(args, data_source))
            return groups
        ''', [(5, "`_collect` returns `list[list[Sample]]` where its own annotation says "
                  "`dict[str, Any]`")]),
    "own_helper_annotation.py": ('''
        from typing import Any

        def _agent(rollout_args: dict[str, Any] | None = None) -> str:
            return "ok"

        async def generate(args, sample, sampling_params):
            sample.response = _agent(rollout_args=args)
            return sample
        ''', [(7, "the parameter annotation of the user's own `_agent`")]),
    # the same through a method of the user's own class (kekmodel/slime's tau2 agent: its
    # method reads attributes of `rollout_args`, which work on the Namespace)
    "own_method_annotation.py": ('''
        from typing import Any

        class _Agent:
            async def solve(self, rollout_args: dict[str, Any]) -> str:
                return "ok"

        async def generate(args, sample, sampling_params):
            sample.response = await _Agent().solve(rollout_args=args)
            return sample
        ''', [(8, "the parameter annotation of the user's own `_Agent.solve`")]),
    # miles' generate_and_rm: `Sample` is miles' (read as `Any`), the union left unnarrowed
    "fan_out_of_an_unknown_sample.py": ('''
        from miles.utils.types import Sample

        async def generate_and_rm(args, sample: Sample | list[Sample], sampling_params,
                                  evaluation: bool = False) -> Sample | list[Sample]:
            sample.loss_mask = [0, 0]
            return sample

        async def reward_func(args, sample):
            return 1.0
        ''', [(5, 'Item "list[Any]"')]),
}

#: Every shipped example module (examples/broken/ holds the linter's INVALID cases).
EXAMPLES = tuple(sorted(p.relative_to(REPO / "examples").as_posix()
                        for p in (REPO / "examples").rglob("*.py") if "broken" not in p.parts))


class _StripHookAnnotations(cst.CSTTransformer):
    """Remove the annotations of module-level functions (users rarely annotate hooks)."""

    def leave_Param(self, original_node: cst.Param, updated_node: cst.Param) -> cst.Param:
        return updated_node.with_changes(annotation=None)

    def leave_FunctionDef(self, original_node: cst.FunctionDef,
                          updated_node: cst.FunctionDef) -> cst.FunctionDef:
        return updated_node.with_changes(returns=None)


def _digest(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.glob("*.py"))}


@pytest.fixture(scope="module")
def checked(tmp_path_factory: pytest.TempPathFactory, types_cache: Path) -> tuple[
        TypesOutcome, Path, dict[str, str], dict[str, str]]:
    """Every case, every example and the unannotated examples, in one ``check_paths`` run."""
    folder = tmp_path_factory.mktemp("types_cases")
    for name, (source, _) in CASES.items():
        (folder / name).write_text(textwrap.dedent(source).lstrip("\n"), encoding="utf-8")
    for name, (source, _) in STRICT.items():
        (folder / f"strict_{name}").write_text(textwrap.dedent(source).lstrip("\n"),
                                               encoding="utf-8")
    for name, source in CLEAN.items():
        (folder / f"clean_{name}").write_text(textwrap.dedent(source).lstrip("\n"),
                                              encoding="utf-8")
    for name in EXAMPLES:
        text = (REPO / "examples" / name).read_text(encoding="utf-8")
        (folder / f"example_{name.replace('/', '_')}").write_text(text, encoding="utf-8")
        if name in ("calculator_rollout.py", "informative_groups_filter.py"):
            bare = cst.parse_module(text).visit(_StripHookAnnotations()).code
            (folder / f"bare_{name}").write_text(bare, encoding="utf-8")
    for rel, text in MILES.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(text, encoding="utf-8")
    before = _digest(folder)
    # examples/real_model's reward is named by its launch config, not by a conventional name
    config = Config(hooks={
        "custom_rm_path": ("example_real_model_reward.reward",),
        "dynamic_sampling_filter_path": ("clean_miles_filter.check_no_aborted",)})
    outcome = check_paths(TypesSettings(paths=[folder], root=folder, cache_dir=types_cache,
                                        config=config))
    strict = check_paths(TypesSettings(paths=[folder], root=folder, cache_dir=types_cache,
                                       config=config, select=("VIM", "VIM204")))
    return outcome, folder, before, _digest(folder), strict


def _findings(outcome: TypesOutcome, name: str) -> list[Finding]:
    return [f for r in outcome.results if Path(r.path).name == name for f in r.findings]


@pytest.mark.parametrize("name", sorted(CASES))
def test_each_mistake_is_caught_at_its_line(checked: tuple[TypesOutcome, Path, dict[str, str],
                                                           dict[str, str]], name: str) -> None:
    outcome, *_ = checked
    assert not outcome.problems, outcome.problems
    found = _findings(outcome, name)
    expected = CASES[name][1]
    # each text is matched against what `vime-lint types` prints: the message, then the
    # `help:` line (the fix, said once)
    for line, code, text in expected:
        assert any(f.line == line and f.code == code and text in f"{f.message}\nhelp: "
                   f"{f.fix_hint}" for f in found), (
            f"{name}: no {code} at line {line} with {text!r}; got "
            + "; ".join(f"{f.line}:{f.code} {f.message}" for f in found))
    assert len(found) == len(expected), [f"{f.line}:{f.code} {f.message}" for f in found]


def test_conflicting_annotations_are_warnings_and_the_rest_errors(checked: Any) -> None:
    outcome, *_ = checked
    for r in outcome.results:
        for f in r.findings:
            warning = f.code == "VIM203" or f.code == "VIM031" and "did you mean" not in f.message
            warning = warning or f.code == "VIM200" and ": a legacy form" in f.message
            warning = warning or f.code == "VIM201" and "of vime's default data source" in \
                f.message
            warning = warning or "by its conventional name alone" in f.message
            assert f.severity == ("warning" if warning else "error"), f


def test_a_bare_list_of_groups_is_a_warning_as_at_run_time(checked: Any) -> None:
    # vime wraps a rollout function's bare list with a DeprecationWarning (check_vim101's
    # legacy form): the same finding is a warning, naming that; a tensor reward stays an error.
    outcome, *_ = checked
    (f,) = _findings(outcome, "rollout_returns_list.py")
    assert f.severity == "warning", f
    # it says what was returned and what is due, not the due type alone
    assert f.message.startswith("`generate_rollout` returns `list[list[Sample]]` where `"), \
        f.message
    assert ("a bare list on a path that `evaluation` does not split, which the train step "
            "takes: a legacy form there, which vime wraps with a DeprecationWarning; on the "
            "eval path it is an error at run time (VIM101); mypy: ") in f.message, f.message
    assert f.fix_hint.startswith("wrap the groups"), f.fix_hint
    (f,) = _findings(outcome, "reward_tensor.py")
    assert f.severity == "error"
    # a bare dict: what was returned first (a new user read "returns `RolloutFnTrainOutput |
    # ...`" as "the return type is right"), both paths' outcomes, the dataclass to return
    # a method of the default data source (RolloutDataSourceWithBuffer) that the DataSource
    # interface lacks runs with the default: a warning; a method no class has: an error
    soft, hard = _findings(outcome, "data_source_default_methods.py")
    assert soft.severity == "warning" and hard.severity == "error", (soft, hard)
    assert soft.message.startswith("`get_buffer_length` is a method of vime's default data "
                                   "source (`RolloutDataSourceWithBuffer`)"), soft.message
    assert "no_such_method" in hard.message
    # on the train path: an error, as `vime-lint rollout` (VIM003) and the run (VIM101) say
    # (it was a warning that named both paths' outcomes)
    (f,) = _findings(outcome, "rollout_returns_dict.py")
    assert f.severity == "error", f
    assert f.message.startswith("`generate_rollout` returns `dict[str, Collection[list[Sample]]]`"
                                " where `RolloutFnTrainOutput | RolloutFnEvalOutput` is due"), \
        f.message
    assert ("a bare dict on the train path (evaluation=False): call_rollout_fn raises at the "
            "first such step (VIM101)") in f.message, f.message
    assert _findings(outcome, "rollout_returns_dict_on_eval.py")[0].severity == "warning"
    assert _findings(outcome, "rollout_returns_list_on_eval.py")[0].severity == "error"
    assert f.fix_hint.startswith("return the output dataclass: `RolloutFnTrainOutput(samples="), f


@pytest.mark.parametrize("name", sorted(STRICT))
def test_mypy_strictness_is_off_by_default_and_a_warning_when_selected(
        checked: Any, name: str) -> None:
    outcome, *_, strict = checked
    assert _findings(outcome, f"strict_{name}") == []
    found = _findings(strict, f"strict_{name}")
    expected = STRICT[name][1]
    assert [(f.line, f.code, f.severity) for f in found] == [
        (line, "VIM204", "warning") for line, _ in expected], [f.message for f in found]
    for f, (_, text) in zip(found, expected, strict=True):
        assert text in f.message and "; mypy: " in f.message, f.message


def test_selecting_strictness_changes_no_error(checked: Any) -> None:
    """The contract errors are the same with VIM204 selected (it adds warnings only)."""
    outcome, *_, strict = checked
    errors = {(r.path, f.line, f.code) for r in outcome.results for f in r.findings}
    more = {(r.path, f.line, f.code) for r in strict.results for f in r.findings
            if f.code != "VIM204"}
    assert errors == more


def test_a_helper_finding_names_the_hook_that_reaches_it(checked: Any) -> None:
    outcome, *_ = checked
    found = _findings(outcome, "helper_annotated_sample.py")
    assert found and all("in `_fill` (types from its own annotations), reached from `generate`"
                         in f.message for f in found), [f.message for f in found]


def test_messages_lead_with_the_contract_then_mypy_and_say_the_fix_once(checked: Any) -> None:
    # the fix is the `help:` line only (the message said it too, so the text output, the
    # editor's "fix:" line and JSON's fix_hint repeated it)
    outcome, *_ = checked
    (f,) = _findings(outcome, "reward_tensor.py")
    head, _, mypy = f.message.partition("; mypy: ")
    assert head == "`reward_func` returns `float | dict[str, Any]` (RewardFunction)", f.message
    assert mypy.startswith("Incompatible return value type (got \"Tensor\"")
    assert f.fix_hint.startswith("return a Python number: `float(value)`"), f.fix_hint
    for r in outcome.results:
        for g in r.findings:
            if g.code.startswith("VIM20") and g.fix_hint:
                assert g.fix_hint not in g.message, g


def test_the_help_line_is_the_fix_of_this_field_and_type(checked: Any) -> None:
    """`help:` gives the finding's own fix: a reward stored as text is told to store a float,
    not about `Sample.Status` or metrics (the rule's general text)."""
    outcome, *_ = checked
    found = {f.line: f for f in _findings(outcome, "helper_annotated_sample.py")}
    assert found[8].fix_hint.startswith("store a Python float"), found[8].fix_hint
    assert "Sample.Status" not in found[8].fix_hint and "metric" not in found[8].fix_hint
    (status,) = [f for f in _findings(outcome, next(n for n in CASES if "`sample.status` is"
                                                     in str(CASES[n][1])))]
    assert "Sample.Status" in status.fix_hint


def test_the_fix_of_metadata_text_and_numpy_tokens_says_what_vime_does(checked: Any) -> None:
    """`json.loads(sample.metadata)` is told that vime already gives a dict; a JSON string
    stored back is told to keep the dict; numpy tokens are told to convert with `.tolist()`."""
    outcome, *_ = checked
    meta = {f.line: f.fix_hint or "" for f in _findings(outcome, "metadata_as_json_text.py")}
    assert "already a dict" in meta[4] and "json.loads" in meta[4], meta
    assert "keep `sample.metadata` a dict" in meta[8], meta
    toks = {f.line: f.fix_hint or "" for f in _findings(outcome, "tokens_as_ndarray.py")}
    assert all(".tolist()" in h for h in toks.values()) and set(toks) == {4, 5}, toks


def test_a_wider_user_annotation_gives_way_to_the_contract(
        checked: tuple[TypesOutcome, Path, dict[str, str], dict[str, str]]) -> None:
    """`sample: Sample | None` is wider than the contract's `Sample`: the body is checked with
    `Sample` (the prompt's list case is reported, a None case that cannot happen is not)."""
    outcome, *_ = checked
    (finding,) = _findings(outcome, "wider_annotation.py")
    assert '"None"' not in finding.message, finding.message


def test_every_shipped_example_is_checked() -> None:
    assert {"openai_agent.py", "calculator_rollout.py", "real_model/reward.py"} <= set(EXAMPLES)


def test_the_agent_example_needs_no_type_ignore() -> None:
    assert "type: ignore" not in (REPO / "examples" / "openai_agent.py").read_text()


@pytest.mark.parametrize("prefix", ["example_", "bare_", "clean_"])
def test_correct_example_modules_give_nothing(
        checked: tuple[TypesOutcome, Path, dict[str, str], dict[str, str]], prefix: str) -> None:
    outcome, folder, *_ = checked
    names = [p.name for p in folder.glob(f"{prefix}*.py")]
    assert names
    checked_names = {Path(r.path).name for r in outcome.results}
    for name in names:
        assert name in checked_names, f"{name}: no hook found"
        assert _findings(outcome, name) == [], [f.message for f in _findings(outcome, name)]


def test_user_files_are_never_changed(
        checked: tuple[TypesOutcome, Path, dict[str, str], dict[str, str]]) -> None:
    _, folder, before, after, _ = checked
    assert before == after
    assert sorted(p.name for p in folder.iterdir() if p.suffix == ".py") == sorted(before)


@pytest.mark.parametrize("mode", ["train", "eval"])
@pytest.mark.parametrize("value", [[["s"]], {"held_out": {}}, None, ("a", "b")])
def test_one_contract_decides_a_raw_rollout_return(value: Any, mode: str) -> None:
    """The run (VIM101), `vime-lint rollout` (VIM003) and `vime-lint types` (VIM200) give a
    raw return the severity the contract's raw_rollout_return_severity gives it."""
    from vime.contract.invariants import raw_rollout_return_severity
    from vime.rollout.base_types import check_vim101
    from vime_lint.static.rules.raw_rollout_return import _severity

    kind = type(value) if isinstance(value, (list, dict)) else None
    want = raw_rollout_return_severity(kind, mode)  # type: ignore[arg-type]
    assert want == ("warning" if (kind, mode) in ((list, "train"), (dict, "eval")) else "error")
    (v,) = check_vim101(value, evaluation=mode == "eval", name="m.generate_rollout")
    assert v.severity == want, v
    raw = {list: "a bare list", dict: "a bare dict"}.get(kind, "None")  # type: ignore[call-overload]
    assert _severity(raw, mode) == want  # type: ignore[arg-type]


def test_the_documented_agent_signature_is_not_taken_for_extra_parameters(checked: Any) -> None:
    # `evaluation` is one of the agent hook's own keywords (HookSpec.optional_kwargs): the
    # finding keeps its error and does not say "it has parameters that hook does not pass"
    outcome, *_ = checked
    (f,) = _findings(outcome, "agent_documented_signature.py")
    assert f.severity == "error", f
    assert "parameters that hook does not pass" not in f.message, f.message
    # the slime-style `log_rollout_data(rollout_id, args, rollout_data)` still is one
    (g,) = _findings(outcome, "loose_log_rollout_data.py")
    assert g.severity == "warning" and "parameters that hook does not pass" in g.message, g
