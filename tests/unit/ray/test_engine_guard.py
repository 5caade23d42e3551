"""``vime.ray.engine_guard.EngineGuard`` (the ASGI middleware of ``--rollout-host 0.0.0.0``
engines) on a plain ASGI app: who gets through, who gets 401 or 403; the flag's checks and the
command line of a network engine. The real engine is tested in
tests/integration/vllm/test_engine_network.py."""

from __future__ import annotations

import asyncio
import json
import sys
from argparse import Namespace
from typing import Any

import pytest

from vime.config import parse_args
from vime.ray.engine import VLLMServer
from vime.ray.engine_command import GUARD_MIDDLEWARE, build_server_command
from vime.ray.engine_group import rollout_host
from vime.ray.engine_guard import (
    API_KEY_ENV,
    API_KEY_OVERRIDE_ENV,
    NETWORK_ROUTES,
    EngineGuard,
    auth_headers,
    engine_auth_problem,
    is_loopback,
    new_api_key,
    run_api_key,
    setup_engine_auth,
)

pytestmark = pytest.mark.unit

KEY = "k3y"


async def _app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"ok"})


def _call(path: str, client: str, key: str | None = None) -> tuple[int, dict[str, Any]]:
    guard = EngineGuard(_app)
    headers = [(b"authorization", f"Bearer {key}".encode())] if key is not None else []
    scope = {"type": "http", "method": "POST", "path": path, "client": (client, 5555),
             "headers": headers, "root_path": ""}
    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b""}

    asyncio.run(guard(scope, receive, send))
    body = sent[1]["body"]
    return sent[0]["status"], (json.loads(body) if body != b"ok" else {})


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(API_KEY_ENV, KEY)


@pytest.mark.parametrize("path", ["/inference/v1/generate", "/inference/v1/abort_requests",
                                  "/openapi.json", "/version"])
def test_network_routes_need_the_key_from_anywhere(path: str) -> None:
    for client in ("127.0.0.1", "10.1.2.3"):
        assert _call(path, client, KEY)[0] == 200
        status, body = _call(path, client)
        assert status == 401 and "API key" in body["error"]
        assert _call(path, client, "wrong")[0] == 401


@pytest.mark.parametrize("path", ["/pause", "/resume", "/collective_rpc", "/reset_prefix_cache",
                                  "/update_weight_version", "/init_weight_transfer_engine",
                                  "/update_weights", "/v1/models", "/metrics", "/sleep"])
def test_other_routes_answer_the_loopback_only_and_with_the_key(path: str) -> None:
    assert path not in NETWORK_ROUTES
    status, body = _call(path, "10.1.2.3", KEY)
    assert status == 403 and path in body["error"] and "own node" in body["error"]
    assert _call(path, "::ffff:10.1.2.3", KEY)[0] == 403
    assert _call(path, "127.0.0.1", KEY)[0] == 200
    assert _call(path, "::1", KEY)[0] == 200
    assert _call(path, "::ffff:127.0.0.1", KEY)[0] == 200
    assert _call(path, "127.0.0.1")[0] == 401


def test_health_is_open_to_everyone() -> None:
    assert _call("/health", "10.1.2.3")[0] == 200
    assert _call("/health", "127.0.0.1")[0] == 200


