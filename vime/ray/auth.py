"""Ray's token authentication for a run: on unless ``--ray-auth disabled`` says otherwise.

Usage::

    setup_ray_auth(args, joining=False)   # before ray.init: sets RAY_AUTH_MODE and the token

Ray 2.60's GCS, raylet and worker processes listen on every interface of the machine whatever
node address is given (docs/environment.md); with ``RAY_AUTH_MODE=token`` every connection to
them must carry the cluster's token, so a process without it can neither join nor run a task.
Ray finds the token in ``RAY_AUTH_TOKEN`` (the token itself), else in the file named by
``RAY_AUTH_TOKEN_PATH``, else in ``~/.ray/auth_token`` (``ray get-auth-token --generate``
writes that one). The driver's environment is inherited by the local cluster's raylet and
through it by every actor, so the engines and the trainer use the same token.

- A local cluster (no ``--ray-address``): the token of ``RAY_AUTH_TOKEN`` or
  ``RAY_AUTH_TOKEN_PATH`` when one is set, else a fresh one (256 random bits) written to
  ``<run-dir>/ray_auth_token`` with mode 0600, and ``RAY_AUTH_TOKEN_PATH`` pointed at it.
- A joined cluster (``--ray-address`` / ``RAY_ADDRESS``): the cluster's token, from any of the
  three places above; none is generated (it would not match the cluster's).
- ``--ray-auth disabled``: ``RAY_AUTH_MODE=disabled`` and a warning naming the exposure.
  ``RAY_AUTH_MODE=disabled`` in the environment without the flag is refused: a setting left
  from an old recipe would otherwise open the machine silently.

This module imports only the standard library.
"""

from __future__ import annotations

import os
import secrets
import sys
from argparse import Namespace
from pathlib import Path

from vime.config import arg

__all__ = ["DISABLED_WARNING", "MODE_ENV", "RayAuthError", "TOKEN_ENV", "TOKEN_FILE",
           "TOKEN_PATH_ENV", "auth_problem", "default_token_path", "setup_ray_auth",
           "write_token"]

MODE_ENV = "RAY_AUTH_MODE"
TOKEN_ENV = "RAY_AUTH_TOKEN"
TOKEN_PATH_ENV = "RAY_AUTH_TOKEN_PATH"
#: The per-run token's file name under ``--run-dir``.
TOKEN_FILE = "ray_auth_token"
DISABLED_WARNING = (
    "vime train: WARNING: --ray-auth disabled: Ray's GCS, raylet and workers listen on every "
    "interface of this machine with no authentication; anyone who can reach their ports can "
    "join the cluster and run code as this user. Drop --ray-auth disabled to use a per-run token.")


class RayAuthError(ValueError):
    """Ray's authentication cannot be set up as asked (the message names the fix)."""


def default_token_path() -> Path:
    """``~/.ray/auth_token``: where ``ray get-auth-token --generate`` writes the token."""
    return Path.home() / ".ray" / "auth_token"


def write_token(path: Path) -> str:
    """Write a fresh token (``secrets.token_hex(32)``: 256 bits, the form Ray generates) to
    ``path`` with mode 0600: created under a temporary name with that mode, fsynced, renamed.

    Returns:
        The token.

    Raises:
        OSError: the folder is not writable.
    """
    token = secrets.token_hex(32)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.fchmod(fd, 0o600)
        os.write(fd, token.encode())
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    return token


def setup_ray_auth(args: Namespace, *, joining: bool) -> Path | None:
    """Set ``RAY_AUTH_MODE`` and the token source in ``os.environ`` before ``ray.init``.

    Args:
        args: the run's arguments (``--ray-auth``, ``--run-dir``).
        joining: True when the run joins a running cluster (its token is not generated here).

    Returns:
        The token file the run uses (the per-run one, ``RAY_AUTH_TOKEN_PATH`` or
        ``~/.ray/auth_token``), or None (the token comes from ``RAY_AUTH_TOKEN``, or
        authentication is disabled).

    Raises:
        RayAuthError: ``RAY_AUTH_MODE`` is set to anything but ``token`` without
            ``--ray-auth disabled``; a join with no token anywhere; ``RAY_AUTH_TOKEN_PATH``
            names a file that cannot be read.
    """
    try:
        return _setup(args, joining=joining)
    finally:
        _refresh_ray_config()


