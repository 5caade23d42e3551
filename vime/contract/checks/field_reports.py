"""Invariants VIM170-VIM177: failures reported in other RL frameworks, checked on the train output.

Each id is a mistake that silently trained on a wrong or empty signal in another framework
(the records in ``vime.contract.invariants`` cite the threads). They run at boundary B5 only,
after the core batch checks: ``collect_train_samples`` calls :func:`check_field_reports`.

- Per sample, ``check_vimXXX(sample, loc, settings, stage)``: a COMPLETED sample at the
  response budget (VIM170), runs of placeholder 0.0 log-probs on trainable tokens (VIM173),
  a doubled BOS token (VIM176, an error).
- Per batch, ``check_vimXXX(shape, settings, info)``: no reward spread in any group (VIM171),
  prompts over ``--rollout-max-prompt-len`` (VIM172, first segment of each rollout), labels of
  mixed types or empty (VIM174), an empty response with the top reward (VIM175), the EOS text in
  responses (VIM177, one finding for the batch).

Cost: O(samples) Python work plus C-level scans (``0.0 in lp``, ``bytes.find``, ``str in``);
no tokenizer. VIM176/VIM177 need the tokenizer's BOS id and EOS text, which the rollout manager
puts on ``args`` (``bos_token_id``, ``eos_token_text``; see :func:`tokenizer_facts`); without
them they are skipped.

Usage::

    found = check_field_reports(shape, CheckSettings.from_args(args), OutputInfo())

See ``docs/contract.md`` §6b.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from vime.config import arg
from vime.contract.checks.batch import OutputInfo
from vime.contract.checks.locations import Loc
from vime.contract.checks.sample import Stage, mask_looks_inverted
from vime.contract.checks.settings import CheckSettings
from vime.contract.checks.shape import Leaf, Shape
from vime.contract.checks.values import is_finite_real, keyed_reward
from vime.contract.errors import Violation
from vime.contract.estimators import GROUP_BASELINE_ESTIMATORS
from vime.contract.invariants import INVARIANTS
from vime.utils.types import Sample

__all__ = [
    "FIELD_BATCH_CHECKS",
    "FIELD_SAMPLE_CHECKS",
    "PLACEHOLDER_RUN",
    "check_field_reports",
    "record_tokenizer_facts",
    "tokenizer_facts",
]

SampleCheck = Callable[[Sample, Loc, CheckSettings, Stage], list[Violation]]
BatchCheck = Callable[[Shape, CheckSettings, OutputInfo], list[Violation]]


#: Consecutive exact 0.0 log-probs on trainable tokens that count as placeholders (VIM173).
PLACEHOLDER_RUN = 8
_RUN = b"\x01" * PLACEHOLDER_RUN
_IS_ZERO = (0.0).__eq__


def tokenizer_facts(tokenizer: Any) -> dict[str, Any]:
    """What VIM170/VIM176/VIM177 need from a tokenizer: ``{"bos_token_id": int | None,
    "eos_token_id": int | None, "eos_token_text": str | None}`` (read with ``getattr``; anything
    else gives None)."""
    bos = getattr(tokenizer, "bos_token_id", None)
    eos_id = getattr(tokenizer, "eos_token_id", None)
    eos = getattr(tokenizer, "eos_token", None)
    return {"bos_token_id": bos if type(bos) is int and bos >= 0 else None,
            "eos_token_id": eos_id if type(eos_id) is int and eos_id >= 0 else None,
            "eos_token_text": eos if isinstance(eos, str) and eos else None}


def record_tokenizer_facts(args: Any) -> None:
    """Set ``args.bos_token_id`` / ``args.eos_token_id`` / ``args.eos_token_text`` from the
    ``--hf-checkpoint`` tokenizer for the runtime contract check (VIM176 doubled BOS, VIM170
    a sample stopped on EOS at the budget, VIM177 EOS text in responses, the latter only with
    ``--rollout-skip-special-tokens``); values already on ``args`` are kept. Called by the
    rollout manager in training and by ``vime-lint check`` before it reads its settings, so
    both check with the same facts. Nothing happens with ``--contract-check off``, without
    ``--hf-checkpoint`` or when no tokenizer loads from it (those checks then skip what
    needs the tokenizer; the rollout reports the tokenizer problem itself when it needs one)."""
    path = arg(args, "hf_checkpoint")
    if arg(args, "contract_check") == "off" or not path:
        return
    from vime.utils.data import load_tokenizer

    try:
        facts = tokenizer_facts(load_tokenizer(path))
    except Exception:  # an optional check must not stop the caller
        return
    if not arg(args, "rollout_skip_special_tokens"):
        # The built-in generate keeps special tokens in ``response`` on purpose then (rewards
        # read them), so EOS text there is no mistake: VIM177 applies to runs that skip them.
        facts.pop("eos_token_text", None)
    for name, value in facts.items():
        if getattr(args, name, None) is None:
            setattr(args, name, value)


def _ends_on_stop_token(sample: Sample, s: CheckSettings) -> bool:
    """True when the sample's last token is one the engine stops on: the tokenizer's EOS id
    (when known) or one of ``--rollout-stop-token-ids``. The engine then stopped on it (finish
    reason ``stop``), whatever the response length."""
    tokens = sample.tokens
    if type(tokens) is not list or not tokens:
        return False
    last = tokens[-1]
    return (s.eos_token_id is not None and last == s.eos_token_id) or last in s.stop_token_ids


# ---- per sample -----------------------------------------------------------------------------


def check_vim170(sample: Sample, loc: Loc, s: CheckSettings, stage: Stage) -> list[Violation]:
    """VIM170 (warning): a COMPLETED sample whose ``response_length`` is exactly
    ``--rollout-max-response-len``, unless its last token is a stop token (the tokenizer's EOS
    id when known, or one of ``--rollout-stop-token-ids``): the model then stopped on the last
    token of its budget, as the real-model recipe's SmolLM2-135M-Instruct can."""
    budget = s.max_response_len
    rl = sample.response_length
    if (budget is None or type(rl) is not int or rl != budget
            or sample.status is not Sample.Status.COMPLETED or _ends_on_stop_token(sample, s)):
        return []
    return [INVARIANTS["VIM170"].violation(loc.at("status"), rl=rl, budget=budget)]


