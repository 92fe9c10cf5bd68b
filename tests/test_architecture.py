"""The package's shape: one folder per stage, imports only downwards, no cycle, and the one-of-each
mechanisms (loader, memory reader, atomic writer, env construction) in one place each.

Imports are read from the source (every ``import`` statement, also those inside functions: a
deferred import that hides a cycle is still a cycle), so nothing here depends on import order.
"""

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "graphtransfer"
# bottom to top; a module may import its own stage or a lower one
STAGES = [
    ("graphtransfer.errors", "graphtransfer.io", "graphtransfer.config", "graphtransfer.process"),
    ("graphtransfer.graphs",),
    ("graphtransfer.envs",),
    ("graphtransfer.nn",),
    ("graphtransfer.baselines",),
    ("graphtransfer.tasks",),  # the registry, env construction and one folder per built-in task
    ("graphtransfer.checkpoint", "graphtransfer.zoo"),
    ("graphtransfer.solve",),
    ("graphtransfer.training",),
    # transfer evaluates zero-shot (solve) and fine-tunes or adapts (training); export, its sibling, saves an SB3 zip
    ("graphtransfer.transferring", "graphtransfer.export"),
    ("graphtransfer.reporting",),
    ("graphtransfer.cli",),
]


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def absolute_module(node: ast.ImportFrom, importer: str, is_package: bool) -> str:
    """The module a ``from ... import`` names, with a relative one (``from ..solve``) resolved."""
    if node.level == 0:
        return node.module or ""
    base = importer.split(".")
    base = base if is_package else base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def imported_by_name(node: ast.AST) -> str | None:
    """The module an ``importlib.import_module("...")`` or ``__import__("...")`` call names, if a constant."""
    if not isinstance(node, ast.Call) or not node.args or not isinstance(node.args[0], ast.Constant):
        return None
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
    return node.args[0].value if name in ("import_module", "__import__") and isinstance(node.args[0].value, str) else None


def imports_of(path: Path, known: set[str]) -> set[str]:
    """The package's modules that ``path`` imports anywhere in its body: ``import``, ``from ... import``
    (relative ones resolved) and ``importlib.import_module`` / ``__import__`` of a constant name."""
    importer = module_name(path)
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            module = absolute_module(node, importer, path.name == "__init__.py")
            names = [module] + [f"{module}.{alias.name}" for alias in node.names]
        elif imported_by_name(node):
            names = [imported_by_name(node)]
        else:
            continue
        found |= {name for name in names if name in known}
    return found


def stage_of(module: str) -> int:
    for rank, prefixes in enumerate(STAGES):
        if any(module == prefix or module.startswith(prefix + ".") for prefix in prefixes):
            return rank
    raise AssertionError(f"{module} belongs to no stage; add its folder to STAGES in the order it is imported")


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    found = modules()
    known = set(found)
    return {name: imports_of(path, known) - {name} for name, path in found.items() if name != "graphtransfer"}


def test_every_module_belongs_to_a_stage(graph):
    for module in graph:
        stage_of(module)


def test_no_module_imports_a_higher_stage(graph):
    upward = [f"{a} -> {b}" for a, targets in graph.items() for b in targets if b != "graphtransfer" and stage_of(b) > stage_of(a)]
    assert not upward, "imports that run back up: " + ", ".join(sorted(upward))


def test_there_is_no_import_cycle(graph):
    edges = {a: {b for b in targets if b in graph} for a, targets in graph.items()}
    state: dict[str, int] = {}

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(edges[node]):
            if state.get(nxt) == 1:
                cycle = path[path.index(nxt) :] + [nxt] if nxt in path else [node, nxt]
                raise AssertionError("import cycle: " + " -> ".join(cycle))
            if nxt not in state:
                visit(nxt, [*path, nxt])
        state[node] = 2

    for start in sorted(edges):
        if start not in state:
            visit(start, [start])


def test_no_stage_imports_the_facade(graph):
    """``graphtransfer/__init__.py`` re-exports every stage; a stage importing from it (``from
    graphtransfer import train``) would reach up through it, an arrow no other check sees."""
    facade = [a for a, targets in graph.items() if "graphtransfer" in targets]
    assert not facade, "modules importing the package's facade instead of the stage: " + ", ".join(sorted(facade))


def facade_exports() -> dict[str, tuple[str, str]]:
    """The facade's public names: ``_EXPORTS`` in ``graphtransfer/__init__.py``, read from the source."""
    for node in ast.parse((PACKAGE / "__init__.py").read_text()).body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None) == "_EXPORTS":
            return ast.literal_eval(node.value)
    raise AssertionError("graphtransfer/__init__.py defines no _EXPORTS")


