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
    save_trainer_state(args.save, rollout_id, model=m, optimizer=o, scheduler=s,
                       global_step=n, dp=dp, hf_checkpoint=args.hf_checkpoint)  # Trainer.save
    n = load_trainer_state(args.load, rollout_id, model=m, optimizer=o, scheduler=s,
                           dp=dp, device=device)                                # Trainer.load

Every file is written atomically (:func:`atomic_torch_save`, :func:`publish_files`: a temporary
name in the same folder, fsync, rename, fsync of the folder), and the iteration is marked
complete last, after its step's metrics line (``vime.train``): a kill at any point leaves the
previous complete checkpoint and a ``metrics.jsonl`` that a resume trims to it.

Every ``.pt`` file is read with :func:`load_state`: ``torch.load(weights_only=True)``, so a
checkpoint holds plain data only (tensors, numbers, strings, lists, tuples, dicts) and a file
that names any other Python object, one that would run code when unpickled included, is
refused with :class:`UnsafeCheckpointError` (docs/en/training.md, "Security").

The ``latest_checkpointed_iteration.txt`` / ``iter_%07d`` names follow upstream slime's checkpoint
directories, so tools that read them keep working.
"""

from __future__ import annotations

import os
import random
import re
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

    from vime.backends.parallel import DataParallel

__all__ = ["AHEAD_FILE", "LATEST_FILE", "TOKENIZER_FILES", "TRAINER_STATE_FILE",
           "UnsafeCheckpointError", "atomic_torch_save", "copy_tokenizer_files", "fsync_dir",
           "get_rng_state", "iteration_dir", "latest_iteration", "load_ahead_rollout",
           "load_state", "load_trainer_state", "mark_complete", "publish_files",
           "save_ahead_rollout", "save_trainer_state", "set_rng_state"]

LATEST_FILE = "latest_checkpointed_iteration.txt"
#: The rollout an overlapped run (``--async-rollout``) had generated ahead when it saved.
AHEAD_FILE = "ahead_rollout.pt"
#: Optimiser, scheduler, optimiser step and RNG states, next to ``model/`` in an iteration.
TRAINER_STATE_FILE = "trainer_state.pt"
#: The files of ``--hf-checkpoint`` that :func:`copy_tokenizer_files` copies into ``model/``.
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json",
                   "chat_template.jinja", "generation_config.json", "vocab.json", "merges.txt")


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
    """Atomically point ``root/latest_checkpointed_iteration.txt`` at ``rollout_id`` (temporary
    name, fsync, rename, fsync of ``root``)."""
    path = Path(root) / LATEST_FILE
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    with tmp.open("w", encoding="utf-8") as handle:
        handle.write(f"{int(rollout_id)}\n")
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)
    fsync_dir(path.parent)


class UnsafeCheckpointError(ValueError):
    """A checkpoint file names a Python object other than plain data: refused, not unpickled."""


def fsync_dir(folder: str | os.PathLike[str]) -> None:
    """fsync ``folder`` itself, so that the renames into it survive a power loss (a no-op where
    folders cannot be opened, as on Windows)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def atomic_torch_save(obj: Any, path: str | os.PathLike[str]) -> Path:
    """``torch.save(obj)`` to ``path`` atomically: a temporary name in the same folder, fsync,
    ``os.replace``, fsync of the folder; a crash mid-write leaves the old file (or none) and no
    temporary one. Returns ``path``."""
    import torch

    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.tmp-{os.getpid()}")
    try:
        with tmp.open("wb") as handle:
            torch.save(obj, handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, target)
    finally:
        if tmp.exists():
            tmp.unlink()
    fsync_dir(target.parent)
    return target


def publish_files(staging: str | os.PathLike[str], target: str | os.PathLike[str]) -> list[Path]:
    """Move every file of the folder ``staging`` into ``target`` one by one, each fsynced then
    renamed over its namesake (so each file of ``target`` is whole, old or new, at every
    moment), fsync ``target`` and remove ``staging``. ``staging`` must be on ``target``'s file
    system (a sibling folder). Returns the files of ``target`` written."""
    src, dst = Path(staging), Path(target)
    dst.mkdir(parents=True, exist_ok=True)
    written = []
    for item in sorted(src.rglob("*")):
        if not item.is_file():
            continue
        out = dst / item.relative_to(src)
        out.parent.mkdir(parents=True, exist_ok=True)
        with item.open("rb") as handle:
            os.fsync(handle.fileno())
        os.replace(item, out)
        written.append(out)
    fsync_dir(dst)
    shutil.rmtree(src, ignore_errors=True)
    return written


