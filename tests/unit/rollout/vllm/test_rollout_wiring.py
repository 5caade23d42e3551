"""The default rollout's wiring of user hooks, without an engine: custom generate functions
(``--custom-generate-function-path``, per-sample ``generate_function_path``, ``abort_mode=
"request"``), ``--rollout-sample-hook-path`` hooks, the step metrics, and the engine-failure
classification. The generate functions here never call an engine (docs/contract.md §5, §8)."""

from __future__ import annotations

import asyncio
import time
from argparse import Namespace

import pytest
import rollout_helpers

from vime.contract.errors import ContractError
from vime.rollout import vllm_rollout as vr
from vime.rollout.base_types import iter_samples
from vime.rollout.vllm.client import ENGINE_RETRY_S, _engine_failure, _retry_seconds
from vime.rollout.vllm.state import get_state
from vime.utils.async_utils import run
from vime.utils.http_utils import HTTPError
from vime.utils.types import Sample

pytestmark = pytest.mark.unit

HERE = __name__
EVENTS: list[tuple[str, int | None]] = []


@pytest.fixture(autouse=True)
def _clear_events():
    EVENTS.clear()
    yield
    EVENTS.clear()


def _respond(sample: Sample, marker: int) -> Sample:
    sample.tokens = [1, 2, 3]
    sample.append_response_tokens(tokens=[marker, marker + 1], log_probs=[-0.5, -0.25])
    sample.status = Sample.Status.COMPLETED
    return sample


async def gen_default(args, sample, sampling_params):
    EVENTS.append(("default", sample.index))
    return _respond(sample, 10)


async def gen_override(args, sample, sampling_params, evaluation=False):
    EVENTS.append(("override", sample.index))
    sample.metadata["evaluation_seen"] = evaluation
    return _respond(sample, 20)


async def gen_slow_for_group_1(args, sample, sampling_params):
    """Group 0 answers at once; group 1 gets one token, then waits (until cancelled)."""
    if sample.group_index == 0:
        return _respond(sample, 30)
    sample.tokens = [1, 2, 3]
    sample.append_response_tokens(tokens=[7], log_probs=[-1.0])
    try:
        await asyncio.sleep(60)
    except asyncio.CancelledError:
        EVENTS.append(("cancelled", sample.index))
        raise
    return _respond(sample, 40)


gen_slow_for_group_1.abort_mode = "request"  # type: ignore[attr-defined]


async def gen_continue(args, sample, sampling_params):
    """Continue a sample from where it stopped: two more tokens, then EOS."""
    if not sample.tokens:
        sample.tokens = [1, 2, 3]
    sample.append_response_tokens(tokens=[60, 61], log_probs=[-0.1, -0.2])
    sample.status = Sample.Status.COMPLETED
    return sample


async def gen_short_wait_for_group_1(args, sample, sampling_params):
    """No ``abort_mode``: the drain waits for these calls instead of cancelling them."""
    if sample.group_index == 1:
        await asyncio.sleep(0.3)
        EVENTS.append(("finished", sample.index))
    return _respond(sample, 50)


async def reward_one(args, sample, **kwargs):
    await asyncio.sleep(0.01)
    return 1.0 if sample.tokens[-2] == 20 else 0.0


async def reward_zero(args, sample, **kwargs):
    return 0.0


def hook_sync_none(args, sample):
    EVENTS.append(("sync", sample.index))
    sample.metadata["sync_hook"] = True
    return None


async def hook_async_replace(args, sample, rollout_id=None, evaluation=False):
    EVENTS.append(("async", rollout_id))
    new = Sample.from_dict(sample.to_dict())
    new.metadata["async_hook"] = (rollout_id, evaluation)
    return new


def hook_bad_return(args, sample):
    return "not a sample"


Source = rollout_helpers.Source


def _args(**kw) -> Namespace:
    base = dict(rollout_batch_size=2, n_samples_per_prompt=2, over_sampling_batch_size=2,
                rollout_temperature=1.0, custom_generate_function_path=f"{HERE}.gen_default",
                custom_rm_path=f"{HERE}.reward_one", rm_type=None, group_rm=False,
                reward_key=None, partial_rollout=False, contract_check="raise")
    return Namespace(**{**base, **kw})


# ---- per-sample generate function override ---------------------------------------------------


def test_per_sample_generate_function_path_wins_over_custom_path():
    class OverrideOdd(Source):
        def get_samples(self, k):
            groups = super().get_samples(k)
            for g in groups:
                g[1].generate_function_path = f"{HERE}.gen_override"
            return groups

    out = vr.generate_rollout(_args(), 0, OverrideOdd(2))
    leaves = list(iter_samples(out.samples))
    assert [s.index for s in leaves] == [0, 1, 2, 3]
    assert sorted(EVENTS) == [("default", 0), ("default", 2), ("override", 1), ("override", 3)]
    for s in leaves:
        overridden = s.index % 2 == 1
        assert s.tokens[3:] == ([20, 21] if overridden else [10, 11])
        assert s.reward == (1.0 if overridden else 0.0)
        # the optional `evaluation` keyword is passed only to functions that declare it
        assert ("evaluation_seen" in s.metadata) == overridden
    assert all(s.metadata["evaluation_seen"] is False for s in leaves if s.index % 2)


