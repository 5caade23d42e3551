"""The linter never crashes: generated rollout-like programs, programs generated from
Python's grammar and LibCST's node types (hypothesmith), and arbitrary text."""

from __future__ import annotations

import textwrap
from typing import Any

import hypothesis.strategies as st
import pytest
from hypothesis import HealthCheck, given, settings

from vime.contract import SAMPLE_FIELD_NAMES
from vime_lint.static._engine import lint_source
from vime_lint.static._model import LintOptions, options_from_mapping
from vime_lint.static.rules import ALL_RULES

hypothesmith: Any
try:  # in the `dev` extra; the hand-made strategies below run without it
    import hypothesmith
except ImportError:  # pragma: no cover - depends on the environment
    hypothesmith = None

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
    "out['finish_reason']", "tokenizer.decode(ids)", "tokenizer.apply_chat_template(messages)",
    "{'acc': 1.0}", "sample.label", "Sample.Status.TRUNCATED",
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
    st.just("for _ in range(2):\n        messages.append({'content': tokenizer.decode(ids)})\n"
            "        ids = await engine(tokenizer.apply_chat_template(messages))"),
    st.just("sample.reward = {'acc': 1.0}"),
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


def _assert_lints(source: str, options: LintOptions) -> None:
    result = lint_source(source, "gen.py", options, rules=ALL_RULES, fix=True, unsafe_fixes=True)
    # `await` outside async def and similar are still valid syntax for LibCST; no failure.
    assert result.failure is None or result.failure.message.startswith(
        ("cannot parse", "SyntaxError"))
    if result.fixed_source is not None:
        again = lint_source(result.fixed_source, "gen.py", options, rules=ALL_RULES)
        assert again.failure is None


#: Every hook kind a rule looks at, named by a launch file (so VIM019 runs too).
_LAUNCHED = options_from_mapping({
    "hooks": {"generate": "custom_generate_function_path",
              "generate_rollout": "rollout_function_path", "reward_func": "custom_rm_path",
              "dynamic_sampling_filter": "dynamic_sampling_filter_path"},
    "launch_flags": ["--custom-rm-path", "--group-rm", "--eval-interval"],
})


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs(), st.sampled_from([LintOptions(launch_flags=frozenset({"--group-rm"})),
                                    _LAUNCHED]))
def test_generated_rollout_modules_never_crash(source: str, options: LintOptions) -> None:
    _assert_lints(source, options)


_HOOK_HEADERS = (
    "async def generate(args, sample, sampling_params):\n",
    "def generate_rollout(args, rollout_id, data_source, evaluation=False):\n",
    "async def reward_func(args, sample, **kwargs):\n",
    "def dynamic_sampling_filter(args, samples, **kwargs):\n",
)


def _generated_python() -> st.SearchStrategy[str]:
    """Programs from Python's grammar and from LibCST node types (hypothesmith), and the same
    text as the body of each kind of hook, where the contract rules look."""
    code = hypothesmith.from_grammar() | hypothesmith.from_node()
    as_module = code
    as_hook = st.tuples(st.sampled_from(_HOOK_HEADERS), code).map(
        lambda hc: hc[0] + "    pass\n" + textwrap.indent(hc[1], "    "))
    return as_module | as_hook


@pytest.mark.skipif(hypothesmith is None, reason="hypothesmith is not installed (dev extra)")
@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(st.deferred(_generated_python))
def test_hypothesmith_programs_never_crash(source: str) -> None:
    _assert_lints(source, _LAUNCHED)


@settings(max_examples=150, deadline=None)
@given(st.binary(max_size=200) | st.text(max_size=200).map(str.encode))
def test_arbitrary_bytes_never_crash(data: bytes) -> None:
    result = lint_source(data, "junk.py", rules=ALL_RULES)
    assert result.failure is None or result.failure.message
