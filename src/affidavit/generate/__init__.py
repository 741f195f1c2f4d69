"""The generate stage."""
