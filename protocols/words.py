"""Messages in the user's words: "did you mean ...?" for a misspelt name (every layer's errors use it)."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def closest(word: str, choices: Iterable[str]) -> str | None:
    """The choice most like ``word``, if one is close enough to be a typo of it."""
    found = difflib.get_close_matches(word, [str(c) for c in choices], n=1, cutoff=0.6)
    return found[0] if found else None


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` for the closest choice, or an empty string."""
    match = closest(word, choices)
    return f" (did you mean {match!r}?)" if match else ""
