"""``python -m vime``: the ``vime`` console script (:mod:`vime.cli`)."""

from vime.cli import main

raise SystemExit(main())
