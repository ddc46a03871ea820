"""validate stage: the benchmark's validity gates."""
