"""The composition root: command line, process lifecycle, choice of storage backend."""
