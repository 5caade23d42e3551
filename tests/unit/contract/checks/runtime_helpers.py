"""Builders for the runtime-checker tests: valid samples, batches and args, built locally."""

from __future__ import annotations

import copy
from argparse import Namespace
from typing import Any

import pytest

from vime.contract.errors import ContractError, Violation
from vime.rollout.base_types import RolloutFnEvalOutput, RolloutFnTrainOutput
from vime.utils.types import Sample
from vime_lint.runtime import validate_rollout_output

HOOK = "my_pkg.rollout.generate_rollout"


def make_sample(g: int = 0, k: int = 0, n: int = 4, response_length: int = 3,
                **overrides: Any) -> Sample:
    """A valid generated sample: 3 prompt tokens + ``response_length`` response tokens; each
    override is the sample's own copy (no object shared between samples, VIM123)."""
    sample = Sample(
        group_index=g, index=g * n + k, prompt="What is 2+3?",
        tokens=[11, 12, 13] + [40 + i for i in range(response_length)],
        response="5", response_length=response_length, label="5", reward=float(k % 2),
        rollout_log_probs=[-0.5 - 0.1 * i for i in range(response_length)],
        status=Sample.Status.COMPLETED)
    for name, value in overrides.items():
        setattr(sample, name, copy.deepcopy(value))
    return sample


def make_groups(groups: int = 2, n: int = 4, **overrides: Any) -> list[list[Sample]]:
    """``groups`` valid groups of ``n`` samples each (distinct index, one group_index each)."""
    return [[make_sample(g, k, n, **overrides) for k in range(n)] for g in range(groups)]


def make_args(**values: Any) -> Namespace:
    """Args with 2 groups of 4 samples, raise mode; override anything."""
    base: dict[str, Any] = {"n_samples_per_prompt": 4, "rollout_batch_size": 2,
                            "contract_check": "raise"}
    base.update(values)
    return Namespace(**base)


def train_output(groups: Any, **kwargs: Any) -> RolloutFnTrainOutput:
    return RolloutFnTrainOutput(samples=groups, **kwargs)


def eval_output(data: Any, **kwargs: Any) -> RolloutFnEvalOutput:
    return RolloutFnEvalOutput(data=data, **kwargs)


def findings(output: Any, args: Namespace | None = None, *, evaluation: bool = False,
             **kwargs: Any) -> list[Violation]:
    """Every finding (warn mode, warnings silenced) for a rollout output."""
    args = args or make_args()
    args.contract_check = "warn"
    with _quiet():
        return validate_rollout_output(output, args, evaluation=evaluation, hook_path=HOOK,
                                       rollout_id=kwargs.pop("rollout_id", 7), **kwargs)


def rejects(output: Any, args: Namespace | None = None, *, evaluation: bool = False,
            **kwargs: Any) -> ContractError:
    """The ContractError raised for ``output`` in raise mode (fails the test if none)."""
    args = args or make_args()
    args.contract_check = "raise"
    with _quiet(), pytest.raises(ContractError) as info:
        validate_rollout_output(output, args, evaluation=evaluation, hook_path=HOOK,
                                rollout_id=kwargs.pop("rollout_id", 7), **kwargs)
    return info.value


def ids(found: list[Violation]) -> set[str]:
    return {v.id for v in found}


def only(found: list[Violation], inv_id: str) -> list[Violation]:
    return [v for v in found if v.id == inv_id]


class _quiet:
    """Silence ContractWarnings and the checker's log inside a block."""

    def __enter__(self) -> None:
        import logging
        import warnings

        self._w = warnings.catch_warnings()
        self._w.__enter__()
        warnings.simplefilter("ignore")
        self._logger = logging.getLogger("vime.contract.checks")
        self._level = self._logger.level
        self._logger.setLevel(logging.CRITICAL)

    def __exit__(self, *exc: object) -> None:
        self._logger.setLevel(self._level)
        self._w.__exit__(*exc)
