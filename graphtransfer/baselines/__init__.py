"""What the tasks' classical baselines share: the exact solvers' result and size guard
(:mod:`graphtransfer.baselines.exact`). Each task's baselines live with it
(:mod:`graphtransfer.tasks`) and are what its env declares (``Task.baselines``, ``Task.exact``):
the fast solvers (for epidemic control, fixed rules), safe on graphs of a million nodes, which eval
runs all of; and the exponential-time solvers for graphs of at most a few hundred nodes, which
return an :class:`ExactSolution` and refuse larger graphs.
"""

from graphtransfer.baselines.exact import ExactSolution

__all__ = ["ExactSolution"]