#: ``GLOBAL module.name`` in torch's refusal of a weights-only load.
_GLOBAL_RE = re.compile(r"GLOBAL ([\w.]+)")


def _numpy_array_globals() -> list[Any]:
    """What an unpickled numpy array (a checkpoint of an earlier vime: numpy RNG state) needs:
    array reconstruction and dtypes, none of which runs code."""
    import numpy as np

    try:
        from numpy._core.multiarray import _reconstruct
    except ImportError:   # numpy < 2
        from numpy.core.multiarray import _reconstruct  # type: ignore[no-redef]
    dtypes = {type(np.dtype(t)) for t in (np.uint32, np.int64, np.float32, np.float64, np.bool_)}
    return [_reconstruct, np.ndarray, np.dtype, *sorted(dtypes, key=str)]


def load_state(path: str | os.PathLike[str], *, map_location: Any = "cpu") -> Any:
    """Read a checkpoint ``.pt`` file as plain data: ``torch.load(path, weights_only=True)``
    with numpy arrays' reconstruction as the only extra globals allowed.

    Raises:
        UnsafeCheckpointError: the file names another Python object (a class, a function such as
            ``os.system``: what a planted pickle uses to run code); the message names the file
            and the object, and nothing of the file was executed.
    """
    import pickle

    import torch

    try:
        with torch.serialization.safe_globals(_numpy_array_globals()):
            return torch.load(path, map_location=map_location, weights_only=True)
    except pickle.UnpicklingError as exc:
        found = _GLOBAL_RE.search(str(exc))
        what = found[1] if found else str(exc).strip().splitlines()[-1][:200]
        raise UnsafeCheckpointError(
            f"{path}: refused to load: the file names the Python object {what}, and vime loads "
            "checkpoints as plain data only (tensors, numbers, strings, lists, dicts; "
            "torch.load(weights_only=True)) because unpickling anything else can run code. "
            "Load only checkpoints you wrote or trust; a sample attribute or data-source "
            "metadata of another type must be stored as plain data") from None


