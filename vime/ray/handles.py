"""Call the rollout manager or the trainer the same way in process (:class:`Local`) or as a Ray actor (:class:`Remote`).

``handle.call(method, *args)`` runs the method and returns its result; with
``num_returns=N`` a :class:`Remote` returns the N refs at once, and :func:`resolve` fetches
one of them (dropping the error of the others when it fails). ``handle.close()`` shuts the
object down (engines, router).
"""

from __future__ import annotations

import contextlib
import sys
from typing import Any

__all__ = ["Local", "Remote", "resolve"]


class Local:
    """Calls methods on an in-process object the way :class:`Remote` calls an actor."""

    def __init__(self, obj: Any) -> None:
        self.obj = obj

    def call(self, name: str, *a: Any, num_returns: int = 1, **kw: Any) -> Any:
        return getattr(self.obj, name)(*a, **kw)

    def close(self, timeout: float = 60.0) -> None:
        """``shutdown()`` on the object (engines, router)."""
        shutdown = getattr(self.obj, "shutdown", None)
        if callable(shutdown):
            shutdown()


#: The other returns of each multi-return actor call, by ref: fetched (their error dropped) when
#: one of them fails, so that Ray does not log the same error again as an "Unhandled error".
_SIBLINGS: dict[Any, list[Any]] = {}


class Remote:
    """Calls a Ray actor's methods and waits for the result (refs passed through)."""

    def __init__(self, actor: Any) -> None:
        self.actor = actor

    def call(self, name: str, *a: Any, num_returns: int = 1, **kw: Any) -> Any:
        import ray

        method = getattr(self.actor, name)
        if num_returns > 1:
            refs = method.options(num_returns=num_returns).remote(*a, **kw)
            for ref in refs:
                _SIBLINGS[ref] = [r for r in refs if r is not ref]
            return refs
        return ray.get(method.remote(*a, **kw))

    def close(self, timeout: float = 60.0) -> None:
        """``shutdown()`` on the actor (engines, router), then kill it even if it is busy."""
        import ray

        with contextlib.suppress(Exception):  # a busy or dead actor is killed below either way
            ray.get(self.actor.shutdown.remote(), timeout=timeout)
        ray.kill(self.actor)


def resolve(value: Any) -> Any:
    """``ray.get`` for an ``ObjectRef``, else the value itself. When it raises, the other
    returns of the same call (:data:`_SIBLINGS`) are fetched and their error dropped."""
    if "ray" in sys.modules:
        import ray

        if isinstance(value, ray.ObjectRef):
            siblings = _SIBLINGS.pop(value, [])
            for ref in siblings:   # forget the whole call: the refs are not kept alive here
                _SIBLINGS.pop(ref, None)
            try:
                return ray.get(value)
            except Exception:
                for ref in siblings:
                    with contextlib.suppress(Exception):
                        ray.get(ref)
                raise
    return value
