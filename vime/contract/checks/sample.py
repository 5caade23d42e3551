"""Per-sample invariants VIM105-VIM111, VIM122, VIM124, VIM127: one pure function per id, run
on every leaf sample.

Each ``check_vimXXX(sample, loc, settings, stage)`` returns the findings of its invariant for
one ``Sample``: ``stage="generate"`` right after a generate call (boundary B2: no reward yet,
ABORTED/FAILED may be empty), ``stage="train"`` on the train output (B5; VIM122, VIM124 and
VIM127 run only there). Long per-token lists
are proven clean on columns, never with a per-item Python loop: ``sum`` (types), one
``struct.pack`` int64 column for the token ids (range, vectorised), ``list.count``/``bytes``
for the mask, and one ``max`` shared by VIM109 and VIM173 (:func:`proven_clean`); the exact
scan that names the first bad item runs only when the proof fails.

Usage::

    loc = Loc("samples[3][1]", index=13)
    check_vim108(sample, loc, CheckSettings(), "train")
    # [Violation("VIM108", "error", "samples[3][1].loss_mask (index=13)",
    #            "has 17 entries, expected response_length=18", ...)]
    check_sample(sample, loc, settings, "train")     # every per-sample invariant

See ``docs/contract.md`` §2 (fields) and §6b.
"""

from __future__ import annotations

import math
import operator
import struct
from collections.abc import Callable
from functools import cache
from itertools import compress
from operator import attrgetter
from typing import Any, Literal

from vime.contract.checks.locations import Loc
from vime.contract.checks.settings import CheckSettings
from vime.contract.checks.typecheck import (
    describe_value,
    exact_types,
    fast_accept,
    field_hint,
    field_type_problem,
)
from vime.contract.checks.values import array_number, reward_problem
from vime.contract.errors import Severity, Violation
from vime.contract.invariants import INVARIANTS
from vime.contract.reward import reward_fix
from vime.contract.sample import SAMPLE_FIELDS, UNSET_FIELD_SEVERITY, FieldSpec
from vime.utils.types import Sample

__all__ = [
    "OWNED_FIELDS",
    "SAMPLE_CHECKS",
    "Stage",
    "check_sample",
    "check_vim105",
    "check_vim106",
    "check_vim107",
    "check_vim108",
    "check_vim109",
    "check_vim110",
    "check_vim111",
    "check_vim122",
    "check_vim124",
    "check_vim127",
    "logprob_bound",
    "proven_clean",
    "tokens_ok",
]

#: ``"generate"``: right after a generate call (B2); ``"train"``: the train output (B5).
Stage = Literal["generate", "train"]
SampleCheck = Callable[[Sample, Loc, CheckSettings, Stage], list[Violation]]

#: Tolerance above 0 for log-probs (float rounding), docs/contract.md §6b VIM109.
LOGPROB_EPS = 1e-6

_INT = frozenset({int})
#: Columns at least this long are proven on numpy (shorter: builtins beat building arrays).
_COLUMN_MIN = 256
_BOOL = bool
_MASK_TYPES = frozenset({int, bool})
_REAL = frozenset({float, int})


# ---- VIM105: field types --------------------------------------------------------------------


def _length_of(spec: FieldSpec, sample: Sample) -> int | None:
    if spec.length_rule == "response_length":
        return sample.response_length
    if spec.length_rule == "response_length+1":
        return sample.response_length + 1
    if spec.length_rule == "tokens-1":
        return len(sample.tokens) - 1 if isinstance(sample.tokens, list) else None
    return None


@cache
def _generic_fields() -> tuple[tuple[FieldSpec, Callable[[Any], bool]], ...]:
    return tuple((spec, fast_accept(field_hint(spec.name)))
                 for spec in SAMPLE_FIELDS if spec.name not in OWNED_FIELDS)


