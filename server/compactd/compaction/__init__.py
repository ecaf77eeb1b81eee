"""compaction layer: the pure algorithms of compaction and branch summarization (no I/O).

tokens          chars/4 estimates, provider usage, threshold (spec §5)
exact_tokens    tiktoken counts beside the estimate, per-entry cache (D-22)
cut_points      valid cut points, turn starts, findCutPoint (§6, D-3, D-14)
prepare         prepareCompaction (§7)
serialize       serializeConversation (§9)
file_ops        file-operation tracking (§11)
prompts         prompts and prompt assembly (§8, §10, §12.3, D-8)
branch          branch entry collection and budgeted preparation (§12.1–12.3)
prune           tool-output pruning plan (§13.1)
request_limits  output-token limits of summarization requests (S-6)
reports         the JSON shapes shared by the CLI and the daemon
jscompat        JavaScript string/JSON semantics the numbers depend on (E-3..E-5)
overflow        context-overflow detection (§14.4)
"""
