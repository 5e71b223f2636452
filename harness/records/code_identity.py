"""What identifies the code behind a record row: a digest of the source that computes it.

A row of model M in task T was computed by M's factory module and the task's module, and by every
module they import from their own package or from ``protocols`` (the evaluation layer), transitively
(:func:`source_closure`). The digest covers those files' bytes and the installed soter-bench version
(:func:`code_digest`). It is stored with each row (``model_info``, docs/records.md), never part of the
row's key, as provenance only: whether a row is current is declared by its task's version and its model's revision
(``harness.registry.versions``), so an edit that moves no number recomputes and marks nothing. Tables print the
digests their rows carry in a plain note; ``harness restamp`` renews them after verifying a sample of cells.

Imports are read from the source (``ast``), nothing is imported: the closure of a module that needs
torch costs no torch. Files that a module runs in a process of their own rather than imports (the worker
scripts of ``baselines/workers/``, which run MOMENT, Lag-Llama, Moirai, TTM, TimesFM 1.0 and the remote-code
models in their own environments, and the pinned requirements those environments are built from) are named by
the module in a top-level :data:`RUN_FILES_NAME` assignment of glob patterns relative to its folder
(``RUNS_FILES = ("workers/*.py", "envs/*.txt")``), and join the closure. Modules outside the two scopes (the harness's runner and tables, the registry)
decide how rows are planned and shown, not their numbers: they are left out of the digest.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.util
from functools import lru_cache
from pathlib import Path

SHARED = "protocols"  # the evaluation layer every task and model scores with
RUN_FILES_NAME = "RUNS_FILES"  # a module's declaration of the files it runs as processes (globs beside it)


def module_file(name: str) -> Path | None:
    """The source file of a module, found without importing it (its top-level package is located only)."""
    parts = name.split(".")
    try:
        spec = importlib.util.find_spec(parts[0])
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    if not spec.submodule_search_locations:
        return Path(spec.origin) if len(parts) == 1 and spec.origin and spec.origin.endswith(".py") else None
    base = Path(list(spec.submodule_search_locations)[0]).joinpath(*parts[1:])
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


@lru_cache(maxsize=4096)
def _imports_of(path: str, size: int, mtime_ns: int) -> tuple[str, ...]:
    """Modules a source file imports (anywhere, lazily too; not under ``if TYPE_CHECKING:``)."""
    source = Path(path).read_bytes()
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return ()
    package = _package_of(Path(path))
    found: list[str] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            found.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from the file's package
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1] if package else []
                base = ".".join([*anchor, *([base] if base else [])])
            if base:
                found.append(base)
                found.extend(f"{base}.{alias.name}" for alias in node.names if alias.name != "*")
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return tuple(dict.fromkeys(found))


@lru_cache(maxsize=4096)
def _run_files_of(path: str, size: int, mtime_ns: int) -> tuple[str, ...]:
    """The files a module runs as processes (scripts, the requirements of their environments): its top-level
    ``RUNS_FILES = ("glob", ...)``, resolved beside it."""
    try:
        tree = ast.parse(Path(path).read_bytes())
    except SyntaxError:
        return ()
    patterns: list[str] = []
    for node in tree.body:
        target = node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else (
            node.target if isinstance(node, ast.AnnAssign) else None)
        if isinstance(target, ast.Name) and target.id == RUN_FILES_NAME and node.value is not None:
            value = ast.literal_eval(node.value)
            patterns += [value] if isinstance(value, str) else list(value)
    folder = Path(path).parent
    return tuple(sorted({str(f) for pattern in patterns for f in folder.glob(pattern) if f.is_file()}))


def _is_type_checking(test: ast.AST) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _package_of(path: Path) -> str:
    """The dotted package a file belongs to (walking up the folders that hold an ``__init__.py``)."""
    parts = []
    folder = path.parent
    while (folder / "__init__.py").is_file():
        parts.append(folder.name)
        folder = folder.parent
    return ".".join(reversed(parts))


def _in_scope(name: str, scopes: tuple[str, ...]) -> bool:
    return any(name == s or name.startswith(s + ".") for s in scopes)


def source_closure(module: str) -> dict[str, Path]:
    """``module`` and every module it imports, transitively, within its own package (``baselines`` for
    ``baselines.naive``, ``models.soter`` for ``models.soter.adapter``) or :data:`SHARED`: name -> file."""
    scopes = (module.rpartition(".")[0] or module, SHARED)
    out: dict[str, Path] = {}
    todo = [module]
    while todo:
        name = todo.pop()
        if name in out:
            continue
        path = module_file(name)
        if path is None:
            continue
        out[name] = path
        st = path.stat()
        todo.extend(m for m in _imports_of(str(path), st.st_size, st.st_mtime_ns)
                    if _in_scope(m, scopes) and m not in out)
        for file in map(Path, _run_files_of(str(path), st.st_size, st.st_mtime_ns)):
            # named by the declaring module's package and the path beside it: baselines:workers/moment_worker.py
            out.setdefault(f"{_package_of(path)}:{file.relative_to(path.parent).as_posix()}", file)
    return out


def code_files(modules: tuple[str, ...]) -> dict[str, Path]:
    """Every file whose bytes enter the code digest of ``modules``: their closures, run scripts included."""
    files: dict[str, Path] = {}
    for module in modules:
        files.update(source_closure(module))
    return files


def code_digest(modules: tuple[str, ...]) -> str:
    """A digest of the soter-bench version and the source of ``modules``' closures (12 hex digits)."""
    files = code_files(modules)
    h = hashlib.sha256(f"soter-bench={package_version()}|".encode())
    for name in sorted(files):
        h.update(f"{name}|".encode() + hashlib.sha256(files[name].read_bytes()).digest())
    return h.hexdigest()[:12]


def package_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("soter-bench")
    except PackageNotFoundError:
        return "0+unknown"


def row_modules(model: str, task: str) -> tuple[str, ...] | None:
    """The modules whose closures compute ``model``'s rows in ``task``: the task's and the model's factory's
    (a task's model-free pseudo-model: the task's alone); None when the model is no longer registered."""
    from harness.registry.tasks import get_task
    from models.registry import UnknownModelError, get_spec

    task_object = get_task(task)
    modules = [type(task_object).__module__]
    if model not in task_object.model_free:
        try:
            modules.append(get_spec(model).factory.partition(":")[0])
        except UnknownModelError:
            return None
    return tuple(modules)


def row_code(model: str, task: str) -> str | None:
    """The code digest of ``model``'s rows in ``task`` (a task's model-free pseudo-model: the task's code
    alone); None when the model is no longer registered (its code cannot be named)."""
    modules = row_modules(model, task)
    return None if modules is None else code_digest(modules)
