"""Summary quality: probes on generated sessions (known ground truth) and on real Pi sessions.

`python -m bench --only summary_quality` runs it as a benchmark scenario; `python -m bench.quality`
prints the detailed report (every region, every failed probe).
"""
