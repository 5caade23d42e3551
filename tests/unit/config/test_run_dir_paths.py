"""`{run_dir}` in --save/--load follows --run-dir, so the demo's sft.yaml checkpoint moves with
a user's --run-dir (vime.config.validation.RUN_DIR_PATHS)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vime.config import parse_args
from vime.demo.config import CONFIGS

pytestmark = pytest.mark.unit


def test_save_and_load_follow_run_dir() -> None:
    args = parse_args(["--rollout-batch-size", "1", "--run-dir", "runs/x-{time}",
                       "--save", "{run_dir}/ckpt", "--load", "{run_dir}/ckpt"], training=False)
    assert args.run_dir.startswith("runs/x-") and "{time}" not in args.run_dir
    assert args.save == args.load == f"{args.run_dir}/ckpt"
    plain = parse_args(["--rollout-batch-size", "1", "--save", "/ckpt"], training=False)
    assert plain.save == "/ckpt"


@pytest.mark.parametrize(("extra", "expected"), [([], "runs/demo/sft/ckpt"),
                                                 (["--run-dir", "runs/mine"], "runs/mine/ckpt")])
def test_demo_sft_checkpoint_follows_run_dir(tmp_path: Path, extra: list[str],
                                             expected: str) -> None:
    data = tmp_path / "d.jsonl"
    data.write_text(json.dumps({"input": [{"role": "user", "content": "1+1="}]}) + "\n")
    args = parse_args(["--config", str(CONFIGS / "sft.yaml"), "--prompt-data", str(data),
                       *extra])
    assert args.save == expected
