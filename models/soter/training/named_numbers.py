"""``NAME=NUMBER,...`` option values (the generators' mix, the augmentations' probabilities), read one way."""

from __future__ import annotations

from collections.abc import Collection


def named_numbers(text: str, option: str, names: Collection[str], what: str) -> dict[str, float]:
    """``"a=0.3, b=1"`` -> {"a": 0.3, "b": 1.0} in the order given; an item that is not NAME=NUMBER with NAME among
    ``names``, or a name given twice, is a ValueError starting with ``option`` (``what``: the number's meaning)."""
    out: dict[str, float] = {}
    for item in (s.strip() for s in text.split(",")):
        if not item:
            continue
        name, sep, value = (s.strip() for s in item.partition("="))
        if not sep or name not in names:
            raise ValueError(f"{option}: expected NAME={what.upper()} with NAME one of {sorted(names)}, got {item!r}")
        if name in out:
            raise ValueError(f"{option}: {name!r} given twice in {text!r}")
        try:
            out[name] = float(value)
        except ValueError:
            raise ValueError(f"{option}: {what} of {name!r} is not a number: {value!r}") from None
    return out