@cache
def _vim105_fast() -> tuple[Callable[[Any], tuple[Any, ...]], tuple[frozenset[type], ...],
                            tuple[Callable[[Any], tuple[Any, ...]],
                                  tuple[tuple[Callable[[Any], bool], bool], ...]],
                            Callable[[Any], tuple[Any, ...]], int]:
    """The clean-sample proof of VIM105, built once: one ``attrgetter`` for the fields of plain
    types (checked with ``type(v) in types`` under ``map``), the other predicates by name, and
    one ``attrgetter`` for the fields with a ``length_rule`` (proven when all are None)."""
    simple: list[tuple[str, frozenset[type]]] = []
    other: list[tuple[str, Callable[[Any], bool]]] = []
    sized: list[str] = []
    for spec, accept in _generic_fields():
        if spec.length_rule is not None:
            sized.append(spec.name)
        hint = field_hint(spec.name)
        if hint is Any:
            continue                        # anything goes (``fast_accept`` says so too)
        types = exact_types(hint)
        if types is not None:
            simple.append((spec.name, types))
        else:
            other.append((spec.name, accept))
    names = [n for n, _ in other]
    return (attrgetter(*(n for n, _ in simple)), tuple(t for _, t in simple),
            (attrgetter(*names, names[0]), tuple((a, a(None)) for _, a in other)),
            attrgetter(*sized, sized[0]), len(sized) + 1)


def _vim105_clean(sample: Sample) -> bool:
    """True when every generic field has its type and no field with a ``length_rule`` is set:
    :func:`check_vim105` would find nothing (False: not proven)."""
    simple_of, types, (other_of, other), sized_of, n_sized = _vim105_fast()
    try:
        if not all(map(frozenset.__contains__, types, map(type, simple_of(sample)))):
            return False
        if sized_of(sample).count(None) != n_sized:
            return False
        values = other_of(sample)
    except AttributeError:
        return False
    for (accept, none_ok), value in zip(other, values[:-1], strict=True):   # last: a repeat
        if value is None:
            if not none_ok:
                return False
        elif not accept(value):
            return False
    return True


def check_vim105(sample: Sample, loc: Loc, s: CheckSettings, stage: Stage) -> list[Violation]:
    """VIM105: every field not owned by a specific check has its ``SAMPLE_FIELDS`` type, and
    per-token fields with a ``length_rule`` have that length. Error for fields conversion
    reads, warning for the others."""
    if _vim105_clean(sample):
        return []
    inv = INVARIANTS["VIM105"]
    out: list[Violation] = []
    for spec, accept in _generic_fields():
        value = getattr(sample, spec.name, None)
        severity: Severity = "error" if spec.read_by_conversion else "warning"
        if not accept(value):
            problem = field_type_problem(spec.name, value)
            if problem is not None:
                out.append(inv.violation(loc.at(spec.name), severity=severity, actual=problem,
                                         expected=spec.hint))
                continue
        if spec.length_rule is not None and value is not None and hasattr(value, "__len__"):
            expected = _length_of(spec, sample)
            if expected is not None and isinstance(sample.response_length, int) and \
                    len(value) != expected:
                out.append(inv.violation(
                    loc.at(spec.name), severity=severity,
                    actual=f"of length {len(value)}",
                    expected=f"length {expected} ({spec.length_rule})",
                    fix=f"store one {spec.name} entry per response token"))
    return out


# ---- VIM106: tokens -------------------------------------------------------------------------


def tokens_ok(toks: list[Any], vocab: int | None) -> bool:
    """Proves non-empty token ids that are ints (not bool) with ``0 <= id < vocab`` in two
    passes: ``sum`` stays an ``int`` only over ints and bools (a float, numpy scalar or str
    changes or breaks it); ``struct.pack`` makes one int64 column (three times faster than
    ``numpy.fromiter``) whose ``min``/``max`` numpy vectorises; a bool can only hide among
    the ids 0 and 1, whose few positions are then looked at. False means "not proven": the
    exact scan decides and names the item."""
    n = len(toks)
    if n < _COLUMN_MIN:         # short: builtins beat building an array
        if not n or not set(map(type, toks)) <= _INT:
            return False
        return min(toks) >= 0 and (vocab is None or max(toks) < vocab)
    try:
        if type(sum(toks)) is not int:
            return False
        np = _numpy()
        arr = np.frombuffer(struct.pack(f"<{n}q", *toks), np.int64)
    except Exception:   # noqa: BLE001 - an id over int64 (struct.error): the exact scan
        return False
    if int(arr.min()) < 0 or (vocab is not None and int(arr.max()) >= vocab):
        return False
    return _BOOL not in set(map(type, map(toks.__getitem__, np.flatnonzero(arr <= 1).tolist())))