def check_vim173(sample: Sample, loc: Loc, s: CheckSettings, stage: Stage) -> list[Violation]:
    """VIM173 (warning): ``PLACEHOLDER_RUN`` or more consecutive ``rollout_log_probs`` of exactly
    0.0 where ``loss_mask`` is 1 (or None). C-level: ``0.0 in lp`` first; then, per stretch of
    at least ``PLACEHOLDER_RUN`` trainable tokens (``bytes(mask).find``; masked observation
    tokens, whose log-prob is 0.0 by design, are never scanned), ``0.0 in`` the stretch and only
    then one flag byte per token (``map(0.0.__eq__)``) searched with ``bytes.find``."""
    lp = sample.rollout_log_probs
    if type(lp) is not list or len(lp) < PLACEHOLDER_RUN or 0.0 not in lp:
        return []
    if mask_looks_inverted(sample):
        return []   # VIM127 names the likelier cause: the mask is inverted
    mask = sample.loss_mask
    n = len(lp)
    if mask is None:
        spans = [(0, n)]
    else:
        if type(mask) is not list or len(mask) != n:
            return []   # VIM108 / VIM109 report the lengths
        try:
            trainable = bytes(mask)
        except (TypeError, ValueError):
            return []   # not 0/1 ints: VIM108 reports them
        spans = []
        i = trainable.find(_RUN)
        while i >= 0:
            j = trainable.find(b"\x00", i)
            j = n if j < 0 else j
            spans.append((i, j))
            i = trainable.find(_RUN, j)
    for a, b in spans:
        part = lp[a:b]
        if 0.0 not in part:
            continue
        try:
            flags = bytes(map(_IS_ZERO, part))
        except TypeError:
            return []   # not reals: VIM109 reports them
        k = flags.find(_RUN)
        if k < 0:
            continue
        end = flags.find(b"\x00", k)
        start, end = a + k, a + (len(flags) if end < 0 else end)
        where = "loss_mask 1" if mask is not None else "loss_mask None: all trainable"
        return [INVARIANTS["VIM173"].violation(loc.at("rollout_log_probs", start),
                                               run=end - start, start=start, end=end,
                                               trainable=where)]
    return []


