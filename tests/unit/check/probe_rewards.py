"""Rewards for the probe tests: mistakes of the kinds reported in public threads on reward
functions for RL post-training (e.g. huggingface/trl#6427, huggingface/open-r1#86,
huggingface/trl#5026, NVIDIA-NeMo/Gym#1844: "no answer" ranked above a wrong answer, the first
``\\boxed{}`` graded instead of the last, full credit for a label that cannot be parsed, ties
broken at random), and correct near-misses that must not be flagged."""

from __future__ import annotations

import asyncio
import random
import re

from vime.utils.types import Sample

_NUM = re.compile(r"-?\d+(?:\.\d+)?")


def _last_number(text: str) -> str | None:
    found = _NUM.findall(text)
    return found[-1] if found else None


# ---- mistakes ----------------------------------------------------------------------------

async def first_boxed(args, sample):          # VIM304: the first \boxed{} is graded
    m = re.search(r"\\boxed\{([^}]*)\}", sample.response)
    if m is None:
        n = _NUM.search(sample.response)
        return float(n is not None and n.group(0) == sample.label)
    return float(m.group(1).strip() == sample.label)


async def no_number_full_credit(args, sample):   # VIM301: no answer at all gets full credit
    last = _last_number(sample.response)
    return 1.0 if last is None else float(last == sample.label)


async def unparseable_label_full_credit(args, sample):   # VIM305
    try:
        float(sample.label)
    except ValueError:
        return 1.0
    return float(_last_number(sample.response) == sample.label)


async def abstain_above_wrong(args, sample):   # VIM306 (warning): "I don't know" > wrong
    if "don't know" in sample.response:
        return 0.5
    return float(_last_number(sample.response) == sample.label)


async def random_ties(args, sample):           # VIM302: random tie-breaking
    return float(_last_number(sample.response) == sample.label) + random.random() * 1e-3


async def raises_without_number(args, sample):  # VIM303: IndexError on an answer-free response
    return float(_NUM.findall(sample.response)[-1] == sample.label)


async def text_score(args, sample):            # VIM303 (and VIM110): a score as text
    return "1.0" if sample.response.strip().endswith(str(sample.label)) else "0.0"


async def nan_on_empty(args, sample):          # VIM303: NaN for a response with no words
    words = sample.response.split()
    return sum(w.strip(".") == sample.label for w in words) / len(words) if words \
        else float("nan")


async def ignores_label(args, sample):         # VIM300: rewards length, not the answer
    return float(len(sample.response) >= 10)


async def hashes_only(args, sample):           # VIM303: assumes "#### x" is always there
    return float(sample.response.split("####")[1].strip() == sample.label)


async def truncated_benefit(args, sample):     # VIM301: a cut-short response gets credit
    if sample.status == Sample.Status.TRUNCATED:
        return 1.0
    return float(_last_number(sample.response) == sample.label)


async def slow_judge(args, sample):            # VIM303 under --rm-timeout: never answers
    await asyncio.sleep(5)
    return 1.0


async def by_position(args, samples):          # VIM307: the group's first sample wins
    return [1.0] + [0.0] * (len(samples) - 1)


async def tie_by_index(args, samples):         # VIM307: equal responses, unequal rewards
    correct = [float(_last_number(s.response) == s.label) for s in samples]
    return [c - 0.01 * i for i, c in enumerate(correct)]


# ---- correct near-misses -----------------------------------------------------------------

async def last_number(args, sample):
    return float(_last_number(sample.response) == sample.label)


async def label_substring(args, sample):       # "41" and "3, 4, 5 or 6" pay for label "4"
    return 1.0 if str(sample.label) in sample.response else 0.0


async def any_number_matches(args, sample):    # whole numbers, but any of them: a list pays
    return float(sample.label in _NUM.findall(sample.response))


async def openai_agent_score(args, sample):    # examples/openai_agent.py's score as a reward
    from examples.openai_agent import score

    return score(sample.response, sample.label)


