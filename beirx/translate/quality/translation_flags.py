"""The ``translation_flags`` quality method: what the translation stage itself found wrong.

An LLM backend (:mod:`beirx.translate.llm`) validates every answer and, when its retries are used up, writes
the ``--fallback`` translator's output or the LLM's answer flagged, listing each such record with the LLM's
rejection reasons in ``translation_flags.jsonl`` beside the data (:mod:`beirx.translate.output.outcome`). This
method brings those records into the quality report, so they are flagged, listed and counted with every
other method's evidence: reason ``llm_fallback`` or ``llm_flagged``, the LLM's reasons under ``details.llm``.
Always on; without the file (any other backend) it flags nothing. No per-row score.
"""

from __future__ import annotations

from typing import Any

from beirx.translate.output.outcome import FALLBACK, FLAGGED, FLAGS_FILE, read_flags
from beirx.translate.quality.base import FieldPairs, MethodResult, QualityContext, QualityMethod


class TranslationFlags(QualityMethod):
    name = "translation_flags"
    default = True
    flags = {
        f"llm_{FALLBACK}": f"the LLM's answers were rejected; the --fallback translator wrote it ({FLAGS_FILE})",
        f"llm_{FLAGGED}": f"the LLM's answers were rejected and it was written flagged ({FLAGS_FILE})",
    }

    def describe(self, context: QualityContext) -> dict[str, Any]:
        present = context.translated_root is not None and (context.translated_root / FLAGS_FILE).is_file()
        return {"file": FLAGS_FILE, "present": present}

    def __init__(self):
        self.found: dict[str, dict] | None = None  # the field's records, read on its first chunk
        self.records = 0

    def score(self, pairs: FieldPairs, context: QualityContext) -> MethodResult:
        if self.found is None:
            self.found = read_flags(context.translated_root).get(pairs.field, {}) if context.translated_root else {}
        result = MethodResult()
        for item in pairs.ids:
            flag = self.found.get(item)
            if flag:
                llm = {"outcome": flag["outcome"], "reasons": flag["reasons"]}
                result.flag(item, f"llm_{flag['outcome']}", llm=llm)
                self.records += 1
        return result

    def finish(self, field: str, values, context: QualityContext):
        summary = {"records": self.records} if self.found else {}
        self.found, self.records = None, 0
        return {}, summary
