"""Evaluation layer: the benchmark object, systems under test, judges, reports and tracking.

May use :mod:`memlens.core` and :mod:`memlens.construction` (question-type knowledge); nothing below imports it."""
