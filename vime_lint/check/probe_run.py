"""Run the reward probes of :mod:`vime_lint.check.probes` against a launch's reward.

Usage::

    outcome = run_probes(args, rows, max_calls=200)
    outcome.findings      # [Violation] VIM300-VIM307, VIM310, VIM311, each naming the reward's def
    outcome.notes         # what was probed, skipped, or could not be judged

The reward is called exactly as the rollout calls it at reward time
(``vime.rollout.rm_hub.async_rm``, or ``batched_async_rm`` per group with ``--group-rm``), on
real ``Sample`` objects: ``prompt``, ``label``, ``response``, ``tokens``, ``response_length`` and
``status`` set as after generation (``TRUNCATED`` for the cut response). Each call is bounded
by ``--rm-timeout`` when set, and the probes stop after ``max_calls`` calls, saying how many
rows were left out: a reward that calls a remote judge is probed within that budget.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vime.contract.errors import Severity, Violation
from vime.contract.invariants import INVARIANTS
from vime_lint.check.calls import defined_at
from vime_lint.check.code_watch import watching
from vime_lint.check.probes import (
    GROUP_ORDER,
    NO_ANSWER,
    RENDERINGS,
    UNPARSEABLE_LABEL,
    ProbeRow,
    judge,
    judge_group,
    render,
    responses_for,
    wrong_label,
)

__all__ = ["DEFAULT_MAX_CALLS", "ProbeOutcome", "reward_scalar", "reward_where", "run_filter_probes",
           "run_probes", "unset_reads_problem"]

#: VIM303 when even the label's own answer raises: the reward fails on every response, so the
#: error is a bug in it (a misspelt ``args.``/``sample.`` name, a missing import), not a kind
#: of response it does not handle.
GOLD_RAISED = "the label's own answer"
GOLD_RAISED_FIX = ("the reward raised on the label's own answer, so it raises on every "
                   "response: fix the error it names, then run `vime-lint check` again")

#: VIM303 when the label's own answer gets no number back (a string, None, a NaN): so does
#: every response.
GOLD_RETURNED_FIX = ("the reward gave no finite number for the label's own answer, so it gives "
                     "none for any response: return a float (1.0 / 0.0), not text or None")

#: Default ``--probe-max-calls``: about seven prompts' worth of probes.
DEFAULT_MAX_CALLS = 200


@dataclass
class ProbeOutcome:
    """Findings and notes of one probe run; ``calls`` rewards were computed."""

    findings: list[Violation] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    calls: int = 0
    #: Prompts whose responses were judged (0: nothing was checked; the ids are "not run").
    judged: int = 0
    #: The renderings of :data:`~vime_lint.check.probes.RENDERINGS` (or
    #: ``--probe-responses-path`` names) that scored best on the judged prompts: how the
    #: reward wants the answer written.
    gold_kinds: set[str] = field(default_factory=set)
    #: The reward compiled or ran a response as code: the answer probes were not judged.
    code_reward: bool = False


#: :func:`reward_scalar`'s reason for a reward that is a number but not a finite one.
NON_FINITE = frozenset({"returned nan", "returned inf", "returned -inf"})


def reward_scalar(args: argparse.Namespace, value: Any) -> tuple[float | None, str | None]:
    """A reward as the trainer reads it: ``(number, None)``, or ``(None, why not)`` (a dict
    without ``--reward-key``, not a number, not finite)."""
    if isinstance(value, dict):
        key = getattr(args, "reward_key", None)
        if not key:
            return None, "returned a dict and --reward-key is not set"
        if key not in value:
            return None, f"returned a dict without --reward-key {key!r}"
        value = value[key]
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None, f"returned {type(value).__name__}, not a number"
    if not math.isfinite(value):
        return None, f"returned {value}"
    return float(value), None


def reward_where(args: argparse.Namespace) -> str:
    """The reward the probes call, for messages: ``file:line`` of a custom reward's ``def`` and
    its path, or the built-in ``--rm-type``."""
    path = getattr(args, "custom_rm_path", None)
    if not path:
        return f"--rm-type {getattr(args, 'rm_type', None)} (vime.rollout.rm_hub)"
    from vime.utils.misc import load_function

    fn = load_function(path, hook="custom_rm_path", group_rm=bool(getattr(args, "group_rm", 0)))
    at = defined_at(fn)
    return f"{at}: {path} (--custom-rm-path)" if at else f"{path} (--custom-rm-path)"


class _Budget(Exception):
    """The call budget is spent."""


#: ``Sample`` fields still unset (None) when the rollout calls the reward: the reward's own
#: output, and what the trainer or later stages fill in.
UNSET_AT_REWARD = frozenset({"reward", "teacher_log_probs", "train_metadata",
                             "rollout_topk_token_ids", "rollout_topk_log_probs",
                             "rollout_routed_experts"})
#: vime's and vime-lint's own code (their reads are not the reward's).
_OWN_CODE = tuple(str(Path(__file__).resolve().parents[2] / pkg) + "/"
                  for pkg in ("vime", "vime_lint"))


@dataclass
class UnsetReads:
    """What a reward read that the rollout had not set (VIM310): field names, metadata keys."""

    fields: set[str] = field(default_factory=set)
    keys: set[str] = field(default_factory=set)


def _from_user_code(depth: int = 2) -> bool:
    """True when the caller ``depth`` frames up is not vime's or vime-lint's own code."""
    return not sys._getframe(depth).f_code.co_filename.startswith(_OWN_CODE)


class _RecordingMetadata(dict):  # type: ignore[type-arg]
    """A sample's metadata that notes the keys read (``m[k]``, ``m.get(k)``) it does not hold."""

    reads: UnsetReads

    def __getitem__(self, key: Any) -> Any:
        if key not in self and _from_user_code():
            self.reads.keys.add(str(key))
        return super().__getitem__(key)

    def get(self, key: Any, default: Any = None) -> Any:
        if key not in self and _from_user_code():
            self.reads.keys.add(str(key))
        return super().get(key, default)


