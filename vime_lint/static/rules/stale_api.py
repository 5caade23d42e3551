"""Stale ``Sample`` status API and the old ``data_buffer`` attribute: VIM007.

:class:`StatusString` reports ``status`` set from or compared with strings,
:class:`StaleSampleFlag` the old ``.truncated``/``.aborted`` booleans, and
:class:`StaleDataBuffer` the old ``data_buffer`` attribute. Status values come from
``vime.contract.STATUS_VALUES``; nothing is copied here.

See ``docs/contract.md`` §2 and §6a.
"""

from __future__ import annotations

import libcst as cst

from vime.contract import INVARIANTS
from vime_lint.static._cst import string_value
from vime_lint.static._model import Invalid, Valid
from vime_lint.static._rule import Fix, FunctionTracker
from vime_lint.static.rules._samples import (
    SAMPLE_IMPORT,
    STATUS_BY_VALUE,
    SampleTracker,
)

__all__ = ["StaleDataBuffer", "StaleSampleFlag", "StatusString"]


def _status_member(value: str) -> str | None:
    return STATUS_BY_VALUE.get(value.lower())


class StatusString(SampleTracker):
    """``status`` is set from and compared with ``Sample.Status`` members, not strings.

    ## What it does
    Reports ``x.status = "completed"``, ``x.status == "aborted"`` and
    ``Sample(status="truncated")``. A receiver not known to hold a sample is left alone when
    it holds an instance of the module's own class, or when the module defines a class with a
    ``status`` attribute of its own (an ``Order`` whose status is ``"pending"``).

    ## Why is this bad?
    ``Sample.Status`` is an ``Enum``: a string never equals a member, so status checks are
    always false, and ``to_dict`` needs ``.value`` (failure kind: "to_dict needs .value").

    ## Example
    ```python
    sample.status = "truncated"
    ```

    ## Use instead
    ```python
    sample.status = Sample.Status.TRUNCATED
    ```

    ## Fix safety
    Replacing a known status string with its ``Sample.Status`` member is safe when ``Sample``
    is imported in the module; no fix is offered otherwise.
    """

    INVARIANT = INVARIANTS["VIM007"]
    VALID = [
        Valid(SAMPLE_IMPORT + "def f(sample):\n    sample.status = Sample.Status.TRUNCATED\n"),
        Valid("response.status = 'ok'\n"),
        Valid("if resp.status == 200:\n    pass\n"),
        # The module's own class has a `status` (an order, a job): its strings are its own.
        Valid("from dataclasses import dataclass\n@dataclass\nclass Order:\n    status: str\n"
              "def cancel(orders, oid):\n    order = orders.get(oid)\n"
              "    if order.status != 'pending':\n        raise ValueError(oid)\n"
              "    order.status = 'completed'\n"),
        Valid("class Job:\n    def __init__(self):\n        self.status = 'pending'\n"
              "    def done(self):\n        return self.status == 'completed'\n"),
    ]
    INVALID = [
        Invalid(SAMPLE_IMPORT + "def f(sample):\n    sample.status = 'truncated'\n", line=3, col=4,
                fixed=SAMPLE_IMPORT + "def f(sample):\n"
                "    sample.status = Sample.Status.TRUNCATED\n"),
        Invalid("def f(x):\n    if x.status == 'aborted':\n        pass\n", line=2, col=7),
        # ... but a receiver known to hold a sample is still reported next to such a class.
        Invalid(SAMPLE_IMPORT + "class Job:\n    status = 'pending'\n"
                "def f(sample: Sample):\n    return sample.status == 'aborted'\n",
                line=5, col=11, fixed=SAMPLE_IMPORT + "class Job:\n    status = 'pending'\n"
                "def f(sample: Sample):\n    return sample.status == Sample.Status.ABORTED\n"),
        Invalid(SAMPLE_IMPORT + "s = Sample(prompt='p', status='completed')\n", line=2, col=4,
                fixed=SAMPLE_IMPORT + "s = Sample(prompt='p', status=Sample.Status.COMPLETED)\n"),
    ]

    def _member(self, node: cst.BaseExpression) -> cst.BaseExpression | None:
        value = string_value(node)
        member = _status_member(value) if value is not None else None
        alias = self.context.semantic.imported_as("Sample")
        if member is None or alias is None:
            return None
        return cst.parse_expression(f"{alias}.Status.{member}")

    def _report(self, node: cst.CSTNode, literal: cst.BaseExpression, what: str) -> None:
        repl = self._member(literal)
        value = string_value(literal)
        fix = Fix(f"Use `Sample.Status.{_status_member(value or '')}`", True,
                  ((literal, repl),)) if repl is not None else None
        self.report(node, self.INVARIANT.render(
            problem=f"{what} the string {value!r} instead of a `Sample.Status` member"), fix=fix)

    def _other_status(self, receiver: cst.BaseExpression) -> bool:
        """``receiver.status`` may well be another class's: ``receiver`` is not known to hold a
        sample and the module defines a class of its own with a ``status`` attribute (an
        ``Order`` dataclass, a tool-call record), or ``receiver`` holds an instance of one."""
        if self.is_sample(receiver):
            return False
        semantic = self.context.semantic
        if semantic.instance_class(receiver, self.current, self.owner) is not None:
            return True
        return any(isinstance(d, cst.ClassDef) and semantic.class_owns(d, "status")
                   for d in semantic.definitions.values())

    def visit_Assign(self, node: cst.Assign) -> None:
        super().visit_Assign(node)
        value = string_value(node.value)
        if value is None:
            return
        for t in node.targets:
            tgt = t.target
            if isinstance(tgt, cst.Attribute) and tgt.attr.value == "status" and (
                    self.is_sample(tgt.value) or (_status_member(value) is not None
                                                  and not self._other_status(tgt.value))):
                self._report(node, node.value, "`status` is set to")

    def visit_Comparison(self, node: cst.Comparison) -> None:
        left = node.left
        if not (isinstance(left, cst.Attribute) and left.attr.value == "status"):
            return
        if self._other_status(left.value):
            return
        for comp in node.comparisons:
            value = string_value(comp.comparator)
            if value is not None and _status_member(value) is not None \
                    and isinstance(comp.operator, (cst.Equal, cst.NotEqual)):
                self._report(node, comp.comparator, "`status` is compared with")

    def visit_Call(self, node: cst.Call) -> None:
        if not self.context.semantic.refers_to(node.func, "Sample"):
            return
        for a in node.args:
            if a.keyword is not None and a.keyword.value == "status" \
                    and string_value(a.value) is not None:
                self._report(node, a.value, "`status` is built from")


