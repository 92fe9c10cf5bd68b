"""The env interface: what each optional member enables is read in one place, and a member that
could not work is refused when the env is built, naming the member."""

import pytest

from graphtransfer.envs.protocol import GraphEnvProtocol, Head, features_of
from graphtransfer.errors import UsageError
from graphtransfer.graphs import erdos_renyi
from graphtransfer.tasks.mis.env import MISEnv
from graphtransfer.tasks.mvc.env import MVCEnv

GRAPHS = [erdos_renyi(12, 3.0, 0)]


def test_built_in_tasks_declare_what_they_enable():
    mis, mvc = features_of(MISEnv(GRAPHS)), features_of(MVCEnv(GRAPHS))
    assert mis.head is Head.NODE_WISE and mis.patient and mis.inference_horizon == 256 and mis.step_many is None
    assert mvc.head is Head.NODE_CHOICE and not mvc.patient and mvc.step_many is not None and mvc.action_masks is not None
    assert mvc.sense == "min" and mis.sense == "max"
    assert mvc.covers and not mis.covers
    assert mis.exact_actions is not None and mvc.exact_actions is None
    assert isinstance(MISEnv(GRAPHS), GraphEnvProtocol)


class OnlyCommit(MISEnv):
    defer_action = None


class ExactWithoutActions(MISEnv):
    commit_action = defer_action = None


class Sideways(MISEnv):
    sense = "up"


class OddHead(MISEnv):
    head = "hyperedge-wise"


class VagueCover(MVCEnv):
    covers = "yes"


class CoverWithoutSteps(MISEnv):
    covers = True


class NodeWiseCover(MISEnv):
    covers = True

    def step_many(self, nodes):
        return self.step(nodes)


@pytest.mark.parametrize(
    ("env_class", "message"),
    [
        (OnlyCommit, "OnlyCommit declares only one of commit_action and defer_action"),
        (ExactWithoutActions, "ExactWithoutActions.exact_actions needs commit_action and defer_action beside it"),
        (Sideways, "Sideways.sense is 'up'; declare 'max' or 'min'"),
        (OddHead, "OddHead.head is 'hyperedge-wise'; declare one of node-wise, node-choice, edge-wise, edge-choice, graph-level"),
        (VagueCover, "VagueCover.covers is 'yes'; declare True only beside a step_many method"),
        (CoverWithoutSteps, "CoverWithoutSteps.covers is True; declare True only beside a step_many method"),
        (NodeWiseCover, "NodeWiseCover.covers is True but its head is node-wise; covers applies to node choice"),
    ],
)
def test_a_member_that_could_not_work_is_named(env_class, message):
    with pytest.raises(UsageError, match=message):
        features_of(env_class(GRAPHS))
