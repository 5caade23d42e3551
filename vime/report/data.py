"""The numbers of a run's report, read from ``RUN_DIR/metrics.jsonl`` and the rollout dumps.

Usage::

    data = collect("runs/demo/grpo", control="runs/demo/control", step=None)
    data.health["failed_samples"]       # FAILED samples over the dumped steps
    data.failures                       # [FailureKind(hook, type, count, step, index, message)]
    data.findings                       # [FindingKind(id, severity, count, where, message)]
    data.per_step[3]["zero_spread_groups"]
    data.samples                        # every row of the step shown (``data.samples_step``)

No plotting and no HTML here (:mod:`vime.report.html` renders it); pyarrow is imported only
when the run has dumps.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vime.report.fates import FAILED, FATES, FILTERED, STALE

__all__ = ["FailureKind", "FindingKind", "ReportData", "collect", "zero_spread_groups"]

#: Columns read from every dumped step for the health tables (all columns for the shown step).
SUMMARY_COLUMNS = ("rollout_id", "index", "group_index", "fate", "fail_hook", "fail_type",
                   "fail_message", "reward", "status", "response_length")


@dataclass(frozen=True)
class FailureKind:
    """FAILED samples of one ``(hook, type)``, with the lowest-index example."""

    hook: str
    type: str
    count: int
    step: int
    index: int | None
    message: str


@dataclass(frozen=True)
class FindingKind:
    """Contract findings of one id over the dumped steps, with the first one's text."""

    id: str
    severity: str
    count: int
    steps: int
    step: int
    where: str
    message: str


@dataclass
class ReportData:
    """Everything the page shows (see :func:`collect`)."""

    run_dir: Path
    records: list[dict[str, Any]]
    control_records: list[dict[str, Any]]
    dumped_steps: list[int]
    health: dict[str, float]
    failures: list[FailureKind]
    findings: list[FindingKind]
    #: step -> ``{"zero_spread_groups", "stale_groups", "filtered_groups", "<fate>": count}``.
    per_step: dict[int, dict[str, int]]
    samples_step: int | None
    samples: list[dict[str, Any]] = field(default_factory=list)


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def zero_spread_groups(rows: Sequence[Mapping[str, Any]]) -> int:
    """Groups of a step whose scored samples (not FAILED, not dropped) all have the same reward
    (a group of one included): their advantages are all zero, so they teach nothing."""
    rewards: dict[Any, list[float]] = defaultdict(list)
    for r in rows:
        if r["fate"] in (FAILED, FILTERED, STALE) or r.get("reward") is None:
            continue
        rewards[r["group_index"]].append(float(r["reward"]))
    return sum(1 for values in rewards.values() if max(values) - min(values) == 0.0)


def _groups_with(rows: Sequence[Mapping[str, Any]], fate: str) -> int:
    return len({r["group_index"] for r in rows if r["fate"] == fate})


def _read_records(path: Path) -> list[dict[str, Any]]:
    from vime.utils.plot import read_metrics

    return read_metrics(path) if path.is_file() else []


def _metric_total(records: Sequence[Mapping[str, Any]], key: str) -> float:
    return float(sum(v for r in records if (v := _number(r.get(key))) is not None))


def collect(run_dir: str | Path, *, control: str | Path | None = None,
            step: int | None = None) -> ReportData:
    """Read a run folder.

    Args:
        run_dir: the ``--run-dir`` of a ``vime train`` run (``metrics.jsonl``, and
            ``rollouts/step_N.parquet`` with ``--dump-rollouts``).
        control: the run folder of a control run (the demo's shuffled rewards), or None.
        step: the dumped step whose samples are listed (default: the last dumped step).

    Returns:
        :class:`ReportData`.

    Raises:
        FileNotFoundError: ``run_dir`` has neither ``metrics.jsonl`` nor dumps (names it).
        ValueError: ``step`` was not dumped (names the dumped steps), or a dump of another
            version.
    """
    from vime.report.dump import dumped_steps, read_findings, read_step

    run = Path(run_dir)
    records = _read_records(run / "metrics.jsonl")
    files = dumped_steps(run)
    if not records and not files:
        raise FileNotFoundError(f"{run}: no metrics.jsonl and no rollouts/step_N.parquet "
                                "(is this a vime train --run-dir?)")
    control_records = _read_records(Path(control) / "metrics.jsonl") if control else []
    if step is not None and step not in files:
        raise ValueError(f"--step {step}: not dumped under {run / 'rollouts'}; dumped steps: "
                         f"{sorted(files) or 'none (run with --dump-rollouts)'}")
    shown = step if step is not None else (max(files) if files else None)
    failures: dict[tuple[str, str], list[Any]] = {}
    finding_counts: dict[str, list[Any]] = {}
    per_step: dict[int, dict[str, int]] = {}
    samples: list[dict[str, Any]] = []
    n_failed = 0
    for s, path in files.items():
        table = read_step(path)
        rows = (table.to_pylist() if s == shown
                else table.select(list(SUMMARY_COLUMNS)).to_pylist())
        if s == shown:
            samples = rows
        fates = Counter(r["fate"] for r in rows)
        per_step[s] = {"samples": len(rows), **{f: fates.get(f, 0) for f in FATES},
                       "zero_spread_groups": zero_spread_groups(rows),
                       "stale_groups": _groups_with(rows, STALE),
                       "filtered_groups": _groups_with(rows, FILTERED)}
        for r in rows:
            if r["fate"] != FAILED:
                continue
            n_failed += 1
            key = (r["fail_hook"] or "unknown", r["fail_type"] or "unknown")
            entry = failures.setdefault(key, [0, None])
            entry[0] += 1
            rank = (r["index"] is None, r["index"] or 0, s)
            if entry[1] is None or rank < entry[1][0]:
                entry[1] = (rank, s, r["index"], r["fail_message"] or "")
        seen: set[str] = set()
        for f in read_findings(table):
            entry = finding_counts.setdefault(f["id"], [0, 0, f, s])
            entry[0] += 1
            if f["id"] not in seen:
                entry[1] += 1
                seen.add(f["id"])
    kinds = [FailureKind(h, t, n, ex[1], ex[2], ex[3])
             for (h, t), (n, ex) in sorted(failures.items(), key=lambda kv: -kv[1][0])]
    found = [FindingKind(i, str(e[2].get("severity", "")), e[0], e[1], e[3],
                         str(e[2].get("where", "")), str(e[2].get("message", "")))
             for i, e in sorted(finding_counts.items())]
    steps = [r for r in records if "rollout/num_samples" in r or "train/loss" in r]
    health = {
        "steps_logged": float(len({r["rollout_id"] for r in steps})),
        "steps_dumped": float(len(files)),
        "watchdog_reports": _metric_total(records, "rollout/vllm_rollout/watchdog_reports"),
        "engine_retries": _metric_total(records, "rollout/vllm_rollout/engine_retries"),
        "failed_samples": float(n_failed) if files else _metric_total(records,
                                                                      "rollout/failed/count"),
        "failed_groups_dropped": _metric_total(records,
                                               "rollout/vllm_rollout/failed_groups_dropped"),
        "contract_findings": float(sum(f.count for f in found)),
        "zero_spread_groups": float(sum(p["zero_spread_groups"] for p in per_step.values())),
        "stale_groups": (float(sum(p["stale_groups"] for p in per_step.values())) if files
                         else _metric_total(records, "rollout/staleness/dropped_groups")),
        "filtered_groups": float(sum(p["filtered_groups"] for p in per_step.values())),
    }
    return ReportData(run, records, control_records, sorted(files), health, kinds, found,
                      per_step, shown, samples)
