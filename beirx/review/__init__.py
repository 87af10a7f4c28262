"""The REVIEW stage: native speakers verify a sample of a machine translation (``beirx review``).

``sample`` draws a stratified, seeded sample (worst by automatic QE, queries, documents, random);
``store`` keeps it and every rating in ``<dataset>/review/review.sqlite``; ``app`` is the web app they rate
in and its server (pages in ``routes``, checks in ``security``); ``export`` turns the ratings into
``review.json`` with agreement, the acceptable share and correlations with the automatic scores
(``statistics``); ``apply`` writes corrected translations into the dataset. The stage reads earlier stages'
results through the typed artifacts only.
"""
