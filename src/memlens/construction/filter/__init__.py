"""filter stage: image validation, near-duplicate removal and relevance channels."""
