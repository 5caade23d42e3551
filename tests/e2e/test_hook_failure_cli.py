"""`vime train` with a reward that raises on every fifth sample (issue 15), on the session engine
through Ray actors: --hook-failure raise stops with the hook's error and exit status 1;
fail-sample trains and logs the exact failure counts; --max-failed-ratio below the step's ratio
stops with one message naming the error type and an example."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.e2e

HOOKS = Path(__file__).resolve().parents[1] / "fixtures" / "failing_hooks"


def _train(model: Path, url: str, tmp_path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text("".join(json.dumps({"input": f"{a}+1=", "label": str(a + 1)}) + "\n"
                               for a in range(10, 18)))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(HOOKS),
                                                       os.environ.get("PYTHONPATH", "")]))
    return subprocess.run(
        [sys.executable, "-m", "vime.cli", "train", "--hf-checkpoint", str(model),
         "--prompt-data", str(prompts), "--label-key", "label",
         "--custom-rm-path", "vime_failing_hooks.reward_fails_every_fifth",
         "--rollout-batch-size", "2", "--n-samples-per-prompt", "5",
         "--rollout-max-response-len", "6", "--micro-batch-size", "5", "--lr", "1e-3",
         "--num-rollout", "1", "--rollout-external-engine-addrs", url,
         "--run-dir", str(tmp_path / "run"), *extra],
        env=env, capture_output=True, text=True, timeout=300)


@pytest.fixture()
def engine(vllm_server: Any, tiny_model_dir: Path) -> Any:
    from vime.ray.engine_control import sync_weights

    yield vllm_server.url
    sync_weights([vllm_server.url], str(tiny_model_dir), version="default")  # shared engine


def test_raise_stops_with_the_hooks_error(tiny_model_dir: Path, engine: str,
                                          tmp_path: Path) -> None:
    proc = _train(tiny_model_dir, engine, tmp_path)
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert "judge could not parse sample" in proc.stderr
    assert "vime_failing_hooks.py" in proc.stderr          # the user's file:line


def test_fail_sample_trains_and_counts_exactly(tiny_model_dir: Path, engine: str,
                                               tmp_path: Path) -> None:
    proc = _train(tiny_model_dir, engine, tmp_path, "--hook-failure", "fail-sample")
    assert proc.returncode == 0, proc.stderr[-3000:]
    (record,) = [json.loads(x) for x in (tmp_path / "run" / "metrics.jsonl").read_text()
                 .splitlines() if "train/loss" in x]
    assert record["rollout/failed/count"] == 2.0
    assert record["rollout/failed/ratio"] == pytest.approx(0.2)
    assert record["rollout/failed/reward/ValueError"] == 2.0


def test_max_failed_ratio_stops_with_one_clear_message(tiny_model_dir: Path, engine: str,
                                                       tmp_path: Path) -> None:
    proc = _train(tiny_model_dir, engine, tmp_path, "--hook-failure", "fail-sample",
                  "--max-failed-ratio", "0.1")
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert "vime train: 2 of 10 samples failed in rollout 0" in proc.stderr
    assert "(ratio 0.20 > --max-failed-ratio 0.1)" in proc.stderr
    assert "reward/ValueError: 2 sample(s), e.g. sample index=0: judge could not parse" in \
        proc.stderr
    assert "Traceback" not in proc.stderr
