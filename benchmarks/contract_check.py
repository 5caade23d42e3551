"""Benchmark: the runtime contract checker against typeguard and pydantic.

A train output of 64 groups x 8 samples, each with a 128-token prompt and a 4,096-token
response (``tokens``, ``loss_mask`` and ``rollout_log_probs`` filled), is checked by:

- ``vime_lint.runtime`` (ours): every invariant of docs/contract.md §6b (B5);
- typeguard ``check_type(samples, list[list[Sample]], ALL_ITEMS)``: structure and
  ``isinstance(Sample)`` only, since typeguard does not look inside dataclasses;
- typeguard + a naive dataclass-field lookup (``typing.get_type_hints`` per instance, every
  field checked with ``ALL_ITEMS``): full field coverage;
- pydantic ``TypeAdapter(list[list[Sample]])`` in strict mode with
  ``revalidate_instances="always"`` (validates every field, builds copies).

It also times ours on the demo's GRPO shape (32 x 8 samples, about 48+24 tokens) as a share of
a demo GRPO step (``--step-s``).

Then each of the planted error kinds below is placed in the LAST sample of the batch and each
checker is asked whether it notices. Speed is measured on the full batch; detection of the
slow typeguard variant runs on a 2 x 2 batch with the same per-sample sizes (its verdict does
not depend on the batch size; the full batch takes about a minute per run).

Usage::

    .venv/bin/python benchmarks/contract_check.py            # prints markdown tables
    .venv/bin/python benchmarks/contract_check.py --quick    # 8 x 8 samples, for a smoke run
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import math
import sys
import time
import typing
from collections.abc import Callable
from typing import Any

from vime.contract.checks.rollout_output import collect_rollout_output
from vime.contract.checks.settings import CheckSettings
from vime.rollout.base_types import RolloutFnTrainOutput
from vime.utils.types import Sample

PROMPT_LEN = 128
RESPONSE_LEN = 4096


# ---- the batch ------------------------------------------------------------------------------


def make_sample(g: int, k: int, n: int) -> Sample:
    """A valid sample: 128 prompt + 4,096 response tokens, mask and log-probs."""
    rl = RESPONSE_LEN
    return Sample(
        group_index=g, index=g * n + k, prompt="x" * 200,
        tokens=[(7 * i + g) % 32000 for i in range(PROMPT_LEN + rl)],
        response="y" * 100, response_length=rl, label="42", reward=float(k % 2),
        loss_mask=[1] * rl, rollout_log_probs=[-0.5 - (i % 7) * 0.1 for i in range(rl)],
        status=Sample.Status.COMPLETED, metadata={"raw_reward": float(k % 2)})


def make_batch(groups: int, n: int) -> list[list[Sample]]:
    return [[make_sample(g, k, n) for k in range(n)] for g in range(groups)]


#: The demo's GRPO shape (examples/demo/grpo.yaml): 32 prompts x 8 samples, responses of at
#: most 24 tokens after a chat-templated prompt of about 48.
DEMO_GROUPS, DEMO_N, DEMO_PROMPT, DEMO_RESPONSE = 32, 8, 48, 24


def make_demo_batch() -> list[list[Sample]]:
    """A valid batch of the demo's GRPO shape (short lists: the per-sample cost dominates)."""
    def sample(g: int, k: int) -> Sample:
        rl = DEMO_RESPONSE - 1 - k % 3      # under the budget (VIM170 warns at it)
        return Sample(
            group_index=g, index=g * DEMO_N + k, prompt="x" * 100,
            tokens=[(7 * i + g) % 32000 + 2 for i in range(DEMO_PROMPT + rl)],
            response="y" * 40, response_length=rl, label="42", reward=float(k % 2),
            loss_mask=[1] * rl, rollout_log_probs=[-0.5 - (i % 7) * 0.1 for i in range(rl)],
            status=Sample.Status.COMPLETED, metadata={"raw_reward": float(k % 2)})
    return [[sample(g, k) for k in range(DEMO_N)] for g in range(DEMO_GROUPS)]


