"""The memory layer shared by memory agents: input adapters (what an image becomes in a memory),
retrieval over a history (BM25, dense text, image embeddings, fusion) and the offline retrieval and
storage-fidelity diagnostics (the ``diagnose`` stage)."""
