"""The server stage."""
