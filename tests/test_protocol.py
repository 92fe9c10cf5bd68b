"""The env interface: what each optional member enables is read in one place, and a member that
could not work is refused when the env is built, naming the member."""

import pytest

from graphtransfer.envs.protocol import GraphEnvProtocol, Head, features_of
from graphtransfer.errors import UsageError
from graphtransfer.graphs import erdos_renyi
from graphtransfer.tasks import Task, independent_set
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


class DeclaresRulesOnly(GraphEnvProtocol):
    """A user's MIS env that declares the task's rules but no partitioned_solve: its observation is its own."""

    rules = independent_set


class OldPartitioned(MISEnv):
    partitioned_solve = True


def test_partitions_for_an_env_that_declares_no_partitioned_solve_is_refused_in_one_line_naming_it():
    task = Task.of(DeclaresRulesOnly)
    assert task.kernel is not None and task.partitioned_solve is None  # the rules' kernel; a part's features are the env's own
    assert str(task.refuse("--partitions", "partitioned_solve")) == (
        "--partitions: the task must declare partitioned_solve (built-in: mis); DeclaresRulesOnly does not, drop --partitions"
    )
    with pytest.raises(UsageError, match=r"OldPartitioned.partitioned_solve is True; declare a graphtransfer.envs.protocol.PartRules"):
        Task.of(OldPartitioned)
