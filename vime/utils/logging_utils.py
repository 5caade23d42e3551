"""Run metrics: built-in eval metrics, ``metrics.jsonl``, the rich progress line, the summary.
The train rollout's built-in metrics (``rollout_metrics``, ``BUILTIN_ROLLOUT_METRICS``) live in
:mod:`vime.rollout.rollout_metrics`, which names them all; they are re-exported here.

Usage::

    m = rollout_metrics(args, samples, rollout_time=1.2)   # rollout/*, perf/tokens_per_s
    e = eval_metrics(args, output.data)                     # eval/<name>, eval/<name>-truncated_ratio
    log = MetricsLog(run_dir)                               # <run_dir>/metrics.jsonl
    log.write(rollout_id, {**m, **e})
    with TrainProgress.for_args(args, total=10, start=0) as progress:
        progress.advance(rollout_id, metrics)   # bar + ETA in a terminal, else a line every 30 s
    print_summary(log.records, run_dir)

Each line of ``metrics.jsonl`` is one JSON object: ``{"rollout_id": int, "time": unix seconds,
"<metric>": number, ...}``; non-finite values are written as null.

Eval metric names (``eval/<name>``, ``-truncated_ratio``, ``--log-passrate``) follow
docs/contract.md §3. pass@k is the unbiased estimator of Chen et al. 2021 ("Evaluating Large
Language Models Trained on Code", eq. 1).
"""

from __future__ import annotations

import json
import math
import os
import threading
import time
from argparse import Namespace
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from vime.config import arg
from vime.rollout.rollout_metrics import BUILTIN_ROLLOUT_METRICS, rollout_metrics

__all__ = ["BUILTIN_ROLLOUT_METRICS", "METRICS_FILE", "MetricsLog", "TrainProgress", "eval_metrics", "pass_at_k",
           "print_summary", "progress_metrics", "rollout_metrics"]

METRICS_FILE = "metrics.jsonl"


