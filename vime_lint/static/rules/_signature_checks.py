"""What the signature rules (VIM001, VIM004) share: the hooks a launch binds, the judgement of
``vime.contract.check_signature`` over ``Param`` tuples read from the CST (the same function
that ``load_function(..., hook=)`` runs at load time, VIM100), and the fixes that rename a
parameter or give it its default.
"""

from __future__ import annotations

import libcst as cst

from vime.contract import check_signature
from vime.contract.hooks import HookSpec
from vime_lint.static._model import ROLLOUT_DESTS, HookBinding
from vime_lint.static._rule import Fix, Rule
from vime_lint.static.analysis import HookTarget, Semantic

__all__ = ["ROLLOUT_DESTS", "_check", "_default_fix", "_hook_targets", "_rename_fix", "_Rename"]



class _Rename(cst.CSTTransformer):
    """Rename a local name in a function (parameters and uses), not attributes or keywords."""

    def __init__(self, old: str, new: str) -> None:
        super().__init__()
        self.old, self.new = old, new
        self.depth = 0

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        self.depth += 1
        if self.depth == 1:
            return True
        names = {p.name.value for p in (*node.params.params, *node.params.posonly_params,
                                        *node.params.kwonly_params)}
        return self.old not in names

    def leave_FunctionDef(self, original_node: cst.FunctionDef,
                          updated_node: cst.FunctionDef) -> cst.FunctionDef:
        self.depth -= 1
        if self.depth == 0:
            return updated_node.with_changes(name=original_node.name)
        return updated_node

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return self.old not in {p.name.value for p in node.params.params}

    def leave_Name(self, original_node: cst.Name, updated_node: cst.Name) -> cst.Name:
        return updated_node.with_changes(value=self.new) if updated_node.value == self.old \
            else updated_node

    def leave_Attribute(self, original_node: cst.Attribute,
                        updated_node: cst.Attribute) -> cst.Attribute:
        return updated_node.with_changes(attr=original_node.attr)

    def leave_Arg(self, original_node: cst.Arg, updated_node: cst.Arg) -> cst.Arg:
        return updated_node.with_changes(keyword=original_node.keyword)

    def leave_ImportAlias(self, original_node: cst.ImportAlias,
                          updated_node: cst.ImportAlias) -> cst.ImportAlias:
        return original_node


def _rename_fix(semantic: Semantic, fn: cst.FunctionDef, old: str, new: str) -> Fix | None:
    if semantic.mentions(fn, new):
        return None  # the new name is taken in this function: a rename would change meaning
    renamed = fn.visit(_Rename(old, new))
    assert isinstance(renamed, cst.FunctionDef)
    return Fix(f"Rename `{old}` to `{new}`", True, ((fn, renamed),))


def _default_fix(fn: cst.FunctionDef, name: str, default: str) -> Fix | None:
    params = list(fn.params.params)
    for i, p in enumerate(params):
        if p.name.value == name and p.default is None:
            if any(q.default is None for q in params[i + 1:]):
                return None  # a default here would need defaults after it too
            new = p.with_changes(default=cst.parse_expression(default),
                                 equal=cst.AssignEqual(cst.SimpleWhitespace(""),
                                                       cst.SimpleWhitespace("")))
            return Fix(f"Add the default `{name}={default}`", True, ((p, new),))
    return None


def _check(rule: Rule, target: HookTarget, binding: HookBinding, spec: HookSpec,
           invariant: str) -> None:
    """Report each ``check_signature`` violation of the code ``binding`` runs."""
    fn = target.function
    name = binding.function
    via = f" ({target.via})" if target.via else ""
    for v in check_signature(list(target.params), target.is_async, spec, where=name,
                             invariant=invariant):
        fix: Fix | None = None
        if isinstance(fn, cst.FunctionDef) and not target.via:
            for old, new in spec.renames.items():
                if f"`{old}`: did you mean `{new}`" in v.message:
                    fix = _rename_fix(rule.context.semantic, fn, old, new)
            for pname, default in spec.param_defaults.items():
                if f"`{pname}` without a default" in v.message:
                    fix = _default_fix(fn, pname, default)
        severity, note = v.severity, ""
        if binding.loose and severity == "error":
            severity, note = "warning", binding.loose_note()
        rule.report(target.node, v.message + via + note, severity=severity, fix_hint=v.fix,
                    fix=fix)


def _hook_targets(rule: Rule, rollout: bool) -> list[tuple[HookBinding, HookTarget]]:
    """(first binding, target) of each hook name of the file, rollout/eval functions or the
    others; names whose code the module does not show are left out."""
    out = []
    for name, bindings in rule.context.hooks.items():
        mine = [b for b in bindings if (b.spec.dest in ROLLOUT_DESTS) == rollout]
        if not mine:
            continue
        b = mine[0]
        target = rule.context.semantic.target(name, class_hook=b.spec.kind == "class")
        if target is not None and target.function is not None:
            out.append((b, target))
    return out
