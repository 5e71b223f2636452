"""Task options: the flags of ``python -m harness run`` that tasks declare, and the typed options a task's
spec is built from.

A task lists its options (``Task.options``); registering the task registers them
(``harness.registry.tasks``): ``run`` offers each flag once, naming the tasks that read it, and a run
passes only the options of its task (a flag its task does not read is an error, never ignored). The task
gets them as a frozen dataclass whose fields are the options' names (:func:`options_of`), each holding the
value given or the option's default; a default of None lets the task's spec take its own
(``protocols.specs``, where the paper's protocols are written down once).

The options of the built-in tasks are declared here, once, so that the tasks sharing one (``--settings``:
forecasting and noise) share one declaration; a plugin declares its own beside its task
(docs/adding-a-task.md).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Callable, Mapping

from protocols.specs import LABEL_BUDGETS, MISSING_RATES, NOISE_LEVELS, PAPER_SETTINGS, Setting, SpecError


@dataclass(frozen=True)
class Option:
    """One option of a task: a flag of ``run`` and a field of the task's options, named after the flag
    (``--segment-length`` -> ``segment_length``)."""

    flag: str  # "--settings"
    help: str  # what it sets and its default; `run --help` puts the names of the tasks that read it first
    parse: Callable[[str], Any] = str  # one command-line word -> one value; raises ValueError for a bad word
    many: bool = False  # takes one or more words: the value is a tuple
    metavar: str | None = None
    default: Any = None  # None: the task's spec takes its own default

    def __post_init__(self) -> None:
        if not self.flag.startswith("--") or not self.flag[2:].replace("-", "_").isidentifier():
            raise ValueError(f"an option's flag is --name (letters, digits, dashes), got {self.flag!r}")

    @property
    def name(self) -> str:
        """The field of the task's options that holds the value."""
        return self.flag[2:].replace("-", "_")

    def read(self, words: str | list[str]) -> Any:
        """The value of the word(s) given on the command line; a bad word is a SpecError naming the flag."""
        try:
            return tuple(self.parse(w) for w in words) if self.many else self.parse(words)
        except (ValueError, TypeError) as exc:
            raise SpecError(f"{self.flag}: {exc}") from None


def percent(text: str) -> float:
    """A percentage as the fraction the specs take: 25 -> 0.25."""
    return float(text) / 100


def _words(values, fmt: str = "{:g}") -> str:
    return " ".join(fmt.format(v) for v in values)


# -- the options of the built-in tasks -----------------------------------------------------------------
SETTINGS = Option("--settings", "context/horizon settings in samples (the paper's \"windows\") "
                  f"(default: {_words((s.name for s in PAPER_SETTINGS), '{}')} for forecasting, 96/48 "
                  "for noise)", Setting.parse, many=True, metavar="C/H")
MAX_WINDOWS_PER_SUBJECT = Option("--max-windows-per-subject", "windows (segments) drawn per subject (default: the "
                                 "task's, docs/protocols.md)", int, metavar="N")
SEGMENT_LENGTH = Option("--segment-length", "segment length in samples (default: 96 for imputation, 128 for "
                        "classification)", int, metavar="N")
NOISE_LEVELS_OPTION = Option("--levels", f"noise levels beta (default: {_words(NOISE_LEVELS)})", float, many=True,
                             metavar="BETA")
MISSING_RATES_OPTION = Option("--rates", f"missing rates in percent (default: {_words(100 * r for r in MISSING_RATES)})",
                              percent, many=True, metavar="PCT")
LABEL_BUDGETS_OPTION = Option("--budgets", "label budgets in percent (default: "
                              f"{_words(100 * b for b in LABEL_BUDGETS)})", percent, many=True, metavar="PCT")


# -- a task's options ----------------------------------------------------------------------------------
@lru_cache(maxsize=None)
def options_type(task_name: str, options: tuple[Option, ...]) -> type:
    """The frozen dataclass of a task's options: one field per option, its default the option's."""
    fields = [(o.name, Any, dataclasses.field(default=o.default)) for o in options]
    return dataclasses.make_dataclass(f"{task_name.title().replace('-', '')}Options", fields, frozen=True)


def options_of(task: Any, given: Mapping[str, Any], flag_of: Callable[[str], str] = lambda name: name) -> Any:
    """``task``'s options with the values ``given`` by name (None: not given); an option the task does not
    declare is a SpecError naming the task's own (``flag_of`` spells a name as its flag)."""
    own = {o.name for o in task.options}
    alien = [name for name, value in given.items() if value is not None and name not in own]
    if alien:
        theirs = ", ".join(o.flag for o in task.options) or "none"
        raise SpecError(f"{task.name} takes no option {', '.join(flag_of(n) for n in alien)} (its options: {theirs})")
    values = {name: value for name, value in given.items() if value is not None}
    return options_type(task.name, tuple(task.options))(**values)


def given(**values: Any) -> dict[str, Any]:
    """The values that are not None: the keyword arguments a spec takes from options (None: its default)."""
    return {name: value for name, value in values.items() if value is not None}


def clash(option: Option, task: str, other: Option, other_task: str) -> str | None:
    """Why two tasks' options cannot both be registered (None: they can): one name or flag, two meanings."""
    if option == other:
        return None
    if option.name == other.name:  # the name comes from the flag: one flag, one name
        return (f"option {option.flag} of task {task!r} differs from the option {other.flag} of task {other_task!r} "
                "(a flag has one meaning: declare the Option once and give both tasks that object)")
    return None
