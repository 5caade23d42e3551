"""Progress of `vime train`: plain lines every --progress-interval-secs without a terminal
(step, total, ETA, the loss's metrics and --early-stop-metric), a bar with ETA in one."""

from __future__ import annotations

import io
from argparse import Namespace

import pytest
from rich.console import Console

from vime.utils.logging_utils import TrainProgress, print_summary, progress_metrics

pytestmark = pytest.mark.unit

SFT_STEP = {"rollout/raw_reward": 0.0, "train/loss": 0.1420, "train/greedy_match": 0.281,
            "perf/step_time": 0.09}


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_sft_shows_the_loss_and_the_early_stop_metric_not_the_reward() -> None:
    text = progress_metrics(SFT_STEP, "sft_loss", ["train/greedy_match"])
    assert text == "loss 0.1420  train/greedy_match 0.281  step 0.09s"
    rl = progress_metrics({"rollout/raw_reward": 0.5, "train/loss": 0.01}, "policy_loss")
    assert rl == "reward 0.500  loss 0.0100"


def test_plain_lines_every_interval_with_eta() -> None:
    out, clock = io.StringIO(), Clock()
    console = Console(file=out, force_terminal=False)
    with TrainProgress(10, 0, console=console, loss_type="sft_loss",
                       watch=["train/greedy_match"], interval=30.0, clock=clock) as progress:
        for step in range(10):
            clock.now += 10.0     # 10 s per step
            progress.advance(step, SFT_STEP)
    lines = out.getvalue().splitlines()
    # after step 1, then every 30 s (steps 4, 7, 10: the last one always)
    assert [line.split("  ")[0] for line in lines] == [
        "vime train: step 1/10 (10%)", "vime train: step 4/10 (40%)",
        "vime train: step 7/10 (70%)", "vime train: step 10/10 (100%)"]
    assert lines[1] == ("vime train: step 4/10 (40%)  elapsed 0:40  ETA 1:00  loss 0.1420  "
                        "train/greedy_match 0.281  step 0.09s")
    assert "reward" not in out.getvalue()


def test_eta_counts_only_the_steps_of_this_run() -> None:
    out, clock = io.StringIO(), Clock()
    progress = TrainProgress(100, 50, console=Console(file=out), interval=0, clock=clock)
    clock.now += 20.0
    progress.advance(51, {})          # 2 steps in 20 s since the resume at 50
    assert out.getvalue().strip() == "vime train: step 52/100 (52%)  elapsed 0:20  ETA 8:00"


def test_terminal_bar_has_an_eta() -> None:
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=160)
    with TrainProgress(4, 0, console=console, loss_type="sft_loss") as progress:
        progress.advance(0, SFT_STEP)
    assert "ETA" in out.getvalue() and "loss 0.1420" in out.getvalue()


def test_for_args_reads_the_run_arguments() -> None:
    args = Namespace(loss_type="sft_loss", early_stop_metric="train/greedy_match",
                     progress_interval_secs=5.0)
    progress = TrainProgress.for_args(args, total=3)
    assert (progress.loss_type, progress.watch, progress.interval) == (
        "sft_loss", ("train/greedy_match",), 5.0)


def test_eta_leaves_out_the_start_up_of_the_first_step() -> None:
    out, clock = io.StringIO(), Clock()
    progress = TrainProgress(10, 0, console=Console(file=out), interval=0, clock=clock)
    clock.now += 55.0            # engines and model load
    progress.advance(0, {})
    clock.now += 10.0
    progress.advance(1, {})
    assert out.getvalue().splitlines()[1] == (
        "vime train: step 2/10 (20%)  elapsed 1:05  ETA 1:20")


def test_sft_summary_has_no_placeholder_reward() -> None:
    out = io.StringIO()
    records = [{"rollout_id": 0, **SFT_STEP}, {"rollout_id": 1, **SFT_STEP}]
    print_summary(records, "runs/x", console=Console(file=out, width=120),
                  loss_type="sft_loss", watch=["train/greedy_match"])
    text = out.getvalue()
    assert "train/loss" in text and "train/greedy_match" in text
    assert "rollout/raw_reward" not in text
    rl = io.StringIO()
    print_summary(records, "runs/x", console=Console(file=rl, width=120))
    assert "rollout/raw_reward" in rl.getvalue()


