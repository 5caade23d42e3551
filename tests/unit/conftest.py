"""Fixtures of the unit tests of more than one folder: a project folder to run the vime-lint CLI
in (lint/, static/rules/, typecheck/), one mypy cache for every ``vime-lint types`` test of a
session (typecheck/), and local tokenizers (see chat_tokenizers.py; utils/, rollout/), nothing
downloaded."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from chat_tokenizers import CHATML_TEMPLATE, LLAMA3_TEMPLATE, build_tokenizer


@pytest.fixture(scope="session")
def types_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """mypy's incremental cache, shared by the ``vime-lint types`` tests (vime's hook-facing
    modules and numpy are analysed once per session, cold; later runs read the cache)."""
    return tmp_path_factory.mktemp("vime-lint-types-cache")


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty project (a ``pyproject.toml`` without ``[tool.vime_lint]``), the working dir."""
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    monkeypatch.chdir(tmp_path)
    return tmp_path


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
