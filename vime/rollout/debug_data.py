"""``--save-debug-rollout-data``: one step's samples written to a file, the same for
``vime train`` (each train and eval step) and the ``vime-lint check`` dry run.

The file is ``torch.save({"rollout_id": ID, "samples": [Sample.to_dict(), ...], **extra})``
at ``template.format(rollout_id=ID)`` (its folder created); ``--load-debug-rollout-data``
reads it back. Eval steps are written with ``ID = "eval_<rollout_id>"``.

Usage::

    path = save_debug_rollout_data("runs/x/rollout_{rollout_id}.pt", 3, samples)
    # runs/x/rollout_3.pt
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from vime.utils.types import Sample

__all__ = ["debug_data_path", "save_debug_rollout_data"]


def debug_data_path(template: str, rollout_id: int | str) -> Path:
    """``template`` with ``{rollout_id}`` replaced.

    Raises:
        ValueError: ``template`` has another ``{placeholder}`` (names it)."""
    try:
        return Path(template.format(rollout_id=rollout_id))
    except (KeyError, IndexError, ValueError) as exc:
        raise ValueError(f"--save-debug-rollout-data {template!r}: only {{rollout_id}} is "
                         f"replaced in this path ({type(exc).__name__}: {exc})") from None


def save_debug_rollout_data(template: str, rollout_id: int | str, samples: Sequence[Sample],
                            **extra: Any) -> Path:
    """Write ``samples`` (flat) of step ``rollout_id`` with ``torch.save``, atomically
    (``vime.backends.checkpoint.atomic_torch_save``); return the path.

    Raises:
        ValueError: a placeholder other than ``{rollout_id}`` in ``template``.
        OSError: the folder cannot be created or the file written.
    """
    from vime.backends.checkpoint import atomic_torch_save

    path = debug_data_path(template, rollout_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    return atomic_torch_save({"rollout_id": rollout_id,
                              "samples": [s.to_dict() for s in samples], **extra}, path)
