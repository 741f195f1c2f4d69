"""The certify stage."""
