"""rpc layer."""
