"""Read a YAML file the user names (``--config``, ``--custom-config-path``, ``--eval-config``)
with every failure one line that names the file and, where known, the line.

Usage::

    doc = read_yaml("run.yaml")     # the parsed document; YamlFileError (a ValueError) if not

Refused, each with its own reason: a missing path or a folder, an unreadable file (the
operating system's reason), a binary file (a NUL byte), bytes that are not UTF-8 (line and
byte offset of the first), invalid YAML (PyYAML's reason and line, on one line), and a
document nested deeper than Python's recursion limit lets PyYAML build (a few hundred levels).
``yaml.safe_load`` only: no tags that build Python objects.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["YamlFileError", "read_yaml"]


class YamlFileError(ValueError):
    """A YAML file that cannot be read or parsed: the message is one line naming the file."""


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
