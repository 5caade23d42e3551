"""``--dump-rollouts``: one Parquet file per train step, one row per sample, with its fate.

Usage::

    rows = step_rows(args, rollout_id, output.samples, stale=dropped, dropped=take_dropped(7),
                     findings=violations, advantages={id(s): a, ...})
    path = write_step(run_dir, rollout_id, rows, findings)   # RUN_DIR/rollouts/step_7.parquet
    table = read_step(path)                     # pyarrow.Table (schema: vime.report.schema)
    steps = dumped_steps(run_dir)               # {7: Path(...)}, by step

A resumed run writes the files of its steps again: each file is written to a temporary name
and renamed over the old one, so a step is never in two files and never half-written.
pyarrow is imported here only (``--dump-rollouts`` runs, ``vime report``, ``vime-lint rescore``).
"""

from __future__ import annotations

import json
import math
import os
import re
from argparse import Namespace
from collections.abc import Iterable, Mapping, Sequence
from enum import Enum
from pathlib import Path
from typing import Any

from vime.report.fates import FAILED, STALE, error_of, sample_fate
from vime.report.schema import COLUMNS, DUMP_VERSION, FINDINGS_KEY, VERSION_KEY, arrow_schema

__all__ = ["DUMP_DIR", "dumped_steps", "finding_records", "read_findings", "read_step",
           "step_path", "step_rows", "write_step"]

#: Folder of the dumps under the run folder.
DUMP_DIR = "rollouts"
_STEP_FILE = re.compile(r"^step_(\d+)\.parquet$")
_WHERE = re.compile(r"^samples\[(\d+)\](?:\[(\d+)\])?")


def step_path(run_dir: str | Path, rollout_id: int) -> Path:
    """``RUN_DIR/rollouts/step_<rollout_id>.parquet``."""
    return Path(run_dir) / DUMP_DIR / f"step_{int(rollout_id)}.parquet"


def dumped_steps(run_dir: str | Path) -> dict[int, Path]:
    """``step -> file`` of every dump under ``RUN_DIR/rollouts``, in step order."""
    folder = Path(run_dir) / DUMP_DIR
    found: dict[int, Path] = {}
    if folder.is_dir():
        for p in folder.iterdir():
            m = _STEP_FILE.match(p.name)
            if m:
                found[int(m.group(1))] = p
    return dict(sorted(found.items()))


def _json(value: Any) -> str:
    return json.dumps(value, default=lambda v: v.value if isinstance(v, Enum) else str(v),
                      ensure_ascii=False)


def _reward(args: Namespace, sample: Any) -> tuple[float | None, str | None]:
    raw = sample.reward
    if isinstance(raw, dict):
        key = getattr(args, "reward_key", None)
        value = raw.get(key) if key else None
        return (_finite(value), _json(raw))
    return _finite(raw), None


