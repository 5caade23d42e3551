"""Checks of what the arguments name, after parsing: files, folders, hook modules.

Usage::

    problem = input_problem(args)   # ("--prompt-data", "dataset 'x.jsonl' does not exist ...")
    check_inputs(args)              # what validate_args runs last: exit 2 on the first problem

A bad input found here ends ``vime train`` with one line, ``vime train: error: argument
--<name>: <reason>`` (after the usage line), and exit status 2, before Ray or an engine starts;
found later it would be a traceback inside a Ray actor. Checked: ``--prompt-data`` and every
eval dataset (exists, a readable file, ``.jsonl`` or ``.parquet``, a well-formed
``@[start:end]``), ``--hf-checkpoint`` (a local folder holds ``config.json``), and every hook
``--*-path`` set to something else than its default (its module is found on ``sys.path`` with
the working directory first, as the actors see it; found, not imported), and Ray's
authentication (``vime.ray.auth.auth_problem``: ``RAY_AUTH_MODE``, the token's file, a join's token),
and the engines' (``vime.ray.engine_guard.engine_auth_problem``: ``--vllm-host``,
``--vllm-api-key``, ``--engine-auth disabled`` beyond the loopback).
Imports the standard library only (the data helpers lazily).
"""

from __future__ import annotations

import argparse
import difflib
import importlib.util
import os
import sys
from pathlib import Path

from vime.contract.hooks import HOOKS

__all__ = ["check_inputs", "hf_checkpoint_problem", "hook_module_problem", "input_problem"]


def hf_checkpoint_problem(value: str) -> str | None:
    """Why ``--hf-checkpoint value`` is not a usable local model folder, or None.

    A value that does not exist and reads as a hub id (``org/name``) is left to the loader."""
    path = Path(value).expanduser()
    if path.is_file():
        return (f"{value!r} is a file; give the model folder (the one that holds "
                "config.json, the tokenizer and the weights)")
    if path.is_dir():
        if not (path / "config.json").is_file():
            return (f"folder {value!r} has no config.json, so it is not a Hugging Face model "
                    "folder; give the folder that holds config.json (`vime make-tiny-model "
                    "DIR` builds a small one)")
        return None
    hub_id = value.count("/") == 1 and not value.startswith((".", "/", "~"))
    if hub_id:
        return None
    return f"folder {value!r} does not exist (relative to {Path.cwd()})"


def hook_module_problem(path: str, arg: str) -> str | None:
    """Why the module of hook ``path`` (``pkg.mod.fn``) cannot be found, or None (imports the
    parent packages only, as ``importlib.util.find_spec`` does)."""
    module, _, attr = path.rpartition(".")
    if not module or not attr:
        return f"{path!r} is not a dotted path; expected package.module.function"
    cwd = os.getcwd()
    added = cwd not in sys.path
    if added:
        sys.path.insert(0, cwd)
    try:
        found = module in sys.modules or importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        found = False
    except Exception as exc:  # a parent package raised while importing
        return f"importing the package of {path!r} raised {type(exc).__name__}: {exc}"
    finally:
        if added:
            sys.path.remove(cwd)
    if found:
        return None
    top = module.split(".")[0]
    near = difflib.get_close_matches(top, _local_modules(Path(cwd)), n=1)
    hint = f" (did you mean {near[0]!r}?)" if near else ""
    return (f"{path!r}: module {module!r} not found from {cwd}{hint}; check the spelling, "
            f"run from the folder that holds {top!r}, or add that folder to PYTHONPATH")


def _local_modules(folder: Path) -> list[str]:
    """Top-level module names importable from ``folder``: ``*.py`` files and packages."""
    try:
        entries = list(folder.iterdir())
    except OSError:
        return []
    return sorted({e.stem for e in entries if e.suffix == ".py"}
                  | {e.name for e in entries if (e / "__init__.py").is_file()})


def input_problem(args: argparse.Namespace) -> tuple[str, str] | None:
    """The first bad input ``(argument, reason)`` named by ``args`` (module doc), or None."""
    from vime.utils.data import data_file_problem

    if getattr(args, "prompt_data", None) and getattr(args, "rollout_global_dataset", True):
        problem = data_file_problem(args.prompt_data)
        if problem:
            return "--prompt-data", problem
    for ds in getattr(args, "eval_datasets", None) or []:
        path = getattr(ds, "path", None)
        problem = data_file_problem(path) if path else None
        if problem:
            where = "--eval-config" if getattr(args, "eval_config", None) else \
                "--eval-prompt-data"
            return where, f"eval dataset {ds.name!r}: {problem}"
    checkpoint = getattr(args, "hf_checkpoint", None)
    if checkpoint:
        problem = hf_checkpoint_problem(checkpoint)
        if problem:
            return "--hf-checkpoint", problem
    from vime.ray.auth import auth_problem
    from vime.ray.cluster import ray_address

    problem = auth_problem(args, joining=ray_address(args) is not None)
    if problem:
        return "--ray-auth", problem
    from vime.ray.engine_guard import engine_auth_problem

    engine = engine_auth_problem(args)
    if engine:
        return engine
    for spec in HOOKS.values():
        value = getattr(args, spec.dest, None)
        paths = value if isinstance(value, list) else [value]
        for path in paths:
            if not isinstance(path, str) or not path or path == spec.default:
                continue
            problem = hook_module_problem(path, spec.arg)
            if problem:
                return spec.arg, problem
    return None


def check_inputs(args: argparse.Namespace) -> None:
    """Exit 2 with ``vime train: error: argument --<name>: <reason>`` on the first bad input.

    Raises:
        SystemExit: status 2 (argparse's error, usage line first).
    """
    found = input_problem(args)
    if found is not None:
        from vime.config.parser import get_parser

        get_parser().error(f"argument {found[0]}: {found[1]}")