def settings_for(groups: int, n: int) -> CheckSettings:
    return CheckSettings(n_samples_per_prompt=n, rollout_batch_size=groups, vocab_size=32000,
                         logprob_flags=("--use-rollout-logprobs",))


# ---- the checkers ---------------------------------------------------------------------------


def ours(batch: list[list[Sample]], s: CheckSettings) -> list[str]:
    """Ids found by vime_lint.runtime (errors and warnings)."""
    found = collect_rollout_output(RolloutFnTrainOutput(samples=batch), s, evaluation=False)
    return sorted({v.id for v in found})


def typeguard_plain(batch: list[list[Sample]]) -> bool:
    """True if typeguard (ALL_ITEMS, no extension) rejects the batch."""
    from typeguard import CollectionCheckStrategy, TypeCheckError, check_type

    try:
        check_type(batch, list[list[Sample]],
                   collection_check_strategy=CollectionCheckStrategy.ALL_ITEMS)
    except TypeCheckError:
        return True
    return False


def _naive_dataclass_lookup(origin: Any, args: Any, extras: Any) -> Any:
    if not (isinstance(origin, type) and dataclasses.is_dataclass(origin)):
        return None

    def check(value: Any, origin_type: Any, args: Any, memo: Any) -> None:
        from typeguard import TypeCheckError, check_type_internal

        if not isinstance(value, origin_type):
            raise TypeCheckError(f"is not an instance of {origin_type.__qualname__}")
        hints = typing.get_type_hints(origin_type)          # naive: every instance
        for f in dataclasses.fields(origin_type):
            check_type_internal(getattr(value, f.name), hints[f.name], memo)

    return check


def typeguard_fields(batch: list[list[Sample]]) -> bool:
    """True if typeguard with a naive dataclass-field lookup rejects the batch."""
    from typeguard import (
        CollectionCheckStrategy,
        TypeCheckError,
        check_type,
        checker_lookup_functions,
    )

    checker_lookup_functions.insert(0, _naive_dataclass_lookup)
    try:
        check_type(batch, list[list[Sample]],
                   collection_check_strategy=CollectionCheckStrategy.ALL_ITEMS)
    except TypeCheckError:
        return True
    finally:
        checker_lookup_functions.remove(_naive_dataclass_lookup)
    return False


_ADAPTER: Any = None


def pydantic_strict(batch: list[list[Sample]]) -> bool:
    """True if pydantic (strict, revalidate_instances='always') rejects the batch."""
    global _ADAPTER
    from pydantic import ConfigDict, TypeAdapter, ValidationError

    if _ADAPTER is None:
        _ADAPTER = TypeAdapter(list[list[Sample]], config=ConfigDict(
            strict=True, revalidate_instances="always", arbitrary_types_allowed=True))
    try:
        _ADAPTER.validate_python(batch)
    except ValidationError:
        return True
    return False


# ---- planted errors -------------------------------------------------------------------------


def _set(name: str, value: Any) -> Callable[[list[list[Sample]]], None]:
    def plant(batch: list[list[Sample]]) -> None:
        setattr(batch[-1][-1], name, copy.deepcopy(value))
    return plant


def _edit(fn: Callable[[Sample], object]) -> Callable[[list[list[Sample]]], None]:
    def plant(batch: list[list[Sample]]) -> None:
        fn(batch[-1][-1])
    return plant


def _item(name: str, i: int, value: Any) -> Callable[[list[list[Sample]]], None]:
    def fn(s: Sample) -> None:
        getattr(s, name)[i] = value
    return _edit(fn)


def _np_metadata(s: Sample) -> None:
    import numpy as np

    s.metadata = {"scores": np.zeros(3)}


def _drop_last(batch: list[list[Sample]]) -> None:
    batch[-1].pop()


def _not_a_sample(batch: list[list[Sample]]) -> None:
    batch[-1][-1] = dataclasses.asdict(batch[-1][-1])  # type: ignore[call-overload]


def _other_group_index(s: Sample) -> None:
    s.group_index = (s.group_index or 0) + 1000


