"""The audit stage."""
