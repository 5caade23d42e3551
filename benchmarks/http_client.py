"""CPU time per request of the rollout's HTTP client (``vime.utils.http_utils``, aiohttp) against
a pooled ``httpx.AsyncClient``, at the demo's GRPO concurrency (256 generate calls at once).

Usage::

    .venv/bin/python benchmarks/http_client.py                 # 256 concurrent x 10 rounds
    .venv/bin/python benchmarks/http_client.py --concurrency 64 --rounds 20

A local aiohttp server (its own process) answers each POST with a generate-shaped response
(24 token ids with log-probs, as vLLM's tokens route sends them). Each client sends ``rounds``
waves of ``concurrency`` requests after one warm-up wave; reported: the client process's CPU
milliseconds per request and the wall time, alternating the two clients twice. The rollout
manager runs this client on the cores the engine generates on, so its CPU per request is taken
from generation.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import time
import urllib.request
from collections.abc import Awaitable, Callable
from typing import Any

SERVER = r'''
import json, sys
from aiohttp import web
body = json.dumps({"choices": [{"token_ids": list(range(24)), "finish_reason": "length",
    "logprobs": {"content": [{"token_id": i, "logprob": -0.5, "rank": 1, "top_logprobs": []}
                             for i in range(24)]}}],
    "usage": {"prompt_tokens": 20, "completion_tokens": 24}})
async def generate(request):
    await request.read()
    return web.Response(text=body, content_type="application/json")
app = web.Application()
app.router.add_post("/inference/v1/generate", generate)
web.run_app(app, host="127.0.0.1", port=int(sys.argv[1]), print=None)
'''

PAYLOAD = {"token_ids": list(range(20)), "stream": False, "request_id": "r",
           "sampling_params": {"max_tokens": 24, "temperature": 1.0, "logprobs": 1}}


async def _waves(send: Callable[[], Awaitable[Any]], concurrency: int,
                 rounds: int) -> tuple[float, float]:
    await asyncio.gather(*[send() for _ in range(concurrency)])      # warm-up: connections
    cpu, wall = time.process_time(), time.perf_counter()
    for _ in range(rounds):
        await asyncio.gather(*[send() for _ in range(concurrency)])
    return time.process_time() - cpu, time.perf_counter() - wall


async def vime_client(url: str, concurrency: int, rounds: int) -> tuple[float, float]:
    """``vime.utils.http_utils.post`` on the ``"generate"`` pool, sized as the rollout sizes it."""
    from vime.utils import http_utils

    http_utils.configure_client(max_connections=concurrency)
    try:
        return await _waves(lambda: http_utils.post(url, PAYLOAD, pool="generate"),
                            concurrency, rounds)
    finally:
        await http_utils.aclose_client()


async def httpx_client(url: str, concurrency: int, rounds: int) -> tuple[float, float]:
    """One ``httpx.AsyncClient`` with ``concurrency`` pooled connections."""
    import httpx

    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(limits=limits, timeout=60, trust_env=False) as client:
        async def send() -> Any:
            return (await client.post(url, json=PAYLOAD)).json()

        return await _waves(send, concurrency, rounds)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--concurrency", type=int, default=256, help="requests in flight")
    parser.add_argument("--rounds", type=int, default=10, help="waves of requests timed")
    opts = parser.parse_args(argv)
    from vime.ray.engine_command import find_free_port

    port = find_free_port()
    server = subprocess.Popen([sys.executable, "-c", SERVER, str(port)])
    url = f"http://127.0.0.1:{port}/inference/v1/generate"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                urllib.request.urlopen(urllib.request.Request(url, data=b"{}"), timeout=2)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        requests = opts.concurrency * opts.rounds
        results: dict[str, list[float]] = {"vime (aiohttp)": [], "httpx": []}
        for _ in range(2):
            for name, client in (("vime (aiohttp)", vime_client), ("httpx", httpx_client)):
                cpu, wall = asyncio.run(client(url, opts.concurrency, opts.rounds))
                results[name].append(1000 * cpu / requests)
                print(json.dumps({"client": name, "cpu_ms_per_request": 1000 * cpu / requests,
                                  "wall_s": wall}), flush=True)
        best = {name: min(v) for name, v in results.items()}
        print(json.dumps({"summary": best,
                          "httpx_over_vime": best["httpx"] / best["vime (aiohttp)"]}))
    finally:
        server.terminate()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
