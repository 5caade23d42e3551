"""One GRPO ``Trainer.train`` step of the real-model recipe's shape, in this process, with the
phases the trainer reports: the figure to compare two commits by (run it from each checkout,
alternating, on the same machine and model folder).

Usage::

    .venv/bin/python benchmarks/trainer_step.py --model runs/demo_real/model
    PYTHONPATH=OTHER_CHECKOUT .venv/bin/python OTHER_CHECKOUT/benchmarks/trainer_step.py ...

The rollout is synthetic, of ``examples/real_model/grpo.yaml``'s shape: 8 prompts x 4 samples,
``--prompt-tokens`` (default 60: the chat template's system prompt and the problem) +
``--response-tokens`` (default 32, the recipe's budget) token ids drawn below the vocabulary
size, rewards 0/1, rollout log probs as the old policy's, micro-batches of 8, one optimiser
step per rollout, ``--rollout-temperature 0.7``; torch uses every core, with
``OMP_WAIT_POLICY=PASSIVE`` as ``vime train``'s trainer actor. Printed: the median over
``--steps`` calls (the first one left out, warm-up) of ``train/time`` and of each
``perf/train_*_time`` phase, in seconds, as one JSON line.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import random
import statistics
import sys
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", required=True, help="a Hugging Face model folder")
    p.add_argument("--steps", type=int, default=4)
    p.add_argument("--prompt-tokens", type=int, default=60)
    p.add_argument("--response-tokens", type=int, default=32)
    ns = p.parse_args()
    from transformers import AutoConfig

    from vime.backends.trainer import Trainer
    from vime.config import parse_args
    from vime.data.batch_builder import BatchBuilder
    from vime.utils.types import Sample

    vocab = int(AutoConfig.from_pretrained(ns.model).vocab_size)
    args = parse_args(["--hf-checkpoint", ns.model, "--rollout-batch-size", "8",
                       "--n-samples-per-prompt", "4", "--use-rollout-logprobs",
                       "--micro-batch-size", "8", "--lr", "3e-6", "--eps-clip", "0.2",
                       "--rollout-temperature", "0.7", "--num-rollout", "100"])
    rng = random.Random(0)
    n = ns.prompt_tokens + ns.response_tokens
    samples = [Sample(index=i, group_index=i // 4,
                      tokens=[rng.randrange(1, vocab) for _ in range(n)],
                      response_length=ns.response_tokens, reward=float(rng.random() < 0.3),
                      status=Sample.Status.COMPLETED,
                      rollout_log_probs=[-1.0] * ns.response_tokens) for i in range(32)]
    data = BatchBuilder.convert(args, samples)
    trainer = Trainer(args, total_steps=100)
    runs = [trainer.train(step, copy.deepcopy(data)) for step in range(ns.steps)][1:]
    keys = ["train/time"] + sorted(k for k in runs[0] if k.startswith("perf/train_"))
    print(json.dumps({k: round(statistics.median(r[k] for r in runs), 3) for k in keys}))


if __name__ == "__main__":
    main()
