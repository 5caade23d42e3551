"""The contract's types for each hook, as annotation text, read from ``vime.contract``.

Parameter names come from :class:`vime.contract.HookSpec` (``HOOKS`` and ``GROUP_RM_SPEC``),
their types and the return type from the hook's typed Protocol in ``vime.contract.protocols``
(``HookSpec.protocol``), and ``Sample`` field types from ``vime.contract.SAMPLE_FIELDS``. The
names these annotations use (``Sample``, ``DataSource``, ``Namespace``, ...) are imported from
where ``vime/contract/protocols.py`` imports them, so nothing here lists a type by hand.

Usage::

    types = hook_types(HOOKS["custom_rm_path"])
    types.params["sample"]          # "Sample"
    types.returns                   # "float | dict[str, Any]"
    aliased("Sample | list[Sample]")   # ("_vime_t_Sample | list[_vime_t_Sample]", {"Sample"})
    import_lines({"Sample"})        # ["from vime.utils.types import Sample as _vime_t_Sample"]

Where a launch fixes a field's type (text prompts, a numeric reward), :data:`LAUNCH_FIELDS`
gives the narrower type and :func:`launch_sample` the name of the ``Sample`` subclass that
carries it.
"""

from __future__ import annotations

import ast
import inspect
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from types import MappingProxyType

from vime.contract import FIELDS_BY_NAME, HookSpec
from vime.contract import protocols as _protocols

__all__ = ["ALIAS_PREFIX", "LAUNCH_FIELDS", "WIDE_TYPES", "HookTypes", "aliased", "field_hint",
           "hook_types", "import_lines", "launch_sample", "type_sources"]

#: Prefix of the names the analysed copy imports the contract's types under (so that they
#: never clash with the user's own names).
ALIAS_PREFIX = "_vime_t_"
#: Annotations wider than any contract type: the contract's replaces them.
WIDE_TYPES = frozenset({"Any", "object"})


@dataclass(frozen=True, slots=True)
class HookTypes:
    """The contract's annotations of one hook (source text, unaliased)."""

    #: The Protocol's name, e.g. ``"RewardFunction"``.
    protocol: str
    #: Parameter name -> annotation text, in call order (``self`` excluded).
    params: MappingProxyType[str, str]
    #: The return annotation text (for a class hook: what calling the class gives).
    returns: str


@cache
def type_sources() -> MappingProxyType[str, str]:
    """``{name: module}`` for every name ``vime/contract/protocols.py`` imports (``Sample`` ->
    ``vime.utils.types``), read from that file's ``from ... import`` statements.

    Raises:
        OSError: the protocols module's source cannot be read.
    """
    source = Path(inspect.getfile(_protocols)).read_text(encoding="utf-8")
    out: dict[str, str] = {}
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                out[alias.asname or alias.name] = node.module
    return MappingProxyType(out)


def hook_types(spec: HookSpec) -> HookTypes:
    """The annotations of ``spec``'s Protocol ``__call__``, keyed by the spec's parameter names.

    Raises:
        LookupError: the spec names no Protocol, or its Protocol's parameters differ from
            ``spec.params`` (the contract is inconsistent; a contract test guards this).
    """
    return _hook_types(spec.arg, spec.protocol, spec.params)


@cache
def _hook_types(arg: str, protocol: str, names: tuple[str, ...]) -> HookTypes:
    proto = getattr(_protocols, protocol, None) if protocol else None
    if proto is None:
        raise LookupError(f"{arg}: no Protocol `{protocol}` in vime.contract.protocols")
    sig = inspect.signature(proto.__call__)
    params = {n: p.annotation for n, p in sig.parameters.items() if n != "self"}
    if list(params) != list(names):
        raise LookupError(f"{arg}: Protocol `{protocol}` takes {list(params)}, the hook spec "
                          f"{list(names)}")
    text = {n: a if isinstance(a, str) else getattr(a, "__name__", str(a))
            for n, a in params.items()}
    ret = sig.return_annotation
    return HookTypes(protocol, MappingProxyType(text),
                     ret if isinstance(ret, str) else getattr(ret, "__name__", str(ret)))


class _Rename(ast.NodeTransformer):
    def __init__(self, known: MappingProxyType[str, str]) -> None:
        self.known = known
        self.used: set[str] = set()

    def visit_Name(self, node: ast.Name) -> ast.Name:
        if node.id in self.known:
            self.used.add(node.id)
            return ast.copy_location(ast.Name(ALIAS_PREFIX + node.id, node.ctx), node)
        return node


def aliased(annotation: str) -> tuple[str, frozenset[str]]:
    """``annotation`` with the contract's names replaced by their aliases, and those names.

    Raises:
        SyntaxError: ``annotation`` is not an expression.
    """
    renamer = _Rename(type_sources())
    tree = renamer.visit(ast.parse(annotation, mode="eval"))
    return ast.unparse(tree), frozenset(renamer.used)


def import_lines(names: frozenset[str] | set[str]) -> list[str]:
    """One ``from module import name as _vime_t_name`` line per name, sorted."""
    sources = type_sources()
    return [f"from {sources[n]} import {n} as {ALIAS_PREFIX}{n}" for n in sorted(names)]


def field_hint(name: str) -> str | None:
    """The type hint text of ``Sample.<name>`` (``"str | list[dict[str, Any]]"``), or None."""
    spec = FIELDS_BY_NAME.get(name)
    return spec.hint if spec is not None else None


#: Launch-aware field types (``annotate(launch_types=...)``): kind -> (field, type, why). A
#: hook whose launches say so gets a ``Sample`` subclass with these fields narrowed, defined in
#: the copy's tail (``_vime_t_Sample_text_prompt``).
LAUNCH_FIELDS: Mapping[str, tuple[str, str, str]] = {
    "text-prompt": ("prompt", "str", "the launch's prompts are text (--apply-chat-template, "
                                     "or a string in every row of its --prompt-data)"),
    "scalar-reward": ("reward", "float | None",
                      "no --reward-key in the launch: a reward is a number"),
}


def launch_sample(kinds: frozenset[str]) -> str:
    """The name of the copy's ``Sample`` subclass for a set of launch kinds."""
    return f"{ALIAS_PREFIX}Sample_" + "_".join(sorted(kinds)).replace("-", "_")
