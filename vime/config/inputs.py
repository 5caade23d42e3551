"""Checks of what the arguments name, after parsing: files, folders, hook modules.

Usage::

    problem = input_problem(args)   # ("--prompt-data", "dataset 'x.jsonl' does not exist ...")
    check_inputs(args)              # what validate_args runs last: exit 2 on the first problem

A bad input found here ends ``vime train`` with one line, ``vime train: error: argument
--<name>: <reason>`` (after the usage line), and exit status 2, before Ray or an engine starts;
found later it would be a traceback inside a Ray actor. Checked: ``--prompt-data`` and every
eval dataset (exists, a readable file, ``.jsonl`` or ``.parquet``, a well-formed
``@[start:end]``, UTF-8 text, every row with the input key and, when set, the label key:
``vime.utils.data.dataset_rows_problem``), ``--hf-checkpoint`` (a local folder holds ``config.json``), and every hook
``--*-path`` set to something else than its default (its module is found on ``sys.path`` with
the working directory first, as the actors see it; found, not imported), the folders the run
writes and the checkpoint it resumes from (``vime.config.paths.path_problem``: ``--run-dir``,
``--save``, ``--tensorboard-dir``, ``--save-debug-rollout-data``, ``--load``,
``--load-debug-rollout-data``), Ray's authentication (``vime.ray.auth.auth_problem``:
``RAY_AUTH_MODE``, the token's file, a join's token), and the engines'
(``vime.ray.engine_guard.engine_auth_problem``: ``--vllm-host``, ``--vllm-api-key``,
``--engine-auth disabled`` beyond the loopback).
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
    """Why hook ``path`` (``pkg.mod.fn``) cannot be found, or None: its module is not on
    ``sys.path`` (with a PYTHONPATH hint), or the module's source binds no top-level ``fn``
    (named with its file and the close names; read with ``ast``, not run). Imports the parent
    packages only, as ``importlib.util.find_spec`` does."""
    module, _, attr = path.rpartition(".")
    if not module or not attr:
        return f"{path!r} is not a dotted path; expected package.module.function"
    cwd = os.getcwd()
    added = cwd not in sys.path
    if added:
        sys.path.insert(0, cwd)
    try:
        try:
            loaded = sys.modules.get(module)
            spec = None if loaded is not None else importlib.util.find_spec(module)
            found = loaded is not None or spec is not None
        except (ImportError, ValueError):
            found = False
        missing = None if found else _missing_submodule(path)
    except Exception as exc:  # a parent package raised while importing
        return f"importing the package of {path!r} raised {type(exc).__name__}: {exc}"
    finally:
        if added:
            sys.path.remove(cwd)
    if missing is not None:
        return f"{path!r}: {missing}"
    if found:
        names = (set(dir(loaded)) if loaded is not None
                 else _top_level_names(getattr(spec, "origin", None)))
        if names is None or attr in names:
            return None
        near = difflib.get_close_matches(attr, sorted(n for n in names if not
                                                      n.startswith("__")), n=3)
        where = getattr(spec, "origin", None) or getattr(loaded, "__file__", None) or module
        hint = f"; close names: {', '.join(near)}" if near else ""
        return (f"{path!r}: module {module!r} ({where}) has no attribute {attr!r}{hint}; "
                "check the name after the last dot")
    top = module.split(".")[0]
    near = difflib.get_close_matches(top, _local_modules(Path(cwd)), n=1)
    hint = f" (did you mean {near[0]!r}?)" if near else ""
    return (f"{path!r}: module {module!r} not found from {cwd}{hint}; check the spelling, "
            f"run from the folder that holds {top!r}, or add that folder to PYTHONPATH")


def _missing_submodule(path: str) -> str | None:
    """For hook ``path`` (``pkg.mod.fn``) whose module is not found though its top-level
    package is: which part is missing, in the package found last (``"package 'mine'
    (/x/mine) has no module 'nope'; its modules: rewards, utils"``), suggesting the path with
    a sibling module of a close name when there is one; None when the top-level package itself
    is not found."""
    import pkgutil

    parts = path.split(".")[:-1]
    parent = None
    for i in range(1, len(parts)):
        prefix = ".".join(parts[:i])
        try:
            spec = importlib.util.find_spec(prefix)
        except Exception:  # noqa: BLE001 - a parent that raises: the caller's find_spec said it
            spec = None
        if spec is None:
            break
        parent = (i, prefix, spec)
    if parent is None:
        return None
    i, prefix, spec = parent
    name = parts[i]
    if spec.submodule_search_locations is None:
        return (f"{prefix!r} ({spec.origin}) is a module, not a package, so it has no module "
                f"{name!r}; check the dotted path (package.module.function)")
    folders = list(spec.submodule_search_locations)
    names = sorted({m.name for m in pkgutil.iter_modules(folders)})
    near = difflib.get_close_matches(name, names, n=1)
    fixed = ".".join([*parts[:i], near[0], *path.split(".")[i + 1:]]) if near else ""
    hint = f" (did you mean {fixed!r}?)" if near else ""
    listing = (f"; its modules: {', '.join(names[:12])}" + (", ..." if len(names) > 12 else "")
               if names else "; it holds no modules")
    return (f"package {prefix!r} ({folders[0] if folders else prefix}) has no module "
            f"{name!r}{hint}{listing}")


def _top_level_names(origin: str | None) -> set[str] | None:
    """Names a Python source file binds at its top level (functions, classes, assignments,
    imports), read with ``ast`` and never run; None when that cannot tell (not a ``.py`` file,
    unreadable or invalid source, a ``*`` import, a module-level ``__getattr__``, or a use of
    ``globals()``)."""
    import ast

    if not origin or not origin.endswith(".py"):
        return None
    try:
        tree = ast.parse(Path(origin).read_bytes())
    except (OSError, SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "globals":
            return None
    stack: list[ast.stmt] = list(tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                if alias.name == "*":
                    return None
                names.add(alias.asname or alias.name.split(".")[0])
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                names.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
        elif (isinstance(node, (ast.If, ast.Try, ast.With, ast.For, ast.While))
              or type(node).__name__ == "TryStar"):
            for field in ("body", "orelse", "finalbody", "handlers"):
                for child in getattr(node, field, []) or []:
                    stack.extend(child.body if isinstance(child, ast.ExceptHandler) else [child])
    if "__getattr__" in names:
        return None
    return names


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
    from vime.utils.data import data_file_problem, dataset_rows_problem

    if getattr(args, "prompt_data", None) and getattr(args, "rollout_global_dataset", True):
        problem = data_file_problem(args.prompt_data) or dataset_rows_problem(
            args.prompt_data, input_key=getattr(args, "input_key", None) or "input",
            label_key=getattr(args, "label_key", None))
        if problem:
            return "--prompt-data", problem
    for ds in getattr(args, "eval_datasets", None) or []:
        path = getattr(ds, "path", None)
        problem = (data_file_problem(path) or dataset_rows_problem(
            path, input_key=getattr(ds, "input_key", None) or "input",
            label_key=getattr(ds, "label_key", None))) if path else None
        if problem:
            where = "--eval-config" if getattr(args, "eval_config", None) else \
                "--eval-prompt-data"
            return where, f"eval dataset {ds.name!r}: {problem}"
    checkpoint = getattr(args, "hf_checkpoint", None)
    if checkpoint:
        problem = hf_checkpoint_problem(checkpoint)
        if problem:
            return "--hf-checkpoint", problem
    from vime.config.paths import path_problem

    found = path_problem(args)
    if found is not None:
        return found
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
