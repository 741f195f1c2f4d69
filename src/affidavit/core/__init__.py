"""Core types, errors and settings shared by every stage."""
