"""An agent written only against the OpenAI SDK, with two tools (a calculator and a lookup
table), trainable by vime without changing a line (``--agent-function-path``).

The agent asks the model, offering both tools. Tool calls the model makes are run and their
results sent back as ``tool`` messages; when the model answers in plain text without calling a
tool (a small model, or a server without a tool parser), the agent checks the question with
its tools itself, shows the results to the model and asks for the final answer. It keeps the
replies exactly as the server returned them, so vime sees every call extend the previous one
and records the whole conversation as one sample (tool results and the agent's turns masked
out of the loss).

Run it as-is against any OpenAI-compatible server (vLLM, a hosted API)::

    OPENAI_BASE_URL=http://127.0.0.1:8000/v1 OPENAI_API_KEY=none \\
        python examples/openai_agent.py --model MODEL "What is 12*7?"

Train it with vime (the same function; vime hands it the base_url and api_key of its own
endpoint, and the return value is the reward)::

    PYTHONPATH=$PWD vime train --hf-checkpoint MODEL --prompt-data data.jsonl \\
        --input-key input --label-key label --rollout-batch-size 8 --n-samples-per-prompt 4 \\
        --rollout-max-response-len 256 --num-rollout 10 \\
        --agent-function-path examples.openai_agent.run_agent [--agent-tool-parser hermes]
    vime-lint rollout examples/openai_agent.py

Nothing here imports vime: ``args`` and ``sample`` are read by attribute (``args.hf_checkpoint``,
``sample.prompt``, ``sample.label``).
"""

from __future__ import annotations

import argparse
import ast
import asyncio
import json
import operator
import os
import re
from typing import Any

from openai import AsyncOpenAI

SYSTEM = ("You are a careful assistant. Use the calculator for arithmetic and the lookup tool "
          "for facts, then give the final answer.")
TOOLS: list[dict[str, Any]] = [
    {"type": "function", "function": {
        "name": "calculator", "description": "Evaluate an arithmetic expression (+ - * / //, %).",
        "parameters": {"type": "object", "properties": {"expression": {"type": "string"}},
                       "required": ["expression"]}}},
    {"type": "function", "function": {
        "name": "lookup", "description": "Look a word up in a small table of facts.",
        "parameters": {"type": "object", "properties": {"key": {"type": "string"}},
                       "required": ["key"]}}},
]
FACTS = {"dozen": "12", "score": "20", "gross": "144", "week": "7 days", "pi": "3.14159"}
MAX_TURNS = 4
MAX_TOKENS = 32

_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
        ast.Div: operator.truediv, ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod,
        ast.USub: operator.neg, ast.UAdd: operator.pos}
_EXPR = re.compile(r"\d+(?:\s*[-+*/%]+\s*\d+)+")


def _eval(node: ast.AST) -> float:
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
        return node.value
    if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
        return _OPS[type(node.op)](_eval(node.left), _eval(node.right))
    if isinstance(node, ast.UnaryOp) and type(node.op) in _OPS:
        return _OPS[type(node.op)](_eval(node.operand))
    raise ValueError("not arithmetic")


def calculator(expression: str) -> str:
    """The value of an arithmetic expression, or an error text the model can read."""
    try:
        value = _eval(ast.parse(expression, mode="eval").body)
    except (SyntaxError, ValueError, ZeroDivisionError) as exc:
        return f"error: {exc}"
    return str(int(value)) if float(value).is_integer() else f"{value:.6g}"


def lookup(key: str) -> str:
    """The table's entry for ``key`` (case-insensitive), or "unknown"."""
    return FACTS.get(key.strip().lower(), "unknown")


def run_tool(name: str, arguments: str) -> str:
    """Run one tool call (``arguments`` as the JSON text the model wrote)."""
    try:
        kwargs = json.loads(arguments or "{}")
    except ValueError:
        return "error: arguments are not JSON"
    if name == "calculator":
        return calculator(str(kwargs.get("expression", "")))
    if name == "lookup":
        return lookup(str(kwargs.get("key", "")))
    return f"error: no tool {name!r}"


