"""The linter never crashes: generated rollout-like programs and arbitrary text."""

from __future__ import annotations

import hypothesis.strategies as st
import pytest
from hypothesis import HealthCheck, given, settings

from vime.contract import SAMPLE_FIELD_NAMES
from vime_lint.static._engine import lint_source
from vime_lint.static._model import LintOptions
from vime_lint.static.rules import ALL_RULES

pytestmark = pytest.mark.unit

_NAMES = st.sampled_from(["generate_rollout", "generate", "reward_func", "eval_rollout",
                          "dynamic_sampling_filter", "buffer_filter", "sample_hook", "helper"])
_PARAMS = st.lists(st.sampled_from(["args", "rollout_id", "data_source", "data_buffer",
                                    "evaluation=False", "evaluation", "sample", "samples",
                                    "sampling_params", "*a", "**kwargs"]),
                   max_size=5, unique=True)
_EXPR = st.sampled_from([
    "None", "[]", "{}", "dict(a=1)", "groups", "(1, 2)", "RolloutFnTrainOutput(samples=groups)",
    "RolloutFnEvalOutput(data={'d': {'rewards': []}})", "Sample(1, 2, prompt='x')",
    "[1] * len(sample.tokens)", "sample.reward + 1", "getattr(s, 'status', None)",
    "generate(args, sample, {})", "requests.get('u')", "time.sleep(1)", "out['meta_info']",
    "[] if evaluation else {}", "asyncio.to_thread(time.sleep, 1)", "range(args.n_samples_per_prompt)",
])
_STMT = st.one_of(
    _EXPR.map(lambda e: f"x = {e}"),
    _EXPR.map(lambda e: f"return {e}"),
    _EXPR.map(lambda e: f"await {e}"),
    st.sampled_from(sorted(SAMPLE_FIELD_NAMES) + ["truncated", "foo", "loss_masks"]).map(
        lambda f: f"sample.{f} = 1"),
    st.sampled_from(["'completed'", "'ok'", "Sample.Status.ABORTED"]).map(
        lambda v: f"sample.status = {v}"),
    st.just("args.cache = {}"), st.just("sample.tokens += [1]"), st.just("yield 1"),
    st.just("pass"), st.just("x = 1  # noqa"), st.just("x = 2  # noqa: VIM003"),
)


@st.composite
def programs(draw: st.DrawFn) -> str:
    header = ("import asyncio, time, requests\n"
              "from vime.rollout.base_types import RolloutFnEvalOutput, RolloutFnTrainOutput\n"
              "from vime.utils.types import Sample\n")
    parts = [header]
    for _ in range(draw(st.integers(1, 3))):
        is_async = draw(st.booleans())
        name = draw(_NAMES)
        params = ", ".join(draw(_PARAMS))
        body = draw(st.lists(_STMT, min_size=1, max_size=6))
        cond = draw(st.booleans())
        lines = [f"{'async ' if is_async else ''}def {name}({params}):"]
        if cond:
            lines.append("    if evaluation:")
            lines += [f"        {s}" for s in body[:1]]
        lines += [f"    {s}" for s in body]
        parts.append("\n".join(lines) + "\n")
    return "\n".join(parts)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs())
def test_generated_rollout_modules_never_crash(source: str) -> None:
    result = lint_source(source, "gen.py", LintOptions(launch_flags=frozenset({"--group-rm"})),
                         rules=ALL_RULES, fix=True, unsafe_fixes=True)
    # `await` outside async def and similar are still valid syntax for LibCST; no failure.
    assert result.failure is None or result.failure.message.startswith("cannot parse")
    if result.fixed_source is not None:
        again = lint_source(result.fixed_source, "gen.py", rules=ALL_RULES)
        assert again.failure is None


@settings(max_examples=150, deadline=None)
@given(st.binary(max_size=200) | st.text(max_size=200).map(str.encode))
def test_arbitrary_bytes_never_crash(data: bytes) -> None:
    result = lint_source(data, "junk.py", rules=ALL_RULES)
    assert result.failure is None or result.failure.message
