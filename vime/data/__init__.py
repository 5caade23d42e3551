"""Training data: samples -> columns (``batch_builder``) and upstream's newest data-source path."""
