"""Renderers of the report's tables: Markdown, LaTeX (booktabs), CSV and one self-contained HTML page."""