PLANTED: list[tuple[str, Callable[[list[list[Sample]]], None], str]] = [
    ("token is a str", _item("tokens", -1, "7"), "VIM106"),
    ("token is a bool", _item("tokens", 0, True), "VIM106"),
    ("token is a float", _item("tokens", 5, 5.0), "VIM106"),
    ("token id negative", _item("tokens", -2, -1), "VIM106"),
    ("token id >= vocab_size", _item("tokens", -3, 50000), "VIM106"),
    ("tokens empty", _set("tokens", []), "VIM106"),
    ("response_length 0", _set("response_length", 0), "VIM107"),
    ("response_length > len(tokens)", _set("response_length", PROMPT_LEN + RESPONSE_LEN + 1),
     "VIM107"),
    ("response_length a float", _set("response_length", float(RESPONSE_LEN)), "VIM107"),
    ("loss_mask one short", _edit(lambda s: s.loss_mask.pop()), "VIM108"),  # type: ignore[union-attr]
    ("loss_mask value 2", _item("loss_mask", 10, 2), "VIM108"),
    ("loss_mask value 1.0", _item("loss_mask", 10, 1.0), "VIM108"),
    ("rollout_log_probs one short", _edit(lambda s: s.rollout_log_probs.pop()), "VIM109"),  # type: ignore[union-attr]
    ("rollout_log_probs NaN", _item("rollout_log_probs", 100, math.nan), "VIM109"),
    ("rollout_log_probs > 0", _item("rollout_log_probs", 100, 0.7), "VIM109"),
    ("rollout_log_probs a str", _item("rollout_log_probs", 100, "-0.5"), "VIM109"),
    ("rollout_log_probs missing (one sample)", _set("rollout_log_probs", None), "VIM112"),
    ("reward None", _set("reward", None), "VIM110"),
    ("reward dict without --reward-key", _set("reward", {"acc": 1.0}), "VIM110"),
    ("reward NaN", _set("reward", math.nan), "VIM110"),
    ("reward a str", _set("reward", "1.0"), "VIM110"),
    ("status a str", _set("status", "completed"), "VIM111"),
    ("status PENDING", _set("status", Sample.Status.PENDING), "VIM111"),
    ("group_index differs in group", _edit(_other_group_index), "VIM113"),
    ("index duplicated", _set("index", 0), "VIM114"),
    ("metadata holds an ndarray", _edit(_np_metadata), "VIM116"),
    ("remove_sample a str", _set("remove_sample", "no"), "VIM105"),
    ("prompt an int", _set("prompt", 3), "VIM105"),
    ("spec_info counter a str", _edit(lambda s: setattr(s.spec_info, "spec_verify_ct", "1")),
     "VIM105"),
    ("weight_versions holds an int", _set("weight_versions", [1]), "VIM105"),
    ("group one sample short", _drop_last, "VIM103"),
    ("leaf is a dict, not a Sample", _not_a_sample, "VIM102"),
]


# ---- measurement ----------------------------------------------------------------------------


