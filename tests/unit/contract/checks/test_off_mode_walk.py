"""Every run-time invariant under ``--contract-check off``: policy ids go silent, the ids in
``ALWAYS_ENFORCED`` still raise.

Each id has one failing input, fed through the runtime entry point that checks it (the rollout
output check, a hook boundary's ``check_*`` call, the manager's VIM131 check) for a policy id,
or through the runtime site that enforces it (conversion, the buffer, the generate call, the
batch reward model, the trainer hooks, ...) for an always-enforced one. A sanity pass first
proves that each policy input really fails (its id is reported with ``warn``), so a silent
``off`` is not an input that stopped failing.
"""

from __future__ import annotations

import asyncio
import copy
import logging
import math
import sys
import textwrap
import warnings
from argparse import Namespace
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import torch
from runtime_helpers import eval_output, make_args, make_groups, make_sample, train_output

from vime.backends.trainer_hooks import TrainerHooks
from vime.contract.checks import boundaries as b
from vime.contract.errors import ContractError, ContractWarning, Violation
from vime.contract.invariants import ALWAYS_ENFORCED, INVARIANTS
from vime.data.batch_builder import BatchBuilder
from vime.ray.rollout import RolloutManagerCore
from vime.rollout.base_types import SampleGroup, call_rollout_fn, finalize_rollout_groups
from vime.rollout.data_source import RolloutDataSourceWithBuffer
from vime.rollout.failures import mark_failed
from vime.utils.tiny_model import build_tokenizer
from vime.utils.types import Sample
from vime_lint.runtime import validate_rollout_output

pytestmark = pytest.mark.unit

HOOK = "my_pkg.rollout.generate_rollout"
RUNTIME_IDS = sorted(i for i, inv in INVARIANTS.items()
                     if inv.scope == "runtime" and inv.status != "removed")


# ---- policy ids: one failing input each, through the entry point that checks it ----------

def _out(mutate: Callable[[list[list[Sample]]], Any] | None = None, **groups_kw: Any) -> Any:
    groups = make_groups(**groups_kw)
    if mutate is not None:
        mutate(groups)
    return groups


def _rollout(groups: Any, *, evaluation: bool = False, metrics: dict | None = None,
             **args_kw: Any) -> Callable[[Namespace], list[Violation]]:
    """B1/B5/B6: ``validate_rollout_output`` on ``groups`` (or an eval output)."""
    def run(mode_args: Namespace) -> list[Violation]:
        args = make_args(**args_kw)
        args.contract_check = mode_args.contract_check
        out = groups if evaluation or not isinstance(groups, list) else \
            train_output(copy.deepcopy(groups), metrics=metrics or {})
        return validate_rollout_output(out, args, evaluation=evaluation, hook_path=HOOK,
                                       rollout_id=7)
    return run


def _hook(call: Callable[..., list[Violation]], *values: Any,
          **args_kw: Any) -> Callable[[Namespace], list[Violation]]:
    """B2-B4: a hook boundary's public ``check_*`` call."""
    def run(mode_args: Namespace) -> list[Violation]:
        args = make_args(**args_kw)
        args.contract_check = mode_args.contract_check
        return call(*copy.deepcopy(values), args, rollout_id=7)
    return run


def _set(path: tuple[int, int], **fields: Any) -> Callable[[list[list[Sample]]], None]:
    def mutate(groups: list[list[Sample]]) -> None:
        for name, value in fields.items():
            setattr(groups[path[0]][path[1]], name, value)
    return mutate


def _failed(**fields: Any) -> list[list[Sample]]:
    groups = make_groups()
    mark_failed(groups[1][2], "reward", ValueError("judge down"), 1.5)
    for name, value in fields.items():
        setattr(groups[1][2], name, value)
    return groups


def _eval_data(**change: Any) -> Any:
    entry: dict[str, Any] = {"rewards": [1.0, 0.0], "truncated": [False, False],
                             "samples": [make_sample(0, 0), make_sample(0, 1)]}
    entry.update(change)
    return eval_output({"toy": entry})


def _generated(**fields: Any) -> Sample:
    s = make_sample(0, 3, reward=None)
    for name, value in fields.items():
        setattr(s, name, value)
    return s


