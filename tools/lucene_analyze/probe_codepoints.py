"""Compare beirx's StandardTokenizer with real Lucene 8.7 on every Unicode code point.

Each code point c is placed in a few contexts (``c``, ``a c a``, ``1 c 1``, ``c c`` ...; see TEMPLATES)
and tokenized by both Lucene (LuceneAnalyze.java, ``chain`` with no filters = bare StandardTokenizer)
and :func:`beirx.language_packs.tokenizer.tokenize_raw`. For every code point where they differ the
script finds which character kind (letter, digit, extend, emoji, ...) makes the Python tokenizer agree
with Lucene on all contexts, by substituting a representative character of that kind, and writes
``FIRST-LAST KIND`` lines (hex code point ranges) -- the overrides that gen_uax29_tables.py applies (Lucene's JFlex tables are Unicode
9.0 / Emoji 11.0; the ``regex`` module's are newer).

Run (about a minute):
  python tools/lucene_analyze/probe_codepoints.py --classes DIR_WITH_COMPILED_LuceneAnalyze \
      --write-overrides tools/lucene_analyze/lucene87_overrides.txt
Without --write-overrides it only reports the number of disagreeing code points (0 when the tables are right).
"""

from __future__ import annotations

import argparse
import glob
import subprocess
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from beirx.language_packs.tokenizer import tokenize_raw  # noqa: E402

TEMPLATES = ("{c}", "a{c}a", "1{c}1", "a{c}", "{c}a", "{c}{c}", "x{c}{c}x", "\u05d0{c}\u05d1", "\u30ab{c}\u30ab")
# A character of each kind that Lucene and beirx already agree on.
REPRESENTATIVES = {
    "OTHER": "!", "EXTEND": "\u0301", "ALETTER": "b", "HEBREW": "\u05d2", "NUMERIC": "2", "KATAKANA": "\u30ad",
    "MIDLETTER": ":", "MIDNUMLET": ".", "MIDNUM": ",", "EXTENDNUMLET": "_", "EMOJI": "\u2b50",
    "HAN": "\u4e2d", "HIRAGANA": "\u3072", "COMPLEX_CONTEXT": "\u0e01",
}


def lucene_jars() -> str:
    jars = []
    for name in ("lucene-core-8", "lucene-analyzers-common-8", "lucene-analyzers-stempel-8"):
        jars += sorted(glob.glob(f"/usr/share/java/{name}*.jar"))[:1]
    return ":".join(jars)


def lucene_tokens(lines: list[str], classes: str) -> list[str]:
    data = ("\n".join(lines) + "\n").encode("utf-8")
    cmd = ["java", "-cp", f"{lucene_jars()}:{classes}", "LuceneAnalyze", "chain"]
    out = subprocess.run(cmd, input=data, capture_output=True, check=True).stdout.decode("utf-8")
    return out.split("\n")[:-1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--classes", required=True, help="directory holding the compiled LuceneAnalyze.class")
    parser.add_argument("--write-overrides", help="write FIRST-LAST KIND lines for the disagreeing code points here")
    args = parser.parse_args()

    cps = [cp for cp in range(0x110000) if not 0xD800 <= cp <= 0xDFFF and cp not in (10, 13)]
    lines = [tpl.format(c=chr(cp)) for cp in cps for tpl in TEMPLATES]
    reference = lucene_tokens(lines, args.classes)
    assert len(reference) == len(lines)
    n = len(TEMPLATES)
    bad = [i for i, cp in enumerate(cps)
           if any(" ".join(tokenize_raw(lines[i * n + j])) != reference[i * n + j] for j in range(n))]
    print(f"code points probed: {len(cps)}; disagreeing with Lucene: {len(bad)}")
    if not args.write_overrides:
        return

    overrides, unresolved = [], []
    for i in bad:
        c = chr(cps[i])
        for kind, rep in REPRESENTATIVES.items():
            if all(" ".join(tokenize_raw(tpl.format(c=rep))).replace(rep, c) == reference[i * n + j]
                   for j, tpl in enumerate(TEMPLATES)):
                overrides.append((cps[i], kind))
                break
        else:
            unresolved.append(cps[i])
    runs: list[list] = []  # [first, last, kind]
    for cp, kind in overrides:
        if runs and runs[-1][1] == cp - 1 and runs[-1][2] == kind:
            runs[-1][1] = cp
        else:
            runs.append([cp, cp, kind])
    with open(args.write_overrides, "w", encoding="ascii") as fh:
        fh.write("# Code points where Lucene 8.7's StandardTokenizer disagrees with the regex module's Unicode\n")
        fh.write("# data, and the character kind Lucene gives them. Written by probe_codepoints.py.\n")
        for first, last, kind in runs:
            fh.write(f"{first:04x}-{last:04x} {kind}\n")
    print(f"overrides written: {len(overrides)} {dict(Counter(k for _, k in overrides))}")
    print(f"unresolved: {len(unresolved)} {[hex(cp) for cp in unresolved[:40]]}")


if __name__ == "__main__":
    main()