def timed(fn: Callable[[], Any], repeat: int) -> float:
    """Best wall time of ``repeat`` runs, in seconds."""
    best = math.inf
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def timed_pair(f: Callable[[], Any], g: Callable[[], Any], repeat: int) -> tuple[float, float]:
    """Best wall times of ``f`` and ``g``, run alternately ``repeat`` times each, so that a
    change of load on a shared machine hits both alike."""
    best_f = best_g = math.inf
    for _ in range(repeat):
        best_f = min(best_f, timed(f, 1))
        best_g = min(best_g, timed(g, 1))
    return best_f, best_g


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="8 groups x 8 samples")
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--step-s", type=float, default=3.28,
                        help="the demo's GRPO step in seconds (median, idle; issue 33: 3.28)")
    ns = parser.parse_args(argv)
    groups, n = (8, 8) if ns.quick else (64, 8)
    batch = make_batch(groups, n)
    s = settings_for(groups, n)
    samples = groups * n
    tokens = samples * RESPONSE_LEN
    assert ours(batch, s) == [], ours(batch, s)
    assert not typeguard_plain(batch) and not pydantic_strict(batch)

    rows = []
    t_ours, t_pyd = timed_pair(lambda: ours(batch, s), lambda: pydantic_strict(batch), ns.repeat)
    rows.append(("vime_lint.runtime (all invariants)", t_ours))
    rows.append(("typeguard ALL_ITEMS (structure only)",
                 timed(lambda: typeguard_plain(batch), ns.repeat)))
    t_tg = timed(lambda: typeguard_fields(batch), 1)
    rows.append(("typeguard ALL_ITEMS + naive dataclass fields", t_tg))
    rows.append(("pydantic strict, revalidate_instances=always", t_pyd))

    print(f"## Speed: {groups} groups x {n} samples, {PROMPT_LEN}+{RESPONSE_LEN} tokens each "
          f"(best of {ns.repeat}, ours and pydantic alternately; typeguard+fields: 1 run)\n")
    print("| checker | total ms | µs / sample | µs / response token | vs ours |")
    print("|---|---:|---:|---:|---:|")
    for name, t in rows:
        print(f"| {name} | {t * 1e3:.1f} | {t * 1e6 / samples:.1f} | {t * 1e6 / tokens:.4f} | "
              f"{t / t_ours:.1f}x |")
    print(f"\ntypeguard with full field coverage / ours: {t_tg / t_ours:.0f}x "
          f"(target >= 20x: {'met' if t_tg / t_ours >= 20 else 'NOT met'})")
    print(f"pydantic strict / ours: {t_pyd * 1e3:.1f} ms / {t_ours * 1e3:.1f} ms = "
          f"{t_pyd / t_ours:.2f}x (target > 1x, faster than pydantic: "
          f"{'met' if t_pyd > t_ours else 'NOT met'})\n")

    demo = make_demo_batch()
    demo_s = CheckSettings(n_samples_per_prompt=DEMO_N, rollout_batch_size=DEMO_GROUPS,
                           vocab_size=32000, logprob_flags=("--use-rollout-logprobs",),
                           max_response_len=DEMO_RESPONSE)
    assert ours(demo, demo_s) == [], ours(demo, demo_s)
    t_demo = timed(lambda: ours(demo, demo_s), 5 * ns.repeat)
    print(f"demo GRPO shape ({DEMO_GROUPS} x {DEMO_N} samples, {DEMO_PROMPT}+<={DEMO_RESPONSE} "
          f"tokens): ours {t_demo * 1e3:.1f} ms = {100 * t_demo / ns.step_s:.2f} % of a "
          f"{ns.step_s:.2f} s step (target <= 0.5 %: "
          f"{'met' if t_demo <= 0.005 * ns.step_s else 'NOT met'})\n")

    small = (2, 2)
    print("## Planted errors, each in the LAST sample\n")
    print("| # | planted error | expected | ours | typeguard | typeguard+fields | pydantic |")
    print("|---:|---|---|---|---|---|---|")
    totals = [0, 0, 0, 0]
    for i, (name, plant, expected) in enumerate(PLANTED, 1):
        big = copy.deepcopy(batch[-1])
        plant(batch)
        found = ours(batch, s)
        verdicts = [expected in found, typeguard_plain(batch), pydantic_strict(batch)]
        batch[-1] = big
        tiny = make_batch(*small)
        plant(tiny)
        tg_fields = typeguard_fields(tiny)
        caught = [verdicts[0], verdicts[1], tg_fields, verdicts[2]]
        totals = [t + c for t, c in zip(totals, caught, strict=True)]
        ours_cell = f"yes ({', '.join(found)})" if caught[0] else f"NO ({', '.join(found)})"
        cells = [ours_cell] + ["yes" if c else "no" for c in caught[1:]]
        print(f"| {i} | {name} | {expected} | " + " | ".join(cells) + " |")
    k = len(PLANTED)
    print(f"| | **caught** | | **{totals[0]}/{k}** | **{totals[1]}/{k}** | **{totals[2]}/{k}** "
          f"| **{totals[3]}/{k}** |")
    assert ours(batch, s) == []
    return 0 if totals[0] == k else 1


if __name__ == "__main__":
    sys.exit(main())