def _two_prompts(groups: list[list[Sample]]) -> None:
    for s in groups[0][2:]:
        s.tokens = [11, 99, 13, 14] + s.tokens[3:]


def _shared_metadata(groups: list[list[Sample]]) -> None:
    groups[0][1].metadata = groups[0][2].metadata = {"rm_type": "math"}


def _zero_run(groups: list[list[Sample]]) -> None:
    lp = [-0.5] * 4 + [0.0] * 9 + [-0.5] * 3
    s = make_sample(1, 2, response_length=len(lp))
    s.loss_mask, s.rollout_log_probs = [1] * 16, lp
    groups[1][2] = s


def _flat_rewards(groups: list[list[Sample]]) -> None:
    for g, group in enumerate(groups):
        for s in group:
            s.reward = float(g)


def _mixed_labels(groups: list[list[Sample]]) -> None:
    groups[1][0].label = 5
    groups[1][3].label = 6


def _doubled_bos(groups: list[list[Sample]]) -> None:
    for group in groups:
        for s in group:
            s.tokens = [1, 1] + s.tokens


def _mixed_reward_kinds(groups: list[list[Sample]]) -> None:
    groups[1][2].reward = {"acc": 1.0}


def _inverted_mask(groups: list[list[Sample]]) -> None:
    groups[0][3].loss_mask = [0, 1, 1]
    groups[0][3].rollout_log_probs = [-0.7, 0.0, 0.0]


def _token_drift() -> tuple[Any, list[tuple[str, list[int], list[tuple[int, int]], str]]]:
    """A trajectory whose next user turn lost ChatML's newline after ``<|im_end|>``."""
    from vime.agent.render import chat_prompt_ids, render_text

    tok = build_tokenizer()
    user1 = {"role": "user", "content": "What is 2+3?"}
    user2 = {"role": "user", "content": "And 4+4?"}
    enc = lambda text: tok(text, add_special_tokens=False)["input_ids"]  # noqa: E731
    p1, _ = chat_prompt_ids(tok, [user1])
    g1 = [*enc("5"), tok.eos_token_id]
    added = enc("<|im_start|>user\nAnd 4+4?<|im_end|>\n<|im_start|>assistant\n")
    g2 = [*enc("8"), tok.eos_token_id]
    tokens = [*p1, *g1, *added, *g2]
    spans = [(len(p1), len(p1) + 2), (len(tokens) - 2, len(tokens))]
    text = render_text(tok, [user1, {"role": "assistant", "content": "5"}, user2])
    return tok, [("agent trajectory (index=3)", tokens, spans, text)]


def _token_boundaries(mode_args: Namespace) -> list[Violation]:
    tok, trajectories = _token_drift()
    args = make_args(contract_check=mode_args.contract_check)
    return b.check_token_boundaries(trajectories, tok, args, rollout_id=7)


def _not_training_prompts(mode_args: Namespace) -> list[Violation]:
    """The manager's VIM131 check on an eval dataset made of training prompts only."""
    prompts = ["train 0", "train 1"]
    samples = [make_sample(0, k, prompt=p) for k, p in enumerate(prompts)]
    manager = SimpleNamespace(
        args=make_args(contract_check=mode_args.contract_check, eval_function_path=None),
        data_source=SimpleNamespace(training_prompts=lambda: prompts), eval_hook_path=HOOK)
    found: list[Violation] = []
    with _recorded_violations(found):
        RolloutManagerCore._check_not_training_prompts(
            manager, _eval_data(samples=samples), 7)  # type: ignore[arg-type]
    return found


class _recorded_violations:
    """Collect what ``policy.enforce`` is handed (VIM131 reports through it, returns None)."""

    def __init__(self, into: list[Violation]) -> None:
        self.into = into

    def __enter__(self) -> None:
        from vime.contract.checks import policy

        self._orig = policy.enforce
        into = self.into

        def spy(found: Any, mode: Any, ctx: Any, **kw: Any) -> Any:
            into.extend(found)
            return self._orig(found, mode, ctx, **kw)

        policy.enforce = spy  # type: ignore[assignment]

    def __exit__(self, *exc: Any) -> None:
        from vime.contract.checks import policy

        policy.enforce = self._orig  # type: ignore[assignment]


