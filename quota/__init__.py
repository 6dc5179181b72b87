"""Quota recommendations (pure) and plans as data."""
