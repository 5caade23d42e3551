"""A custom rollout's eval branch gets the eval sets from `data_source.eval_datasets()` (the
samples the default rollout evaluates), and VIM131 warns when an eval output's samples are the
training prompts."""

from __future__ import annotations

import json
from argparse import Namespace
from pathlib import Path

import pytest

from vime.contract.checks.evaluation import check_vim131, eval_prompt_keys, prompt_key
from vime.rollout.data_source import RolloutDataSourceWithBuffer
from vime.utils.arguments import parse_args
from vime.utils.types import Sample

pytestmark = pytest.mark.unit


def _jsonl(path: Path, prefix: str, rows: int) -> Path:
    path.write_text("".join(json.dumps({"input": f"{prefix}{i}", "label": str(i)}) + "\n"
                            for i in range(rows)))
    return path


def _args(tmp_path: Path, *extra: str) -> Namespace:
    train = _jsonl(tmp_path / "train.jsonl", "train ", 5)
    held = _jsonl(tmp_path / "held.jsonl", "held ", 3)
    return parse_args(["--rollout-batch-size", "2", "--n-samples-per-prompt", "2",
                       "--prompt-data", str(train), "--label-key", "label",
                       "--eval-prompt-data", "held", str(held),
                       "--n-samples-per-eval-prompt", "2", "--rm-type", "math", *extra],
                      training=False)


def test_eval_datasets_are_the_eval_prompt_data_copied_as_the_default_rollout_does(
        tmp_path: Path) -> None:
    ds = RolloutDataSourceWithBuffer(_args(tmp_path))
    sets = ds.eval_datasets()
    assert list(sets) == ["held"]
    samples = sets["held"]
    assert [s.prompt for s in samples] == ["held 0", "held 0", "held 1", "held 1", "held 2",
                                           "held 2"]
    assert [s.index for s in samples] == list(range(6))
    assert [s.group_index for s in samples] == [0, 0, 1, 1, 2, 2]
    assert all(s.metadata["rm_type"] == "math" and s.session_id for s in samples)
    assert [s.label for s in samples[::2]] == ["0", "1", "2"]
    samples[0].reward = 1.0                     # a rollout fills them in ...
    assert ds.eval_datasets()["held"][0].reward is None   # ... each call gets fresh copies
    # the training prompts stay get_samples'
    assert {g[0].prompt for g in ds.get_samples(2)} <= {f"train {i}" for i in range(5)}


def test_no_eval_datasets_is_an_empty_view(tmp_path: Path) -> None:
    train = _jsonl(tmp_path / "train.jsonl", "t", 2)
    args = parse_args(["--rollout-batch-size", "1", "--prompt-data", str(train)],
                      training=False)
    assert RolloutDataSourceWithBuffer(args).eval_datasets() == {}


def _entry(prompts: list[str]) -> dict:
    samples = [Sample(prompt=p, reward=0.0) for p in prompts]
    return {"rewards": [0.0] * len(samples), "truncated": [False] * len(samples),
            "samples": samples}


def test_vim131_warns_when_every_eval_sample_is_a_training_prompt(tmp_path: Path) -> None:
    ds = RolloutDataSourceWithBuffer(_args(tmp_path))
    keys = frozenset(map(prompt_key, ds.training_prompts() or []))
    found = check_vim131({"toy": _entry(["train 0", "train 1"])}, keys)
    assert [(v.id, v.severity, v.where) for v in found] == [
        ("VIM131", "warning", "data['toy']['samples']")]
    assert "all training prompts (--prompt-data)" in found[0].message
    assert "data_source.eval_datasets()" in found[0].fix


def test_vim131_passes_on_the_eval_view_and_on_mixed_or_unknown_prompts(tmp_path: Path) -> None:
    ds = RolloutDataSourceWithBuffer(_args(tmp_path))
    keys = frozenset(map(prompt_key, ds.training_prompts() or []))
    held = ds.eval_datasets()["held"]
    view = {"held": {"rewards": [0.0] * len(held), "truncated": [False] * len(held),
                     "samples": held}}
    assert check_vim131(view, keys) == []
    assert check_vim131({"x": _entry(["train 0", "new"])}, keys) == []
    assert check_vim131({"x": _entry(["train 0"])}, frozenset()) == []   # unknown: no finding
    chat = [{"role": "user", "content": "hi"}]
    assert prompt_key(chat) == prompt_key([{"content": "hi", "role": "user"}])


def test_vim131_names_an_eval_file_that_is_the_training_file(tmp_path: Path) -> None:
    # the eval branch is right (it evaluates on eval_datasets()), the eval file is not
    train = _jsonl(tmp_path / "train.jsonl", "train ", 5)
    args = parse_args(["--rollout-batch-size", "2", "--prompt-data", str(train),
                       "--label-key", "label", "--eval-prompt-data", "held", str(train),
                       "--rm-type", "math"], training=False)
    ds = RolloutDataSourceWithBuffer(args)
    keys = frozenset(map(prompt_key, ds.training_prompts() or []))
    held = ds.eval_datasets()["held"]
    view = {"held": {"rewards": [0.0] * len(held), "truncated": [False] * len(held),
                     "samples": held}}
    found = check_vim131(view, keys, eval_prompt_keys(ds))
    assert [v.id for v in found] == ["VIM131"]
    assert "the eval dataset 'held' itself holds only training prompts" in found[0].message
    assert found[0].fix.startswith("give eval dataset 'held' (--eval-prompt-data / "
                                   "--eval-config) a file of held-out prompts")
    assert "get_samples" not in found[0].fix
    # a rollout that evaluates on get_samples(...) with a real held-out file keeps the old fix
    ds = RolloutDataSourceWithBuffer(_args(tmp_path))
    keys = frozenset(map(prompt_key, ds.training_prompts() or []))
    found = check_vim131({"held": _entry(["train 0", "train 1"])}, keys, eval_prompt_keys(ds))
    assert "data_source.eval_datasets()" in found[0].fix
