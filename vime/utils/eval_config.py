"""Former home of the eval-dataset configuration, now :mod:`vime.config.eval_config`; re-exports
its names, so a rollout module written for the upstream layout imports them unchanged.

Usage::

    from vime.utils.eval_config import EvalDatasetConfig   # same object as vime.config's
"""

from __future__ import annotations

from vime.config.eval_config import (
    DEFAULT_EVAL_NAME,
    UNSUPPORTED_EVAL_KEYS,
    EvalDatasetConfig,
    build_eval_datasets,
    load_eval_config,
    parse_eval_prompt_data,
)

__all__ = [
    "DEFAULT_EVAL_NAME",
    "EvalDatasetConfig",
    "UNSUPPORTED_EVAL_KEYS",
    "build_eval_datasets",
    "load_eval_config",
    "parse_eval_prompt_data",
]
