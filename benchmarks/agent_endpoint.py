"""Per-call overhead of the agent endpoint (vime/agent/) against calling the engine directly.

Usage::

    .venv/bin/python benchmarks/agent_endpoint.py                     # starts a tiny-model engine
    .venv/bin/python benchmarks/agent_endpoint.py --url http://127.0.0.1:8000 --model DIR
    .venv/bin/python benchmarks/agent_endpoint.py --calls 100 --max-tokens 8

One model call, three ways, interleaved call by call (so load on the shared machine hits all
three alike), each with the same conversation and ``max_tokens``:

- **engine_tokens**: vime's engine client (``vime.agent.engine.complete``: the router client of
  the default rollout, token ids in and out with log-probs) on the prompt ids the endpoint
  rendered: the engine call the endpoint makes, without the endpoint;
- **endpoint**: the OpenAI SDK (``AsyncOpenAI.chat.completions.create``) against vime's
  endpoint: HTTP + JSON, session lookup, chat template, splice, the engine call above, the
  OpenAI response and the record of the call;
- **engine_openai**: the same SDK call against the vLLM server's own ``/v1/chat/completions``
  (the engine's OpenAI server, which renders and detokenises too).

Each call is a fresh two-turn conversation (a question, a reply, a tool result), as an agent's
second call is; the order of the three rotates call by call. Prints one JSON line with the
median and p90 latency of each (ms), the median completion tokens,
``overhead_ms = median(endpoint) - median(engine_tokens)``, and the paired figure
``overhead_paired_median_ms``: per endpoint request, its latency minus the engine call made
inside it (timed in the endpoint), so engine-side noise cancels; and
``call_server_outside_engine``: the endpoint's own work per call (session, chat template,
splice, sampling policy, decode, the OpenAI body, the record) without HTTP, JSON or the SDK.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def _pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


async def _bench(args: Any, url: str, model: str, calls: int, max_tokens: int) -> dict[str, Any]:
    from openai import AsyncOpenAI

    from vime.agent.engine import complete
    from vime.agent.generate import get_endpoint
    from vime.agent.render import chat_prompt_ids, normalise_messages
    from vime.rollout.vllm.sampling import sampling_params_from_args
    from vime.utils.types import Sample

    endpoint = await get_endpoint(args)
    inner: list[float] = []   # the engine call inside each endpoint request (ms)
    engine_call = endpoint.calls.complete

    async def timed(*a: Any, **kw: Any) -> Any:
        t = time.perf_counter()
        try:
            return await engine_call(*a, **kw)
        finally:
            inner.append((time.perf_counter() - t) * 1e3)

    endpoint.calls.complete = timed  # type: ignore[method-assign]
    handled: list[float] = []   # the whole CallServer.chat of each request (ms)
    chat = endpoint.calls.chat

    async def timed_chat(*a: Any, **kw: Any) -> Any:
        t = time.perf_counter()
        try:
            return await chat(*a, **kw)
        finally:
            handled.append((time.perf_counter() - t) * 1e3)

    endpoint.calls.chat = timed_chat  # type: ignore[method-assign]
    params = sampling_params_from_args(args)
    tok = endpoint.calls.tokenizer
    direct = AsyncOpenAI(base_url=url + "/v1", api_key="none", max_retries=0)
    times: dict[str, list[float]] = {"engine_tokens": [], "endpoint": [], "engine_openai": [],
                                     "endpoint_outside_engine": [],
                                     "call_server_outside_engine": []}
    tokens: list[int] = []
    for i in range(calls + 3):   # 3 warm-up calls
        msgs = [{"role": "user", "content": f"What is {i}+{i}?"},
                {"role": "assistant", "content": "Let me check."},
                {"role": "user", "content": f"calculator({i}+{i}) = {2 * i}"}]
        session = endpoint.open(Sample(index=i), params)
        client = AsyncOpenAI(base_url=endpoint.server.base_url(session.key),
                             api_key=session.key, max_retries=0)
        ids, _ = chat_prompt_ids(tok, normalise_messages(msgs))

        async def tokens_call(ids: list[int] = ids, i: int = i, key: str = session.key) -> Any:
            return await complete(args, ids, {**params, "max_tokens": max_tokens}, index=i,
                                  router_key=key)

        async def endpoint_call(client: Any = client, msgs: Any = msgs) -> Any:
            return await client.chat.completions.create(model=model, messages=msgs,
                                                        max_tokens=max_tokens)

        async def openai_call(msgs: Any = msgs) -> Any:
            return await direct.chat.completions.create(model=model, messages=msgs,
                                                        max_tokens=max_tokens, temperature=1.0)

        order = [("engine_tokens", tokens_call), ("endpoint", endpoint_call),
                 ("engine_openai", openai_call)]
        order = order[i % 3:] + order[:i % 3]   # rotate: no side always runs first
        took: dict[str, float] = {}
        for name, fn in order:
            t0 = time.perf_counter()
            out = await fn()
            took[name] = (time.perf_counter() - t0) * 1e3
            if name == "endpoint":
                reply = out
        endpoint.close(session)
        await client.close()
        if i >= 3:
            for name, ms in took.items():
                times[name].append(ms)
            times["endpoint_outside_engine"].append(took["endpoint"] - inner[-1])
            times["call_server_outside_engine"].append(handled[-1] - inner[-1])
            assert reply.usage is not None
            tokens.append(reply.usage.completion_tokens)
    await direct.close()
    out: dict[str, Any] = {"calls": calls, "max_tokens": max_tokens,
                           "median_completion_tokens": statistics.median(tokens)}
    for name, xs in times.items():
        out[f"{name}_median_ms"] = round(statistics.median(xs), 2)
        out[f"{name}_p90_ms"] = round(_pct(xs, 0.9), 2)
    out["overhead_ms"] = round(out["endpoint_median_ms"] - out["engine_tokens_median_ms"], 2)
    out["overhead_paired_median_ms"] = out["endpoint_outside_engine_median_ms"]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", help="a running vLLM server (default: start one)")
    parser.add_argument("--model", help="its model folder (default: a fresh tiny model)")
    parser.add_argument("--calls", type=int, default=60)
    parser.add_argument("--max-tokens", type=int, default=8)
    opts = parser.parse_args()

    from vime.utils.arguments import parse_args
    from vime.utils.async_utils import run

    server = None
    model = opts.model
    if model is None:
        from vime.utils.tiny_model import build_tiny_model

        model = str(build_tiny_model(Path(tempfile.mkdtemp(prefix="vime-bench-")), seed=0))
    url = opts.url
    if url is None:
        from vime.ray.engine import VLLMServer

        server = VLLMServer(model, log_dir=Path(tempfile.mkdtemp(prefix="vime-bench-logs-")),
                            name="bench", extra_args=["--enforce-eager"])
        server.start()
        url = server.url
    try:
        args = parse_args(["--hf-checkpoint", model, "--rollout-external-engine-addrs", url,
                           "--rollout-batch-size", "1", "--agent-function-path",
                           "examples.openai_agent.run_agent"], training=False)
        result = run(_bench(args, url, model, opts.calls, opts.max_tokens))
        print(json.dumps(result))
    finally:
        if server is not None:
            server.stop()


if __name__ == "__main__":
    main()
