"""MIS's actions and node statuses, shared by its env, its device passes and the partitioned solve."""

EXCLUDE, INCLUDE, DEFER = 0, 1, 2
"""a node's actions: leave the set, join it, wait"""
UNDECIDED, IN_SET, OUT = 0, 1, 2
"""a node's status in an episode"""
NUM_FEATURES = 6
"""the width of an MIS observation's node features (:class:`graphtransfer.tasks.mis.env.MISEnv`)"""
