"""Rule documentation from the rules' own docstrings and ``vime.contract.INVARIANTS``.

Used by ``vime-lint rule VIM001``, the output formats (anchors) and ``vime_lint.rules_page``
(``docs/rules.md``).

Usage::

    print(rule_markdown(RolloutFunctionSignature))

Follows Fixit's ``scripts/document_rules.py``.
"""

from __future__ import annotations

import inspect
import re

from vime_lint.static._model import options_from_mapping
from vime_lint.static._rule import Rule
from vime_lint.static.rules._severity import SEVERITY_REASONS

__all__ = ["fix_availability", "github_anchor", "rule_anchor", "rule_heading", "rule_markdown"]


def github_anchor(heading: str) -> str:
    """The fragment GitHub gives a Markdown heading's text: lower case, every character but
    letters, digits, ``_``, ``-`` and spaces dropped, spaces turned into ``-``.

    ``github_anchor("VIM006 `sample-constructor`")`` is ``"vim006-sample-constructor"``. (GitHub
    adds ``-1``, ``-2``... to repeated headings; rule headings are unique.)
    """
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def rule_heading(rule: type[Rule]) -> str:
    """The text of a rule's heading on ``docs/rules.md``: ``VIM006 `sample-constructor```."""
    return f"{rule.INVARIANT.id} `{rule.slug()}`"


def rule_anchor(rule: type[Rule]) -> str:
    """The fragment of a rule's section on ``docs/rules.md`` (SARIF ``helpUri``, the index)."""
    return github_anchor(rule_heading(rule))


def fix_availability(rule: type[Rule]) -> str:
    """``"safe"``, ``"unsafe"``, ``"safe, unsafe"`` or ``"none"``, from the rule's INVALID cases."""
    from vime_lint.static._engine import lint_source

    kinds: set[str] = set()
    for case in rule.INVALID:
        if case.fixed is None:
            continue
        result = lint_source(case.code, "case.py", options_from_mapping(case.options),
                             rules=[rule])
        for f in result.findings:
            if f.edits:
                kinds.add("safe" if f.fix_safe else "unsafe")
    return ", ".join(sorted(kinds)) or "none"


def rule_markdown(rule: type[Rule], *, level: int = 2) -> str:
    """One rule as Markdown: heading, facts line, then its docstring (headings shifted)."""
    inv = rule.INVARIANT
    doc = inspect.cleandoc(rule.__doc__ or "")
    summary, _, body = doc.partition("\n")
    body = body.strip("\n").replace("\n## ", "\n" + "#" * (level + 1) + " ")
    if body.startswith("## "):
        body = "#" * (level + 1) + body[2:]
    twins = ", ".join(inv.twins) or "none"
    aliases = f" · old code: {', '.join(rule.ALIASES)}" if rule.ALIASES else ""
    facts = (f"Code `{inv.id}` · severity **{inv.severity}** · fix: {fix_availability(rule)}"
             f" · twins: {twins} · failure kind: \"{inv.bug_kind}\"{aliases}")
    reason = SEVERITY_REASONS.get(inv.id)
    if reason:
        facts += f"\n\nSeverity: {reason}."
    return (f"{'#' * level} {rule_heading(rule)}\n\n{summary.strip()}\n\n{facts}\n\n"
            f"Invariant: {inv.title}\n\n{body}\n")
