"""The ingestion outbox (projection/) and the webhooks delivered through it (events/): polling,
attempts, backoff, claim timeouts and which targets a webhook may reach."""

from __future__ import annotations

from pydantic import BaseModel, Field


class OutboxSettings(BaseModel):
    """Outbox jobs and webhook deliveries."""

    outbox_poll_seconds: int = Field(30, ge=1)
    outbox_max_attempts: int = Field(
        5, ge=1, description="Attempts of an outbox job before it stays failed."
    )
    outbox_retry_backoff_seconds: float = Field(
        30.0, ge=0.0, description="Delay before the first retry; doubles on each further one."
    )
    outbox_retry_max_seconds: float = Field(
        3600.0, ge=0.0, description="Longest delay between two attempts of an outbox job.")
    outbox_processing_timeout_seconds: int = Field(
        600, ge=1, description="A job claimed longer ago than this is claimable again."
    )
    webhook_timeout_seconds: float = Field(
        5.0, gt=0.0, le=60.0,
        description="Timeout of one webhook delivery (connect, read, write); a timeout is a "
        "failed attempt, retried through the outbox.")
    webhook_allow_private_targets: bool = Field(
        False,
        description="Allow webhook URLs that resolve to loopback or private addresses (tests, "
        "a receiver on the same host or network). Link-local addresses (169.254.0.0/16, "
        "fe80::/10: cloud metadata), multicast and unspecified ones are refused always.")
