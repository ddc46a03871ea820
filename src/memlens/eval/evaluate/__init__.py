"""evaluate stage: run the system under test on every item; append-only, resumable."""
