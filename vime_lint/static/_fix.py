"""Applying fixes: CST replacements -> fixed module -> text edits -> fixed source.

A rule's :class:`~vime_lint.static._rule.Fix` replaces nodes by identity and may ask for
imports. :func:`fix_edits` turns one fix into text edits of the original source (so that JSON
output carries them and several fixes can be applied in one pass), :func:`apply_edits`
applies non-overlapping edits.

Usage::

    edits = fix_edits(module, source, fix)      # tuple[Edit, ...]
    new_source, applied = apply_edits(source, [edits_a, edits_b])
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence

import libcst as cst

from vime_lint.static._cst import dotted_text
from vime_lint.static._model import Edit
from vime_lint.static._rule import Fix

__all__ = ["apply_edits", "apply_fix", "fix_edits"]


class _Replace(cst.CSTTransformer):
    def __init__(self, mapping: dict[int, cst.CSTNode]) -> None:
        super().__init__()
        self.mapping = mapping

    def on_leave(self, original_node: cst.CSTNode, updated_node: cst.CSTNode) -> cst.CSTNode:  # type: ignore[override]
        return self.mapping.get(id(original_node), updated_node)


def _is_import_line(stmt: cst.BaseStatement) -> bool:
    return isinstance(stmt, cst.SimpleStatementLine) and all(
        isinstance(s, (cst.Import, cst.ImportFrom)) for s in stmt.body)


def _add_import(module: cst.Module, mod: str, name: str) -> cst.Module:
    body = list(module.body)
    for i, stmt in enumerate(body):
        if not isinstance(stmt, cst.SimpleStatementLine):
            continue
        for j, small in enumerate(stmt.body):
            if (isinstance(small, cst.ImportFrom) and small.relative == ()
                    and dotted_text(small.module) == mod
                    and not isinstance(small.names, cst.ImportStar)):
                names = list(small.names)
                if any(isinstance(a.name, cst.Name) and a.name.value == name and a.asname is None
                       for a in names):
                    return module
                last = names[-1].with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
                names = [*names[:-1], last, cst.ImportAlias(name=cst.Name(name))]
                new_small = small.with_changes(names=names)
                new_stmt = stmt.with_changes(body=[*stmt.body[:j], new_small, *stmt.body[j + 1:]])
                body[i] = new_stmt
                return module.with_changes(body=body)
    insert_at = 0
    for i, stmt in enumerate(body):
        is_doc = (i == 0 and isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1
                  and isinstance(stmt.body[0], cst.Expr)
                  and isinstance(stmt.body[0].value, (cst.SimpleString, cst.ConcatenatedString)))
        if is_doc or _is_import_line(stmt):
            insert_at = i + 1
        else:
            break
    new = cst.parse_statement(f"from {mod} import {name}\n")
    body.insert(insert_at, new)
    return module.with_changes(body=body)


def apply_fix(module: cst.Module, fix: Fix) -> cst.Module:
    """``module`` with ``fix``'s replacements and imports applied."""
    mapping = {id(old): new for old, new in fix.replacements}
    out = module.visit(_Replace(mapping)) if mapping else module
    assert isinstance(out, cst.Module)
    for mod, name in fix.imports:
        out = _add_import(out, mod, name)
    return out


def _offsets(text: str) -> list[int]:
    starts = [0]
    for i, ch in enumerate(text):
        if ch == "\n":
            starts.append(i + 1)
    return starts


def _line_col(starts: list[int], offset: int) -> tuple[int, int]:
    lo, hi = 0, len(starts) - 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if starts[mid] <= offset:
            lo = mid
        else:
            hi = mid - 1
    return lo + 1, offset - starts[lo]


def fix_edits(module: cst.Module, source: str, fix: Fix) -> tuple[Edit, ...]:
    """The text edits that turn ``source`` into the fixed module's code (one per hunk)."""
    new_code = apply_fix(module, fix).code
    if new_code == source:
        return ()
    old_lines = source.splitlines(keepends=True)
    new_lines = new_code.splitlines(keepends=True)
    old_starts = _offsets(source)
    line_starts = [0]
    for ln in old_lines:
        line_starts.append(line_starts[-1] + len(ln))
    new_starts = [0]
    for ln in new_lines:
        new_starts.append(new_starts[-1] + len(ln))
    edits: list[Edit] = []
    matcher = difflib.SequenceMatcher(a=old_lines, b=new_lines, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        a0, a1 = line_starts[i1], line_starts[i2]
        b0, b1 = new_starts[j1], new_starts[j2]
        old_chunk, new_chunk = source[a0:a1], new_code[b0:b1]
        p = 0
        while p < min(len(old_chunk), len(new_chunk)) and old_chunk[p] == new_chunk[p]:
            p += 1
        s = 0
        while (s < min(len(old_chunk), len(new_chunk)) - p
               and old_chunk[len(old_chunk) - 1 - s] == new_chunk[len(new_chunk) - 1 - s]):
            s += 1
        start, end = a0 + p, a1 - s
        line, col = _line_col(old_starts, start)
        end_line, end_col = _line_col(old_starts, end)
        edits.append(Edit(new_chunk[p:len(new_chunk) - s], line, col, end_line, end_col))
    return tuple(edits)


def apply_edits(source: str, fixes: Sequence[Sequence[Edit]]) -> tuple[str, int]:
    """Apply each fix's edits unless they overlap an earlier fix's; return (text, applied)."""
    starts = _offsets(source)

    def off(line: int, col: int) -> int:
        return starts[line - 1] + col if line - 1 < len(starts) else len(source)

    taken: list[tuple[int, int]] = []
    chosen: list[tuple[int, int, str]] = []
    applied = 0
    for edits in fixes:
        spans = [(off(e.line, e.col), off(e.end_line, e.end_col), e.content) for e in edits]
        if not spans:
            continue
        if any(a < tb and ta < b or (a == b == ta == tb) for a, b, _ in spans for ta, tb in taken):
            continue
        taken += [(a, b) for a, b, _ in spans]
        chosen += spans
        applied += 1
    out = source
    for a, b, content in sorted(chosen, key=lambda t: (t[0], t[1]), reverse=True):
        out = out[:a] + content + out[b:]
    return out, applied
