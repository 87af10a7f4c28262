"""The interface every quality-estimation method implements and the registry of them by name
(:data:`QUALITY_METHODS`; adding a method is its module plus one line there): its options, per-row scores and
flags, whole-field flags and summary (:meth:`QualityMethod.finish`), and its lines in ``quality.md``, on dataset
cards and in ``beirx quality``'s printout. The runner (:mod:`~beirx.translate.quality.run`) stores and combines
everything generically, so a new method touches nothing else.
"""

from __future__ import annotations

import random
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from beirx.argtypes import OptionValueError
from beirx.errors import BeirxError
from beirx.options import Option
from beirx.registry import Registry

if TYPE_CHECKING:
    from beirx.artifacts.quality import FieldQuality, QualityReport

CHUNK = 8192  # rows a method scores at a time (memory per chunk, not per field)


@dataclass(frozen=True)
class Score:
    """A per-row score a method produces."""

    name: str
    description: str
    higher_is_better: bool = True
    scale: tuple[float, float] | None = None  # the values' range, the histogram's bounds; None = unbounded
    low_outlier: str | None = None  # the reason a row is flagged with when its value is a low outlier of its field


@dataclass
class FieldPairs:
    """One field's rows that every method scores, aligned by position."""

    field: str  # queries | corpus
    role: str  # query | passage: the encoders' prompt
    ids: list[str]
    sources: list[str]
    translations: list[str]

    def __len__(self) -> int:
        return len(self.ids)


@dataclass
class MethodResult:
    """What a method found on one field. Every mapping is keyed by item ID; rows a method did not score
    (outside its sample) are simply absent."""

    values: dict[str, dict[str, float | None]] = field(default_factory=dict)  # score -> id -> value (None: no answer)
    reasons: dict[str, list[str]] = field(default_factory=dict)  # id -> flag reasons
    details: dict[str, dict[str, Any]] = field(default_factory=dict)  # id -> evidence for flagged.jsonl
    texts: dict[str, dict[str, str]] = field(default_factory=dict)  # e.g. back_translation -> id -> text
    # per-row numbers :meth:`QualityMethod.finish` decides on (not stored): name -> id -> value
    measures: dict[str, dict[str, float]] = field(default_factory=dict)
    deferred: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)  # reason -> id -> evidence if flagged
    summary: dict[str, Any] = field(default_factory=dict)  # field-level figures
    scored: int = 0
    missing: int = 0

    def flag(self, item: str, reason: str, **details: Any) -> None:
        """Flag ``item`` with ``reason``; ``details`` (e.g. ``lost_numbers=["12"]``) go to its evidence."""
        self.reasons.setdefault(item, []).append(reason)
        if details:
            self.details.setdefault(item, {}).update(details)


@dataclass
class QualityContext:
    """What every method of one run shares: languages, seed, progress, the translated dataset's folder (for
    what the translation stage left beside the data) and the similarity encoder (built once, on first use, so
    a run that needs no embeddings loads no model)."""

    src_lang: str
    tgt_lang: str
    seed: int
    show_progress: bool
    encoder_factory: Callable[[], Any]
    translated_root: Path | None = None
    _judged: dict[str, dict[str, set[str]]] = field(default_factory=dict, repr=False)

    @cached_property
    def encoder(self):
        """The shared :class:`~beirx.translate.quality.pair_encoder.PairEncoder`."""
        return self.encoder_factory()

    def sample(self, pairs: FieldPairs, size: int | JudgedRows | None, purpose: str) -> list[int]:
        """Positions of a seeded random sample of at most ``size`` rows (all rows when ``size`` is None; the rows a
        split's qrels judge for :class:`JudgedRows`), in row order; the same seed, field and purpose give the same
        rows on every run."""
        if isinstance(size, JudgedRows):
            judged = self.judged(size.split)[pairs.field]
            return [i for i, item in enumerate(pairs.ids) if item in judged]
        if size is None or size >= len(pairs):
            return list(range(len(pairs)))
        return sorted(random.Random(f"{self.seed}-{pairs.field}-{purpose}").sample(range(len(pairs)), size))

    def judged(self, split: str) -> dict[str, set[str]]:
        """The query and document IDs the translated dataset's ``split`` qrels judge (any relevance), read once."""
        from beirx.data.beir_io import read_qrels

        if split in self._judged:
            return self._judged[split]
        if self.translated_root is None:
            raise BeirxError(f"qrels:{split} needs the translated dataset's folder")
        path = self.translated_root / "qrels" / f"{split}.tsv"
        if not path.is_file():
            have = sorted(p.stem for p in (self.translated_root / "qrels").glob("*.tsv"))
            raise BeirxError(f"{path}: no qrels for split {split!r} (available: {', '.join(have) or 'none'})")
        qrels = read_qrels(path)
        self._judged[split] = {"queries": set(qrels), "corpus": {doc for docs in qrels.values() for doc in docs}}
        return self._judged[split]


@dataclass(frozen=True)
class JudgedRows:
    """A sampled method's rows: those a split's qrels judge (the queries and the documents judged for them), the
    rows retrieval evaluation reads, instead of a random sample."""

    split: str

    def __str__(self) -> str:
        return f"qrels:{self.split}"