#: The probes that write the label as an answer and compare the rewards: they do not apply
#: to a reward that runs the response as code (its labels are tests, not answers).
ANSWER_PROBES = frozenset({"VIM300", "VIM301", "VIM304", "VIM305", "VIM306", "VIM311"})
#: A response shorter than this (``"42"``) is not looked for in compiled or run code: short
#: text appears there by chance (``Integer(42)`` from a math parser).
_CODE_TEXT_MIN = 8


_SAMPLE_CLASS: type | None = None


def _probe_sample_class() -> type:
    """A ``Sample`` subclass whose reads of :data:`UNSET_AT_REWARD` fields, while None and from
    the user's code, are noted in its class attribute ``reads``."""
    global _SAMPLE_CLASS
    if _SAMPLE_CLASS is None:
        from vime.utils.types import Sample

        class ProbeSample(Sample):
            reads = UnsetReads()

            def __getattribute__(self, name: str) -> Any:
                value = object.__getattribute__(self, name)
                if name in UNSET_AT_REWARD and value is None and _from_user_code():
                    type(self).reads.fields.add(name)
                return value

        _SAMPLE_CLASS = ProbeSample
    return _SAMPLE_CLASS


class _Caller:
    def __init__(self, args: argparse.Namespace, max_calls: int) -> None:
        self.args = args
        self.max_calls = max_calls
        self.calls = 0
        self.timeout = getattr(args, "rm_timeout", None)
        self.reads = UnsetReads()
        self.gold_kinds: set[str] = set()
        #: A response text was compiled or handed to a subprocess: the reward runs code.
        self.runs_code = False
        #: Why the rows judged no rendering got no number (``"returned str, not a number"``),
        #: and how many rows that was.
        self.no_number: set[str] = set()
        self.unnumbered = 0
        #: Calls that raised, and the first one's ``TYPE: TEXT at FILE:LINE in NAME`` (the
        #: user's frame where there is one).
        self.raised = 0
        self.first_raise = ""

    def _raised(self, exc: BaseException, n: int = 1) -> str:
        from vime_lint.check.calls import raised_at, user_origin

        self.raised += n
        shown, frame = user_origin(exc)
        text = f"{type(shown).__name__}: {str(shown)[:160]}"
        if not self.first_raise:
            at = raised_at(exc) if frame is None else \
                f" at {frame.filename}:{frame.lineno} in {frame.name}"
            self.first_raise = text + at
        return text

    def sample(self, row: ProbeRow, text: str, status: str, index: int, label: str) -> Any:
        from vime.utils.types import Sample
        from vime_lint.check.synthetic import encode

        cls = _probe_sample_class()
        cls.reads = self.reads   # type: ignore[attr-defined]
        metadata = _RecordingMetadata(row.metadata or {})
        metadata.reads = self.reads
        prompt_ids, response_ids = encode(row.prompt), encode(text, limit=512) if text else []
        return cls(index=index, group_index=0, prompt=row.prompt, label=label,
                   tokens=prompt_ids + response_ids, response=text,
                   response_length=len(response_ids), status=Sample.Status(status),
                   metadata=metadata)

    def _spend(self, n: int = 1) -> None:
        if self.calls + n > self.max_calls:
            raise _Budget
        self.calls += n

    async def _bounded(self, make: Callable[[], Any]) -> Any:
        if self.timeout:
            return await asyncio.wait_for(make(), self.timeout)
        return await make()

    def one(self, row: ProbeRow, text: str, status: str, label: str
            ) -> tuple[float | None, str | None]:
        from vime.rollout.rm_hub import async_rm

        self._spend()
        sample = self.sample(row, text, status, self.calls, label)
        watched = [text] if len(text.strip()) >= _CODE_TEXT_MIN else []
        with watching(watched) as seen:
            try:
                value = asyncio.run(self._bounded(lambda: async_rm(self.args, sample)))
            except asyncio.TimeoutError:
                return None, f"TimeoutError: no reward within --rm-timeout {self.timeout} s"
            except Exception as exc:  # noqa: BLE001 - the probe reports it (VIM303)
                return None, self._raised(exc)
            finally:
                self.runs_code |= seen.ran
        value, why = reward_scalar(self.args, value)
        return value, (None if value is not None else why)

    def group(self, row: ProbeRow, items: Sequence[tuple[str, str]]) -> list[float | None]:
        from vime.rollout.rm_hub import batched_async_rm

        self._spend(len(items))
        samples = [self.sample(row, t, s, self.calls + i, row.label)
                   for i, (t, s) in enumerate(items)]
        try:
            values = asyncio.run(self._bounded(lambda: batched_async_rm(self.args, samples)))
        except Exception as exc:  # noqa: BLE001 - the group probe needs numbers; VIM303 says why
            self._raised(exc, len(items))
            return [None] * len(items)
        return [reward_scalar(self.args, v)[0] for v in values]


