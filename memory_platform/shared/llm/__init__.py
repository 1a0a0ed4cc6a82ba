"""Generic maintenance-model clients: the contract (``base``), an OpenAI-compatible client
(streamed, strict JSON) and the normaliser of a model's JSON answer. Which model a Dream uses,
and the offline extractive model, are Dreaming's (``dreaming.model``, ``dreaming.extractive``).
"""
