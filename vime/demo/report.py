"""The demo's report: the numbers of a GRPO run (:func:`summarize`), and the table,
``summary.txt``, ``summary.json`` and ``demo.png`` written after the stages (:func:`report`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from vime.demo.config import (
    GREEDY_KEY,
    LAST_EVALS,
    REWARD_KEY,
    SAMPLED_KEY,
    TINY_RECIPE,
    DemoPaths,
    Recipe,
    StageResult,
    _display,
)


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
        ``reward_window`` steps (10, or a third of the steps when fewer than 30 ran, so that
        the two windows do not overlap); ``step_seconds``: mean ``perf/step_time`` (seconds).
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
    k = min(10, max(1, len(rewards) // 3)) if rewards else 0
    out["reward_window"] = k
    out["steps"] = len(rewards)
    out["reward_first"] = _mean(rewards[:k])
    out["reward_last"] = _mean(rewards[-k:]) if k else None
    out["step_seconds"] = _mean([v for _, v in metric_series(records, "perf/step_time")])
    return out


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f} %"


def report(paths: DemoPaths, stages: Sequence[StageResult], *, quick: bool,
           total_seconds: float, recipe: Recipe = TINY_RECIPE) -> dict[str, Any]:
    """Print the summary table, write ``summary.txt``, ``summary.json`` and ``demo.png``
    (labels and target from ``recipe``)."""
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
                       title=f"GRPO from the {recipe.start_label.split(' (')[0]}: {n_eval} "
                             "held-out problems",
                       baseline=control_records, baseline_label="control: shuffled rewards")
    console = Console(record=True, width=100)
    command = "make demo" if recipe is TINY_RECIPE else f"vime demo --model {recipe.name}"
    stage_table = Table(title=f"{command}: stages", show_header=True)
    for col in ("stage", "time", "status", "what happened"):
        stage_table.add_column(col, justify="right" if col == "time" else "left")
    for s in stages:
        status = "skipped" if s.skipped else ("ok" if s.ok else "FAILED")
        stage_table.add_row(s.name, f"{s.seconds:.0f} s", status, s.detail)
    stage_table.add_row("total", f"{total_seconds:.0f} s", "", "")
    console.print(stage_table)
    acc = Table(title=f"held-out accuracy ({n_eval} problems, never trained on)",
                show_header=True)
    n_last = min(LAST_EVALS, numbers["evals"]) or LAST_EVALS
    columns = ["", recipe.start_label, f"after GRPO (mean of last {n_last} evals)"]
    if control is not None:
        columns.append("control: shuffled rewards")
    for col in columns:
        acc.add_column(col, justify="right")
    for label, first, last in (("greedy", "start_greedy", "final_greedy"),
                               (recipe.sampled_label, "start_sampled", "final_sampled"),
                               (f"train reward (first / last {numbers['reward_window']} "
                                "steps)", "reward_first",
                                "reward_last")):
        row = [label, _pct(numbers[first]), _pct(numbers[last])]
        if control is not None:
            row.append(_pct(control[last]))
        acc.add_row(*row)
    if records:
        console.print(acc)
    gain = numbers["gain_points"]
    target = recipe.target_gain_points
    if gain is not None:
        line = f"greedy accuracy {gain:+.1f} points over the {recipe.start_label.split(' (')[0]}"
        if target is not None:
            line += f" (target +{target:.0f}: {'met' if gain >= target else 'not met'})"
        if quick:
            line += "; --quick runs too few steps to learn"
        console.print(line)
    if control is not None and control["gain_points"] is not None:
        console.print(f"control (same steps, rewards shuffled): {control['gain_points']:+.1f} "
                      "points; the difference is what the reward taught")
    elif control is None and gain is not None and not quick:
        console.print("no control run: --control runs the same steps on shuffled rewards, "
                      "which says how much of this gain the reward taught")
    page = paths.grpo_run / "report.html"
    console.print(f"files: {_display(paths.out / 'summary.txt')}, "
                  f"{_display(paths.out / 'summary.json')}, "
                  f"{_display(paths.out / 'demo.png') if png else '(no plot)'}, "
                  f"{_display(paths.grpo_run / 'metrics.jsonl')}")
    if page.is_file():
        console.print(f"run health and why each sample did (not) train: {_display(page)} "
                      "(open it in a browser)")
    summary = {"quick": quick, "total_seconds": total_seconds, "n_eval": n_eval,
               "model": recipe.name, "target_gain_points": target, **numbers, "control": control,
               "stages": [asdict(s) for s in stages],
               "png": str(png) if png else None,
               "report": str(page) if page.is_file() else None}
    (paths.out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    (paths.out / "summary.txt").write_text(console.export_text())
    return summary
