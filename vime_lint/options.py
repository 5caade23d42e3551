"""Command-line pieces shared by ``vime-lint``'s subcommands (``rollout``, ``types``): the output
formats and the parsing of code lists. Standard library only (imported at start-up).

Usage::

    p.add_argument("--select", type=codes, default=None)   # "vim0,VIM101" -> ["VIM0", "VIM101"]
    p.add_argument("--output-format", choices=FORMATS, default="concise")
"""

from __future__ import annotations

__all__ = ["FORMATS", "codes"]

#: The ``--output-format`` choices (rendered by ``vime_lint.static._output.render``).
FORMATS = ("concise", "full", "json", "github", "sarif")


def codes(value: str) -> list[str]:
    """A comma-separated ``--select``/``--ignore`` value as upper-case codes or prefixes, empty
    items dropped: ``"vim0, VIM101,"`` -> ``["VIM0", "VIM101"]``."""
    return [v.strip().upper() for v in value.split(",") if v.strip()]
