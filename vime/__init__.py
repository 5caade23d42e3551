"""vime: RL post-training on vLLM under Ray, with a contract checked three times.

How the package is put together (data flow, module of each stage, where to change what):
``docs/architecture.md``. The rollout contract (Sample fields, hooks, invariants, arguments),
generated from :mod:`vime.contract`: ``docs/contract.md``.
"""
__version__ = "0.1.0"
