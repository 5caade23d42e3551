"""Read a YAML file the user names (``--config``, ``--custom-config-path``, ``--eval-config``)
with every failure one line that names the file and, where known, the line.

Usage::

    doc = read_yaml("run.yaml")     # the parsed document; YamlFileError (a ValueError) if not

Refused, each with its own reason: a missing path or a folder, an unreadable file (the
operating system's reason), a binary file (a NUL byte), bytes that are not UTF-8 (line and
byte offset of the first), invalid YAML (PyYAML's reason and line, on one line), and a
document nested deeper than :data:`MAX_DEPTH` brackets (found by a linear scan before parsing)
or than Python's recursion limit lets PyYAML build.
``yaml.safe_load`` only: no tags that build Python objects.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["YamlFileError", "read_yaml"]


class YamlFileError(ValueError):
    """A YAML file that cannot be read or parsed: the message is one line naming the file."""


#: Levels of ``[``/``{`` nesting refused before parsing (PyYAML takes seconds to reach
#: Python's recursion limit on thousands of levels; a configuration needs a few).
MAX_DEPTH = 100


def _flow_depth(text: str) -> int:
    """The deepest nesting of ``[``/``{`` in ``text``, outside quotes and comments (a scan of
    the characters: linear, no parsing)."""
    deepest = depth = 0
    quote = ""
    for line in text.splitlines():
        for i, char in enumerate(line):
            if quote:
                if char == quote:
                    quote = ""
            elif char in "'\"":
                quote = char
            elif char == "#" and (i == 0 or line[i - 1] in " \t"):
                break
            elif char in "[{":
                depth += 1
                deepest = max(deepest, depth)
            elif char in "]}":
                depth = max(0, depth - 1)
        if not depth:
            quote = ""   # outside brackets an unclosed quote is not carried to the next line
    return deepest


def _block_depth(text: str) -> int:
    """The deepest nesting of block-style mappings and sequences: the number of indentation
    levels open at a line (each deeper indent of a key or ``-`` item opens one). Linear; block
    scalars (``|``, ``>``) may overcount, which only matters past :data:`MAX_DEPTH` levels."""
    stack: list[int] = []
    deepest = 0
    for line in text.splitlines():
        stripped = line.lstrip(" ")
        if not stripped or stripped.startswith("#"):
            continue
        indent = len(line) - len(stripped)
        while stack and stack[-1] > indent:
            stack.pop()
        if not stack or stack[-1] < indent:
            stack.append(indent)
        deepest = max(deepest, len(stack))
    return deepest


def _one_line(text: str) -> str:
    return " ".join(part.strip() for part in text.splitlines() if part.strip())


def read_yaml(path: str | Path) -> Any:
    """The document in the YAML file ``path`` (``yaml.safe_load``; None for an empty file).

    Raises:
        YamlFileError: see the module doc; the message starts with the file's name.
    """
    import yaml

    file = Path(path)
    if not file.exists():
        raise YamlFileError(f"{str(path)!r} does not exist")
    if file.is_dir():
        raise YamlFileError(f"{str(path)!r} is a folder, not a YAML file")
    try:
        raw = file.read_bytes()
    except OSError as exc:
        raise YamlFileError(f"{path}: cannot read it: {exc.strerror or exc}") from None
    if b"\0" in raw[:8192]:
        raise YamlFileError(f"{path}: is a binary file (it holds NUL bytes), not YAML text")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise YamlFileError(f"{path}:{line}: not UTF-8 text (byte {exc.start}: "
                            f"{raw[exc.start:exc.start + 1]!r}); save the file as UTF-8") from None
    depth = _flow_depth(text)
    if depth > MAX_DEPTH:
        raise YamlFileError(f"{path}: nested too deeply to read ({depth} levels of brackets, more "
                            f"than {MAX_DEPTH}; a configuration needs a few); flatten it")
    depth = _block_depth(text)
    if depth > MAX_DEPTH:   # yaml would recurse once per level (RecursionError, or a crash)
        raise YamlFileError(f"{path}: nested too deeply to read ({depth} levels of indented "
                            f"mappings or lists, more than {MAX_DEPTH}; a configuration needs a "
                            "few); flatten it")
    try:
        return yaml.safe_load(text)
    except RecursionError:
        raise YamlFileError(f"{path}: nested too deeply to read (more levels of lists or "
                            "mappings than a configuration needs); flatten it") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
        problem = getattr(exc, "problem", None)
        reason = _one_line(str(problem)) if problem else _one_line(str(exc))
        raise YamlFileError(f"{where}: not valid YAML: {reason}") from None