def _probe_row(caller: _Caller, row: ProbeRow, rows: Sequence[ProbeRow],
               extra: Sequence[tuple[str, str]]) -> tuple[list[tuple[str, str]], bool]:
    """``(findings, judged)``: judged False when no rendering of gold scored above every
    answer-free response and a wrong answer (the reward's answer format is unknown), or when
    no rendering got a number back at all (noted in ``caller.no_number``)."""
    kinds = {k: render(k, row.label) for k in RENDERINGS} | dict(extra)
    rendered = {k: caller.one(row, text, "completed", row.label) for k, text in kinds.items()}
    floor = [caller.one(row, t, "completed", row.label)[0] for t in NO_ANSWER.values()]
    floor.append(caller.one(row, render("sentence", wrong_label(row, rows)), "completed",
                            row.label)[0])
    scored = {k: v for k, (v, _) in rendered.items() if v is not None}
    errors = {f"gold ({k})": e for k, (v, e) in rendered.items() if e is not None}
    lowest = min((v for v in floor if v is not None), default=None)
    if not scored or lowest is None or max(scored.values()) <= lowest:
        if not scored:
            returned = {e for e in errors.values() if e.startswith("returned")}
            caller.no_number |= returned
            caller.unnumbered += bool(returned)
        return ([("VIM303", f"label {row.label!r}: {GOLD_RAISED} ({k[len('gold ('):-1]}) "
                            f"{e if e.startswith('returned') else 'raised ' + e}")
                 for k, e in list(errors.items())[:1]], False)
    gold_kind = max(scored, key=lambda k: (scored[k], k == "bare"))
    caller.gold_kinds.add(gold_kind)
    texts = responses_for(row, rows, gold_kind, extra)
    scores: dict[str, float | None] = {"gold": scored[gold_kind]}
    for name, (text, status) in texts.items():
        if name == "gold":
            continue
        value, err = caller.one(row, text, status, row.label)
        scores[name] = value
        # a raise, or a NaN / inf (no finite reward: VIM110 at run time); other non-numbers
        # (None, a dict without --reward-key) are the stages' and the settings' to report
        if err is not None and (not err.startswith("returned") or err in NON_FINITE):
            errors[name] = err
    again = {name: caller.one(row, texts[name][0], texts[name][1], row.label)[0]
             for name in ("gold", "wrong", "no-answer")}
    unparseable = {name: caller.one(row, texts[name][0], "completed", UNPARSEABLE_LABEL)[0]
                   for name in ("gold", "no-answer", "empty")}
    return judge(row, texts, scores, again, errors, unparseable, scored[gold_kind]), True


