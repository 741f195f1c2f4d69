"""The testing stage."""
