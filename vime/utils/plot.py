"""Per-step series from a run's ``metrics.jsonl`` and a PNG of reward and eval accuracy.

Usage::

    records = read_metrics("runs/demo/grpo/metrics.jsonl")      # list[dict], one per line
    metric_series(records, "eval/greedy")     # [(0, 0.33), (10, 0.36), ...]  (steps done, value)
    plot_run(records, "runs/demo/grpo/demo.png", title="GRPO on 2-digit arithmetic")

Step axis: "GRPO steps done", i.e. the number of rollout steps whose update the policy has seen.
``vime train`` writes one record per rollout step (``rollout_id`` r: the rollout was sampled
by the policy after r updates, so its reward sits at x = r; an eval in that record ran after
the update, x = r + 1) plus, before training, one record holding only the first evaluation
(x = its ``rollout_id``).

The record layout is ``vime.utils.logging_utils.MetricsLog``'s.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = ["DEFAULT_EVAL_KEYS", "DEFAULT_REWARD_KEY", "metric_series", "plot_run",
           "read_metrics"]

#: The train reward plotted by default (mean scalar reward of a rollout step).
DEFAULT_REWARD_KEY = "rollout/raw_reward"
#: The eval accuracies plotted by default (dataset names of ``examples/demo/eval.yaml``).
DEFAULT_EVAL_KEYS = ("eval/greedy", "eval/sampled")

_TRAIN_PREFIXES = ("train/", "rollout/", "perf/step_time")


def read_metrics(path: str | Path) -> list[dict[str, Any]]:
    """The records of a ``metrics.jsonl`` file, in file order.

    Raises:
        FileNotFoundError: the file does not exist (names it).
        ValueError: a line is not a JSON object (names the file and the 1-based line).
    """
    file = Path(path)
    if not file.is_file():
        raise FileNotFoundError(f"metrics file {file} does not exist (did the run start?)")
    records = []
    for number, line in enumerate(file.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{file}:{number}: not JSON ({exc.msg})") from None
        if not isinstance(record, dict):
            raise ValueError(f"{file}:{number}: expected a JSON object, got "
                             f"{type(record).__name__}")
        records.append(record)
    return records


def _is_step_record(record: Mapping[str, Any]) -> bool:
    return any(k.startswith(_TRAIN_PREFIXES) for k in record)


def metric_series(records: Sequence[Mapping[str, Any]], key: str) -> list[tuple[int, float]]:
    """``(steps_done, value)`` for every record holding a finite number under ``key``.

    Eval keys (``eval/...``) in a step record sit at ``rollout_id + 1``; everything else, and
    the pre-training evaluation record, at ``rollout_id``.

    Raises:
        ValueError: a record without an integer ``rollout_id`` (names the record's position).
    """
    out: list[tuple[int, float]] = []
    for i, record in enumerate(records):
        value = record.get(key)
        if isinstance(value, bool) or not isinstance(value, (int, float)) \
                or not math.isfinite(value):
            continue
        rollout_id = record.get("rollout_id")
        if not isinstance(rollout_id, int):
            raise ValueError(f"metrics record {i} has rollout_id={rollout_id!r}; expected an int")
        shift = 1 if key.startswith("eval/") and _is_step_record(record) else 0
        out.append((rollout_id + shift, float(value)))
    return out


def plot_run(records: Sequence[Mapping[str, Any]], out_png: str | Path, *,
             title: str | None = None, reward_key: str = DEFAULT_REWARD_KEY,
             eval_keys: Sequence[str] = DEFAULT_EVAL_KEYS,
             baseline: Sequence[Mapping[str, Any]] | None = None,
             baseline_label: str = "control") -> Path:
    """Write a PNG: train reward per step (thin line) and eval accuracies (markers), y in [0, 1].

    Args:
        records: ``metrics.jsonl`` records of one run.
        out_png: the file to write (parent folders are created).
        title: figure title (None: none).
        reward_key: the per-step train reward key.
        eval_keys: eval metric keys; keys absent from every record are skipped.
        baseline: records of a comparison run (the demo's shuffled-reward control): its eval
            accuracies are drawn dashed, labelled ``baseline_label``.

    Returns:
        ``Path(out_png)``.

    Raises:
        ValueError: no record holds ``reward_key`` or any of ``eval_keys`` (nothing to plot).
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    reward = metric_series(records, reward_key)
    evals = {k: metric_series(records, k) for k in eval_keys}
    evals = {k: v for k, v in evals.items() if v}
    if not reward and not evals:
        raise ValueError(f"plot_run: no record holds {reward_key!r} or any of "
                         f"{list(eval_keys)}; nothing to plot")
    fig, ax = plt.subplots(figsize=(8, 4.5), dpi=110)
    try:
        if reward:
            xs, ys = zip(*reward, strict=True)
            ax.plot(xs, ys, color="0.6", linewidth=1.0, label=f"train reward ({reward_key})")
        for i, (k, series) in enumerate(evals.items()):
            xs, ys = zip(*series, strict=True)
            ax.plot(xs, ys, marker="o", linewidth=1.8, color=f"C{i}",
                    label=f"held-out accuracy ({k})")
            other = metric_series(baseline, k) if baseline else []
            if other:
                xs, ys = zip(*other, strict=True)
                ax.plot(xs, ys, marker="x", linewidth=1.2, linestyle="--", color=f"C{i}",
                        label=f"{baseline_label} ({k})")
        ax.set_xlabel("GRPO steps done")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_ylabel("accuracy / mean reward")
        ax.set_ylim(0.0, 1.0)
        ax.grid(True, alpha=0.3)
        ax.legend(loc="upper left", fontsize="small")
        if title:
            ax.set_title(title)
        out = Path(out_png)
        out.parent.mkdir(parents=True, exist_ok=True)
        fig.tight_layout()
        fig.savefig(out)
    finally:
        plt.close(fig)
    return out
