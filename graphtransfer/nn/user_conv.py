"""A user's own PyG ``MessagePassing`` layer, named ``package.module:Class`` (``--conv``).

Like a user env it is code, so it is imported only because the user named it: on the command
line (``--conv package.module:Class``) or in Python (:func:`use_conv`). A model folder whose
config names one never imports it; it loads only once the user has named that layer again
(:func:`check_conv_named`, called as the folder is read).

The class is built as PyG's own layers are, ``Class(in_channels, out_channels)``, and called
``conv(x, edge_index)``; with the env's ``edge_attr`` the extractor adds its mean edge term beside
it, as for sage, gcn and gin. No weight of it may depend on the number of nodes, or transfer
refuses the checkpoint, naming the tensor.
"""

from __future__ import annotations

import importlib
import os
import sys

from torch_geometric.nn import MessagePassing

from graphtransfer.config.schema import CONVS, USER_CONV
from graphtransfer.errors import CheckpointError, UsageError

_NAMED: dict[str, type[MessagePassing]] = {}
"""the layers the user has named in this process, by ``package.module:Class``"""


def use_conv(spec: str | type[MessagePassing]) -> str:
    """Import the layer ``spec`` names (``"package.module:Class"``) or take the class itself, and
    allow models of it to be built and loaded in this process; returns its name as a config
    holds it (``model.conv``). Call it only for code you trust.

    Example::

        graphtransfer.use_conv("mylayers:EdgeGate")
        graphtransfer.predict("runs/edgegate", "big.txt")
    """
    conv: object = spec
    if isinstance(spec, type):
        spec = f"{spec.__module__}:{spec.__qualname__}"
    else:
        conv = _imported(spec)
    if not (isinstance(conv, type) and issubclass(conv, MessagePassing)):
        raise UsageError(f"--conv {spec}: is {conv!r}, not a subclass of torch_geometric.nn.MessagePassing")
    _NAMED[spec] = conv
    return spec


def _imported(spec: str) -> object:
    if not USER_CONV.match(spec):
        raise UsageError(f"--conv {spec!r}: expected one of {', '.join(CONVS)}, or a layer of yours as package.module:Class")
    module_name, _, attribute = spec.partition(":")
    if "" not in sys.path and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())  # as `python -m` does (and --env): the user's modules live here
    try:
        value: object = importlib.import_module(module_name)
        for part in attribute.split("."):
            value = getattr(value, part)
    except (ImportError, AttributeError) as err:
        raise UsageError(f"--conv {spec!r}: cannot import it ({err}); expected 'package.module:Class' importable from here") from None
    return value


def named_conv(spec: str) -> type[MessagePassing]:
    """The class of the user layer ``spec``, named before by :func:`use_conv`; else a one-line error."""
    if spec not in _NAMED:
        raise UsageError(_unnamed(spec))
    return _NAMED[spec]


def check_conv_named(conv: str, where: object) -> None:
    """A model of the user layer ``conv`` loads only once that layer is named (:func:`use_conv`)."""
    if conv not in CONVS and conv not in _NAMED:
        raise CheckpointError(f"{where}: {_unnamed(conv)}")


def _unnamed(spec: str) -> str:
    return (
        f"the model's layer is the user's {spec!r}, and it was not named; loading a model folder never imports code it names, "
        f"so pass --conv {spec} (in Python: graphtransfer.use_conv({spec!r})) if you trust that layer"
    )
