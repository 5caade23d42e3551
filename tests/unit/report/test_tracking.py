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
