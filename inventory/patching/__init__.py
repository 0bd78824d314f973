"""Patch status of each node's driver stack (status.py, pure), the SLA per severity, and the
rollout plan (rollout.py, pure)."""
