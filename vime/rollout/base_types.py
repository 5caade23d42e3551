"""Rollout outputs and the one place that calls a rollout function.

Usage::

    out = call_rollout_fn(generate_rollout, args, rollout_id, data_source, evaluation=False)
    out.samples          # list[list[Sample]]: rollout_batch_size groups of n_samples_per_prompt
    eval_out = call_rollout_fn(fn, args, rollout_id, data_source, evaluation=True)
    eval_out.data        # {name: {"rewards": [...], "truncated": [...], "samples": [...]}}

The two output classes follow upstream slime's ``slime/rollout/base_types.py``; see
``docs/contract.md`` §3 and §4.
"""

from __future__ import annotations

import dataclasses
import inspect
import warnings
from argparse import Namespace
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cache
from typing import Any, NoReturn

from vime.config import arg
from vime.contract.errors import ContractError, Violation
from vime.contract.hooks import HOOKS
from vime.contract.invariants import INVARIANTS, LEGACY_ROLLOUT_RETURN
from vime.utils.types import Sample

__all__ = [
    "RolloutFnEvalOutput",
    "RolloutFnTrainOutput",
    "SampleGroup",
    "call_rollout_fn",
    "check_vim101",
    "dotted_name",
    "finalize_rollout_groups",
    "iter_samples",
]


@dataclass
class RolloutFnTrainOutput:
    """A train step's output.

    ``samples``: ``list[list[Sample]]``, ``rollout_batch_size`` groups of exactly
    ``n_samples_per_prompt`` samples of one prompt, sorted by first ``index``; a group element
    may itself be a non-empty ``list[Sample]`` (fan-out, depth 3). ``metrics``: flat
    ``rollout/<module>/<name>`` -> number. ``on_accepted`` is called once after conversion.
    """

    samples: list[list[Sample]] | list[list[list[Sample]]]
    metrics: dict[str, float] | None = None
    on_accepted: Callable[[], None] | None = field(default=None, repr=False, compare=False)
    sample_refs: Any = field(default=None, repr=False, compare=False)
    #: Set by finalize_rollout_groups (VIM120 reads it).
    finalized: bool = field(default=False, repr=False, compare=False)


@dataclass
class RolloutFnEvalOutput:
    """An eval step's output.

    ``data``: ``{name: {"rewards": list[float], "truncated": list[bool], "samples":
    list[Sample]}}``, one entry per eval dataset, equal-length lists (one item per generated
    sample). ``metrics`` as for train.
    """

    data: dict[str, dict[str, Any]]
    metrics: dict[str, float] | None = None


@cache
def _sample_attributes() -> frozenset[str]:
    """What a Sample has and a list has not: its fields and public methods."""
    names = {f.name for f in dataclasses.fields(Sample)}
    names.update(n for n in dir(Sample) if not n.startswith("_"))
    return frozenset(names - set(dir(list)))


class SampleGroup(list[Sample]):
    """One group from ``get_samples``: a real ``list`` of ``n_samples_per_prompt`` Samples.

    It pickles (Ray), copies, compares, serialises and type-checks as the list it is; only
    reading or setting a Sample attribute on it (``group.reward``, ``group.status = ...``)
    raises an ``AttributeError`` saying it is a group (VIM128), where a plain list said
    "'list' object has no attribute". ``group.index`` is ``list.index`` and reads as that.

    Usage::

        groups = data_source.get_samples(2)      # list[SampleGroup]
        groups[0] == list(groups[0])             # True: a list
        groups[0].reward = 1.0                   # AttributeError: VIM128 error: group ...
    """

    __slots__ = ()

    def __getattr__(self, name: str) -> NoReturn:
        if name in _sample_attributes():
            raise self._not_a_sample(name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}",
                             name=name, obj=self)

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _sample_attributes() or name == "index":
            raise self._not_a_sample(name)
        super().__setattr__(name, value)

    def _not_a_sample(self, name: str) -> AttributeError:
        inv = INVARIANTS["VIM128"]
        first = self[0] if self and isinstance(self[0], Sample) else None
        where = "group" + (f" (group_index={first.group_index})"
                           if first is not None and first.group_index is not None else "")
        message = inv.render(attr=name, n=len(self))
        return AttributeError(f"{inv.id} {inv.severity}: {where} {message}: {inv.fix}",
                              name=name, obj=self)


def iter_samples(value: Any) -> Iterator[Sample]:
    """Yield the ``Sample`` leaves of any nesting of lists/tuples (groups, fan-out lists)."""
    if isinstance(value, Sample):
        yield value
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from iter_samples(item)


def dotted_name(fn: Any) -> str:
    """``module.qualname`` of a callable (``repr`` if it has neither)."""
    module = getattr(fn, "__module__", None)
    qualname = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None)
    if module and qualname:
        return f"{module}.{qualname}"
    return repr(fn)


def _describe(value: Any) -> str:
    if inspect.iscoroutine(value):
        return "a coroutine"
    if inspect.isgenerator(value) or inspect.isasyncgen(value):
        return "a generator"
    if value is None:
        return "None"
    if isinstance(value, tuple):
        return f"a tuple of {len(value)} item(s)"
    return f"a {type(value).__module__}.{type(value).__qualname__}" if type(value).__module__ != "builtins" else f"a {type(value).__name__}"


