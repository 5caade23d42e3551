"""The hook boundaries (B2 generate, B3 reward, B4 other hooks) as one table, and their calls.

One :class:`HookBoundary` record per boundary names the hook, the boundary, the invariant ids
and the check. The runtime's ``check_*`` calls (each honouring ``--contract-check`` and its
interval through :func:`check_boundary`) and the ``vime-lint check`` dry run
(:func:`boundary_problems`, no policy) are both built from :data:`HOOK_BOUNDARIES`.

Usage (the default rollout, per generate and reward call)::

    status_in, rl_in = sample.status, sample.response_length
    result = await generate(args, sample, sampling_params)
    check_generate_result(status_in, result, args, hook_path=path, rollout_id=rid,
                          in_response_length=rl_in)
    check_reward_result(await rm(args, sample), args, hook_path=rm_path, rollout_id=rid)
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from vime.contract.checks import hook_results as hc
from vime.contract.checks.agent import agent_result_problems
from vime.contract.checks.chat import check_generated_turns, check_vim194
from vime.contract.checks.checker import with_context
from vime.contract.checks.policy import enforce, should_check_settings
from vime.contract.checks.settings import CheckContext, CheckSettings
from vime.contract.errors import Violation
from vime.contract.hooks import BUILTIN_GENERATE_PATH
from vime.contract.invariants import Boundary

__all__ = [
    "HOOK_BOUNDARIES",
    "HookBoundary",
    "check_agent_result",
    "boundary_problems",
    "check_batch_reward_result",
    "check_boundary",
    "check_buffer_filter_result",
    "check_convert_result",
    "check_dynamic_filter_result",
    "check_generate_result",
    "check_group_rewards",
    "check_reward_post_process_result",
    "check_reward_result",
    "check_sample_hook_result",
    "check_sync_hook_result",
    "check_generated_turns_result",
    "check_token_boundaries",
    "observed_boundaries",
]


# ---- B2-B4: one record per hook boundary ---------------------------------------------------

#: ``problems(values, settings, ctx, **options)``: the findings of one boundary.
Problems = Callable[..., list[Violation]]


@dataclass(frozen=True, slots=True)
class HookBoundary:
    """One hook boundary: the hook whose result is checked, where, by what, for which ids.

    The runtime's ``check_*`` calls below and the ``vime-lint check`` dry run both go through
    :func:`boundary_problems`, so a boundary's check and its invariant ids exist once.
    """

    #: Key in :data:`HOOK_BOUNDARIES`, e.g. ``"reward_result"``.
    name: str
    #: The ``HOOKS`` dest whose result is checked, e.g. ``"custom_rm_path"``.
    hook: str
    #: ``"B2"`` (generate), ``"B3"`` (reward) or ``"B4"`` (other hooks).
    boundary: Boundary
    #: Invariant ids the check can report (each lists ``boundary`` in ``Invariant.boundaries``).
    ids: tuple[str, ...]
    #: The check: ``problems(values, settings, ctx, **options) -> list[Violation]``.
    problems: Problems
    #: What messages name when no user hook is configured (a built-in), e.g. ``--rm-type``.
    builtin: str | None = None
    #: How a caller that only has the hook's inputs builds the check's ``values`` (the
    #: ``vime-lint check`` dry run): the result, then the inputs named here, each a name in
    #: ``HOOKS[hook].params`` (e.g. ``("buffer", "num_samples")``); None where the values are
    #: not the result and some of the call's inputs (generate, reward, agent; the generic one).
    inputs: tuple[str, ...] | None = None


def _generate(v: Sequence[Any], s: CheckSettings, ctx: CheckContext, *,
              in_response_length: int = 0) -> list[Violation]:
    return hc.generate_result_problems(v[0], v[1], s, in_response_length=in_response_length)


def _reward(v: Sequence[Any], s: CheckSettings, ctx: CheckContext, *, evaluation: bool = False,
            index: int | None = None) -> list[Violation]:
    where = "reward function result" + (f" (index={index})" if index is not None else "")
    return hc.reward_result_problems(v[0], s, evaluation=evaluation, where=where)


def _batch_reward(v: Sequence[Any], s: CheckSettings, ctx: CheckContext, *,
                  evaluation: bool = False) -> list[Violation]:
    return hc.batch_reward_result_problems(v[0], v[1], s, evaluation=evaluation)


def _group_rewards(v: Sequence[Any], s: CheckSettings, ctx: CheckContext) -> list[Violation]:
    return hc.group_reward_problems(v[0], s)


def _dynamic_filter(v: Sequence[Any], s: CheckSettings, ctx: CheckContext) -> list[Violation]:
    return hc.dynamic_filter_result_problems(v[0], ctx.name)


def _buffer_filter(v: Sequence[Any], s: CheckSettings, ctx: CheckContext) -> list[Violation]:
    return hc.buffer_filter_result_problems(v[0], v[1], v[2], s, ctx.name)


def _sample_hook(v: Sequence[Any], s: CheckSettings, ctx: CheckContext) -> list[Violation]:
    return hc.sample_hook_result_problems(v[0], ctx.name)


def _post_process(v: Sequence[Any], s: CheckSettings, ctx: CheckContext) -> list[Violation]:
    return hc.reward_post_process_result_problems(v[0], v[1], ctx.name)


def _convert(v: Sequence[Any], s: CheckSettings, ctx: CheckContext) -> list[Violation]:
    return hc.convert_result_problems(v[0], v[1], ctx.name)


def _sync_hook_result(v: Sequence[Any], s: CheckSettings, ctx: CheckContext) -> list[Violation]:
    found = hc.awaitable_problem(v[0], ctx.arg, ctx.name)
    return [] if found is None else [found]


def _agent(v: Sequence[Any], s: CheckSettings, ctx: CheckContext, *, calls: int = 0,
           in_flight: int = 0, index: int | None = None, fn: Any = None) -> list[Violation]:
    return agent_result_problems(v[0], s, calls=calls, in_flight=in_flight, index=index, fn=fn)


def _token_boundaries(v: Sequence[Any], s: CheckSettings, ctx: CheckContext, *,
                      tokenizer: Any = None) -> list[Violation]:
    found = (check_vim194(tokenizer, tokens, spans=spans, text=text, where=where)
             for where, tokens, spans, text in v[0])
    return [f for f in found if f is not None]


def _generated_turns(v: Sequence[Any], s: CheckSettings, ctx: CheckContext, *,
                     tokenizer: Any = None, framing: Any = None) -> list[Violation]:
    found = (check_generated_turns(tokenizer, tokens, loss_mask=mask, response_length=length,
                                   framing=framing, where=where)
             for where, tokens, mask, length in v[0])
    return [f for f in found if f is not None]


_B2_IDS = ("VIM105", "VIM106", "VIM107", "VIM108", "VIM109", "VIM110", "VIM111", "VIM115",
           "VIM140", "VIM141")

#: Every hook boundary, by name. ``sync_result`` is generic: its hook is given per call.
HOOK_BOUNDARIES: Mapping[str, HookBoundary] = MappingProxyType({b.name: b for b in (
    HookBoundary("generate_result", "custom_generate_function_path", "B2", _B2_IDS, _generate,
                 builtin=BUILTIN_GENERATE_PATH),
    HookBoundary("reward_result", "custom_rm_path", "B3", ("VIM110", "VIM150"), _reward,
                 builtin="--rm-type"),
    HookBoundary("batch_reward_result", "custom_rm_path", "B3", ("VIM110", "VIM150"),
                 _batch_reward, builtin="--rm-type"),
    HookBoundary("group_rewards", "dynamic_sampling_filter_path", "B4", ("VIM110",),
                 _group_rewards),
    HookBoundary("dynamic_filter_result", "dynamic_sampling_filter_path", "B4",
                 ("VIM160", "VIM165"), _dynamic_filter, inputs=()),
    HookBoundary("buffer_filter_result", "buffer_filter_path", "B4", ("VIM161", "VIM165"),
                 _buffer_filter, inputs=("buffer", "num_samples")),
    HookBoundary("sample_hook_result", "rollout_sample_hook_path", "B4", ("VIM162",),
                 _sample_hook, inputs=()),
    HookBoundary("reward_post_process_result", "custom_reward_post_process_path", "B4",
                 ("VIM162", "VIM165"), _post_process, inputs=("samples",)),
    HookBoundary("convert_result", "custom_convert_samples_to_train_data_path", "B4",
                 ("VIM162", "VIM165"), _convert, inputs=("samples",)),
    HookBoundary("sync_hook_result", "", "B4", ("VIM165",), _sync_hook_result),
    HookBoundary("agent_result", "agent_function_path", "B2", ("VIM185", "VIM186", "VIM187"),
                 _agent),
    HookBoundary("token_boundaries", "agent_function_path", "B2", ("VIM194",),
                 _token_boundaries),
    HookBoundary("generated_turns_result", "custom_generate_function_path", "B2", ("VIM194",),
                 _generated_turns),
)})


def boundary_problems(name: str, *values: Any, settings: CheckSettings, ctx: CheckContext,
                      **options: Any) -> list[Violation]:
    """The findings of boundary ``name`` (a :data:`HOOK_BOUNDARIES` key) on ``values``, with
    no policy applied (the dry run and the runtime calls both use this).

    Raises:
        KeyError: ``name`` is not a boundary.
    """
    return HOOK_BOUNDARIES[name].problems(values, settings, ctx, **options)


#: Open :func:`observed_boundaries` blocks: each list receives ``(name, findings)`` per check.
_OBSERVERS: list[list[tuple[str, list[Violation]]]] = []


@contextmanager
def observed_boundaries() -> Iterator[list[tuple[str, list[Violation]]]]:
    """Record every boundary :func:`check_boundary` checks while the block runs.

    Yields a list that receives ``(name, findings)`` per check that ran (not the ones the mode
    or interval skipped), ``findings`` with their context: the ``vime-lint check`` dry run
    reads it to mark the boundary's ids as exercised by checks that ran inside vime's own code
    (the default rollout's generate, reward and agent calls) and to report their findings.
    """
    seen: list[tuple[str, list[Violation]]] = []
    _OBSERVERS.append(seen)
    try:
        yield seen
    finally:
        _OBSERVERS.remove(seen)


def check_boundary(name: str, *values: Any, args: Any, hook_path: str | None = None,
                   rollout_id: int | None = None, hook: str | None = None,
                   **options: Any) -> list[Violation]:
    """Check ``values`` at boundary ``name`` per ``--contract-check`` and its interval.

    Args:
        name: a :data:`HOOK_BOUNDARIES` key.
        values: what the check reads (the hook's result first, see each ``check_*``).
        args: the run's ``argparse.Namespace``.
        hook_path: the user hook's dotted path; None names the built-in.
        rollout_id: the step (None: always checked).
        hook: the ``HOOKS`` dest, for the generic ``sync_result`` boundary.
        options: passed to the check (``evaluation``, ``index``, ``in_response_length``).

    Returns:
        The findings, each with the hook, its argument and the step as context; ``[]`` when
        the mode or interval skips the boundary.

    Raises:
        ContractError: ``raise`` mode and at least one error.
    """
    spec = HOOK_BOUNDARIES[name]
    s = CheckSettings.from_args(args)
    if not should_check_settings(s, rollout_id, spec.boundary):
        return []
    ctx = CheckContext.for_hook(hook or spec.hook, hook_path or spec.builtin, rollout_id)
    found = spec.problems(values, s, ctx, **options)
    for seen in _OBSERVERS:
        seen.append((name, with_context(found, ctx)))
    if not found:
        return found
    return enforce(with_context(found, ctx), s.mode, ctx)


def check_generate_result(sample_in_status: Any, result: Any, args: Any, *,
                          hook_path: str | None = None, rollout_id: int | None = None,
                          in_response_length: int = 0) -> list[Violation]:
    """B2: a generate call's entry (``sample_in_status``, ``in_response_length``: the input
    sample's status and response length before the call) and its result; ``hook_path`` None
    means the built-in generate. See :func:`check_boundary`."""
    return check_boundary("generate_result", sample_in_status, result, args=args,
                          hook_path=hook_path, rollout_id=rollout_id,
                          in_response_length=in_response_length)


def check_reward_result(result: Any, args: Any, *, hook_path: str | None = None,
                        rollout_id: int | None = None, evaluation: bool = False,
                        index: int | None = None) -> list[Violation]:
    """B3: one sample's reward. See :func:`check_boundary`."""
    return check_boundary("reward_result", result, args=args, hook_path=hook_path,
                          rollout_id=rollout_id, evaluation=evaluation, index=index)


def check_batch_reward_result(result: Any, samples: Sequence[Any], args: Any, *,
                              hook_path: str | None = None, rollout_id: int | None = None,
                              evaluation: bool = False) -> list[Violation]:
    """B3: a batch reward call, ``len(samples)`` rewards. See :func:`check_boundary`."""
    return check_boundary("batch_reward_result", result, samples, args=args,
                          hook_path=hook_path, rollout_id=rollout_id, evaluation=evaluation)


def check_group_rewards(samples: Sequence[Any], args: Any, *, hook_path: str | None = None,
                        rollout_id: int | None = None) -> list[Violation]:
    """B4, before the dynamic filter: every group member has a valid reward. See
    :func:`check_boundary`."""
    return check_boundary("group_rewards", samples, args=args, hook_path=hook_path,
                          rollout_id=rollout_id)


def check_dynamic_filter_result(result: Any, args: Any, *, hook_path: str | None = None,
                                rollout_id: int | None = None) -> list[Violation]:
    """B4: the dynamic sampling filter's result. See :func:`check_boundary`."""
    return check_boundary("dynamic_filter_result", result, args=args, hook_path=hook_path,
                          rollout_id=rollout_id)


def check_buffer_filter_result(result: Any, buffer: Sequence[Any], num_samples: int, args: Any,
                               *, hook_path: str | None = None,
                               rollout_id: int | None = None) -> list[Violation]:
    """B4: the buffer filter's result against the buffer after the call. See
    :func:`check_boundary`."""
    return check_boundary("buffer_filter_result", result, buffer, num_samples, args=args,
                          hook_path=hook_path, rollout_id=rollout_id)


def check_sample_hook_result(result: Any, args: Any, *, hook_path: str | None = None,
                             rollout_id: int | None = None) -> list[Violation]:
    """B4: a sample hook's result is a Sample or None. See :func:`check_boundary`."""
    return check_boundary("sample_hook_result", result, args=args, hook_path=hook_path,
                          rollout_id=rollout_id)


def check_reward_post_process_result(result: Any, samples: Sequence[Any], args: Any, *,
                                     hook_path: str | None = None,
                                     rollout_id: int | None = None) -> list[Violation]:
    """B4: ``(raw_rewards, rewards)`` of ``len(samples)`` finite reals each. See
    :func:`check_boundary`."""
    return check_boundary("reward_post_process_result", result, samples, args=args,
                          hook_path=hook_path, rollout_id=rollout_id)


def check_convert_result(result: Any, samples: Sequence[Any], args: Any, *,
                         hook_path: str | None = None,
                         rollout_id: int | None = None) -> list[Violation]:
    """B4: the convert hook's dict of training columns. See :func:`check_boundary`."""
    return check_boundary("convert_result", result, samples, args=args, hook_path=hook_path,
                          rollout_id=rollout_id)


def check_sync_hook_result(result: Any, args: Any, *, hook: str, hook_path: str | None = None,
                           rollout_id: int | None = None) -> list[Violation]:
    """B3/B4: a sync hook (``hook``: a ``HOOKS`` dest) did not return an awaitable (a returned
    coroutine is closed). See :func:`check_boundary`."""
    return check_boundary("sync_hook_result", result, args=args, hook_path=hook_path,
                          rollout_id=rollout_id, hook=hook)


def check_agent_result(result: Any, args: Any, *, hook_path: str | None = None,
                       rollout_id: int | None = None, index: int | None = None, calls: int = 0,
                       in_flight: int = 0, fn: Any = None) -> list[Violation]:
    """B2, once per ``--agent-function-path`` run: what ``run`` returned (VIM185), the number
    of recorded model ``calls`` (VIM186; ``fn``, the agent function, names the fix) and of
    calls still ``in_flight`` when it returned (VIM187). See :func:`check_boundary`."""
    return check_boundary("agent_result", result, args=args, hook_path=hook_path,
                          rollout_id=rollout_id, index=index, calls=calls, in_flight=in_flight,
                          fn=fn)


def check_token_boundaries(trajectories: Sequence[tuple[str, Sequence[int],
                                                        Sequence[tuple[int, int]], str]],
                           tokenizer: Any, args: Any, *, hook_path: str | None = None,
                           rollout_id: int | None = None) -> list[Violation]:
    """B2, on the trajectories ``--check-token-boundaries N`` picks: each ``(where, tokens,
    spans, text)`` compared with the chat template's rendering (VIM194, a warning; see
    :func:`vime.contract.checks.chat.check_vim194`). See :func:`check_boundary`."""
    return check_boundary("token_boundaries", trajectories, args=args, hook_path=hook_path,
                          rollout_id=rollout_id, tokenizer=tokenizer)


def check_generated_turns_result(samples: Sequence[tuple[str, Sequence[int], Sequence[int], int]],
                                 tokenizer: Any, framing: Any, args: Any, *,
                                 hook_path: str | None = None,
                                 rollout_id: int | None = None) -> list[Violation]:
    """B2, on the custom multi-turn generate samples ``--check-token-boundaries N`` picks: each
    ``(where, tokens, loss_mask, response_length)`` against the chat template's
    :class:`~vime.contract.checks.chat.TurnFraming` ``framing`` (VIM194, a warning; see
    :func:`vime.contract.checks.chat.check_generated_turns`). See :func:`check_boundary`."""
    return check_boundary("generated_turns_result", samples, args=args, hook_path=hook_path,
                          rollout_id=rollout_id, tokenizer=tokenizer, framing=framing)