def test_a_guard_without_a_key_refuses_to_start(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(API_KEY_ENV)
    with pytest.raises(RuntimeError, match=API_KEY_ENV):
        EngineGuard(_app)


def test_keys_and_headers() -> None:
    a, b = new_api_key(), new_api_key()
    assert a != b and len(a) >= 40
    assert auth_headers(a) == {"Authorization": f"Bearer {a}"}
    assert auth_headers(None) == {} and auth_headers("") == {}
    assert is_loopback("127.0.0.5") and is_loopback("localhost") and not is_loopback("0.0.0.0")
    assert not is_loopback(None) and not is_loopback("node-a")


def test_network_command_line_has_the_guard_and_no_key() -> None:
    cmd = build_server_command("/m", 1, host="0.0.0.0", guard=True)
    assert cmd[cmd.index("--middleware") + 1] == GUARD_MIDDLEWARE
    assert cmd[cmd.index("--host") + 1] == "0.0.0.0"
    assert "--middleware" not in build_server_command("/m", 1)
    assert "--api-key" not in cmd
    assert GUARD_MIDDLEWARE == f"{EngineGuard.__module__}.{EngineGuard.__name__}"
    assert sys.modules[EngineGuard.__module__] is not None


def test_a_network_server_needs_a_key_and_controls_itself_on_the_loopback(
        monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ValueError, match="api_key"):
        VLLMServer("/m", host="0.0.0.0", api_key="")
    server = VLLMServer("/m", host="0.0.0.0", api_key=KEY, advertise_host="10.0.0.7", port=9)
    assert server.url == "http://10.0.0.7:9" and server.control_url == "http://127.0.0.1:9"
    local = VLLMServer("/m", port=9)
    assert local.url == local.control_url == "http://127.0.0.1:9"
    # every engine has a key: the run's, else a fresh one; "" (--engine-auth disabled): none
    monkeypatch.setenv(API_KEY_OVERRIDE_ENV, "run-key")
    assert VLLMServer("/m").api_key == "run-key"
    monkeypatch.delenv(API_KEY_OVERRIDE_ENV)
    fresh = VLLMServer("/m").api_key
    assert fresh and len(fresh) >= 40 and fresh != VLLMServer("/m").api_key
    assert VLLMServer("/m", api_key="").api_key is None


@pytest.mark.parametrize("extra", [["--host", "0.0.0.0"], ["--host=0.0.0.0"],
                                   {"host": "0.0.0.0", "enforce-eager": True}])
def test_vllm_host_makes_a_network_server_with_the_guard(extra: Any) -> None:
    """``--vllm-host 0.0.0.0`` used to bypass the guard: the passthrough --host won over
    vime's 127.0.0.1 and the engine listened everywhere without a key."""
    server = VLLMServer("/m", extra_args=extra, api_key=KEY, advertise_host="10.0.0.7", port=9)
    assert server.network and server.host == "0.0.0.0"
    assert server.control_url == "http://127.0.0.1:9"
    assert not any(t.startswith("--host") for t in server.extra_args)
    with pytest.raises(ValueError, match="api_key"):
        VLLMServer("/m", extra_args=extra, api_key="")


def test_every_keyed_command_line_has_the_guard() -> None:
    loopback = build_server_command("/m", 1, guard=True)
    assert loopback[loopback.index("--middleware") + 1] == GUARD_MIDDLEWARE
    assert loopback[loopback.index("--host") + 1] == "127.0.0.1"


@pytest.mark.parametrize(("extra", "auth", "rollout", "flag", "said"), [
    ({"host": "0.0.0.0"}, "disabled", "127.0.0.1", "--vllm-host", "--engine-auth disabled"),
    (["--host", "::"], "disabled", "127.0.0.1", "--vllm-host", "beyond the loopback"),
    ({}, "disabled", "0.0.0.0", "--rollout-host", "drop --engine-auth disabled"),
    ({"host": "10.0.0.7"}, "key", "127.0.0.1", "--vllm-host", "10.0.0.7: give 127.0.0.1"),
    ({"host": "node-a"}, "key", "127.0.0.1", "--vllm-host", "node-a: give"),
    ({"api-key": "s3cret"}, "key", "127.0.0.1", "--vllm-api-key", "VIME_ENGINE_API_KEY"),
    (["--api-key=s3cret"], "key", "127.0.0.1", "--vllm-api-key", "command line"),
])
def test_engine_auth_problems(extra: Any, auth: str, rollout: str, flag: str,
                              said: str) -> None:
    problem = engine_auth_problem(Namespace(vllm_extra_args=extra, engine_auth=auth,
                                            rollout_host=rollout))
    assert problem is not None and problem[0] == flag and said in problem[1], problem


@pytest.mark.parametrize(("extra", "auth", "rollout"), [
    ({"host": "0.0.0.0"}, "key", "127.0.0.1"), ({"host": "127.0.0.1"}, "disabled", "127.0.0.1"),
    ({}, "key", "0.0.0.0"), ({}, "disabled", "127.0.0.1"), (None, "key", "127.0.0.1"),
])
def test_engine_auth_accepts(extra: Any, auth: str, rollout: str) -> None:
    assert engine_auth_problem(Namespace(vllm_extra_args=extra, engine_auth=auth,
                                         rollout_host=rollout)) is None


def test_setup_engine_auth_sets_the_run_key_once(monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv(API_KEY_OVERRIDE_ENV, raising=False)
    key = setup_engine_auth(Namespace(engine_auth="key"))
    assert key and run_api_key() == key
    assert setup_engine_auth(Namespace(engine_auth="key")) == key   # kept, not replaced
    monkeypatch.delenv(API_KEY_OVERRIDE_ENV)
    assert setup_engine_auth(Namespace(engine_auth="disabled")) is None
    assert run_api_key() is None and "--engine-auth disabled" in capsys.readouterr().err


BASE = ["--rollout-batch-size", "1", "--num-rollout", "1"]


def test_rollout_host_takes_loopback_or_wildcard(capsys: pytest.CaptureFixture[str]) -> None:
    assert parse_args(BASE).rollout_host == "127.0.0.1"
    assert parse_args(BASE + ["--rollout-host", "0.0.0.0"]).rollout_host == "0.0.0.0"
    with pytest.raises(SystemExit):
        parse_args(BASE + ["--rollout-host", "10.0.0.7"])
    err = capsys.readouterr().err
    assert "argument --rollout-host: 10.0.0.7" in err and "0.0.0.0" in err
    assert rollout_host(Namespace(rollout_host="::")) == "::"
    with pytest.raises(ValueError, match="--rollout-host node-a"):
        rollout_host(Namespace(rollout_host="node-a"))
