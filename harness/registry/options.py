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

from protocols.specs import (ARTEFACT_KINDS, ARTEFACT_PLACEMENTS, BURST_DISTRIBUTIONS, DEFAULT_HEADS,
                             DEFAULT_SHIFT_KINDS, HEADS, LABEL_BUDGETS, MAINS_FREQUENCIES, MASK_CHANNELS, MASK_KINDS,
                             MISSING_RATES, NOISE_LEVELS, PAPER_SETTINGS, PHYSIOLOGY_MEASURES, PHYSIOLOGY_SOURCES,
                             SHIFT_KINDS, SHIFT_SEVERITIES, WINDOWS_PER_SUBJECT, ArtefactSpec, MaskSpec, PhysiologySpec,
                             SpecError, parse_setting)


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
            if isinstance(exc, SpecError) and str(exc).startswith(f"{self.flag} "):
                raise  # already in the user's words, naming the flag (--rates 150: ...)
            raise SpecError(f"{self.flag}: {exc}") from None


def percent(text: str) -> float:
    """A percentage as the fraction the specs take: 25 -> 0.25."""
    return float(text) / 100


def percentages(flag: str, what: str, example: str) -> Callable[[str], float]:
    """A parser of a percentage checked as the user typed it (0 < PCT <= 100), giving the fraction."""
    def parse(text: str) -> float:
        value = float(text)
        if not 0 < value <= 100:
            raise SpecError(f"{flag} {value:g}: {what} are percentages, 0 < PCT <= 100 (e.g. {flag} {example})")
        return value / 100
    return parse


def _words(values, fmt: str = "{:g}") -> str:
    return " ".join(fmt.format(v) for v in values)


def choice(known: tuple) -> Callable[[str], Any]:
    """A parser that takes one of ``known`` (their type: str, float); anything else is a ValueError listing them."""
    def parse(text: str) -> Any:
        try:
            value = type(known[0])(text)
        except ValueError:
            value = None
        if value not in known:
            raise ValueError(f"{text!r} is not one of {', '.join(f'{k:g}' if isinstance(k, float) else k for k in known)}")
        return value
    return parse


# -- the options of the built-in tasks -----------------------------------------------------------------
SETTINGS = Option("--settings", "context/horizon settings in samples (the paper's \"windows\"), or in seconds "
                  "(4s/2s: samples at each dataset's rate, nearest sample) "
                  f"(default: {_words((s.name for s in PAPER_SETTINGS), '{}')} for forecasting and calibration, 96/48 "
                  "for noise and shift)", parse_setting, many=True, metavar="C/H")
_WINDOWS_DEFAULTS = "; ".join(f"{n}: {', '.join(t for t, m in WINDOWS_PER_SUBJECT.items() if m == n)}"
                              for n in dict.fromkeys(WINDOWS_PER_SUBJECT.values()))
MAX_WINDOWS_PER_SUBJECT = Option("--max-windows-per-subject", "windows (segments) drawn per subject (default, per "
                                 f"task: {_WINDOWS_DEFAULTS}; docs/protocols.md)", int, metavar="N")
SEGMENT_LENGTH = Option("--segment-length", "segment length in samples (default: 96 for imputation, 128 for "
                        "classification)", int, metavar="N")
NOISE_LEVELS_OPTION = Option("--levels", f"noise levels beta (default: {_words(NOISE_LEVELS)}; with --artefact, its "
                             "severity scale, docs/protocols.md)", float, many=True, metavar="BETA")
MISSING_RATES_OPTION = Option("--rates", f"missing rates in percent (default: {_words(100 * r for r in MISSING_RATES)}"
                              f"; physiology: {_words(100 * r for r in PhysiologySpec.rates)})",
                              percentages("--rates", "missing rates", "25 50 75"), many=True,
                              metavar="PCT")
LABEL_BUDGETS_OPTION = Option("--budgets", "label budgets in percent (default: "
                              f"{_words(100 * b for b in LABEL_BUDGETS)})",
                              percentages("--budgets", "label budgets", "1 5 10 25 50 100"), many=True, metavar="PCT")


# the stress tests (issue #31; docs/protocols.md): departures from the paper's protocols, whose defaults are the paper's
MASK = Option("--mask", f"where points go missing: points (the paper's: each point alone) or contiguous gaps "
              f"(one of {', '.join(MASK_KINDS)}; default: {MaskSpec.kind})", choice(MASK_KINDS), metavar="|".join(MASK_KINDS))
MASK_CHANNELS_OPTION = Option("--mask-channels", "independent: each channel its own gaps (asynchronous sensors); "
                              f"shared: all channels together (default: {MaskSpec.channels})", choice(MASK_CHANNELS),
                              metavar="|".join(MASK_CHANNELS))
BURST_SECONDS = Option("--burst-seconds", f"contiguous mask: mean gap length in seconds (default: {MaskSpec.burst_seconds:g})",
                       float, metavar="S")
BURST_DISTRIBUTION = Option("--burst-distribution", f"contiguous mask: gap length law (one of "
                            f"{', '.join(BURST_DISTRIBUTIONS)}; default: {MaskSpec.distribution})", choice(BURST_DISTRIBUTIONS),
                            metavar="|".join(BURST_DISTRIBUTIONS))
