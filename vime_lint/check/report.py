"""The ``vime-lint check`` report: one row per runtime invariant, the findings, the verdict.

A finding about one of the user's hooks names it by ``FILE:LINE`` of its ``def`` first, then
its dotted path and argument (``in /src/my_rollout.py:14: rollout `my_rollout.generate_rollout`
(--rollout-function-path) step 0``; ``vime_lint.check.hook_loading.located``).

Exit status: 0 clean; 1 any finding (errors and warnings alike), a hook that raised while it
ran (an error in the user's code, as ``vime train`` exits 1 on it), or an engine that failed
while a hook used it (``engine failure``: an HTTP error, no answer; not the user's code).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TextIO

from vime.contract.checks.failures import ERROR_KEY, is_failed
from vime.contract.errors import Violation
from vime.contract.invariants import INVARIANTS
from vime.utils.types import Sample

__all__ = ["PROG", "Report", "render"]

PROG = "vime-lint check"


@dataclass
class Report:
    """What the dry run found: findings, which invariants were exercised, stage notes."""

    findings: list[Violation] = field(default_factory=list)
    checked: set[str] = field(default_factory=set)
    notes: list[str] = field(default_factory=list)
    #: FAILED samples per ``(hook, type)`` (``--hook-failure fail-sample``) and one example
    #: message each.
    failures: Counter[tuple[str, str]] = field(default_factory=Counter)
    failure_examples: dict[tuple[str, str], str] = field(default_factory=dict)
    #: User code that raised while the dry run ran it: one message each (the hook, the
    #: exception, the user's file and line).
    crashes: list[str] = field(default_factory=list)
    #: The engine failed while a hook used it (``vime_lint.check.calls.EngineFailure``): one
    #: message each, reported apart from :attr:`crashes` (not an error in the user's code).
    engine_failures: list[str] = field(default_factory=list)
    #: Invariants whose check ran on data that cannot judge them (the stand-in's scripted
    #: answers against the user's labels): shown as "not judged", never "pass".
    unjudged: set[str] = field(default_factory=set)
    #: Invariants whose check had nothing to run on (no eval sample): shown as "not run
    #: (REASON)", never "pass" (id -> the reason, a few words).
    not_run: dict[str, str] = field(default_factory=dict)
    #: What the user's code asked for that the dry run never ran (a turn refused for lack of
    #: budget; a note says which): a report without findings is "clean" only for what ran.
    unexercised: list[str] = field(default_factory=list)

    def add_failures(self, samples: Sequence[Sample]) -> None:
        """Count the FAILED ``samples`` per hook and error type (``metadata["vime_error"]``)."""
        for s in samples:
            rec = s.metadata.get(ERROR_KEY) if is_failed(s) and isinstance(s.metadata, dict) \
                else None
            if isinstance(rec, dict):
                key = (str(rec.get("hook")), str(rec.get("type")))
                self.failures[key] += 1
                self.failure_examples.setdefault(
                    key, f"sample index={s.index}: {rec.get('message', '')!s:.160}")

    def add(self, found: Sequence[Violation], ids: Sequence[str]) -> None:
        """Record ``found`` and that the invariants ``ids`` were exercised. A finding already
        recorded (same id, severity, place, text and hook: the hook stage and the train step
        both ran the hook on sample index 0) is kept once, so counts are of distinct findings."""
        have = {_key(v) for v in self.findings}
        for v in found:
            if _key(v) not in have:
                have.add(_key(v))
                self.findings.append(v)
        self.checked.update(ids)


def _key(v: Violation) -> tuple[str, str, str, str, str]:
    return (v.id, v.severity, v.where, v.message, v.context)


def _status(report: Report, inv_id: str) -> str:
    mine = [v for v in report.findings if v.id == inv_id]
    errors = sum(v.severity == "error" for v in mine)
    warns = len(mine) - errors
    if errors:
        return f"FAIL ({errors} error(s){f', {warns} warning(s)' if warns else ''})"
    if warns:
        return f"WARN ({warns} warning(s))"
    if inv_id in report.unjudged:
        return "not judged"
    if inv_id in report.checked:
        return "pass"
    reason = report.not_run.get(inv_id)
    return f"not run ({reason})" if reason else "not run"


def render(report: Report, out: TextIO, max_violations: int | None = None) -> int:
    """Print the per-invariant table, the findings and the notes; return the exit status.

    Findings are grouped per (invariant, field, hook) (:mod:`vime.contract.grouping`);
    ``max_violations`` lists up to that many one by one instead (``--max-violations``)."""
    rows = [(inv_id, inv.slug, _status(report, inv_id)) for inv_id, inv in INVARIANTS.items()
            if inv.scope not in ("static", "template")]   # template: `vime-lint template`
    width = max(len(r[1]) for r in rows)
    print(f"{PROG}: runtime contract checks", file=out)
    print(f"{'id':<7} {'invariant':<{width}}  result", file=out)
    for inv_id, slug, status in rows:
        print(f"{inv_id:<7} {slug:<{width}}  {status}", file=out)
    if report.findings:
        print("", file=out)
        _print_findings(report.findings, out, max_violations)
    if report.failures:
        print("\nfailures per hook (FAILED samples, --hook-failure fail-sample):", file=out)
        for (hook, kind), n in report.failures.most_common():
            print(f"  {hook}/{kind}: {n} sample(s), e.g. {report.failure_examples[(hook, kind)]}",
                  file=out)
    if report.crashes or report.engine_failures:
        print("", file=out)
    for crash in report.crashes:
        print(f"error: {crash}", file=out)
    for failure in report.engine_failures:
        print(f"error: {failure}", file=out)
    for note in report.notes:
        print(f"note: {note}", file=out)
    stopped = len(report.crashes) + len(report.engine_failures)
    errors = sum(v.severity == "error" for v in report.findings) + stopped
    warns = len(report.findings) + stopped - errors
    bad = report.findings or report.crashes or report.engine_failures
    verdict = "clean" if not bad else f"{errors} error(s), {warns} warning(s)"
    if report.unexercised:   # findings or not: the code that did not run was not checked
        verdict += (f" as far as it ran ({'; '.join(dict.fromkeys(report.unexercised))}: "
                    "see the notes)")
    print(f"{PROG}: {verdict}", file=out)
    return 1 if bad else 0


def _print_findings(findings: list[Violation], out: TextIO, limit: int | None) -> None:
    from vime.contract.grouping import group_findings

    if limit is None:
        groups = group_findings(findings)
        for g in groups:
            print(g.format(), file=out)
        if len(groups) < len(findings):
            print(f"({len(findings)} findings in {len(groups)} group(s); --max-violations "
                  f"{len(findings)} lists them one by one)", file=out)
        return
    for v in findings[:limit]:
        print(v.format(), file=out)
    if len(findings) > limit:
        print(f"... and {len(findings) - limit} more (--max-violations {len(findings)} lists "
              "them all)", file=out)