def _numpy() -> Any:
    """numpy, imported on the first long column (``import vime.contract`` stays light)."""
    import numpy

    return numpy


def _first_bad_int(xs: list[Any]) -> int:
    for i, x in enumerate(xs):
        if type(x) is not int and (isinstance(x, bool) or not isinstance(x, int)):
            return i
    return -1


def check_vim106(sample: Sample, loc: Loc, s: CheckSettings, stage: Stage) -> list[Violation]:
    """VIM106: ``tokens`` is a non-empty ``list`` of ``int`` (not bool), each ``>= 0`` and
    ``< vocab_size`` when the vocabulary size is known."""
    inv = INVARIANTS["VIM106"]
    toks = sample.tokens
    if type(toks) is not list:
        fix = "convert with .tolist()" if hasattr(toks, "tolist") else None
        return [inv.violation(loc.at("tokens"), problem=f"is {describe_value(toks)}, expected "
                              "list[int] (prompt token ids then response token ids)", fix=fix)]
    if not toks:
        return [inv.violation(loc.at("tokens"), problem="is empty; expected the prompt token "
                              "ids followed by the response token ids")]
    vocab = s.vocab_size
    if tokens_ok(toks, vocab):
        return []
    if not set(map(type, toks)) <= _INT:
        i = _first_bad_int(toks)
        if i >= 0:
            bad = toks[i]
            fix = "convert numpy/torch ids with .tolist()" if hasattr(bad, "item") else None
            return [inv.violation(loc.at("tokens", i), problem=f"is {describe_value(bad)}, "
                                  "expected an int token id (not bool)", fix=fix)]
    lo, hi = min(toks), max(toks)
    if lo < 0 or (vocab is not None and hi >= vocab):
        limit = f"vocab_size={vocab}" if vocab is not None else "a vocabulary"
        for i, t in enumerate(toks):
            if t < 0 or (vocab is not None and t >= vocab):
                return [inv.violation(loc.at("tokens", i), problem=f"is {t}, outside 0 <= id < "
                                      f"{limit}")]
    return []


# ---- VIM107: response_length ----------------------------------------------------------------


def check_vim107(sample: Sample, loc: Loc, s: CheckSettings, stage: Stage) -> list[Violation]:
    """VIM107: ``response_length`` is an int with ``1 <= response_length <= len(tokens)``;
    equal to ``len(tokens)`` with a non-empty prompt warns. After generate an ABORTED or
    FAILED sample may have no response yet."""
    inv = INVARIANTS["VIM107"]
    rl = sample.response_length
    where = loc.at("response_length")
    if type(rl) is not int:
        return [inv.violation(where, problem=f"is {describe_value(rl)}, expected an int "
                              "(number of response tokens)")]
    n = len(sample.tokens) if isinstance(sample.tokens, list) else None
    if rl < 1:
        if stage == "generate" and rl == 0 and sample.status in (Sample.Status.ABORTED,
                                                                 Sample.Status.FAILED):
            return []
        return [inv.violation(where, problem=f"is {rl}, expected 1 <= response_length <= "
                              f"len(tokens)={n}: tokens[-{rl}:] is not the response "
                              "(tokens[-0:] is the whole sequence)")]
    if n is None:
        return []
    if rl > n:
        return [inv.violation(where, problem=f"is {rl}, longer than len(tokens)={n}")]
    if rl == n and sample.prompt:
        return [inv.violation(where, severity="warning",
                              problem=f"is {rl} == len(tokens) although the prompt is non-empty: "
                              "the prompt tokens are counted as response",
                              fix="tokens must hold the prompt ids followed by the response ids; "
                              "response_length counts only the generated ones")]
    return []


# ---- VIM108: loss_mask ----------------------------------------------------------------------


