"""docs/architecture.md names every module: its generated map is in step with the code, every
module has a docstring for it, and the hand-written guide points at files that exist."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[3]
SCRIPT = ROOT / "scripts" / "document_architecture.py"
PAGE = ROOT / "docs" / "architecture.md"


def test_the_module_map_is_in_step_with_the_code() -> None:
    proc = subprocess.run([sys.executable, str(SCRIPT), "--check"], capture_output=True,
                          text=True)
    assert proc.returncode == 0, proc.stderr


def test_every_module_is_listed_with_its_docstring() -> None:
    page = PAGE.read_text(encoding="utf-8")
    listed: set[str] = set()
    folder = None
    for line in page.splitlines():
        if m := re.match(r"### `(.+)/`$", line):
            folder = m.group(1)
        elif (m := re.match(r"\| `([\w.]+\.py)` \| (.*) \|$", line)) and folder:
            listed.add(f"{folder}/{m.group(1)}")
            assert m.group(2) != "(no docstring)", f"{folder}/{m.group(1)} has no docstring"
    on_disk = {p.relative_to(ROOT).as_posix() for pkg in ("vime", "vime_lint")
               for p in (ROOT / pkg).rglob("*.py")
               if "stubs" not in p.parts and "__pycache__" not in p.parts}
    assert on_disk - listed == set(), "modules missing from docs/architecture.md"
    assert listed - on_disk == set(), "docs/architecture.md lists modules that do not exist"


def test_paths_named_by_hand_exist() -> None:
    page = PAGE.read_text(encoding="utf-8").split("<!-- modules:start")[0]
    named = set(re.findall(r"`((?:vime|vime_lint|scripts|tests|benchmarks|examples)/[\w/.]+)`",
                           page))
    missing = sorted(p for p in named if not (ROOT / p.rstrip("/")).exists())
    assert missing == [], f"docs/architecture.md names paths that do not exist: {missing}"


def test_the_layout_block_names_every_package() -> None:
    """The hand-written "Layout" block names every package folder of vime/ and vime_lint/ (its
    first level: ``vime/ray/``; a subpackage may be named inside its parent's line, as
    ``runtime/`` is on ``vime_lint/check/``'s), so a newcomer's first look at the tree misses
    none."""
    block = PAGE.read_text(encoding="utf-8").split("## Layout", 1)[1].split("```", 2)[1]
    packages = sorted(p.parent.relative_to(ROOT).as_posix() for pkg in ("vime", "vime_lint")
                      for p in (ROOT / pkg).glob("*/__init__.py"))
    missing = [p for p in packages
               if not re.search(rf"(^|\s){re.escape(p)}/|[\s(]{re.escape(p.split('/')[-1])}/",
                                block, flags=re.M)]
    assert missing == [], f"docs/architecture.md's Layout block misses packages: {missing}"
