"""Checkpoint files are plain data, read with torch.load(weights_only=True): a planted pickle is
refused with one clear error and never runs; every file is written atomically and a tokenizer
file cut short is replaced by the next save (vime.backends.checkpoint)."""

from __future__ import annotations

import os
import random
from argparse import Namespace
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from trainer_helpers import make_args

from vime.backends import checkpoint as ckpt
from vime.backends.trainer import Trainer

pytestmark = pytest.mark.unit


class _Payload:
    """Unpickling this runs ``touch MARKER``: what a hostile checkpoint would do."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return (os.system, (f"touch {self.marker}",))


def _plant(path: Path, marker: Path, **state: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save({**state, "x": _Payload(marker)}, path)


def test_load_state_refuses_a_pickle_that_would_run_code(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    _plant(tmp_path / "state.pt", marker)
    with pytest.raises(ckpt.UnsafeCheckpointError,
                       match=r"state.pt: refused to load: the file names the Python object "
                             r"(posix|os|nt)\.system.*weights_only=True"):
        ckpt.load_state(tmp_path / "state.pt")
    assert not marker.exists()


def _manager(tmp_path: Path) -> Any:
    from vime.ray.rollout import RolloutManagerCore

    core = RolloutManagerCore.__new__(RolloutManagerCore)
    core.args = Namespace(load=str(tmp_path), save=str(tmp_path), load_debug_rollout_data=str(
        tmp_path / "dump_{rollout_id}.pt"))

    class _Source:
        def load(self, rollout_id: int) -> None:
            pass

    core.data_source = _Source()
    return core


# every reader of a checkpoint file: (file planted, how it is read)
READERS: dict[str, Callable[[Path, Path], object]] = {
    "trainer_state.pt": lambda d, m: Trainer(make_args(m)).load(str(d), 0),
    "manager_state.pt": lambda d, m: _manager(d).load(0),
    "ahead_rollout.pt": lambda d, m: ckpt.load_ahead_rollout(d, 0),
    "rollout/global_dataset_state_dict_0.pt": lambda d, m: _data_source(d).load(0),
    "dump_0.pt": lambda d, m: _manager(d)._load_debug(0),
}


def _data_source(tmp_path: Path) -> Any:
    from vime.rollout.data_source import RolloutDataSource

    source = RolloutDataSource.__new__(RolloutDataSource)
    source.args = Namespace(load=str(tmp_path))
    return source


@pytest.mark.parametrize("name", list(READERS))
def test_every_checkpoint_reader_refuses_a_planted_pickle(tmp_path: Path, small_model: Path,
                                                          name: str) -> None:
    marker = tmp_path / "ran"
    if name == "trainer_state.pt":   # the weights are read first: a real checkpoint's
        trainer = Trainer(make_args(small_model, save=str(tmp_path)))
        trainer.save(0)
    folder = tmp_path if name.startswith(("rollout/", "dump_")) else ckpt.iteration_dir(tmp_path, 0)
    _plant(folder / name, marker, rollout_id=0, rng=ckpt.get_rng_state())
    with pytest.raises(ckpt.UnsafeCheckpointError, match=r"refused to load"):
        READERS[name](tmp_path, small_model)
    assert not marker.exists()


def test_rng_state_is_plain_data_and_round_trips(tmp_path: Path) -> None:
    path = ckpt.atomic_torch_save(ckpt.get_rng_state(), tmp_path / "rng.pt")
    expected = (random.random(), float(np.random.rand()), float(torch.rand(1)))
    ckpt.set_rng_state(ckpt.load_state(path))
    assert (random.random(), float(np.random.rand()), float(torch.rand(1))) == expected


def test_an_earlier_checkpoint_with_a_numpy_rng_state_still_loads(tmp_path: Path) -> None:
    state = {"python": random.getstate(), "numpy": np.random.get_state(),
             "torch": torch.get_rng_state()}   # what vime saved before: a numpy array inside
    torch.save(state, tmp_path / "old.pt")
    expected = float(np.random.rand())
    ckpt.set_rng_state(ckpt.load_state(tmp_path / "old.pt"))
    assert float(np.random.rand()) == expected


def test_atomic_save_leaves_the_old_file_when_the_write_fails(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    path = ckpt.atomic_torch_save({"v": 1}, tmp_path / "s.pt")

    def broken(obj: object, handle: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(torch, "save", broken)
    with pytest.raises(OSError, match="disk full"):
        ckpt.atomic_torch_save({"v": 2}, path)
    monkeypatch.undo()
    assert ckpt.load_state(path) == {"v": 1}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.pt"]   # no temporary left


def test_a_tokenizer_file_cut_short_is_replaced_by_the_next_save(tmp_path: Path,
                                                                 small_model: Path) -> None:
    model = tmp_path / "model"
    model.mkdir()
    for item in small_model.iterdir():
        (model / item.name).write_bytes(item.read_bytes())
    (model / "tokenizer_config.json").write_text('{"model_max_length": 64}')
    trainer = Trainer(make_args(model, save=str(tmp_path / "ckpt")))
    saved = Path(trainer.save(0)) / "model"
    (saved / "tokenizer_config.json").write_text('{"model_max')   # a copy cut short by a kill
    trainer.save(0)
    assert (saved / "tokenizer_config.json").read_text() == '{"model_max_length": 64}'
    assert sorted(p.name for p in saved.parent.iterdir()) == ["model", "trainer_state.pt"]
    assert (saved / "model.safetensors").is_file()
