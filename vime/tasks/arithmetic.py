"""2-digit integer arithmetic, a CPU-sized task that an RL loop visibly learns.

Usage::

    paths = write_task("data/arith", seed=0, n_eval=500)   # every other problem trains
    paths = write_task("data/add", seed=0, ops="+")         # addition only (the demo's task)
    paths["sft_train"]   # {"input": [{"role": "user", "content": "What is 37+48?"},
                         #            {"role": "assistant", "content": "The answer is 85."}],
                         #  "label": "85"}
    paths["rl_train"]    # {"input": [{"role": "user", "content": "37+48="}], "label": "85"}
    paths["eval"]        # held-out problems (none of them in the train files), RL form

Problems: operands 10..99, ``+`` or ``-`` (results from -89 to 198; ``ops`` picks the
operators), one of
:data:`PROMPT_TEMPLATES`; the answer is ``"The answer is N."``; the label is ``str(N)`` (graded
by ``--rm-type math``: the last number of the response). Use the RL files with
``--input-key input --label-key label --apply-chat-template``.

The task and its sizes follow the measured recipe in ``docs/environment.md`` ("A CPU-sized RL task
that learns").
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["ANSWER_TEMPLATE", "NUM_PROBLEMS", "OPERATORS", "PROBLEMS_PER_OPERATOR",
           "PROMPT_TEMPLATES", "Problem", "make_problems", "write_task"]

#: Prompt forms, picked uniformly per problem.
PROMPT_TEMPLATES: tuple[str, ...] = ("What is {a}{op}{b}?", "{a}{op}{b}=", "Compute {a} {op} {b}.")
#: The target response.
ANSWER_TEMPLATE = "The answer is {n}."
_LOW, _HIGH = 10, 99
#: Operators a task may use.
OPERATORS = "+-"
#: Distinct (a, op, b) problems per operator.
PROBLEMS_PER_OPERATOR = (_HIGH - _LOW + 1) ** 2
#: Distinct (a, op, b) problems with both operators.
NUM_PROBLEMS = PROBLEMS_PER_OPERATOR * len(OPERATORS)


@dataclass(frozen=True)
class Problem:
    """One problem: ``a op b`` with ``op`` in ``+ -`` and a prompt template index."""

    a: int
    op: str
    b: int
    template: int

    @property
    def answer(self) -> int:
        """The integer result."""
        return self.a + self.b if self.op == "+" else self.a - self.b

    @property
    def prompt(self) -> str:
        """The user message text."""
        return PROMPT_TEMPLATES[self.template].format(a=self.a, op=self.op, b=self.b)

    @property
    def response(self) -> str:
        """The assistant answer text."""
        return ANSWER_TEMPLATE.format(n=self.answer)


def _check_ops(ops: str) -> str:
    if not ops or any(op not in OPERATORS for op in ops) or len(set(ops)) != len(ops):
        raise ValueError(f"ops={ops!r}: expected distinct operators from {OPERATORS!r}, "
                         f"e.g. '+' or '+-'")
    return ops


def make_problems(n: int, *, seed: int, exclude: set[tuple[int, str, int]] | None = None,
                  ops: str = OPERATORS) -> list[Problem]:
    """``n`` distinct problems (distinct ``(a, op, b)``, ``op`` drawn from ``ops``), none in
    ``exclude``, from ``seed``.

    Raises:
        ValueError: more problems asked than exist outside ``exclude``; ``ops`` not a
            non-empty set of ``+`` and ``-``.
    """
    _check_ops(ops)
    excluded = {key for key in (exclude or set()) if key[1] in ops}
    available = PROBLEMS_PER_OPERATOR * len(ops) - len(excluded)
    if n > available:
        raise ValueError(f"make_problems: asked for {n} distinct problems, only {available} exist "
                         f"(operands {_LOW}..{_HIGH}, operators {' and '.join(ops)}, minus "
                         f"{len(excluded)} excluded)")
    rng = random.Random(seed)
    seen: set[tuple[int, str, int]] = set()
    out: list[Problem] = []
    while len(out) < n:
        key = (rng.randint(_LOW, _HIGH), rng.choice(ops), rng.randint(_LOW, _HIGH))
        if key in seen or key in excluded:
            continue
        seen.add(key)
        out.append(Problem(*key, template=rng.randrange(len(PROMPT_TEMPLATES))))
    return out


def _rl_record(p: Problem) -> dict[str, Any]:
    return {"input": [{"role": "user", "content": p.prompt}], "label": str(p.answer)}


def _sft_record(p: Problem) -> dict[str, Any]:
    return {"input": [{"role": "user", "content": p.prompt},
                      {"role": "assistant", "content": p.response}],
            "label": str(p.answer)}


def _write_jsonl(path: Path, records: list[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        for rec in records:
            f.write(json.dumps(rec) + "\n")
    return path


def write_task(out_dir: str | Path, *, seed: int = 0, n_train: int | None = None,
               n_eval: int = 500, ops: str = OPERATORS) -> dict[str, Path]:
    """Write ``sft_train.jsonl``, ``rl_train.jsonl`` (the same ``n_train`` problems) and
    ``eval.jsonl`` (``n_eval`` held-out problems) under ``out_dir``, with the operators in
    ``ops``. ``n_train=None`` takes every problem that is not held out
    (``PROBLEMS_PER_OPERATOR * len(ops) - n_eval``).

    Returns:
        ``{"sft_train": Path, "rl_train": Path, "eval": Path}``.

    Raises:
        ValueError: ``n_train + n_eval`` exceeds the distinct problems, a count is negative,
            or ``ops`` is not a non-empty set of ``+`` and ``-``.
    """
    total = PROBLEMS_PER_OPERATOR * len(_check_ops(ops))
    if n_train is None:
        n_train = total - n_eval
    if n_train < 0 or n_eval < 0:
        raise ValueError(f"write_task: n_train={n_train}, n_eval={n_eval}; expected >= 0")
    if n_train + n_eval > total:
        raise ValueError(f"write_task: n_train + n_eval = {n_train + n_eval} exceeds the "
                         f"{total} distinct problems with operators {ops!r}")
    eval_problems = make_problems(n_eval, seed=seed + 1_000_003, ops=ops)
    held_out = {(p.a, p.op, p.b) for p in eval_problems}
    train = make_problems(n_train, seed=seed, exclude=held_out, ops=ops)
    out = Path(out_dir)
    return {
        "sft_train": _write_jsonl(out / "sft_train.jsonl", [_sft_record(p) for p in train]),
        "rl_train": _write_jsonl(out / "rl_train.jsonl", [_rl_record(p) for p in train]),
        "eval": _write_jsonl(out / "eval.jsonl", [_rl_record(p) for p in eval_problems]),
    }
