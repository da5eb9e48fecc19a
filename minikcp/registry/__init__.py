"""Generic REST semantics on storage with a strategy per kind; the only user of storage."""
