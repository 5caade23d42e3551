"""Eval dataset configuration: ``--eval-prompt-data`` pairs and ``--eval-config`` YAML files.

Usage::

    datasets = build_eval_datasets(args)        # list[EvalDatasetConfig], fully resolved
    datasets[0].name, datasets[0].path          # "aime", "/data/aime.jsonl"
    datasets[0].temperature                     # entry -> eval.defaults -> --eval-temperature
                                                #   -> --rollout-temperature

An ``--eval-config`` file looks like::

    eval:
      defaults:                 # applied to every dataset entry that leaves a key unset
        n_samples_per_eval_prompt: 4
        max_response_len: 512
      datasets:
        - name: gsm8k
          path: /data/gsm8k.jsonl
          rm_type: math
          metadata_overrides: {difficulty: easy}

Every value is resolved in this order: the dataset entry, then ``eval.defaults``, then the
command line (``--eval-*`` arguments, which fall back to the ``--rollout-*`` / train-key
arguments). Unknown keys raise ``ValueError`` naming the key and the file; keys that upstream
knows but v1 does not implement (``app_service``, ``eval_task_timeout``, ...) raise
``NotImplementedError``.

See ``docs/contract.md`` §11.
"""

from __future__ import annotations

import dataclasses
import difflib
from argparse import Namespace
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vime.config.defaults import arg

__all__ = [
    "DEFAULT_EVAL_NAME",
    "EvalDatasetConfig",
    "UNSUPPORTED_EVAL_KEYS",
    "build_eval_datasets",
    "load_eval_config",
    "parse_eval_prompt_data",
]

#: The name given to a lone ``--eval-prompt-data PATH`` (upstream's convention).
DEFAULT_EVAL_NAME = "aime"

#: Eval-config keys upstream accepts that v1 parses but does not implement (docs/contract.md §11 P).
UNSUPPORTED_EVAL_KEYS: tuple[str, ...] = (
    "app_service", "eval_task_timeout", "min_eval_samples", "message_processor", "reward_model",
    "remote_environment",
)
_UNSUPPORTED_PREFIXES: tuple[str, ...] = ("eval_early_stop_",)


@dataclass
class EvalDatasetConfig:
    """One eval dataset, resolved (every ``None`` below means "not set anywhere").

    Units: lengths in tokens; ``temperature``/``top_p`` as vLLM takes them; ``top_k`` -1 = off.
    """

    #: Dataset name; logged as ``eval/<name>``.
    name: str
    #: JSONL/Parquet file, optionally sliced as ``path@[start:end]``.
    path: str
    #: Built-in reward (``--rm-type`` form); falls back to ``--rm-type``.
    rm_type: str | None = None
    #: Reward function path; falls back to ``--custom-rm-path``.
    custom_rm_path: str | None = None
    #: Generate function path; falls back to ``--custom-generate-function-path``.
    custom_generate_function_path: str | None = None
    #: Record keys; fall back to ``--eval-*-key``, then the train keys.
    input_key: str | None = None
    label_key: str | None = None
    tool_key: str | None = None
    metadata_key: str | None = None
    #: Samples generated per prompt; falls back to ``--n-samples-per-eval-prompt``.
    n_samples_per_eval_prompt: int | None = None
    #: Sampling; fall back to ``--eval-*``, then ``--rollout-*``.
    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None
    max_response_len: int | None = None
    max_prompt_len: int | None = None
    max_context_len: int | None = None
    min_new_tokens: int | None = None
    stop: list[str] | None = None
    stop_token_ids: list[int] | None = None
    repetition_penalty: float | None = None
    #: Keep the stop string in the output (vLLM ``include_stop_str_in_output``).
    no_stop_trim: bool | None = None
    #: Merged into every sample's ``metadata`` of this dataset.
    metadata_overrides: dict[str, Any] = field(default_factory=dict)


_FIELDS = {f.name: f for f in dataclasses.fields(EvalDatasetConfig)}

#: field -> the args attributes tried in order when neither the entry nor the defaults set it.
_CLI_FALLBACK: dict[str, tuple[str, ...]] = {
    "rm_type": ("rm_type",),
    "custom_rm_path": ("custom_rm_path",),
    "custom_generate_function_path": ("custom_generate_function_path",),
    "input_key": ("eval_input_key", "input_key"),
    "label_key": ("eval_label_key", "label_key"),
    "tool_key": ("eval_tool_key", "tool_key"),
    "metadata_key": ("metadata_key",),
    "n_samples_per_eval_prompt": ("n_samples_per_eval_prompt",),
    "temperature": ("eval_temperature", "rollout_temperature"),
    "top_p": ("eval_top_p", "rollout_top_p"),
    "top_k": ("eval_top_k", "rollout_top_k"),
    "max_response_len": ("eval_max_response_len", "rollout_max_response_len"),
    "max_prompt_len": ("eval_max_prompt_len", "rollout_max_prompt_len"),
    "max_context_len": ("eval_max_context_len", "rollout_max_context_len"),
    "min_new_tokens": ("eval_min_new_tokens",),
    "stop": ("rollout_stop",),
    "stop_token_ids": ("rollout_stop_token_ids",),
}
_FINAL_DEFAULTS: dict[str, Any] = {"n_samples_per_eval_prompt": 1, "no_stop_trim": True}


def parse_eval_prompt_data(values: list[str] | None) -> list[tuple[str, str]]:
    """``--eval-prompt-data`` tokens -> ``[(name, path), ...]``.

    ``["a.jsonl"]`` -> ``[("aime", "a.jsonl")]``; ``["gsm", "g.jsonl", "math", "m.jsonl"]`` ->
    two pairs.

    Raises:
        ValueError: an odd number (> 1) of tokens, or a repeated name.
    """
    if not values:
        return []
    if len(values) == 1:
        return [(DEFAULT_EVAL_NAME, values[0])]
    if len(values) % 2:
        raise ValueError(f"expected `name path` pairs (or one lone path), got {len(values)} "
                         f"values: {values}")
    pairs = [(values[i], values[i + 1]) for i in range(0, len(values), 2)]
    _check_unique([n for n, _ in pairs], "--eval-prompt-data")
    return pairs


