"""ontology stage: the versioned topic ontology (3 tracks) and its loader."""
