"""Events: every change of memory state, recorded once by the ledger's own triggers
(migration 0025), read with the visibility rule (:mod:`.store`) and delivered to webhooks
through the outbox (:mod:`.webhooks`; importing the package registers the handler)."""

from memory_platform.features.events import webhooks as _webhooks  # noqa: F401  (registers)
