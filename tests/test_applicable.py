"""Decoding options that cannot change how a model decodes are refused in one line, by what its
task declares (kernel rule, exact rules, renumbering), never by its name: a user env that declares
the independent-set rules takes every option the built-in MIS task takes."""

from pathlib import Path

import pytest

from graphtransfer.config import Decoding, RunConfig, Runtime
from graphtransfer.errors import UsageError
from graphtransfer.solve.applicable import check_decoding_applies, check_runtime_applies, given_fields

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
DECLARED = RunConfig(env="user_mis:DeclaredMISEnv")  # declares graphtransfer.tasks.independent_set
UNDECLARED = RunConfig(env="user_mis:UserMISEnv")  # declares no rules
CONFIGS = {"mis": RunConfig(task="mis"), "mvc": RunConfig(task="mvc"), "path": RunConfig(task="path"), "declared": DECLARED}
CONFIGS |= {"undeclared": UNDECLARED, "maxcut": RunConfig(task="maxcut")}

# option given -> the configs that take it; every other config refuses it with the message's start
OPTIONS = [
    (Decoding(kernel_every=2), {"mis", "mvc", "declared"}, "--kernel-every: a model of {name} has no kernel rule"),
    (Decoding(reductions=False), {"mis", "mvc", "declared"}, "--no-reductions: a model of {name} has no exact rules"),
    (Decoding(node_order="given"), {"mis", "mvc", "declared"}, "--node-order: a model of {name} solves every graph in the order"),
    (Decoding(kernel_every=0, reductions=False), set(), None),  # refused everywhere: see below
    (Decoding(rollouts=3, seed=2, max_passes=7), set(CONFIGS), None),  # these apply to every model
]


@pytest.fixture(autouse=True)
def user_envs(monkeypatch):
    monkeypatch.syspath_prepend(str(EXAMPLES))


@pytest.mark.parametrize("name", CONFIGS)
@pytest.mark.parametrize(("decoding", "takers", "message"), OPTIONS, ids=[", ".join(given_fields(o[0])) for o in OPTIONS])
def test_each_option_is_taken_where_the_task_declares_what_it_changes_and_refused_elsewhere(name, decoding, takers, message):
    config = CONFIGS[name]
    if name in takers:
        check_decoding_applies(config, decoding)
        return
    with pytest.raises(UsageError) as refused:
        check_decoding_applies(config, decoding)
    text = str(refused.value)
    assert "\n" not in text and text.endswith("; leave it out")
    if message is not None:
        assert text.startswith(message.format(name=config.name))


def test_kernel_every_without_the_exact_rules_is_refused_even_at_its_default():
    """The command line passes the options typed, so a value equal to the default is refused too."""
    with pytest.raises(UsageError, match=r"^--kernel-every shrinks the graph by the exact rules, which --no-reductions turns off"):
        check_decoding_applies(CONFIGS["mis"], Decoding(reductions=False), given=["kernel_every", "reductions"])
    check_decoding_applies(CONFIGS["mis"], Decoding(reductions=False), given=["reductions"])


def test_mixed_precision_is_refused_on_the_cpu_and_taken_on_cuda():
    with pytest.raises(UsageError, match=r"^--mixed-precision autocasts the message passing on CUDA.*; leave it out$"):
        check_runtime_applies(Runtime(mixed_precision=True), "cpu")
    check_runtime_applies(Runtime(mixed_precision=True), "cuda")
    check_runtime_applies(Runtime(), "cpu")
