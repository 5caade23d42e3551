"""vime.rollout.data_source: groups, epochs, the buffer and its filters, checkpoints."""

from __future__ import annotations

import json
from argparse import Namespace
from pathlib import Path

import pytest

from vime.contract.errors import ContractError
from vime.rollout.data_source import (
    RolloutDataSource,
    RolloutDataSourceWithBuffer,
    pop_first,
    pop_oldest,
    state_path,
)
from vime.utils.arguments import parse_args
from vime.utils.types import Sample

pytestmark = pytest.mark.unit


def _args(tmp_path: Path, *extra: str, n: int = 2, rows: int = 5) -> Namespace:
    data = tmp_path / "prompts.jsonl"
    if not data.exists():
        data.write_text("".join(json.dumps({"input": f"p{i}", "label": str(i)}) + "\n"
                                for i in range(rows)))
    return parse_args(["--rollout-batch-size", "2", "--n-samples-per-prompt", str(n),
                       "--prompt-data", str(data), "--label-key", "label", *extra],
                      training=False)


def _prompts(groups: list[list[Sample]]) -> list[str]:
    return [str(g[0].prompt) for g in groups]


def test_groups_are_deep_copies_with_monotonic_indices(tmp_path: Path) -> None:
    ds = RolloutDataSource(_args(tmp_path, n=3))
    groups = ds.get_samples(2) + ds.get_samples(2)
    assert _prompts(groups) == ["p0", "p1", "p2", "p3"]
    assert [[s.group_index for s in g] for g in groups] == [[0] * 3, [1] * 3, [2] * 3, [3] * 3]
    assert [s.index for g in groups for s in g] == list(range(12))
    assert all(s.label == s.prompt[1:] for g in groups for s in g)
    groups[0][0].metadata["x"] = 1
    assert groups[0][1].metadata == {} and ds.dataset.samples[0].metadata == {}
    assert len(ds) == 5


def test_epoch_boundary_and_shuffle(tmp_path: Path) -> None:
    from vime.utils.data import Dataset

    args = _args(tmp_path, "--rollout-shuffle", "--rollout-seed", "3", n=1, rows=4)
    ds = RolloutDataSource(args)
    prompts = _prompts(ds.get_samples(3) + ds.get_samples(3))
    ref = Dataset(args.prompt_data, seed=3)
    expected = []
    for epoch in (0, 1):
        ref.shuffle(epoch)
        expected += [s.prompt for s in ref.samples]
    assert prompts == expected[:6]
    assert (ds.epoch_id, ds.sample_offset) == (1, 2)


def test_without_prompt_data_yields_empty_samples(tmp_path: Path) -> None:
    args = parse_args(["--rollout-batch-size", "2", "--n-samples-per-prompt", "2"],
                      training=False)
    groups = RolloutDataSource(args).get_samples(2)
    assert [[(s.prompt, s.group_index, s.index) for s in g] for g in groups] == \
        [[("", 0, 0), ("", 0, 1)], [("", 1, 2), ("", 1, 3)]]
    assert len(RolloutDataSource(_args(tmp_path, "--disable-rollout-global-dataset"))) == 0


def test_read_only_source_rejects_add_samples(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match="read-only.*RolloutDataSourceWithBuffer"):
        RolloutDataSource(_args(tmp_path)).add_samples([])


def test_buffer_served_first_then_dataset(tmp_path: Path) -> None:
    ds = RolloutDataSourceWithBuffer(_args(tmp_path))
    first = ds.get_samples(2)
    ds.add_samples([first[1]])
    assert ds.get_buffer_length() == 1
    again = ds.get_samples(2)
    assert again[0] is first[1] and _prompts(again) == ["p1", "p2"]
    assert ds.get_buffer_length() == 0


@pytest.mark.parametrize(("bad", "needle"), [
    ("short", r"VIM103 error: add_samples: samples\[1\] has 1 samples, expected "
              r"n_samples_per_prompt=2"),
    ("flat", r"VIM102 error: add_samples: samples holds a flat list of Samples"),
    ("nested", r"VIM102 error: add_samples: samples\[0\]\[1\] is a list \(depth 3\) but "
               r"earlier elements are Samples"),
])
def test_add_samples_validates_groups(tmp_path: Path, bad: str, needle: str) -> None:
    ds = RolloutDataSourceWithBuffer(_args(tmp_path))
    g = ds.get_samples(2)
    payload = {"short": [g[0], g[1][:1]], "flat": [g[0][0]],
               "nested": [[g[0][0], [g[0][1]]]]}[bad]
    with pytest.raises(ContractError, match=needle):
        ds.add_samples(payload)  # type: ignore[arg-type]
    assert ds.get_buffer_length() == 0


def _group(version: str | None, tag: str) -> list[Sample]:
    return [Sample(prompt=tag, weight_versions=[version] if version else [])]


def test_pop_first_and_pop_oldest() -> None:
    buffer = [_group("3", "a"), _group("1", "b"), _group(None, "c"), _group("2", "d")]
    taken = pop_oldest(Namespace(), None, buffer, 3)
    assert [g[0].prompt for g in taken] == ["c", "b", "d"]
    assert [g[0].prompt for g in buffer] == ["a"]
    buffer = [_group(None, "x"), _group(None, "y")]
    assert [g[0].prompt for g in pop_first(Namespace(), None, buffer, 5)] == ["x", "y"]
    assert buffer == []
    with pytest.raises(ValueError, match="buffer group 0 has non-numeric weight_versions"):
        pop_oldest(Namespace(), None, [_group("v1", "z")], 1)


