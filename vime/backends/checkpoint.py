"""Checkpoint layout and RNG state: what ``--save`` writes and ``--load`` reads.

Layout under ``--save DIR``::

    DIR/latest_checkpointed_iteration.txt     the last complete rollout id (written last)
    DIR/iter_0000003/model/                   save_pretrained weights + config + tokenizer
    DIR/iter_0000003/trainer_state.pt         optimiser, scheduler, optimiser step, RNG states
    DIR/iter_0000003/manager_state.pt         rollout-side RNG states, rollout id
    DIR/iter_0000003/ahead_rollout.pt         --async-rollout: rollout 4, generated ahead
    DIR/rollout/...                           the data source's own files (data_source.save)

Usage::

    it = latest_iteration(args.load)          # None when nothing was saved
    path = iteration_dir(args.save, rollout_id)
    mark_complete(args.save, rollout_id)

The ``latest_checkpointed_iteration.txt`` / ``iter_%07d`` names follow upstream slime's checkpoint
directories, so tools that read them keep working.
"""

from __future__ import annotations

import os
import random
from pathlib import Path
from typing import Any

__all__ = ["AHEAD_FILE", "LATEST_FILE", "get_rng_state", "iteration_dir", "latest_iteration",
           "load_ahead_rollout", "mark_complete", "save_ahead_rollout", "set_rng_state"]

LATEST_FILE = "latest_checkpointed_iteration.txt"
#: The rollout an overlapped run (``--async-rollout``) had generated ahead when it saved.
AHEAD_FILE = "ahead_rollout.pt"


def iteration_dir(root: str | os.PathLike[str], rollout_id: int) -> Path:
    """``root/iter_<rollout_id:07d>``."""
    return Path(root) / f"iter_{int(rollout_id):07d}"


def latest_iteration(root: str | os.PathLike[str] | None) -> int | None:
    """The rollout id in ``root/latest_checkpointed_iteration.txt``, or None if absent.

    Raises:
        ValueError: the file exists but does not hold an integer (names the file).
    """
    if not root:
        return None
    path = Path(root) / LATEST_FILE
    if not path.is_file():
        return None
    text = path.read_text().strip()
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"{path}: expected a rollout id (an integer), found {text!r}") from None


def mark_complete(root: str | os.PathLike[str], rollout_id: int) -> None:
    """Atomically point ``root/latest_checkpointed_iteration.txt`` at ``rollout_id``."""
    path = Path(root) / LATEST_FILE
    tmp = path.with_suffix(".tmp")
    tmp.write_text(f"{int(rollout_id)}\n")
    os.replace(tmp, path)


def get_rng_state() -> dict[str, Any]:
    """Python ``random``, numpy and torch (CPU and, when present, CUDA) RNG states."""
    import numpy as np
    import torch

    state: dict[str, Any] = {"python": random.getstate(), "numpy": np.random.get_state(),
                             "torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    """Restore what :func:`get_rng_state` returned."""
    import numpy as np
    import torch

    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def save_ahead_rollout(root: str | os.PathLike[str], rollout_id: int, ahead_id: int,
                       data: Any, metrics: dict[str, Any]) -> Path:
    """Write the rollout ``ahead_id`` that an overlapped run generated before checkpoint
    ``rollout_id`` was saved (its prompts are already taken from the data source, whose saved
    state is past them); returns the file written.

    Args:
        data: the rollout manager's ``generate`` data (``BatchBuilder.convert`` columns).
        metrics: that call's metrics (``rollout/*``, ``perf/rollout_time``).
    """
    import torch

    path = iteration_dir(root, rollout_id) / AHEAD_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    torch.save({"rollout_id": int(ahead_id), "data": data, "metrics": dict(metrics)}, tmp)
    os.replace(tmp, path)
    return path


def load_ahead_rollout(root: str | os.PathLike[str],
                       rollout_id: int) -> tuple[int, Any, dict[str, Any]] | None:
    """``(ahead_id, data, metrics)`` saved by :func:`save_ahead_rollout` with checkpoint
    ``rollout_id``, or None when the checkpoint has none (a synchronous run's).

    Raises:
        ValueError: the file is not an ahead rollout (names the file and its keys).
    """
    import torch

    path = iteration_dir(root, rollout_id) / AHEAD_FILE
    if not path.is_file():
        return None
    # our own checkpoint (columns of Python lists and tensors): full unpickling
    state = torch.load(path, map_location="cpu", weights_only=False)
    if not isinstance(state, dict) or not {"rollout_id", "data", "metrics"} <= set(state):
        keys = sorted(state) if isinstance(state, dict) else type(state).__name__
        raise ValueError(f"{path}: expected an ahead rollout with rollout_id, data and "
                         f"metrics, found {keys}")
    return int(state["rollout_id"]), state["data"], dict(state["metrics"])
