"""A model factory's parameters read from its source, without importing its module (issue #51).

`run` checks every ``--model-option`` (its name, and its value against the parameter's ``Literal[...]`` or plain
type) before any work. Reading the signature by importing the factory's module costs SOTER's torch import (4-6 s on
a busy 2-core machine) before a misspelt option can be reported. The factories' signatures are plain Python, so
they are read here from the syntax tree; an annotation this reader cannot evaluate is an opaque type (no choices,
no plain type), as for ``typing.get_type_hints``; a factory it cannot find in its module's source (assigned,
imported, wrapped) returns None and the registry imports it instead. ``tests/test_model_options.py`` checks that,
for every registered model, both ways give the same options, choices and types.
"""

from __future__ import annotations

import ast
import importlib.util
import typing
from functools import lru_cache
from pathlib import Path
from typing import Any

_PLAIN_NAMES: dict[str, Any] = {"int": int, "float": float, "bool": bool, "str": str, "Path": Path, "None": type(None)}


class Opaque:
    """An annotation the reader does not evaluate (a class, a generic): neither choices nor a plain type."""


def static_parameters(factory: str) -> dict[str, Any] | None:
    """``{name: annotation}`` of a factory's named parameters (positional-or-keyword and keyword-only; a class: its
    ``__init__``'s without ``self``), annotations evaluated to ``Literal``/plain types/unions or :class:`Opaque`
    (None for a parameter without one); None when the factory is not a top-level function or class of its module."""
    module, _, attr = factory.partition(":")
    path = _source_file(module)
    if path is None or "." in attr:
        return None
    return _read(str(path), path.stat().st_mtime_ns, attr)


def _source_file(module: str) -> Path | None:
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    origin = getattr(spec, "origin", None) if spec is not None else None
    return Path(origin) if origin and origin.endswith(".py") else None


@lru_cache(maxsize=256)
def _read(path: str, mtime_ns: int, attr: str) -> dict[str, Any] | None:
    tree = ast.parse(Path(path).read_text(encoding="utf-8"))
    aliases = {t.id: node.value for node in tree.body if isinstance(node, ast.Assign)
               for t in node.targets if isinstance(t, ast.Name)}
    aliases.update({node.target.id: node.value for node in tree.body  # X: TypeAlias = Literal[...]
                    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value})
    target = next((node for node in tree.body if isinstance(node, (ast.FunctionDef, ast.ClassDef))
                   and node.name == attr), None)
    if isinstance(target, ast.ClassDef):
        target = next((n for n in target.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None)
        if target is None:
            return None
        args = [*target.args.args[1:], *target.args.kwonlyargs]  # without self
    elif isinstance(target, ast.FunctionDef):
        args = [*target.args.args, *target.args.kwonlyargs]
    else:
        return None
    return {a.arg: None if a.annotation is None else _evaluate(a.annotation, aliases, 0) for a in args}


def _evaluate(node: ast.expr, aliases: dict[str, ast.expr], depth: int) -> Any:
    """An annotation as ``typing.get_type_hints`` would give it, for the forms factories use."""
    if depth > 8:
        return Opaque
    if isinstance(node, ast.Constant):
        if node.value is None:
            return type(None)
        if isinstance(node.value, str):  # a quoted annotation
            try:
                return _evaluate(ast.parse(node.value, mode="eval").body, aliases, depth + 1)
            except SyntaxError:
                return Opaque
        return Opaque
    if isinstance(node, ast.Name):
        if node.id in _PLAIN_NAMES:
            return _PLAIN_NAMES[node.id]
        if node.id in aliases:
            return _evaluate(aliases[node.id], aliases, depth + 1)
        return Opaque
    if isinstance(node, ast.Attribute) and node.attr == "Path":
        return Path
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        left, right = _evaluate(node.left, aliases, depth + 1), _evaluate(node.right, aliases, depth + 1)
        return Opaque if Opaque in (left, right) else left | right  # as `X | Y` evaluates: its order kept
    if isinstance(node, ast.Subscript):
        head = node.value.attr if isinstance(node.value, ast.Attribute) else getattr(node.value, "id", "")
        items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        if head == "Literal":
            if not all(isinstance(i, ast.Constant) for i in items):
                return Opaque
            return typing.Literal[tuple(i.value for i in items)]
        if head == "Optional":
            return _union([_evaluate(items[0], aliases, depth + 1), type(None)])
        if head == "Union":
            return _union([_evaluate(i, aliases, depth + 1) for i in items])
    return Opaque


def _union(members: list[Any]) -> Any:
    """``Union[...]`` as ``typing`` builds it (cached: an equal union made earlier comes back in its order)."""
    if Opaque in members:
        return Opaque
    return typing.Union[tuple(members)]
