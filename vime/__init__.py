"""vime: RL post-training on vLLM under Ray, with a contract checked three times."""
__version__ = "0.1.0"