def _mask_ok(mask: list[Any]) -> bool:
    """Proves a mask of ints/bools in {0, 1} with C-level passes: ``sum`` stays an ``int``
    only over ints and bools (a float, numpy or str item changes or breaks it), then
    ``count(1)`` covers every item (the all-ones mask) or ``bytes(mask)`` (ints 0..255) holds
    only 0 and 1."""
    try:
        total = sum(mask)
    except Exception:   # noqa: BLE001 - TypeError, OverflowError: the exact scan decides
        return False
    if type(total) is not int:
        return False
    n = len(mask)
    if mask.count(1) == n:          # identity hits for the cached int 1: the all-ones mask
        return True
    try:
        flags = bytes(mask)          # ints 0..255 only, one C pass
    except (TypeError, ValueError):
        return False
    return flags.count(0) + flags.count(1) == n


def check_vim108(sample: Sample, loc: Loc, s: CheckSettings, stage: Stage) -> list[Violation]:
    """VIM108: ``loss_mask`` is None or a list of ``response_length`` ints, each 0 or 1; an
    all-zero mask without ``remove_sample`` warns."""
    inv = INVARIANTS["VIM108"]
    mask = sample.loss_mask
    if mask is None:
        return []
    where = loc.at("loss_mask")
    if type(mask) is not list:
        return [inv.violation(where, problem=f"is {describe_value(mask)}, expected "
                              "list[int] of 0/1 or None")]
    rl = sample.response_length
    if isinstance(rl, int) and len(mask) != rl:
        if rl < 1:   # response_length never set (the default 0): the mask is not the problem
            fix = (f"set sample.response_length to the number of response tokens (the mask has "
                   f"{len(mask)}), or grow the sample with Sample.append_response_tokens(), "
                   "which sets both")
        elif len(mask) > rl:
            fix = ("give loss_mask one entry per response token, or fix response_length if it "
                   "is the one that is short (Sample.append_response_tokens() keeps both in "
                   "step)")
        else:
            fix = None   # the invariant's: extend loss_mask for every appended token
        return [inv.violation(where, problem=f"has {len(mask)} entries, expected "
                              f"response_length={rl}", fix=fix)]
    if not _mask_ok(mask):
        for i, m in enumerate(mask):
            if type(m) not in _MASK_TYPES or m not in (0, 1):
                return [inv.violation(loc.at("loss_mask", i), problem=f"is {describe_value(m)}, "
                                      "expected 0 or 1")]
    if mask and not any(mask) and not sample.remove_sample:
        return [inv.violation(where, severity="warning",
                              problem=f"is all zero ({len(mask)} entries) but remove_sample is "
                              "False: the sample trains nothing",
                              fix="set remove_sample=True to leave it out on purpose, or mark the "
                              "generated tokens with 1")]
    return []


# ---- VIM109: rollout_log_probs --------------------------------------------------------------


def _first_bad_logprob(xs: list[Any]) -> tuple[int, str]:
    for i, x in enumerate(xs):
        if type(x) not in _REAL and (isinstance(x, bool) or not isinstance(x, (int, float))):
            return i, f"is {describe_value(x)}, expected a float log-prob"
        if not math.isfinite(x):
            return i, f"is {x}, expected a finite log-prob"
        if x > LOGPROB_EPS:
            return i, f"is {x}, expected a natural-log probability <= 0"
    return -1, ""


def logprob_bound(lp: list[Any]) -> Any:
    """``max(lp)`` when a C-level ``sum`` proves every item a finite real (NaN and inf
    propagate; a str or None raises; numpy scalars change the type), else None (not proven).
    The bound also answers VIM173: below 0.0, no log-prob is a 0.0 placeholder."""
    try:
        total = sum(lp)
    except Exception:   # noqa: BLE001 - a str or None (TypeError), an int over int64 beside a
        return None     # numpy scalar (OverflowError): the exact scan names it
    if type(total) not in _REAL or not math.isfinite(total) or not lp:
        return None
    n = len(lp)
    if n >= _COLUMN_MIN:        # one float64 column (struct.pack): numpy's max, no compares
        try:
            return float(_numpy().frombuffer(struct.pack(f"<{n}d", *lp), "<f8").max())
        except Exception:   # noqa: BLE001 - an int beyond float range: compare them
            pass
    return max(lp)