def check_vim101(result: Any, *, evaluation: bool, name: str,
                 where: str = "rollout function") -> list[Violation]:
    """VIM101, decided once (``call_rollout_fn``, the runtime checker and ``vime-lint check``
    all call this): is ``result`` the output of its mode?

    Args:
        result: what the rollout function returned.
        evaluation: the mode it was called in.
        name: the rollout function's dotted path, for the message.
        where: the finding's location (``"rollout function"``, or ``"output"`` for a result
            checked after the call).

    Returns:
        ``[]`` for ``RolloutFnTrainOutput`` with a list ``samples`` (train) or
        ``RolloutFnEvalOutput`` with a dict ``data`` (eval); one warning for the legacy bare
        list (train) or dict (eval), which callers wrap; one error naming what came back and
        the fix otherwise (an awaitable, a generator, None, a tuple, the other mode's output,
        a wrong payload, anything else).
    """
    inv = INVARIANTS["VIM101"]
    mode = "eval" if evaluation else "train"

    def found(hint: str, fix: str | None = None, *, legacy: bool = False) -> list[Violation]:
        return [inv.violation(where, severity="warning" if legacy else None, name=name,
                              mode=mode, actual=_describe(result), hint=hint, fix=fix)]

    if evaluation:
        if isinstance(result, RolloutFnEvalOutput) and isinstance(result.data, dict):
            return []
        if isinstance(result, LEGACY_ROLLOUT_RETURN[mode]):
            return found("legacy form, wrapped with a DeprecationWarning",
                         "return RolloutFnEvalOutput(data=...)", legacy=True)
    else:
        if isinstance(result, RolloutFnTrainOutput) and isinstance(result.samples, list):
            return []
        if isinstance(result, LEGACY_ROLLOUT_RETURN[mode]):
            return found("legacy form, wrapped with a DeprecationWarning",
                         "return RolloutFnTrainOutput(samples=...)", legacy=True)
    if inspect.isawaitable(result):
        return found("it is an async def; rollout functions are called synchronously",
                     "declare it with plain `def` and run async work through "
                     "vime.utils.async_utils.run(coro)")
    if inspect.isgenerator(result) or inspect.isasyncgen(result):
        return found("it contains `yield`; return the whole output at once",
                     "build the list of groups and return RolloutFnTrainOutput(samples=groups)")
    if evaluation and isinstance(result, (RolloutFnTrainOutput, list)):
        return found("the eval path (evaluation=True) must return RolloutFnEvalOutput",
                     "branch on `evaluation` and return RolloutFnEvalOutput(data=...)")
    if not evaluation and isinstance(result, (RolloutFnEvalOutput, dict)):
        return found("the train path (evaluation=False) must return RolloutFnTrainOutput")
    expected = "RolloutFnEvalOutput" if evaluation else "RolloutFnTrainOutput"
    if isinstance(result, (RolloutFnTrainOutput, RolloutFnEvalOutput)):
        field_name = "data" if evaluation else "samples"
        return found(f"its `{field_name}` is {_describe(getattr(result, field_name))}, "
                     f"expected a {'dict' if evaluation else 'list'}")
    return found(f"expected {expected}")


def call_rollout_fn(fn: Callable[..., Any], *args: Any, evaluation: bool, **kwargs: Any) -> (
    RolloutFnTrainOutput | RolloutFnEvalOutput
):
    """Call ``fn(*args, **kwargs, evaluation=evaluation)`` and normalise its result.

    Train mode accepts ``RolloutFnTrainOutput`` and, with a ``DeprecationWarning``, a bare list
    (wrapped as ``samples``); eval mode accepts ``RolloutFnEvalOutput`` and, with a warning, a
    bare dict (wrapped as ``data``). The decision is :func:`check_vim101`'s.

    Raises:
        ContractError: VIM101, naming ``fn``'s dotted path, the mode and what it returned, for
            an awaitable (closed first), generator, None, tuple, the other mode's output or
            anything else.
    """
    result = fn(*args, **kwargs, evaluation=evaluation)
    name = dotted_name(fn)
    found = check_vim101(result, evaluation=evaluation, name=name)
    if inspect.iscoroutine(result):
        result.close()
    if not found:
        return result  # type: ignore[no-any-return]
    if found[0].severity == "error":
        raise ContractError(found)
    mode = "eval" if evaluation else "train"
    wrapped = "RolloutFnEvalOutput(data=...)" if evaluation else "RolloutFnTrainOutput(samples=...)"
    warnings.warn(f"rollout function `{name}` returned a bare {'dict' if evaluation else 'list'} "
                  f"in {mode} mode; return {wrapped} instead", DeprecationWarning, stacklevel=2)
    return RolloutFnEvalOutput(data=result) if evaluation else RolloutFnTrainOutput(samples=result)


def finalize_rollout_groups(
    args: Namespace,
    rollout_id: int,
    groups: list[list[Sample]],
    metrics: dict[str, Any] | None = None,
    *,
    controller: Any = None,
) -> RolloutFnTrainOutput:
    """Sort groups by first-leaf ``index`` (None as 0), run ``--rollout-sample-filter-path``
    once, and return a finalised ``RolloutFnTrainOutput``.

    Custom rollouts should return through this so the configured hooks run (VIM120).

    Raises:
        ContractError: the sample filter's path cannot be loaded or its signature is wrong.
    """
    def first_index(group: list[Sample]) -> int:
        leaf = next(iter_samples(group), None)
        return leaf.index if leaf is not None and leaf.index is not None else 0

    groups = sorted(groups, key=first_index)
    path = arg(args, "rollout_sample_filter_path")
    if path:
        from vime.utils.misc import load_function

        sample_filter = load_function(path, hook="rollout_sample_filter_path")
        from vime.contract.checks.enforced import awaitable_result_problems, require

        require(awaitable_result_problems(sample_filter(args, groups),
                                          HOOKS["rollout_sample_filter_path"].arg,
                                          dotted_name(sample_filter)))
    return RolloutFnTrainOutput(samples=groups, metrics=metrics, finalized=True)
