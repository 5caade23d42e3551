"""The ``VIM2xx`` codes of ``vime-lint types``, as rule records for the shared output formats.

The codes, severities and texts are ``vime.contract.INVARIANTS`` records (VIM200-VIM204).
VIM204 (mypy's own strictness) is off by default: :func:`types_rules` enables it only when a
selection names it (``--extend-select VIM204``, ``select = ["VIM2"]``), not through the bare
``VIM`` that selects everything else. These
classes never traverse code (mypy finds the errors); they exist so that the output formats,
``--select``/``--ignore``, ``per-file-ignores`` and the rules page treat them like the
``vime-lint rollout`` rules. Their docstrings are their sections of ``docs/rules.md``.

Usage::

    [r.code() for r in TYPE_RULES]       # ["VIM200", "VIM201", "VIM202", "VIM203", "VIM204"]
"""

from __future__ import annotations

from vime.contract import INVARIANTS
from vime_lint.static._rule import Rule

__all__ = ["OFF_BY_DEFAULT", "TYPE_RULES", "ContractFieldType", "ContractTypeMisuse",
           "HookAnnotationConflict", "HookReturnType", "MypyStrictness", "rule_for", "types_rules"]


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

    A call of one of vime's functions or classes (`finalize_rollout_groups`, the default
    `generate_rollout`, `generate`, `RolloutFnTrainOutput`) or of a contract type's method
    (`data_source.get_samples`) whose arguments do not fit its parameters is said as that
    call: the parameter it does not pass (and the argument that lands in its place), the
    extra argument or the keyword it has no parameter for, vime's signature, and the call to
    write (mypy's sentences about the call follow, in one finding).

    ## Example

    ```python
    async def reward_func(args, sample):
        text = sample.prompt.lower()    # VIM201: `sample.prompt` is `str | list[dict[str, Any]]`
        return sample.reward + 1.0      # VIM201: `sample.reward` may be a dict or None

    def generate_rollout(args, rollout_id, data_source, evaluation=False):
        groups = data_source.get_samples(args.rollout_batch_size)
        return finalize_rollout_groups(args, groups)   # VIM201: passes no `rollout_id`
    ```

    Narrow first: `if isinstance(sample.prompt, str): ...`; read a reward with
    `sample.get_reward_value(args)`; pass the hook's own `rollout_id`:
    `finalize_rollout_groups(args, rollout_id, groups)`.
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
    `-> list[float]` for a per-sample reward) is reported here, and the hook's body is
    checked with the contract's type (what vime passes, whatever the annotation says).

    ## Example

    ```python
    async def reward_func(args, sample: dict) -> str:   # VIM203 twice
        ...
    ```
    """

    INVARIANT = INVARIANTS["VIM203"]


class MypyStrictness(Rule):
    """mypy's own strictness, where no contract type is violated (off by default).

    ## What it checks

    What mypy reports in a hook that is its own rule rather than the contract's: an empty list
    that needs an annotation (`var-annotated`), a value read from an untyped container seen as
    `object`, `None` assigned to a typed local, an `X | None` used without narrowing where it
    is not certainly `None`, a union of modes not narrowed (`RolloutFnTrainOutput |
    RolloutFnEvalOutput` after `generate_rollout(..., evaluation=evaluation)`, a fan-out
    group's `Sample | list[Sample]`), and a third-party API's own types on the user's values
    (the `openai` SDK's message TypedDicts given a `list[dict[str, str]]`). The code runs as
    written, so these are warnings, and off unless selected: `vime-lint types
    --extend-select VIM204` (or `extend-select = ["VIM204"]` in `[tool.vime_lint]`).

    ## Example

    ```python
    async def reward_func(args, sample):
        seen = []                                   # VIM204 (--extend-select): var-annotated
        score = sample.metadata.get("bonus")        # Any: nothing reported
        out = base(args, rollout_id, data_source, evaluation=evaluation)
        out.samples                                 # VIM204: the eval side has no .samples
    ```

    Annotate (`seen: list[str] = []`), narrow (`assert x is not None`, `isinstance`), pass
    `evaluation=False` literally, or leave it.
    """

    INVARIANT = INVARIANTS["VIM204"]


#: Every rule of ``vime-lint types``, in code order.
TYPE_RULES: tuple[type[Rule], ...] = (HookReturnType, ContractTypeMisuse, ContractFieldType,
                                      HookAnnotationConflict, MypyStrictness)
#: Codes a selection enables only when it names them (a prefix longer than ``VIM``).
OFF_BY_DEFAULT = frozenset({"VIM204"})


def types_rules() -> tuple[type[Rule], ...]:
    """The rules ``vime-lint types`` reports: its own, and the `rollout` rules whose id and
    severity it shares (VIM031 unknown `Sample` attributes, VIM032 stale flags)."""
    from vime_lint.static.rules.stale_sample_flag import StaleSampleFlag
    from vime_lint.static.rules.unknown_sample_attribute import UnknownSampleAttribute

    return (*TYPE_RULES, UnknownSampleAttribute, StaleSampleFlag)


def rule_for(code: str) -> type[Rule]:
    """The rule record of ``code``.

    Raises:
        KeyError: ``code`` is no ``vime-lint types`` code.
    """
    for r in types_rules():
        if r.code() == code:
            return r
    raise KeyError(f"{code} is not a vime-lint types code; known: "
                   f"{', '.join(r.code() for r in TYPE_RULES)}")
