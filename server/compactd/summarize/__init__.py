"""summarize layer."""
