"""Second-stage rerankers, by name. Adding one is a module plus one line here."""

from beirx.registry import Registry

RERANKERS = Registry("reranker", {
    "cross-encoder": "beirx.evaluate.rerankers.cross_encoder:CrossEncoderReranker",
    "bi-encoder": "beirx.evaluate.rerankers.bi_encoder:BiEncoderReranker",
    "monot5": "beirx.evaluate.rerankers.monot5:MonoT5Reranker",
    "colbert": "beirx.evaluate.rerankers.colbert:ColbertReranker",
    "llm-pointwise": "beirx.evaluate.rerankers.llm_pointwise:LLMPointwiseReranker",
    "llm-listwise": "beirx.evaluate.rerankers.llm_listwise:LLMListwiseReranker",
})
