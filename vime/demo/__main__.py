"""``python -m vime.demo`` (what ``make demo`` runs): the demo's command line."""

import sys

from vime.demo.cli import main

if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