class StaleSampleFlag(SampleTracker):
    """No ``.truncated`` / ``.aborted`` booleans on samples: read ``status``.

    ## What it does
    Reports reads and writes of ``.truncated`` or ``.aborted`` on a name holding a sample.

    ## Why is this bad?
    These are fields of an old API. ``Sample`` accepts the attribute, so writing it raises
    nothing, but nothing reads it: the truncation never reaches the training data, which
    exports ``truncated`` from ``status == TRUNCATED`` only.

    ## Example
    ```python
    if sample.truncated:
        ...
    ```

    ## Use instead
    ```python
    if sample.status == Sample.Status.TRUNCATED:
        ...
    ```

    ## Fix safety
    No fix: a write needs a different statement than a read.
    """

    INVARIANT = INVARIANTS["VIM032"]
    ALIASES = ("VIM007",)
    VALID = [
        Valid("def f(sample):\n    return sample.status\n"),
        Valid("def f(output):\n    return output.truncated\n"),
        # another library's iter_samples (by qualified name, not by spelling): its rows
        Valid("from mylib import iter_samples\ndef f(data):\n"
              "    for row in iter_samples(data):\n        row.truncated = True\n"),
        Valid("import mylib as ml\ndef f(data):\n"
              "    for row in ml.iter_samples(data):\n        print(row.aborted)\n"),
        Valid("from mylib import walk as iter_samples\ndef f(data):\n"
              "    for row in iter_samples(data):\n        print(row.truncated)\n"),
    ]
    INVALID = [
        Invalid("def f(sample):\n    if sample.truncated:\n        pass\n", line=2, col=7),
        Invalid("def f(group):\n    for s in group:\n        s.aborted = True\n", line=3, col=8),
        # vime's iter_samples under other names
        Invalid("from vime.rollout.base_types import iter_samples as leaves\ndef f(data):\n"
                "    for row in leaves(data):\n        row.truncated = True\n", line=4, col=8),
        Invalid("import vime.rollout.base_types as bt\ndef f(data):\n"
                "    for row in bt.iter_samples(data):\n        print(row.aborted)\n",
                line=4, col=14),
        Invalid("from vime.rollout import base_types\ndef f(data):\n"
                "    for row in base_types.iter_samples(data):\n"
                "        print(row.truncated)\n", line=4, col=14),
    ]

    def visit_Attribute(self, node: cst.Attribute) -> None:
        attr = node.attr.value
        if attr in ("truncated", "aborted") and self.is_sample(node.value):
            member = "TRUNCATED" if attr == "truncated" else "ABORTED"
            self.report(node, self.INVARIANT.render(
                problem=f"`.{attr}` is a stale Sample API; use `status == "
                f"Sample.Status.{member}`"))


