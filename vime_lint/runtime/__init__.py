"""``vime-lint check`` and the runtime checker's public names.

The runtime checks themselves live in :mod:`vime.contract.checks` (one function per invariant,
called by the training runtime and by ``vime-lint check`` alike); this package re-exports its
public names, so that ``from vime_lint.runtime import validate_rollout_output`` keeps working,
and holds the entry point of the dry run (:mod:`vime_lint.runtime.harness`, ``vime-lint
check``; its stages are in :mod:`vime_lint.check`).
"""

from vime.contract import checks as _checks
from vime.contract.checks import *  # noqa: F403  (the facade: the same names, defined once)

__all__ = list(_checks.__all__)
