"""Planning, the first step of :mod:`beirx.translate.pipeline`: what is translated, and what it may cost.

A text becomes parts (:mod:`.text_plan`): sentences (:mod:`.segment`), or for LLM backends whole queries and
documents (:mod:`.document_units`), with URLs, numbers and code kept verbatim (:mod:`.placeholders`). A dataset
becomes its unique segments on disk, sorted by length (:mod:`.dataset_plan`, :mod:`.segment_store`). Before
anything is sent, a paid run is estimated and capped (:mod:`.budget`, :mod:`.cost_estimate`), and a subset's
cost is put beside its full dataset's (:mod:`.subset_cost`).
"""
