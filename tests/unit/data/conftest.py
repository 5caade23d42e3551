"""Fixtures of the data tests: local tokenizers (see chat_tokenizers.py), nothing downloaded."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from chat_tokenizers import CHATML_TEMPLATE, LLAMA3_TEMPLATE, build_tokenizer


@pytest.fixture(scope="session")
def chatml_tokenizer() -> Any:
    return build_tokenizer(CHATML_TEMPLATE)


@pytest.fixture(scope="session")
def llama3_tokenizer() -> Any:
    return build_tokenizer(LLAMA3_TEMPLATE)


@pytest.fixture(scope="session")
def chatml_tokenizer_dir(tmp_path_factory: pytest.TempPathFactory, chatml_tokenizer: Any) -> Path:
    """The ChatML tokenizer saved with ``save_pretrained`` (an ``--hf-checkpoint`` folder)."""
    path = tmp_path_factory.mktemp("chatml_tokenizer")
    chatml_tokenizer.save_pretrained(path)
    return path