async def last_boxed_balanced(args, sample):   # nested braces handled, last \boxed{} wins
    starts = [m.end() for m in re.finditer(r"\\boxed\{", sample.response)]
    if not starts:
        return float(_last_number(sample.response) == sample.label)
    i, depth = starts[-1], 1
    for j in range(i, len(sample.response)):
        depth += {"{": 1, "}": -1}.get(sample.response[j], 0)
        if depth == 0:
            return float(sample.response[i:j].strip() == sample.label)
    return 0.0


async def normalised_exact(args, sample):
    text = sample.response.strip().rstrip(".").lower().replace("$", "")
    return float(text.split()[-1:] == [sample.label.lower()]) if text else 0.0


async def format_bonus(args, sample):          # 0.1 for an answer in the right format
    last = _last_number(sample.response)
    if last is None:
        return 0.0
    return 1.0 if last == sample.label else 0.1


async def group_centered(args, samples):       # per-sample correctness minus the group mean
    correct = [float(_last_number(s.response) == s.label) for s in samples]
    mean = sum(correct) / len(correct)
    return [c - mean for c in correct]


async def json_only_format(args, sample):      # a format the probes do not know: not judged
    import json

    try:
        return float(json.loads(sample.response)["answer"] == sample.label)
    except (ValueError, KeyError, TypeError):
        return 0.0


def json_renderings(args, sample):            # --probe-responses-path for json_only_format
    import json

    return [("json", json.dumps({"answer": sample.label}))]


async def reads_previous_reward(args, sample, **kwargs):
    """Adds to a reward the sample does not have yet (None until the reward returns)."""
    base = sample.reward or 0.0
    return base + (1.0 if sample.response.strip().endswith(sample.label) else 0.0)


async def reads_missing_metadata(args, sample, **kwargs):
    """Reads the answer from a metadata key the rows do not carry: every row scores 0."""
    answer = sample.metadata.get("answer", "")
    return 1.0 if answer and answer in sample.response else 0.0


async def reads_row_metadata(args, sample, **kwargs):
    """Near-miss: a metadata key the rows carry (--prompt-data with a metadata field)."""
    scale = 1.0 if sample.metadata["source"] == "gsm8k" else 0.5
    return scale if sample.response.strip().endswith(sample.label) else 0.0


async def optional_metadata_present(args, sample, **kwargs):
    """Near-miss: checks membership before reading."""
    bonus = sample.metadata["bonus"] if "bonus" in sample.metadata else 0.0
    return bonus + (1.0 if sample.response.strip().endswith(sample.label) else 0.0)


async def misspelt_option(args, sample):    # VIM303 on the gold answer itself: a typo in args.
    return float(sample.response.strip() == sample.label) + args.format_bonsu


# ---- rewards that run the response as code (the label is a test), and answer formats ------

async def code_tests_exec(args, sample):      # runs the response and the label's tests
    try:
        exec(compile(sample.response + "\n" + (sample.label or ""), "<response>", "exec"), {})
    except Exception:  # noqa: BLE001 - a failing program scores 0
        return 0.0
    return 1.0


async def code_tests_subprocess(args, sample):   # the same in a subprocess, off the loop
    import subprocess
    import sys

    def run() -> int:
        return subprocess.run([sys.executable, "-c", sample.response + "\n" + sample.label],
                              capture_output=True, timeout=20).returncode

    return 1.0 if await asyncio.to_thread(run) == 0 else 0.0


async def boxed_only(args, sample):             # pays only for \boxed{label}: correct
    found = re.findall(r"\\boxed\{([^{}]*)\}", sample.response)
    return 1.0 if found and found[-1].strip() == sample.label else 0.0


async def never_pays(args, sample):             # 0.0 whatever the answer (a broken grader)
    found = re.findall(r"\\boxed\{([^{}]*)\}", sample.response)
    return 1.0 if found and found[-1] == f"\\boxed{{{sample.label}}}" else 0.0


async def raises_key_error(args, sample):       # VIM303: a KeyError on every call
    value = {"a": 1}["b"]
    return float(value)
