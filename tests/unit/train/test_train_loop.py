"""vime.train.run in single-process mode: debug-rollout-only, Ctrl-C and contract errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vime.ray.rollout import RolloutManagerCore
from vime.train import main, run
from vime.utils.arguments import parse_args

pytestmark = pytest.mark.unit

HOOKS_DIR = Path(__file__).resolve().parents[2] / "fixtures" / "train_hooks"


@pytest.fixture(autouse=True)
def _toy_on_path(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    monkeypatch.syspath_prepend(str(HOOKS_DIR))
    for marker in ("VIME_RUN_ID", "VIME_DRIVER"):   # run() sets them: gone after each test
        monkeypatch.delenv(marker, raising=False)
    calls: list[int] = []
    original = RolloutManagerCore.shutdown

    def shutdown(self: RolloutManagerCore) -> None:
        calls.append(1)
        original(self)

    monkeypatch.setattr(RolloutManagerCore, "shutdown", shutdown)
    return calls


def argv(tmp_path: Path, fn: str, *extra: str) -> list[str]:
    return ["--rollout-batch-size", "2", "--n-samples-per-prompt", "2", "--num-rollout", "3",
            "--rollout-function-path", f"vime_toy_rollout.{fn}", "--no-rollout-engines",
            "--single-process", "--debug-rollout-only", "--run-dir", str(tmp_path / "run"),
            *extra]


def test_debug_rollout_only_logs_every_step(tmp_path: Path, _toy_on_path: list[int]) -> None:
    assert run(parse_args(argv(tmp_path, "generate_rollout"))) == 0
    lines = (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()
    records = [json.loads(line) for line in lines]
    assert [r["rollout_id"] for r in records] == [0, 1, 2]
    assert all("rollout/toy/groups" in r and "train/loss" not in r for r in records)
    assert _toy_on_path == [1]


def test_ctrl_c_stops_engines_and_returns_130(tmp_path: Path, _toy_on_path: list[int],
                                              capsys: pytest.CaptureFixture[str]) -> None:
    assert run(parse_args(argv(tmp_path, "interrupt_at_step_one"))) == 130
    assert "interrupted" in capsys.readouterr().err
    assert _toy_on_path == [1]


def test_sigterm_stops_engines_and_returns_143(tmp_path: Path, _toy_on_path: list[int],
                                               capsys: pytest.CaptureFixture[str]) -> None:
    import signal

    before = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)
    assert run(parse_args(argv(tmp_path, "terminate_at_step_one"))) == 143
    err = capsys.readouterr().err
    assert "SIGTERM received: stopping after this step" in err
    assert "terminated (SIGTERM)" in err
    assert [r["rollout_id"] for r in records(tmp_path)] == [0, 1]  # step 1 was finished
    assert _toy_on_path == [1]
    assert (signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)) == before


def test_a_second_sigterm_stops_at_once(tmp_path: Path, _toy_on_path: list[int],
                                         capsys: pytest.CaptureFixture[str]) -> None:
    assert run(parse_args(argv(tmp_path, "terminate_twice_at_step_one"))) == 143
    assert "terminated (SIGTERM)" in capsys.readouterr().err
    assert [r["rollout_id"] for r in records(tmp_path)] == [0]  # step 1 never finished
    assert _toy_on_path == [1]


def test_contract_error_prints_message_and_returns_1(tmp_path: Path, _toy_on_path: list[int],
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv(tmp_path, "broken_at_step_one")) == 1
    err = capsys.readouterr().err
    assert "contract violation, stopped before the optimiser step" in err
    assert "VIM108 error: samples[0][1].loss_mask" in err and "Traceback" not in err
    assert _toy_on_path == [1]


def test_bad_arguments_exit_2(tmp_path: Path) -> None:
    assert main(["--rollout-batch-size", "0", "--num-rollout", "1"]) == 2


def records(tmp_path: Path) -> list[dict[str, object]]:
    lines = (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


def test_early_stop_ends_the_loop_once_the_window_mean_reaches_the_threshold(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # the toy rollout logs rollout/toy/groups = 2 every step: a window of 2 is full at step 1
    assert run(parse_args(argv(tmp_path, "generate_rollout", "--early-stop-metric",
                               "rollout/toy/groups", "--early-stop-threshold", "2",
                               "--early-stop-window", "2"))) == 0
    assert [r["rollout_id"] for r in records(tmp_path)] == [0, 1]
    assert ("stopped after step 1 (2 steps done): mean rollout/toy/groups over the last 2 "
            "values 2.000 >= "
            "--early-stop-threshold 2") in capsys.readouterr().out


def test_early_stop_below_the_threshold_trains_to_the_end(tmp_path: Path) -> None:
    assert run(parse_args(argv(tmp_path, "generate_rollout", "--early-stop-metric",
                               "rollout/toy/groups", "--early-stop-threshold", "2.5"))) == 0
    assert [r["rollout_id"] for r in records(tmp_path)] == [0, 1, 2]


def test_early_stop_on_a_metric_the_run_does_not_log_exits_2_and_names_the_known_ones(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv(tmp_path, "generate_rollout", "--early-stop-metric", "train/greedy_mach",
                     "--early-stop-threshold", "0.3")) == 2
    err = capsys.readouterr().err
    assert "--early-stop-metric train/greedy_mach: this run logs no such metric" in err
    assert "rollout/toy/groups" in err and "Traceback" not in err


@pytest.mark.parametrize(("extra", "named"), [
    (["--early-stop-metric", "train/greedy_match"], "--early-stop-threshold"),
    (["--early-stop-threshold", "0.3"], "--early-stop-metric"),
    (["--early-stop-metric", "m", "--early-stop-threshold", "1", "--early-stop-window", "0"],
     "--early-stop-window"),
])
def test_early_stop_arguments_are_checked(tmp_path: Path, extra: list[str], named: str,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv(tmp_path, "generate_rollout", *extra)) == 2
    assert f"argument {named}:" in capsys.readouterr().err


# ---- --async-rollout checkpoints keep the rollout generated ahead ---------------------------

def test_the_ahead_rollout_round_trips_through_the_checkpoint(tmp_path: Path) -> None:
    import torch

    from vime.backends import checkpoint as ckpt

    data = {"tokens": [[1, 2, 3], [4, 5]], "rewards": torch.tensor([1.0, 0.0])}
    path = ckpt.save_ahead_rollout(tmp_path, 1, 2, data, {"rollout/raw_reward": 0.5})
    assert path == tmp_path / "iter_0000001" / ckpt.AHEAD_FILE
    ahead_id, loaded, metrics = ckpt.load_ahead_rollout(tmp_path, 1)  # type: ignore[misc]
    assert (ahead_id, loaded["tokens"], metrics) == (2, data["tokens"], {"rollout/raw_reward": 0.5})
    assert torch.equal(loaded["rewards"], data["rewards"])
    assert ckpt.load_ahead_rollout(tmp_path, 0) is None   # a synchronous run's checkpoint
    torch.save([1, 2], path)
    with pytest.raises(ValueError, match=r"ahead_rollout.pt: expected an ahead rollout"):
        ckpt.load_ahead_rollout(tmp_path, 1)


@pytest.mark.parametrize("overlap", [True, False])
def test_a_resume_trains_the_saved_ahead_rollout_or_says_its_prompts_are_skipped(
        tmp_path: Path, overlap: bool, capsys: pytest.CaptureFixture[str]) -> None:
    from argparse import Namespace

    from vime.backends import checkpoint as ckpt
    from vime.train import _resumed_ahead

    ckpt.save_ahead_rollout(tmp_path, 4, 5, {"tokens": [[1], [2], [3]]}, {})
    args = Namespace(load=str(tmp_path))
    resumed = _resumed_ahead(args, 4, 5, overlap=overlap)
    out = capsys.readouterr()
    if overlap:
        assert resumed is not None and resumed[0] == 5 and resumed[1]["tokens"] == [[1], [2], [3]]
        assert "resuming with rollout 5, generated ahead before the checkpoint of step 4" in out.out
    else:
        assert resumed is None
        assert ("holds rollout 5, generated ahead by --async-rollout; without --async-rollout it "
                "is not trained and its 3 samples' prompts are skipped") in out.err
    assert _resumed_ahead(args, 4, 6, overlap=True) is None   # not the step after the checkpoint


class _Calls:
    """A trainer or manager wrapper that records its calls."""

    def __init__(self) -> None:
        self.calls: list[tuple[object, ...]] = []

    def call(self, name: str, *a: object) -> None:
        self.calls.append((name, *a))


@pytest.mark.parametrize("finished", [True, False])
def test_a_stop_saves_once_with_the_ahead_rollout_unless_it_was_cut_short(
        tmp_path: Path, finished: bool, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    from argparse import Namespace

    import vime.train as train_mod
    from vime.backends import checkpoint as ckpt

    def peek(value: object) -> object:
        if not finished:
            raise RuntimeError("the rollout was interrupted")
        return value

    monkeypatch.setattr(train_mod, "_peek", peek)
    trainer, manager = _Calls(), _Calls()
    train_mod._stopped(Namespace(save=str(tmp_path)), trainer, manager, 2, None, False,
                       (3, {"tokens": [[1]]}, {}))
    assert trainer.calls == [("save", 2)] and manager.calls == [("save", 2)]   # once each
    assert ckpt.latest_iteration(tmp_path) == 2
    assert (ckpt.load_ahead_rollout(tmp_path, 2) is not None) is finished
    err = capsys.readouterr().err
    assert ("rollout 3, generated ahead, did not finish (RuntimeError); a resume skips its "
            "prompts" in err) is not finished


def test_sigterm_during_start_up_stops_at_once(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    """A SIGTERM while the actors and engines start (before the first step) does not wait for
    the start-up to finish (it used to take 44 s with a real engine): exit 143 at once."""
    import os
    import signal
    import time

    import vime.train as train_mod

    started: list[float] = []

    def slow_start(args: object) -> tuple[object, object]:
        started.append(time.monotonic())
        os.kill(os.getpid(), signal.SIGTERM)   # delivered here, between two bytecodes
        time.sleep(30)                         # an engine that takes long to come up
        raise AssertionError("the start-up was not interrupted")

    monkeypatch.setattr(train_mod, "_start", slow_start)
    before = signal.getsignal(signal.SIGTERM)
    assert run(parse_args(argv(tmp_path, "generate_rollout"))) == 143
    assert time.monotonic() - started[0] < 5
    err = capsys.readouterr().err
    assert "SIGTERM received during start-up: stopping now" in err
    assert "terminated (SIGTERM)" in err and "saved a checkpoint" not in err
    assert not (tmp_path / "run" / "metrics.jsonl").exists()
    assert signal.getsignal(signal.SIGTERM) == before
    assert os.environ["VIME_RUN_ID"] and os.environ["VIME_DRIVER"].split(":")[1] == str(
        os.getpid())