def check_vim176(sample: Sample, loc: Loc, s: CheckSettings, stage: Stage) -> list[Violation]:
    """VIM176 (error): ``tokens`` starts with the tokenizer's BOS id twice (skipped while the BOS
    id is unknown)."""
    bos = s.bos_token_id
    toks = sample.tokens
    if bos is None or type(toks) is not list or len(toks) < 2:
        return []
    if toks[0] != bos or toks[1] != bos:
        return []
    return [INVARIANTS["VIM176"].violation(loc.at("tokens"), bos=bos)]


# ---- per batch ------------------------------------------------------------------------------


def check_vim171(shape: Shape, s: CheckSettings, info: OutputInfo) -> list[Violation]:
    """VIM171 (warning): every group (of >= 2 rollouts) has identical rewards while the batch's
    rewards differ (VIM117 covers a constant batch). Only where the advantage subtracts the group
    mean (:data:`GROUP_BASELINE_ESTIMATORS` with reward normalisation on, no custom reward
    post-processing or conversion) and ``n_samples_per_prompt > 1``."""
    if (s.n_samples_per_prompt < 2 or s.loss_type == "sft_loss" or not s.rewards_normalization
            or s.advantage_estimator not in GROUP_BASELINE_ESTIMATORS or s.custom_advantages):
        return []
    key = s.reward_key
    lo: Any = None
    hi: Any = None
    groups = 0
    for group in shape.groups:
        if len(group) < 2:
            continue
        values = [keyed_reward(rollout.leaves[0].sample.reward, key) for rollout in group]
        if not all(map(is_finite_real, values)):
            return []   # VIM110 reports them
        g_lo, g_hi = min(values), max(values)
        if g_lo != g_hi:
            return []
        groups += 1
        lo = g_lo if lo is None else min(lo, g_lo)
        hi = g_hi if hi is None else max(hi, g_hi)
    if groups < 2 or lo == hi:
        return []
    return [INVARIANTS["VIM171"].violation("samples[*].reward", groups=groups, lo=lo, hi=hi,
                                           estimator=s.advantage_estimator)]


def check_vim172(shape: Shape, s: CheckSettings, info: OutputInfo) -> list[Violation]:
    """VIM172 (warning): the prompt part ``len(tokens) - response_length`` of each rollout's
    first sample exceeds ``--rollout-max-prompt-len`` (later fan-out segments carry earlier
    turns as prompt and are not checked)."""
    limit = s.max_prompt_len
    if limit is None:
        return []
    inv = INVARIANTS["VIM172"]
    out: list[Violation] = []
    for group in shape.groups:
        for rollout in group:
            leaf = rollout.leaves[0]
            toks, rl = leaf.sample.tokens, leaf.sample.response_length
            if type(toks) is not list or type(rl) is not int:
                continue
            prompt = len(toks) - rl
            if prompt > limit:
                out.append(inv.violation(leaf.loc.at("tokens"), prompt=prompt, n=len(toks),
                                         rl=rl, limit=limit))
    return out


def _first_loc(leaf: Leaf) -> str:
    return leaf.loc.at()


def check_vim174(shape: Shape, s: CheckSettings, info: OutputInfo) -> list[Violation]:
    """VIM174 (warning): the batch's non-None labels are of more than one type, or some string
    labels are empty or whitespace only (one finding each, naming counts and first samples)."""
    counts: dict[str, int] = {}
    first: dict[str, Leaf] = {}
    empty: list[Leaf] = []
    for leaf in shape.leaves:
        label = leaf.sample.label
        if label is None:
            continue
        name = type(label).__name__
        if name in counts:
            counts[name] += 1
        else:
            counts[name] = 1
            first[name] = leaf
        if isinstance(label, str) and (not label or label.isspace()):
            empty.append(leaf)
    labelled = sum(counts.values())
    inv = INVARIANTS["VIM174"]
    out: list[Violation] = []
    if len(counts) > 1:
        kinds = sorted(counts, key=lambda k: (-counts[k], k))
        odd = first[kinds[-1]]
        detail = "; ".join(f"{k}: {counts[k]}, first {_first_loc(first[k])}" for k in kinds)
        out.append(inv.violation(odd.loc.at("label"), problem=(
            f"is {kinds[-1]} ({odd.sample.label!r}) while the batch mixes label types "
            f"({detail}): a reward function written for one type fails or mis-scores the "
            "other")))
    if empty:
        out.append(inv.violation(empty[0].loc.at("label"), problem=(
            f"is {empty[0].sample.label!r} (empty or whitespace only), as on {len(empty)} of "
            f"{labelled} labelled samples: the reward compares responses with nothing"),
            fix="drop records without an answer, or point --label-key at the answer column"))
    return out