POLICY: dict[str, Callable[[Namespace], list[Violation]]] = {
    "VIM104": _rollout(_out(groups=3)),
    "VIM105": _rollout(_out(_set((1, 0), session_id=3))),
    "VIM106": _rollout(_out(lambda g: g[1][3].tokens.__setitem__(4, "a"))),
    "VIM107": _rollout(_out(_set((1, 1), response_length=9, rollout_log_probs=[-0.1] * 9))),
    "VIM109": _rollout(_out(_set((1, 0), rollout_log_probs=[-0.1]))),
    "VIM111": _rollout(_out(_set((0, 3), status="truncated"))),
    "VIM114": _rollout(_out(_set((1, 3), index=2))),
    "VIM116": _rollout(_out(_set((0, 1), metadata={"x": {1, 2}}))),
    "VIM117": _rollout(_out(reward=1.0)),
    "VIM118": _rollout(_out(label=None), rm_type="boxed_math", label_key="answer"),
    "VIM119": _rollout(_out(), metrics={"acc": 1.0}),
    "VIM120": _rollout(_out(), rollout_sample_filter_path="my_pkg.filters.drop_long"),
    "VIM121": _rollout(_out(_mixed_reward_kinds), reward_key="acc"),
    "VIM122": _rollout(_out(_set((0, 1), reward=torch.tensor([0.5])))),
    "VIM123": _rollout(_out(_shared_metadata)),
    "VIM124": _rollout(_out(), rollout_max_response_len=2),
    "VIM125": _rollout(_out(_two_prompts)),
    "VIM126": _rollout(_out(lambda g: setattr(g[1][2], "weight_versions", []),
                            weight_versions=["3"])),
    "VIM127": _rollout(_out(_inverted_mask)),
    "VIM130": _rollout(_eval_data(rewards=[1.0]), evaluation=True),
    "VIM131": _not_training_prompts,
    "VIM141": _hook(b.check_generate_result, Sample.Status.PENDING, _generated(reward=1.0),
                    custom_rm_path="my_pkg.rm.reward"),
    "VIM160": _hook(b.check_dynamic_filter_result, None),
    "VIM161": _hook(b.check_buffer_filter_result, *(lambda buf: (buf[:1], buf, 1))(
        make_groups(groups=3))),
    "VIM170": _rollout(_out(), rollout_max_response_len=3),
    "VIM171": _rollout(_out(_flat_rewards)),
    "VIM172": _rollout(_out(), rollout_max_prompt_len=2),
    "VIM173": _rollout(_out(_zero_run)),
    "VIM174": _rollout(_out(_mixed_labels)),
    "VIM175": _rollout(_out(_set((0, 1), response=" \n"))),
    "VIM176": _rollout(_out(_doubled_bos), bos_token_id=1),
    "VIM177": _rollout(_out(_set((0, 3), response="5<|im_end|>")), eos_token_text="<|im_end|>"),
    "VIM180": _rollout(_failed(metadata={})),
    "VIM181": _rollout(_failed(loss_mask=[1, 0, 1], remove_sample=False)),
    "VIM185": _hook(lambda r, args, **kw: b.check_agent_result(r, args, calls=1, **kw), "1.0"),
    "VIM187": _hook(lambda r, args, **kw: b.check_agent_result(r, args, calls=1, in_flight=1,
                                                               **kw), 1.0),
    "VIM194": _token_boundaries,
}


# ---- always-enforced ids: one failing input each, through the site that enforces it -------

def _convert_args(mode: str, **kw: Any) -> Namespace:
    base: dict[str, Any] = dict(advantage_estimator="grpo", rewards_normalization=True,
                                grpo_std_normalization=True, n_samples_per_prompt=2,
                                reward_key=None, contract_check=mode,
                                custom_convert_samples_to_train_data_path=None,
                                custom_reward_post_process_path=None)
    base.update(kw)
    return Namespace(**base)


def _pair(**second: Any) -> list[Sample]:
    flat = [make_sample(0, 0, n=2), make_sample(0, 1, n=2)]
    for name, value in second.items():
        setattr(flat[1], name, value)
    return flat


def _convert(flat: list[Sample], **args_kw: Any) -> Callable[[str], Any]:
    return lambda mode: BatchBuilder.convert(_convert_args(mode, **args_kw), flat)


