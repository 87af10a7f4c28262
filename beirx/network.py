"""Network failures of every client library, recognised in one place, and the Hub calls that meet them.

beirx reaches the network through requests (downloads), urllib3 (Elasticsearch's transport), httpx/httpx2 and
httpcore (huggingface_hub, the OpenAI client) and the standard library. Each raises its own exception classes
and wraps the others (huggingface_hub's ``LocalEntryNotFoundError`` around an httpx2 ``ConnectError`` around a
``socket.gaierror``), and a library upgrade may swap its HTTP client. So a network failure is recognised by
the *names* of the classes in its hierarchy and in its cause chain (:func:`is_network_error`), not by a list of
imports that goes stale; :func:`reason` names the root cause in a few words. The CLI's error boundary and
:func:`hub_call` (every Hugging Face Hub call) use both, so an offline machine always gets one short message
with what to do, and exit code 2.
"""

from __future__ import annotations

import contextlib
import errno
from collections.abc import Iterator

from beirx.errors import BeirxError

# Class names (anywhere in an exception's MRO) that mean "the network or the server could not be reached".
# HTTP status errors (the server answered) are deliberately absent.
_NETWORK_CLASSES = frozenset({
    "ConnectionError", "ConnectError", "ConnectTimeout", "ConnectionTimeout", "TimeoutError", "Timeout",
    "TimeoutException", "ReadTimeout", "WriteTimeout", "PoolTimeout", "NetworkError", "TransportError",
    "ProxyError", "NewConnectionError", "NameResolutionError", "MaxRetryError", "gaierror", "herror", "timeout",
    "URLError", "RemoteDisconnected", "ProtocolError", "SSLError", "OfflineModeIsEnabled", "APIConnectionError",
    "APITimeoutError",
})
# huggingface_hub: "not in the local cache, and the Hub could not be asked" (offline mode or no network).
_NOT_CACHED_CLASSES = frozenset({"LocalEntryNotFoundError", "OfflineModeIsEnabled"})

HUB_OFFLINE_HINT = ("Offline? Set HF_HUB_OFFLINE=1 so that only the local Hugging Face cache is used, without "
                    "waiting for the network.")


def _chain(exc: BaseException | None) -> Iterator[BaseException]:
    """``exc`` and the exceptions it was raised from or while handling (each once)."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        yield exc
        nested = exc.args[0] if exc.args and isinstance(exc.args[0], BaseException) else None
        exc = exc.__cause__ or exc.__context__ or nested


def _class_names(exc: BaseException) -> set[str]:
    if isinstance(exc, BrokenPipeError) or type(exc).__module__.startswith("filelock"):
        return set()  # a closed pipe (``beirx ... | head``) or a lock that timed out: not the network
    return {cls.__name__ for cls in type(exc).__mro__}


def is_network_error(exc: BaseException) -> bool:
    """Whether ``exc`` (or what caused it) is a failure to reach a server, in any client library."""
    for link in _chain(exc):
        if _class_names(link) & (_NETWORK_CLASSES | _NOT_CACHED_CLASSES):
            return True
    return False


def reason(exc: BaseException) -> str:
    """The root cause in a few words: name not resolved, connection refused, timed out, offline mode."""
    links = list(_chain(exc))
    for link in links:
        names, text = _class_names(link), str(link)
        if "OfflineModeIsEnabled" in names or "HF_HUB_OFFLINE" in text or "outgoing traffic has been disabled" in text:
            return "offline mode: HF_HUB_OFFLINE=1"
    for link in links:
        names, text = _class_names(link), str(link)
        if names & {"gaierror", "NameResolutionError"} or any(s in text for s in (
                "Name or service not known", "Failed to resolve", "nodename nor servname", "Temporary failure in name")):
            return "name not resolved"
        if "ConnectionRefusedError" in names or getattr(link, "errno", None) == errno.ECONNREFUSED or \
                "Connection refused" in text:
            return "connection refused"
        if names & {"TimeoutError", "Timeout", "TimeoutException", "ConnectTimeout", "ReadTimeout", "timeout",
                    "ConnectionTimeout"}:
            return "timed out"
    return "connection failed"


def unreachable(exc: BaseException) -> bool:
    """DNS failure or connection refused: the host is not there, so a retry is only a delay."""
    return reason(exc) in ("name not resolved", "connection refused")


class HubUnavailable(BeirxError):
    """A Hub resource that is neither in the local Hugging Face cache nor reachable."""

    def __init__(self, what: str, cause: str, instead: str):
        self.what, self.cause, self.instead = what, cause, instead
        hint = "" if "HF_HUB_OFFLINE" in cause else f" {HUB_OFFLINE_HINT}"
        super().__init__(f"cannot {what}: it is not in the local Hugging Face cache and the Hub cannot be reached "
                         f"({cause}); {instead}.{hint}")


def _hub_refusal(exc: BaseException) -> str | None:
    """``HTTP <status>: <first line>`` when the Hub answered with an error (unknown repo, gated, bad revision)."""
    for link in _chain(exc):
        names = _class_names(link)
        if names & {"HfHubHTTPError", "RevisionNotFoundError", "RepositoryNotFoundError", "EntryNotFoundError"}:
            status = getattr(getattr(link, "response", None), "status_code", None)
            first = (str(link).strip().splitlines() or [type(link).__name__])[0]
            return f"HTTP {status}: {first}" if status else first
    return None


@contextlib.contextmanager
def hub_call(what: str, instead: str) -> Iterator[None]:
    """Run a Hugging Face Hub call; any failure becomes a one-paragraph :class:`BeirxError`.

    ``what`` completes "cannot ..." (e.g. "look up the revision of ORG/NAME"); ``instead`` says what to pass
    when the Hub is out of reach (e.g. "pass --revision SHA"). Offline or unreachable, in any exception
    family the installed huggingface_hub raises: :class:`HubUnavailable` with :data:`HUB_OFFLINE_HINT`; the
    Hub's own refusal (unknown repository, gated, missing revision): what it answered.
    """
    try:
        yield
    except BeirxError:
        raise
    except Exception as exc:
        if is_network_error(exc):
            raise HubUnavailable(what, reason(exc), instead) from exc
        refusal = _hub_refusal(exc)
        if refusal is not None:
            raise BeirxError(f"cannot {what}: the Hugging Face Hub answered {refusal}; {instead}") from exc
        raise
