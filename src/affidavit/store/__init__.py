"""The store stage."""
