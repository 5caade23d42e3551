"""The quiet, offline environment of every process vime starts: no usage reports from vLLM,
Ray or Hugging Face, the model hub offline (models are local folders), and no tokenizers
thread pool fighting the trainer for cores. One definition, read by ``vime train``, the demo,
the engines, the tests and the benchmarks.

Usage::

    apply_quiet_env()                      # os.environ.setdefault for each key
    env = {**os.environ, **QUIET_ENV}      # a child process's environment
"""

from __future__ import annotations

import os
from collections.abc import MutableMapping

__all__ = ["QUIET_ENV", "apply_quiet_env"]

#: Variable -> value. A value the user set already wins (:func:`apply_quiet_env` only fills
#: in what is missing).
QUIET_ENV: dict[str, str] = {
    "VLLM_NO_USAGE_STATS": "1",       # vLLM's usage report
    "DO_NOT_TRACK": "1",              # vLLM and Hugging Face libraries
    "HF_HUB_OFFLINE": "1",            # no hub lookups: every model is a local folder
    "RAY_USAGE_STATS_ENABLED": "0",   # Ray's usage report
    "TOKENIZERS_PARALLELISM": "false",  # no Rust thread pool beside torch's threads
}


def apply_quiet_env(env: MutableMapping[str, str] = os.environ) -> None:
    """Set each :data:`QUIET_ENV` variable that ``env`` does not set yet."""
    for key, value in QUIET_ENV.items():
        env.setdefault(key, value)
