"""Execution, the second step of :mod:`beirx.translate.pipeline`: who translates the batches.

The driver (:mod:`.driver`) claims each batch in the translation memory, hands it to an executor and commits
its translations; every executor takes and returns the same work (:mod:`.work`): this process
(:mod:`.executors`, which also chooses among them), translator replicas on Ray (:mod:`.ray_executor`) or the
OpenAI Batch API (:mod:`.openai_batch`). :mod:`.shards` partitions the batches across machines.
"""
