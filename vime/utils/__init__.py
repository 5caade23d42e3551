"""Small shared helpers: ``Sample`` (``types.py``), datasets, hook loading, masks, HTTP, logging."""
