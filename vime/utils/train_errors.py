"""What ``vime train`` prints when an error stops the run, and its exit status.

A contract violation: its findings grouped by invariant, field and hook. An error raised in
user code (in the driver or inside a Ray actor): its message and the user's file:line, the
full traceback kept in ``RUN_DIR/train.log`` (:mod:`vime.utils.user_errors`). A refused
checkpoint file, too many failed samples, a hook that does not load on the workers: their one
message. An error with no user frame is vime's own and is raised again.
"""

from __future__ import annotations

import sys
from argparse import Namespace

from vime.contract.errors import ContractError

__all__ = ["report_error"]


def report_error(args: Namespace, exc: Exception) -> int:
    """A contract violation, or an error raised in user code (here or inside a Ray actor):
    print the message, the user's file:line and where the full traceback went
    (``RUN_DIR/train.log``); return 1. A refused checkpoint file (``UnsafeCheckpointError``):
    its one line; return 2. An error with no user frame is vime's: raised again
    (its traceback printed, exit status 1)."""
    from vime.backends.checkpoint import UnsafeCheckpointError
    from vime.ray.preflight import HookPreflightError
    from vime.rollout.failures import HookFailureError
    from vime.utils.user_errors import cause_of, short_report, user_frame, write_traceback

    cause = cause_of(exc)
    if isinstance(cause, UnsafeCheckpointError):
        # a checkpoint file that is not plain data (a planted pickle): refused, never run
        print(f"vime train: {cause}", file=sys.stderr)
        return 2
    if isinstance(cause, (HookFailureError, HookPreflightError)):
        # too many failed samples / a hook that does not load on the workers: the message
        # names the hooks, the errors and the fix (vime/rollout/failures.py, vime/ray/preflight.py)
        print(f"vime train: {cause}", file=sys.stderr)
        return 1
    frame = user_frame(exc)
    if not isinstance(cause, ContractError) and frame is None:
        raise exc
    log = write_traceback(args.run_dir, exc)
    if isinstance(cause, ContractError):
        print(f"vime train: contract violation, stopped before the optimiser step:\n"
              f"{_grouped(cause)}\n  full traceback: {log}", file=sys.stderr)
    else:
        print(f"vime train: error in your code: {short_report(exc, log, frame=frame)}",
              file=sys.stderr)
    return 1


def _grouped(error: ContractError) -> str:
    """``error``'s header line, then one entry per (invariant, field, hook) with the count and
    the first locations (``vime.contract.grouping``); its text as is without findings."""
    from vime.contract.grouping import group_findings

    if not error.violations:
        return str(error)
    first = str(error).splitlines()[0]
    header = "" if first.startswith(error.violations[0].id) else first + "\n"
    return header + "\n".join(g.format() for g in group_findings(error.violations))
