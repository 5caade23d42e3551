"""Realistic rollout modules that must lint clean (tests/unit/static/test_corpus.py plants one
mistake at a time in copies of them)."""
