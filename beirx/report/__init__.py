"""The REPORT stage (``beirx report``): benchmark tables across languages and systems, significance tests,
efficiency, translation quality vs retrieval drop, plots; Markdown, LaTeX, CSV and a self-contained HTML page.

It reads results documents (and the translation manifests and quality reports beside translated datasets)
and never imports the evaluate or translate stages. Entry point: :func:`beirx.report.build.build_report`.
"""
