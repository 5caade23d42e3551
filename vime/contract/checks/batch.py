"""Batch invariants of the train output (B5) and its metrics (B1): one function per id.

Each ``check_vimXXX(shape, settings, info)`` looks at the whole step: group sizes (VIM103),
group count (VIM104), all-or-none columns (VIM112), ``group_index`` (VIM113), ``index``
(VIM114), the fan-out rollout-id rule (VIM115), JSON metadata (VIM116), constant rewards
(VIM117), labels for label-based rewards (VIM118), ``finalize_rollout_groups`` (VIM120), one
reward kind (VIM121), no shared mutable objects (VIM123), one prompt per group (VIM125) and
weight versions on all samples or none (VIM126).
``check_metrics`` is VIM119 (B1, also for eval output).

Usage::

    shape, found = read_shape(output.samples, settings)
    info = OutputInfo(is_default_rollout=False, finalized=output.finalized)
    for check in BATCH_CHECKS.values():
        found += check(shape, settings, info)

See ``docs/contract.md`` §3 (shape, rollout-id rule) and §6b.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from vime.contract.checks.settings import CheckSettings
from vime.contract.checks.shape import Leaf, Shape
from vime.contract.checks.typecheck import describe_value
from vime.contract.checks.values import (
    array_number,
    is_finite_real,
    json_problem,
    keyed_reward,
    real_problem,
)
from vime.contract.errors import Violation
from vime.contract.hooks import HOOKS
from vime.contract.invariants import INVARIANTS
from vime.contract.sample import OPTIONAL_COLUMNS

__all__ = [
    "BATCH_CHECKS",
    "LABEL_BASED_RM_TYPES",
    "OutputInfo",
    "RESERVED_METRIC_PREFIXES",
    "check_metrics",
]

#: Built-in ``--rm-type`` values that compare the response with ``label`` (a ``boxed_``
#: prefix keeps the base type's needs). Source: docs/contract.md §5 (built-in RMs).
LABEL_BASED_RM_TYPES: frozenset[str] = frozenset(
    {"deepscaler", "dapo", "math", "f1", "gpqa", "ifbench"})

#: Metric key prefixes that vime's own metrics use and a user metric must not take.
RESERVED_METRIC_PREFIXES: tuple[str, ...] = ("perf/",)


@dataclass(frozen=True, slots=True)
class OutputInfo:
    """Facts about the train output besides its samples."""

    #: The rollout is vime's default (VIM104 is an error; else a warning).
    is_default_rollout: bool = False
    #: The output came through ``finalize_rollout_groups`` (VIM120).
    finalized: bool = False


BatchCheck = Callable[[Shape, CheckSettings, OutputInfo], list[Violation]]


def check_vim103(shape: Shape, s: CheckSettings, info: OutputInfo) -> list[Violation]:
    """VIM103: each group has exactly ``n_samples_per_prompt`` elements."""
    return group_size_problems([len(g) for g in shape.groups], s.n_samples_per_prompt,
                               shape.group_prefixes)


def group_size_problems(sizes: Sequence[int], n: int, prefixes: Sequence[str]) -> list[Violation]:
    """VIM103 on group sizes (elements per group; group ``g`` is at ``prefixes[g]``): each is
    exactly ``n`` (``--n-samples-per-prompt``)."""
    inv = INVARIANTS["VIM103"]
    return [inv.violation(prefix, actual=size, expected=n)
            for prefix, size in zip(prefixes, sizes, strict=True) if size != n]


def check_vim104(shape: Shape, s: CheckSettings, info: OutputInfo) -> list[Violation]:
    """VIM104: exactly ``rollout_batch_size`` groups (error for the default rollout, warning
    for a custom one)."""
    expected = s.rollout_batch_size
    if expected is None or len(shape.groups) == expected:
        return []
    return [INVARIANTS["VIM104"].violation(
        "samples", severity="error" if info.is_default_rollout else "warning",
        actual=len(shape.groups), expected=expected)]


def _has_column(leaf: Leaf, column: str) -> bool:
    if column.startswith("metadata."):
        meta = leaf.sample.metadata
        return isinstance(meta, dict) and column.partition(".")[2] in meta
    return getattr(leaf.sample, column, None) is not None


def check_vim112(shape: Shape, s: CheckSettings, info: OutputInfo) -> list[Violation]:
    """VIM112: each column of ``OPTIONAL_COLUMNS`` is set on every sample or on none."""
    out: list[Violation] = []
    leaves = shape.leaves
    if not leaves:
        return out
    for column in OPTIONAL_COLUMNS:
        flags = [_has_column(leaf, column) for leaf in leaves]
        present = sum(flags)
        if 0 < present < len(flags):
            first = flags[0]
            odd = leaves[flags.index(not first)]
            detail = (f"{leaves[0].loc.prefix} has it, {odd.loc.prefix} does not" if first
                      else f"{leaves[0].loc.prefix} lacks it, {odd.loc.prefix} has it")
            out.append(INVARIANTS["VIM112"].violation(
                odd.loc.at(column), field=column, present=present, total=len(flags),
                detail=detail))
    return out


def check_vim113(shape: Shape, s: CheckSettings, info: OutputInfo) -> list[Violation]:
    """VIM113: ``group_index`` on all samples or none; equal within a group, distinct across
    groups."""
    inv = INVARIANTS["VIM113"]
    leaves = shape.leaves
    set_flags = [leaf.sample.group_index is not None for leaf in leaves]
    n_set = sum(set_flags)
    if n_set == 0:
        return []
    if n_set < len(leaves):
        odd = leaves[set_flags.index(False)]
        return [inv.violation(odd.loc.at("group_index"), problem=f"is None but {n_set} of "
                              f"{len(leaves)} samples have a group_index (all or none)")]
    out: list[Violation] = []
    owner: dict[Any, str] = {}
    for prefix, group in zip(shape.group_prefixes, shape.groups, strict=True):
        group_leaves = [leaf for rollout in group for leaf in rollout.leaves]
        if not group_leaves:
            continue
        first = group_leaves[0].sample.group_index
        other = next((leaf for leaf in group_leaves if leaf.sample.group_index != first), None)
        if other is not None:
            out.append(inv.violation(other.loc.at("group_index"), problem=(
                f"is {other.sample.group_index} but {group_leaves[0].loc.prefix} of the same group "
                f"has {first}")))
            continue
        if first in owner and shape.depth != 1:
            out.append(inv.violation(prefix, problem=f"uses group_index={first}, already used by "
                                     f"{owner[first]}: group_index must be distinct across groups"))
        owner.setdefault(first, prefix)
    return out


def check_vim114(shape: Shape, s: CheckSettings, info: OutputInfo) -> list[Violation]:
    """VIM114: ``index`` unique across rollouts (fan-out siblings may share one); a mix of set
    and None warns."""
    inv = INVARIANTS["VIM114"]
    out: list[Violation] = []
    owner: dict[Any, str] = {}
    missing: list[Leaf] = []
    for group in shape.groups:
        for rollout in group:
            seen_here: set[Any] = set()
            for leaf in rollout.leaves:
                idx = leaf.sample.index
                if idx is None:
                    missing.append(leaf)
                    continue
                if idx in seen_here:
                    continue
                seen_here.add(idx)
                if idx in owner:
                    out.append(inv.violation(leaf.loc.at("index"), problem=(
                        f"index={idx} is also used by {owner[idx]}: indices must be unique "
                        "across rollouts")))
                else:
                    owner[idx] = rollout.prefix
    if missing and owner:
        out.append(inv.violation(missing[0].loc.at("index"), severity="warning", problem=(
            f"is None on {len(missing)} of {len(shape.leaves)} samples while the others have "
            "one")))
    return out


def check_vim115(shape: Shape, s: CheckSettings, info: OutputInfo) -> list[Violation]:
    """VIM115: the rollout-id rule. Fan-out siblings (a leaf list of > 1 samples) have equal
    non-None ``rollout_id`` s and share ``group_index`` and ``reward``; distinct rollouts
    reusing a ``rollout_id`` warn."""
    inv = INVARIANTS["VIM115"]
    out: list[Violation] = []
    owner: dict[Any, str] = {}
    for group in shape.groups:
        for rollout in group:
            leaves = rollout.leaves
            out.extend(siblings_problems(leaves, rollout.prefix))
            rid = leaves[0].sample.rollout_id
            if rid is None:
                continue
            if rid in owner:
                out.append(inv.violation(leaves[0].loc.at("rollout_id"), severity="warning",
                                         problem=f"rollout_id={rid} is also used by "
                                         f"{owner[rid]}, a different rollout"))
            else:
                owner[rid] = rollout.prefix
    return out


def siblings_problems(leaves: list[Leaf], prefix: str) -> list[Violation]:
    """VIM115 on one fan-out list: equal non-None ``rollout_id``, same ``group_index`` and
    ``reward``. A single leaf has no siblings and passes."""
    if len(leaves) < 2:
        return []
    inv = INVARIANTS["VIM115"]
    ids = [leaf.sample.rollout_id for leaf in leaves]
    if None in ids:
        k = ids.index(None)
        return [inv.violation(leaves[k].loc.at("rollout_id"), problem=(
            f"is None but {prefix} is a fan-out of {len(leaves)} samples: siblings must share "
            "a non-None rollout_id"))]
    first = leaves[0].sample
    for leaf in leaves[1:]:
        smp = leaf.sample
        if smp.rollout_id != first.rollout_id:
            return [inv.violation(leaf.loc.at("rollout_id"), problem=(
                f"is {smp.rollout_id} but its sibling {leaves[0].loc.prefix} has "
                f"{first.rollout_id}"))]
    return segments_disagree(leaves)


def segments_disagree(leaves: list[Leaf]) -> list[Violation]:
    """VIM115 on the segments of one rollout (fan-out siblings, or flat samples sharing a
    rollout key at conversion): the same ``group_index`` and ``reward`` on every segment."""
    inv = INVARIANTS["VIM115"]
    first = leaves[0].sample
    for leaf in leaves[1:]:
        smp = leaf.sample
        if smp.group_index != first.group_index:
            return [inv.violation(leaf.loc.at("group_index"), problem=(
                f"is {smp.group_index} but its sibling {leaves[0].loc.prefix} has "
                f"{first.group_index}: fan-out siblings share group_index"))]
        if smp.reward != first.reward:
            return [inv.violation(leaf.loc.at("reward"), problem=(
                f"is {smp.reward!r} but its sibling {leaves[0].loc.prefix} has {first.reward!r}: "
                "fan-out siblings share the rollout's reward"))]
    return []


def check_vim116(shape: Shape, s: CheckSettings, info: OutputInfo) -> list[Violation]:
    """VIM116: ``metadata`` and ``train_metadata`` pass ``json.dumps`` (first bad path named)."""
    inv = INVARIANTS["VIM116"]
    out: list[Violation] = []
    for leaf in shape.leaves:
        for name in ("metadata", "train_metadata"):
            value = getattr(leaf.sample, name, None)
            if not value:
                continue
            problem = json_problem(value)
            if problem is not None:
                out.append(inv.violation(leaf.loc.at(name), problem=problem))
    return out


def check_vim117(shape: Shape, s: CheckSettings, info: OutputInfo) -> list[Violation]:
    """VIM117: rewards are not all identical across the batch (warning; skipped for SFT)."""
    if s.loss_type == "sft_loss" or len(shape.leaves) < 2:
        return []
    values = [keyed_reward(leaf.sample.reward, s.reward_key) for leaf in shape.leaves]
    if not all(map(is_finite_real, values)):
        return []
    if min(values) != max(values):
        return []
    return [INVARIANTS["VIM117"].violation("samples[*].reward", count=len(values),
                                           value=values[0])]


def _rm_type_of(leaf: Leaf, default: str | None) -> Any:
    meta = leaf.sample.metadata
    if isinstance(meta, dict) and meta.get("rm_type"):
        return meta["rm_type"]
    return default


def _label_based(rm_type: Any) -> bool:
    if not isinstance(rm_type, str):
        return False
    base = rm_type.removeprefix("boxed_")
    return base in LABEL_BASED_RM_TYPES


def check_vim118(shape: Shape, s: CheckSettings, info: OutputInfo) -> list[Violation]:
    """VIM118: a label-based ``--rm-type`` (or per-sample ``metadata["rm_type"]``) with
    ``--label-key`` unset or every label None (warning)."""
    needy = [leaf for leaf in shape.leaves if _label_based(_rm_type_of(leaf, s.rm_type))]
    if not needy:
        return []
    inv = INVARIANTS["VIM118"]
    rm = _rm_type_of(needy[0], s.rm_type)
    if all(leaf.sample.label is None for leaf in needy):
        return [inv.violation("samples[*].label", problem=(
            f"is None on all {len(needy)} samples scored by the label-based reward "
            f"{rm!r}; every reward will be 0"))]
    if not s.label_key:
        return [inv.violation("--label-key", problem=(
            f"is not set but the reward {rm!r} compares responses with labels"))]
    return []


def check_vim120(shape: Shape, s: CheckSettings, info: OutputInfo) -> list[Violation]:
    """VIM120: with a sample filter or all-samples hook configured, a custom rollout's output
    came through ``finalize_rollout_groups`` (warning)."""
    if info.is_default_rollout or info.finalized:
        return []
    hooks = [HOOKS[dest].arg for dest, path in (
        ("rollout_sample_filter_path", s.rollout_sample_filter_path),
        ("rollout_all_samples_process_path", s.rollout_all_samples_process_path)) if path]
    if not hooks:
        return []
    return [INVARIANTS["VIM120"].violation("output", problem=(
        f"did not come through finalize_rollout_groups, so {' and '.join(hooks)} never ran"))]


def _reward_kind(reward: Any) -> str | None:
    """``"dict"``, ``"number"`` (a real, bool, or numpy/torch number) or None (None, a str, ...:
    VIM110's)."""
    if type(reward) is float or type(reward) is int:
        return "number"
    if isinstance(reward, Mapping):
        return "dict"
    if isinstance(reward, numbers.Real) or array_number(reward) is not None:
        return "number"
    return None


def check_vim121(shape: Shape, s: CheckSettings, info: OutputInfo) -> list[Violation]:
    """VIM121: the rewards of the batch are all numbers or all dicts, never a mix (the counts
    and the first sample of each kind are named)."""
    first: dict[str, Leaf] = {}
    counts = {"number": 0, "dict": 0}
    for leaf in shape.leaves:
        kind = _reward_kind(leaf.sample.reward)
        if kind is not None:
            counts[kind] += 1
            first.setdefault(kind, leaf)
    if not (counts["number"] and counts["dict"]):
        return []
    odd = "dict" if counts["dict"] <= counts["number"] else "number"
    return [INVARIANTS["VIM121"].violation(first[odd].loc.at("reward"), problem=(
        f"mixes reward kinds in one batch: {counts['number']} samples have a number (first: "
        f"{first['number'].loc.at()}), {counts['dict']} a dict (first: {first['dict'].loc.at()})"
        f"; with --reward-key={s.reward_key!r} upstream reads "
        + ("reward[key], which fails on a number" if s.reward_key else
           "the bare value, which fails on a dict")))]


#: Fields that must be a sample's own object (VIM123); ``metadata`` may be shared by fan-out
#: siblings (one rollout), the per-token lists may not.
PER_SAMPLE_OBJECTS: tuple[str, ...] = ("metadata", "tokens", "loss_mask", "rollout_log_probs",
                                       "teacher_log_probs")


def check_vim123(shape: Shape, s: CheckSettings, info: OutputInfo) -> list[Violation]:
    """VIM123: no two samples hold the same list/dict object in :data:`PER_SAMPLE_OBJECTS`
    (by ``id()``, O(samples)); fan-out siblings may share ``metadata``. A Sample object that
    appears twice is named once."""
    inv = INVARIANTS["VIM123"]
    out: list[Violation] = []
    owners: dict[int, tuple[str, Leaf, int]] = {}
    seen: dict[int, Leaf] = {}
    number = 0
    for group in shape.groups:
        for rollout in group:
            number += 1
            for leaf in rollout.leaves:
                smp = leaf.sample
                twin = seen.get(id(smp))
                if twin is not None:
                    out.append(inv.violation(leaf.loc.at(), problem=(
                        f"is the same Sample object as {twin.loc.at()}: every field is shared")))
                    continue
                seen[id(smp)] = leaf
                for name in PER_SAMPLE_OBJECTS:
                    value = getattr(smp, name, None)
                    if not isinstance(value, (list, dict)):
                        continue
                    hit = owners.setdefault(id(value), (name, leaf, number))
                    if hit[1] is leaf:
                        continue
                    other, other_leaf, other_number = hit
                    if name == other == "metadata" and other_number == number:
                        continue  # fan-out siblings: one rollout's metadata
                    kind = "dict" if isinstance(value, dict) else "list"
                    same = f"its {other}" if other != name else other
                    out.append(inv.violation(leaf.loc.at(name), problem=(
                        f"is the same {kind} object (id {id(value):#x}) as {same} of "
                        f"{other_leaf.loc.at()}: a write to one changes both")))
    return out


def _prompt_of(smp: Any) -> list[int] | None:
    toks, rl = smp.tokens, smp.response_length
    if type(toks) is not list or type(rl) is not int or not 0 < rl <= len(toks):
        return None  # VIM106/VIM107 report it
    return toks[:len(toks) - rl]


def _names(leaves: list[Leaf], limit: int = 4) -> str:
    shown = ", ".join(leaf.loc.at() for leaf in leaves[:limit])
    return shown + (f" and {len(leaves) - limit} more" if len(leaves) > limit else "")


def check_vim125(shape: Shape, s: CheckSettings, info: OutputInfo) -> list[Violation]:
    """VIM125: every sample of a group (the first leaf of each fan-out rollout) has the same
    prompt ``tokens[:len(tokens) - response_length]``: prefix lengths first, then C-level
    list comparisons, one per sample while the group has one prompt."""
    inv = INVARIANTS["VIM125"]
    out: list[Violation] = []
    for prefix, group in zip(shape.group_prefixes, shape.groups, strict=True):
        prompts: list[tuple[list[int], list[Leaf]]] = []
        for rollout in group:
            leaf = rollout.leaves[0]
            prompt = _prompt_of(leaf.sample)
            if prompt is None:
                continue
            for known, members in prompts:
                if len(known) == len(prompt) and known == prompt:
                    members.append(leaf)
                    break
            else:
                prompts.append((prompt, [leaf]))
        if len(prompts) < 2:
            continue
        (a, a_members), (b, b_members) = prompts[0], prompts[1]
        at = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y),
                  min(len(a), len(b)))
        clusters = "; ".join(f"{_names(members)} ({len(p)} prompt tokens)"
                             for p, members in prompts)
        out.append(inv.violation(prefix, problem=(
            f"holds {len(prompts)} different prompts (tokens[:len(tokens) - response_length]): "
            f"{clusters}; {a_members[0].loc.prefix} and {b_members[0].loc.prefix} first differ "
            f"at token {at}")))
    return out


