"""Experiment trackers (vime.tracking): the metrics.jsonl record reaches TensorBoard under the
same names and step (read back from the event files), secrets stay out of the logged
configuration, and a missing library is one line naming the extra."""

from __future__ import annotations

import sys
from argparse import Namespace
from pathlib import Path

import pytest

from vime.tracking import EXTRA, TrackerMissingError, Trackers, public_config

pytestmark = pytest.mark.unit


def _args(run_dir: Path, **flags: object) -> Namespace:
    base = {"run_dir": str(run_dir), "use_wandb": False, "use_tensorboard": False,
            "use_trackio": False, "tensorboard_dir": None, "wandb_project": "vime",
            "wandb_group": None, "wandb_mode": "offline", "lr": 1e-5,
            "router_api_key": "sk-secret", "ray_auth_token_path": "/x"}
    return Namespace(**{**base, **flags})


def test_tensorboard_gets_every_metric_at_its_step(tmp_path: Path) -> None:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    trackers = Trackers.from_args(_args(tmp_path, use_tensorboard=True))
    trackers.log_config(_args(tmp_path))
    for step, loss in ((0, 0.5), (1, 0.25)):
        trackers.log({"rollout_id": step, "time": 123.0, "train/loss": loss,
                      "rollout/raw_reward": step / 2, "perf/note": "text is not a scalar"})
    trackers.log_samples(1, [{"prompt": "1+1", "response": "2", "reward": 1.0,
                              "status": "completed", "vime_error": ""}])
    trackers.close()
    acc = EventAccumulator(str(tmp_path / "tensorboard"))
    acc.Reload()
    assert set(acc.Tags()["scalars"]) == {"train/loss", "rollout/raw_reward"}
    assert [(e.step, e.value) for e in acc.Scalars("train/loss")] == [(0, 0.5), (1, 0.25)]
    assert [(e.step, e.value) for e in acc.Scalars("rollout/raw_reward")] == [(0, 0.0), (1, 0.5)]
    assert {"config/text_summary", "rollout/samples/text_summary"} <= set(acc.Tags()["tensors"])


def test_no_tracker_logs_nothing(tmp_path: Path) -> None:
    trackers = Trackers.from_args(_args(tmp_path))
    assert not trackers.tables
    trackers.log({"rollout_id": 0, "train/loss": 1.0})
    trackers.close()
    assert list(tmp_path.iterdir()) == []


def test_the_logged_configuration_leaves_secrets_out(tmp_path: Path) -> None:
    config = public_config(_args(tmp_path))
    assert config["lr"] == 1e-5
    assert "router_api_key" not in config and "ray_auth_token_path" not in config


@pytest.mark.parametrize(("flag", "module"), [("use_wandb", "wandb"),
                                              ("use_tensorboard", "tensorboard"),
                                              ("use_trackio", "trackio")])
def test_a_missing_tracker_library_names_the_extra(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch,
                                                   flag: str, module: str) -> None:
    monkeypatch.setitem(sys.modules, module, None)   # import raises ImportError
    with pytest.raises(TrackerMissingError) as err:
        Trackers.from_args(_args(tmp_path, **{flag: True}))
    assert str(err.value) == (f"--{flag.replace('_', '-')} needs the {module} package: "
                              f"pip install 'vime[{EXTRA}]'")


_LOG_RUN = """
import sys
from argparse import Namespace
from vime.tracking import Trackers
args = Namespace(run_dir=sys.argv[1], use_wandb=True, use_tensorboard=False, use_trackio=True,
                 tensorboard_dir=None, wandb_project="vime-test", wandb_group=None,
                 wandb_mode="offline", lr=1e-5, router_api_key="sk-secret")
trackers = Trackers.from_args(args)
trackers.log_config(args)
for step, loss in ((0, 0.5), (1, 0.25)):
    trackers.log({"rollout_id": step, "time": 1.0, "train/loss": loss, "perf/note": "text"})
trackers.log_samples(1, [{"prompt": "1+1", "response": "2", "reward": 1.0,
                          "status": "completed", "vime_error": ""}])
trackers.close()
"""


def _wandb_records(path: Path) -> list[object]:
    """The protobuf records of an offline ``run-*.wandb`` file (a LevelDB-style log: a 7-byte
    header, then 32 KiB blocks of records with a 7-byte header: crc32, length, type)."""
    import struct

    from wandb.proto import wandb_internal_pb2

    data, block = path.read_bytes(), 32768
    assert data[:4] == b":W&B", "not a wandb data file"
    pos, part, out = 7, b"", []
    while pos + 7 <= len(data):
        if block - pos % block < 7:          # the block's tail is padding
            pos += block - pos % block
            continue
        _, length, kind = struct.unpack("<IHB", data[pos:pos + 7])
        if kind == 0 and length == 0:
            break
        part += data[pos + 7:pos + 7 + length]
        pos += 7 + length
        if kind in (1, 4):                   # FULL, or LAST of a split record
            record = wandb_internal_pb2.Record()
            record.ParseFromString(part)
            out.append(record)
            part = b""
    return out


def test_wandb_offline_and_trackio_files_read_back(tmp_path: Path) -> None:
    import json
    import os
    import sqlite3
    import subprocess

    run_dir = tmp_path / "run"
    run_dir.mkdir()
    env = {**os.environ, "TRACKIO_DIR": str(tmp_path / "trackio"), "WANDB_SILENT": "true",
           "WANDB_MODE": "offline"}
    subprocess.run([sys.executable, "-c", _LOG_RUN, str(run_dir)], check=True, env=env,
                   cwd=tmp_path, capture_output=True, timeout=180)
    (data_file,) = run_dir.glob("wandb/offline-run-*/run-*.wandb")
    history, config = [], {}
    for r in _wandb_records(data_file):
        kind = r.WhichOneof("record_type")  # type: ignore[attr-defined]
        if kind == "history":
            history.append({i.key or "/".join(i.nested_key): json.loads(i.value_json)  # type: ignore[attr-defined]
                            for i in r.history.item})  # type: ignore[attr-defined]
        elif kind == "config":
            config.update({i.key: json.loads(i.value_json) for i in r.config.update})  # type: ignore[attr-defined]
    assert [(h["_step"], h["train/loss"]) for h in history] == [(0, 0.5), (1, 0.25)]
    assert history[1]["rollout/samples/_type"] == "table-file"
    assert not any("perf/note" in h for h in history)
    assert config["lr"] == 1e-5 and "router_api_key" not in config
    samples = run_dir.glob("wandb/offline-run-*/files/media/table/rollout/samples_1_*.table.json")
    (table_file,) = samples
    table = json.loads(table_file.read_text())
    assert table["data"] == [[None, None, "1+1", "2", 1.0, "completed", ""]]

    db = sqlite3.connect(tmp_path / "trackio" / "vime-test.db")
    metrics = [(step, json.loads(m)) for step, m in
               db.execute("select step, metrics from metrics order by id")]
    assert metrics[:2] == [(0, {"train/loss": 0.5}), (1, {"train/loss": 0.25})]
    assert metrics[2][1]["rollout/samples"]["_value"][0]["prompt"] == "1+1"
    ((logged,),) = db.execute("select config from configs")
    logged_config = json.loads(logged)
    assert logged_config["lr"] == 1e-5 and "router_api_key" not in logged_config
