"""What a report is asked for (``beirx report`` flags and :func:`beirx.report.build.build_report` keywords)."""

from __future__ import annotations

from dataclasses import dataclass, field

from beirx.errors import BeirxError

TESTS = {"permutation": "two-sided paired randomization test", "t": "two-sided paired t-test"}


@dataclass
class ReportOptions:
    """``metric``: the systems table, plots and quality analysis; ``language_metrics``: the languages table.

    ``test`` marks significance (``permutation`` or ``t``; both are always computed and listed) at ``alpha``
    after Holm-Bonferroni across each table; ``permutations`` and ``seed`` drive the randomization test,
    ``bootstrap`` > 0 adds paired bootstrap confidence intervals with that many resamples.
    """

    metric: str = "NDCG@10"
    language_metrics: list[str] = field(default_factory=lambda: ["NDCG@10", "Recall@100"])
    baseline: str | None = "bm25"
    source_language: str | None = None
    test: str = "permutation"
    alpha: float = 0.05
    permutations: int = 10_000
    seed: int = 0
    bootstrap: int = 0
    quality: list[str] = field(default_factory=list)
    plots: bool = True
    title: str = "beirx report"

    def __post_init__(self) -> None:
        if self.test not in TESTS:
            raise BeirxError(f"unknown test {self.test!r}; choose one of: {', '.join(TESTS)}")
        if not 0 < self.alpha < 1:
            raise BeirxError(f"alpha must be between 0 and 1, got {self.alpha}")
        if self.permutations < 1:
            raise BeirxError(f"permutations must be positive, got {self.permutations}")


def describe_test(options: ReportOptions) -> str:
    """The caption text of a significance mark: test, alpha, correction."""
    what = TESTS[options.test]
    if options.test == "permutation":
        what += f" ({options.permutations:,} permutations, seed {options.seed}; exact when 2^n is smaller)"
    return f"p < {options.alpha:g} by a {what}, Holm-Bonferroni-corrected over the table's comparisons"
