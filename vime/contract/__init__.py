"""The rollout contract, defined once: Sample fields, hook specs, invariants, signature check.

Standard library only, so that the linter and a pre-commit hook import it in milliseconds.
Everything that checks user code reads from here:

- ``load_function(path, hook=dest)`` (load time, VIM100) uses :data:`HOOKS` and
  :func:`check_signature`;
- ``vime.contract.checks`` (run time, VIM101+; called by the runtime and by ``vime-lint
  check``) uses :data:`SAMPLE_FIELDS` and :data:`INVARIANTS`;
- ``vime_lint.static`` (lint time, VIM001+) uses all of them;
- ``docs/rules.md`` is generated from :data:`INVARIANTS` and the rules' docstrings.

See ``docs/contract.md`` §1.
"""

from vime.contract.errors import (
    ContractError,
    ContractWarning,
    Severity,
    Violation,
    format_violations,
)
from vime.contract.hooks import GROUP_RM_SPEC, HOOKS, HookSpec, hook_for_arg, hook_spec
from vime.contract.invariants import BOUNDARIES, INVARIANTS, Invariant
from vime.contract.sample import (
    FIELDS_BY_NAME,
    FINISH_REASON_STATUS,
    OPTIONAL_COLUMNS,
    SAMPLE_FIELD_NAMES,
    SAMPLE_FIELDS,
    STATUS_VALUES,
    FieldSpec,
)
from vime.contract.signature import Param, check_signature, params_from_callable, render_params

CONTRACT_VERSION = 1

__all__ = [
    "BOUNDARIES", "CONTRACT_VERSION", "ContractError", "ContractWarning", "FIELDS_BY_NAME",
    "FINISH_REASON_STATUS", "FieldSpec", "GROUP_RM_SPEC", "HOOKS", "HookSpec", "INVARIANTS", "Invariant",
    "OPTIONAL_COLUMNS", "Param", "SAMPLE_FIELDS", "SAMPLE_FIELD_NAMES", "STATUS_VALUES",
    "Severity", "Violation", "check_signature", "format_violations", "hook_for_arg",
    "hook_spec", "params_from_callable", "render_params",
]
