"""Systems under test behind one interface (:class:`memlens.eval.systems.base.Model`): baselines and LVLM backends."""