def _logprobs_ok(lp: list[Any]) -> bool:
    """Proves finite real log-probs <= 1e-6 (see :func:`logprob_bound`)."""
    bound = logprob_bound(lp)
    return bound is not None and bound <= LOGPROB_EPS


def check_vim109(sample: Sample, loc: Loc, s: CheckSettings, stage: Stage) -> list[Violation]:
    """VIM109: ``rollout_log_probs`` is None or ``response_length`` finite floats ``<= 0``
    (+1e-6); required when training consumes them (``--use-rollout-logprobs``, ``--use-tis``,
    ``--get-mismatch-metrics``), where value problems are errors (else warnings).

    A single entry of exactly 0.0 is not reported: a pretrained model is often certain of a
    token (measured with SmolLM2-135M-Instruct at temperature 0.7: the float32 log-prob of the
    end token after ``#### 12``, and of tokens inside repeated lines, is exactly 0.0 in several
    samples per step). Runs of placeholder zeros are VIM173's."""
    inv = INVARIANTS["VIM109"]
    lp = sample.rollout_log_probs
    where = loc.at("rollout_log_probs")
    if lp is None:
        if s.logprobs_consumed:
            return [inv.violation(where, problem=f"is None but {', '.join(s.logprob_flags)} "
                                  "reads it")]
        return []
    if type(lp) is not list:
        return [inv.violation(where, problem=f"is {describe_value(lp)}, expected list[float] "
                              "or None")]
    rl = sample.response_length
    if isinstance(rl, int) and len(lp) != rl:
        fix = (f"set sample.response_length to the number of response tokens (the log-probs "
               f"have {len(lp)}), or grow the sample with Sample.append_response_tokens(), "
               "which sets both") if rl < 1 else None
        return [inv.violation(where, problem=f"has {len(lp)} entries, expected "
                              f"response_length={rl}", fix=fix)]
    if not lp:
        return []
    severity: Severity = "error" if s.logprobs_consumed else "warning"
    if not _logprobs_ok(lp):
        i, problem = _first_bad_logprob(lp)
        if i >= 0:
            return [inv.violation(loc.at("rollout_log_probs", i), severity=severity,
                                  problem=problem)]
    return []


def check_vim110(sample: Sample, loc: Loc, s: CheckSettings, stage: Stage) -> list[Violation]:
    """VIM110: ``reward`` is a finite real (bool warns) or a dict with a finite real under
    ``--reward-key``; None is an error in train output (not yet after generate)."""
    reward = sample.reward
    if reward is None and stage == "generate":
        return []
    if type(reward) is float and math.isfinite(reward):
        return []
    if stage == "train" and array_number(_reward_scalar(reward, s.reward_key)) is not None:
        return []  # VIM122 names the tensor, array or numpy scalar
    found = reward_problem(reward, s.reward_key)
    if found is None:
        return []
    severity, problem = found
    fix = reward_fix(reward, s.reward_key)
    if reward is None and sample.status == Sample.Status.ABORTED:
        problem += " (the sample is ABORTED: drop or recycle aborted groups, or score them)"
    return [INVARIANTS["VIM110"].violation(loc.at("reward"), severity=severity,
                                           problem=problem, fix=fix)]


# ---- VIM111: status -------------------------------------------------------------------------

_STATUS_BY_VALUE = {m.value: m for m in Sample.Status}


def check_vim111(sample: Sample, loc: Loc, s: CheckSettings, stage: Stage) -> list[Violation]:
    """VIM111: ``status`` is a ``Sample.Status``; PENDING after generation warns; a trainable
    ABORTED sample in the train output warns."""
    inv = INVARIANTS["VIM111"]
    status = sample.status
    where = loc.at("status")
    if type(status) is not Sample.Status:
        member = _STATUS_BY_VALUE.get(str(status).lower()) if isinstance(status, str) else None
        fix = f"assign Sample.Status.{member.name}" if member is not None else None
        return [inv.violation(where, problem=f"is {describe_value(status)}, expected a "
                              "Sample.Status member", fix=fix)]
    if status is Sample.Status.PENDING:
        # the default, never set: the sample trains as not truncated (UNSET_FIELD_SEVERITY)
        return [inv.violation(where, severity=UNSET_FIELD_SEVERITY["status"],
                              problem="is PENDING after generation (it trains as not "
                              "truncated)")]
    if (stage == "train" and status is Sample.Status.ABORTED and not sample.remove_sample
            and (sample.loss_mask is None or any(sample.loss_mask))):
        return [inv.violation(where, severity="warning",
                              problem="is ABORTED but the sample is trainable (remove_sample is "
                              "False and its loss_mask has ones)",
                              fix="set remove_sample=True on aborted samples, or recycle the group "
                              "with --partial-rollout")]
    return []