def test_no_module_is_named_like_a_public_name():
    """Importing ``graphtransfer.transfer`` as a module would set the facade's ``transfer`` to that
    module, so a module or folder named like a public function hides the function once anything imports it."""
    shadowing = sorted(m for m in modules() if m.count(".") == 1 and m.split(".")[1] in facade_exports())
    assert not shadowing, f"modules named like public names of graphtransfer: {shadowing}"


def test_each_public_name_is_the_name_of_what_it_exports():
    """``graphtransfer.evaluate`` is a function named ``evaluate``: its help, tracebacks and the API
    reference show the name a user called, and each exported module exists."""
    exports = facade_exports()
    renamed = sorted(f"{name} -> {module}.{attribute}" for name, (module, attribute) in exports.items() if name != attribute)
    assert not renamed, f"public names that export something named otherwise: {renamed}"
    missing = sorted(module for module, _ in exports.values() if module not in modules())
    assert not missing, f"exported from modules that do not exist: {missing}"


def test_nothing_imports_the_cli(graph):
    assert not [
        a
        for a, targets in graph.items()
        if not a.startswith("graphtransfer.cli") and any(t.startswith("graphtransfer.cli") for t in targets)
    ]


def definitions(name: str) -> list[str]:
    """The modules that define a top-level function ``name``."""
    return sorted(
        module
        for module, path in modules().items()
        for node in ast.parse(path.read_text()).body
        if isinstance(node, ast.FunctionDef) and node.name == name
    )


@pytest.mark.parametrize(
    ("function", "home"),
    [
        ("policy_for_graphs", "graphtransfer.solve.loading"),  # the one loader
        ("available_bytes", "graphtransfer.solve.memory"),  # the one available-memory reader
        ("write_atomically", "graphtransfer.io"),  # the one atomic writer
        ("make_env", "graphtransfer.tasks.factory"),  # every env construction
        ("run_env", "graphtransfer.tasks.factory"),
        ("inference_env", "graphtransfer.tasks.factory"),
    ],
)
def test_one_of_each_mechanism(function, home):
    assert definitions(function) == [home]


@pytest.mark.parametrize(
    ("marker", "home"),
    [
        ("/proc/meminfo", "graphtransfer.solve.memory"),  # the one available-memory reader, whatever its name
        ("safetensors.torch", "graphtransfer.checkpoint"),  # the one reader and writer of weight files
        ("memory.max", "graphtransfer.solve.memory"),  # cgroup limits
    ],
)
def test_one_of_each_mechanism_by_what_it_touches(marker, home):
    """A second loader or memory reader under another name still has to touch the same file or library."""
    touching = sorted(module for module, path in modules().items() if marker in path.read_text())
    assert touching == [home], f"{marker!r} is used outside {home}: {touching}"


def test_envs_are_probed_for_optional_members_in_one_place_only():
    """Outside the protocol's adapter, no module asks an env whether it has a member."""
    optional = {"solution", "active_nodes", "action_masks", "step_many", "commit_action", "defer_action", "inference_horizon", "sense"}
    offenders = []
    for module, path in modules().items():
        if module == "graphtransfer.envs.protocol":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) in ("hasattr", "getattr") and len(node.args) >= 2:
                name = node.args[1]
                if isinstance(name, ast.Constant) and name.value in optional:
                    offenders.append(f"{module}: {node.func.id}(..., {name.value!r})")
    assert not offenders, offenders


@pytest.mark.parametrize("args", [[], ["--help"], ["predict", "--help"]], ids=["import", "help", "predict-help"])
def test_the_command_line_starts_without_numpy_torch_pyg_sb3_or_scipy_spatial(args):
    """--help, tasks and graphs stay light: the heavy libraries load inside the commands that use them
    (numpy with the graphs commands, made on first use). Checked on the modules loaded, not on a time."""
    import subprocess
    import sys

    heavy = ("numpy", "torch", "torch_geometric", "stable_baselines3", "scipy.spatial", "matplotlib")
    code = (
        "import sys, graphtransfer, graphtransfer.cli\n"
        "if sys.argv[1:]:\n"
        "    sys.argv[0] = 'graphtransfer'\n"
        "    try:\n"
        "        graphtransfer.cli.main()\n"
        "    except SystemExit:\n"
        "        pass\n"
        f"print(' '.join(m for m in {heavy!r} if m in sys.modules), file=sys.stderr)"
    )
    result = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=60, check=True)
    assert result.stderr.strip() == ""
    assert ("Usage: graphtransfer" in result.stdout) == bool(args)


