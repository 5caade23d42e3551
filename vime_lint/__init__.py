"""vime-lint: the contract linter and runtime checker for vime rollout code."""
__version__ = "0.1.0"