# ---- VIM122: rewards are Python numbers -----------------------------------------------------


def _reward_scalar(reward: Any, key: str | None) -> Any:
    """What conversion reads: ``reward[key]`` of a dict holding ``key``, else the reward."""
    if isinstance(reward, dict) and key and key in reward:
        return reward[key]
    return reward


def check_vim122(sample: Sample, loc: Loc, s: CheckSettings, stage: Stage) -> list[Violation]:
    """VIM122: the reward (``reward[--reward-key]`` of a dict) is not a torch tensor, numpy
    array or numpy scalar (``numpy.float64`` is a float subclass: tolerated). Train output
    only."""
    reward = sample.reward
    if type(reward) is float or stage != "train":
        return []
    value = _reward_scalar(reward, s.reward_key)
    found = array_number(value)
    if found is None:
        return []
    what, elements = found
    if elements == 1:
        fix = "store float(x) (x.item() for a one-element tensor or array)"
    elif elements:
        fix = (f"reduce the {elements} elements to the one number to train on (e.g. "
               "float(x.mean())), then store that float")
    else:
        fix = "store one Python float per sample"
    where = loc.at("reward", s.reward_key) if value is not reward else loc.at("reward")
    return [INVARIANTS["VIM122"].violation(where, problem=(
        f"is {what}, not a Python number (only numpy.float64, a float subclass, is "
        "tolerated)"), fix=fix)]


# ---- VIM124: token budgets ------------------------------------------------------------------


def check_vim124(sample: Sample, loc: Loc, s: CheckSettings, stage: Stage) -> list[Violation]:
    """VIM124: ``response_length <= --rollout-max-response-len`` and ``len(tokens) <=
    --rollout-max-context-len`` (each when set); a trained response whose ``loss_mask`` ends
    in zeros after its last 1 warns (an observation after the last turn). Train output only."""
    if stage != "train":
        return []
    inv = INVARIANTS["VIM124"]
    out: list[Violation] = []
    rl, toks = sample.response_length, sample.tokens
    cap = s.max_response_len
    if cap is not None and type(rl) is int and rl > cap:
        out.append(inv.violation(loc.at("response_length"), problem=(
            f"is {rl} tokens, {rl - cap} over --rollout-max-response-len={cap}")))
    ctx = s.max_context_len
    if ctx is not None and type(toks) is list and len(toks) > ctx:
        parts = (f" ({len(toks) - rl} prompt + {rl} response)"
                 if type(rl) is int and 0 < rl <= len(toks) else "")
        out.append(inv.violation(loc.at("tokens"), problem=(
            f"has {len(toks)} tokens{parts}, {len(toks) - ctx} over "
            f"--rollout-max-context-len={ctx}")))
    mask = sample.loss_mask
    if (type(mask) is list and mask and mask[-1] == 0 and type(rl) is int and len(mask) == rl
            and not sample.remove_sample):
        try:
            last = len(mask) - 1 - mask[::-1].index(1)
        except ValueError:
            return out  # no trainable token at all: VIM108's all-zero warning
        run = len(mask) - 1 - last
        out.append(inv.violation(loc.at("loss_mask", last + 1), severity="warning", problem=(
            f"ends in {run} masked tokens (loss_mask 0 at response positions {last + 1}-"
            f"{len(mask) - 1}, after the last trainable token at {last}): an observation "
            "appended after the last generated turn is never answered"),
            fix="end the turn loop on a model turn: do not append an observation after the "
            "last generate call"))
    return out


# ---- VIM127: loss-mask polarity -------------------------------------------------------------


