"""Fathom: per-query read depth over a 4-bit bit-plane key store (reference, store, planner)."""
