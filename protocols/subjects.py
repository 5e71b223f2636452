"""Per-subject metadata (age, sex, rhythm or any field): ``Dataset.metadata["subjects"]``, subject -> {field: value}.

Why: errors broken down by who was measured (``table TASK --by subject-field:FIELD``) need each subject's fields,
and they come from the data's own source (a folder manifest's ``[subjects.NAME]`` tables, MIT-BIH's header comments).
The table lives in the metadata, never in the fingerprints (``protocols.data``): adding it moves no key and no
random draw.
"""

from __future__ import annotations

import math
import re

from protocols.data import Dataset, DatasetError

SUBJECTS = "subjects"
Value = str | int | float | bool


def check_subject_table(table: object, subjects: tuple[str, ...], where: str) -> dict[str, dict[str, Value]]:
    """A copy of ``table`` when it maps subjects of the dataset to tables of scalar fields; else a DatasetError
    naming the subject and field (a typo in a subject's name would otherwise drop it from every breakdown)."""
    if not isinstance(table, dict):
        raise DatasetError(f"{where}: 'subjects' must be a table of subjects, each a table of fields "
                           "([subjects.NAME] with e.g. age = 69, sex = \"M\")")
    out: dict[str, dict[str, Value]] = {}
    for subject, fields in table.items():
        if subject not in subjects:
            raise DatasetError(f"{where}: subjects.{subject} names no subject of the recordings; "
                               f"subjects: {list(subjects)}")
        if not isinstance(fields, dict):
            raise DatasetError(f"{where}: subjects.{subject} must be a table of fields, got {fields!r}")
        for name, value in fields.items():
            if not isinstance(value, (str, int, float, bool)) or (isinstance(value, float) and not math.isfinite(value)):
                raise DatasetError(f"{where}: subjects.{subject}.{name} must be a string, number or true/false, "
                                   f"got {value!r}")
        out[str(subject)] = dict(fields)
    return out


def subject_table(dataset: Dataset) -> dict[str, dict[str, Value]]:
    """The dataset's per-subject fields ({} when it declares none)."""
    return dict(dataset.metadata.get(SUBJECTS) or {})


def field_values(dataset: Dataset, field: str) -> dict[str, str]:
    """Subject -> the field's value as text, for the subjects that have it."""
    return {s: str(f[field]) for s, f in subject_table(dataset).items() if field in f}


def blocks_table(table: dict[str, dict[str, Value]], blocks: int) -> dict[str, dict[str, Value]]:
    """The table of a dataset cut into blocks: every block ``<subject>#<i>`` is the same person."""
    return {f"{s}#{i}": dict(f) for s, f in table.items() for i in range(1, blocks + 1)}


_WFDB_PATIENT = re.compile(r"^\s*(\d+|\?)\s+([MF?])\b")


def wfdb_patient_fields(comments: list[str]) -> dict[str, Value]:
    """Age and sex from a WFDB header's comment lines: MIT-BIH writes them first on a line (``# 69 M 1085 1629
    x1``); an unknown value (``?``) is left out, not guessed."""
    for line in comments:
        found = _WFDB_PATIENT.match(line)
        if found:
            age, sex = found.groups()
            return {**({"age": int(age)} if age != "?" else {}), **({"sex": sex} if sex != "?" else {})}
    return {}
