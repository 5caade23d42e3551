"""Checks of the folders and files a run writes and resumes from, before anything starts.

Usage::

    problem = output_dir_problem("ckpt")             # None, or why the folder cannot be written
    problem = load_problem("ckpt", trainer=True)     # None, or why --load cannot be resumed
    found = path_problem(args)                       # ("--save", "...") or None

``vime train`` runs :func:`path_problem` in its input check (``vime.config.inputs``), so a
``--save`` that is a file, a ``--run-dir`` under a file, a ``--load`` whose
``latest_checkpointed_iteration.txt`` holds garbage or points at a missing or incomplete
iteration end the run with one line naming the argument and exit status 2, before Ray or an
engine starts (found later they cost the whole run, or minutes of start-up). Checked:

* output folders (``--run-dir``: ``metrics.jsonl``, ``train.log``, ``--dump-rollouts``,
  ``--report``, wandb's files; ``--save``; ``--tensorboard-dir``; the folder of
  ``--save-debug-rollout-data``): not a file, and the folder, or its nearest existing parent
  when it is to be created, is a writable folder;
* ``--load``: absent or empty is a fresh start (said aloud by ``vime train``); a file, an
  unreadable folder, a pointer that is not a rollout id, a pointer to a missing iteration or
  one without the files a resume reads (``vime.backends.checkpoint``'s layout) is refused;
* ``--load-debug-rollout-data``: the first replayed step's file exists and is readable.

Standard library only; nothing is created or written.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

__all__ = ["RESUME_FILES", "load_problem", "output_dir_problem", "path_problem"]

#: ``vime.backends.checkpoint.LATEST_FILE`` (not imported: this module stays light).
LATEST_FILE = "latest_checkpointed_iteration.txt"
#: Files of ``iter_NNNNNNN/`` a resume reads: the trainer's, then the rollout manager's.
RESUME_FILES = {"trainer": ("model/model.safetensors", "trainer_state.pt"),
                "manager": ("manager_state.pt",)}


def _nearest_existing(path: Path) -> Path:
    for parent in (path, *path.parents):
        if parent.exists() or parent.is_symlink():
            return parent
    return Path(".")


def output_dir_problem(value: str) -> str | None:
    """Why the folder ``value`` cannot be created or written, or None.

    ``value`` may not exist yet: then its nearest existing parent must be a folder this
    process can write into (``os.access``: read-only mounts included)."""
    path = Path(value).expanduser()
    if path.is_symlink() and not path.exists():
        return f"{value!r} is a dangling symbolic link (to {os.readlink(path)!r})"
    if path.exists() and not path.is_dir():
        return f"{value!r} is a file, not a folder; give a folder (it is created if absent)"
    base = _nearest_existing(path)
    if not base.is_dir():
        return (f"{value!r} cannot be created: {str(base)!r} is a file, not a folder; "
                "give a path under a folder")
    if not os.access(base, os.W_OK | os.X_OK):
        which = "the folder" if base == path else "its parent folder"
        return f"{value!r} cannot be written: {which} {str(base)!r} is not writable"
    return None


def load_problem(value: str, *, trainer: bool = True) -> str | None:
    """Why ``--load value`` cannot be resumed from, or None (also when it does not exist or
    holds no ``latest_checkpointed_iteration.txt``: a fresh start).

    Args:
        trainer: whether the run trains (its files are then needed too; ``--debug-rollout-only``
            reads the rollout manager's only).
    """
    root = Path(value).expanduser()
    if not root.exists():
        return None
    if not root.is_dir():
        return (f"{value!r} is a file; give the checkpoint folder that --save wrote (the one "
                f"holding {LATEST_FILE})")
    pointer = root / LATEST_FILE
    if not os.access(root, os.R_OK | os.X_OK):
        return f"folder {value!r} is not readable"
    if not pointer.exists():
        return None
    try:
        text = pointer.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as exc:
        return f"cannot read {pointer}: {getattr(exc, 'strerror', None) or exc}"
    if not text.isdigit():
        return (f"{pointer} holds {text[:40]!r}, not a rollout id; write the id of a complete "
                f"iter_NNNNNNN folder there, or remove the file to start from step 0")
    rollout_id = int(text)
    folder = root / f"iter_{rollout_id:07d}"
    if not folder.is_dir():
        found = sorted(p.name for p in root.glob("iter_*") if p.is_dir())
        have = f"; the folder holds {', '.join(found[-3:])}" if found else \
            "; the folder holds no iter_* folder"
        return f"{pointer} points at {folder.name}, which does not exist{have}"
    needed = [*RESUME_FILES["manager"], *(RESUME_FILES["trainer"] if trainer else ())]
    for name in needed:
        path = folder / name
        if not path.is_file():
            return (f"checkpoint {folder} is incomplete: {name} is missing (a save cut short? "
                    f"point {LATEST_FILE} at an earlier complete iteration)")
        if not os.access(path, os.R_OK):
            return f"checkpoint file {path} is not readable"
    return None


def _debug_data_problem(template: str, rollout_id: int) -> str | None:
    path = Path(template.replace("{rollout_id}", str(rollout_id))).expanduser()
    if not path.is_file():
        return f"{str(path)!r} (the file of rollout {rollout_id}) does not exist"
    if not os.access(path, os.R_OK):
        return f"{str(path)!r} is not readable"
    return None


def path_problem(args: argparse.Namespace) -> tuple[str, str] | None:
    """The first bad path ``(argument, reason)`` of ``args`` (module doc), or None."""
    outputs = [("--run-dir", getattr(args, "run_dir", None)),
               ("--save", getattr(args, "save", None)),
               ("--tensorboard-dir", getattr(args, "tensorboard_dir", None))]
    template = getattr(args, "save_debug_rollout_data", None)
    if isinstance(template, str) and template:
        parent = str(Path(template.replace("{rollout_id}", "0")).parent)
        outputs.append(("--save-debug-rollout-data", parent))
    for name, value in outputs:
        if isinstance(value, str) and value:
            problem = output_dir_problem(value)
            if problem:
                return name, problem
    load = getattr(args, "load", None)
    if isinstance(load, str) and load:
        problem = load_problem(load, trainer=not getattr(args, "debug_rollout_only", False))
        if problem:
            return "--load", problem
    replay = getattr(args, "load_debug_rollout_data", None)
    if isinstance(replay, str) and replay:
        first = int(getattr(args, "start_rollout_id", 0) or 0)
        pointer = Path(load).expanduser() / LATEST_FILE if isinstance(load, str) and load else None
        if pointer is not None and pointer.is_file():   # a resume replays the next step first
            first = int(pointer.read_text(encoding="utf-8").strip()) + 1
        problem = _debug_data_problem(replay, first)
        if problem:
            return "--load-debug-rollout-data", problem
    return None
