"""Convert a packaged GGUF model into a standard Hugging Face folder that vLLM and the trainer load.

Usage::

    from vime.models.convert import convert
    convert(get("smollm2-135m-instruct"), "runs/smollm2")   # -> Path, about 30 s on 2 cores
    convert_tokenizer(get("smollm2-135m-instruct"), "runs/smollm2_tok")  # tokenizer only

The folder holds ``model.safetensors`` (float32), ``config.json`` (without the GGUF
``quantization_config``), ``generation_config.json``, the tokenizer with its chat template, and
``vime_model.json`` (which package, version and GGUF digest it came from; a second call with the
same source returns at once).

How (measured with transformers 5.19 and gguf 0.19, the ``real-model`` extra):
``from_pretrained(dir, gguf_file=...)`` de-quantises the GGUF into a plain float32 model, but
its config keeps ``quantization_config`` (``quant_method: gguf``), so ``save_pretrained``
refuses the model and vLLM rejects such a ``config.json``. The state dict is therefore copied
into a model built from the config without that entry, which saves normally. Tied embeddings
stay tied (``lm_head.weight`` is not written; vime's weight sync writes it, see
:mod:`vime.backends.weights`).
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

from vime.models.packaged import PackagedModel, locate

__all__ = ["CONVERTER_VERSION", "STAMP", "convert", "convert_tokenizer", "sha256_of"]

#: Written last into a prepared folder: its source, so that an unchanged source is not redone.
STAMP = "vime_model.json"
#: Bumped whenever :func:`convert` writes something different: older folders are redone.
CONVERTER_VERSION = 1


def sha256_of(path: Path, chunk: int = 1 << 22) -> str:
    """Hex SHA-256 of a file (read in 4 MiB chunks; about 0.3 s for 100 MB)."""
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while block := fh.read(chunk):
            digest.update(block)
    return digest.hexdigest()


def _source(model: PackagedModel, gguf: Path) -> dict[str, Any]:
    import importlib.metadata

    return {"converter": CONVERTER_VERSION, "name": model.name, "distribution": model.distribution,
            "version": importlib.metadata.version(model.distribution),
            "gguf": model.gguf, "sha256": sha256_of(gguf), "source": model.source,
            "license": model.license}


def _stamp_matches(out: Path, source: dict[str, Any]) -> bool:
    stamp = out / STAMP
    if not stamp.is_file():
        return False
    try:
        return bool(json.loads(stamp.read_text()) == source)
    except json.JSONDecodeError:
        return False


def convert(model: PackagedModel, out_dir: str | Path, *, force: bool = False) -> Path:
    """Write ``model`` as a Hugging Face folder under ``out_dir``; return the folder.

    Args:
        model: the packaged model (:data:`vime.models.packaged.PACKAGED_MODELS`).
        out_dir: target folder; created. An existing folder that is not a prepared model
            (no ``vime_model.json``) and not empty is refused rather than overwritten; a
            prepared one from another file (or converter version) is replaced whole.
        force: convert again even when ``out_dir`` is already prepared from the same file.

    Raises:
        ModelNotInstalled: the package is missing (the message gives the ``pip install`` line).
        FileExistsError: ``out_dir`` holds other files.
        ImportError: ``gguf`` is missing (the ``real-model`` extra installs it).
        RuntimeError: the GGUF loads as another architecture than ``model.architecture``, or
            its tensors do not fill that architecture (the message names them).
    """
    out = Path(out_dir)
    gguf = locate(model)
    source = _source(model, gguf)
    if out.exists() and any(out.iterdir()):
        if not (out / STAMP).is_file():
            raise FileExistsError(f"{out} is not empty and is not a prepared model (no {STAMP}); "
                                  "give an empty or new folder")
        if not force and _stamp_matches(out, source):
            return out
    try:
        import gguf as _gguf  # noqa: F401  (transformers reads GGUF files through it)
    except ImportError:
        raise ImportError("reading GGUF files needs the `gguf` package: "
                          "pip install -e '.[real-model]' (or `make setup`)") from None
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    quantised = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name,
                                                     dtype=torch.float32)
    if type(quantised).__name__ != model.architecture:
        raise RuntimeError(f"{gguf} loaded as {type(quantised).__name__}; expected "
                           f"{model.architecture}")
    config_dict = quantised.config.to_dict()
    config_dict.pop("quantization_config", None)
    for key in ("_name_or_path", "_model_name_or_path"):  # the GGUF header's free-text name
        config_dict.pop(key, None)
    config = AutoConfig.for_model(**config_dict)
    plain = AutoModelForCausalLM.from_config(  # type: ignore[no-untyped-call]
        config, dtype=torch.float32)
    missing, unexpected = plain.load_state_dict(quantised.state_dict(), strict=False)
    tied = {"lm_head.weight"} if config.tie_word_embeddings else set()
    if set(missing) - tied or unexpected:
        raise RuntimeError(f"converting {gguf}: missing tensors {sorted(set(missing) - tied)}, "
                           f"unexpected {sorted(unexpected)}")
    if tied:
        plain.tie_weights()
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    plain.save_pretrained(out, safe_serialization=True)
    tokenizer.save_pretrained(out)
    (out / STAMP).write_text(json.dumps(source, indent=2) + "\n")
    return out


def convert_tokenizer(model: PackagedModel, out_dir: str | Path) -> Path:
    """Write only the tokenizer of ``model`` (with its chat template) as a Hugging Face
    tokenizer folder under ``out_dir`` (created); return the folder. What
    ``vime-lint template`` and the tests of chat templates need, without the weights.

    Raises:
        ModelNotInstalled: the package is missing.
        ImportError: ``gguf`` is missing.
    """
    gguf = locate(model)
    try:
        import gguf as _gguf  # noqa: F401  (transformers reads GGUF files through it)
    except ImportError:
        raise ImportError("reading GGUF files needs the `gguf` package: "
                          "pip install -e '.[real-model]' (or `make setup`)") from None
    from transformers import AutoTokenizer

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name).save_pretrained(out)
    return out