def _mean(values: Sequence[float]) -> float:
    return float(sum(values) / len(values)) if values else 0.0


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k for ``n`` samples of which ``c`` passed: ``1 - C(n-c, k) / C(n, k)``."""
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def eval_metrics(args: Namespace, data: Mapping[str, Mapping[str, Any]]) -> dict[str, float]:
    """Built-in eval metrics per dataset ``name`` of ``RolloutFnEvalOutput.data``.

    Returns:
        ``eval/<name>`` (mean reward), ``eval/<name>-truncated_ratio`` (when ``truncated`` is
        given) and with ``--log-passrate`` ``eval/<name>-pass@<k>`` for k = 1, 2, 4, ... up to
        ``n_samples_per_eval_prompt`` (a sample passes when its reward is > 0; rewards are
        taken in consecutive groups of ``n_samples_per_eval_prompt``).
    """
    out: dict[str, float] = {}
    group = int(arg(args, "n_samples_per_eval_prompt"))
    for name, entry in data.items():
        rewards = [float(r) for r in entry.get("rewards", [])]
        out[f"eval/{name}"] = _mean(rewards)
        if "truncated" in entry:
            out[f"eval/{name}-truncated_ratio"] = _mean([float(bool(t))
                                                         for t in entry["truncated"]])
        if arg(args, "log_passrate") and rewards and len(rewards) % group == 0:
            k = 1
            while k <= group:
                vals = [pass_at_k(group, sum(r > 0 for r in rewards[i:i + group]), k)
                        for i in range(0, len(rewards), group)]
                out[f"eval/{name}-pass@{k}"] = _mean(vals)
                k *= 2
    return out


def _jsonable(value: Any) -> Any:
    if isinstance(value, bool) or value is None or isinstance(value, (int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    try:
        f = float(value)
    except (TypeError, ValueError):
        return str(value)
    return f if math.isfinite(f) else None


class MetricsLog:
    """Appends one JSON object per rollout step to ``<run_dir>/metrics.jsonl``; keeps them in
    ``records``."""

    def __init__(self, run_dir: str | Path) -> None:
        self.path = Path(run_dir) / METRICS_FILE
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.records: list[dict[str, Any]] = []

    def write(self, rollout_id: int, metrics: Mapping[str, Any]) -> dict[str, Any]:
        """Append ``{"rollout_id", "time", **metrics}`` (flushed and fsynced: ``vime train``
        marks a checkpoint complete only after its step's line is on disk); returns the
        record."""
        record = {"rollout_id": int(rollout_id), "time": time.time(),
                  **{str(k): _jsonable(v) for k, v in metrics.items()}}
        with self.path.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(record) + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        self.records.append(record)
        return record

    def drop_from(self, rollout_id: int) -> int:
        """Remove the lines of steps ``>= rollout_id`` from the file (a resume from the
        checkpoint of step ``rollout_id - 1`` writes them again; kept, they would be
        duplicates), and a last line cut short by a kill. The file is rewritten atomically
        (temporary name, fsync, rename) only when something is dropped.

        Returns:
            How many distinct steps were dropped (0 when the file is absent).
        """
        try:
            lines = self.path.read_text(encoding="utf-8", errors="replace").splitlines()
        except FileNotFoundError:
            return 0
        kept, dropped, cut = [], set(), False
        for line in lines:
            try:
                step = int(json.loads(line)["rollout_id"])
            except (ValueError, KeyError, TypeError):
                cut = True   # a line cut short mid-write
                continue
            if step >= rollout_id:
                dropped.add(step)
            else:
                kept.append(line)
        if dropped or cut:
            tmp = self.path.with_name(f".{self.path.name}.tmp-{os.getpid()}")
            with tmp.open("w", encoding="utf-8") as fh:
                fh.write("".join(line + "\n" for line in kept))
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, self.path)
        return len(dropped)


#: Label and format of the metrics the progress line shows, per loss (``--loss-type``); the SFT
#: rollout's reward is a placeholder (0.0), so SFT shows the loss only.
_PROGRESS_METRICS: dict[str, tuple[tuple[str, str, str], ...]] = {
    "sft_loss": (("train/loss", "loss", "{:.4f}"),),
    "default": (("rollout/raw_reward", "reward", "{:.3f}"), ("train/loss", "loss", "{:.4f}"),
                ("train/grad_norm", "grad", "{:.3g}")),
}

#: Said once, on the first plain progress line whose policy loss is ~0 (|loss| < 5e-4).
ZERO_LOSS_NOTE = ("(a policy loss near 0 is expected: advantages are normalised within each "
                  "group, so the policy-gradient loss averages to ~0 by construction; `grad`, "
                  "the gradient norm, is the size of each update)")
_PERF_METRICS = (("perf/tokens_per_s", "tok/s", "{:,.0f}"), ("perf/step_time", "step", "{:.2f}s"))


def progress_metrics(metrics: Mapping[str, Any], loss_type: str = "policy_loss",
                     watch: Sequence[str] = ()) -> str:
    """The metrics that matter for ``loss_type``, then each ``watch`` metric (the
    ``--early-stop-metric``, by its logged name) and tokens/s and step time:
    ``"loss 0.1420  train/greedy_match 0.281  step 0.09s"``. Missing or non-finite values
    are left out."""
    shown = list(_PROGRESS_METRICS.get(loss_type, _PROGRESS_METRICS["default"]))
    shown += [(name, name, "{:.3f}") for name in watch if name]
    shown += _PERF_METRICS
    parts = []
    for key, label, fmt in shown:
        value = metrics.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and \
                math.isfinite(value):
            parts.append(f"{label} {fmt.format(value)}")
    return "  ".join(parts)


def _clock(seconds: float) -> str:
    seconds = max(0, int(round(seconds)))
    hours, rest = divmod(seconds, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}" if hours else f"{rest // 60}:{rest % 60:02d}"


class TrainProgress:
    """Progress over rollout steps: the metrics of :func:`progress_metrics` and an ETA.

    In a terminal: a rich bar (steps, elapsed, ETA) updated every step. Otherwise (a log file,
    CI, ``nohup``): one plain line, ``vime train: step 12/60 (20%)  elapsed 1:02  ETA 4:08
    loss 0.1420  ...``, after the first step, then at most every ``interval`` seconds, and after
    the last one. ``elapsed`` counts from ``run_started`` (``vime train`` passes the moment the
    run began, so Ray, the engines, the model load and the eval before training are in it, as
    in the summary's time: :func:`print_summary`), else from this object's creation. ETA =
    mean time per step since the first finished step (which carries the start-up; until a
    second one, since this object's creation) x steps left. For a policy loss the line
    shows the gradient norm too (``grad``), and the first line whose loss is ~0 says once why
    that is expected (:data:`ZERO_LOSS_NOTE`).

    A step, or an evaluation, that takes longer than ``interval`` is not silent: in plain mode
    a background thread prints what the run is doing (the last :meth:`doing` label) whenever
    ``interval`` seconds pass without a line, ``vime train: step 6/10: evaluating for 0:35
    elapsed 3:12``.

    Usage::

        with TrainProgress.for_args(args, total=args.num_rollout, start=0) as progress:
            progress.doing("step 1/10: rollout")
            progress.advance(rollout_id, metrics)
    """

    def __init__(self, total: int, start: int = 0, *, console: Any = None,
                 loss_type: str = "policy_loss", watch: Sequence[str] = (),
                 interval: float = 30.0, clock: Any = time.monotonic,
                 run_started: float | None = None) -> None:
        from rich.console import Console

        self.console = console or Console(stderr=True)
        self.total, self.start = int(total), int(start)
        self.loss_type, self.watch = loss_type, tuple(w for w in watch if w)
        self.interval, self.clock = float(interval), clock
        self.started = clock()
        #: ``clock()`` when the run began: the origin of ``elapsed``.
        self.run_started = self.started if run_started is None else float(run_started)
        self.last_line: float | None = None
        #: ``clock()`` of the last line of any kind (a step's or :meth:`beat`'s)
        self.last_output = self.started
        #: (label, since) of :meth:`doing`, cleared by :meth:`advance`
        self.current: tuple[str, float] | None = None
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._beats: threading.Thread | None = None
        #: (steps done, clock) at the first finished step: the ETA's origin after it
        self.first: tuple[int, float] | None = None
        self.plain = not self.console.is_terminal
        #: :data:`ZERO_LOSS_NOTE` was printed (once per run)
        self.noted = False
        self.progress: Any = None
        if not self.plain:
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )

            self.progress = Progress(TextColumn("[bold]vime train"), BarColumn(),
                                     MofNCompleteColumn(), TimeElapsedColumn(),
                                     TextColumn("ETA"), TimeRemainingColumn(),
                                     TextColumn("{task.fields[info]}"), console=self.console,
                                     transient=False)
            self.task = self.progress.add_task("train", total=total, completed=start, info="")
            if clock is time.monotonic:   # rich's clock: its elapsed counts from the same origin
                for task in self.progress.tasks:
                    task.start_time = self.run_started

    @classmethod
    def for_args(cls, args: Namespace, total: int, start: int = 0,
                 run_started: float | None = None) -> TrainProgress:
        """A progress display for a run of ``args``: its ``--loss-type``,
        ``--early-stop-metric`` and ``--progress-interval-secs``; ``run_started``: the
        ``time.monotonic()`` the run began at (the origin of ``elapsed``)."""
        return cls(total, start, loss_type=str(arg(args, "loss_type")),
                   watch=[arg(args, "early_stop_metric") or ""],
                   interval=float(arg(args, "progress_interval_secs")),
                   run_started=run_started)

    def __enter__(self) -> TrainProgress:
        if self.progress is not None:
            self.progress.start()
        elif self.interval > 0:
            self._beats = threading.Thread(target=self._beat_loop, name="vime-progress",
                                           daemon=True)
            self._beats.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stopped.set()
        if self._beats is not None:
            self._beats.join()
        if self.progress is not None:
            self.progress.stop()

    def doing(self, label: str) -> None:
        """What the run does from now until the next :meth:`doing` or :meth:`advance`
        (``"step 3/10: evaluating"``): the text of :meth:`beat`'s lines."""
        with self._lock:
            self.current = (label, self.clock())

    def beat(self) -> str | None:
        """In plain mode, print ``vime train: <label> for M:SS  elapsed M:SS`` when
        ``interval`` seconds passed since the last line and :meth:`doing` names what the run
        does; returns the line printed, or None."""
        with self._lock:
            now = self.clock()
            if (not self.plain or self.current is None
                    or now - self.last_output < self.interval):
                return None
            label, since = self.current
            text = (f"vime train: {label} for {_clock(now - since)}  "
                    f"elapsed {_clock(now - self.run_started)}")
            self.last_output = now
            self.console.file.write(text + "\n")
            self.console.file.flush()
            return text

    def _beat_loop(self) -> None:
        while not self._stopped.wait(min(self.interval, 1.0)):
            self.beat()

    def line(self, rollout_id: int, metrics: Mapping[str, Any]) -> str:
        """The plain progress line after ``rollout_id`` is done."""
        done = rollout_id + 1
        now = self.clock()
        elapsed = now - self.run_started
        if self.first is None:
            self.first = (done, now)
        first_done, first_time = self.first
        if done > first_done:   # the first step carries the start-up (engines, model load)
            per_step = (now - first_time) / (done - first_done)
        else:
            per_step = (now - self.started) / max(1, done - self.start)
        eta = per_step * max(0, self.total - done)
        percent = 100.0 * done / self.total if self.total else 100.0
        text = (f"vime train: step {done}/{self.total} ({percent:.0f}%)  elapsed "
                f"{_clock(elapsed)}  ETA {_clock(eta)}")
        shown = progress_metrics(metrics, self.loss_type, self.watch)
        text = f"{text}  {shown}" if shown else text
        loss = metrics.get("train/loss")
        if (not self.noted and self.loss_type != "sft_loss" and isinstance(loss, (int, float))
                and abs(loss) < 5e-4):
            self.noted = True
            text += f"\n  {ZERO_LOSS_NOTE}"
        return text

    def advance(self, rollout_id: int, metrics: Mapping[str, Any]) -> None:
        """Mark ``rollout_id`` done and show its metrics."""
        if self.progress is not None:
            self.progress.update(self.task, completed=rollout_id + 1,
                                 info=progress_metrics(metrics, self.loss_type, self.watch))
            return
        with self._lock:
            self.current = None
            now = self.clock()
            last = rollout_id + 1 >= self.total
            if self.last_line is None or last or now - self.last_line >= self.interval:
                self.last_line = self.last_output = now
                self.console.file.write(self.line(rollout_id, metrics) + "\n")
                self.console.file.flush()


def print_summary(records: Sequence[Mapping[str, Any]], run_dir: str | Path, *,
                  console: Any = None, wall_time: float | None = None,
                  loss_type: str = "policy_loss", watch: Sequence[str] = (),
                  startup: float | None = None) -> None:
    """Print a table: steps run, first/last reward (not for ``sft_loss``: the SFT rollout's
    reward is a placeholder) and loss, each ``watch`` metric, step time, run folder.

    ``wall_time``: seconds since the run began (the progress line's ``elapsed`` counts from
    the same moment); ``startup``: the part of it before the first step (Ray, the engines,
    the model, the eval before training), shown when given."""
    from rich.console import Console
    from rich.table import Table

    console = console or Console(stderr=True)
    table = Table(title="vime train: summary", show_header=True)
    table.add_column("metric")
    table.add_column("first", justify="right")
    table.add_column("last", justify="right")
    train = [r for r in records if "train/loss" in r or "rollout/raw_reward" in r]
    keys = [k for k, _, _ in _PROGRESS_METRICS.get(loss_type, _PROGRESS_METRICS["default"])]
    keys += [w for w in watch if w and w not in keys and not w.startswith("eval/")]
    for key in (*keys, "perf/tokens_per_s", "perf/step_time"):
        values = [r[key] for r in train if isinstance(r.get(key), (int, float))]
        if values:
            table.add_row(key, f"{values[0]:.4g}", f"{values[-1]:.4g}")
    evals = sorted({k for r in records for k in r if k.startswith("eval/")})
    for key in evals:
        values = [r[key] for r in records if isinstance(r.get(key), (int, float))]
        if values:
            table.add_row(key, f"{values[0]:.4g}", f"{values[-1]:.4g}")
    console.print(table)
    tail = f"{len(train)} rollout step(s)"
    if wall_time is not None:
        tail += f" in {wall_time:.1f} s ({_clock(wall_time)} since the run began"
        tail += (f", {startup:.1f} s of it start-up before the first step)"
                 if startup is not None else ")")
    console.print(f"{tail}; metrics: {Path(run_dir) / METRICS_FILE}")