def test_custom_generate_function_must_be_async():
    with pytest.raises(ContractError, match="VIM100"):
        vr.generate_rollout(_args(custom_generate_function_path=f"{HERE}.hook_sync_none"), 0,
                            Source(2))


# ---- sample hooks ----------------------------------------------------------------------------


def test_sample_hooks_sync_none_keeps_and_async_replaces():
    args = _args(rollout_sample_hook_path=[f"{HERE}.hook_sync_none",
                                           f"{HERE}.hook_async_replace"])
    source = Source(2)
    out = vr.generate_rollout(args, 7, source)
    leaves = list(iter_samples(out.samples))
    assert len(leaves) == 4
    # every leaf went through both hooks, in order (sync first), before its reward
    assert sorted(e[1] for e in EVENTS if e[0] == "sync") == [0, 1, 2, 3]
    assert [e for e in EVENTS if e[0] == "async"] == [("async", 7)] * 4
    for s in leaves:
        # None kept the (mutated) sample, and the async hook (second) copied it from there
        assert s.metadata["sync_hook"] is True
        assert s.metadata["async_hook"] == (7, False)   # the returned Sample replaced it
        assert s.reward == 0.0                          # scored after the hooks


def test_sample_hook_bad_return_is_reported():
    args = _args(rollout_sample_hook_path=[f"{HERE}.hook_bad_return"])
    with pytest.raises(ContractError, match="VIM162") as info:
        vr.generate_rollout(args, 0, Source(2))
    assert "hook_bad_return" in str(info.value)


# ---- abort_mode="request" --------------------------------------------------------------------


def test_abort_mode_request_generate_is_cancelled_on_abort():
    # one group needed, two submitted: group 0 finishes, then abort cancels group 1's calls
    args = _args(rollout_batch_size=1, custom_generate_function_path=f"{HERE}."
                 "gen_slow_for_group_1")
    source = Source(2)
    start = time.monotonic()
    out = vr.generate_rollout(args, 0, source)
    assert time.monotonic() - start < 10, "the drain waited instead of cancelling"
    assert [s.index for s in iter_samples(out.samples)] == [0, 1]
    assert sorted(EVENTS) == [("cancelled", 2), ("cancelled", 3)]
    assert source.added == []   # without --partial-rollout the drained group is discarded


def test_abort_mode_request_partial_rollout_recycles_cancelled_samples():
    args = _args(rollout_batch_size=1, partial_rollout=True,
                 custom_generate_function_path=f"{HERE}.gen_slow_for_group_1")
    source = Source(2)
    out = vr.generate_rollout(args, 4, source)
    assert [s.index for s in iter_samples(out.samples)] == [0, 1]
    assert len(source.added) == 1
    recycled = source.added[0]
    assert [s.index for s in recycled] == [2, 3]
    for s in recycled:
        assert s.status == Sample.Status.ABORTED and s.response_length == 1
        assert s.reward is None and s.metadata["start_rollout_id"] == 4
    assert out.metrics["rollout/vllm_rollout/recycled_groups"] == 1


class RecyclingSource(Source):
    """Hands the groups that came back through ``add_samples`` out first, as the real buffer
    does with --partial-rollout."""

    def get_samples(self, k):
        back, self.added = self.added[:k], self.added[k:]
        return back + super().get_samples(k - len(back))


@pytest.mark.parametrize("mask_offpolicy", [True, False])
def test_partial_rollout_masks_the_off_policy_tokens_of_a_reentering_group(mask_offpolicy):
    """Step 4 aborts group 1 after one token and recycles it; step 5 continues it by two
    tokens. With --mask-offpolicy-in-partial-rollout the token from step 4's weights is masked
    out (loss_mask [0, 1, 1]); without, every token trains (loss_mask None: all trainable)."""
    source = RecyclingSource(2)
    first = vr.generate_rollout(_args(rollout_batch_size=1, partial_rollout=True,
                                      mask_offpolicy_in_partial_rollout=mask_offpolicy,
                                      custom_generate_function_path=f"{HERE}."
                                      "gen_slow_for_group_1"), 4, source)
    assert [s.index for s in iter_samples(first.samples)] == [0, 1]
    assert [[s.index for s in g] for g in source.added] == [[2, 3]]
    again = vr.generate_rollout(_args(rollout_batch_size=1, over_sampling_batch_size=1,
                                      partial_rollout=True,
                                      mask_offpolicy_in_partial_rollout=mask_offpolicy,
                                      custom_generate_function_path=f"{HERE}.gen_continue"),
                                5, source)
    reentered = list(iter_samples(again.samples))
    assert [s.index for s in reentered] == [2, 3]   # the recycled group, not a fresh one
    for s in reentered:
        assert s.tokens == [1, 2, 3, 7, 60, 61] and s.response_length == 3
        assert s.rollout_log_probs == [-1.0, -0.1, -0.2]
        assert s.loss_mask == ([0, 1, 1] if mask_offpolicy else None)
        assert s.status == Sample.Status.COMPLETED and s.metadata["start_rollout_id"] == 4


