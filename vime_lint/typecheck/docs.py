"""The ``vime-lint types`` section of ``docs/rules.md`` (called by ``rules_page``).

Usage::

    text = types_section()      # "## Type checks: `vime-lint types`\\n\\n..."
"""

from __future__ import annotations

__all__ = ["types_section"]


def types_section() -> str:
    """Markdown: what ``vime-lint types`` does, its codes, then one section per code (headings
    ``### VIM200 `hook-return-type``` so SARIF ``helpUri`` anchors resolve)."""
    from vime_lint.static.rules._docs import rule_anchor, rule_markdown
    from vime_lint.typecheck.codes import TYPE_RULES

    lines = [
        "## Type checks: `vime-lint types`",
        "",
        "`vime-lint types PATH...` finds hooks as `vime-lint rollout` does, gives each hook's "
        "parameters and return the contract's types (from `vime.contract.HOOKS`, the Protocols "
        "of `vime.contract.protocols` and the `Sample` field types) in a temporary copy whose "
        "lines do not move, and runs mypy on it (`check_untyped_defs`, an incremental cache in "
        "`.vime_lint_cache/mypy` at the project root). Helpers of the module that a hook passes "
        "its sample or samples to get the same types (one level). Your own annotations are kept "
        "where they are the contract's type or narrower; wider ones (`Any`, `object`, "
        "`Sample | None`) are replaced by the contract's.",
        "",
        "It needs mypy: `pip install 'vime[types]'`. Output formats, `--select`/`--ignore`, "
        "`per-file-ignores` and `# noqa: VIM201` work as for `vime-lint rollout`; only errors "
        "inside hooks and the helpers they type are reported, each prefixed by the contract "
        "type it came from. The pre-commit hook id is `vime-lint-types` (opt-in).",
        "",
        "| Code | Check | Severity | Invariant |",
        "|---|---|---|---|",
    ]
    for r in TYPE_RULES:
        inv = r.INVARIANT
        lines.append(f"| {inv.id} | [`{r.slug()}`](#{rule_anchor(r)}) | {inv.severity} | "
                     f"{inv.title.replace('|', chr(92) + '|')} |")
    lines.append("")
    for r in TYPE_RULES:
        lines.append(rule_markdown(r, level=3))
    return "\n".join(lines)
