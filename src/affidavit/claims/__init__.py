"""The claims stage."""
