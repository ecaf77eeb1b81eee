"""Benchmark scenarios; every module here is imported by the runner and registers with @scenario.

bare_parse (JSON parsing floor), generate (session generator), open_session (Session.open vs the
bare parse, peak RSS / size), session_views (context / tree / prepareCompaction on the leaf),
stats_incremental (tokenStats cold and after one append), exact_tokens (our counting vs raw
tiktoken), daemon (round trips idle and while compacting, cancel latency, tokenStats through the
daemon; a real `compactd serve` against tests/support/fake_openai.py), daemon_tree (the side panel's
first screen of `session/tree`, a page, every node), compact_fixture (the real
Pi fixture compacted end to end with the embedded summarizer), summary_quality (probe scores per
category for the embedded summarizer, a configured model, Pi's stored summaries and two guards;
see bench/quality).
"""