def _group_probe(caller: _Caller, row: ProbeRow, rows: Sequence[ProbeRow]
                 ) -> tuple[list[tuple[str, str]], bool]:
    """``(findings, judged)``: judged False when the group reward gave no numbers."""
    texts = responses_for(row, rows, "sentence")
    items = [texts[name] for name in GROUP_ORDER]
    forward = caller.group(row, items)
    backward = caller.group(row, list(reversed(items)))
    judged = None not in forward and None not in backward
    return judge_group(row, forward, backward), judged


def run_probes(args: argparse.Namespace, rows: Sequence[ProbeRow], *,
               max_calls: int = DEFAULT_MAX_CALLS,
               extra: Callable[[argparse.Namespace, Any], Sequence[tuple[str, str]]] | None = None,
               metadata_from_hooks: bool = False) -> ProbeOutcome:
    """Probe the reward ``args`` names (``--custom-rm-path`` or ``--rm-type``; per group with
    ``--group-rm``) on ``rows``.

    Args:
        args: the namespace the reward sees.
        rows: prompts and labels (rows without a label are left out).
        max_calls: the most reward computations (a group of four counts four).
        extra: ``--probe-responses-path``: ``(args, sample) -> [(name, text)]``, more
            renderings of the answer to try as gold.
        metadata_from_hooks: the launch's own rollout function, custom generate or agent may
            set ``metadata`` keys the prompt rows lack, so reading one is a note, not VIM310.

    Returns:
        :class:`ProbeOutcome`: one finding per probe id and row at most (the first row that
        breaks it), and notes.

    Raises:
        vime.contract.errors.ContractError: the custom reward cannot be loaded (VIM100).
    """
    where = reward_where(args)
    out = ProbeOutcome()
    caller = _Caller(args, max_calls)
    usable = [r for r in rows if r.label is not None and str(r.label).strip()]
    found: dict[str, str] = {}
    unjudged = probed = 0
    try:
        for row in usable:
            added: list[tuple[str, str]] = []
            if extra is not None:
                added = [(str(n), str(t)) for n, t in
                         extra(args, caller.sample(row, "", "completed", 0, row.label))]
            if getattr(args, "group_rm", False):
                pairs, judged = _group_probe(caller, row, usable)
            else:
                pairs, judged = _probe_row(caller, row, usable, added)
            probed += 1
            unjudged += not judged
            for pid, problem in pairs:
                found.setdefault(pid, problem)
    except _Budget:
        out.notes.append(f"reward probes: the call budget (--probe-max-calls {max_calls}) ran "
                         f"out after {probed} of {len(usable)} prompt(s)")
    out.calls = caller.calls
    out.judged = probed - unjudged
    out.gold_kinds = set(caller.gold_kinds)
    from vime.rollout.failures import fail_sample

    tolerated = fail_sample(args)
    if metadata_from_hooks and caller.reads.keys:
        out.notes.append("reward probes: the reward reads " + ", ".join(
            f"sample.metadata[{k!r}]" for k in sorted(caller.reads.keys)) + ", which the prompt "
            "rows do not carry; this launch's own rollout, generate or agent may set it")
        caller.reads.keys.clear()
    if caller.runs_code:
        # the label is written as an answer; a reward that compiles or runs the response
        # grades code against tests: ranking answers says nothing about it
        skipped = sorted(pid for pid in found if pid in ANSWER_PROBES)
        for pid in skipped:
            del found[pid]
        out.code_reward = True
        out.notes.append(
            "reward probes: the reward compiles or runs the response as code, so the probes "
            "that write the label as an answer (" + ", ".join(sorted(ANSWER_PROBES)) + ") were "
            "not judged" + (f" ({', '.join(skipped)} would have fired on answers that are "
                            "not code)" if skipped else "") + "; the others (a reward that "
            "raises, changes on the same response, reads unset fields) were")
    unset = unset_reads_problem(caller.reads, args)
    if unset is not None:
        found["VIM310"] = unset
    for pid, problem in sorted(found.items()):
        # with --hook-failure fail-sample a raising reward costs samples, not the run
        severity: Severity | None = "warning" if pid == "VIM303" and tolerated else None
        fix = (None if pid != "VIM303" or GOLD_RAISED not in problem else
               GOLD_RETURNED_FIX if f"{GOLD_RAISED} (" in problem and ") returned " in problem
               else GOLD_RAISED_FIX)
        out.findings.append(INVARIANTS[pid].violation(where, problem=problem,
                                                      severity=severity, fix=fix))
    if caller.unnumbered:
        said = "; ".join(sorted(caller.no_number))
        out.notes.append(
            f"reward probes: for {caller.unnumbered} of {probed} prompt(s) the reward gave no "
            f"number for any rendering of the label (it {said}), so those rows were not judged: "
            "the trainer needs a finite float per sample; return 1.0 / 0.0 (or float(text) for "
            "a score held as text; a dict needs --reward-key)")
        unjudged -= caller.unnumbered
    if caller.calls and caller.raised == caller.calls:
        # the reward raises on every response: its answer format is not the question
        out.notes.append(
            f"reward probes: every one of the {caller.calls} probe call(s) of {where} raised "
            f"(the first: {caller.first_raise}), so no prompt was judged; fix that error, then "
            "run `vime-lint check` again")
    elif unjudged:
        out.notes.append(
            f"reward probes: for {unjudged} of {probed} prompt(s) no rendering of the label "
            f"({', '.join(RENDERINGS)}) scored above both an empty and a wrong answer, so the reward's answer "
            "format is unknown and those rows were not judged; give it with "
            "--probe-responses-path PKG.MOD.FN ((args, sample) -> [(name, text)])")
    out.notes.append(f"reward probes: {where} called {caller.calls} time(s) on "
                     f"{probed} prompt(s) (--no-probe turns them off)")
    return out


