"""judge stage and judges: the deterministic typed judge and the LLM judge."""
