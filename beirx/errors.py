"""Errors that the CLI turns into a clear message and a non-zero exit."""

from __future__ import annotations


class BeirxError(Exception):
    """Base class for errors a user can act on (bad input, missing extra, unknown name)."""


class DataError(BeirxError):
    """Malformed input data; names the file and, when known, the 1-based line."""

    def __init__(self, path, message: str, line: int | None = None):
        from beirx.path_problems import link_problem

        self.path = str(path)
        self.line = line
        link = link_problem(self.path)  # "not found" because a symbolic link loops or leads nowhere: say so
        if link:
            message += f": {'it' + link[len(self.path):] if link.startswith(self.path + ' ') else link}"
        self.message = message
        where = f"{self.path}:{line}" if line is not None else self.path
        super().__init__(f"{where}: {message}")


class MissingExtraError(BeirxError):
    """An optional dependency is missing; the message names the extra that installs it."""

    def __init__(self, module: str, extra: str, feature: str = ""):
        what = f" for {feature}" if feature else ""
        super().__init__(
            f"the Python package '{module}' is needed{what}: install it with  pip install 'beirx[{extra}]'"
        )


def require(module: str, extra: str, feature: str = ""):
    """Import an optional dependency lazily, or raise MissingExtraError naming the extra."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:  # pragma: no cover - exercised by tests that hide modules
        raise MissingExtraError(module, extra, feature) from exc
