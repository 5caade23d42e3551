"""Rollout: data sources, rollout functions (default vLLM, SFT), rewards and filters."""
