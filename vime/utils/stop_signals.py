"""SIGINT and SIGTERM in ``vime train``: the first stops the run after the current step, a second one (or one during start-up) at once.

The training loop reads :data:`STOP_REQUEST` after each step and sets :data:`PHASE`
``["loop"]`` while it runs; :func:`stop_after_this_step` installs the handlers,
:func:`stop_status` is the exit status of a stop (130 Ctrl-C, 143 SIGTERM).
"""

from __future__ import annotations

import signal
import sys
import threading

__all__ = ["PHASE", "STOP_REQUEST", "STOP_SIGNALS", "Terminated", "stop_after_this_step",
           "stop_status"]


class Terminated(KeyboardInterrupt):
    """A second SIGTERM: stop at once (a ``KeyboardInterrupt``, because Ray's ``ray.get``
    turns any other exception raised by a signal handler into a ``SystemError``)."""


#: The first SIGINT or SIGTERM of this run: ``{"signum": N}``; empty until one arrives.
STOP_REQUEST: dict[str, int] = {}
#: ``{"loop": True}`` once the training loop runs; before that (Ray, the actors and the
#: engines starting, a checkpoint loading) there is nothing to checkpoint, so a signal stops
#: the run at once instead of after a step that has not begun.
PHASE: dict[str, bool] = {"loop": False}
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def stop_after_this_step() -> None:
    """SIGINT/SIGTERM handlers (main thread only): the first signal asks the loop to stop
    after the current step (checkpoint, engines stopped); a second one, or one during
    start-up (:data:`PHASE`), raises ``KeyboardInterrupt``/:class:`Terminated` at once.

    Raising inside ``ray.get`` can leave Ray's driver in a state where the clean-up hangs
    (a CI run hung for 120 s after Ctrl-C), so the first signal only sets
    :data:`STOP_REQUEST`. Installed again after ``ray.init``, whose own SIGTERM handler
    dumps a stack and exits at once, which orphaned vLLM's EngineCore processes."""
    if threading.current_thread() is not threading.main_thread():
        return

    def handler(signum: int, frame: object) -> None:
        if STOP_REQUEST or not PHASE["loop"]:
            STOP_REQUEST.setdefault("signum", signum)
            if not PHASE["loop"]:
                print(f"vime train: {signal.Signals(signum).name} received during start-up: "
                      "stopping now (nothing to checkpoint yet)", file=sys.stderr, flush=True)
            raise Terminated() if signum == signal.SIGTERM else KeyboardInterrupt()
        STOP_REQUEST["signum"] = signum
        print(f"vime train: {signal.Signals(signum).name} received: stopping after this step "
              "(send it again to stop at once)", file=sys.stderr, flush=True)

    for signum in STOP_SIGNALS:
        signal.signal(signum, handler)


def stop_status(terminated: bool) -> int:
    """The exit status of a run stopped by Ctrl-C (130) or SIGTERM (143)."""
    return 128 + signal.SIGTERM if terminated else 130
