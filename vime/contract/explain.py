"""Every id the tools print, explained: what it checks, why, the fix, and where it is checked.

``vime-lint rule VIM108`` prints :func:`explain` of a runtime or load-time invariant (static
``VIM0xx`` ids with a rule print the rule's page, then :func:`checked_by`);
``scripts/document_contract.py`` writes :func:`checked_by` into docs/contract.md §6. Read from
``vime.contract.INVARIANTS`` only (standard library).

Usage::

    checked_by(INVARIANTS["VIM108"])
    # ["`vime train`: at run time, B2 (generate results), B5 (train output before conversion); "
    #  "raised whatever --contract-check says (always enforced)",
    #  "`vime-lint check`: the dry run of the hooks a launch command names"]
    print(explain(INVARIANTS["VIM108"]))
"""

from __future__ import annotations

from vime.contract.invariants import BOUNDARIES, INVARIANTS, Invariant

__all__ = ["DRY_RUN_BOUNDARIES", "checked_by", "explain"]

#: The boundaries the ``vime-lint check`` dry run passes results through (load time, the
#: rollout function's call and outputs, every hook the default rollout calls).
DRY_RUN_BOUNDARIES: frozenset[str] = frozenset({"B0", "B1", "B2", "B3", "B4", "B5", "B6"})

_DOC = {"static": "docs/rules.md", "load": "docs/contract.md §6b", "runtime": "docs/contract.md §6b"}


def checked_by(inv: Invariant) -> list[str]:
    """Where ``inv`` is checked: one line per tool, with the moment (``list[str]``)."""
    if inv.scope == "static":
        return ["`vime-lint rollout PATH`: statically, without importing the code (also the "
                "pre-commit hook)"]
    where = ", ".join(f"{b} ({BOUNDARIES[b]})" for b in inv.boundaries)
    when = "at load time, before any engine starts" if inv.scope == "load" else "at run time"
    mode = ("raised whatever --contract-check says (always enforced)"
            if inv.enforcement == "always" else "--contract-check decides (default: raise)")
    out = [f"`vime train`: {when}, {where}; {mode}"]
    if set(inv.boundaries) & DRY_RUN_BOUNDARIES:
        out.append("`vime-lint check`: the dry run of the hooks a launch command names")
    return out


def explain(inv: Invariant) -> str:
    """``inv`` as plain text for ``vime-lint rule ID``: title, why, fix, where checked, twins."""
    lines = [f"{inv.id} `{inv.slug}` ({inv.scope}, severity {inv.severity})", "",
             inv.title, "", f"Why: {inv.rationale}", f"Fix: {inv.fix}",
             f"Failure kind: {inv.bug_kind}", "", "Checked by:"]
    lines += [f"  - {line}" for line in checked_by(inv)]
    twins = [f"{t} ({INVARIANTS[t].scope})" for t in inv.twins if t in INVARIANTS]
    if twins:
        lines.append(f"Twins (the same fact checked at another time): {', '.join(twins)}")
    if inv.status != "stable":
        lines.append(f"Status: {inv.status}")
    lines.append(f"Docs: {_DOC[inv.scope]}")
    return "\n".join(lines) + "\n"