def test_without_abort_mode_the_drain_waits_for_the_call():
    args = _args(rollout_batch_size=1,
                 custom_generate_function_path=f"{HERE}.gen_short_wait_for_group_1")
    out = vr.generate_rollout(args, 0, Source(2))
    assert [s.index for s in iter_samples(out.samples)] == [0, 1]
    assert sorted(EVENTS) == [("finished", 2), ("finished", 3)]


# ---- metrics of a step -----------------------------------------------------------------------


def test_step_metrics_are_reported_and_qualified():
    args = _args(rollout_sample_hook_path=None)
    out = vr.generate_rollout(args, 0, Source(2))
    m = out.metrics
    assert all(k.startswith(("rollout/vllm_rollout/", "rollout/dynamic_filter/")) for k in m)
    # the figures of the kept samples are the manager's built-ins (rollout/raw_reward,
    # rollout/response_len/*, ...), computed from the returned samples, not repeated here
    assert not any(k.endswith(("/samples", "/reward_mean", "/truncated_ratio")) for k in m)
    assert not any("response_len" in k or "response_tokens" in k for k in m)
    assert m["rollout/vllm_rollout/recycled_groups"] == 0.0
    # no engine call: the built-in generate counts engine tokens only
    assert m["rollout/vllm_rollout/generated_tokens"] == 0.0
    assert m["rollout/vllm_rollout/reward_time_s"] >= 0.01   # reward_one sleeps 10 ms
    assert m["rollout/vllm_rollout/wall_time_s"] >= m["rollout/vllm_rollout/reward_time_s"]
    assert m["rollout/vllm_rollout/generation_time_s"] > 0


# ---- engine failures -------------------------------------------------------------------------


@pytest.mark.parametrize("status, retried", [(None, True), (500, True), (502, True),
                                             (503, True), (504, True), (400, False),
                                             (404, False), (422, False)])
def test_engine_failure_classification(status, retried):
    exc = HTTPError("x", url="http://127.0.0.1:1/inference/v1/generate", status=status)
    assert _engine_failure(exc) is retried
    assert _engine_failure(ValueError("x")) is False


def test_retry_seconds_default_and_validation():
    assert _retry_seconds(Namespace()) == ENGINE_RETRY_S
    assert _retry_seconds(Namespace(rollout_engine_retry_secs=2.5)) == 2.5
    with pytest.raises(ValueError, match="--rollout-engine-retry-secs -1.0: expected"):
        _retry_seconds(Namespace(rollout_engine_retry_secs=-1))


def test_generate_without_router_address_names_the_arguments():
    sample = Sample(index=0, prompt="x")
    with pytest.raises(ValueError, match="vllm_router_ip / args.vllm_router_port are not set"):
        run(vr.generate(Namespace(), sample, {"temperature": 1.0}))


# ---- built-in generate against a scripted engine answer ---------------------------------------


class _CountingTokenizer:
    """Encodes each character as its code point; counts calls."""

    def __init__(self) -> None:
        self.calls = 0

    def encode(self, text, add_special_tokens=False):
        self.calls += 1
        return [ord(c) for c in text]

    def decode(self, ids, skip_special_tokens=True):
        return "".join(chr(i) for i in ids)


def test_builtin_generate_encodes_a_groups_prompt_once_per_step(monkeypatch):
    from vime.utils import http_utils

    bodies = []

    async def fake_post(url, payload=None, **kw):
        bodies.append(payload)
        ids = [ord(c) for c in " 7"]
        return {"choices": [{"token_ids": ids, "finish_reason": "stop",
                             "logprobs": {"content": [{"token_id": t, "logprob": -0.5}
                                                      for t in ids]}}]}

    monkeypatch.setattr(http_utils, "post", fake_post)
    args = _args(custom_generate_function_path=None, custom_rm_path=f"{HERE}.reward_zero",
                 rollout_batch_size=3, n_samples_per_prompt=4, over_sampling_batch_size=3,
                 vllm_router_ip="127.0.0.1", vllm_router_port=1, rollout_max_response_len=8)
    tok = _CountingTokenizer()

    async def setup():
        state = await get_state(args)
        state.registered, state.base_url, state._tokenizer = True, "http://127.0.0.1:1", tok
        state.semaphore = asyncio.Semaphore(16)
        state.sampling_keys = frozenset(vr.sampling_params_from_args(args))

    run(setup())
    source = Source(4)
    out = vr.generate_rollout(args, 0, source)
    samples = list(iter_samples(out.samples))
    assert len(samples) == 12 and len(bodies) == 12
    assert tok.calls == 3                      # one encode per group prompt, not per sample
    for s in samples:
        prompt = [ord(c) for c in s.prompt]
        assert s.tokens == prompt + [ord(" "), ord("7")] and s.response_length == 2
    assert sorted(b["token_ids"] for b in bodies) == sorted(
        [ord(c) for c in f"p{g}"] for g in range(3) for _ in range(4))
    vr.generate_rollout(args, 1, source)       # a new step re-encodes its own prompts
    assert tok.calls == 6
