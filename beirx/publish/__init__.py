"""Publishing: Hub dataset export/push and download, dataset/results cards, MTEB tasks and results.

Modules: :mod:`~beirx.publish.hub` (export + push), :mod:`~beirx.publish.hub_download` (``hf:`` datasets),
:mod:`~beirx.publish.cards`, :mod:`~beirx.publish.mteb_task`, :mod:`~beirx.publish.mteb_results`. Heavy
dependencies (huggingface_hub, datasets, pyarrow, mteb) are imported inside functions.
"""
