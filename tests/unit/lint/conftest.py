"""Fixtures of the lint tests: a project folder to run the CLI in, and one mypy cache for every
``vime-lint types`` test of a session."""

from __future__ import annotations

from pathlib import Path

import pytest


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
