"""Benchmark scenarios; every module here is imported by the runner and registers with @scenario.

Present: `generate` (session generator throughput), `bare_parse` (JSON parsing floor).
Planned by other areas (write them as new modules here, e.g. `open_session.py` calling
compactd.session.store; use `ctx.inputs()` for the cached inputs and `peak_rss=True` for memory).
"""