def _positional_half_group(mode: str) -> Any:
    flat = [make_sample(0, 0, n=2, group_index=None)]
    return BatchBuilder.convert(_convert_args(mode), flat)


def _segments_disagree(mode: str) -> Any:
    first, second = make_sample(0, 0, n=2, rollout_id=5), make_sample(0, 1, n=2, rollout_id=5)
    second.reward = 0.5
    return BatchBuilder.convert(_convert_args(mode), [first, second, make_sample(0, 1, n=2)])


def _buffer(samples: Any) -> Callable[[str], Any]:
    def run(mode: str) -> Any:
        source = SimpleNamespace(args=make_args(contract_check=mode, n_samples_per_prompt=2),
                                 buffer=[])
        return RolloutDataSourceWithBuffer.add_samples(source, samples)  # type: ignore[arg-type]
    return run


def _group_as_sample(mode: str) -> Any:
    """A group from ``get_samples`` used as a Sample: its AttributeError names VIM128."""
    SampleGroup(make_groups(groups=1)[0]).reward = 1.0


def _generate_finished(mode: str) -> Any:
    from vime.rollout.vllm import client

    args = make_args(contract_check=mode)
    return asyncio.run(client.generate(args, make_sample(0, 0), {}))


@pytest.fixture
def hook_modules(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A module of broken hooks on ``sys.path``; returns its name."""
    name = "off_walk_hooks"
    (tmp_path / f"{name}.py").write_text(textwrap.dedent("""
        import asyncio

        async def batch_rm(args, samples):
            return None

        def post_process(args, samples):
            return [1.0] * len(samples)

        def convert(args, samples):
            return [1, 2]

        def sample_filter(args, groups):
            return asyncio.sleep(0)
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    yield name
    sys.modules.pop(name, None)


def _batch_rm(mode: str, mod: str) -> Any:
    from vime.rollout.rm_hub import batched_async_rm

    args = make_args(contract_check=mode, custom_rm_path=f"{mod}.batch_rm", group_rm=True)
    return asyncio.run(batched_async_rm(args, make_groups(groups=1)[0]))


def _post_process(mode: str, mod: str) -> Any:
    return BatchBuilder.convert(_convert_args(
        mode, custom_reward_post_process_path=f"{mod}.post_process"), _pair())


def _sync_filter_coroutine(mode: str, mod: str) -> Any:
    args = make_args(contract_check=mode, rollout_sample_filter_path=f"{mod}.sample_filter")
    return finalize_rollout_groups(args, 7, make_groups())


class _Session:
    key, calls, in_flight = "s0", [], 0


class _NoCallEndpoint:
    """The agent endpoint's surface ``agent.generate`` uses, with no model call recorded."""

    server = SimpleNamespace(base_url=lambda key: "http://127.0.0.1:1/v1")
    watch = None   # no watch for agents that hold the loop (vime.agent.blocking)

    def open(self, sample: Sample, params: Any) -> _Session:
        return _Session()

    def close(self, session: _Session) -> None:
        pass


async def _agent_without_calls(args: Any, sample: Sample, base_url: str, session_id: str,
                               **kwargs: Any) -> float:
    return 1.0


def _agent_no_call(mode: str, monkeypatch: pytest.MonkeyPatch) -> Any:
    from vime.agent import generate as agent_generate

    async def endpoint(args: Any) -> _NoCallEndpoint:
        return _NoCallEndpoint()

    monkeypatch.setattr(agent_generate, "get_endpoint", endpoint)
    monkeypatch.setattr(sys.modules[__name__], "agent_run", _agent_without_calls, raising=False)
    args = make_args(contract_check=mode, agent_function_path=f"{__name__}.agent_run",
                     agent_function_mode="inline")
    return asyncio.run(agent_generate.generate(args, make_sample(0, 0, status=Sample.Status.PENDING,
                                                                 response_length=0,
                                                                 tokens=[11, 12, 13]), {}))


def _trainer(dest: str, fn: Callable[..., Any], call: Callable[[TrainerHooks], Any]
             ) -> Callable[[str], Any]:
    return lambda mode: call(TrainerHooks({dest: "my_pkg.hooks.f"}, {dest: fn}))


_MASKS = [torch.ones(3)]
_PG = torch.ones(3, requires_grad=True)

ALWAYS: dict[str, Callable[..., Any]] = {
    "VIM101": lambda mode: call_rollout_fn(lambda args, rid, ds, evaluation=False: None,
                                           make_args(contract_check=mode), 7, None,
                                           evaluation=False),
    "VIM102": _buffer([make_sample(0, 0), make_sample(0, 1)]),
    "VIM103": _positional_half_group,
    "VIM108": _convert(_pair(loss_mask=[1, 1, 1, 1])),
    "VIM110": _convert(_pair(reward=math.nan)),
    "VIM112": _convert(_pair(rollout_log_probs=None)),
    "VIM113": _convert(_pair(group_index=None)),
    "VIM115": _segments_disagree,
    "VIM128": _group_as_sample,
    "VIM140": _generate_finished,
    "VIM150": _batch_rm,
    "VIM162": _post_process,
    "VIM165": _sync_filter_coroutine,
    "VIM186": _agent_no_call,
    "VIM190": _trainer("custom_loss_function_path", lambda *a: torch.ones(()),
                       lambda h: h.loss(make_args(), {}, torch.ones(1), lambda x: x, 7)),
    "VIM191": _trainer("custom_advantage_function_path", lambda args, data: None,
                       lambda h: h.advantages(make_args(), {}, [3], 7)),
    "VIM192": _trainer("custom_tis_function_path", lambda **kw: None,
                       lambda h: h.tis(dict(pg_loss=_PG, loss_masks=_MASKS), 7)),
    "VIM193": _trainer("custom_pg_loss_reducer_function_path", lambda *a: 3,
                       lambda h: h.reduce_pg_loss((), _PG, 7)),
}

_NEEDS = {"VIM150": "mod", "VIM162": "mod", "VIM165": "mod", "VIM186": "monkeypatch"}


@pytest.fixture(autouse=True)
def _fresh_warnings() -> Iterator[None]:
    """A fresh once-per-step registry, so a warning seen by another test still shows here."""
    from vime.contract.checks import policy

    saved = policy._DEFAULT_REGISTRY
    policy._DEFAULT_REGISTRY = policy.WarnOnce()
    yield
    policy._DEFAULT_REGISTRY = saved


def test_every_runtime_id_has_one_case_in_the_table_of_its_enforcement() -> None:
    assert not set(POLICY) & set(ALWAYS)
    assert sorted([*POLICY, *ALWAYS]) == RUNTIME_IDS
    assert set(ALWAYS) == {i for i in RUNTIME_IDS if INVARIANTS[i].enforcement == "always"}
    assert set(ALWAYS) == set(ALWAYS_ENFORCED)


@pytest.mark.parametrize("inv_id", sorted(POLICY))
def test_policy_id_input_fails_under_warn(inv_id: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ContractWarning)
        found = POLICY[inv_id](Namespace(contract_check="warn"))
    assert inv_id in {v.id for v in found}, [v.format() for v in found]


@pytest.mark.parametrize("inv_id", sorted(POLICY))
def test_policy_id_is_silent_under_off(inv_id: str, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG, "vime.contract"), \
            warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        found = POLICY[inv_id](Namespace(contract_check="off"))
    assert found == []
    assert [w for w in caught if issubclass(w.category, ContractWarning)] == []
    assert inv_id not in caplog.text


@pytest.mark.parametrize("inv_id", sorted(ALWAYS))
def test_always_enforced_id_raises_under_off(inv_id: str, request: pytest.FixtureRequest) -> None:
    extra: list[Any] = []
    if _NEEDS.get(inv_id) == "mod":
        extra.append(request.getfixturevalue("hook_modules"))
    elif _NEEDS.get(inv_id) == "monkeypatch":
        extra.append(request.getfixturevalue("monkeypatch"))
    # VIM128 is the AttributeError of a group used as a Sample; the others a ContractError
    raised = AttributeError if inv_id == "VIM128" else ContractError
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ContractWarning)
        with pytest.raises(raised) as info:
            ALWAYS[inv_id]("off", *extra)
    if isinstance(info.value, ContractError):
        assert inv_id in info.value.ids, str(info.value)
    else:
        assert str(info.value).startswith(f"{inv_id} error: group"), str(info.value)
