"""The training side: losses, optimiser, the torch trainer (a Ray actor), weight export."""
