"""Memory agents: the paper's agent systems and a hybrid pixel-retrieval agent, as
:class:`~memlens.eval.systems.base.Model` subclasses (``kind: agent``, one YAML file each in
``conf/model/``). See :mod:`memlens.eval.agents.runtime` for the system type and
:mod:`memlens.eval.agents.view` for what an agent is given."""
