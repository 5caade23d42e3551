"""The ``VIM2xx`` codes of ``vime-lint types``, as rule records for the shared output formats.

The codes, severities and texts are ``vime.contract.INVARIANTS`` records (VIM200-VIM203). These
classes never traverse code (mypy finds the errors); they exist so that the output formats,
``--select``/``--ignore``, ``per-file-ignores`` and the rules page treat them like the
``vime-lint rollout`` rules. Their docstrings are their sections of ``docs/rules.md``.

Usage::

    [r.code() for r in TYPE_RULES]       # ["VIM200", "VIM201", "VIM202", "VIM203"]
"""

from __future__ import annotations

from vime.contract import INVARIANTS
from vime_lint.static._rule import Rule

__all__ = ["TYPE_RULES", "ContractFieldType", "ContractTypeMisuse", "HookAnnotationConflict",
           "HookReturnType", "rule_for"]


class HookReturnType(Rule):
    """A hook returns a value of its contract return type on every path.

    ## What it checks

    `vime-lint types` gives each hook the contract's return type (`float | dict[str, Any]` for
    `--custom-rm-path`, `RolloutFnTrainOutput | RolloutFnEvalOutput` for the rollout function,
    `DynamicFilterOutput` for a dynamic filter, ...) and mypy reports every `return` whose value
    is not of it, a `return` without a value, and a path that falls off the end (`None`).

    ## Example

    ```python
    async def reward_func(args, sample):
        if sample.label is None:
            return                      # VIM200: None on one path
        return torch.tensor(1.0)        # VIM200: got "Tensor", expected "float | dict[str, Any]"
    ```

    Return `float(...)` (or `.item()`) for a reward; return `RolloutFnTrainOutput(samples=groups)`
    from a rollout function, not the list of groups.
    """

    INVARIANT = INVARIANTS["VIM200"]


class ContractTypeMisuse(Rule):
    """Code in a hook uses the contract's values only as their types allow.

    ## What it checks

    With the contract's parameter types (`sample: Sample`, `samples: list[Sample]`, `args:
    Namespace`, `data_source: DataSource`, ...), mypy checks every use in the hook's body, and
    in the module's helpers that the hook passes its sample or samples to (one level:
    `_score(sample)` gives `_score`'s parameter the type `Sample`). The message names the
    contract type the value came from.

    ## Example

    ```python
    async def reward_func(args, sample):
        text = sample.prompt.lower()    # VIM201: `sample.prompt` is `str | list[dict[str, Any]]`
        return sample.reward + 1.0      # VIM201: `sample.reward` may be a dict or None
    ```

    Narrow first: `if isinstance(sample.prompt, str): ...`; read a reward with
    `sample.get_reward_value(args)`.
    """

    INVARIANT = INVARIANTS["VIM201"]


class ContractFieldType(Rule):
    """A value stored in a field of `Sample` or of a contract output has the field's type.

    ## What it checks

    Assignments to `Sample` fields and the fields given to `RolloutFnTrainOutput`,
    `RolloutFnEvalOutput`, `DynamicFilterOutput` and `Sample(...)`, against the dataclasses'
    own annotations (`metrics: dict[str, float] | None`, `status: Sample.Status`, ...).

    ## Example

    ```python
    sample.status = "completed"                          # VIM202: expected "Status"
    return RolloutFnTrainOutput(samples=groups,
                                metrics={"acc": [0.5]})  # VIM202: a list, expected "float"
    ```
    """

    INVARIANT = INVARIANTS["VIM202"]


class HookAnnotationConflict(Rule):
    """A hook's own annotation agrees with the contract's type.

    ## What it checks

    A user annotation is kept when it is the contract's type or narrower (`-> float` for a
    reward); a wider one (`Any`, `object`, `sample: Sample | None`) is replaced by the
    contract's type. An annotation that is neither narrower nor wider (`sample: dict`,
    `-> list[float]` for a per-sample reward) is reported here; the hook's body is still
    checked with the user's annotation.

    ## Example

    ```python
    async def reward_func(args, sample: dict) -> str:   # VIM203 twice
        ...
    ```
    """

    INVARIANT = INVARIANTS["VIM203"]


#: Every rule of ``vime-lint types``, in code order.
TYPE_RULES: tuple[type[Rule], ...] = (HookReturnType, ContractTypeMisuse, ContractFieldType,
                                      HookAnnotationConflict)


def rule_for(code: str) -> type[Rule]:
    """The rule record of ``code``.

    Raises:
        KeyError: ``code`` is no ``vime-lint types`` code.
    """
    for r in TYPE_RULES:
        if r.code() == code:
            return r
    raise KeyError(f"{code} is not a vime-lint types code; known: "
                   f"{', '.join(r.code() for r in TYPE_RULES)}")
