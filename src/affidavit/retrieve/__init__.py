"""The retrieve stage."""
