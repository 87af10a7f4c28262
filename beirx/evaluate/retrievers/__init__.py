"""First-stage retrievers, by name. Adding one is a module plus one line here."""

from beirx.registry import Registry

RETRIEVERS = Registry("retriever", {
    "bm25": "beirx.evaluate.retrievers.bm25:BM25Retriever",
    "elasticsearch": "beirx.evaluate.retrievers.elasticsearch:ElasticsearchRetriever",
    "dense": "beirx.evaluate.retrievers.dense:DenseRetriever",
    "splade": "beirx.evaluate.retrievers.splade:SpladeRetriever",
})