def _empty_response(sample: Sample, eos: str | None) -> bool:
    if sample.response_length == 0:
        return True
    text = sample.response
    if not isinstance(text, str):
        return False
    if eos and eos in text:
        text = text.replace(eos, "")
    return not text or text.isspace()


def check_vim175(shape: Shape, s: CheckSettings, info: OutputInfo) -> list[Violation]:
    """VIM175 (warning): a trainable sample with an empty (or whitespace-only, EOS text aside)
    response, or ``response_length == 0``, has the batch's maximum reward while max > min.
    Skipped when no response of the batch has text (a rollout that fills only tokens)."""
    leaves = shape.leaves
    if len(leaves) < 2:
        return []
    values = [keyed_reward(leaf.sample.reward, s.reward_key) for leaf in leaves]
    if not all(map(is_finite_real, values)):
        return []
    hi, lo = max(values), min(values)
    if hi == lo:
        return []
    eos = s.eos_token_text
    top = [leaf for leaf, v in zip(leaves, values, strict=True) if v == hi]
    hits = [leaf for leaf in top
            if not leaf.sample.remove_sample and _empty_response(leaf.sample, eos)]
    if not hits or not any(not _empty_response(leaf.sample, eos) for leaf in leaves):
        return []   # no response has text: the rollout fills tokens only, the text says nothing
    smp = hits[0].sample
    return [INVARIANTS["VIM175"].violation(
        hits[0].loc.at("response"), response=smp.response, rl=smp.response_length, hi=hi,
        lo=lo, count=len(hits), top=len(top))]


def check_vim177(shape: Shape, s: CheckSettings, info: OutputInfo) -> list[Violation]:
    """VIM177 (warning): responses contain the literal EOS text (one finding for the batch,
    at the first such sample; skipped while the EOS text is unknown)."""
    text = s.eos_token_text
    if not text:
        return []
    hits = [leaf for leaf in shape.leaves
            if isinstance(leaf.sample.response, str) and text in leaf.sample.response]
    if not hits:
        return []
    return [INVARIANTS["VIM177"].violation(hits[0].loc.at("response"), text=text,
                                           count=len(hits), total=len(shape.leaves))]


#: The per-sample checks of this module, keyed by invariant id, in id order.
FIELD_SAMPLE_CHECKS: dict[str, SampleCheck] = {
    "VIM170": check_vim170,
    "VIM173": check_vim173,
    "VIM176": check_vim176,
}

#: The batch checks of this module, keyed by invariant id, in id order.
FIELD_BATCH_CHECKS: dict[str, BatchCheck] = {
    "VIM171": check_vim171,
    "VIM172": check_vim172,
    "VIM174": check_vim174,
    "VIM175": check_vim175,
    "VIM177": check_vim177,
}


def _active_sample_checks(s: CheckSettings) -> list[tuple[str, SampleCheck]]:
    """The per-sample checks (id, check) that can find anything with these settings."""
    checks: list[tuple[str, SampleCheck]] = []
    if s.max_response_len is not None:
        checks.append(("VIM170", check_vim170))
    checks.append(("VIM173", check_vim173))
    if s.bos_token_id is not None:
        checks.append(("VIM176", check_vim176))
    return checks


def check_field_reports(shape: Shape, s: CheckSettings, info: OutputInfo,
                        skip: Mapping[int, frozenset[str]] | None = None) -> list[Violation]:
    """Every invariant of this module (VIM170-VIM177) on the train output's readable shape.
    ``skip`` maps ``id(sample)`` to the ids proven clean on it
    (``vime.contract.checks.sample.proven_clean``), which are not run."""
    out: list[Violation] = []
    checks = _active_sample_checks(s)
    proven = skip or {}
    for leaf in shape.leaves:
        clean = proven.get(id(leaf.sample), ())
        for inv_id, check in checks:
            if inv_id in clean:
                continue
            found = check(leaf.sample, leaf.loc, s, "train")
            if found:
                out.extend(found)
    for batch_check in FIELD_BATCH_CHECKS.values():
        out.extend(batch_check(shape, s, info))
    return out
