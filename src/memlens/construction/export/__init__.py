"""export stage: the official release layout and a Hugging Face Parquet export."""
