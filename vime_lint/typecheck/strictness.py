"""Whether a mypy message is mypy's own strictness (VIM204) rather than a contract type violated.

:func:`strictness` says why a message is strictness (``var-annotated``, ``object`` from an
untyped container, an unnarrowed ``X | None`` or union of modes), or None when it may be a
violation; :data:`GOT` and :func:`union_members` read the types a message names.
"""

from __future__ import annotations

import re

__all__ = ["GOT", "strictness", "union_members"]


#: mypy codes that are never about a contract value (annotations, names, imports, redefinitions).
_STRICT_CODES = frozenset({"var-annotated", "has-type", "annotation-unchecked", "no-redef",
                           "name-defined", "import", "import-untyped", "import-not-found",
                           "valid-type", "unused-ignore", "truthy-function", "unreachable",
                           "redundant-cast", "type-var", "override", "no-any-return"})


#: ``Item "X" of "U" has no attribute`` where X is one side of a union of modes that the code
#: selects by other means (``evaluation``, a generate function that does not fan out).
_MODE_ITEMS = (("RolloutFnEvalOutput", "RolloutFnTrainOutput"),
               ("RolloutFnTrainOutput", "RolloutFnEvalOutput"),
               ("list[Sample]", "Sample | list[Sample]"),
               # the same fan-out union where `Sample` is unknown (imported from slime or
               # miles, read as `Any`): `sample: Sample | list[Sample]` in ported code
               ("list[Any]", "Any | list[Any]"))


GOT = re.compile(r'(?:got|has type|incompatible type) "(?P<got>[^"]*)"[;,)]?.*?'
                  r'(?:expected|variable has type) "(?P<want>[^"]*)"')


def union_members(t: str) -> list[str]:
    """The top-level members of a union's text (``"a | dict[str, b | c] | None"``)."""
    out: list[str] = []
    depth, cur = 0, ""
    for ch in t:
        depth += ch in "[("
        depth -= ch in "])"
        cur += ch
        if depth == 0 and cur.endswith(" | "):
            out.append(cur[:-3].strip())
            cur = ""
    out.append(cur.strip())
    return [m for m in out if m]


def _none_only(got: str, want: str) -> bool:
    """``got`` is ``want`` (or narrower) plus ``None``: an ``Optional`` not narrowed, not
    certainly None."""
    members = union_members(got)
    if "None" not in members or members == ["None"]:
        return False
    wanted = set(union_members(want))
    return all(m == "None" or m in wanted or m == "Any" or (m == "int" and "float" in wanted)
               for m in members)


def strictness(message: str, code: str) -> str | None:
    """Why mypy's ``message`` (error code ``code``) is its own strictness rather than a
    contract type violated (VIM204's context), or None when it may be a violation."""
    if code in _STRICT_CODES:
        return f"mypy's `{code}` check, no contract type involved"
    if '"object"' in message:
        return "a value of type `object` (read from an untyped container)"
    if 'Item "None" of ' in message or re.search(r'\("None" and |and "None"\)|\("None"\)',
                                                    message):
        return "an `X | None` used without narrowing (not certainly None)"
    for item, union in _MODE_ITEMS:
        if f'Item "{item}" of "{union}' in message or (
                f'Item "{item}" of "' in message and union in message):
            return (f"a `{union}` not narrowed to one side (the mode is chosen by "
                    "`evaluation` or by a generate function that fans out)")
    if re.search(r'Value of type "[^"]*\| None" is not indexable|"None" (?:not callable|has no)',
                 message):
        return "an `X | None` used without narrowing (not certainly None)"
    got = GOT.search(message)
    if got is not None and (got["got"] in ("object", "Any")
                            or _none_only(got["got"], got["want"])):
        return "an `X | None` (or `object`) where `X` is due, not certainly None"
    return None
