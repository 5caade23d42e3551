"""Fixtures of the lint tests: one mypy cache for every ``vime-lint types`` test of a session."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def types_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """mypy's incremental cache, shared by the ``vime-lint types`` tests (vime, numpy and torch
    are analysed once per session, cold; later runs read the cache)."""
    return tmp_path_factory.mktemp("vime-lint-types-cache")
