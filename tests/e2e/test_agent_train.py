"""`vime train` on an agent written only against the OpenAI SDK (examples/openai_agent.py):
GRPO steps through the agent endpoint on the session's engine (embedded default, Ray actors)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]


def test_an_openai_sdk_agent_trains_under_vime_train(tiny_model_dir: Path, vllm_server: object,
                                                      tmp_path: Path) -> None:
    from vime.ray.engine_control import sync_weights

    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text("".join(json.dumps({"input": f"What is {a}*3?", "label": str(3 * a)})
                               + "\n" for a in range(11, 19)))
    run_dir = tmp_path / "run"
    url = vllm_server.url  # type: ignore[attr-defined]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT),
                                                       os.environ.get("PYTHONPATH", "")]),
               COLUMNS="120")
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "vime.cli", "train", "--hf-checkpoint", str(tiny_model_dir),
             "--prompt-data", str(prompts), "--input-key", "input", "--label-key", "label",
             "--rollout-batch-size", "2", "--n-samples-per-prompt", "2",
             "--rollout-max-response-len", "200", "--micro-batch-size", "2", "--lr", "1e-4",
             "--num-rollout", "2", "--rollout-external-engine-addrs", url,
             "--agent-function-path", "examples.openai_agent.run_agent",
             "--run-dir", str(run_dir)],
            env=env, capture_output=True, text=True, timeout=300, cwd=ROOT)
    finally:
        sync_weights([url], str(tiny_model_dir), version="default")  # the engine is shared
    assert proc.returncode == 0, proc.stderr[-3000:]
    records = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    train = [r for r in records if "train/loss" in r]
    assert [r["rollout_id"] for r in train] == [0, 1]
    for r in train:
        assert r["rollout/agent/calls"] == 8.0 and r["rollout/agent/context_rewrites"] == 0.0
        assert r["rollout/agent/dropped_calls"] == 0.0
    assert "contract violation" not in proc.stderr