def _check_unique(names: list[str], where: str) -> None:
    seen: set[str] = set()
    for n in names:
        if n in seen:
            raise ValueError(f"{where}: dataset name {n!r} appears twice; names must be unique")
        seen.add(n)


def _unknown(key: str, where: str, known: list[str]) -> ValueError:
    close = difflib.get_close_matches(key, known, n=1)
    hint = f"; did you mean {close[0]!r}?" if close else f"; known keys: {', '.join(known)}"
    return ValueError(f"unknown key {key!r} in {where}{hint}")


def _check_entry(entry: Any, where: str, *, need_name: bool) -> dict[str, Any]:
    if not isinstance(entry, Mapping):
        raise ValueError(f"{where} must be a mapping of keys to values, got "
                         f"{type(entry).__name__}")
    out: dict[str, Any] = {}
    for raw_key, value in entry.items():
        key = str(raw_key).replace("-", "_")
        if key in UNSUPPORTED_EVAL_KEYS or key.startswith(_UNSUPPORTED_PREFIXES):
            raise NotImplementedError(f"key {raw_key!r} in {where} is parsed for compatibility "
                                      "with upstream but is not implemented in vime v1; remove it")
        if key not in _FIELDS:
            raise _unknown(str(raw_key), where, list(_FIELDS))
        if not need_name and key in ("name", "path"):
            raise ValueError(f"key {raw_key!r} in {where} belongs to a dataset entry, not to "
                             "eval.defaults")
        out[key] = value
    if need_name:
        for required in ("name", "path"):
            if not out.get(required):
                raise ValueError(f"{where} has no {required!r}; every eval dataset needs a name "
                                 "and a path")
    if "metadata_overrides" in out and not isinstance(out["metadata_overrides"], Mapping):
        raise ValueError(f"{where}: metadata_overrides must be a mapping, got "
                         f"{type(out['metadata_overrides']).__name__}")
    return out


def load_eval_config(path: str | Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Read an ``--eval-config`` YAML file -> ``(defaults, dataset entries)`` (keys checked).

    Raises:
        FileNotFoundError: the file does not exist.
        ValueError: not readable YAML text (``vime.config.yaml_file.read_yaml``); not a
            mapping with an ``eval`` section; unknown key (named with the file);
            an entry without ``name``/``path``; a duplicate name.
        NotImplementedError: a key v1 does not implement (``UNSUPPORTED_EVAL_KEYS``).
    """
    from vime.config.yaml_file import read_yaml

    file = Path(path)
    if not file.exists():
        raise FileNotFoundError(f"eval config {str(file)!r} does not exist")
    doc = read_yaml(file)   # YamlFileError (a ValueError): one line naming the file
    if not isinstance(doc, Mapping) or "eval" not in doc:
        raise ValueError(f"{file}: expected a top-level `eval:` mapping with `defaults` and "
                         "`datasets`")
    for key in doc:
        if key != "eval":
            raise _unknown(str(key), str(file), ["eval"])
    section = doc["eval"] or {}
    if not isinstance(section, Mapping):
        raise ValueError(f"{file}: `eval` must be a mapping, got {type(section).__name__}")
    for key in section:
        if key not in ("defaults", "datasets"):
            raise _unknown(f"eval.{key}", str(file), ["eval.defaults", "eval.datasets"])
    defaults = _check_entry(section.get("defaults") or {}, f"{file} (eval.defaults)",
                            need_name=False)
    raw_datasets = section.get("datasets") or []
    if not isinstance(raw_datasets, list):
        raise ValueError(f"{file}: eval.datasets must be a list of mappings")
    entries = [_check_entry(e, f"{file} (eval.datasets[{i}])", need_name=True)
               for i, e in enumerate(raw_datasets)]
    _check_unique([str(e["name"]) for e in entries], str(file))
    return defaults, entries


def _resolve(entry: Mapping[str, Any], defaults: Mapping[str, Any],
             args: Namespace) -> EvalDatasetConfig:
    values: dict[str, Any] = {}
    for name in _FIELDS:
        if entry.get(name) is not None:
            values[name] = entry[name]
        elif defaults.get(name) is not None:
            values[name] = defaults[name]
        else:
            for attr in _CLI_FALLBACK.get(name, ()):
                value = arg(args, attr)
                if value is not None:
                    values[name] = value
                    break
            else:
                if name in _FINAL_DEFAULTS:
                    values[name] = _FINAL_DEFAULTS[name]
    values["metadata_overrides"] = dict(values.get("metadata_overrides") or {})
    values["name"] = str(values["name"])
    values["path"] = str(values["path"])
    return EvalDatasetConfig(**values)


def build_eval_datasets(args: Namespace) -> list[EvalDatasetConfig]:
    """Resolved eval datasets from ``args.eval_config`` (wins) or ``args.eval_prompt_data``.

    Returns ``[]`` when neither is set.

    Raises:
        ValueError, NotImplementedError, FileNotFoundError: see :func:`load_eval_config` and
            :func:`parse_eval_prompt_data`.
    """
    config = arg(args, "eval_config")
    if config:
        defaults, entries = load_eval_config(config)
    else:
        defaults = {}
        entries = [{"name": n, "path": p}
                   for n, p in parse_eval_prompt_data(arg(args, "eval_prompt_data"))]
    return [_resolve(e, defaults, args) for e in entries]
