"""One options record for an LLM connection, used by every role that asks an LLM.

Three roles ask an LLM: the LLM translators (``beirx translate --translator openai|hf-llm``), the quality judge
(``beirx quality --judge-model M``) and the LLM rerankers (``beirx eval --reranker llm-pointwise|llm-listwise``).
What a connection needs is the same for all three, so it is declared once, as :data:`CONNECTION_OPTIONS`:

- where the LLM runs: ``backend`` ``openai`` (an OpenAI-compatible server) or ``transformers`` (a causal LM in
  this process), by default ``openai`` when ``base_url`` is given, else ``transformers`` (:func:`backend_for`);
- the server: ``base_url`` (else ``$OPENAI_BASE_URL``, else OpenAI's API; the key only from ``$OPENAI_API_KEY``);
- its traffic: ``concurrency`` requests in flight, ``timeout`` seconds without progress, ``deadline`` seconds per
  attempt in all, ``attempts`` per request and the first ``backoff`` delay (429/5xx/timeouts/dropped
  connections), the circuit breaker (``breaker_failures`` consecutive server failures once nothing has succeeded
  for ``breaker_seconds``): :class:`~beirx.models.llm.endpoint.Endpoint`, which checks them;
- its cost: ``price_in`` and ``price_out`` USD per million tokens, ``max_cost`` USD at most
  (:class:`~beirx.models.llm.usage.UsageMeter`).

The model is not part of the record: each command already names it its own way (``--model``,
``--judge-model``, ``--reranker-model``, repeatable per reranker), and a role's model is a required, role-specific
thing (a translation model, a judge, a reranker) rather than a setting of the connection.

**The prefix rule.** A role's connection flags are ``--<role>-<option>`` (the option's name with dashes), where
``<role>`` is ``llm`` for the LLM doing the command's main work (the translation in ``beirx translate``, the
reranking in ``beirx eval``) and ``judge`` for the quality judge: ``--llm-base-url``, ``--llm-attempts``,
``--judge-price-in``, ``--judge-breaker-failures``. This keeps every judge spelling and every reranker spelling
but two; the translator's unprefixed flags (``--base-url``, ``--concurrency``, ``--timeout``, ``--price-in``,
``--price-out``) and the rerankers' ``--llm-price-input/-output`` stay accepted as aliases, and ``--judge
openai|transformers`` is the alias of ``--judge-backend``. One exception: ``beirx translate`` keeps one spending
cap, ``--max-cost``, shared with the paid NMT backends, so its LLM role has no ``--llm-max-cost``.

A role is a :class:`Role`: its prefix, its old spellings, the defaults it changes (the listwise reranker waits
300 s: a window of 20 passages is a long prompt) and the names its component gives an option where another
name is recorded (the rerankers' ``price_input``/``price_output``, part of run file names). :func:`role_options`
turns it into the component's :class:`~beirx.options.Option` records; :class:`ConnectionSettings` is the typed
record a component builds from the values it was given, and connects with.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any

from beirx.argtypes import non_negative_float, positive_float, positive_int
from beirx.errors import BeirxError
from beirx.models.llm.client import LLMClient
from beirx.models.llm.endpoint import MAX_CONCURRENCY, Endpoint
from beirx.models.llm.local import LocalLLM
from beirx.models.llm.protocol import LLM
from beirx.models.llm.usage import Prices, UsageMeter
from beirx.options import Option, defaults, read_options

#: Where an LLM runs: a server speaking OpenAI's API, or a causal LM in this process.
BACKENDS = ("openai", "transformers")
SERVER, LOCAL = BACKENDS

#: The server's limits default to :class:`~beirx.models.llm.endpoint.Endpoint`'s (one place for them).
_LIMITS = {f.name: f.default for f in fields(Endpoint)}

#: Options only a server uses (a model in this process has no transport, no retries, no breaker).
SERVER_ONLY = ("base_url", "concurrency", "timeout", "deadline", "attempts", "backoff", "breaker_failures",
               "breaker_seconds")

CONNECTION_OPTIONS: tuple[Option, ...] = (
    Option("backend", choices=BACKENDS,
           help="where the LLM runs: openai (an OpenAI-compatible server) or transformers (a causal LM in this "
                "process); default: openai when the base URL is given, else transformers"),
    Option("base_url", metavar="URL",
           help="OpenAI-compatible server, e.g. http://localhost:8000/v1 (default: $OPENAI_BASE_URL, else OpenAI's "
                "API; the key only from $OPENAI_API_KEY)"),
    Option("concurrency", positive_int, _LIMITS["concurrency"], metavar="N",
           help=f"requests in flight (at most {MAX_CONCURRENCY}; 1 for a server that answers one at a time)"),
    Option("timeout", positive_float, _LIMITS["timeout"], metavar="SECONDS",
           help="seconds a request attempt may go without progress (no answer yet, no new token)"),
    Option("deadline", positive_float, _LIMITS["deadline"], metavar="SECONDS",
           help="seconds a request attempt may take in all (default 10 x the timeout)"),
    Option("attempts", positive_int, _LIMITS["attempts"], metavar="N",
           help="tries per request on 429, 5xx, timeouts and dropped connections"),
    Option("backoff", non_negative_float, _LIMITS["backoff"], metavar="SECONDS",
           help="first wait between attempts in seconds (doubling, with jitter; the server's Retry-After wins)"),
    Option("breaker_failures", positive_int, _LIMITS["breaker_failures"], metavar="N",
           help="circuit breaker: consecutive server failures that stop the run (once nothing has succeeded for "
                "the breaker's seconds)"),
    Option("breaker_seconds", non_negative_float, _LIMITS["breaker_seconds"], metavar="SECONDS",
           help="circuit breaker: seconds without a success before the failures stop the run"),
    Option("price_in", non_negative_float, 0.0, metavar="USD",
           help="USD per million input tokens (the cost reported and capped)"),
    Option("price_out", non_negative_float, 0.0, metavar="USD", help="USD per million output tokens"),
    Option("max_cost", non_negative_float, None, metavar="USD",
           help="stop before the spending (at the prices) would exceed this many USD; what was done is kept"),
)


@dataclass(frozen=True)
class Role:
    """An LLM's role in a command: the flag prefix (``llm-``, ``judge-``), what the help calls it, and what the
    role keeps of older spellings.

    ``aliases``: option name -> older flags still accepted; ``names``: option name -> the component's parameter
    name where it differs (recorded names stay); ``defaults``: option name -> the role's default; ``unflagged``:
    options set another way in this command (no flag of the role's)."""

    prefix: str
    owner: str
    aliases: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    names: Mapping[str, str] = field(default_factory=dict)
    defaults: Mapping[str, Any] = field(default_factory=dict)
    unflagged: tuple[str, ...] = ()

    def flag(self, option: str) -> str:
        """The role's flag of a connection option (``--judge-base-url``)."""
        return f"--{self.prefix}{option.replace('_', '-')}"

    def option_name(self, option: str) -> str:
        return self.names.get(option, option)


def role_options(role: Role, only: tuple[str, ...] | None = None) -> tuple[Option, ...]:
    """:data:`CONNECTION_OPTIONS` as ``role`` spells them (``only``: these options alone)."""
    out = []
    for option in CONNECTION_OPTIONS:
        if only is not None and option.name not in only:
            continue
        out.append(replace(option, name=role.option_name(option.name),
                           default=role.defaults.get(option.name, option.default),
                           flag="" if option.name in role.unflagged else role.flag(option.name),
                           aliases=tuple(role.aliases.get(option.name, ())),
                           help=f"{role.owner}: {option.help}" if role.owner else option.help))
    return tuple(out)


def backend_for(backend: str | None, base_url: str | None, what: str) -> str:
    """The backend asked for: explicit, else a server when ``base_url`` is given, else in process."""
    chosen = backend or (SERVER if base_url else LOCAL)
    if chosen not in BACKENDS:
        raise BeirxError(f"{what} backend must be one of {', '.join(BACKENDS)}, got {chosen!r}")
    return chosen


def connect(model: str, *, backend: str | None = None, base_url: str | None = None, meter: UsageMeter | None = None,
            concurrency: int = 8, timeout: float = 120.0, device: str | None = None, batch_size: int = 8,
            revision: str | None = None, what: str = "the LLM", flag: str = "model", **transport: Any) -> LLM:
    """An :class:`~beirx.models.llm.protocol.LLM` for ``model``: served at ``base_url`` (or ``$OPENAI_BASE_URL``
    with ``backend="openai"``; ``concurrency`` requests in flight, ``timeout`` seconds without progress,
    ``transport`` the other :class:`~beirx.models.llm.endpoint.Endpoint` limits: deadline, attempts, backoff,
    breaker), else run in this process (``device``, ``batch_size`` requests generated together, ``revision`` of a
    Hub model; a model folder that is not a causal LM is refused, naming ``flag``)."""
    if backend_for(backend, base_url, what) == SERVER:
        return LLMClient(Endpoint.resolve(model, base_url, concurrency=int(concurrency), timeout=float(timeout),
                                          **transport), meter=meter)
    needed_by = f"{what} transformers" if what.startswith("--") else what
    return LocalLLM(model, device=device, batch_size=batch_size, revision=revision, meter=meter, flag=flag,
                    needed_by=needed_by)


@dataclass(frozen=True)
class ConnectionSettings:
    """The values of :data:`CONNECTION_OPTIONS`, read and checked once (:meth:`read`, which fills in the
    declared defaults); :meth:`connect` opens the LLM they describe."""

    backend: str | None
    base_url: str | None
    concurrency: int
    timeout: float
    deadline: float | None
    attempts: int
    backoff: float
    breaker_failures: int
    breaker_seconds: float
    price_in: float
    price_out: float
    max_cost: float | None

    @classmethod
    def read(cls, values: Mapping[str, Any], where: str = "", role: Role | None = None) -> ConnectionSettings:
        """Settings from ``values`` by option name (a role's own parameter names too), each read by its option
        (a bad value is refused naming it after ``where``); None or an empty text is the default."""
        names = {role.option_name(o.name): o.name for o in CONNECTION_OPTIONS} if role else {}
        options = [replace(o, name=role.option_name(o.name)) for o in CONNECTION_OPTIONS] if role else \
            CONNECTION_OPTIONS
        read = read_options(options, {k: v for k, v in values.items() if v not in (None, "")}, where)
        return cls(**{**defaults(CONNECTION_OPTIONS), **{names.get(key, key): value for key, value in read.items()}})

    @property
    def transport(self) -> dict[str, Any]:
        """The :class:`~beirx.models.llm.endpoint.Endpoint` limits (concurrency ... breaker)."""
        return {name: getattr(self, name) for name in SERVER_ONLY if name != "base_url"}

    def chosen_backend(self, what: str) -> str:
        return backend_for(self.backend, self.base_url, what)

    def endpoint(self, model: str) -> Endpoint:
        """The server and this connection's limits (``base_url``, else ``$OPENAI_BASE_URL``, else OpenAI's)."""
        return Endpoint.resolve(model, self.base_url, **self.transport)

    def prices(self) -> Prices:
        return Prices(self.price_in, self.price_out)

    def meter(self) -> UsageMeter:
        """A fresh usage meter at these prices and spending cap."""
        return UsageMeter(self.prices(), self.max_cost)

    def connect(self, model: str, *, meter: UsageMeter | None = None, device: str | None = None,
                batch_size: int = 8, revision: str | None = None, what: str = "the LLM", flag: str = "model") -> LLM:
        """The :class:`~beirx.models.llm.protocol.LLM` these settings describe (:func:`connect`)."""
        return connect(model, backend=self.backend, base_url=self.base_url, meter=meter, device=device,
                       batch_size=batch_size, revision=revision, what=what, flag=flag, **self.transport)

    def values(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}