def test_grpo_line_shows_the_gradient_norm_and_says_once_why_the_loss_is_zero() -> None:
    from vime.utils.logging_utils import ZERO_LOSS_NOTE

    out, clock = io.StringIO(), Clock()
    progress = TrainProgress(3, 0, console=Console(file=out), interval=0, clock=clock)
    step = {"rollout/raw_reward": 0.25, "train/loss": -1.2e-9, "train/grad_norm": 0.4123}
    for rollout_id in range(3):
        clock.now += 1.0
        progress.advance(rollout_id, step)
    lines = out.getvalue().splitlines()
    assert lines[0].endswith("reward 0.250  loss -0.0000  grad 0.412"), lines
    assert lines[1] == f"  {ZERO_LOSS_NOTE}"
    assert "group" in ZERO_LOSS_NOTE and "gradient norm" in ZERO_LOSS_NOTE
    assert out.getvalue().count(ZERO_LOSS_NOTE) == 1 and len(lines) == 4   # once per run


def test_no_note_for_a_nonzero_policy_loss_or_sft() -> None:
    for loss_type, loss in (("policy_loss", 0.3), ("sft_loss", 0.0)):
        out = io.StringIO()
        progress = TrainProgress(1, 0, console=Console(file=out), interval=0,
                                 loss_type=loss_type, clock=Clock())
        progress.advance(0, {"train/loss": loss})
        assert len(out.getvalue().splitlines()) == 1, out.getvalue()


def test_elapsed_and_the_summary_count_from_the_same_start() -> None:
    # the run began 200 s before the first step (Ray, engines, model, eval before training):
    # the progress line's elapsed and the summary's time both include it; the ETA does not
    out, clock = io.StringIO(), Clock()
    run_started = clock.now
    clock.now += 200.0
    progress = TrainProgress(4, 0, console=Console(file=out), interval=0, clock=clock,
                             run_started=run_started)
    for step in range(4):
        clock.now += 10.0
        progress.advance(step, {})
    lines = out.getvalue().splitlines()
    assert lines[0] == "vime train: step 1/4 (25%)  elapsed 3:30  ETA 0:30"
    assert lines[-1] == "vime train: step 4/4 (100%)  elapsed 4:00  ETA 0:00"
    summary = io.StringIO()
    print_summary([{"rollout_id": i, "train/loss": 0.1} for i in range(4)], "runs/x",
                  console=Console(file=summary, width=200), wall_time=clock.now - run_started,
                  startup=200.0)
    assert ("4 rollout step(s) in 240.0 s (4:00 since the run began, 200.0 s of it start-up "
            "before the first step)") in summary.getvalue()


def test_a_long_phase_gets_a_line_every_interval() -> None:
    # an evaluation longer than --progress-interval-secs is not silent: beat() says what the
    # run does, once per interval without another line; a step's line still comes after it
    out, clock = io.StringIO(), Clock()
    progress = TrainProgress(10, 0, console=Console(file=out, force_terminal=False),
                             interval=30.0, clock=clock)
    assert progress.beat() is None            # nothing said yet what the run does
    progress.doing("evaluating before step 1")
    clock.now += 29.0
    assert progress.beat() is None            # not an interval yet
    clock.now += 1.0
    assert progress.beat() == "vime train: evaluating before step 1 for 0:30  elapsed 0:30"
    clock.now += 10.0
    assert progress.beat() is None            # an interval since the last line, not the start
    progress.advance(0, {})                   # the first step's line comes whatever the beats
    progress.doing("step 2/10: evaluating")
    clock.now += 45.0
    assert progress.beat() == "vime train: step 2/10: evaluating for 0:45  elapsed 1:25"
    progress.advance(1, {})                   # a step line 45 s after the last one: shown
    assert progress.beat() is None            # advance() ends the phase
    clock.now += 60.0
    assert progress.beat() is None
    lines = out.getvalue().splitlines()
    assert [line.split("  ")[0] for line in lines] == [
        "vime train: evaluating before step 1 for 0:30", "vime train: step 1/10 (10%)",
        "vime train: step 2/10: evaluating for 0:45", "vime train: step 2/10 (20%)"]


def test_the_beat_thread_prints_without_a_step() -> None:
    # the real thread (interval 0.05 s): lines arrive while the caller is blocked
    import time

    out = io.StringIO()
    with TrainProgress(3, 0, console=Console(file=out, force_terminal=False),
                       interval=0.05) as progress:
        progress.doing("step 1/3: training")
        deadline = time.monotonic() + 5.0
        while "training for" not in out.getvalue() and time.monotonic() < deadline:
            time.sleep(0.01)
    assert out.getvalue().startswith("vime train: step 1/3: training for 0:00  elapsed 0:00")
    assert progress._beats is not None and not progress._beats.is_alive()   # joined at exit


def test_a_terminal_bar_gets_no_beat_lines() -> None:
    out, clock = io.StringIO(), Clock()
    progress = TrainProgress(3, 0, console=Console(file=out, force_terminal=True),
                             interval=1.0, clock=clock)
    progress.doing("step 1/3: rollout")
    clock.now += 5.0
    assert progress.beat() is None and progress._beats is None
