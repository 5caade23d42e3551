"""A step's metrics line is on disk before its checkpoint is marked complete, and a resume after
a kill at any point of a step writes every step once: 0..N-1, no gap, no duplicate
(vime.train.run, vime.utils.logging_utils.MetricsLog.drop_from)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vime.backends import checkpoint as ckpt
from vime.train import run
from vime.utils.arguments import parse_args
from vime.utils.logging_utils import MetricsLog

pytestmark = pytest.mark.unit

HOOKS_DIR = Path(__file__).resolve().parents[2] / "fixtures" / "train_hooks"
STEPS = 5


class Killed(BaseException):
    """What SIGKILL does to the loop: nothing after it runs (no handler, no checkpoint)."""


@pytest.fixture(autouse=True)
def _toy_on_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(HOOKS_DIR))


def _argv(tmp_path: Path, model: Path, *extra: str) -> list[str]:
    return ["--hf-checkpoint", str(model), "--rollout-batch-size", "2",
            "--n-samples-per-prompt", "2", "--num-rollout", str(STEPS),
            "--rollout-function-path", "vime_toy_rollout.generate_rollout",
            "--no-rollout-engines", "--single-process", "--run-dir", str(tmp_path / "run"),
            "--save", str(tmp_path / "ckpt"), "--load", str(tmp_path / "ckpt"), *extra]


def _steps(tmp_path: Path) -> list[int]:
    lines = (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()
    return [json.loads(line)["rollout_id"] for line in lines]


# where the kill lands in step 2: (function patched, before or after it runs)
KILLS = [("mark_complete", "before"),     # metrics of step 2 written, step 2 not marked
         ("mark_complete", "after"),      # step 2 marked, nothing after it
         ("atomic_torch_save", "before"),  # mid-save: files half written, metrics not yet
         ]


@pytest.mark.parametrize(("where", "when"), KILLS, ids=[f"{w}-{t}" for w, t in KILLS])
def test_a_kill_in_any_window_then_a_resume_logs_every_step_once(
        tmp_path: Path, small_model: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str], where: str, when: str) -> None:
    original = getattr(ckpt, where)
    order: list[str] = []

    def killing(*a: object, **kw: object) -> object:
        in_step_2 = ckpt.iteration_dir(tmp_path / "ckpt", 2).name in str(a) or (
            where == "mark_complete" and a[1] == 2)
        if in_step_2 and when == "before":
            raise Killed()
        out = original(*a, **kw)
        if where == "mark_complete":
            order.append(f"mark {a[1]} after {_steps(tmp_path)[-1]}")
        if in_step_2:
            raise Killed()
        return out

    monkeypatch.setattr(ckpt, where, killing)
    with pytest.raises(Killed):
        run(parse_args(_argv(tmp_path, small_model, "--save-interval", "1")))
    if where == "mark_complete":   # each mark came after its own step's metrics line
        assert all(m.split()[1] == m.split()[3] for m in order), order
    monkeypatch.setattr(ckpt, where, original)
    capsys.readouterr()
    assert run(parse_args(_argv(tmp_path, small_model, "--save-interval", "1"))) == 0
    assert _steps(tmp_path) == list(range(STEPS))
    assert ckpt.latest_iteration(tmp_path / "ckpt") == STEPS - 1
    out = capsys.readouterr().out
    resumed_from = 2 if (where, when) == ("mark_complete", "after") else 1
    if resumed_from == 1 and where == "mark_complete":
        assert "dropped the lines of 1 steps from step 2 on" in out


def test_a_resume_drops_the_metrics_of_steps_past_the_checkpoint(
        tmp_path: Path, small_model: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # a run with --save-interval 2 killed after step 4's line: its checkpoint is step 3's
    assert run(parse_args(_argv(tmp_path, small_model, "--save-interval", "2",
                                "--num-rollout", "4"))) == 0
    log = MetricsLog(tmp_path / "run")
    log.write(4, {"train/loss": 1.0})
    with log.path.open("a") as fh:
        fh.write('{"rollout_id": 5, "tim')   # a line cut short by the kill
    capsys.readouterr()
    assert run(parse_args(_argv(tmp_path, small_model, "--save-interval", "2"))) == 0
    assert _steps(tmp_path) == list(range(STEPS))
    assert "dropped the lines of 1 steps from step 4 on" in capsys.readouterr().out


def test_an_empty_load_folder_is_said_aloud(tmp_path: Path, small_model: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    assert run(parse_args(_argv(tmp_path, small_model, "--num-rollout", "1"))) == 0
    assert (f"vime train: no checkpoint under {tmp_path / 'ckpt'}: starting from step 0"
            in capsys.readouterr().out)


def test_drop_from_keeps_earlier_steps_and_leaves_an_absent_file_alone(tmp_path: Path) -> None:
    log = MetricsLog(tmp_path)
    assert log.drop_from(0) == 0 and not log.path.exists()
    for step in (0, 1, 2, 2, 3):
        log.write(step, {"x": step})
    assert log.drop_from(2) == 2
    assert [json.loads(x)["rollout_id"] for x in log.path.read_text().splitlines()] == [0, 1]
    assert log.drop_from(5) == 0


def test_a_resume_from_a_planted_pickle_is_one_line_exit_2_and_runs_nothing(
        tmp_path: Path, small_model: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import os

    import torch

    class Payload:
        def __reduce__(self) -> tuple[object, tuple[str]]:
            return (os.system, (f"touch {tmp_path / 'ran'}",))

    assert run(parse_args(_argv(tmp_path, small_model, "--num-rollout", "1"))) == 0
    torch.save({"rollout_id": 0, "rng": Payload()},
               ckpt.iteration_dir(tmp_path / "ckpt", 0) / "manager_state.pt")
    capsys.readouterr()
    assert run(parse_args(_argv(tmp_path, small_model, "--num-rollout", "2"))) == 2
    err = capsys.readouterr().err
    ours = [line for line in err.splitlines() if line.startswith("vime train: ")]
    assert len(ours) == 1, err   # one line (transformers' loading bar aside)
    assert "manager_state.pt: refused to load: the file names the Python object" in ours[0]
    assert "Traceback" not in err and not (tmp_path / "ran").exists()
