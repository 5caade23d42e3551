"""Every id the tools print, explained: what it checks, why, the fix, and where it is checked.

``vime-lint rule VIM108`` prints :func:`explain` of a runtime or load-time invariant (static
``VIM0xx`` ids with a rule print the rule's page, then :func:`checked_by`);
``scripts/document_contract.py`` writes :func:`checked_by` into docs/contract.md §6. Read from
``vime.contract.INVARIANTS`` only (standard library).

Usage::

    checked_by(INVARIANTS["VIM108"])
    # ["`vime train`: at run time, on each generate call (...); on the train output, before it
    #  becomes training data; raised whatever --contract-check says (always enforced)",
    #  "`vime-lint check`: the same check in a dry run of the hooks a launch command names ..."]
    print(explain(INVARIANTS["VIM108"]))
"""

from __future__ import annotations

from vime.contract.invariants import BOUNDARIES, INVARIANTS, Invariant

__all__ = ["DRY_RUN_BOUNDARIES", "IN_WORDS", "TYPES_PREFIX", "checked_by", "explain"]

#: The boundaries the ``vime-lint check`` dry run passes results through (load time, the
#: rollout function's call and outputs, every hook the default rollout calls).
DRY_RUN_BOUNDARIES: frozenset[str] = frozenset({"B0", "B1", "B2", "B3", "B4", "B5", "B6"})

_DOC = {"static": "docs/rules.md", "load": "docs/contract.md §6b", "runtime": "docs/contract.md §6b",
        "probe": "docs/contract.md §6d", "template": "docs/contract.md §6e"}

#: Static ids reported by ``vime-lint types`` (mypy on the hooks given the contract's types,
#: docs/contract.md §6c) rather than by ``vime-lint rollout``: the ``VIM2xx`` block.
TYPES_PREFIX = "VIM2"

#: Each boundary of ``BOUNDARIES`` as a user reads it (``vime-lint rule`` prints these, not
#: the boundary names).
IN_WORDS: dict[str, str] = {
    "B0": "when a hook is loaded, before any engine starts (its signature)",
    "B1": "on what the rollout function returns",
    "B2": "on each generate call (the sample it gets and the samples it returns)",
    "B3": "on each result of the reward function",
    "B4": "on the results of the other hooks (sample hooks, filters, conversion)",
    "B5": "on the train output, before it becomes training data",
    "B6": "on the eval output",
    "B7": "on each result of a trainer hook (loss, advantages, TIS, pg-loss reducer), every "
          "micro-batch",
}


def checked_by(inv: Invariant) -> list[str]:
    """Where ``inv`` is checked: one line per tool, with the moment in words (``list[str]``,
    each ``"`TOOL`: when"``)."""
    if inv.scope == "static" and inv.id.startswith(TYPES_PREFIX):
        return ["`vime-lint types PATH`: statically, mypy on the hooks given the contract's "
                "types, without running the code (`vime-lint rollout` does not report it)"]
    if inv.scope == "probe":
        return ["`vime-lint check`: after the dry run, the launch's reward is called on "
                "responses built from each label (the answer, a wrong one, none, two, ...); "
                "`--no-probe` turns it off"]
    if inv.scope == "template":
        return ["`vime-lint template MODEL_DIR`: statically, on the chat template of a model or "
                "tokenizer folder (conversations of 1 to 4 turns rendered and compared); the "
                "training sequences themselves are compared at run time by VIM194"]
    if inv.scope == "static":
        return ["`vime-lint rollout PATH`: statically, without importing the code (also the "
                "pre-commit hook)"]
    where = "; ".join(IN_WORDS.get(b, BOUNDARIES[b]) for b in inv.boundaries)
    when = "at load time" if inv.scope == "load" else "at run time"
    mode = ("raised whatever --contract-check says (always enforced)"
            if inv.enforcement == "always" else "--contract-check decides (default: raise)")
    out = [f"`vime train`: {when}, {where}; {mode}"]
    if set(inv.boundaries) & DRY_RUN_BOUNDARIES:
        out.append("`vime-lint check`: the same check in a dry run of the hooks a launch "
                   "command names (one train and one eval step on the CPU)")
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
