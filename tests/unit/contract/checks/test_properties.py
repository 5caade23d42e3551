"""Property tests: random valid outputs pass; each single mutation is caught with its id."""

from __future__ import annotations

import math
from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from runtime_helpers import findings, make_args, train_output

from vime.rollout.failures import mark_failed
from vime.utils.types import Sample

pytestmark = pytest.mark.unit

_STATUS = st.sampled_from([Sample.Status.COMPLETED, Sample.Status.TRUNCATED,
                           Sample.Status.FAILED])


@st.composite
def valid_batches(draw: st.DrawFn) -> tuple[list[list[Sample]], int, int]:
    """(groups, rollout_batch_size, n_samples_per_prompt) of a valid train output."""
    n_groups = draw(st.integers(1, 4))
    n = draw(st.integers(1, 4))
    with_logprobs = draw(st.booleans())
    with_mask = draw(st.booleans())
    groups = []
    index = 0
    for g in range(n_groups):
        group = []
        prompt_len = draw(st.integers(1, 5))
        prompt = draw(st.lists(st.integers(0, 1000), min_size=prompt_len, max_size=prompt_len))
        for _ in range(n):
            rl = draw(st.integers(1, 8))
            sample = Sample(
                group_index=g, index=index, prompt="p",
                tokens=prompt + draw(st.lists(st.integers(0, 1000), min_size=rl, max_size=rl)),
                response_length=rl,
                reward=draw(st.floats(-1, 1, allow_nan=False)),
                status=draw(_STATUS),
                metadata=draw(st.dictionaries(st.text(max_size=3), st.integers(), max_size=2)))
            if with_mask:
                mask = draw(st.lists(st.integers(0, 1), min_size=rl, max_size=rl))
                if any(mask):
                    mask[-1] = 1  # the response ends on a model token (VIM124)
                sample.loss_mask = mask
                sample.remove_sample = not any(mask)
            if with_logprobs:
                sample.rollout_log_probs = draw(st.lists(
                    st.floats(-20, -1e-3), min_size=rl, max_size=rl))
            if sample.status is Sample.Status.FAILED:
                if index < 2:   # the first two carry the batch's reward spread (VIM117)
                    sample.status = Sample.Status.COMPLETED
                else:           # a failed sample as --hook-failure fail-sample leaves it
                    mark_failed(sample, "reward", ValueError("judge down"), 0.5)
            index += 1
            group.append(sample)
        groups.append(group)
    flat = [s for grp in groups for s in grp]
    if len(flat) > 1:
        flat[0].reward, flat[1].reward = 0.0, 1.0        # not constant (VIM117)
    return groups, n_groups, n


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(valid_batches())
def test_random_valid_outputs_pass(batch: tuple[list[list[Sample]], int, int]) -> None:
    groups, m, n = batch
    args = make_args(n_samples_per_prompt=n, rollout_batch_size=m, vocab_size=1001)
    assert findings(train_output(groups), args) == []


def _set(name: str, value: object) -> Callable[[Sample], None]:
    def mutate(s: Sample) -> None:
        setattr(s, name, value)
    return mutate


def _short_mask(s: Sample) -> None:
    s.loss_mask = [1] * (s.response_length - 1)


def _bad_mask_value(s: Sample) -> None:
    s.loss_mask = [1] * (s.response_length - 1) + [3]


def _short_logprobs(s: Sample) -> None:
    s.rollout_log_probs = [-0.5] * (s.response_length + 1)


def _nan_logprob(s: Sample) -> None:
    s.rollout_log_probs = [math.nan] * s.response_length


def _str_token(s: Sample) -> None:
    s.tokens = s.tokens[:-1] + ["7"]  # type: ignore[list-item]


def _long_response(s: Sample) -> None:
    s.response_length = len(s.tokens) + 1


def _numpy_metadata(s: Sample) -> None:
    import numpy as np

    s.metadata = {"x": np.float32(1.0)}


MUTATIONS: list[tuple[str, Callable[[Sample], None], str]] = [
    ("tokens empty", _set("tokens", []), "VIM106"),
    ("token is a str", _str_token, "VIM106"),
    ("response_length 0", _set("response_length", 0), "VIM107"),
    ("response_length > len(tokens)", _long_response, "VIM107"),
    ("loss_mask short", _short_mask, "VIM108"),
    ("loss_mask value 3", _bad_mask_value, "VIM108"),
    ("rollout_log_probs long", _short_logprobs, "VIM109"),
    ("rollout_log_probs nan", _nan_logprob, "VIM109"),
    ("reward None", _set("reward", None), "VIM110"),
    ("reward dict without key", _set("reward", {"acc": 1.0}), "VIM110"),
    ("status string", _set("status", "completed"), "VIM111"),
    ("remove_sample str", _set("remove_sample", "no"), "VIM105"),
    ("prompt int", _set("prompt", 3), "VIM105"),
    ("duplicate index", _set("index", -5), "VIM114"),
    ("group_index None", _set("group_index", None), "VIM113"),
    ("metadata numpy", _numpy_metadata, "VIM116"),
    ("teacher log probs on one", _set("teacher_log_probs", [-1.0]), "VIM112"),
]


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(valid_batches(), st.sampled_from(MUTATIONS), st.data())
def test_each_single_mutation_is_caught(batch: tuple[list[list[Sample]], int, int],
                                        mutation: tuple[str, Callable[[Sample], None], str],
                                        data: st.DataObject) -> None:
    groups, m, n = batch
    name, mutate, expected = mutation
    flat = [s for g in groups for s in g]
    # all-or-none and uniqueness need two samples: such draws are rejected, not passed
    assume(expected not in ("VIM113", "VIM112", "VIM114") or len(flat) >= 2)
    if expected not in ("VIM105", "VIM106", "VIM111", "VIM113", "VIM114"):
        # a FAILED sample's reward, response and per-token lists are replaced at conversion
        flat = [s for s in flat if s.status is not Sample.Status.FAILED]
    target = data.draw(st.sampled_from(flat))
    mutate(target)
    if name == "duplicate index":
        other = next(s for s in flat if s is not target)
        other.index = -5
    if name == "teacher log probs on one":
        target.teacher_log_probs = [-1.0] * target.response_length
    args = make_args(n_samples_per_prompt=n, rollout_batch_size=m, vocab_size=1001)
    found = findings(train_output(groups), args)
    assert expected in {v.id for v in found}, (name, [v.format() for v in found])
    index = target.index
    hit = [v for v in found if v.id == expected]
    if expected not in ("VIM113", "VIM112", "VIM114"):
        assert any(f"(index={index})" in v.where for v in hit), (name, [v.where for v in hit])


def test_group_size_mutation_is_caught() -> None:
    groups = [[Sample(group_index=g, index=g * 2 + k, prompt="p", tokens=[1, 2], response_length=1,
                      reward=float(k), status=Sample.Status.COMPLETED) for k in range(2)]
              for g in range(2)]
    groups[1].pop()
    found = findings(train_output(groups), make_args(n_samples_per_prompt=2))
    assert [v.id for v in found] == ["VIM103"]