MASK_OPTIONS = (MASK, MASK_CHANNELS_OPTION, BURST_SECONDS, BURST_DISTRIBUTION)
ARTEFACT = Option("--artefact", f"what corrupts the context: gaussian (the paper's) or a wearable artefact (one of "
                  f"{', '.join(ARTEFACT_KINDS)}; default: {ArtefactSpec.kind}); --levels is then its severity scale",
                  choice(ARTEFACT_KINDS), metavar="KIND")
MAINS_HZ = Option("--mains-hz", f"--artefact mains: interference frequency (one of {_words(MAINS_FREQUENCIES)}; "
                  f"default: {ArtefactSpec.mains_hz:g})", choice(MAINS_FREQUENCIES), metavar="HZ")
ARTEFACT_PLACEMENT = Option("--artefact-placement", "--artefact motion|pops: where the events fall (one of "
                            f"{', '.join(ARTEFACT_PLACEMENTS)}; default: {ArtefactSpec.placement}: onsets uniform "
                            "over the context, the last sample included; context-interior: issue #31's, never at "
                            "the forecast origin; docs/protocols.md)", choice(ARTEFACT_PLACEMENTS),
                            metavar="|".join(ARTEFACT_PLACEMENTS))
PHYSIO_CONTEXT = Option("--physio-context", f"forecast context in seconds (default: {PhysiologySpec.context_seconds:g})",
                        float, metavar="S")
PHYSIO_HORIZON = Option("--physio-horizon", "forecast horizon in seconds, the span whose rate is scored (default: "
                        f"{PhysiologySpec.horizon_seconds:g})", float, metavar="S")
PHYSIO_SEGMENT = Option("--physio-segment", f"imputed segment length in seconds (default: {PhysiologySpec.segment_seconds:g})",
                        float, metavar="S")
PHYSIO_SOURCES = Option("--physio-sources", f"forecasts and/or imputed segments (of {', '.join(PHYSIOLOGY_SOURCES)}; "
                        f"default: {' '.join(PhysiologySpec.sources)})", choice(PHYSIOLOGY_SOURCES), many=True,
                        metavar="SOURCE")
PHYSIO_MEASURES = Option("--physio-measures", "heart rate from ECG, PPG; breathing rate from respiration (of "
                         f"{', '.join(PHYSIOLOGY_MEASURES)}; default: {' '.join(PhysiologySpec.measures)})",
                         choice(PHYSIOLOGY_MEASURES), many=True, metavar="MEASURE")
PHYSIOLOGY_OPTIONS = (PHYSIO_CONTEXT, PHYSIO_HORIZON, PHYSIO_SEGMENT, PHYSIO_SOURCES, PHYSIO_MEASURES)
# subject shift (issue #48): the test subject's level and amplitude moved outside the training subjects' range
SHIFT_KINDS_OPTION = Option("--shift-kinds", f"how the test subject is shifted (of {', '.join(SHIFT_KINDS)}; default: "
                            f"{' '.join(DEFAULT_SHIFT_KINDS)}; docs/protocols.md, Subject shift)", choice(SHIFT_KINDS),
                            many=True, metavar="KIND")
SHIFT_SEVERITIES_OPTION = Option("--shift-severities", "shift severities: level s offsets by s training ranges, scale s "
                                 f"multiplies the amplitude by 1 + s (default: {_words(SHIFT_SEVERITIES)}; 0: the "
                                 "plain forecasting run)", float, many=True, metavar="S")


HEADS_OPTION = Option("--heads", f"classification heads compared on the same segments and budgets (of {', '.join(HEADS)}; "
                      f"default: {' '.join(DEFAULT_HEADS)}; docs/protocols.md, Classification heads)", choice(HEADS),
                      many=True, metavar="HEAD")


def windows_per_subject(task: str, options: Any) -> dict[str, int]:
    """--max-windows-per-subject as the keyword a spec takes: the value given, else the task's default (the one
    table, ``protocols.specs.WINDOWS_PER_SUBJECT``); empty for a task the table does not name (a plugin's spec keeps
    its own default). Every task reads the option through this, so that 0 is refused, never taken for "not given"."""
    value = options.max_windows_per_subject
    return given(max_windows_per_subject=WINDOWS_PER_SUBJECT.get(task) if value is None else value)


def mask_of(options: Any) -> MaskSpec:
    """The MaskSpec of a task's mask options (--mask, --mask-channels, --burst-seconds, --burst-distribution)."""
    return MaskSpec(**given(kind=options.mask, channels=options.mask_channels, burst_seconds=options.burst_seconds,
                            distribution=options.burst_distribution))


def artefact_of(options: Any) -> ArtefactSpec:
    """The ArtefactSpec of a task's artefact options (--artefact, --mains-hz, --artefact-placement)."""
    return ArtefactSpec(**given(kind=options.artefact, mains_hz=options.mains_hz, placement=options.artefact_placement))


def segment_options(task: str, options: Any) -> dict[str, int]:
    """--max-windows-per-subject (given, else the task's default) and --segment-length (given, else the spec's): the
    segment tasks' (imputation, classification and its heads) shared options."""
    return {**windows_per_subject(task, options), **given(length=options.segment_length)}


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
