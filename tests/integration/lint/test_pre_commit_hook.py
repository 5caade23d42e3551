"""The exported pre-commit hooks (``vime-lint`` and ``vime-lint-types``) fail on a bad module and
pass on a good one.

pre-commit cannot fetch remote repositories here, so the hook is used as a ``repo: local`` hook
with ``language: python`` and ``additional_dependencies: [<this checkout>]`` (pre-commit builds
a fresh virtualenv and installs vime from the checkout; its dependencies come from the package
index pip is configured with). Both hooks are given the same dependencies, so pre-commit builds
one environment for the two.
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


#: A reward whose value is a string: no lint rule sees the type, `vime-lint types` does (VIM200).
BAD_TYPES = "async def reward_func(args, sample):\n    return str(len(sample.response))\n"
GOOD_TYPES = "async def reward_func(args, sample):\n    return float(len(sample.response))\n"


def test_pre_commit_hooks_fail_on_bad_and_pass_on_good(tmp_path: Path) -> None:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    hooks = {h["id"]: h for h in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())}
    exported, types = hooks["vime-lint"], hooks["vime-lint-types"]
    assert exported["entry"] == "vime-lint rollout --force-exclude"
    assert types["entry"] == "vime-lint types --force-exclude"
    for h in (exported, types):
        assert h["language"] == "python" and h["types"] == ["python"]
        assert h["require_serial"] is True
    deps = [str(ROOT), *types["additional_dependencies"]]
    repo = tmp_path / "user_repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    (repo / ".pre-commit-config.yaml").write_text(yaml.safe_dump(
        {"repos": [{"repo": "local", "hooks": [{**h, "additional_dependencies": deps}
                                               for h in (exported, types)]}]}))
    (repo / "pyproject.toml").write_text(
        '[tool.vime_lint]\nhooks = {custom_rm_path = "my_reward.reward_func"}\n')
    (repo / "my_rollout.py").write_text(BAD)
    (repo / "my_reward.py").write_text(BAD_TYPES)
    _git(repo, "add", ".")
    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "cache"), "PIP_NO_INPUT": "1"}
    pre_commit = [sys.executable, "-m", "pre_commit", "run", "--all-files"]
    bad = subprocess.run(pre_commit, cwd=repo, env=env, capture_output=True, text=True,
                         timeout=900)
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert "my_rollout.py:1:5: VIM001" in bad.stdout
    assert "my_reward.py:2:12: VIM200" in bad.stdout, bad.stdout
    (repo / "my_rollout.py").write_text(GOOD)
    (repo / "my_reward.py").write_text(GOOD_TYPES)
    _git(repo, "add", ".")
    good = subprocess.run(pre_commit, cwd=repo, env=env, capture_output=True, text=True,
                          timeout=600)
    assert good.returncode == 0, good.stdout + good.stderr
    assert good.stdout.count("Passed") == 2, good.stdout
