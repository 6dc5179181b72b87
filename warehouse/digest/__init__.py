"""The month's minute digest as one SQL definition (minute_digest.sql) that DuckDB and Spark run.

sla/minute_digest.py computes the same digest in Python and stays the reference the tests compare
this with; the warehouse runs the SQL inside DuckDB so the month's rows never leave the engine.
"""
