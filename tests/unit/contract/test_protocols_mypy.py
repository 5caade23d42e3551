"""Users who run mypy get the contract statically: a correct module passes, a wrong one fails."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[3]

GOOD = '''
from argparse import Namespace
from typing import Any

from vime.contract.protocols import GenerateFunction, RewardFunction, RolloutFunction
from vime.rollout.base_types import RolloutFnEvalOutput, RolloutFnTrainOutput
from vime.rollout.data_source import DataSource
from vime.utils.types import Sample


def generate_rollout(
    args: Namespace, rollout_id: int, data_source: DataSource, evaluation: bool = False
) -> RolloutFnTrainOutput | RolloutFnEvalOutput:
    if evaluation:
        return RolloutFnEvalOutput(data={})
    return RolloutFnTrainOutput(samples=[])


async def generate(args: Namespace, sample: Sample, sampling_params: dict[str, Any]) -> Sample:
    return sample


async def reward_func(args: Namespace, sample: Sample, **kwargs: Any) -> float:
    return 1.0


_rollout: RolloutFunction = generate_rollout
_generate: GenerateFunction = generate
_rm: RewardFunction = reward_func
'''

BAD = '''
from argparse import Namespace
from typing import Any

from vime.contract.protocols import GenerateFunction, RewardFunction, RolloutFunction
from vime.rollout.base_types import RolloutFnEvalOutput, RolloutFnTrainOutput
from vime.rollout.data_source import DataSource
from vime.utils.types import Sample


def generate_rollout(
    args: Namespace, rollout_id: int, data_buffer: DataSource, evaluation: bool = False
) -> RolloutFnTrainOutput | RolloutFnEvalOutput:
    return RolloutFnTrainOutput(samples=[])


def generate(args: Namespace, sample: Sample, sampling_params: dict[str, Any]) -> Sample:
    return sample


async def reward_func(args: Namespace, sample: Sample) -> list[float]:
    return [1.0]


_rollout: RolloutFunction = generate_rollout
_generate: GenerateFunction = generate
_rm: RewardFunction = reward_func
'''


def run_mypy(tmp_path: Path, source: str) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "user_rollout.py"
    path.write_text(textwrap.dedent(source))
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--no-incremental", "--follow-imports=silent",
         "--ignore-missing-imports", "--cache-dir", str(tmp_path / ".mypy_cache"), str(path)],
        capture_output=True, text=True, cwd=tmp_path,
        # an editable install is invisible to mypy: point it at the source tree
        env={**os.environ, "MYPYPATH": str(REPO)},
    )


def test_mypy_accepts_a_correct_module_and_rejects_a_wrong_one(tmp_path: Path) -> None:
    good = run_mypy(tmp_path, GOOD)
    assert good.returncode == 0, good.stdout
    bad = run_mypy(tmp_path, BAD)
    assert bad.returncode == 1, bad.stdout
    for line in (25, 26, 27):  # each wrong hook is rejected, on its own line
        assert f"user_rollout.py:{line}: error: Incompatible types in assignment" in bad.stdout, bad.stdout
    assert 'variable has type "RolloutFunction"' in bad.stdout
    assert 'variable has type "GenerateFunction"' in bad.stdout
    assert 'variable has type "RewardFunction"' in bad.stdout
