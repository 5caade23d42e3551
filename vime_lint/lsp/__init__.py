"""``vime-lint server``: vime-lint's findings, fixes and rule texts in the editor, over the
Language Server Protocol (stdio). Needs the ``lsp`` extra (``pygls``, ``lsprotocol``)."""
