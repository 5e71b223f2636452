"""The layers import downward only: ``protocols`` (data, specs, metrics, the model interface) <- ``models``
(the registry, SOTER) <- ``baselines`` <- ``harness`` (the CLI, the runner, the study runners).

Checked on the import graph of the four installed packages (grimp, through import-linter's contracts
declared in ``pyproject.toml``): no import from a lower layer into a higher one, no import cycle
between sibling modules of a package, and (grimp directly) no import cycle between any two modules.
Imports that a graph cannot see are checked in the source: no module imports a higher layer through
``importlib.import_module``/``__import__``, and the registry names none of the modules that register
models (the built-ins come from this distribution's entry points, see ``models.registry``).
"""

from __future__ import annotations

import ast
import importlib.util
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import grimp  # import-linter brings it: both come with the test extra (pip install -e '.[test]')
import pytest

REPO = Path(__file__).resolve().parents[1]
LAYERS = ("protocols", "models", "baselines", "harness")  # lowest first


def _graph() -> grimp.ImportGraph:
    return grimp.build_graph(*LAYERS, cache_dir=None)


def _source_files() -> dict[str, Path]:
    """module name -> file of every module of the four installed packages."""
    files = {}
    for package in LAYERS:
        root = Path(importlib.util.find_spec(package).origin).parent
        for path in sorted(root.rglob("*.py")):
            parts = path.relative_to(root.parent).with_suffix("").parts
            files[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return files


def test_the_packages_checked_are_the_installed_ones():
    """The graph is built from the packages Python imports (the editable install: this checkout)."""
    for package in LAYERS:
        assert Path(importlib.util.find_spec(package).origin).parent == REPO / package


def test_the_declared_contracts_are_the_layering():
    config = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]
    assert sorted(config["root_packages"]) == sorted(LAYERS)
    contracts = {c["id"]: c for c in config["contracts"]}
    assert contracts["layers"]["type"] == "layers"
    assert tuple(contracts["layers"]["layers"]) == LAYERS[::-1]  # import-linter lists the highest first
    assert not contracts["layers"].get("ignore_imports")  # no exceptions to the rule
    assert contracts["acyclic"]["type"] == "acyclic_siblings"
    assert sorted(contracts["acyclic"]["ancestors"]) == sorted(LAYERS)
    inner = contracts["harness-layers"]  # the sub-packages of harness, the registry (its floor) lowest
    assert inner["type"] == "layers" and inner["containers"] == ["harness"] and not inner.get("ignore_imports")
    assert inner["layers"][-4:] == ["tasks", "run | reporting", "records", "registry"]
    top = {p.stem for p in (REPO / "harness").glob("*.py")} - {"__init__", "__main__"}
    assert set(inner["layers"][0].split(" : ")) == top  # every command module is in the top layer
    packages = {p.parent.name for p in (REPO / "harness").glob("*/__init__.py")}
    below = {part.strip() for layer in inner["layers"][1:] for part in layer.replace("|", ":").split(":")}
    assert below == packages  # every sub-package of harness (studies, external ...) has its layer


