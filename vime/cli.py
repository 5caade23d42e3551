"""The ``vime`` console script: ``vime train ...``, ``vime make-tiny-model OUT_DIR``,
``vime model prepare NAME DIR``, ``vime demo``,
``vime report RUN_DIR``.

Each subcommand lives in its own module and is imported only when used, so ``vime --help``
starts without torch, Ray or vLLM.
"""

from __future__ import annotations

import importlib
import os
import sys

from vime.supervisor import SUPERVISED_ENV, supervise

__all__ = ["main"]

#: subcommand -> (module with ``main(argv) -> int``, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "train": ("vime.train", "run RL or SFT training (see `vime train --help`)"),
    "make-tiny-model": ("vime.utils.tiny_model", "build a tiny Qwen2 model + tokenizer locally"),
    "model": ("vime.models.cli", "prepare a pretrained model that ships in a package "
                                 "(`vime model list`)"),
    "demo": ("vime.demo.cli", "the end-to-end demo that `make demo` runs"),
    "report": ("vime.report.html", "write RUN_DIR/report.html: a run's health and why each "
                                   "sample did (not) train"),
}


def _usage() -> str:
    lines = ["usage: vime COMMAND [ARGS...]", "",
             "exit status: 0 done, 1 an error in the run, 2 bad arguments or inputs (each "
             "command's --help says more)", "", "commands:"]
    lines += [f"  {name:<16} {help_}" for name, (_, help_) in COMMANDS.items()]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Dispatch ``argv[0]`` to its module's ``main(argv[1:])``; exit 2 on an unknown command."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(_usage())
        return 0 if argv else 2
    if argv[0] == "--version":
        from vime import __version__

        print(f"vime {__version__}")
        return 0
    entry = COMMANDS.get(argv[0])
    if entry is None:
        print(f"vime: error: unknown command {argv[0]!r}\n\n{_usage()}", file=sys.stderr)
        return 2
    if argv[0] == "train" and not os.environ.get(SUPERVISED_ENV):
        # the driver in a session of its own (vime.supervisor): a signal to this process
        # group reaches it once, and its Ray cluster and engines not at all
        return supervise(argv)
    module = importlib.import_module(entry[0])
    return int(module.main(argv[1:]) or 0)


if __name__ == "__main__":
    raise SystemExit(main())
