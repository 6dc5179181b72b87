"""Streamlit pages over the warehouse, read-only: the overview (app.py is the entry point)."""