def check_vim126(shape: Shape, s: CheckSettings, info: OutputInfo) -> list[Violation]:
    """VIM126 (warning): ``weight_versions`` is non-empty on every sample of the step or on
    none (the first sample with and without them named)."""
    leaves = shape.leaves
    flags = [bool(leaf.sample.weight_versions) for leaf in leaves]
    present = sum(flags)
    if present == 0 or present == len(flags):
        return []
    with_v, without = leaves[flags.index(True)], leaves[flags.index(False)]
    return [INVARIANTS["VIM126"].violation(without.loc.at("weight_versions"), problem=(
        f"is empty but {present} of {len(flags)} samples carry weight versions (e.g. "
        f"{with_v.loc.at()}: {list(with_v.sample.weight_versions)!r}): the staleness metrics "
        "and pop_oldest see only part of the step"))]


#: Every batch check of the train output, keyed by invariant id, in id order.
BATCH_CHECKS: dict[str, BatchCheck] = {
    "VIM103": check_vim103,
    "VIM104": check_vim104,
    "VIM112": check_vim112,
    "VIM113": check_vim113,
    "VIM114": check_vim114,
    "VIM115": check_vim115,
    "VIM116": check_vim116,
    "VIM117": check_vim117,
    "VIM118": check_vim118,
    "VIM120": check_vim120,
    "VIM121": check_vim121,
    "VIM123": check_vim123,
    "VIM125": check_vim125,
    "VIM126": check_vim126,
}


