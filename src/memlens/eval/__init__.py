"""Evaluation layer: the benchmark object, systems under test, judges, reports and tracking.

May use :mod:`memlens.core` and :mod:`memlens.build` (question-type knowledge); nothing below imports it."""
