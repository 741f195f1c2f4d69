"""The policy stage."""
