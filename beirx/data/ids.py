"""The one rule for IDs (documents, queries, qrels and run files): taken verbatim, never stripped.

An ID containing whitespace or a control, format or surrogate character is rejected where it is read,
with the file and line. BEIR's IDs never contain them, and an ID that did could not survive a
whitespace-separated TREC run file or a qrels TSV unchanged, so a judgement would be lost silently.
"""

from __future__ import annotations

import re
import unicodedata

# Whitespace (\s covers Unicode spaces, line and paragraph separators), C0/C1 controls, format characters
# (soft hyphen, zero-width and bidi controls, BOM) and surrogates; one regex keeps the check cheap per ID.
_BAD = re.compile("[\\s\x00-\x1f\x7f-\x9f\u00ad\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u206f"
                  "\ufeff\ufff9-\ufffb\ud800-\udfff]")

INT32 = (-(2 ** 31), 2 ** 31 - 1)  # pytrec_eval stores relevance in a C int


def id_problem(value: str) -> str | None:
    """Why ``value`` is not a valid ID, or None when it is."""
    if not value:
        return "empty ID"
    bad = _BAD.search(value)
    if bad is None:
        return None
    ch = bad.group()
    return (f"ID {value!r} contains whitespace or a control character ({unicodedata.name(ch, f'U+{ord(ch):04X}')}); "
            "IDs are used verbatim and must not contain them")


def text_problem(*texts: str) -> str | None:
    """A lone surrogate (``"\\ud800"`` in JSON) cannot be written as UTF-8; None when all texts are clean."""
    for text in texts:
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as exc:
            return f"text contains a lone surrogate (\\u{ord(text[exc.start]):04x}), which is not valid Unicode"
    return None
