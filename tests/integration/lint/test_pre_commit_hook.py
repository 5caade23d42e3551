"""The exported pre-commit hook runs vime-lint and fails on a bad module, passes on a good one.

pre-commit cannot fetch remote repositories here, so the hook is used as a ``repo: local`` hook
with ``language: python`` and ``additional_dependencies: [<this checkout>]`` (pre-commit builds
a fresh virtualenv and installs vime from the checkout; its dependencies come from PyPI).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[3]
BAD = "def generate_rollout(args, rollout_id, data_buffer, evaluation):\n    return None\n"
GOOD = (
    "from vime.rollout.base_types import RolloutFnEvalOutput, RolloutFnTrainOutput\n\n\n"
    "def generate_rollout(args, rollout_id, data_source, evaluation=False):\n"
    "    if evaluation:\n        return RolloutFnEvalOutput(data={})\n"
    "    return RolloutFnTrainOutput(samples=data_source.get_samples(1))\n"
)


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True,
                   env={**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
                        "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"})


def test_pre_commit_hook_fails_on_bad_and_passes_on_good(tmp_path: Path) -> None:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    exported = next(h for h in hooks if h["id"] == "vime-lint")
    assert exported["entry"] == "vime-lint rollout --force-exclude"
    assert exported["language"] == "python" and exported["types"] == ["python"]
    assert exported["require_serial"] is True
    hook = {**exported, "additional_dependencies": [str(ROOT)]}
    repo = tmp_path / "user_repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    (repo / ".pre-commit-config.yaml").write_text(yaml.safe_dump(
        {"repos": [{"repo": "local", "hooks": [hook]}]}))
    (repo / "my_rollout.py").write_text(BAD)
    _git(repo, "add", ".")
    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "cache"), "PIP_NO_INPUT": "1"}
    pre_commit = [sys.executable, "-m", "pre_commit", "run", "--all-files"]
    bad = subprocess.run(pre_commit, cwd=repo, env=env, capture_output=True, text=True,
                         timeout=600)
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert "my_rollout.py:1:5: VIM001" in bad.stdout
    (repo / "my_rollout.py").write_text(GOOD)
    _git(repo, "add", ".")
    good = subprocess.run(pre_commit, cwd=repo, env=env, capture_output=True, text=True,
                          timeout=600)
    assert good.returncode == 0, good.stdout + good.stderr
    assert "vime-lint" in good.stdout and "Passed" in good.stdout
