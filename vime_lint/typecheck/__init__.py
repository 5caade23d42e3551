"""``vime-lint types``: mypy on hook modules with the contract's types (VIM2xx)."""