def own_checks(question: str) -> list[str]:
    """What the agent's tools say about the question itself (used when the model called none)."""
    notes = []
    for expr in _EXPR.findall(question):
        notes.append(f"calculator({expr}) = {calculator(expr)}")
    for word in re.findall(r"[a-z]+", question.lower()):
        if word in FACTS:
            notes.append(f"lookup({word}) = {lookup(word)}")
    return notes or [f"lookup({question.strip()[:20]}) = {lookup(question)}"]


async def solve(client: AsyncOpenAI, model: str, question: str | list[dict[str, Any]]
                ) -> tuple[str, list[dict[str, Any]]]:
    """Answer ``question`` (a text, or a message list): ``(final_answer, messages)``."""
    messages: list[dict[str, Any]] = ([{"role": "system", "content": SYSTEM},
                                       {"role": "user", "content": question}]
                                      if isinstance(question, str) else list(question))
    text = question if isinstance(question, str) else str(question[-1].get("content", ""))
    checked = False
    answer = ""
    for _ in range(MAX_TURNS):
        reply = await client.chat.completions.create(model=model, messages=messages,
                                                     tools=TOOLS, max_tokens=MAX_TOKENS)
        choice = reply.choices[0]
        message = choice.message
        messages.append(message.model_dump(exclude_none=True))  # the reply as returned
        answer = message.content or ""
        if message.tool_calls:
            for call in message.tool_calls:
                fn = getattr(call, "function", None)
                result = run_tool(fn.name, fn.arguments) if fn is not None else "error"
                messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
            continue
        if checked or choice.finish_reason == "length" and answer == "":
            break
        checked = True
        notes = "; ".join(own_checks(text))
        messages.append({"role": "user", "content": f"Tool results: {notes}. Final answer?"})
    return answer, messages


_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


def final_answer(answer: str, numeric: bool = True) -> str:
    """The answer's final value: its last number (``"12*7 = 84."`` -> ``"84"``) when
    ``numeric``, else (or when it holds no number) its last line without surrounding blanks
    and a closing full stop."""
    numbers = _NUMBER.findall(answer.replace(",", "")) if numeric else []
    if numbers:
        return numbers[-1]
    lines = [line.strip() for line in answer.strip().splitlines() if line.strip()]
    return lines[-1].rstrip(".").strip() if lines else ""


def score(answer: str, label: Any) -> float:
    """1.0 when the answer's final value (:func:`final_answer`) equals the label (as numbers
    for a numeric label; else its last line ends with the label's words, any case), else 0.0. The label is never
    searched for inside the answer: ``"42"`` does not match the label ``"4"``, nor does a
    list of guesses ending in another number."""
    want = str(label).strip().replace(",", "") if label is not None else ""
    if not want:
        return 0.0
    try:
        number = float(want)
    except ValueError:
        last = final_answer(answer, numeric=False)   # ends with the label as whole words
        return 1.0 if re.search(rf"(?<!\w){re.escape(want)}$", last, re.I) else 0.0
    try:
        return 1.0 if float(final_answer(answer)) == number else 0.0
    except ValueError:
        return 0.0


async def run_agent(args: Any, sample: Any, base_url: str, api_key: str, **kwargs: Any) -> float:
    """vime's ``--agent-function-path`` entry: one episode on ``sample``; returns its reward."""
    client = AsyncOpenAI(base_url=base_url, api_key=api_key, max_retries=0)
    try:
        answer, _ = await solve(client, str(getattr(args, "hf_checkpoint", None) or "default"),
                                sample.prompt)
    finally:
        await client.close()
    return score(answer, sample.label)


async def _main() -> None:
    parser = argparse.ArgumentParser(description="Run the two-tool agent on one question.")
    parser.add_argument("question")
    parser.add_argument("--model", default=os.environ.get("OPENAI_MODEL", "default"))
    opts = parser.parse_args()
    client = AsyncOpenAI()  # OPENAI_BASE_URL / OPENAI_API_KEY from the environment
    answer, messages = await solve(client, opts.model, opts.question)
    for m in messages:
        print(f"[{m['role']}] {m.get('content') or m.get('tool_calls')}")
    print("answer:", answer)


if __name__ == "__main__":
    asyncio.run(_main())
