"""MkDocs hooks of the documentation site (``hooks:`` in mkdocs.yml).

``cli.md`` is not a file in ``docs/``: it is rendered from beirx's argument parsers at every build
(:func:`beirx.cli.reference.markdown`), so the command-line reference always matches the code.
"""

from __future__ import annotations

from mkdocs.structure.files import File


def on_files(files, config):
    from beirx.cli.reference import markdown

    files.append(File.generated(config, "cli.md", content=markdown()))
    return files
