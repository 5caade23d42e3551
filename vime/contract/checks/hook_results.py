"""Findings at the hook boundaries B2-B4: generate (VIM140, VIM141), reward functions (VIM150,
with VIM110 per value), dynamic filter (VIM160), buffer filter (VIM161), sample hook, reward
post-process and convert (VIM162), and sync hooks returning awaitables (VIM165).

Every function here is pure apart from closing a returned coroutine (so it never warns
"never awaited"): it returns ``list[Violation]`` without context; ``vime.contract.checks.boundaries``
adds the hook's name and step and applies ``--contract-check``.

Usage::

    status_in = sample.status
    result = await generate(args, sample, sampling_params)
    generate_result_problems(status_in, result, settings)        # B2
    reward_result_problems(await rm(args, sample), settings)       # B3

See ``docs/contract.md`` §5 (hooks) and §6b.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable, Mapping, Sequence, Sized
from typing import Any

from vime.contract.checks.batch import siblings_problems
from vime.contract.checks.locations import Loc
from vime.contract.checks.sample import check_sample
from vime.contract.checks.settings import CheckSettings
from vime.contract.checks.shape import Leaf
from vime.contract.checks.typecheck import describe_value
from vime.contract.checks.values import real_problem, reward_problem
from vime.contract.errors import Violation
from vime.contract.hooks import CONVERT_REQUIRED_KEYS, HOOKS
from vime.contract.invariants import INVARIANTS
from vime.contract.reward import reward_fix
from vime.utils.types import Sample

__all__ = [
    "awaitable_problem",
    "batch_reward_result_problems",
    "buffer_filter_result_problems",
    "convert_result_problems",
    "dynamic_filter_result_problems",
    "generate_entry_problems",
    "generate_result_problems",
    "group_reward_problems",
    "reward_post_process_result_problems",
    "reward_result_problems",
    "sample_hook_result_problems",
]

_RESUMABLE = (Sample.Status.PENDING, Sample.Status.ABORTED)


def _close(value: Any) -> None:
    if inspect.iscoroutine(value):
        value.close()


def _awaitable_text(value: Any) -> str:
    return "a coroutine" if inspect.iscoroutine(value) else f"an awaitable {type(value).__name__}"


def awaitable_problem(result: Any, hook_arg: str, name: str) -> Violation | None:
    """VIM165: a sync hook (``hook_arg``, e.g. ``--dynamic-sampling-filter-path``) returned an
    awaitable. The coroutine is closed first."""
    if not inspect.isawaitable(result):
        return None
    text = _awaitable_text(result)
    _close(result)
    return INVARIANTS["VIM165"].violation(f"{name} result", hook=hook_arg, name=name, actual=text)


# ---- B2: generate ---------------------------------------------------------------------------


def generate_status_problems(status: Any, where: str = "generate input") -> list[Violation]:
    """VIM140: generate takes a PENDING or ABORTED sample (the built-in generate always
    enforces this)."""
    if status in _RESUMABLE:
        return []
    shown = status.name if isinstance(status, Sample.Status) else repr(status)
    return [INVARIANTS["VIM140"].violation(
        where, problem=f"has status {shown}; generate takes PENDING or ABORTED samples "
        "(finished samples must not be generated again)",
        fix="for the next turn of a multi-turn generate, set sample.status = "
        "Sample.Status.PENDING before calling generate again; otherwise skip finished samples")]


def generate_entry_problems(status: Any, response_length: Any, s: CheckSettings, *,
                            where: str = "generate input") -> list[Violation]:
    """VIM140 on entry: the sample is PENDING or ABORTED, and has a response only with
    ``--partial-rollout``."""
    inv = INVARIANTS["VIM140"]
    found = generate_status_problems(status, where)
    if found:
        return found
    if isinstance(response_length, int) and response_length > 0 and not s.partial_rollout:
        return [inv.violation(where, problem=f"already has response_length={response_length} "
                              "without --partial-rollout: generate would continue stale tokens",
                              fix="discard aborted groups, or pass --partial-rollout to resume "
                              "them")]
    return []


def generate_result_problems(sample_in_status: Any, result: Any, s: CheckSettings, *,
                             in_response_length: int = 0,
                             where: str = "generate result") -> list[Violation]:
    """B2: entry status (VIM140), the result's form (VIM140: a ``Sample`` or non-empty
    ``list[Sample]``), every returned sample's fields (VIM105-VIM111, as right after
    generation), the fan-out rollout-id rule (VIM115) and a reward pre-set while a reward model
    is configured (VIM141)."""
    out = generate_entry_problems(sample_in_status, in_response_length, s,
                                  where=where.replace("result", "input"))
    inv = INVARIANTS["VIM140"]
    if isinstance(result, Sample):
        leaves = [Leaf(result, Loc(where, result.index))]
    elif isinstance(result, list) and result and all(isinstance(x, Sample) for x in result):
        leaves = [Leaf(x, Loc(f"{where}[{k}]", x.index)) for k, x in enumerate(result)]
    else:
        if inspect.isawaitable(result):
            what = f"{_awaitable_text(result)} (an inner call was not awaited)"
            _close(result)
        elif isinstance(result, list) and result:
            k = next(i for i, x in enumerate(result) if not isinstance(x, Sample))
            what = f"a list whose item {k} is {describe_value(result[k])}"
        else:
            what = "an empty list" if isinstance(result, list) else describe_value(result)
        out.append(inv.violation(where, problem=f"is {what}, expected a Sample or a non-empty "
                                 "list of Samples"))
        return out
    for leaf in leaves:
        out.extend(check_sample(leaf.sample, leaf.loc, s, "generate"))
    out.extend(siblings_problems(leaves, where))
    if s.rm_configured:
        preset = [leaf for leaf in leaves if leaf.sample.reward is not None]
        if preset:
            rm = HOOKS["custom_rm_path"].arg if s.custom_rm_path else f"--rm-type {s.rm_type}"
            out.append(INVARIANTS["VIM141"].violation(preset[0].loc.at("reward"), problem=(
                f"is already set by generate ({preset[0].sample.reward!r}) while {rm} is "
                "configured: the reward model skips rewarded samples")))
    return out


# ---- B3: reward functions -------------------------------------------------------------------


def _reward_key(s: CheckSettings, evaluation: bool) -> tuple[str | None, str]:
    if evaluation and s.eval_reward_key:
        return s.eval_reward_key, "--eval-reward-key"
    return s.reward_key, "--reward-key"


def reward_result_problems(result: Any, s: CheckSettings, *, evaluation: bool = False,
                           where: str = "reward function result") -> list[Violation]:
    """B3, one sample: None or an awaitable is VIM150; otherwise the value follows VIM110
    (finite real, or a dict with ``--reward-key``)."""
    if result is None or inspect.isawaitable(result):
        what = "None" if result is None else _awaitable_text(result)
        _close(result)
        return [INVARIANTS["VIM150"].violation(where, problem=f"is {what}; a reward function "
                                               "must return a reward on every path")]
    key, key_arg = _reward_key(s, evaluation)
    found = reward_problem(result, key, key_arg=key_arg)
    if found is None:
        return []
    return [INVARIANTS["VIM110"].violation(where, severity=found[0], problem=found[1],
                                           fix=reward_fix(result, key, key_arg=key_arg))]


def batch_reward_shape_problems(result: Any, n_samples: int, *, where: str) -> list[Violation]:
    """VIM150 for a batch reward call: a sized iterable (not str/bytes/dict/None/an awaitable,
    which is closed) of ``n_samples`` rewards. Rewards are matched to samples by position, so
    ``batched_async_rm`` enforces this whatever ``--contract-check`` says (a batch that is not
    one reward per sample cannot be paired); the boundary check reports it the same way."""
    inv = INVARIANTS["VIM150"]
    if (result is None or isinstance(result, (str, bytes, Mapping)) or inspect.isawaitable(result)
            or not isinstance(result, Sized) or not isinstance(result, Iterable)):
        what = _awaitable_text(result) if inspect.isawaitable(result) else describe_value(result)
        _close(result)
        return [inv.violation(where, problem=f"is {what}, expected a list of "
                              f"len(samples)={n_samples} rewards")]
    if len(result) != n_samples:
        return [inv.violation(where, problem=f"has {len(result)} rewards for {n_samples} "
                              "samples; rewards are matched to samples by position")]
    return []


def batch_reward_result_problems(result: Any, samples: Sequence[Any], s: CheckSettings, *,
                                 evaluation: bool = False,
                                 where: str = "batch reward function result") -> list[Violation]:
    """B3, a batch (``--group-rm`` or a fan-out list): one reward per sample
    (:func:`batch_reward_shape_problems`, VIM150), each a valid reward (VIM110)."""
    shape = batch_reward_shape_problems(result, len(samples), where=where)
    if shape:
        return shape
    items = list(result)
    key, key_arg = _reward_key(s, evaluation)
    out: list[Violation] = []
    for i, value in enumerate(items):
        found = reward_problem(value, key, key_arg=key_arg)
        if found is not None:
            index = getattr(samples[i], "index", None)
            at = f"{where}[{i}]" + (f" (index={index})" if index is not None else "")
            out.append(INVARIANTS["VIM110"].violation(at, severity=found[0], problem=found[1],
                                                      fix=reward_fix(value, key, key_arg=key_arg)))
    return out


# ---- B4: other hooks ------------------------------------------------------------------------


def group_reward_problems(samples: Sequence[Any], s: CheckSettings, *,
                          where: str = "group") -> list[Violation]:
    """VIM110 on every sample of a finished group, before the dynamic filter reads rewards."""
    out: list[Violation] = []
    for i, smp in enumerate(samples):
        leaves = smp if isinstance(smp, list) else [smp]
        for k, leaf in enumerate(leaves):
            if not isinstance(leaf, Sample):
                continue
            found = reward_problem(leaf.reward, s.reward_key)
            if found is not None:
                at = Loc(f"{where}[{i}]" + (f"[{k}]" if isinstance(smp, list) else ""),
                         leaf.index).at("reward")
                out.append(INVARIANTS["VIM110"].violation(
                    at, severity=found[0], problem=found[1],
                    fix=reward_fix(leaf.reward, s.reward_key)))
    return out


def _is_filter_output(value: Any) -> bool:
    try:
        from vime.rollout.filter_hub.base_types import DynamicFilterOutput
    except ImportError:
        return type(value).__name__ == "DynamicFilterOutput" and hasattr(value, "keep")
    return isinstance(value, DynamicFilterOutput)


def dynamic_filter_result_problems(result: Any, name: str = "dynamic sampling filter"
                                   ) -> list[Violation]:
    """VIM160: a ``DynamicFilterOutput``; another value is wrapped by its truth value (warning);
    None, an awaitable (VIM165) or a value without a clear truth value is an error."""
    inv = INVARIANTS["VIM160"]
    where = f"{name} result"
    if _is_filter_output(result):
        return []
    found = awaitable_problem(result, HOOKS["dynamic_sampling_filter_path"].arg, name)
    if found is not None:
        return [found]
    if result is None:
        return [inv.violation(where, problem="is None, which would drop every group")]
    try:
        keep = bool(result)
    except Exception as exc:  # numpy arrays, tensors: "truth value is ambiguous"
        return [inv.violation(where, problem=f"is {describe_value(result)} without a clear truth "
                              f"value ({type(exc).__name__}: {exc})")]
    return [inv.violation(where, severity="warning", problem=(
        f"is {describe_value(result)}, wrapped as DynamicFilterOutput(keep={keep})"))]


def buffer_filter_result_problems(result: Any, buffer: Sequence[Any], num_samples: int,
                                  s: CheckSettings, name: str = "buffer filter") -> list[Violation]:
    """VIM161: at most ``num_samples`` groups of ``n_samples_per_prompt``, each removed from
    ``buffer`` (the buffer after the call)."""
    inv = INVARIANTS["VIM161"]
    where = f"{name} result"
    found = awaitable_problem(result, HOOKS["buffer_filter_path"].arg, name)
    if found is not None:
        return [found]
    if not isinstance(result, list):
        return [inv.violation(where, problem=f"is {describe_value(result)}, expected "
                              "list[list[Sample]]")]
    out: list[Violation] = []
    if len(result) > num_samples:
        out.append(inv.violation(where, problem=f"has {len(result)} groups, more than "
                                 f"num_samples={num_samples}"))
    left = {id(group) for group in buffer}
    n = s.n_samples_per_prompt
    for g, group in enumerate(result):
        if not isinstance(group, list):
            out.append(inv.violation(f"{where}[{g}]", problem=f"is {describe_value(group)}, "
                                     "expected a group (list of samples)"))
            continue
        if len(group) != n:
            out.append(inv.violation(f"{where}[{g}]", problem=f"has {len(group)} samples, "
                                     f"expected n_samples_per_prompt={n}"))
        if id(group) in left:
            out.append(inv.violation(f"{where}[{g}]", problem="is still in the buffer: it "
                                     "will be served again (duplicated prompts)"))
    return out


def sample_hook_result_problems(result: Any, name: str = "sample hook") -> list[Violation]:
    """VIM162: a sample hook returns a ``Sample`` (replacement) or None (keep)."""
    if result is None or isinstance(result, Sample):
        return []
    if inspect.isawaitable(result):
        text = _awaitable_text(result)
        _close(result)
        return [INVARIANTS["VIM162"].violation(f"{name} result", problem=f"is {text} (an inner "
                                               "call was not awaited), expected a Sample or None")]
    return [INVARIANTS["VIM162"].violation(f"{name} result", problem=(
        f"is {describe_value(result)}, expected a Sample or None"))]


def reward_post_process_result_problems(result: Any, samples: Sequence[Any],
                                        name: str = "reward post-process") -> list[Violation]:
    """VIM162: ``(raw_rewards, rewards)``, each ``len(samples)`` finite reals."""
    inv = INVARIANTS["VIM162"]
    where = f"{name} result"
    found = awaitable_problem(result, HOOKS["custom_reward_post_process_path"].arg, name)
    if found is not None:
        return [found]
    if not isinstance(result, (tuple, list)) or len(result) != 2:
        return [inv.violation(where, problem=f"is {describe_value(result)}, expected a pair "
                              "(raw_rewards, rewards)")]
    out: list[Violation] = []
    for j, label in enumerate(("raw_rewards", "rewards")):
        column = result[j]
        at = f"{where}[{j}] ({label})"
        if not isinstance(column, Sequence) or isinstance(column, (str, bytes)):
            if hasattr(column, "tolist") and hasattr(column, "__len__"):
                column = column.tolist()
            else:
                out.append(inv.violation(at, problem=f"is {describe_value(column)}, expected a "
                                         "list of floats"))
                continue
        if len(column) != len(samples):
            out.append(inv.violation(at, problem=f"has {len(column)} values for {len(samples)} "
                                     "samples"))
            continue
        for i, value in enumerate(column):
            bad = real_problem(value)
            if bad is not None:
                out.append(inv.violation(f"{at}[{i}]", severity=bad[0], problem=bad[1]))
                break
    return out


def convert_result_problems(result: Any, samples: Sequence[Any],
                            name: str = "convert function") -> list[Violation]:
    """VIM162: a dict holding every key of ``CONVERT_REQUIRED_KEYS``, each a column of
    ``len(samples)`` values."""
    inv = INVARIANTS["VIM162"]
    where = f"{name} result"
    found = awaitable_problem(result, HOOKS["custom_convert_samples_to_train_data_path"].arg, name)
    if found is not None:
        return [found]
    if not isinstance(result, dict):
        return [inv.violation(where, problem=f"is {describe_value(result)}, expected a dict of "
                              "training columns")]
    out: list[Violation] = []
    missing = [k for k in CONVERT_REQUIRED_KEYS if k not in result]
    if missing:
        out.append(inv.violation(where, problem=f"is missing {', '.join(map(repr, missing))}"))
    for key in CONVERT_REQUIRED_KEYS:
        if key not in result:
            continue
        column = result[key]
        n = len(column) if hasattr(column, "__len__") else None
        if n != len(samples):
            shown = f"{n} values" if n is not None else describe_value(column)
            out.append(inv.violation(f"{where}[{key!r}]", problem=f"has {shown}, expected one "
                                     f"per sample: {len(samples)}"))
    return out
