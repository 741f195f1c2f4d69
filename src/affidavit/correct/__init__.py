"""The correct stage."""
