"""Experiment trackers: every ``metrics.jsonl`` metric, the configuration and a sample table,
sent to Weights & Biases, TensorBoard and trackio (``--use-wandb``, ``--use-tensorboard``,
``--use-trackio``).

Usage::

    trackers = Trackers.from_args(args)      # TrackerMissingError: the library is not installed
    trackers.log_config(args)                # once, secrets left out
    trackers.log(record)                     # a metrics.jsonl record: same names, step rollout_id
    trackers.log_samples(rollout_id, rows)   # vime.tracking.samples.sample_table rows
    trackers.close()

Each tracker's library is imported only when its flag is on; they come with the ``tracking``
extra (``pip install 'vime[tracking]'``). The wandb key is read by wandb itself from
``WANDB_API_KEY`` (or ``wandb login``); vime never reads, logs or stores it.
"""

from __future__ import annotations

import json
import math
import os
from argparse import Namespace
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from vime.tracking.samples import TABLE_COLUMNS

__all__ = ["EXTRA", "SECRET_WORDS", "TrackerMissingError", "Trackers", "public_config"]

#: The extra that installs the trackers' libraries.
EXTRA = "tracking"
#: Argument names holding any of these words are left out of the logged configuration.
SECRET_WORDS = ("key", "token", "secret", "password")


class TrackerMissingError(RuntimeError):
    """A ``--use-*`` flag is on and its library is not installed (one line naming the extra)."""


def _need(module: str, flag: str) -> Any:
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        raise TrackerMissingError(
            f"{flag} needs the {module.split('.')[0]} package: pip install 'vime[{EXTRA}]'"
        ) from None


def public_config(args: Namespace) -> dict[str, Any]:
    """The resolved arguments as JSON values, without any whose name holds a
    :data:`SECRET_WORDS` word (an API key passed on the command line stays out)."""
    out: dict[str, Any] = {}
    for name, value in sorted(vars(args).items()):
        if any(w in name.lower() for w in SECRET_WORDS):
            continue
        try:
            json.dumps(value)
            out[name] = value
        except (TypeError, ValueError):
            out[name] = str(value)
    return out


def _numbers(record: Mapping[str, Any]) -> dict[str, float]:
    out = {}
    for k, v in record.items():
        if k in ("rollout_id", "time") or isinstance(v, bool):
            continue
        if isinstance(v, (int, float)) and math.isfinite(v):
            out[k] = float(v)
    return out


def _table_data(rows: Sequence[Mapping[str, Any]]) -> list[list[Any]]:
    """``rows`` as lists in :data:`TABLE_COLUMNS` order (wandb's and trackio's ``Table(data=)``)."""
    return [[r.get(c) for c in TABLE_COLUMNS] for r in rows]


class _Wandb:
    def __init__(self, args: Namespace) -> None:
        self.wandb = _need("wandb", "--use-wandb")
        self.run = self.wandb.init(project=args.wandb_project, group=args.wandb_group,
                                   mode=args.wandb_mode, dir=str(args.run_dir),
                                   name=Path(args.run_dir).name, reinit="create_new")

    def log_config(self, config: dict[str, Any]) -> None:
        self.run.config.update(config, allow_val_change=True)

    def log(self, step: int, metrics: dict[str, float]) -> None:
        self.run.log(metrics, step=step)

    def log_samples(self, step: int, rows: Sequence[Mapping[str, Any]]) -> None:
        table = self.wandb.Table(columns=list(TABLE_COLUMNS), data=_table_data(rows))
        self.run.log({"rollout/samples": table}, step=step)

    def close(self) -> None:
        self.run.finish()


class _TensorBoard:
    def __init__(self, args: Namespace) -> None:
        _need("tensorboard", "--use-tensorboard")
        from torch.utils.tensorboard import SummaryWriter

        folder = args.tensorboard_dir or os.path.join(str(args.run_dir), "tensorboard")
        self.writer = SummaryWriter(log_dir=folder)

    def log_config(self, config: dict[str, Any]) -> None:
        self.writer.add_text("config", "```\n" + json.dumps(config, indent=1) + "\n```", 0)

    def log(self, step: int, metrics: dict[str, float]) -> None:
        for k, v in metrics.items():
            self.writer.add_scalar(k, v, step)
        self.writer.flush()

    def log_samples(self, step: int, rows: Sequence[Mapping[str, Any]]) -> None:
        head = "| " + " | ".join(TABLE_COLUMNS) + " |\n|" + "---|" * len(TABLE_COLUMNS) + "\n"
        body = "".join("| " + " | ".join(str(r.get(c)).replace("|", "\\|").replace("\n", " ")
                                          for c in TABLE_COLUMNS) + " |\n" for r in rows)
        self.writer.add_text("rollout/samples", head + body, step)

    def close(self) -> None:
        self.writer.close()


class _Trackio:
    def __init__(self, args: Namespace) -> None:
        self.trackio = _need("trackio", "--use-trackio")
        self.run = self.trackio.init(project=args.wandb_project, name=Path(args.run_dir).name,
                                     group=args.wandb_group, embed=False,
                                     auto_log_gpu=False, auto_log_cpu=False)

    def log_config(self, config: dict[str, Any]) -> None:
        self.run.config.update(config)

    def log(self, step: int, metrics: dict[str, float]) -> None:
        self.trackio.log(metrics, step=step)

    def log_samples(self, step: int, rows: Sequence[Mapping[str, Any]]) -> None:
        table = self.trackio.Table(columns=list(TABLE_COLUMNS), data=_table_data(rows))
        self.trackio.log({"rollout/samples": table}, step=step)

    def close(self) -> None:
        self.trackio.finish()


class Trackers:
    """The trackers a run's flags turn on (none: every call does nothing)."""

    def __init__(self, backends: Sequence[Any]) -> None:
        self.backends = list(backends)

    @classmethod
    def from_args(cls, args: Namespace) -> Trackers:
        """Start each tracker whose ``--use-*`` flag is set.

        Raises:
            TrackerMissingError: a flag is on and its library is missing (names the extra).
        """
        flags = (("use_wandb", _Wandb), ("use_tensorboard", _TensorBoard),
                 ("use_trackio", _Trackio))
        return cls([make(args) for name, make in flags if getattr(args, name, False)])

    @property
    def tables(self) -> bool:
        """Some tracker is on (the train loop then fetches each step's sample table)."""
        return bool(self.backends)

    def log_config(self, args: Namespace) -> None:
        """Log :func:`public_config` once."""
        config = public_config(args)
        for b in self.backends:
            b.log_config(config)

    def log(self, record: Mapping[str, Any]) -> None:
        """Log a ``metrics.jsonl`` record's finite numbers at step ``record["rollout_id"]``."""
        if self.backends:
            metrics, step = _numbers(record), int(record["rollout_id"])
            for b in self.backends:
                b.log(step, metrics)

    def log_samples(self, step: int, rows: Sequence[Mapping[str, Any]]) -> None:
        """Log one step's sample table (nothing when ``rows`` is empty)."""
        if rows:
            for b in self.backends:
                b.log_samples(step, rows)

    def close(self) -> None:
        """Finish every tracker (files flushed)."""
        for b in self.backends:
            b.close()
        self.backends = []