def test_import_linter_contracts_are_kept(capsys):
    """No import from a lower layer into a higher one (between the packages, and between the parts of harness);
    no cycle between the sibling modules of a package."""
    from importlinter import configuration
    from importlinter.application.use_cases import lint_imports

    configuration.configure()  # what importlinter.api and its CLI do on import
    kept = lint_imports(config_filename=str(REPO / "pyproject.toml"), cache_dir=None, no_logo=True)
    report = capsys.readouterr().out
    assert kept, report
    assert "3 kept, 0 broken" in report, report


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module, or a module importing itself (Tarjan,
    iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1 or node in edges[node]:
                    found.append(sorted(component))
    return found


def test_cycle_finder_finds_cycles():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"a"}, "b": set()}) == [["a"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle_between_modules():
    graph = _graph()
    modules = set(graph.modules)
    edges = {m: graph.find_modules_directly_imported_by(m) & modules for m in modules}
    lines = []
    for component in _cycles(edges):
        lines.append(" <-> ".join(component))
        for importer in component:
            for imported in sorted(edges[importer] & set(component)):
                for detail in graph.get_import_details(importer=importer, imported=imported):
                    lines.append(f"    {importer}:{detail['line_number']}: {detail['line_contents']}")
    assert not lines, "import cycles:\n" + "\n".join(lines)


def test_no_upward_import_between_the_packages():
    """The layers contract again, straight from grimp (names each offending chain)."""
    graph = _graph()
    chains = []
    for i, lower in enumerate(LAYERS):
        for higher in LAYERS[i + 1:]:
            for chain in sorted(graph.find_shortest_chains(importer=lower, imported=higher, as_packages=True)):
                chains.append(" -> ".join(chain))
    assert not chains, "imports from a lower layer into a higher one:\n" + "\n".join(chains)


def _layer(module: str) -> int:
    return LAYERS.index(module.split(".")[0]) if module.split(".")[0] in LAYERS else -1


def _dynamic_imports(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, module) of ``importlib.import_module("...")`` and ``__import__("...")`` with a constant."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant) \
                and isinstance(node.args[0].value, str):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name in ("import_module", "__import__"):
                found.append((node.lineno, node.args[0].value))
    return found


def test_no_dynamic_import_into_a_higher_layer():
    """What grimp cannot see: a module importing a higher layer by name at run time."""
    bad = []
    for module, path in _source_files().items():
        for line, target in _dynamic_imports(ast.parse(path.read_text(), str(path))):
            if _layer(target) > _layer(module):
                bad.append(f"{module}:{line}: imports {target!r} (a higher layer) by name")
    assert not bad, "\n".join(bad)


def _docstrings(tree: ast.AST) -> set[int]:
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                ids.add(id(first.value))
    return ids


def _names_a_registering_module(text: str) -> bool:
    return any(text == name or text.startswith(name + ".") or text.startswith(name + ":")
               for name in ("baselines", "harness", "models.soter"))


@pytest.mark.parametrize("name", ["registry.py", "plugins.py"])
def test_the_registry_does_not_import_the_models_it_registers(name):
    """The registry (and its plugin machinery) loads the built-in models through entry points; it never names
    their modules (as an import, or as a string it could import them by), so ``models`` does not depend on
    ``baselines``."""
    path = REPO / "models" / name
    tree = ast.parse(path.read_text(), str(path))
    docstrings = _docstrings(tree)
    bad = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            bad += [f"line {node.lineno}: import {a.name}" for a in node.names if _names_a_registering_module(a.name)]
        elif isinstance(node, ast.ImportFrom) and node.module and _names_a_registering_module(node.module):
            bad.append(f"line {node.lineno}: from {node.module} import ...")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings \
                and _names_a_registering_module(node.value.strip()):
            bad.append(f"line {node.lineno}: the string {node.value!r}")
    assert not bad, f"models/{name} names modules of a higher layer:\n" + "\n".join(bad)


def test_the_builtin_models_come_from_this_distributions_entry_points():
    from models.plugins import builtin_entry_points

    assert {ep.name: ep.value for ep in builtin_entry_points()} == {
        "baselines": "baselines", "soter": "models.soter.registration"}


def test_the_harness_top_level_holds_its_entry_points_only():
    """The commands live in ``harness.commands``: the top of ``harness`` keeps the package's own files and the two
    documented entry points (``python -m harness``'s parser, ``python -m harness.selection``)."""
    top = {p.name for p in (REPO / "harness").glob("*.py")}
    assert top == {"__init__.py", "__main__.py", "cli.py", "selection.py"}


@pytest.mark.parametrize("module", ["harness", "harness.selection"])
def test_the_documented_module_entry_points_start(module):
    proc = subprocess.run([sys.executable, "-m", module, "--help"], cwd=REPO, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.returncode == 0 and proc.stdout.startswith(f"usage: python -m {module}"), proc.stderr[-1000:]


@pytest.mark.parametrize("importer, imported", [
    ("models.soter", "protocols.datasets.download"),  # checking a checkpoint's SHA256SUMS: protocols.digests
    ("harness.tasks.classification", "harness.tasks.imputation"),  # segment_options: harness.registry.options
    ("harness.tasks.classification_heads", "harness.tasks.classification"),  # the table notes: harness.tasks.base
])
def test_no_import_ties_a_module_to_code_it_does_not_run(importer, imported):
    """A helper taken from an unrelated module ties code together that has nothing in common: every SOTER checkpoint
    load to the downloader, one task to another (and each row's recorded code digest to files it never runs)."""
    chains = _graph().find_shortest_chains(importer=importer, imported=imported, as_packages=True)
    assert not chains, "\n".join(" -> ".join(c) for c in sorted(chains))