def forwarded_keywords(path: Path) -> list[str]:
    """Where ``path`` takes or passes keyword arguments it does not name: ``def f(**options)`` and
    ``g(**options)`` (a dict literal's ``{**obs}`` builds a value and is not one)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) and node.args.kwarg:
            found.append(f"{path.name}:{node.lineno}: def ...(**{node.args.kwarg.arg})")
        if isinstance(node, ast.Call):
            found += [f"{path.name}:{node.lineno}: ...(**{ast.unparse(k.value)})" for k in node.keywords if k.arg is None]
    return found


def test_solving_takes_its_parameters_typed_never_as_keyword_dicts():
    """Decoding and runtime settings travel down solve/ as Decoding and Runtime objects, built once
    where a call comes in: no function there takes ``**options`` or passes a dict on as keywords."""
    offenders = [site for path in sorted((PACKAGE / "solve").rglob("*.py")) for site in forwarded_keywords(path)]
    assert not offenders, offenders


TASK_NAMES = ("mis", "mvc", "mvc-weighted", "maxcut", "epidemic", "matching", "path")
TASK_FOLDERS = ("mis", "mvc", "maxcut", "epidemic", "matching", "path")


def names_a_task(source: str, module: str) -> list[str]:
    """Where ``source`` (the code of ``module``, outside graphtransfer/tasks/) names a task: compares
    something with a task-name literal (``task == "mis"``, ``name in ("mis", "mvc")``), checks an
    env's class (``type(env) is MISEnv``), or imports a task's own module (``graphtransfer.tasks.mis``
    and below; the registry ``graphtransfer.tasks`` and ``graphtransfer.tasks.factory`` are for everyone)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            for side in [node.left, *node.comparators]:
                literals = side.elts if isinstance(side, (ast.Tuple, ast.List, ast.Set)) else [side]
                named = [v.value for v in literals if isinstance(v, ast.Constant) and v.value in TASK_NAMES]
                found += [f"{module}:{node.lineno}: compares with {name!r}" for name in named]
            sides = [node.left, *node.comparators]
            if (
                any(isinstance(op, (ast.Is, ast.IsNot)) for op in node.ops)
                and any(isinstance(side, ast.Call) and getattr(side.func, "id", None) == "type" for side in sides)
                and any(ast.unparse(side).endswith("Env") for side in sides)
            ):
                found.append(f"{module}:{node.lineno}: checks an env's type")
        elif isinstance(node, ast.Import):
            found += [f"{module}:{node.lineno}: imports {alias.name}" for alias in node.names if _is_task_module(alias.name)]
        elif isinstance(node, ast.ImportFrom):
            target = absolute_module(node, module, False)
            names = [target] + [f"{target}.{alias.name}" for alias in node.names]
            found += [f"{module}:{node.lineno}: imports {name}" for name in names if _is_task_module(name)][:1]
    return found


def _is_task_module(name: str) -> bool:
    parts = name.split(".")
    return parts[:2] == ["graphtransfer", "tasks"] and len(parts) > 2 and parts[2] in TASK_FOLDERS


def test_nothing_outside_tasks_names_a_task():
    """What a task can do is asked of its Task (what its env declares), never decided by its name or
    its env's class, so a user's env that declares the same gets the same; the task folders are
    reached through the registry alone."""
    offenders = [
        site
        for module, path in modules().items()
        if module != "graphtransfer.tasks" and not module.startswith("graphtransfer.tasks.")
        for site in names_a_task(path.read_text(), module)
    ]
    assert not offenders, offenders


@pytest.mark.parametrize(
    "planted",
    [
        'def f(config):\n    return config.task == "mis"\n',
        'def f(name):\n    return name in ("mvc", "maxcut")\n',
        "def f(env, MISEnv):\n    return type(env.unwrapped) is MISEnv\n",
        "from graphtransfer.tasks.mis.kernel import mis_kernel\n",
        "import graphtransfer.tasks.path.env\n",
        "from graphtransfer.tasks import mvc\n",
    ],
)
def test_the_task_rule_finds_a_planted_violation(planted):
    assert names_a_task(planted, "graphtransfer.solve.planted")


def test_the_task_rule_lets_the_registry_through():
    registry = "from graphtransfer.tasks import TASKS\nfrom graphtransfer.tasks.factory import task_of\n"
    assert not names_a_task(registry, "graphtransfer.solve.planted")
