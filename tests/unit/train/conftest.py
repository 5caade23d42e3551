"""Fixtures shared by the trainer tests."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch


@pytest.fixture(scope="session")
def small_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A one-layer Llama (64-token vocabulary, tied embeddings) saved once per session; the
    tests load it from disk, so none of them changes it for the others."""
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    out = tmp_path_factory.mktemp("small_llama")
    LlamaForCausalLM(LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=64,
                                 num_hidden_layers=1, num_attention_heads=1,
                                 num_key_value_heads=1, tie_word_embeddings=True,
                                 pad_token_id=0)).save_pretrained(out)
    return out
