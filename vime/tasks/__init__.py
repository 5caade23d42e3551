"""Small, locally generated tasks for demos and tests (no downloads).

- ``vime.tasks.arithmetic``: 2-digit ``+``/``-`` problems, SFT and RL JSONL files.
"""
