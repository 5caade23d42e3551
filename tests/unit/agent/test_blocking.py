"""`vime.agent.blocking`: an inline agent whose own code holds the event loop is found, its
pending call answered with the fix, and it is marked; an agent that awaits is left alone."""

from __future__ import annotations

import asyncio
import socket

import httpx
import pytest

from vime.agent.blocking import BlockWatch, TrackedRun, blocked_message

pytestmark = pytest.mark.unit


def _listening() -> socket.socket:
    """A listening socket nobody accepts on (as the endpoint's, while its loop is blocked)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)
    sock.setblocking(False)
    return sock


def test_a_blocking_call_is_answered_with_the_fix_and_the_run_marked() -> None:
    sock = _listening()
    url = f"http://127.0.0.1:{sock.getsockname()[1]}/v1/chat/completions"
    watch = BlockWatch(sock, limit=0.3)

    async def sync_agent() -> int:
        reply = httpx.post(url, json={"messages": []}, timeout=30)   # blocks the loop
        return reply.status_code

    async def main() -> tuple[int, TrackedRun]:
        run = TrackedRun(sync_agent())
        with watch.watching(run, "my.agent"):
            return await run, run

    try:
        status, run = asyncio.run(main())
    finally:
        watch.close()
        sock.close()
    assert status == 503 and run.blocked_for >= 0.3
    assert run.running_since is None
    assert "my.agent" in watch.blocking_paths


def test_the_answer_carries_the_message_and_no_retry() -> None:
    sock = _listening()
    url = f"http://127.0.0.1:{sock.getsockname()[1]}/v1/models"
    watch = BlockWatch(sock, limit=0.2)

    async def sync_agent() -> httpx.Response:
        return httpx.get(url, timeout=30)

    async def main() -> httpx.Response:
        run = TrackedRun(sync_agent())
        with watch.watching(run, "my.agent"):
            return await run

    try:
        reply = asyncio.run(main())
    finally:
        watch.close()
        sock.close()
    assert reply.headers["x-should-retry"] == "false"
    message = reply.json()["error"]["message"]
    assert message.startswith("--agent-function-path my.agent held the event loop")
    assert "openai.AsyncOpenAI" in message and "--agent-function-mode subprocess" in message
    assert blocked_message("x", 12).startswith("--agent-function-path x held the event loop "
                                               "that serves vime's agent endpoint for 12 s "
                                               "without yielding (--agent-function-mode")
    # a later run of an agent already found blocking is stopped sooner, and says so
    assert "for 1 s without yielding, stopped after 1 s because an earlier run of it already " \
           "blocked for 10 s (" in blocked_message("x", 1.2)


def test_an_agent_that_awaits_is_never_marked_and_cancellation_reaches_it() -> None:
    sock = _listening()
    watch = BlockWatch(sock, limit=0.2)
    seen: list[str] = []

    async def async_agent() -> str:
        for _ in range(6):
            await asyncio.sleep(0.1)      # 0.6 s in all, never 0.2 s without yielding
        return "done"

    async def hanging_agent() -> None:
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            seen.append("cancelled")
            raise

    async def main() -> tuple[str, TrackedRun]:
        run = TrackedRun(async_agent())
        with watch.watching(run, "ok.agent"):
            value = await run
        hang = TrackedRun(hanging_agent())
        task = asyncio.ensure_future(hang)
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return value, run

    try:
        value, run = asyncio.run(main())
    finally:
        watch.close()
        sock.close()
    assert value == "done" and run.blocked_for == 0.0 and not watch.blocking_paths
    assert seen == ["cancelled"]


def test_a_long_stretch_with_no_call_waiting_is_warned_about_not_failed(
        capsys: pytest.CaptureFixture[str]) -> None:
    import time

    sock = _listening()
    watch = BlockWatch(sock, limit=0.2)

    async def slow_tool_agent() -> str:
        time.sleep(0.8)          # a synchronous computation: no call to the endpoint waits
        return "done"

    async def main() -> tuple[str, TrackedRun]:
        run = TrackedRun(slow_tool_agent())
        with watch.watching(run, "slow.agent"):
            return await run, run

    try:
        value, run = asyncio.run(main())
    finally:
        watch.close()
        sock.close()
    assert value == "done" and run.blocked_for == 0.0 and not watch.blocking_paths
    assert "vime: warning: --agent-function-path slow.agent held the event loop" in \
        capsys.readouterr().err