def mask_looks_inverted(sample: Sample) -> bool:
    """True when at least two trainable tokens (mask 1) all carry log-prob exactly 0.0 (the
    placeholder of environment tokens) while every masked token (mask 0) carries a real,
    negative log-prob. C-level passes; False on anything malformed (VIM108/VIM109 own it)."""
    mask, lp = sample.loss_mask, sample.rollout_log_probs
    if type(mask) is not list or type(lp) is not list or len(mask) != len(lp):
        return False
    try:
        first = mask.index(1)                   # O(1) for the usual mask: the first token
    except ValueError:
        return False
    if lp[first] != 0.0:                        # a real log-prob on a trainable token
        return False
    zeros = mask.count(0)
    if zeros == 0 or len(mask) - zeros < 2:
        return False
    try:
        if any(compress(lp, mask)):
            return False
        return bool(max(compress(lp, map(operator.not_, mask))) < 0)
    except (TypeError, ValueError):
        return False


def check_vim127(sample: Sample, loc: Loc, s: CheckSettings, stage: Stage) -> list[Violation]:
    """VIM127 (warning): the loss mask does not look inverted (see :func:`mask_looks_inverted`).
    Train output only."""
    if stage != "train" or sample.loss_mask is None or not mask_looks_inverted(sample):
        return []
    mask = sample.loss_mask
    ones = len(mask) - mask.count(0)
    return [INVARIANTS["VIM127"].violation(loc.at("loss_mask"), problem=(
        f"looks inverted: all {ones} trainable tokens (mask 1) have rollout_log_probs exactly "
        f"0.0, the placeholder of environment tokens, while the {len(mask) - ones} masked "
        "tokens (mask 0) have real negative log-probs: the model's tokens are masked and the "
        "environment's are trained"))]


#: Every per-sample check, keyed by invariant id, in id order.
SAMPLE_CHECKS: dict[str, SampleCheck] = {
    "VIM105": check_vim105,
    "VIM106": check_vim106,
    "VIM107": check_vim107,
    "VIM108": check_vim108,
    "VIM109": check_vim109,
    "VIM110": check_vim110,
    "VIM111": check_vim111,
    "VIM122": check_vim122,
    "VIM124": check_vim124,
    "VIM127": check_vim127,
}

#: Fields whose type and values a specific check owns (VIM105 skips them).
OWNED_FIELDS: frozenset[str] = frozenset(
    {"tokens", "response_length", "loss_mask", "rollout_log_probs", "reward", "status"})

_ALL_CHECKS = tuple(SAMPLE_CHECKS.items())
_NOTHING: frozenset[str] = frozenset()
_LP_CLEAN = frozenset({"VIM109", "VIM173"})
_LP_109 = frozenset({"VIM109"})


def proven_clean(sample: Sample) -> frozenset[str]:
    """The ids among VIM109 and VIM173 (``vime.contract.checks.field_reports``) proven to find
    nothing on ``sample``, from one shared :func:`logprob_bound` of ``rollout_log_probs``
    (both would otherwise scan the column: ``max`` for VIM109, ``0.0 in`` for VIM173).
    ``collect_train_samples`` passes them as ``skip`` to :func:`check_sample` and
    ``check_field_reports``; an empty set proves nothing and every check runs."""
    lp, rl = sample.rollout_log_probs, sample.response_length
    if type(lp) is not list or not lp or type(rl) is not int or len(lp) != rl:
        return _NOTHING
    bound = logprob_bound(lp)
    if bound is None or not bound <= LOGPROB_EPS:
        return _NOTHING
    return _LP_CLEAN if bound < 0.0 else _LP_109


def check_sample(sample: Sample, loc: Loc, s: CheckSettings, stage: Stage,
                 skip: frozenset[str] = _NOTHING) -> list[Violation]:
    """Every per-sample invariant (VIM105-VIM111, VIM122, VIM124, VIM127) on one ``Sample``, in
    id order; the ids in ``skip`` (proven clean by :func:`proven_clean`) are not run."""
    out: list[Violation] = []
    for inv_id, check in _ALL_CHECKS:
        if inv_id in skip:
            continue
        found = check(sample, loc, s, stage)
        if found:
            out.extend(found)
    return out
