"""The roll-up as it was before it was vectorised (docs/performance.md): the per-sample Python
loops, kept verbatim as the oracle the vectorised code must match bit for bit."""
