"""Which Ray cluster a run uses: a local one started for the run, or a running one it joins.

Usage::

    init_ray(args)          # --ray-address ADDR (or RAY_ADDRESS) joins; else a local cluster

A local cluster gets every core of this machine (``num_cpus``); a joined cluster keeps the
resources its nodes registered with (Ray refuses ``num_cpus`` when connecting). Ray 2.60's
own processes listen on all interfaces whichever node address is given (docs/environment.md),
so both run with Ray's token authentication (:func:`vime.ray.auth.setup_ray_auth`: a per-run
token for a local cluster, the cluster's own for a join) unless ``--ray-auth disabled``.
The engines' API key is put in the environment here too
(:func:`vime.ray.engine_guard.setup_engine_auth`), before the cluster starts.
"""

from __future__ import annotations

import os
from argparse import Namespace

from vime.config import arg

__all__ = ["init_ray", "ray_address"]


def ray_address(args: Namespace) -> str | None:
    """``--ray-address``, else the ``RAY_ADDRESS`` environment variable, else None (local)."""
    return arg(args, "ray_address") or os.environ.get("RAY_ADDRESS") or None


def init_ray(args: Namespace) -> str | None:
    """Start or join Ray once per process (a no-op when Ray is already initialised).

    Returns:
        The address joined, or None for a local cluster started here.

    Raises:
        ConnectionError: no Ray cluster answers at the address (Ray's own message, with the
            flag that gave the address and the fix), or it refused the token.
        vime.ray.auth.RayAuthError: the authentication asked for cannot be set up.
    """
    import ray

    from vime.ray.auth import setup_ray_auth
    from vime.ray.engine_guard import setup_engine_auth
    from vime.ray.reaper import DRIVER_ENV, RUN_ID_ENV

    if ray.is_initialized():
        return ray_address(args)
    address = ray_address(args)
    setup_ray_auth(args, joining=address is not None)
    setup_engine_auth(args)   # the engines' key, inherited by every actor of a local cluster
    if address is None:
        # address="local": a new cluster for this run. A bare ray.init() joins any cluster
        # already running on the machine (Ray's /tmp/ray/ray_current_cluster), and then
        # refuses num_cpus; measured with a `ray start --head` beside the run.
        ray.init(address="local", include_dashboard=False, log_to_driver=True,
                 num_cpus=os.cpu_count() or 1)
        return None
    source = "--ray-address" if arg(args, "ray_address") else "RAY_ADDRESS"
    try:
        # a joined cluster's actors have their node's environment: the run's marker and
        # driver go to every worker of this job through its runtime_env (vime.ray.reaper)
        marks = {k: os.environ[k] for k in (RUN_ID_ENV, DRIVER_ENV) if os.environ.get(k)}
        ray.init(address=address, log_to_driver=True,
                 runtime_env={"env_vars": marks} if marks else None)
    except ray.exceptions.AuthenticationError as exc:
        raise ConnectionError(
            f"{source}={address}: the cluster refused this process's Ray token ({exc}); use "
            "the head's token (RAY_AUTH_TOKEN, RAY_AUTH_TOKEN_PATH or ~/.ray/auth_token)"
        ) from exc
    except ConnectionError as exc:
        raise ConnectionError(
            f"{source}={address}: no Ray cluster answers there ({exc}); start one with `ray "
            f"start --head --port PORT` or drop {source} to start a local cluster") from exc
    return address
