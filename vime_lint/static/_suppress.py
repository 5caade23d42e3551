"""``# noqa`` comments: line-level ``# noqa: VIM001``, file-level ``# vime-lint: noqa: VIM001``.

A bare ``# noqa`` (no codes) silences nothing here and is itself a finding (VIM090); a
suppression that silences nothing is a finding too (VIM091). Codes of other tools
(``# noqa: E501``) are ignored.

Usage::

    for c in parse_suppressions(source):
        c.line, c.col, c.codes, c.file_level      # 3, 10, ("VIM001",), False

The comment syntax follows flake8 and Ruff.
"""

from __future__ import annotations

import io
import re
import tokenize
from dataclasses import dataclass

__all__ = ["Suppression", "parse_suppressions"]

_FILE = re.compile(r"#\s*vime-lint\s*:\s*noqa\b(?P<rest>.*)", re.IGNORECASE)
_LINE = re.compile(r"#\s*noqa\b(?P<rest>.*)", re.IGNORECASE)
_CODES = re.compile(r"^\s*:\s*(?P<codes>[A-Za-z]+[0-9]+(?:\s*[,\s]\s*[A-Za-z]+[0-9]+)*)")
_CODE = re.compile(r"[A-Za-z]+[0-9]+")


@dataclass(frozen=True, slots=True)
class Suppression:
    """One noqa comment."""

    #: 1-based line and 0-based column of the ``#``.
    line: int
    col: int
    #: The codes it names, upper-cased (empty for a bare noqa).
    codes: tuple[str, ...]
    #: A file-level ``vime-lint: noqa: CODES`` comment rather than a line-level one.
    file_level: bool
    #: Length of the comment (for the end column of findings).
    length: int

    @property
    def bare(self) -> bool:
        """True for a ``# noqa`` without codes."""
        return not self.codes

    @property
    def vime_codes(self) -> tuple[str, ...]:
        """The ``VIM###`` codes it names."""
        return tuple(c for c in self.codes if c.startswith("VIM"))


def _comments(source: str) -> list[tuple[int, int, str]]:
    try:
        return [(tok.start[0], tok.start[1], tok.string)
                for tok in tokenize.generate_tokens(io.StringIO(source).readline)
                if tok.type == tokenize.COMMENT]
    except (tokenize.TokenError, SyntaxError, IndentationError):
        out = []
        for i, line in enumerate(source.splitlines(), start=1):
            pos = line.find("#")
            if pos >= 0:
                out.append((i, pos, line[pos:]))
        return out


def _directive_starts(text: str) -> list[int]:
    """Offsets of ``#`` that start a directive: the comment's own, or one after whitespace."""
    return [i for i, ch in enumerate(text) if ch == "#" and (i == 0 or text[i - 1] in " \t")]


def _parse_one(line: int, col: int, text: str) -> Suppression | None:
    m = None
    file_level = False
    for start in _directive_starts(text):
        m = _FILE.match(text, start)
        file_level = m is not None
        if m is None:
            m = _LINE.match(text, start)
        if m is not None:
            break
    if m is None:
        return None
    cm = _CODES.match(m.group("rest"))
    codes = tuple(c.upper() for c in _CODE.findall(cm.group("codes"))) if cm else ()
    return Suppression(line, col + m.start(), codes, file_level, len(text) - m.start())


def parse_suppressions(source: str) -> list[Suppression]:
    """Every noqa comment of ``source`` (empty fast when the text has no ``noqa``)."""
    if "noqa" not in source.lower():
        return []
    out = []
    for line, col, text in _comments(source):
        s = _parse_one(line, col, text)
        if s is not None:
            out.append(s)
    return out