def get_rng_state() -> dict[str, Any]:
    """Python ``random``, numpy and torch (CPU and, when present, CUDA) RNG states."""
    import numpy as np
    import torch

    numpy_state = np.random.get_state(legacy=False)   # plain types: a weights-only load reads them
    numpy_state["state"] = {"key": [int(k) for k in numpy_state["state"]["key"]],
                            "pos": int(numpy_state["state"]["pos"])}
    state: dict[str, Any] = {"python": random.getstate(), "numpy": numpy_state,
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

    path = iteration_dir(root, rollout_id) / AHEAD_FILE
    return atomic_torch_save({"rollout_id": int(ahead_id), "data": data,
                              "metrics": dict(metrics)}, path)


def load_ahead_rollout(root: str | os.PathLike[str],
                       rollout_id: int) -> tuple[int, Any, dict[str, Any]] | None:
    """``(ahead_id, data, metrics)`` saved by :func:`save_ahead_rollout` with checkpoint
    ``rollout_id``, or None when the checkpoint has none (a synchronous run's).

    Raises:
        ValueError: the file is not an ahead rollout (names the file and its keys).
        UnsafeCheckpointError: the file holds more than plain data (:func:`load_state`).
    """
    path = iteration_dir(root, rollout_id) / AHEAD_FILE
    if not path.is_file():
        return None
    state = load_state(path)
    if not isinstance(state, dict) or not {"rollout_id", "data", "metrics"} <= set(state):
        keys = sorted(state) if isinstance(state, dict) else type(state).__name__
        raise ValueError(f"{path}: expected an ahead rollout with rollout_id, data and "
                         f"metrics, found {keys}")
    return int(state["rollout_id"]), state["data"], dict(state["metrics"])


def copy_tokenizer_files(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
    """Copy the :data:`TOKENIZER_FILES` of ``src`` into the staging folder ``dst`` (each save
    copies them again, so a file cut short by a kill is replaced by the next save); a file that
    ``save_pretrained`` already wrote there (``generation_config.json``) is kept."""
    src, dst = Path(src), Path(dst)
    for name in TOKENIZER_FILES:
        if (src / name).is_file() and not (dst / name).exists():
            shutil.copy2(src / name, dst / name)


def save_trainer_state(root: str | os.PathLike[str], rollout_id: int, *, model: Any,
                       optimizer: torch.optim.Optimizer, scheduler: Any, global_step: int,
                       dp: DataParallel, hf_checkpoint: str | os.PathLike[str]) -> Path:
    """Write ``root/iter_<rollout_id>``: ``model/`` (``save_pretrained`` weights and config, the
    tokenizer files of ``hf_checkpoint``) and :data:`TRAINER_STATE_FILE` (``optimizer``,
    ``scheduler`` state dicts, ``global_step``, :func:`get_rng_state`); returns the folder.

    The model is written into a sibling staging folder, then each file fsynced and renamed into
    ``model/`` (:func:`publish_files`). With several ranks (``dp.sharded``) every rank calls
    this: the full tensors are gathered on rank 0, which writes the one-rank layout (a
    checkpoint resumes with any rank count), and all ranks meet at a barrier before returning.
    The iteration is not marked complete here (:func:`mark_complete`).
    """
    target = iteration_dir(root, rollout_id)
    model_dir = target / "model"
    staging = target / f".model.tmp-{os.getpid()}"
    if not dp.sharded:
        staging.mkdir(parents=True, exist_ok=True)
        model.save_pretrained(str(staging))
        optimizer_state = optimizer.state_dict()
    else:
        state = dp.full_model_state(model)
        optimizer_state = dp.full_optimizer_state(model, optimizer)
        if dp.rank == 0:
            if model.config.tie_word_embeddings:
                state.pop("lm_head.weight", None)
            staging.mkdir(parents=True, exist_ok=True)
            model.save_pretrained(str(staging), state_dict=state)
    if dp.rank == 0:
        copy_tokenizer_files(hf_checkpoint, staging)
        publish_files(staging, model_dir)
        atomic_torch_save({"optimizer": optimizer_state, "scheduler": scheduler.state_dict(),
                           "global_step": int(global_step), "rng": get_rng_state()},
                          target / TRAINER_STATE_FILE)
    dp.barrier()
    return target


def load_trainer_state(load_dir: str | os.PathLike[str], rollout_id: int, *, model: Any,
                       optimizer: torch.optim.Optimizer, scheduler: Any, dp: DataParallel,
                       device: torch.device) -> int:
    """Restore what :func:`save_trainer_state` wrote for ``rollout_id`` under ``load_dir`` into
    ``model``, ``optimizer``, ``scheduler`` and the RNGs (:func:`set_rng_state`); returns the
    saved optimiser step (``global_step``). A sharded model (``dp.sharded``) reads the tensors
    on the CPU and each rank keeps its shard; otherwise they are read onto ``device``.

    Raises:
        FileNotFoundError: the iteration folder or its files are missing (names the path).
        ValueError: the weights do not fit the model (names the file, up to five missing and
            five unexpected keys; a tied ``lm_head.weight`` is not missing).
        UnsafeCheckpointError: :data:`TRAINER_STATE_FILE` holds more than plain data
            (:func:`load_state`).
    """
    from safetensors.torch import load_file

    target = iteration_dir(load_dir, rollout_id)
    weights = target / "model" / "model.safetensors"
    state_path = target / TRAINER_STATE_FILE
    for path in (weights, state_path):
        if not path.is_file():
            raise FileNotFoundError(f"--load {load_dir}: checkpoint file {path} is missing")
    state = load_file(str(weights), device="cpu" if dp.sharded else str(device))
    missing, unexpected = dp.load_model_state(model, state)
    missing = [k for k in missing if k != "lm_head.weight"
               or not model.config.tie_word_embeddings]
    if missing or unexpected:
        raise ValueError(f"--load {load_dir}: {weights} does not fit the model: missing "
                         f"{missing[:5]}, unexpected {unexpected[:5]}")
    if model.config.tie_word_embeddings and not dp.sharded:
        model.tie_weights()
    trainer_state = load_state(state_path, map_location="cpu" if dp.sharded else device)
    dp.load_optimizer_state(model, optimizer, trainer_state["optimizer"])
    scheduler.load_state_dict(trainer_state["scheduler"])
    set_rng_state(trainer_state["rng"])
    return int(trainer_state["global_step"])
