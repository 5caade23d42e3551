"""The real-model recipe (`make demo-real`) end to end in `--quick` mode on SmolLM2-135M-Instruct:
set-up reuses the session's converted model and its verification record, lint, `vime-lint check` on a real engine with the
model's chat template, one GRPO step with held-out evaluation before and after on the same
engine (the demo starts one for both), the report.
The shuffled-reward control (``--control``) is the same command with another hook (the tiny
demo's e2e test runs it); it is not asked for here, to keep the suite's time down, as is the set-up's verification of
the engine against transformers (tests/integration/models/test_real_model.py runs it)."""

from __future__ import annotations

import inspect
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from vime.models.prepare import VERIFIED
from vime.models.verify import hf_greedy, prompt_ids, verify

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]


def test_quick_real_model_recipe(real_model_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "demo_real"
    model = out / "model"
    shutil.copytree(real_model_dir, model)     # converted already: the stamp matches
    # verified already: the engine-against-transformers verification that `vime model prepare`
    # records is tested on the session's engine (tests/integration/models/test_real_model.py);
    # the demo reuses the record instead of starting an engine of its own for it
    max_tokens = inspect.signature(verify).parameters["max_tokens"].default
    greedy = hf_greedy(model, prompt_ids(model), max_tokens)
    (model / VERIFIED).write_text(json.dumps({"greedy_tokens": greedy, "text": "recorded"}))
    # as `make demo` runs it: the shell has no VIME_ENGINE_API_KEY (the conftest sets one
    # for the engines the tests start); every stage must carry its own engine's key
    env = {k: v for k, v in os.environ.items() if k != "VIME_ENGINE_API_KEY"}
    env["COLUMNS"] = "120"
    proc = subprocess.run([sys.executable, "-m", "vime.demo", "--model", "smollm2-135m-instruct",
                           "--quick", "--out", str(out)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    text = proc.stdout + proc.stderr
    assert proc.returncode == 0, text[-4000:]
    assert "reused the prepared, verified model" in proc.stdout
    assert json.loads((model / VERIFIED).read_text())["greedy_tokens"] == greedy   # kept
    assert "vime-lint check: clean" in proc.stdout or "vime-lint check: 0 error(s)" in proc.stdout
    # one engine for the check and GRPO: the check's generate runs on it, GRPO attaches to it
    assert "(one vllm-cpu engine on " in proc.stdout and (out / "logs" / "demo-engine.log").is_file()
    addrs = set(re.findall(r"--rollout-external-engine-addrs (\S+)", proc.stdout))
    assert len(addrs) == 1, addrs
    assert f"generate: the running engine(s) http://{addrs.pop()}" in proc.stdout
    assert "vime train --config examples/real_model/grpo.yaml" in proc.stdout

    summary = json.loads((out / "summary.json").read_text())
    assert summary["model"] == "smollm2-135m-instruct"
    assert [s["name"] for s in summary["stages"]] == ["set-up", "lint", "check", "GRPO", "control"]
    assert [s["skipped"] for s in summary["stages"]] == [False, False, False, False, True]
    assert all(s["ok"] for s in summary["stages"]), summary["stages"]
    assert summary["steps"] == 1 and 0.0 <= summary["start_greedy"] <= 1.0
    assert "pretrained model (GRPO step 0)" in (out / "summary.txt").read_text()
    grpo = [json.loads(line) for line in (out / "grpo" / "metrics.jsonl").read_text().splitlines()]
    assert sum("eval/greedy" in r for r in grpo) == 2      # before the step and after it
    step = next(r for r in grpo if "train/loss" in r)
    assert step["perf/weight_sync_time"] > 0 and "perf/contract_check_time" in step
