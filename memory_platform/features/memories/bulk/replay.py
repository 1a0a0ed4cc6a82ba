"""The ledger decisions of one loader share, replayed in line order.

A batch is written with COPY, so ``store_memory``'s decisions (ledger/policy.py) are taken
here in memory, in the order one-by-one writes would have taken them, and written afterwards
in bulk: the creating row's policy decision; a restatement that activates an undecided
assertion; and which new row gives an assertion its vector (the first one while the
assertion is recallable).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from memory_platform.features.memories.bulk.rows import ImportRow
from memory_platform.shared.ledger.policy import (
    POLICY_ACTIVATED,
    RESTATEMENT_REASON,
    PolicyDecision,
    created_state,
    restatement_activates,
    write_path_decision,
)
from memory_platform.shared.ledger.recall import is_approved_active


@dataclass
class AssertionRef:
    """The assertion of a new fact row, as the database has it after the insert."""

    id: uuid.UUID
    status: str
    review_state: str
    created: bool = False


@dataclass(frozen=True)
class Hit:
    """A live memory in the database that a row repeats."""

    memory_id: uuid.UUID
    assertion_id: uuid.UUID | None
    status: str | None
    review_state: str | None


def decision_of(row: ImportRow) -> PolicyDecision:
    """The activation table's decision for a resolved row (origin ``import``)."""
    assert row.audience is not None
    return write_path_decision(row.trust_class, row.assertion_type, row.audience.kind,
                               origin="import")


# A review row: (instance_key, assertion_id, decision, reviewer_kind, reason_code).
Review = tuple[str, uuid.UUID, str, str, str]


@dataclass
class PolicyReplay:
    """The decisions of one share; :meth:`replay` fills ``reviews`` (in order), ``restated``
    (assertions a restatement activates), ``vectors`` (the row whose last vector each
    assertion stores) and the counts."""

    state: dict[uuid.UUID, list[str]] = field(default_factory=dict)
    reviews: list[Review] = field(default_factory=list)
    restated: set[uuid.UUID] = field(default_factory=set)
    vectors: dict[uuid.UUID, ImportRow] = field(default_factory=dict)
    created: int = 0
    activated: int = 0

    def replay(self, rows: list[ImportRow], refs: dict[int, AssertionRef],
               hits: dict[int, Hit], repeats: dict[int, list[ImportRow]]) -> None:
        """``rows``: the share's distinct rows; ``refs``: assertion of each new fact row
        (keyed by ``id(row)``); ``hits``: rows repeating a live memory (by line);
        ``repeats``: later rows repeating a share row (by the first row's line)."""
        events: list[tuple[int, ImportRow, uuid.UUID | None, bool]] = []
        for row in rows:
            hit = hits.get(row.line)
            if hit is not None:
                self._know(hit.assertion_id, hit.status, hit.review_state)
                assertion_id = hit.assertion_id
                events.append((row.line, row, assertion_id, False))
            else:
                ref = refs.get(id(row))
                assertion_id = ref.id if ref else None
                if ref and not ref.created:
                    self._know(ref.id, ref.status, ref.review_state)
                events.append((row.line, row, assertion_id, True))
            for repeat in repeats.get(row.line, ()):
                events.append((repeat.line, repeat, assertion_id, False))
        events.sort(key=lambda event: event[0])
        for _, row, assertion_id, new in events:
            if assertion_id is None:
                continue
            ref = refs.get(id(row)) if new else None
            if ref is not None and ref.created and assertion_id not in self.state:
                self._create(row, assertion_id)
            else:
                self._restate(row, assertion_id)
            if new and row.vectors is not None and assertion_id not in self.vectors \
                    and self._recallable(assertion_id):
                self.vectors[assertion_id] = row

    def _know(self, assertion_id: uuid.UUID | None, status: str | None,
              review_state: str | None) -> None:
        if assertion_id is not None and assertion_id not in self.state:
            self.state[assertion_id] = [status or "", review_state or ""]

    def _create(self, row: ImportRow, assertion_id: uuid.UUID) -> None:
        decision = decision_of(row)
        self.state[assertion_id] = list(created_state(decision))
        self._review(row, assertion_id, decision.review_decision, decision.reason_code)
        self.created += 1
        self.activated += decision.activate

    def _restate(self, row: ImportRow, assertion_id: uuid.UUID) -> None:
        state = self.state.get(assertion_id)
        if state is None or not restatement_activates(state[1], decision_of(row)):
            return
        state[:] = POLICY_ACTIVATED
        self._review(row, assertion_id, "activate", RESTATEMENT_REASON)
        self.restated.add(assertion_id)
        self.activated += 1

    def _review(self, row: ImportRow, assertion_id: uuid.UUID, decision: str,
                reason: str) -> None:
        assert row.ctx is not None
        self.reviews.append((row.ctx.instance_key, assertion_id, decision, "policy", reason))

    def _recallable(self, assertion_id: uuid.UUID) -> bool:
        return is_approved_active(*self.state[assertion_id])
