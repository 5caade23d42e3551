"""vime-lint's findings as LSP values: diagnostics, fix edits, ``# noqa`` edits, hover texts.

Usage::

    diagnostic(finding)                  # lsprotocol Diagnostic, 0-based range, code linked
    fix_edits(finding)                   # [TextEdit] of the finding's own fix (may be empty)
    noqa_edit(source, finding)           # TextEdit adding `# noqa: VIMxxx` to its line
    hover_text(source, line, character, hooks)   # Markdown for an id or a hook's def, or None

Pure functions of the finding and the text; positions follow LSP (0-based lines, columns in
UTF-16 code units). vime-lint's columns are code points: :func:`utf16_col` converts.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from lsprotocol import types

from vime.contract.hooks import HookSpec
from vime_lint.static._model import Edit, Finding

__all__ = ["SOURCE", "diagnostic", "fix_edits", "hover_text", "noqa_edit", "rule_url",
           "utf16_col"]

#: ``Diagnostic.source``: what editors show next to each finding.
SOURCE = "vime-lint"
_ID = re.compile(r"VIM\d{3}")
_NOQA = re.compile(r"#\s*noqa\s*:\s*(?P<codes>[A-Z0-9, ]+)", re.IGNORECASE)


def utf16_col(line_text: str, col: int) -> int:
    """Code-point column ``col`` of ``line_text`` as UTF-16 code units (LSP's default)."""
    head = line_text[:col]
    return col + sum(1 for ch in head if ord(ch) > 0xFFFF)


def _lines(source: str) -> list[str]:
    return source.splitlines() or [""]


def _position(lines: list[str], line: int, col: int) -> types.Position:
    """vime-lint's 1-based line and code-point column -> an LSP position (clamped)."""
    i = min(max(line - 1, 0), len(lines) - 1)
    text = lines[i] if lines else ""
    return types.Position(line=i, character=utf16_col(text, min(col, len(text))))


def rule_url(code: str) -> str | None:
    """The rule's section on docs/rules.md (the SARIF ``helpUri``), or None for a runtime id."""
    from vime_lint.static._output import INFO_URI
    from vime_lint.static.rules import rules_for_code
    from vime_lint.static.rules._docs import rule_anchor

    found = rules_for_code(code)
    return f"{INFO_URI}#{rule_anchor(found[0])}" if found else None


def diagnostic(finding: Finding, source: str) -> types.Diagnostic:
    """One finding as a Diagnostic: its range, severity, id (linked to its rule's docs), the
    message and, on a second line, the fix."""
    lines = _lines(source)
    url = rule_url(finding.code)
    message = finding.message + (f"\nfix: {finding.fix_hint}" if finding.fix_hint else "")
    return types.Diagnostic(
        range=types.Range(start=_position(lines, finding.line, finding.col),
                          end=_position(lines, finding.end_line, finding.end_col)),
        message=message, source=SOURCE, code=finding.code,
        code_description=types.CodeDescription(href=url) if url else None,
        severity=(types.DiagnosticSeverity.Error if finding.severity == "error"
                  else types.DiagnosticSeverity.Warning),
        data={"slug": finding.slug, "fixable": finding.fixable})


def _text_edit(lines: list[str], edit: Edit) -> types.TextEdit:
    return types.TextEdit(range=types.Range(start=_position(lines, edit.line, edit.col),
                                            end=_position(lines, edit.end_line, edit.end_col)),
                          new_text=edit.content)


def fix_edits(finding: Finding, source: str) -> list[types.TextEdit]:
    """The finding's own fix as TextEdits (``[]`` when the rule offers none)."""
    lines = _lines(source)
    return [_text_edit(lines, e) for e in finding.edits]


def noqa_edit(source: str, finding: Finding) -> types.TextEdit:
    """A TextEdit that silences ``finding`` on its first line: ``  # noqa: CODE`` appended, or
    the code added to a ``# noqa: ...`` already there."""
    lines = _lines(source)
    i = min(max(finding.line - 1, 0), len(lines) - 1)
    text = lines[i]
    m = _NOQA.search(text)
    if m:
        codes = [c.strip().upper() for c in m.group("codes").split(",") if c.strip()]
        if finding.code not in codes:
            codes.append(finding.code)
        new_line = text[:m.start()] + "# noqa: " + ", ".join(codes)
    else:
        new_line = text.rstrip() + f"  # noqa: {finding.code}"
    end = types.Position(line=i, character=utf16_col(text, len(text)))
    return types.TextEdit(range=types.Range(start=types.Position(line=i, character=0), end=end),
                          new_text=new_line)


def _word_at(text: str, character: int) -> str:
    for m in _ID.finditer(text):
        if m.start() <= character <= m.end():
            return m.group(0)
    return ""


def _hook_markdown(name: str, spec: HookSpec) -> str:
    from vime.contract.explain import IN_WORDS

    return "\n".join([
        f"**{name}**: vime calls it as `{spec.arg}` ({spec.doc})", "",
        "```python", spec.render(name), "```", "",
        f"- returns: `{spec.returns}`",
        f"- called: {spec.call_site}",
        f"- checked {IN_WORDS['B0']} (VIM100), and statically by `vime-lint rollout`; its "
        "results are checked at run time where vime calls it (`vime-lint rule VIM100`)"])


def hover_text(source: str, line: int, character: int,
               hooks: Mapping[str, tuple[int, HookSpec]]) -> str | None:
    """Markdown for the hover at 0-based ``line``/``character``: the rule's text for a
    ``VIM###`` under the cursor (what ``vime-lint rule ID`` prints), the contract of a hook when
    the cursor is on its ``def`` line, else None.

    Args:
        hooks: module-level hook name -> (1-based line of its ``def``, its ``HookSpec``).
    """
    from vime.contract.explain import explain
    from vime.contract.invariants import INVARIANTS

    lines = _lines(source)
    if not 0 <= line < len(lines):
        return None
    code = _word_at(lines[line], character)
    if code and code in INVARIANTS:
        return "```text\n" + explain(INVARIANTS[code]) + "```"
    for name, (def_line, spec) in hooks.items():
        if def_line - 1 == line:
            return _hook_markdown(name, spec)
    return None