def rows_to_score(text: str) -> int | JudgedRows | None:
    """A sampled method's ``--*-sample``: a positive count (a seeded sample), ``all`` (None), or ``qrels:SPLIT``."""
    from beirx.argtypes import count_or_all

    if text.startswith("qrels:"):
        from beirx.paths import check_segment

        try:
            return JudgedRows(check_segment(text.removeprefix("qrels:"), "split"))
        except BeirxError as exc:
            raise OptionValueError(str(exc)) from None
    return count_or_all(text)


class QualityMethod(ABC):
    """One way of estimating translation quality without a reference translation."""

    name: ClassVar[str]
    scores: ClassVar[tuple[Score, ...]] = ()
    flags: ClassVar[dict[str, str]] = {}  # reason -> one line for the report's legend
    sample: int | JudgedRows | None = None  # rows per field this method scores; None = all
    default: ClassVar[bool] = False  # runs when nobody chose the methods (run_quality without methods=)
    # (note with {n}, figure label) when the rows it scored count as verification of a published dataset
    verifies: ClassVar[tuple[str, str] | None] = None
    # True: :meth:`score` gets the whole field in one piece (memory grows with the field; a sampled method's
    # sample is drawn over the field); False: chunk by chunk
    whole_field: ClassVar[bool] = False

    #: Its options, declared once (:class:`beirx.options.Option`): ``beirx quality``'s flags are generated from
    #: them; an option named as a constructor parameter has the constructor's default.
    OPTIONS: ClassVar[tuple[Option, ...]] = ()

    @classmethod
    def from_options(cls, given: Mapping[str, Any], src: str, tgt: str, use_cache: bool = True) -> QualityMethod | None:
        """The method configured by the options given (by name, as :func:`beirx.cli.flags.given` returns them), or
        None when they do not ask for it (by default: the method with its defaults, whatever was given);
        ``use_cache`` False: compute again what a cache holds."""
        return cls()

    @classmethod
    def report_section(cls, report: QualityReport) -> list[str]:
        """Markdown lines near the top of ``quality.md`` (after the translator), from the written report."""
        return []

    @classmethod
    def report_lines(cls, report: QualityReport, field: str) -> list[str]:
        """Markdown bullet lines of ``quality.md``'s summary about ``field`` (e.g. a corpus-level figure)."""
        return []

    @classmethod
    def card_figures(cls, entry: FieldQuality) -> dict[str, float | None]:
        """Headline figures of one field for a dataset card and ``beirx quality``'s printout (label -> value,
        None when not measured)."""
        return {}

    def close(self) -> None:
        """Release what the method holds (a back-translator's connections); whoever built it closes it."""

    @abstractmethod
    def describe(self, context: QualityContext) -> dict[str, Any]:
        """Model, revision, prompt hash and options: what ``quality.json`` records (never a secret)."""

    @abstractmethod
    def score(self, pairs: FieldPairs, context: QualityContext) -> MethodResult:
        """Score ``pairs``, one chunk of a field (or the field, :attr:`whole_field`), logging, not printing; the
        rows' flags that need the whole field are left to :meth:`finish` (a score's :attr:`Score.low_outlier`
        is flagged generically)."""

    def finish(self, field: str, values: dict[str, np.ndarray],
               context: QualityContext) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """After a field's last chunk: ``(reason -> mask over the field's rows, field summary)`` from ``values``,
        its scores and measures over the field's rows in order (NaN where absent); the summary is merged into
        the chunks'. A method keeping per-field state in itself resets it here."""
        return {}, {}


#: The methods by name, in the order they run; those marked ``default`` when nobody chose (``checks``,
#: ``translation_flags``, ``similarity``), in ``beirx quality`` ``checks`` and ``translation_flags`` always,
#: ``similarity`` unless ``--no-similarity``, the others when their flags ask for them.
QUALITY_METHODS = Registry("quality method", {
    "checks": "beirx.translate.quality.rule_checks:Checks",
    "translation_flags": "beirx.translate.quality.translation_flags:TranslationFlags",
    "similarity": "beirx.translate.quality.embedding:EmbeddingSimilarity",
    "roundtrip": "beirx.translate.quality.roundtrip:RoundTrip",
    "comet": "beirx.translate.quality.comet:Comet",
    "judge": "beirx.translate.quality.judge:LLMJudge",
})

MethodSpec = QualityMethod | str  # a built method, or a registry name built with its defaults


def resolve_methods(specs: Sequence[MethodSpec] | None) -> list[QualityMethod]:
    """The methods to run: ``specs`` built (a name through the registry, with its defaults), by default every
    registered method marked ``default``; two methods with one name or one score name are refused."""
    if specs is None:
        specs = [name for name in QUALITY_METHODS.in_order() if QUALITY_METHODS.get(name).default]
    methods = [spec if isinstance(spec, QualityMethod) else _build(spec) for spec in specs]
    names, seen = [m.name for m in methods], {}
    for method in methods:
        for score in method.scores:
            if score.name in seen:
                raise BeirxError(f"quality methods {seen[score.name]} and {method.name} both produce a score named "
                                 f"{score.name!r}")
            seen[score.name] = method.name
    if len(set(names)) != len(names):
        raise BeirxError(f"a quality method is listed twice: {', '.join(names)}")
    return methods


def _build(name: str) -> QualityMethod:
    cls = QUALITY_METHODS.get(name)
    try:
        return cls()
    except TypeError:
        raise BeirxError(f"quality method {name!r} needs options: build it (e.g. from its beirx quality flags, "
                         f"{cls.__name__}.from_options) and pass the method instead of its name") from None
