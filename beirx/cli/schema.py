"""``beirx schema results|manifest|quality|generation|review|subset|suite|damage``: print the JSON Schema of a beirx file
format.

``--markdown`` prints the field reference of every format instead (the text of docs/schema.md).
"""

from __future__ import annotations

import argparse
import json

_NAMES = ("results", "manifest", "quality", "generation", "review", "subset", "suite",  # beirx.artifacts.ARTIFACTS
          "damage")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("name", nargs="?", choices=_NAMES,
                        help="results (results JSON), manifest (translation.json), quality (quality.json), generation "
                             "(generation.json), review (review.json), subset (subset.json), suite (suite.json) or damage "
                             "(beirx report's damage.json)")
    parser.add_argument("--markdown", action="store_true", help="print the field reference of all formats")


def run(args) -> int:
    from beirx.artifacts import ARTIFACTS
    from beirx.artifacts.docs import schema_markdown
    from beirx.errors import BeirxError

    if args.markdown:
        print(schema_markdown(), end="")
        return 0
    if not args.name:
        raise BeirxError(f"name a format: {', '.join(_NAMES)} (or pass --markdown)")
    print(json.dumps(ARTIFACTS[args.name].json_schema(), indent=2, ensure_ascii=False))
    return 0
