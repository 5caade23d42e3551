"""The repository explains itself: no tracked file cites documents that live outside it.

The specification, the measurements and the design sketch the project started from are
written into ``docs/`` (``contract.md``, ``environment.md``, ``architecture.md``); a reference to
the outside originals, or a relative path that climbs out to them, would leave a reader of a
clone with nothing to open.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[2]

# Built from parts so that this file does not match its own patterns.
_OUTSIDE_DOCS = ["".join(parts) + ".md" for parts in
                 (("CON", "TRACT"), ("ENVIRON", "MENT"), ("ARCHI", "TECTURE"), ("STY", "LE"))]
_SHARED = "sha" + "red"
PATTERNS = [re.compile(rf"\b{re.escape(name)}") for name in _OUTSIDE_DOCS] + [
    re.compile(rf"(?:\.\./)+{_SHARED}(?:/|\b)"),     # one or more "../" then the folder
    re.compile(rf"/work/{_SHARED}(?:/|\b)"),         # the absolute path of the same folder
]


def _tracked_text_files() -> list[Path]:
    out = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True)
    files = []
    for name in out.stdout.decode("utf-8", "surrogateescape").split("\0"):
        path = REPO / name
        if not name or not path.is_file():
            continue
        head = path.read_bytes()[:8192]
        if b"\0" in head:  # binary
            continue
        files.append(path)
    return files


def find_outside_references() -> list[str]:
    """``file:line: text`` for every line of a tracked text file that cites outside documents."""
    hits = []
    for path in _tracked_text_files():
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        for number, line in enumerate(text.splitlines(), start=1):
            if any(p.search(line) for p in PATTERNS):
                hits.append(f"{path.relative_to(REPO)}:{number}: {line.strip()[:120]}")
    return hits


def test_patterns_catch_what_they_should() -> None:
    name = _OUTSIDE_DOCS[0]
    assert any(p.search(f"see {name} §4") for p in PATTERNS)
    assert any(p.search(f"[spec](../../{_SHARED}/{name})") for p in PATTERNS)
    assert not any(p.search("see docs/contract.md §4") for p in PATTERNS)


def test_no_tracked_file_cites_documents_outside_the_repository() -> None:
    hits = find_outside_references()
    assert not hits, ("tracked files cite documents outside the repository; cite docs/contract.md, "
                      "docs/environment.md or docs/architecture.md instead:\n" + "\n".join(hits))
