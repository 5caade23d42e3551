"""The checks the runtime always enforces, whatever ``--contract-check`` says.

A batch that breaks one of these cannot be turned into training data (or would serve a group
twice from the buffer), so the runtime raises instead of training on it. Each check here reuses
the one function of its invariant that the policy checker (:mod:`vime.contract.checks.boundaries`)
runs too; only how the findings are enforced differs. The ids are
:data:`vime.contract.invariants.ALWAYS_ENFORCED` (``Invariant.enforcement == "always"``).

Usage::

    require(conversion_problems(samples, keys, n_samples_per_prompt=8, reward_key=None))
    require(buffer_groups_problems(groups, 8, root="add_samples: samples"))

Every function returns ``list[Violation]``; :func:`require` raises the errors among them.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

from vime.contract.checks.batch import (
    OutputInfo,
    check_vim103,
    check_vim112,
    check_vim113,
    group_size_problems,
    segments_disagree,
)
from vime.contract.checks.failures import is_failed, without_failed
from vime.contract.checks.hook_results import awaitable_problem
from vime.contract.checks.locations import Loc
from vime.contract.checks.sample import check_vim108
from vime.contract.checks.settings import CheckSettings
from vime.contract.checks.shape import Leaf, Rollout, Shape, group_rollouts, read_shape
from vime.contract.checks.values import reward_problem
from vime.contract.errors import ContractError, Violation
from vime.contract.invariants import INVARIANTS
from vime.contract.reward import reward_fix
from vime.utils.types import Sample

__all__ = [
    "awaitable_result_problems",
    "buffer_groups_problems",
    "conversion_problems",
    "group_size_problems",
    "require",
    "reward_value_problems",
]


def require(found: Sequence[Violation]) -> None:
    """Raise the errors among ``found`` as one ``ContractError``; warnings pass.

    Raises:
        ContractError: at least one finding has severity ``"error"``.
    """
    errors = [v for v in found if v.severity == "error"]
    if errors:
        raise ContractError(errors)


def buffer_groups_problems(groups: Any, n: int, *, root: str) -> list[Violation]:
    """VIM102/VIM103 on groups given back to the data source's buffer: ``list[list[Sample]]``
    (depth 2 only: a fan-out list cannot be generated again), ``n`` samples per group."""
    shape, found = read_shape(groups, CheckSettings(n_samples_per_prompt=n), root=root,
                              groups_only="the buffer takes list[list[Sample]] (one list per "
                              "prompt group), which are generated again")
    errors = [v for v in found if v.severity == "error"]
    if shape is None or errors:
        return errors
    return check_vim103(shape, CheckSettings(n_samples_per_prompt=n), OutputInfo())


def reward_value_problems(samples: Sequence[Sample], reward_key: str | None) -> list[Violation]:
    """VIM110 on flat samples as conversion reads them: the first sample whose reward (or
    ``reward[--reward-key]``) is not a finite real (FAILED samples have none and are skipped)."""
    for i, smp in enumerate(samples):
        if is_failed(smp):
            continue
        found = reward_problem(smp.reward, reward_key)
        if found is not None and found[0] == "error":
            return [INVARIANTS["VIM110"].violation(Loc(f"samples[{i}]", smp.index).at("reward"),
                                                   problem=found[1],
                                                   fix=reward_fix(smp.reward, reward_key))]
    return []


def _conversion_shape(samples: Sequence[Sample], keys: Sequence[Hashable], n: int) -> Shape:
    """Flat samples as a Shape: segments with one rollout key form one rollout; rollouts are
    grouped by ``group_index`` when every sample has one, else in positional chunks of ``n``."""
    leaves = [Leaf(smp, Loc(f"samples[{i}]", smp.index)) for i, smp in enumerate(samples)]
    rollouts: dict[Hashable, Rollout] = {}
    for leaf, key in zip(leaves, keys, strict=True):
        rollout = rollouts.get(key)
        if rollout is None:
            rollouts[key] = Rollout(leaf.loc.prefix, [leaf])
        else:
            rollout.leaves.append(leaf)
    shape = Shape(depth=1, leaves=leaves)
    group_rollouts(shape, list(rollouts.values()), n,
                   by_group=lambda g: f"samples (group_index={g})",
                   chunk=lambda a, b: f"rollouts[{a}:{b}] (no group_index: positional groups)")
    return shape


def conversion_problems(samples: Sequence[Sample], keys: Sequence[Hashable], *,
                        n_samples_per_prompt: int, reward_key: str | None,
                        rewards: bool = True, grouped: bool = True) -> list[Violation]:
    """What conversion to training data needs of flat ``samples`` (``list[Sample]``; ``keys``:
    one rollout key per sample, segments of a rollout share one).

    Always: loss masks of ``response_length`` 0/1 values (VIM108), optional columns on all
    samples or none (VIM112), segments of one rollout agreeing on ``group_index`` and reward
    (VIM115). With ``rewards``: a finite real reward per sample (VIM110). With ``grouped`` (the
    rewards are normalised per prompt group): ``group_index`` on all samples or none (VIM113)
    and, without one, whole groups of ``n_samples_per_prompt`` rollouts (VIM103). FAILED
    samples (conversion zeroes their masks and leaves their rewards out) count for the group
    checks only.

    Returns:
        The findings, errors and warnings (``require`` raises the errors).
    """
    s = CheckSettings(n_samples_per_prompt=n_samples_per_prompt, reward_key=reward_key)
    out: list[Violation] = []
    for i, smp in enumerate(samples):
        if not is_failed(smp):
            out.extend(check_vim108(smp, Loc(f"samples[{i}]", smp.index), s, "train"))
    if rewards:
        out.extend(reward_value_problems(samples, reward_key))
    shape = _conversion_shape(samples, keys, n_samples_per_prompt)
    scored = without_failed(shape)
    out.extend(check_vim112(scored, s, OutputInfo()))
    if grouped:
        mixed = check_vim113(shape, s, OutputInfo())
        out.extend(mixed)
        if not mixed and any(smp.group_index is None for smp in samples):
            out.extend(check_vim103(shape, s, OutputInfo()))
    for group in scored.groups:
        for rollout in group:
            out.extend(segments_disagree(rollout.leaves))
    return out


def awaitable_result_problems(result: Any, hook_arg: str, name: str) -> list[Violation]:
    """VIM165: a sync hook (``hook_arg``) returned an awaitable (closed first)."""
    found = awaitable_problem(result, hook_arg, name)
    return [] if found is None else [found]
