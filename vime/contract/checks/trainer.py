"""Findings at the trainer boundary B7: the results of the four trainer hooks.

One pure function per invariant, each returning ``list[Violation]`` without context;
:func:`require_trainer_result` adds the hook's dotted path, argument and step and raises. The
trainer (``vime.backends.trainer_hooks``) calls them on every call of a hook, before
``backward()`` and the optimiser step, whatever ``--contract-check`` says (the ids are in
``ALWAYS_ENFORCED``: a non-finite or misshapen result would reach the weights).

- VIM190 ``custom_loss_result_problems``: ``--custom-loss-function-path`` returns ``(loss,
  log_dict)``, ``loss`` a finite 0-d tensor that requires grad, ``log_dict`` str -> finite number.
- VIM191 ``advantages_result_problems``: ``--custom-advantage-function-path`` set
  ``rollout_data["advantages"]``: one finite 1-D tensor of ``response_lengths[i]`` values per
  sample; ``returns``, when set, the same. A per-sample scalar is an error: upstream slime
  concatenates the per-sample tensors and multiplies them token by token, so it has no
  broadcast either.
- VIM192 ``tis_result_problems``: ``--custom-tis-function-path`` returns ``(pg_loss,
  modified_response_masks, tis_metrics)`` with the shapes it was given and 0/1 masks.
- VIM193 ``reducer_factory_problems`` / ``reduced_loss_problems``:
  ``--custom-pg-loss-reducer-function-path`` returns a callable whose output is a finite scalar.

Tensors are read through their methods (``shape``, ``dim()``, ``isfinite()``, ...), so this
module imports no torch (``vime.contract`` stays light).

Usage::

    require_trainer_result(custom_loss_result_problems(fn(args, batch, logits, ssm)),
                           hook="custom_loss_function_path", hook_path=path, rollout_id=3)

See ``docs/contract.md`` §6b and ``docs/en/training.md`` (what the hooks receive).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from vime.contract.checks.checker import with_context
from vime.contract.checks.settings import CheckContext
from vime.contract.errors import ContractError, Violation
from vime.contract.invariants import INVARIANTS

__all__ = [
    "advantages_result_problems",
    "custom_loss_result_problems",
    "is_tensor",
    "reduced_loss_problems",
    "reducer_factory_problems",
    "require_trainer_result",
    "tis_result_problems",
]


def is_tensor(value: Any) -> bool:
    """True for a torch tensor (duck-typed: ``shape``, ``dim``, ``detach``, ``isfinite``)."""
    return all(hasattr(value, a) for a in ("shape", "dim", "detach", "isfinite", "requires_grad"))


def _shape(value: Any) -> tuple[int, ...]:
    return tuple(int(n) for n in value.shape)


def _all_finite(t: Any) -> bool:
    return bool(t.detach().isfinite().all())


def _kind(value: Any) -> str:
    if is_tensor(value):
        return f"a tensor of shape {_shape(value)}"
    return f"a {type(value).__name__}"


def _finite_number(value: Any) -> str | None:
    """None when ``value`` is a finite real or a one-element finite tensor, else a problem."""
    if is_tensor(value):
        if value.numel() != 1:
            return f"is a tensor of shape {_shape(value)}, not one number"
        return None if _all_finite(value) else f"is {float(value.detach())}, not finite"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return f"is {_kind(value)}, not a number"
    return None if math.isfinite(value) else f"is {value}, not finite"


_BY_ID = {"VIM190": INVARIANTS["VIM190"], "VIM191": INVARIANTS["VIM191"],
          "VIM192": INVARIANTS["VIM192"], "VIM193": INVARIANTS["VIM193"]}


def _problem(inv_id: str, where: str, problem: str) -> Violation:
    return _BY_ID[inv_id].violation(where, problem=problem)


# ---- VIM190: custom loss -----------------------------------------------------------------------


def custom_loss_result_problems(result: Any) -> list[Violation]:
    """VIM190 on what ``custom_loss(args, batch, logits, sum_of_sample_mean)`` returned."""
    where = "custom loss result"
    if not isinstance(result, (tuple, list)) or len(result) != 2:
        got = f"a {len(result)}-tuple" if isinstance(result, (tuple, list)) else _kind(result)
        return [_problem("VIM190", where, f"is {got}, expected a (loss, log_dict) pair")]
    loss, log_dict = result
    found: list[Violation] = []
    if not is_tensor(loss):
        found.append(_problem("VIM190", f"{where}[0] (loss)",
                              f"is {_kind(loss)}, expected a 0-d torch tensor"))
    else:
        if loss.numel() != 1:
            found.append(_problem("VIM190", f"{where}[0] (loss)",
                                  f"has shape {_shape(loss)}, expected a scalar (reduce it, "
                                  "e.g. with sum_of_sample_mean)"))
        elif not _all_finite(loss):
            found.append(_problem("VIM190", f"{where}[0] (loss)",
                                  f"is {float(loss.detach())}: not finite"))
        if not loss.requires_grad:
            found.append(_problem("VIM190", f"{where}[0] (loss)",
                                  "does not require grad: it was not computed from `logits` "
                                  "(or was detached), so backward() would train nothing"))
    if not isinstance(log_dict, Mapping):
        found.append(_problem("VIM190", f"{where}[1] (log_dict)",
                              f"is {_kind(log_dict)}, expected a dict of names to numbers"))
        return found
    for key, value in log_dict.items():
        if not isinstance(key, str):
            found.append(_problem("VIM190", f"{where}[1] (log_dict)",
                                  f"has the key {key!r} ({type(key).__name__}), expected str"))
            continue
        bad = _finite_number(value)
        if bad is not None:
            found.append(_problem("VIM190", f"{where}[1][{key!r}]", bad))
    return found


# ---- VIM191: custom advantages -----------------------------------------------------------------


def _per_sample_problems(values: Any, key: str, response_lengths: Sequence[int]
                         ) -> list[Violation]:
    where = f"rollout_data[{key!r}]"
    if not isinstance(values, (list, tuple)):
        return [_problem("VIM191", where, f"is {_kind(values)}, expected a list with one 1-D "
                         f"tensor per sample ({len(response_lengths)} samples)")]
    if len(values) != len(response_lengths):
        return [_problem("VIM191", where, f"has {len(values)} entries, expected one per sample "
                         f"({len(response_lengths)})")]
    found: list[Violation] = []
    for i, (value, r) in enumerate(zip(values, response_lengths, strict=True)):
        at = f"{where}[{i}]"
        if not is_tensor(value):
            found.append(_problem("VIM191", at, f"is {_kind(value)}, expected a 1-D tensor of "
                                  f"{r} values (response_lengths[{i}])"))
        elif _shape(value) != (r,):
            hint = (" (one value per sample: broadcast it to every response token)"
                    if value.numel() == 1 and r != 1 else "")
            found.append(_problem("VIM191", at, f"has shape {_shape(value)}, expected ({r},) "
                                  f"(response_lengths[{i}]){hint}"))
        elif not _all_finite(value):
            found.append(_problem("VIM191", at, "holds NaN or inf values"))
        if len(found) >= 5:
            break
    return found


def advantages_result_problems(hook_result: Any, rollout_data: Mapping[str, Any],
                               response_lengths: Sequence[int]) -> list[Violation]:
    """VIM191 after ``advantage_fn(args, rollout_data)`` returned ``hook_result``.

    Args:
        hook_result: the call's return value (the hook works in place and returns None).
        rollout_data: the dict the hook received.
        response_lengths: ``list[int]``, response tokens per sample.
    """
    found: list[Violation] = []
    if hook_result is not None:
        found.append(_problem("VIM191", "advantage function result",
                              f"is {_kind(hook_result)}, expected None: store the advantages "
                              "in rollout_data['advantages'] instead of returning them"))
    if "advantages" not in rollout_data:
        found.append(_problem("VIM191", "rollout_data", "has no 'advantages' key after the "
                              "call: the hook must set rollout_data['advantages']"))
        return found
    found += _per_sample_problems(rollout_data["advantages"], "advantages", response_lengths)
    if rollout_data.get("returns") is not None:
        found += _per_sample_problems(rollout_data["returns"], "returns", response_lengths)
    return found


# ---- VIM192: TIS -------------------------------------------------------------------------------


def tis_result_problems(result: Any, pg_loss_shape: Sequence[int],
                        mask_shapes: Sequence[Sequence[int]]) -> list[Violation]:
    """VIM192 on what the TIS function returned.

    Args:
        result: ``(pg_loss, modified_response_masks, tis_metrics)``.
        pg_loss_shape: the shape of the ``pg_loss`` it was given (``(sum(response_lengths),)``).
        mask_shapes: the shape of each ``loss_masks[i]`` it was given.
    """
    where = "TIS function result"
    if not isinstance(result, (tuple, list)) or len(result) != 3:
        got = f"a {len(result)}-tuple" if isinstance(result, (tuple, list)) else _kind(result)
        return [_problem("VIM192", where, f"is {got}, expected (pg_loss, "
                         "modified_response_masks, tis_metrics)")]
    pg_loss, masks, metrics = result
    expected = tuple(int(n) for n in pg_loss_shape)
    found: list[Violation] = []
    if not is_tensor(pg_loss) or _shape(pg_loss) != expected:
        found.append(_problem("VIM192", f"{where}[0] (pg_loss)",
                              f"is {_kind(pg_loss)}, expected a tensor of the given shape "
                              f"{expected}"))
    elif not _all_finite(pg_loss):
        found.append(_problem("VIM192", f"{where}[0] (pg_loss)", "holds NaN or inf values"))
    if not isinstance(masks, (list, tuple)) or len(masks) != len(mask_shapes):
        n = len(masks) if isinstance(masks, (list, tuple)) else None
        found.append(_problem("VIM192", f"{where}[1] (modified_response_masks)",
                              f"is {_kind(masks)}" + (f" of {n} entries" if n is not None else "")
                              + f", expected a list of {len(mask_shapes)} masks (one per "
                              "sample)"))
    else:
        for i, (mask, shape) in enumerate(zip(masks, mask_shapes, strict=True)):
            at = f"{where}[1][{i}]"
            want = tuple(int(n) for n in shape)
            if not is_tensor(mask) or _shape(mask) != want:
                found.append(_problem("VIM192", at, f"is {_kind(mask)}, expected shape {want} "
                                      f"(loss_masks[{i}])"))
            elif not bool(((mask == 0) | (mask == 1)).all()):
                found.append(_problem("VIM192", at, "holds values other than 0 and 1 (weights "
                                      "belong in pg_loss, masks only select tokens)"))
    if not isinstance(metrics, Mapping):
        found.append(_problem("VIM192", f"{where}[2] (tis_metrics)",
                              f"is {_kind(metrics)}, expected a dict of names to tensors"))
        return found
    for key, value in metrics.items():
        at = f"{where}[2][{key!r}]"
        if not isinstance(key, str):
            found.append(_problem("VIM192", f"{where}[2]", f"has the key {key!r}, expected str"))
        elif is_tensor(value) and value.numel() != 1:
            if _shape(value) != expected:
                found.append(_problem("VIM192", at, f"has shape {_shape(value)}, expected "
                                      f"{expected} (one value per token) or one number"))
            elif not _all_finite(value):
                found.append(_problem("VIM192", at, "holds NaN or inf values"))
        else:
            bad = _finite_number(value)
            if bad is not None:
                found.append(_problem("VIM192", at, bad))
    return found


# ---- VIM193: pg-loss reducer -------------------------------------------------------------------


def reducer_factory_problems(reducer: Any) -> list[Violation]:
    """VIM193 on what the reducer factory returned (it must be callable)."""
    if callable(reducer):
        return []
    return [_problem("VIM193", "pg-loss reducer factory result",
                     f"is {_kind(reducer)}, expected a callable reduce(pg_loss)")]


def reduced_loss_problems(value: Any, *, input_requires_grad: bool) -> list[Violation]:
    """VIM193 on ``reducer(pg_loss)``: a finite scalar tensor (with grad if its input had it)."""
    where = "pg-loss reducer output"
    if not is_tensor(value):
        return [_problem("VIM193", where, f"is {_kind(value)}, expected a 0-d tensor")]
    if value.numel() != 1:
        return [_problem("VIM193", where, f"has shape {_shape(value)}, expected a scalar")]
    if not _all_finite(value):
        return [_problem("VIM193", where, f"is {float(value.detach())}: not finite")]
    if input_requires_grad and not value.requires_grad:
        return [_problem("VIM193", where, "does not require grad although pg_loss did (it was "
                         "detached or rebuilt from numbers): backward() would skip the policy "
                         "loss")]
    return []


# ---- enforcement -------------------------------------------------------------------------------


def require_trainer_result(found: Sequence[Violation], *, hook: str, hook_path: str | None,
                           rollout_id: int | None) -> None:
    """Raise the errors of a B7 check with the hook's dotted path, argument and step.

    Args:
        found: one of the functions above.
        hook: the ``HOOKS`` dest (``"custom_loss_function_path"``, ...).
        hook_path: the user's dotted path; None names the built-in.
        rollout_id: the rollout step.

    Raises:
        ContractError: at least one error; its header names the hook and says that nothing
            was applied to the weights.
    """
    errors = [v for v in found if v.severity == "error"]
    if not errors:
        return
    ctx = CheckContext.for_hook(hook, hook_path, rollout_id)
    header = (f"{ctx.describe()}: {len(errors)} contract error(s) at the trainer boundary B7; "
              "the step stopped before the optimiser step")
    raise ContractError(with_context(errors, ctx), header=header)
