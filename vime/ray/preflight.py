"""Checks before any engine starts: every configured hook imports and passes the load-time
signature check inside a Ray worker with the run's runtime environment, and hooks that the
chosen rollout function never calls are named.

Usage::

    preflight_hooks(args, env_vars={"VIME_DRIVER_CWD": os.getcwd()})   # raises HookPreflightError
    for message in inert_hook_warnings(args):
        warnings.warn(message)

A hook importable on the driver (its folder on the driver's ``sys.path`` only) but not on the
workers fails here in seconds, with the path, the error and the worker's ``sys.path``, instead
of inside the rollout manager's constructor after Ray has started it (verl-project/verl#2680).
"""

from __future__ import annotations

import os
import sys
from argparse import Namespace
from typing import Any

from vime.config import arg
from vime.contract.hooks import HOOKS

__all__ = ["DRIVER_CWD_ENV", "HookPreflightError", "check_hooks_here", "driver_cwd_on_path",
           "hook_paths", "inert_hook_warnings", "preflight_hooks"]

#: The environment variable that carries the driver's working directory to the workers.
DRIVER_CWD_ENV = "VIME_DRIVER_CWD"
#: Seconds the preflight task may take (a fresh worker starts in a few seconds).
PREFLIGHT_TIMEOUT_S = 120.0


class HookPreflightError(RuntimeError):
    """A configured hook does not import or load inside a Ray worker."""


def driver_cwd_on_path() -> None:
    """Put ``$VIME_DRIVER_CWD`` first on ``sys.path`` (the workers' view of the driver's
    directory), as the rollout manager actor does."""
    cwd = os.environ.get(DRIVER_CWD_ENV)
    if cwd and cwd not in sys.path:
        sys.path.insert(0, cwd)


def hook_paths(args: Namespace) -> list[tuple[str, str]]:
    """``(dest, dotted path)`` of every configured hook of ``HOOKS`` (defaults included; a
    ``multiple`` hook gives one pair per path)."""
    out: list[tuple[str, str]] = []
    for dest in HOOKS:
        value = getattr(args, dest, None)
        if not value:
            continue
        for path in (value if isinstance(value, (list, tuple)) else [value]):
            out.append((dest, str(path)))
    return out


def check_hooks_here(args: Namespace, paths: list[tuple[str, str]]) -> dict[str, Any]:
    """Load every ``(dest, path)`` here with ``load_function`` (import + VIM100).

    Returns:
        ``{"problems": [{"arg", "path", "error"}], "sys_path": [...], "cwd": str}``.
    """
    from vime.utils.misc import load_function

    driver_cwd_on_path()
    group_rm = bool(arg(args, "group_rm"))
    problems = []
    for dest, path in paths:
        kw = {"group_rm": group_rm} if dest == "custom_rm_path" else {}
        try:
            load_function(path, hook=dest, **kw)
        except Exception as exc:
            problems.append({"arg": HOOKS[dest].arg, "path": path,
                             "error": f"{type(exc).__name__}: "
                             + " | ".join(line.strip() for line in str(exc).splitlines()[:4])[:600]})
    return {"problems": problems, "sys_path": list(sys.path), "cwd": os.getcwd()}


def _remote_check(args: Namespace, paths: list[tuple[str, str]]) -> dict[str, Any]:
    return check_hooks_here(args, paths)


def preflight_hooks(args: Namespace, *, env_vars: dict[str, str],
                    timeout: float = PREFLIGHT_TIMEOUT_S) -> None:
    """Run :func:`check_hooks_here` in a Ray worker with ``runtime_env={"env_vars":
    env_vars}`` (``ray.init`` must have run).

    Raises:
        HookPreflightError: a hook did not load there (names the argument, the path, the error,
            the worker's working directory and ``sys.path``) or the check did not finish within
            ``timeout`` seconds.
    """
    import ray

    paths = hook_paths(args)
    task = ray.remote(num_cpus=0)(_remote_check).options(runtime_env={"env_vars": env_vars})
    ref = task.remote(args, paths)
    try:
        result = ray.get(ref, timeout=timeout)
    except ray.exceptions.GetTimeoutError:
        ray.cancel(ref, force=True)
        raise HookPreflightError(f"hook preflight: the check in a Ray worker did not finish "
                                 f"within {timeout:.0f} s (is the cluster out of workers?)") from None
    if result["problems"]:
        lines = ["hook preflight: these hooks do not load inside a Ray worker (where the rollout "
                 "runs), with the run's runtime environment:"]
        for p in result["problems"]:
            lines.append(f"  {p['arg']} {p['path']}: {p['error']}")
        lines.append(f"  worker cwd: {result['cwd']}")
        lines.append("  worker sys.path: " + os.pathsep.join(result["sys_path"]))
        lines.append("  fix: put the module's folder on PYTHONPATH before starting vime (or "
                     "run vime from that folder); a sys.path change in the driver does not "
                     "reach the workers")
        raise HookPreflightError("\n".join(lines))


#: Default-rollout functions whose mention in a rollout module means it runs the default
#: generate / reward path (and so calls the hooks below).
_DEFAULT_PATH_NAMES = ("generate_and_rm", "generate_and_rm_group", "generate_rollout_async",
                       "vllm_rollout", "vime.rollout.vllm")
_REWARD_NAMES = ("async_rm", "batched_async_rm")
#: Arguments that only the default generate / reward path reads.
_DEFAULT_PATH_ARGS = ("custom_generate_function_path", "rollout_sample_hook_path",
                      "dynamic_sampling_filter_path", "rollout_all_samples_process_path",
                      "custom_generate_timeout", "rm_timeout", "rollout_watchdog_secs")


def _option(dest: str) -> str:
    return HOOKS[dest].arg if dest in HOOKS else "--" + dest.replace("_", "-")


def inert_hook_warnings(args: Namespace) -> list[str]:
    """Messages for hooks and flags that are set but that the chosen rollout function never
    calls: the default-path hooks (custom generate, sample hooks, dynamic filter, all-samples
    hook, the timeouts, the watchdog) with a ``--rollout-function-path`` whose module does not
    name the default rollout's functions, ``--custom-rm-path`` when it names no reward function
    either, and ``--custom-generate-timeout`` without ``--custom-generate-function-path``.
    A heuristic on the module's source text (a warning, never an error)."""
    import importlib
    import inspect

    out: list[str] = []
    if arg(args, "custom_generate_timeout") and not arg(args, "custom_generate_function_path"):
        out.append("--custom-generate-timeout is set but --custom-generate-function-path is "
                   "not: the timeout limits only a custom generate function (the built-in one "
                   "has --rollout-engine-retry-secs)")
    path = str(getattr(args, "rollout_function_path", "") or "")
    if path == HOOKS["rollout_function_path"].default or "." not in path:
        return out
    try:
        source = inspect.getsource(importlib.import_module(path.rsplit(".", 1)[0]))
    except Exception:   # not importable here: load_hooks reports it
        return out
    default_path = any(name in source for name in _DEFAULT_PATH_NAMES)
    unused = [] if default_path else [d for d in _DEFAULT_PATH_ARGS if arg(args, d)]
    if (not default_path and arg(args, "custom_rm_path")
            and not any(name in source for name in _REWARD_NAMES)):
        unused.append("custom_rm_path")
    for dest in unused:
        out.append(f"{_option(dest)} is set but --rollout-function-path {path} never runs "
                   "vime's default generate/reward path (its module names none of "
                   f"{', '.join(_DEFAULT_PATH_NAMES)}): {_option(dest)} has no effect; call "
                   "the default path from your rollout or drop the argument")
    return out
