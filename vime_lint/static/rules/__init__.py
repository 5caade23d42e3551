"""Every vime-lint rule, one module per rule, collected by walking this package;
:data:`ALL_RULES` in code order.
"""

from __future__ import annotations

import importlib
import pkgutil

from vime_lint.static._rule import Rule

__all__ = ["ALL_RULES", "rules_for_code"]


def _collect() -> list[type[Rule]]:
    """Every concrete ``Rule`` subclass (one with an ``INVARIANT``) defined in a public module
    of this package (private modules, ``_name.py``, hold shared helpers), found by walking the
    package: a new rule module is picked up without a list to edit."""
    found: list[type[Rule]] = []
    for info in pkgutil.iter_modules(__path__):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        found += [obj for obj in vars(module).values()
                  if isinstance(obj, type) and issubclass(obj, Rule)
                  and obj.__module__ == module.__name__
                  and getattr(obj, "INVARIANT", None) is not None]   # bases have no invariant
    return found


#: Every rule class, sorted by code, then by class name.
ALL_RULES: tuple[type[Rule], ...] = tuple(sorted(_collect(), key=lambda r: (r.code(), r.__name__)))


def rules_for_code(code: str) -> list[type[Rule]]:
    """The rules whose code or slug (or former, class-derived name) is ``code``
    (case-insensitive), e.g. ``"VIM001"``; for an
    old code that several rules shared (``"VIM007"``), the rule of that code and those that
    had it."""
    c = code.strip()
    return [r for r in ALL_RULES
            if r.code() == c.upper() or c.lower() in (r.slug(), r.class_slug())
            or c.upper() in r.ALIASES]