def _refresh_ray_config() -> None:
    """Make an already imported Ray read the environment again: its C++ config caches
    ``RAY_AUTH_MODE`` and its token loader the token when ``ray`` is imported (Ray's own
    ``ray._private.authentication.authentication_token_setup`` does the same after setting the
    mode). A no-op before Ray is imported."""
    if "ray" not in sys.modules:
        return
    from ray._raylet import (  # type: ignore[attr-defined]  # compiled, no stubs
        AuthenticationTokenLoader,
        Config,
    )

    Config.initialize("")
    AuthenticationTokenLoader.instance().reset_cache()


def auth_problem(args: Namespace, *, joining: bool) -> str | None:
    """Why Ray's authentication cannot be set up as ``args`` and the environment ask, with the
    fix (one sentence), or None. The one decider: :func:`setup_ray_auth` raises it and
    ``vime.config.inputs`` reports it as a bad ``--ray-auth`` before Ray starts.

    Problems: ``RAY_AUTH_MODE`` set to anything but ``token`` without ``--ray-auth disabled``;
    ``RAY_AUTH_TOKEN_PATH`` naming an empty or unreadable file; a join (``joining``) with no
    token in ``RAY_AUTH_TOKEN``, ``RAY_AUTH_TOKEN_PATH`` or ``~/.ray/auth_token``.
    """
    if arg(args, "ray_auth") == "disabled":
        return None
    env_mode = os.environ.get(MODE_ENV)
    if env_mode is not None and env_mode.lower() != "token":
        return (f"{MODE_ENV}={env_mode} in the environment: vime train runs Ray with token "
                f"authentication; unset {MODE_ENV}, or pass --ray-auth disabled to turn it off "
                "(anyone who reaches this machine's Ray ports could then run code)")
    if os.environ.get(TOKEN_ENV):
        return None
    given = os.environ.get(TOKEN_PATH_ENV)
    if given:
        try:
            empty = not Path(given).read_text().strip()
        except OSError as exc:
            return (f"{TOKEN_PATH_ENV}={given}: cannot read the token "
                    f"({exc.strerror or exc}); point it at a readable file")
        if empty:
            return (f"{TOKEN_PATH_ENV}={given}: the file is empty; write the cluster's token to "
                    "it (ray get-auth-token)")
        return None
    if joining and not default_token_path().is_file():
        return (f"joining a Ray cluster needs its token: set {TOKEN_ENV}=<token> or "
                f"{TOKEN_PATH_ENV}=<file>, or copy the head's ~/.ray/auth_token here (ray "
                "get-auth-token on the head prints it); --ray-auth disabled only for a cluster "
                "started with RAY_AUTH_MODE=disabled")
    return None


def _setup(args: Namespace, *, joining: bool) -> Path | None:
    problem = auth_problem(args, joining=joining)
    if problem is not None:
        raise RayAuthError(problem)
    if arg(args, "ray_auth") == "disabled":
        os.environ[MODE_ENV] = "disabled"
        print(DISABLED_WARNING, file=sys.stderr, flush=True)
        return None
    os.environ[MODE_ENV] = "token"
    if os.environ.get(TOKEN_ENV):
        return None
    given = os.environ.get(TOKEN_PATH_ENV)
    if given:
        return Path(given)
    if joining:
        return default_token_path()
    path = Path(args.run_dir) / TOKEN_FILE
    write_token(path)
    os.environ[TOKEN_PATH_ENV] = str(path)
    return path
