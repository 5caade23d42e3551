"""The tiny model builder and the arithmetic task (the CPU test/demo workload)."""

from __future__ import annotations

import json

import pytest

from vime.tasks.arithmetic import (
    NUM_PROBLEMS,
    PROBLEMS_PER_OPERATOR,
    PROMPT_TEMPLATES,
    Problem,
    make_problems,
    write_task,
)
from vime.utils.tiny_model import SPECIAL_TOKENS, build_tiny_model, build_tokenizer, main

pytestmark = pytest.mark.unit


def test_tokenizer_is_one_token_per_byte_with_chatml():
    tok = build_tokenizer()
    assert len(tok) == 260
    text = "What is 37+48? é"
    ids = tok.encode(text, add_special_tokens=False)
    assert ids == list(text.encode("utf-8"))
    assert tok.decode(ids) == text
    assert [tok.convert_tokens_to_ids(t) for t in SPECIAL_TOKENS] == [256, 257, 258, 259]
    assert tok.eos_token == "<|im_end|>" and tok.pad_token == "<|pad|>"
    msgs = [{"role": "user", "content": "hi"}]
    assert tok.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True) == (
        "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n")


def test_tiny_model_folder_reloads_identically_and_is_reproducible(tiny_model_dir, tmp_path):
    import torch
    from safetensors.torch import load_file
    from transformers import AutoConfig, AutoTokenizer

    cfg = AutoConfig.from_pretrained(tiny_model_dir)
    assert cfg.model_type == "qwen2" and cfg.tie_word_embeddings is False
    assert cfg.hidden_size // cfg.num_attention_heads == 32 and cfg.eos_token_id == 258
    tensors = load_file(tiny_model_dir / "model.safetensors")
    assert "lm_head.weight" in tensors
    assert all(t.dtype == torch.float32 for t in tensors.values())
    assert (tiny_model_dir / "generation_config.json").exists()
    loaded = AutoTokenizer.from_pretrained(tiny_model_dir)
    s = "e\u0301  7-3=\n<|im_end|>"
    assert loaded.encode(s, add_special_tokens=False) == build_tokenizer().encode(
        s, add_special_tokens=False)

    again = load_file(build_tiny_model(tmp_path / "same", seed=0) / "model.safetensors")
    other = load_file(build_tiny_model(tmp_path / "other", seed=1) / "model.safetensors")
    assert all(torch.equal(tensors[k], again[k]) for k in tensors)
    assert not torch.equal(tensors["lm_head.weight"], other["lm_head.weight"])


def test_tiny_model_rejects_unsupported_head_dim(tmp_path):
    with pytest.raises(ValueError, match="head_dim = hidden_size / num_heads = 16"):
        build_tiny_model(tmp_path, hidden_size=64, num_heads=4)
    with pytest.raises(ValueError, match="not divisible"):
        build_tiny_model(tmp_path, hidden_size=100, num_heads=3)


def test_cli_main_builds_the_folder(tmp_path, capsys):
    assert main([str(tmp_path / "m"), "--seed", "3", "--num-layers", "1"]) == 0
    assert capsys.readouterr().out.strip() == str(tmp_path / "m")
    assert json.loads((tmp_path / "m" / "config.json").read_text())["num_hidden_layers"] == 1


def test_problem_text():
    p = Problem(37, "+", 48, 0)
    assert (p.prompt, p.response, p.answer) == ("What is 37+48?", "The answer is 85.", 85)
    assert Problem(12, "-", 85, 2).prompt == "Compute 12 - 85."
    assert Problem(12, "-", 85, 1).answer == -73


def test_task_files_are_reproducible_and_held_out(tmp_path):
    paths = write_task(tmp_path / "a", seed=0, n_train=300, n_eval=50)
    again = write_task(tmp_path / "b", seed=0, n_train=300, n_eval=50)
    for key in paths:
        assert paths[key].read_text() == again[key].read_text()
    sft = [json.loads(x) for x in paths["sft_train"].read_text().splitlines()]
    rl = [json.loads(x) for x in paths["rl_train"].read_text().splitlines()]
    ev = [json.loads(x) for x in paths["eval"].read_text().splitlines()]
    assert (len(sft), len(rl), len(ev)) == (300, 300, 50)
    assert [m["role"] for m in sft[0]["input"]] == ["user", "assistant"]
    assert sft[0]["input"][1]["content"] == f"The answer is {sft[0]['label']}."
    assert rl[0] == {"input": sft[0]["input"][:1], "label": sft[0]["label"]}
    assert {r["input"][0]["content"] for r in ev}.isdisjoint(
        {r["input"][0]["content"] for r in rl})
    texts = [r["input"][0]["content"] for r in rl]
    assert any(t.startswith("What is ") for t in texts)
    assert any(t.endswith("=") for t in texts)
    assert any(t.startswith("Compute ") for t in texts)
    assert len(PROMPT_TEMPLATES) == 3


def test_task_size_limits():
    with pytest.raises(ValueError, match=f"only {NUM_PROBLEMS} exist"):
        make_problems(NUM_PROBLEMS + 1, seed=0)
    with pytest.raises(ValueError, match="expected >= 0"):
        write_task("/tmp/x", n_train=-1, n_eval=0)


def test_addition_only_task(tmp_path):
    paths = write_task(tmp_path, seed=0, n_eval=50, ops="+")
    rows = {key: [json.loads(x) for x in path.read_text().splitlines()]
            for key, path in paths.items()}
    assert len(rows["rl_train"]) == PROBLEMS_PER_OPERATOR - 50 and len(rows["eval"]) == 50
    texts = [r["input"][0]["content"] for part in rows.values() for r in part]
    assert all("+" in t and "-" not in t for t in texts)
    assert {r["input"][0]["content"] for r in rows["eval"]}.isdisjoint(
        {r["input"][0]["content"] for r in rows["rl_train"]})
    with pytest.raises(ValueError, match=f"only {PROBLEMS_PER_OPERATOR} exist"):
        make_problems(PROBLEMS_PER_OPERATOR + 1, seed=0, ops="+")
    with pytest.raises(ValueError, match="ops='[*]': expected distinct operators"):
        write_task(tmp_path, ops="*")


def test_both_operators_are_the_default_and_unchanged_by_the_ops_argument():
    assert make_problems(20, seed=3) == make_problems(20, seed=3, ops="+-")