def unset_reads_problem(reads: UnsetReads, args: argparse.Namespace) -> str | None:
    """VIM310's problem in words for what a reward read unset, or None when it read nothing
    unset."""
    parts = [f"sample.{name} (None until {'the reward returns' if name == 'reward' else 'later'})"
             for name in sorted(reads.fields)]
    if reads.keys:
        key = getattr(args, "metadata_key", "metadata")
        parts.append(", ".join(f"sample.metadata[{k!r}]" for k in sorted(reads.keys))
                     + f" (not in the rows' metadata, read from their {key!r} field by "
                     "--metadata-key)")
    if not parts:
        return None
    return "the reward reads " + "; ".join(parts) + ", unset when the rollout calls it"


def _filter_where(path: str, fn: Callable[..., Any]) -> str:
    at = defined_at(fn)
    return f"{at}: {path} (--dynamic-sampling-filter-path)" if at else \
        f"{path} (--dynamic-sampling-filter-path)"


def run_filter_probes(args: argparse.Namespace) -> ProbeOutcome:
    """Probe ``--dynamic-sampling-filter-path`` (VIM308, VIM309) on the groups of
    :data:`vime_lint.check.probes.FILTER_GROUPS`: four COMPLETED samples each, their rewards
    stored as the rollout stores them (``{--reward-key: value}`` when the launch has a reward
    key), the filter called as the default rollout calls it (``filter(args, group)``, once per
    group). A group the filter raises on or answers without a ``DynamicFilterOutput`` is not
    judged (the dry run's own call of the filter reports those, VIM160).

    Returns:
        :class:`ProbeOutcome` with ``calls`` filter calls and ``judged`` 1 when every group got
        a decision.

    Raises:
        vime.contract.errors.ContractError: the filter cannot be loaded (VIM100).
    """
    from vime.rollout.filter_hub.base_types import DynamicFilterOutput
    from vime.utils.misc import load_function
    from vime.utils.types import Sample
    from vime_lint.check.probes import FILTER_GROUPS, judge_filter

    path = str(args.dynamic_sampling_filter_path)
    fn = load_function(path, hook="dynamic_sampling_filter_path")
    key = getattr(args, "reward_key", None)
    out = ProbeOutcome()
    kept: dict[str, bool | None] = {}
    for g, (name, rewards) in enumerate(FILTER_GROUPS.items()):
        group = [Sample(index=4 * g + i, group_index=g, prompt="What is 2+3?", label="5",
                        tokens=[1, 2, 3, 4], response="5", response_length=2,
                        status=Sample.Status.COMPLETED, metadata={},
                        reward={key: r} if key else r) for i, r in enumerate(rewards)]
        out.calls += 1
        try:
            decision = fn(args, group)
        except Exception:  # noqa: BLE001 - the dry run's call of the filter reports it
            decision = None
        kept[name] = decision.keep if isinstance(decision, DynamicFilterOutput) else None
    out.judged = int(None not in kept.values())
    where = _filter_where(path, fn)
    for pid, problem, error in judge_filter(kept):
        out.findings.append(INVARIANTS[pid].violation(
            where, problem=problem, severity=None if error else "warning"))
    decided = ", ".join(f"{n}: {'kept' if k else 'dropped' if k is False else 'no decision'}"
                        for n, k in kept.items())
    out.notes.append(f"filter probes: {path} on {len(kept)} groups ({decided}) "
                     "(--no-probe turns them off)")
    return out
