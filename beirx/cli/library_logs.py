"""Libraries' own log output, kept out of the user's way unless asked for (``-v``).

When a server is unreachable, the Elasticsearch transport, urllib3, httpx and huggingface_hub log a warning
with a traceback for every retry; transformers and datasets warn about things the user cannot act on. The
failure itself reaches the user once, as beirx's error message. So, by default, records of other libraries
below ERROR are dropped and their tracebacks cut; ``-v`` shows their warnings with tracebacks, ``-vv`` their
debug output. The few libraries that print through their own handler (transformers, huggingface_hub,
datasets) read their level from an environment variable when first imported, which is set here (a value the
user set is kept). Python ``warnings`` go through logging too, as ``py.warnings``.
"""

from __future__ import annotations

import logging
import os

_OWN = ("beirx", "__main__")
_QUIET_LOGGERS = ("bm25s", "urllib3", "httpx", "httpx2", "httpcore", "httpcore2", "filelock", "datasets",
                  "huggingface_hub", "sentence_transformers", "transformers", "elastic_transport", "elasticsearch",
                  "opensearch", "openai", "py.warnings")
_VERBOSITY_VARIABLES = ("TRANSFORMERS_VERBOSITY", "HF_HUB_VERBOSITY", "DATASETS_VERBOSITY")


class LibraryNoiseFilter(logging.Filter):
    """On a handler: other libraries' records pass at ``level`` and above, with tracebacks only if ``tracebacks``."""

    def __init__(self, level: int, tracebacks: bool):
        super().__init__()
        self.level, self.tracebacks = level, tracebacks

    def filter(self, record: logging.LogRecord) -> bool:
        if record.name.split(".", 1)[0] in _OWN:
            return True
        if record.levelno < self.level:
            return False
        if not self.tracebacks and record.exc_info:
            record.exc_info, record.exc_text = None, None
        return True


def quiet_libraries(verbose: int) -> None:
    """Set the libraries' levels for ``verbose`` (0: errors, one line each; 1: warnings; 2: everything)."""
    level = logging.ERROR if verbose == 0 else (logging.WARNING if verbose == 1 else logging.DEBUG)
    for handler in logging.getLogger().handlers:
        for old in [f for f in handler.filters if isinstance(f, LibraryNoiseFilter)]:
            handler.removeFilter(old)
        handler.addFilter(LibraryNoiseFilter(level, tracebacks=verbose > 0))
    for variable in _VERBOSITY_VARIABLES:  # read by those libraries when first imported (a user's value stays)
        if os.environ.get(variable) in (None, _set_by_us.get(variable)):
            os.environ[variable] = _set_by_us[variable] = logging.getLevelName(level).lower()
    for name in _QUIET_LOGGERS:  # after any import that already configured them
        logging.getLogger(name).setLevel(level)
    logging.captureWarnings(True)


_set_by_us: dict[str, str] = {}