class StaleDataBuffer(FunctionTracker):
    """No ``data_buffer`` on vime's objects: the data source is ``data_source``.

    ## What it does
    Reports attribute access to ``.data_buffer`` (``self.data_buffer``, ``args.data_buffer``)
    unless the object is an instance of the module's own class that assigns that attribute
    (``self.data_buffer = ...`` in a method, a class-level field, also through a base class
    of the module): then the attribute is the user's, not a stale vime API. The rollout
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
        Valid("class Replay:\n    def __init__(self, data_buffer):\n"
              "        self.data_buffer = data_buffer\n"
              "    def sample(self, n):\n        return self.data_buffer[:n]\n"),
        # A dataclass field, read through an instance of the class.
        Valid("from dataclasses import dataclass, field\n@dataclass\nclass State:\n"
              "    data_buffer: list = field(default_factory=list)\n"
              "def push(x):\n    state = State()\n    state.data_buffer.append(x)\n"),
        # Assigned by a base class of the module; a parameter annotated with the class.
        Valid("class Base:\n    def __init__(self):\n        self.data_buffer = []\n"
              "class Child(Base):\n    def add(self, x):\n        self.data_buffer.append(x)\n"
              "def drain(c: Child):\n    return c.data_buffer\n"),
        # Read in a callback nested in a method: `self` is the method's (upstream slime's
        # fully-async worker requeues aborted groups this way).
        Valid("class Worker:\n    def __init__(self, data_buffer):\n"
              "        self.data_buffer = data_buffer\n"
              "    def done_cb(self):\n        def _cb(task):\n"
              "            self.data_buffer.add_samples([task.result()])\n        return _cb\n"),
    ]
    INVALID = [
        Invalid("x = self.data_buffer.get_samples(4)\n", line=1, col=4),
        # A class that never assigns it.
        Invalid("class Runner:\n    def __init__(self, data_source):\n"
                "        self.data_source = data_source\n"
                "    def step(self):\n        return self.data_buffer.get_samples(1)\n",
                line=5, col=15),
        # vime's args, inside a hook.
        Invalid("def generate_rollout(args, rollout_id, data_source, evaluation=False):\n"
                "    return args.data_buffer\n", line=2, col=11),
        # A callback nested in a method of a class that never assigns it.
        Invalid("class Worker:\n    def __init__(self, data_source):\n"
                "        self.data_source = data_source\n"
                "    def done_cb(self):\n        def _cb(task):\n"
                "            self.data_buffer.add_samples([task.result()])\n        return _cb\n",
                line=6, col=12),
        # An instance of the user's class that assigns something else.
        Invalid("class Holder:\n    def __init__(self):\n        self.items = []\n"
                "holder = Holder()\ndef f():\n    return holder.data_buffer\n",
                line=6, col=11),
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
