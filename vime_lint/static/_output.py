"""Output formats: concise, full, json, github, sarif (following Ruff's shapes).

Columns are 1-based in every format (internally they are 0-based).

Usage::

    text = render(results, "concise")          # "r.py:3:5: VIM001 rollout function ..."

SARIF 2.1.0 (OASIS, https://docs.oasis-open.org/sarif/sarif/v2.1.0/) for ``sarif``; GitHub Actions
workflow commands for ``github``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from vime_lint import __version__
from vime_lint.options import FORMATS
from vime_lint.static._model import Finding, LintResult
from vime_lint.static._rule import Rule
from vime_lint.static.rules._docs import rule_anchor

__all__ = ["render", "statistics", "summary"]

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
INFO_URI = "https://github.com/vllm-project/vime/blob/main/docs/rules.md"


def _sorted(results: Sequence[LintResult]) -> list[Finding]:
    return sorted((f for r in results for f in r.findings),
                  key=lambda f: (f.path, f.line, f.col, f.code))


def _concise(f: Finding) -> str:
    return f"{f.path}:{f.line}:{f.col + 1}: {f.code} {f.message}"


def _concise_with_fix(f: Finding) -> str:
    """The concise line, then ``  help: <fix>`` (as Ruff prints it) and, when the rule offers
    an automatic fix, ``  fix: <title> (--fix | --unsafe-fixes)``."""
    lines = [_concise(f)]
    if f.fix_hint:
        lines.append(f"  help: {f.fix_hint}")
    if f.edits and f.fix_title:
        lines.append(f"  fix: {f.fix_title} ({'--fix' if f.fix_safe else '--unsafe-fixes'})")
    return "\n".join(lines)


def _full(f: Finding, source: str) -> str:
    lines = source.splitlines()
    text = lines[f.line - 1] if 0 < f.line <= len(lines) else ""
    width = len(str(f.line))
    span = f.end_col - f.col if f.end_line == f.line and f.end_col > f.col else 1
    out = [f"{f.path}:{f.line}:{f.col + 1}: {f.code} [{f.severity}] {f.message}",
           f"{' ' * width} |",
           f"{f.line} | {text}",
           f"{' ' * width} | {' ' * f.col}{'^' * max(1, min(span, max(1, len(text) - f.col)))}"]
    if f.fix_hint:
        out.append(f"{' ' * width} = help: {f.fix_hint}")
    if f.fix_title:
        out.append(f"{' ' * width} = fix ({'safe' if f.fix_safe else 'unsafe'}): {f.fix_title}")
    return "\n".join(out) + "\n"


def _loc(line: int, col: int) -> dict[str, int]:
    return {"row": line, "column": col + 1}


def _json_finding(f: Finding) -> dict[str, Any]:
    fix = None
    if f.edits:
        fix = {"applicability": "safe" if f.fix_safe else "unsafe", "message": f.fix_title,
               "edits": [{"content": e.content, "location": _loc(e.line, e.col),
                          "end_location": _loc(e.end_line, e.end_col)} for e in f.edits]}
    return {"code": f.code, "slug": f.slug, "severity": f.severity, "message": f.message,
            "filename": f.path, "location": _loc(f.line, f.col),
            "end_location": _loc(f.end_line, f.end_col), "fix_hint": f.fix_hint, "fix": fix}


def _github(f: Finding) -> str:
    level = "error" if f.severity == "error" else "warning"
    return (f"::{level} title=vime-lint ({f.code}),file={f.path},line={f.line},col={f.col + 1},"
            f"endLine={f.end_line},endColumn={f.end_col + 1}::{_concise(f)}")


def _sarif(findings: list[Finding], rules: Sequence[type[Rule]]) -> dict[str, Any]:
    seen: dict[str, type[Rule]] = {}
    for r in rules:
        seen.setdefault(r.code(), r)
    codes = sorted(seen)
    index = {c: i for i, c in enumerate(codes)}
    sarif_rules = []
    for c in codes:
        inv = seen[c].INVARIANT
        sarif_rules.append({
            "id": c, "name": inv.slug,
            "shortDescription": {"text": inv.title},
            "fullDescription": {"text": inv.rationale},
            "help": {"text": inv.fix},
            "helpUri": f"{INFO_URI}#{rule_anchor(seen[c])}",
            "defaultConfiguration": {"level": "error" if inv.severity == "error" else "warning"},
        })
    results = []
    for f in findings:
        res: dict[str, Any] = {
            "ruleId": f.code, "level": "error" if f.severity == "error" else "warning",
            "message": {"text": f.message},
            "locations": [{"physicalLocation": {
                "artifactLocation": {"uri": f.path},
                "region": {"startLine": f.line, "startColumn": f.col + 1,
                           "endLine": f.end_line, "endColumn": f.end_col + 1}}}],
        }
        if f.code in index:
            res["ruleIndex"] = index[f.code]
        if f.edits:
            res["fixes"] = [{"description": {"text": f.fix_title}, "artifactChanges": [{
                "artifactLocation": {"uri": f.path},
                "replacements": [{"deletedRegion": {
                    "startLine": e.line, "startColumn": e.col + 1,
                    "endLine": e.end_line, "endColumn": e.end_col + 1},
                    "insertedContent": {"text": e.content}} for e in f.edits]}]}]
        results.append(res)
    return {"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [{
        "tool": {"driver": {"name": "vime-lint", "version": __version__,
                            "informationUri": INFO_URI, "rules": sarif_rules}},
        "results": results}]}


def render(results: Sequence[LintResult], fmt: str, rules: Sequence[type[Rule]] = (), *,
           show_fixes: bool = True) -> str:
    """The findings of ``results`` in format ``fmt`` (one of :data:`FORMATS`); in ``concise``
    each finding's fix follows on indented lines unless ``show_fixes`` is False
    (``--no-show-fixes``).

    Raises:
        ValueError: unknown format.
    """
    findings = _sorted(results)
    if fmt == "concise":
        line = _concise_with_fix if show_fixes else _concise
        return "".join(line(f) + "\n" for f in findings)
    if fmt == "full":
        sources = {r.path: r.source for r in results}
        return "\n".join(_full(f, sources.get(f.path, "")) for f in findings)
    if fmt == "json":
        return json.dumps([_json_finding(f) for f in findings], indent=2) + "\n"
    if fmt == "github":
        return "".join(_github(f) + "\n" for f in findings)
    if fmt == "sarif":
        return json.dumps(_sarif(findings, rules), indent=2) + "\n"
    raise ValueError(f"unknown output format {fmt!r}; choose from {', '.join(FORMATS)}")


def summary(results: Sequence[LintResult], *, fixed: int, unsafe_fixes: bool,
            problems: int | None = None) -> str:
    """Ruff-like closing lines: counts, fixable counts, fixes applied. With ``problems`` (the
    number of files that could not be read or parsed) given, a clean run says ``All checks
    passed!``."""
    findings = _sorted(results)
    lines = []
    errors = sum(f.severity == "error" for f in findings)
    warnings = len(findings) - errors
    if findings:
        lines.append(f"Found {len(findings)} finding(s): {errors} error(s), {warnings} warning(s)"
                     + (f" ({fixed} fixed)." if fixed else "."))
        safe = sum(1 for f in findings if f.edits and f.fix_safe)
        unsafe = sum(1 for f in findings if f.edits and not f.fix_safe)
        if safe or (unsafe and unsafe_fixes):
            lines.append(f"[*] {safe + (unsafe if unsafe_fixes else 0)} fixable with `--fix`"
                         + (" --unsafe-fixes" if unsafe_fixes and unsafe else "") + ".")
        if unsafe and not unsafe_fixes:
            lines.append(f"{unsafe} more fix(es) available with `--unsafe-fixes`.")
    elif fixed:
        lines.append(f"Found {fixed} finding(s) ({fixed} fixed, 0 remaining).")
    elif problems == 0:
        lines.append("All checks passed!")
    return "".join(line + "\n" for line in lines)


def statistics(results: Sequence[LintResult]) -> str:
    """One line per code: count, code, ``[*]`` when fixable, slug."""
    counts: dict[tuple[str, str], list[Finding]] = {}
    for f in _sorted(results):
        counts.setdefault((f.code, f.slug), []).append(f)
    rows = sorted(counts.items(), key=lambda kv: (-len(kv[1]), kv[0]))
    return "".join(f"{len(fs):>5}\t{code}\t{'[*]' if any(f.edits for f in fs) else '   '} "
                   f"{slug}\n" for (code, slug), fs in rows)
