"""Summary quality: probes on generated sessions (known ground truth), on real sessions (Pi's own in
tests/fixtures, Claude Code's in the external sessions kept beside the checkout, see EXTERNAL.md) and on the authored corpus
(tests/fixtures/corpus), split into development and held-out regions (split.json).

`python -m bench --only summary_quality [--split dev|heldout]` runs it as a benchmark scenario;
`python -m bench.quality` prints the detailed report (every region; failed probes of development
regions only).
"""
