"""``python -m vime.agent.worker IN OUT``: one agent run in its own process
(``--agent-function-mode subprocess``).

``IN`` is a pickle of ``(path, args, sample, base_url, api_key, kwargs)``; the worker imports
``path``, runs ``asyncio.run(fn(args, sample, base_url, api_key, **kwargs))`` on a fresh event
loop and writes ``(True, result)`` or ``(False, traceback_text)`` to ``OUT`` as a pickle.
"""

from __future__ import annotations

import asyncio
import pickle
import sys
import traceback


def main(argv: list[str]) -> int:
    """Run one agent call; exit status 0 when a result (or an error) was written."""
    if len(argv) != 2:
        print("usage: python -m vime.agent.worker IN OUT", file=sys.stderr)
        return 2
    with open(argv[0], "rb") as fh:
        path, args, sample, base_url, api_key, kwargs = pickle.load(fh)
    try:
        from vime.utils.misc import load_function

        fn = load_function(path, hook="agent_function_path")
        out = (True, asyncio.run(fn(args, sample, base_url, api_key, **kwargs)))
    except Exception:
        out = (False, traceback.format_exc())
    try:
        payload = pickle.dumps(out)
    except Exception as exc:  # an unpicklable return value
        payload = pickle.dumps((False, f"the agent's return value cannot be sent back: {exc}"))
    with open(argv[1], "wb") as fh:
        fh.write(payload)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