def _finite(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    try:
        f = float(value)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def _int_list(values: Any) -> list[int] | None:
    return None if values is None else [int(v) for v in values]


def _row(args: Namespace, rollout_id: int, position: int, sample: Any, fate: str, reason: str,
         advantage: float | None) -> dict[str, Any]:
    rec = error_of(sample) if fate == FAILED else {}
    reward, reward_json = _reward(args, sample)
    prompt = sample.prompt if isinstance(sample.prompt, str) else _json(sample.prompt)
    status = sample.status.value if isinstance(sample.status, Enum) else str(sample.status)
    tokens = _int_list(sample.tokens) or []
    rl = int(sample.response_length or 0)
    logp = sample.rollout_log_probs
    return {
        "rollout_id": int(rollout_id), "index": sample.index, "group_index": sample.group_index,
        "position": position, "status": status, "fate": fate, "fate_reason": reason or None,
        "fail_hook": rec.get("hook"), "fail_type": rec.get("type"),
        "fail_message": rec.get("message"), "reward": reward, "reward_json": reward_json,
        "advantage": advantage, "label": None if sample.label is None else str(sample.label),
        "prompt": prompt, "response": sample.response, "prompt_length": max(0, len(tokens) - rl),
        "response_length": rl, "tokens": tokens, "loss_mask": _int_list(sample.loss_mask),
        "rollout_log_probs": None if logp is None else [float(v) for v in logp],
        "weight_versions": [str(v) for v in sample.weight_versions or []],
        "remove_sample": bool(sample.remove_sample), "finding_ids": [],
        "metadata_json": _json(sample.metadata) if sample.metadata else None,
    }


def _leaves(value: Any) -> list[Any]:
    from vime.rollout.base_types import iter_samples

    return list(iter_samples(value))


def step_rows(args: Namespace, rollout_id: int, groups: Sequence[Any], *,
              stale: Iterable[Any] = (), dropped: Iterable[tuple[Any, str, str]] = (),
              findings: Sequence[Any] = (),
              advantages: Mapping[int, float] | None = None) -> list[dict[str, Any]]:
    """The rows of one step: the rollout's groups in order, then the groups it dropped.

    Args:
        args: the run's namespace (``reward_key``, ``max_staleness``).
        rollout_id: the step.
        groups: ``RolloutFnTrainOutput.samples`` as the rollout returned them (before the
            staleness bound), ``list[list[Sample]]`` or fan-out lists.
        stale: the groups of ``groups`` that ``--max-staleness`` dropped (by identity).
        dropped: ``(group, fate, reason)`` of the groups the rollout itself dropped
            (:func:`vime.report.fates.take_dropped`).
        findings: the step's contract findings (``Violation``); each one whose ``where``
            starts with ``samples[g][e]`` is listed in that row's ``finding_ids``.
        advantages: ``id(sample) -> normalised reward`` of the samples that were converted.

    Returns:
        One dict per sample with every :data:`vime.report.schema.COLUMNS` key.
    """
    stale_ids = {id(g) for g in stale}
    adv = advantages or {}
    rows: list[dict[str, Any]] = []
    where: dict[tuple[int, int | None], list[int]] = {}
    for g, group in enumerate(groups):
        members = group if isinstance(group, (list, tuple)) else [group]
        for e, member in enumerate(members):
            for s in _leaves(member):
                if id(group) in stale_ids:
                    fate, reason = STALE, (f"its group lags more than --max-staleness="
                                           f"{getattr(args, 'max_staleness', None)} weight "
                                           f"versions (weight_versions {s.weight_versions})")
                else:
                    fate, reason = sample_fate(s)
                where.setdefault((g, e), []).append(len(rows))
                where.setdefault((g, None), []).append(len(rows))
                rows.append(_row(args, rollout_id, len(rows), s, fate, reason, adv.get(id(s))))
    for group, fate, reason in dropped:
        for s in _leaves(group):
            own, own_reason = sample_fate(s)
            if own == FAILED:
                fate_here, why = FAILED, f"{own_reason} (its group was dropped: {reason})"
            else:
                fate_here, why = fate, reason
            rows.append(_row(args, rollout_id, len(rows), s, fate_here, why, None))
    for v in findings:
        m = _WHERE.match(str(getattr(v, "where", "")))
        if m:
            key = (int(m.group(1)), int(m.group(2)) if m.group(2) is not None else None)
            for i in where.get(key, []):
                if v.id not in rows[i]["finding_ids"]:
                    rows[i]["finding_ids"].append(v.id)
    return rows


def finding_records(findings: Sequence[Any]) -> list[dict[str, Any]]:
    """The JSON records of :data:`vime.report.schema.FINDINGS_KEY` for ``Violation`` objects."""
    return [{"id": v.id, "severity": v.severity, "where": v.where, "message": v.message,
             "fix": v.fix} for v in findings]


def write_step(run_dir: str | Path, rollout_id: int, rows: Sequence[Mapping[str, Any]],
               findings: Sequence[Any] = ()) -> Path:
    """Write ``rows`` (and ``findings``: ``Violation`` objects or their records) to
    ``RUN_DIR/rollouts/step_<rollout_id>.parquet``, replacing a file of the same step.

    Raises:
        pyarrow.ArrowInvalid: a row value does not fit its column's type (names the column).
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = step_path(run_dir, rollout_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    records = [f if isinstance(f, dict) else finding_records([f])[0] for f in findings]
    schema = arrow_schema().with_metadata({VERSION_KEY: DUMP_VERSION,
                                           FINDINGS_KEY: json.dumps(records)})
    table = pa.Table.from_pydict({c.name: [r.get(c.name) for r in rows] for c in COLUMNS},
                                 schema=schema)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    pq.write_table(table, tmp, compression="zstd")
    os.replace(tmp, path)
    return path


def read_step(path: str | Path) -> Any:
    """The ``pyarrow.Table`` of one dump.

    Raises:
        ValueError: the file was written with another dump version (names the file).
    """
    import pyarrow.parquet as pq

    table = pq.read_table(path)
    meta = table.schema.metadata or {}
    version = meta.get(VERSION_KEY.encode(), b"").decode()
    if version != DUMP_VERSION:
        raise ValueError(f"{path}: rollout dump version {version or 'missing'!r}, this vime "
                         f"reads {DUMP_VERSION!r}; re-run with --dump-rollouts")
    return table


def read_findings(table: Any) -> list[dict[str, Any]]:
    """The step's contract findings stored with a dump (``[]`` when none)."""
    raw = (table.schema.metadata or {}).get(FINDINGS_KEY.encode())
    return list(json.loads(raw)) if raw else []
