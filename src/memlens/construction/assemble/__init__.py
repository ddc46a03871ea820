"""assemble stage: one history per (question, length) under cross-modal token counting."""
