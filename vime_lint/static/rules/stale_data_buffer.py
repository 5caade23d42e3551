"""VIM033: no ``data_buffer`` on vime's objects: the data source is ``data_source``.

See ``docs/contract.md`` §2 and §6a.
"""

from __future__ import annotations

import libcst as cst

from vime.contract import INVARIANTS
from vime_lint.static._cst import string_value
from vime_lint.static._model import Invalid, Valid
from vime_lint.static._rule import FunctionTracker

__all__ = ["StaleDataBuffer"]


class StaleDataBuffer(FunctionTracker):
    """No ``data_buffer`` on vime's objects: the data source is ``data_source``.

    ## What it does
    Reports attribute access to ``.data_buffer`` (``self.data_buffer``, ``args.data_buffer``)
    unless the object is an instance of the module's own class that assigns that attribute
    (``self.data_buffer = ...`` in a method, a class-level field, also through a base class
    of the module): then the attribute is the user's, not a stale vime API. Also
    ``getattr(obj, "data_buffer")`` without a default (with one, the code expects it may be
    missing). The rollout
    function's parameter of that name is VIM001's.

    ## Why is this bad?
    ``data_buffer`` is the name of an old API; vime's manager and hooks pass and hold a
    ``data_source``. The attribute does not exist on vime's objects and fails with
    ``AttributeError``.

    ## Example
    ```python
    samples = self.data_buffer.get_samples(4)
    ```

    ## Use instead
    ```python
    samples = self.data_source.get_samples(4)
    ```

    ## Fix safety
    No fix: the owner of the attribute may really define one.
    """

    INVARIANT = INVARIANTS["VIM033"]
    ALIASES = ("VIM007",)
    VALID = [
        Valid("self.data_source.get_samples(4)\n"),
        # The user's class assigns it in __init__ and reads it in another method.
        Valid("""
            class Replay:
                def __init__(self, data_buffer):
                    self.data_buffer = data_buffer
                def sample(self, n):
                    return self.data_buffer[:n]
        """),
        # A dataclass field, read through an instance of the class.
        Valid("""
            from dataclasses import dataclass, field
            @dataclass
            class State:
                data_buffer: list = field(default_factory=list)
            def push(x):
                state = State()
                state.data_buffer.append(x)
        """),
        # Assigned by a base class of the module; a parameter annotated with the class.
        Valid("""
            class Base:
                def __init__(self):
                    self.data_buffer = []
            class Child(Base):
                def add(self, x):
                    self.data_buffer.append(x)
            def drain(c: Child):
                return c.data_buffer
        """),
        # Read in a callback nested in a method: `self` is the method's (upstream slime's
        # fully-async worker requeues aborted groups this way).
        Valid("""
            class Worker:
                def __init__(self, data_buffer):
                    self.data_buffer = data_buffer
                def done_cb(self):
                    def _cb(task):
                        self.data_buffer.add_samples([task.result()])
                    return _cb
        """),
        # getattr with a default (probing for the old name); a dict key of that name; a
        # class hook's own attribute set in __init__ and read in __call__.
        Valid("""
            def generate_rollout(args, rollout_id, data_source, evaluation=False):
                source = getattr(args, 'data_buffer', None) or data_source
                return source.get_samples(1)
        """),
        Valid("""
            cfg = {'data_buffer': 4}
            x = cfg['data_buffer']
        """),
        Valid("""
            class Rollout:
                def __init__(self):
                    self.data_buffer = []
                def __call__(self, args, rollout_id, data_source, evaluation=False):
                    return [self.data_buffer.pop() for _ in range(2)]
            generate_rollout = Rollout()
        """),
    ]
    INVALID = [
        Invalid("x = self.data_buffer.get_samples(4)\n", line=1, col=4),
        # getattr without a default; a local alias of args; a class hook's comprehension.
        Invalid("""
            def generate_rollout(args, rollout_id, data_source, evaluation=False):
                return getattr(args, 'data_buffer').get_samples(1)
        """, line=2, col=11),
        Invalid("""
            def generate_rollout(args, rollout_id, data_source, evaluation=False):
                cfg = args
                return cfg.data_buffer
        """, line=3, col=11),
        Invalid("""
            class Rollout:
                def __call__(self, args, rollout_id, data_source, evaluation=False):
                    return [self.data_buffer.pop() for _ in range(2)]
            generate_rollout = Rollout()
        """, line=3, col=16),
        # A class that never assigns it.
        Invalid("""
            class Runner:
                def __init__(self, data_source):
                    self.data_source = data_source
                def step(self):
                    return self.data_buffer.get_samples(1)
        """, line=5, col=15),
        # vime's args, inside a hook.
        Invalid("""
            def generate_rollout(args, rollout_id, data_source, evaluation=False):
                return args.data_buffer
        """, line=2, col=11),
        # A callback nested in a method of a class that never assigns it.
        Invalid("""
            class Worker:
                def __init__(self, data_source):
                    self.data_source = data_source
                def done_cb(self):
                    def _cb(task):
                        self.data_buffer.add_samples([task.result()])
                    return _cb
        """, line=6, col=12),
        # An instance of the user's class that assigns something else.
        Invalid("""
            class Holder:
                def __init__(self):
                    self.items = []
            holder = Holder()
            def f():
                return holder.data_buffer
        """, line=6, col=11),
    ]

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if node.attr.value != "data_buffer":
            return
        cls = self.context.semantic.instance_class(node.value, self.current, self.owner,
                                                   self.functions)
        if cls is not None and self.context.semantic.class_owns(cls, "data_buffer"):
            return
        where = f" (`{cls.name.value}` never assigns it)" if cls is not None else ""
        self.report(node, self.INVARIANT.render(
            problem=f"`.data_buffer` is a stale API{where}; the data source is `data_source`"))

    def visit_Call(self, node: cst.Call) -> None:
        """``getattr(obj, "data_buffer")`` without a default: the same AttributeError."""
        if len(node.args) != 2 or "builtins.getattr" not in self.qualified(node.func) \
                or string_value(node.args[1].value) != "data_buffer":
            return
        obj = node.args[0].value
        cls = self.context.semantic.instance_class(obj, self.current, self.owner,
                                                   self.functions)
        if cls is not None and self.context.semantic.class_owns(cls, "data_buffer"):
            return
        self.report(node, self.INVARIANT.render(
            problem="`getattr(..., 'data_buffer')` reads a stale API (AttributeError); the "
            "data source is `data_source`"))
