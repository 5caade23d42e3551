"""VIM130: the eval output's ``data``; VIM131: its samples are not the training prompts
(boundary B6).

``data`` maps each eval dataset name to ``{"rewards": [...], "truncated": [...], "samples":
[...]}``: finite-real rewards (dict rewards reduced by ``--eval-reward-key``, else
``--reward-key``), bool truncation flags, ``Sample`` s, all three of equal length. Names
that differ from the configured eval datasets (``args.eval_datasets``) warn.

Usage::

    check_eval_data(output.data, settings)     # list[Violation]

See ``docs/contract.md`` §3 (eval data) and §6b.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from typing import Any

from vime.contract.checks.settings import CheckSettings
from vime.contract.checks.typecheck import describe_value
from vime.contract.checks.values import reward_problem
from vime.contract.errors import Violation
from vime.contract.hooks import EVAL_ENTRY_KEYS
from vime.contract.invariants import INVARIANTS
from vime.contract.reward import reward_fix
from vime.utils.types import Sample

__all__ = ["check_eval_data", "check_vim131", "eval_prompt_keys", "prompt_key"]



def check_eval_data(data: Any, s: CheckSettings) -> list[Violation]:
    """Every VIM130 finding for eval ``data`` (errors; name mismatches warn)."""
    inv = INVARIANTS["VIM130"]
    if not isinstance(data, dict):
        return [inv.violation("data", problem=f"is {describe_value(data)}, expected "
                              "dict[str, dict] (one entry per eval dataset)")]
    out: list[Violation] = []
    key = s.eval_key()
    key_arg = "--eval-reward-key" if s.eval_reward_key else "--reward-key"
    for name, entry in data.items():
        at = f"data[{name!r}]"
        if not isinstance(name, str):
            out.append(inv.violation(at, problem=f"name is {describe_value(name)}, expected str"))
        if not isinstance(entry, dict):
            out.append(inv.violation(at, problem=f"is {describe_value(entry)}, expected "
                                     "{'rewards': [...], 'truncated': [...], 'samples': [...]}"))
            continue
        missing = [k for k in EVAL_ENTRY_KEYS if k not in entry]
        if missing:
            out.append(inv.violation(at, problem=f"is missing {', '.join(map(repr, missing))}"))
        lengths: dict[str, int] = {}
        for k in EVAL_ENTRY_KEYS:
            column = entry.get(k)
            if k in missing:
                continue
            if not isinstance(column, list):
                out.append(inv.violation(f"{at}[{k!r}]", problem=f"is {describe_value(column)}, "
                                         "expected a list"))
                continue
            lengths[k] = len(column)
            out.extend(_column_problems(k, column, f"{at}[{k!r}]", key, key_arg))
        if len(set(lengths.values())) > 1:
            sizes = ", ".join(f"{k}={n}" for k, n in lengths.items())
            out.append(inv.violation(at, problem=f"has lists of different lengths ({sizes}); "
                                     "expected one item per generated sample in each"))
    if s.eval_dataset_names is not None:
        configured = set(s.eval_dataset_names)
        got = {n for n in data if isinstance(n, str)}
        if got != configured:
            out.append(inv.violation("data", severity="warning", problem=(
                f"has datasets {sorted(got)}, configured eval datasets are "
                f"{sorted(configured)}")))
    return out


def _column_problems(k: str, column: list[Any], at: str, key: str | None,
                     key_arg: str) -> list[Violation]:
    inv = INVARIANTS["VIM130"]
    if k == "rewards":
        for i, value in enumerate(column):
            found = reward_problem(value, key, key_arg=key_arg)
            if found is not None:
                return [inv.violation(f"{at}[{i}]", severity=found[0], problem=found[1],
                                      fix=reward_fix(value, key, key_arg=key_arg))]
    elif k == "truncated":
        if not set(map(type, column)) <= {bool}:
            for i, value in enumerate(column):
                if type(value) is bool or _numpy_bool(value):
                    continue
                if type(value) is int and value in (0, 1):
                    return [inv.violation(f"{at}[{i}]", severity="warning",
                                          problem=f"is {value} (int), expected a bool")]
                return [inv.violation(f"{at}[{i}]", problem=f"is {describe_value(value)}, "
                                      "expected a bool")]
    elif k == "samples":
        for i, value in enumerate(column):
            if not isinstance(value, Sample):
                return [inv.violation(f"{at}[{i}]", problem=f"is {describe_value(value)}, "
                                      "expected a Sample")]
    return []


def _numpy_bool(value: Any) -> bool:
    """A numpy bool scalar (``numpy.bool_``, named ``bool`` since numpy 2), without importing
    numpy: eval logging reads it as ``bool(t)``, as a Python bool."""
    cls = type(value)
    return cls.__module__ == "numpy" and cls.__name__ in ("bool", "bool_")


def prompt_key(prompt: Any) -> str:
    """A comparable key of a sample's ``prompt`` (a string as is; chat messages as sorted JSON)."""
    if isinstance(prompt, str):
        return prompt
    return json.dumps(prompt, sort_keys=True, default=str)


def eval_prompt_keys(data_source: Any) -> dict[str, frozenset[str]]:
    """``{name: prompt keys}`` of the eval datasets ``data_source.eval_datasets()`` serves
    (:func:`prompt_key` of each sample's prompt); ``{}`` when the source has none or they
    cannot be read (the eval step reports that itself)."""
    get = getattr(data_source, "eval_datasets", None)
    try:
        sets = get() if callable(get) else {}
    except Exception:  # noqa: BLE001 - an unreadable eval file is reported where it is read
        return {}
    if not isinstance(sets, dict):
        return {}
    return {str(name): frozenset(prompt_key(getattr(x, "prompt", None)) for x in samples)
            for name, samples in sets.items() if isinstance(samples, list)}


def check_vim131(data: Any, training_prompts: Collection[str],
                 eval_prompts: Mapping[str, Collection[str]] | None = None) -> list[Violation]:
    """VIM131 (warning): one finding per eval dataset of ``data`` whose every sample's prompt
    (:func:`prompt_key`) is among ``training_prompts`` (the keys of ``--prompt-data``'s prompts);
    ``[]`` when ``training_prompts`` is empty or ``data`` is not a dict of entries.

    ``eval_prompts`` (:func:`eval_prompt_keys`) tells the two causes apart: when the
    configured eval dataset of that name is itself made of training prompts, the eval file is
    the training file (or part of it), and the finding says so instead of blaming the rollout.
    """
    if not training_prompts or not isinstance(data, dict):
        return []
    out = []
    for name, entry in data.items():
        samples = entry.get("samples") if isinstance(entry, dict) else None
        if not isinstance(samples, list) or not samples:
            continue
        keys = [prompt_key(getattr(x, "prompt", None)) for x in samples]
        if not all(k in training_prompts for k in keys):
            continue
        inv = INVARIANTS["VIM131"]
        configured = (eval_prompts or {}).get(str(name))
        if configured and all(k in training_prompts for k in configured):
            out.append(inv.violation(f"data[{name!r}]['samples']", problem=(
                f"are {len(samples)} samples whose prompts are all training prompts "
                f"(--prompt-data): the eval dataset {name!r} itself holds only training "
                "prompts, so this eval measures the training set"),
                fix=f"give eval dataset {name!r} (--eval-prompt-data / --eval-config) a file of "
                    "held-out prompts, not the training file or a part of it"))
            continue
        out.append(inv.violation(f"data[{name!r}]['samples']", problem=(
            f"are {len(samples)} samples whose prompts are all training prompts "
            "(--prompt-data): this eval measures the training set")))
    return out
