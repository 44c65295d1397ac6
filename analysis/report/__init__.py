"""The report: the diagnosis as fields, JSON, text and Parquet."""
