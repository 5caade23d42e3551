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
        "`.vime_lint_cache/mypy` at the project root, or under the user's cache folder when the "
        "project folder cannot be written). A run with nothing changed is answered from a "
        "result cache (`vime-lint-results/` in that folder) without starting mypy, with the "
        "same output and exit status: its key is the content of every checked file and of the "
        "user modules they import, vime's hook-API files, the configuration and launch flags, "
        "and the versions of mypy, vime and the linter; `--no-cache` bypasses it. "
        "Every function the samples reach is checked: "
        "helpers a hook passes its sample or samples to (and the helpers those pass them to, "
        "up to four calls deep), in the same module or imported from the user's own package, "
        "and helpers whose own annotations name a contract type (`_fill(sample: Sample)`, "
        "`groups: list[list[Sample]]`); a finding in a helper names the hook that reaches it. "
        "Your own annotations are kept where they are the contract's type or narrower; wider "
        "ones (`Any`, `object`, `Sample | None`) are replaced by the contract's.",
        "",
        "**Errors mean a run-time failure.** A finding is an error only where a contract type "
        "is violated in a way that raises or corrupts training: a tensor, numpy or string "
        "reward, `None` on a path of a hook, a string where token ids go, a list-valued "
        "metric, a `Sample` where a group is expected, an operation the contract type lacks "
        "(`sample.prompt.lower()` when the prompt may be a message list). mypy's own "
        "strictness is VIM204, a warning that is **off by default** (`--extend-select VIM204` "
        "or `extend-select = [\"VIM204\"]` in `[tool.vime_lint]`): an empty list that needs an "
        "annotation, a value read from an untyped container seen as `object`, `None` into a "
        "typed local, an `X | None` used without narrowing where it is not certainly `None`, "
        "a union of modes left unnarrowed (`RolloutFnTrainOutput | RolloutFnEvalOutput` after "
        "`generate_rollout(..., evaluation=evaluation)`, a fan-out group's `Sample | "
        "list[Sample]`), and a third-party API's own types on your values. An attribute that "
        "is no `Sample` field is VIM031 with the words and severity of `vime-lint rollout` (a "
        "store: a warning, an error for a near miss of a field's name; a read that nothing "
        "stores: an error); the stale `.truncated`/`.aborted` flags are VIM032. A rollout "
        "function's bare list of groups or bare dict is VIM200 with the severity "
        "`vime-lint rollout` (VIM003) and the run (VIM101) give it, read from the path the "
        "`return` is on: a warning for the legacy form vime wraps with a DeprecationWarning "
        "(a list on the train path, a dict on the eval path), an error otherwise. A name rebound to another type takes the new one, as "
        "at run time (`for sample in groups: (sample,) = sample`).",
        "",
        "**What mypy reads.** vime's hook-facing modules (`vime.contract.HOOK_API_MODULES`: "
        "`Sample`, the output dataclasses, the data source, the rollout entry points, the "
        "default rollout's `generate`/`generate_and_rm` and state, `http_utils`); every other "
        "vime module, torch, ray, vllm, transformers, the `openai` SDK and the other packages "
        "of `vime_lint.typecheck.run.SKIPPED` are `Any` and never read, slime and miles too "
        "(the hook API under another package name: `vime-lint rollout` reports the import, "
        "VIM012, and their classes are not vime's) (a `torch` stub shipped "
        "with vime-lint keeps `Tensor`, so a tensor reward is still reported). The rollout "
        "entry points are typed by `evaluation` (`@overload`): `generate_rollout(..., "
        "evaluation=False)` is a `RolloutFnTrainOutput`, `evaluation=True` a "
        "`RolloutFnEvalOutput`.",
        "",
        "**Launch-aware.** Like the rollout linter, `types` reads the launch scripts and "
        "configs that name a hook: when every one sets `--apply-chat-template`, or gives a "
        "local `--prompt-data` JSONL file (up to 32 MB, read whole) with a string at the "
        "`--input-key` in every row and no other source of samples (`--eval-prompt-data`, "
        "`--eval-config`, `--data-source-path`, forwarded arguments), the hook's "
        "`sample` has a `prompt` of type `str` (not `str | list[dict[str, Any]]`); when none "
        "sets `--reward-key` (nor `--eval-reward-key`, `--group-rm`) or forwards its "
        "arguments, its `reward` is `float | None`. Only `Sample` parameters are narrowed "
        "(a `list[Sample]` parameter keeps the contract's type), and the helpers they reach "
        "inherit it.",
        "",
        "Each message leads with the contract type, then mypy's sentence "
        "(`...; mypy: Item \"list[dict[str, Any]]\" of ...`); the `help:` line under it is "
        "the fix for that field or value. A clean run prints `All checks "
        "passed!`. It needs mypy: `pip install 'vime[types]'`. Output formats, "
        "`--select`/`--ignore`, `per-file-ignores` and `# noqa: VIM201` work as for "
        "`vime-lint rollout`; only findings inside hooks and the helpers they reach are "
        "reported. The pre-commit hook id is `vime-lint-types`; this repository runs it on "
        "`vime/rollout/` and `examples/`.",
        "",
        "| Code | Check | Severity | Invariant |",
        "|---|---|---|---|",
    ]
    for r in TYPE_RULES:  # VIM031/VIM032 are documented with the rollout rules
        inv = r.INVARIANT
        lines.append(f"| {inv.id} | [`{r.slug()}`](#{rule_anchor(r)}) | {inv.severity} | "
                     f"{inv.title.replace('|', chr(92) + '|')} |")
    lines.append("")
    for r in TYPE_RULES:
        lines.append(rule_markdown(r, level=3))
    return "\n".join(lines)
