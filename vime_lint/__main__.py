"""``python -m vime_lint``: the ``vime-lint`` command line."""

import sys

from vime_lint.cli import main

sys.exit(main())