def _metric_value_fix(value: Any) -> str:
    """The fix for a metric value that is not a finite real (VIM119), by what it is."""
    if hasattr(value, "item"):
        return "log a Python float: call .item() on the tensor or array (or float(...))"
    if isinstance(value, (str, bytes)):
        return "log a number, not text (put text in sample.metadata instead)"
    if isinstance(value, (list, tuple, dict)):
        return "log one number per key: reduce it (e.g. the mean) or use one key per value"
    return "log a finite float (check for division by zero, NaN or inf)"


def check_metrics(metrics: Any, *, where: str = "metrics",
                  builtin_keys: Collection[str] = ()) -> list[Violation]:
    """VIM119 (warning): ``metrics`` is None or a flat dict of finite reals (bools allowed)
    whose keys contain ``/`` and clash with no built-in key (``builtin_keys``, or the
    ``perf/`` prefix)."""
    if metrics is None:
        return []
    inv = INVARIANTS["VIM119"]
    if not isinstance(metrics, dict):
        return [inv.violation(where, problem=f"is {describe_value(metrics)}, expected "
                              "dict[str, number] or None",
                              fix="return metrics as {'rollout/<module>/<name>': float} or None")]
    out: list[Violation] = []
    for key, value in metrics.items():
        at = f"{where}[{key!r}]"
        if not isinstance(key, str):
            out.append(inv.violation(at, problem=f"key is {describe_value(key)}, expected str"))
            continue
        if "/" not in key:
            out.append(inv.violation(at, problem="key has no '/': it may collide with built-in "
                                     "metrics"))
        elif key in builtin_keys or key.startswith(RESERVED_METRIC_PREFIXES):
            out.append(inv.violation(at, problem="key clashes with a built-in metric, which "
                                     "overwrites it"))
        if not (isinstance(value, bool) or is_finite_real(value)):
            found = real_problem(value)
            text = found[1] if found else f"is {describe_value(value)}"
            out.append(inv.violation(at, problem=f"value {text}", fix=_metric_value_fix(value)))
    return out
