"""The buffering spike (DESIGN §5): how many bytes each dialect pair must hold, per key order and size.

Run ``python -m spike`` from the repository root; it writes ``spike/REPORT.md``,
``spike/held_vs_size.png`` and ``spike/results.json``.
"""
