"""Publishing: Hub dataset export/push, dataset/results cards, MTEB tasks and results.

Modules: :mod:`~beirx.publish.hub` (export + push), :mod:`~beirx.publish.cards`,
:mod:`~beirx.publish.mteb_task`, :mod:`~beirx.publish.mteb_results`. Downloading ``hf:`` datasets is a data
source, in :mod:`beirx.data.hub_source`. Heavy dependencies (huggingface_hub, datasets, pyarrow, mteb) are
imported inside functions.
"""
