"""The README's commands work as printed.

Every ```bash / ```python block of README.md carries a marker on the line above it:
``<!-- readme: run -->`` (run here, in order, in a fresh folder laid out like a clone with the
repository's `.venv`, with a PATH that does not hold the venv: activation is not assumed),
``<!-- readme: file NAME -->`` (written to NAME there first), ``<!-- readme: long (why) -->``
(not run: set-up and long jobs; checked to be valid bash whose `make` targets and
`.venv/bin/` scripts exist) or ``<!-- readme: output -->`` (a sample of output).
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
BLOCK_RE = re.compile(r"(?:<!-- readme: (?P<marker>[^>]*?) -->\n)?```(?P<lang>[\w-]*)\n"
                      r"(?P<body>.*?)```", re.S)
MARKERS = ("run", "file", "long", "output")


def _blocks() -> list[tuple[str, str, str]]:
    """``(marker, language, body)`` of each fenced block, in order."""
    return [(m["marker"] or "", m["lang"], m["body"]) for m in BLOCK_RE.finditer(
        README.read_text(encoding="utf-8"))]


def _scripts() -> set[str]:
    text = (REPO / "pyproject.toml").read_text()
    table = text.split("[project.scripts]", 1)[1].split("\n[", 1)[0]
    names = set(re.findall(r"^([\w-]+)\s*=", table, re.M))
    return names | {"python", "pip", "ruff", "mypy", "pytest"}


def _targets() -> set[str]:
    text = (REPO / "Makefile").read_text()
    return set(re.findall(r"^([A-Za-z][\w-]*):", text, re.M))


def test_every_code_block_is_marked() -> None:
    for marker, lang, body in _blocks():
        if lang in ("bash", "sh", "python"):
            assert marker.split(" ")[0] in MARKERS, (
                f"README block without a `<!-- readme: run|file NAME|long (why)|output -->` "
                f"marker:\n{body[:200]}")


def test_long_blocks_are_well_formed() -> None:
    long = [body for marker, lang, body in _blocks() if marker.startswith("long")]
    assert long, "the README lost its set-up commands"
    for body in long:
        syntax = subprocess.run(["bash", "-n"], input=body, text=True, capture_output=True)
        assert syntax.returncode == 0, syntax.stderr
        for target in re.findall(r"(?:^|\s)make ([\w-]+)", body):
            assert target in _targets(), f"`make {target}`: no such Makefile target"
        for script in re.findall(r"\.venv/bin/([\w-]+)", body):
            assert script in _scripts(), f".venv/bin/{script}: not a script of the install"
        assert not re.search(r"(?:^|[;&|]\s*)(vime|vime-lint) ", body, re.M), (
            "a bare `vime`/`vime-lint` command: use .venv/bin/ (or say to activate first)")


@pytest.fixture
def clone(tmp_path: Path) -> Path:
    """A folder laid out like the repository root (its entries linked), without the README's
    own files, and the repository's .venv."""
    for entry in REPO.iterdir():
        if entry.name in (".git", "runs") or entry.name.startswith(".") and entry.name != ".venv":
            continue
        (tmp_path / entry.name).symlink_to(entry)
    return tmp_path


def test_run_blocks_work_as_printed(clone: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep)
                                  if not p.startswith(str(REPO)) and ".venv" not in p)
    ran = 0
    venv_calls = 0
    for marker, _, body in _blocks():
        if marker.startswith("file "):
            (clone / marker.split(" ", 1)[1].strip()).write_text(body)
        elif marker == "run":
            assert not re.search(r"(?:^|[;&|]\s*)(vime|vime-lint) ", body, re.M), body
            venv_calls += len(re.findall(r"(?:^|[;&|]\s*)(?:[A-Z_]+=\S+ )*\.venv/bin/[\w-]+ ",
                                         body, re.M))
            proc = subprocess.run(["bash", "-euo", "pipefail", "-c", body], cwd=clone, env=env,
                                  capture_output=True, text=True, timeout=300)
            assert proc.returncode == 0, f"$ {body}\n{proc.stdout}\n{proc.stderr}"
            ran += 1
    assert ran >= 2
    # the blocks ran the clone's .venv/bin/ scripts (PATH holds no venv, so nothing else could)
    assert venv_calls >= 4
    assert (clone / ".venv" / "bin" / "vime-lint").exists()
