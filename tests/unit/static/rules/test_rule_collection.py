"""ALL_RULES is collected by walking vime_lint.static.rules: every concrete static rule class
anywhere in vime_lint is in it (a rule put in a private module, or outside the package, would
silently never run), each once, with one code each."""

from __future__ import annotations

import importlib
import pkgutil

import pytest

import vime_lint
from vime_lint.static._rule import Rule
from vime_lint.static.rules import ALL_RULES

pytestmark = pytest.mark.unit


def _every_rule_class() -> set[type[Rule]]:
    found: set[type[Rule]] = set()
    for info in pkgutil.walk_packages(vime_lint.__path__, "vime_lint."):
        if (info.name.startswith(("vime_lint.lsp", "vime_lint.typecheck"))
                or info.name == "vime_lint.__main__"):
            # the server needs the lsp extra and __main__ runs the CLI (no rules there);
            # vime-lint types' rules are its own registry (vime_lint.typecheck.codes.TYPE_RULES)
            continue
        module = importlib.import_module(info.name)
        for obj in vars(module).values():
            if (isinstance(obj, type) and issubclass(obj, Rule) and obj.__module__ == info.name
                    and getattr(obj, "INVARIANT", None) is not None
                    and obj.INVARIANT.scope == "static"):
                found.add(obj)
    return found


def test_every_static_rule_class_is_collected_once() -> None:
    assert len(set(ALL_RULES)) == len(ALL_RULES)
    missing = _every_rule_class() - set(ALL_RULES)
    assert not missing, f"rules that never run: {sorted(r.__qualname__ for r in missing)}"


def test_rules_are_in_code_order_with_one_code_per_class() -> None:
    codes = [r.code() for r in ALL_RULES]
    assert codes == sorted(codes)
    assert all(r.INVARIANT.scope == "static" for r in ALL_RULES)