def test_staleness_flag_selects_pop_oldest(tmp_path: Path) -> None:
    args = _args(tmp_path, "--buffer-sort-by-staleness", n=1)
    assert args.buffer_filter_path == "vime.rollout.data_source.pop_oldest"
    ds = RolloutDataSourceWithBuffer(args)
    ds.add_samples([_group("5", "new"), _group("1", "old")])
    assert _prompts(ds.get_samples(1)) == ["old"]


FILTERS = '''
def keeps_in_buffer(args, rollout_id, buffer, num_samples):
    return buffer[:num_samples]

def too_many(args, rollout_id, buffer, num_samples):
    taken = list(buffer)
    buffer.clear()
    return taken

def wrong_signature(args, buffer, num_samples):
    return []
'''


@pytest.mark.parametrize(("name", "needle"), [
    ("keeps_in_buffer", r"VIM161 error: my_filters_h5.keeps_in_buffer result\[0\] is still in "
                        "the buffer"),
    ("too_many", "VIM161 error: my_filters_h5.too_many result has 3 groups, more than "
                 "num_samples=1"),
])
def test_custom_buffer_filter_result_is_checked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                name: str, needle: str) -> None:
    (tmp_path / "my_filters_h5.py").write_text(FILTERS)
    monkeypatch.syspath_prepend(str(tmp_path))
    ds = RolloutDataSourceWithBuffer(_args(tmp_path, "--buffer-filter-path",
                                           f"my_filters_h5.{name}", n=1))
    ds.add_samples([_group(None, "a"), _group(None, "b"), _group(None, "c")])
    with pytest.raises(ContractError, match=needle):
        ds.get_samples(1)


def test_buffer_filter_signature_checked_at_load(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "my_filters_h5b.py").write_text(FILTERS)
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ContractError, match="--buffer-filter-path"):
        RolloutDataSourceWithBuffer(_args(tmp_path, "--buffer-filter-path",
                                          "my_filters_h5b.wrong_signature"))


# ---- checkpoints ---------------------------------------------------------------------------------

def test_save_load_round_trip_includes_buffer(tmp_path: Path) -> None:
    ckpt = tmp_path / "ckpt"
    args = _args(tmp_path, "--rollout-shuffle", "--save", str(ckpt), n=2, rows=3)
    ds = RolloutDataSourceWithBuffer(args)
    ds.get_samples(2)
    partial = ds.get_samples(2)  # crosses into epoch 1
    partial[0][0].status = Sample.Status.ABORTED
    partial[0][0].tokens = [1, 2, 3]
    partial[0][0].metadata["start_rollout_id"] = 4
    partial[0][0].extra_attribute = "kept"  # type: ignore[attr-defined]
    ds.add_samples([partial[0]])
    ds.update_metadata({"seen": 2})
    ds.save(4)
    assert state_path(ckpt, 4).is_file()
    assert [p.name for p in (ckpt / "rollout").iterdir()] == [state_path(ckpt, 4).name]

    resumed = RolloutDataSourceWithBuffer(_args(tmp_path, "--rollout-shuffle", "--load",
                                                str(ckpt), n=2, rows=3))
    resumed.load()  # latest
    assert resumed.state_dict() == ds.state_dict()
    assert resumed.buffer == ds.buffer
    assert resumed.buffer[0][0].extra_attribute == "kept"  # type: ignore[attr-defined]
    assert resumed.get_metadata() == {"seen": 2}
    expected = ds.get_samples(3)
    got = resumed.get_samples(3)
    assert [[s.to_dict() for s in g] for g in got] == [[s.to_dict() for s in g] for g in expected]
    assert got[0][0].status is Sample.Status.ABORTED


def test_load_by_id_and_missing_state(tmp_path: Path) -> None:
    ckpt = tmp_path / "ckpt"
    ds = RolloutDataSource(_args(tmp_path, "--save", str(ckpt), n=1))
    ds.get_samples(1)
    ds.save(1)
    ds.get_samples(2)
    ds.save(2)
    loaded = RolloutDataSource(_args(tmp_path, "--load", str(ckpt), n=1))
    loaded.load(1)
    assert loaded.sample_offset == 1
    loaded.load()
    assert loaded.sample_offset == 3
    fresh = RolloutDataSource(_args(tmp_path, "--load", str(tmp_path / "empty"), n=1))
    fresh.load()
    fresh.load(7)
    assert fresh.sample_offset == 0


def test_interrupted_write_keeps_old_checkpoint(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    ckpt = tmp_path / "ckpt"
    ds = RolloutDataSourceWithBuffer(_args(tmp_path, "--save", str(ckpt), n=1))
    ds.get_samples(1)
    ds.save(3)
    before = state_path(ckpt, 3).read_bytes()
    ds.get_samples(2)

    def crash(obj: object, handle: object) -> None:
        handle.write(b"partial garbage")  # type: ignore[attr-defined]
        raise KeyboardInterrupt("killed mid-write")

    monkeypatch.setattr(torch, "save", crash)
    with pytest.raises(KeyboardInterrupt):
        ds.save(3)
    monkeypatch.undo()
    assert state_path(ckpt, 3).read_bytes() == before
    assert [p.name for p in (ckpt / "rollout").iterdir()] == [state_path(ckpt, 3).name]
    loaded = RolloutDataSourceWithBuffer(_args(tmp_path, "--load", str(ckpt), n=1))
    loaded.load(3)
    assert loaded.sample_offset == 1


def test_reexport_path() -> None:
    import vime.data.data_source as newest
    import vime.rollout.data_source as classic

    assert newest.RolloutDataSourceWithBuffer is classic.RolloutDataSourceWithBuffer
    assert newest.DataSource is classic.DataSource and newest.pop_first is classic.pop_first
