"""`make demo` end to end in `--quick` mode: every stage runs and leaves its files (the
accuracy target belongs to the full demo and is not asserted here)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]


def test_quick_demo_runs_every_stage(tmp_path: Path) -> None:
    out = tmp_path / "demo"
    # as `make demo` runs it: the shell has no VIME_ENGINE_API_KEY (the conftest sets one
    # for the engines the tests start); every stage must carry its own engine's key
    env = {k: v for k, v in os.environ.items() if k != "VIME_ENGINE_API_KEY"}
    env["COLUMNS"] = "120"
    proc = subprocess.run([sys.executable, "-m", "vime.demo", "--quick", "--control",
                           "--out", str(out)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    text = proc.stdout + proc.stderr
    assert proc.returncode == 0, text[-4000:]

    # stage 1: the linter said nothing on the correct examples and flagged the broken ones
    assert "examples/broken/stale_signature.py" in proc.stdout
    assert "VIM001" in proc.stdout
    # stages 2 and 3: the exact commands, the YAML configs
    assert "vime train --config examples/demo/sft.yaml" in proc.stdout
    assert "vime train --config examples/demo/grpo.yaml" in proc.stdout
    # GRPO and the control attach to the one engine the demo started (each pushes the SFT
    # checkpoint's weights into it before its first rollout)
    addrs = re.findall(r"--rollout-external-engine-addrs (\S+)", proc.stdout)
    assert len(addrs) == 2 and addrs[0] == addrs[1], addrs
    assert (out / "logs" / "demo-engine.log").is_file()

    summary = json.loads((out / "summary.json").read_text())
    assert [s["name"] for s in summary["stages"]] == ["set-up", "lint", "SFT", "GRPO", "control"]
    assert all(s["ok"] and not s["skipped"] for s in summary["stages"]), summary["stages"]
    assert summary["quick"] is True and summary["steps"] == 2
    assert 0.0 <= summary["start_greedy"] <= 1.0 and 0.0 <= summary["final_greedy"] <= 1.0
    assert summary["start_sampled"] is not None and summary["final_sampled"] is not None
    assert "held-out accuracy" in (out / "summary.txt").read_text()
    assert (out / "demo.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    sft = [json.loads(line) for line in (out / "sft" / "metrics.jsonl").read_text().splitlines()]
    assert len(sft) == 20 and sft[-1]["train/loss"] < sft[0]["train/loss"]
    grpo = [json.loads(line) for line in (out / "grpo" / "metrics.jsonl").read_text().splitlines()]
    steps = [r for r in grpo if "train/loss" in r]
    assert [r["rollout_id"] for r in steps] == [0, 1]
    assert all(r["perf/weight_sync_time"] > 0 for r in steps)   # weights synced every step
    assert all("perf/contract_check_time" in r for r in steps)  # runtime check on
    assert sum("eval/greedy" in r for r in grpo) == 2            # before the first step, after 2
    assert (out / "sft_model" / "model.safetensors").is_file()
    # grpo.yaml dumps every step and writes the report page; the summary links it
    assert sorted(p.name for p in (out / "grpo" / "rollouts").glob("step_*.parquet")) == [
        "step_0.parquet", "step_1.parquet"]
    page = (out / "grpo" / "report.html").read_text()
    assert summary["report"] == str(out / "grpo" / "report.html")
    assert "report.html" in (out / "summary.txt").read_text()
    from vime.report.html import SECTIONS
    assert re.findall(r"<section id='([\w-]+)'>", page) == [i for i, _ in SECTIONS]
    # --control: the same GRPO run on shuffled rewards, through the reward post-process hook
    assert "--custom-reward-post-process-path examples.demo.shuffled_rewards" in proc.stdout
    assert summary["control"]["steps"] == 2 and summary["control"]["start_greedy"] is not None
    control = (out / "control" / "metrics.jsonl").read_text().splitlines()
    assert sum("train/loss" in json.loads(line) for line in control) == 2
