"""One method per API operation, shared by the sync and the async client.

Each method builds its request (path ids, query string, a body validated by the generated
request model, so a wrong field fails here, before anything is sent) and hands it to
``self._send``: :class:`memory_platform.client.MemoryClient` sends it and answers the model;
:class:`memory_platform.client.AsyncMemoryClient` answers an awaitable of it.

Bodies take their required fields by name and the rest as keyword arguments of the request
model (snake_case, e.g. ``store("...", occurred_at=..., subject_refs={...})``). Reads take
the query string's names in snake_case. ``context`` is the conversation context a request
claims (``CallerContext`` or a dict: ``session_key``, ``channel_thread_key``, ...; ``user_id``
for runtime keys only).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from pydantic import BaseModel

from memory_platform.client import models as m
from memory_platform.client.operations import context_of, query_of

Context = m.CallerContext | dict[str, Any] | None


class Methods(ABC):
    """The API's operations; a subclass sends them (``_send``: blocking, or awaitable)."""

    @abstractmethod
    def _send(self, name: str, *, path: dict[str, Any] | None = None,
              query: dict[str, str] | None = None, body: BaseModel | None = None) -> Any:
        """Send operation ``name`` of ``OPERATIONS`` and answer its model."""

    # -- memories --------------------------------------------------------------------------

    def store(self, content: str, *, context: Context = None, **fields: Any) -> m.StoreResponse:
        """Write one memory (``MemoryCreate``: visibility, subject_refs, occurred_at,
        valid_until, subject, predicate, metadata, ...). The same content in the same
        audience is answered ``deduplicated`` and stored once."""
        return self._send("store", body=m.MemoryCreate(content=content,
                                                       context=context_of(context), **fields))

    def search(self, query: str, *, limit: int | None = None, scope: str | None = None,
               min_score: float | None = None, filter: dict[str, Any] | str | None = None,
               source_types: list[str] | str | None = None,
               subject_refs: dict[str, str] | None = None, occurred_after: str | None = None,
               occurred_before: str | None = None, created_after: str | None = None,
               created_before: str | None = None, context: Context = None) -> m.SearchResponse:
        """Memories that answer ``query``, best first, among those the caller may see."""
        return self._send("search", query=query_of(
            context, query=query, limit=limit, scope=scope, min_score=min_score, filter=filter,
            source_types=source_types, subject_refs=subject_refs, occurred_after=occurred_after,
            occurred_before=occurred_before, created_after=created_after,
            created_before=created_before))

    def list_memories(self, *, filter: dict[str, Any] | str | None = None,
                      source_types: list[str] | str | None = None,
                      occurred_after: str | None = None, occurred_before: str | None = None,
                      created_after: str | None = None, created_before: str | None = None,
                      ids: list[str] | None = None, limit: int | None = None,
                      cursor: str | None = None,
                      context: Context = None) -> m.MemoryListResponse:
        """The memories the caller may recall, newest first, with their metadata (the
        search's filters, no question; ``ids``: only these, a batch of exact reads;
        ``next_cursor``: the next page; :meth:`iter_memories` follows it)."""
        return self._send("list_memories", query=query_of(
            context, filter=filter, source_types=source_types, occurred_after=occurred_after,
            occurred_before=occurred_before, created_after=created_after,
            created_before=created_before, ids=ids, limit=limit, cursor=cursor))

    def get_memory(self, memory_id: str, *, context: Context = None) -> m.MemoryOut:
        """One memory, exactly, under the context a search found it in."""
        return self._send("get_memory", path={"memory_id": memory_id},
                          query=query_of(context))

    def correct(self, memory_id: str, content: str, *, metadata: dict[str, Any] | None = None,
                context: Context = None) -> m.CorrectionResponse:
        """Replace a memory by what is true instead (an agent key's correction waits for
        review); ``metadata``: the new memory's own (omitted: the old one's is kept). Not
        retried: a repeat would correct twice."""
        return self._send("correct", path={"memory_id": memory_id}, body=m.MemoryCorrection(
            content=content, metadata=metadata, context=context_of(context)))

    def forget(self, memory_id: str) -> m.ForgetResponse:
        """Delete one of your memories and what was derived only from it."""
        return self._send("forget", path={"memory_id": memory_id})

    # -- the context facade ----------------------------------------------------------------

    def context_search(self, query: str, *, context: Context = None,
                       **fields: Any) -> m.ContextSearchResponse:
        """Memories, assertions and session history in one ranking (``ContextSearch``:
        depth, intent, limit, filter, source_types, subject_refs, time ranges)."""
        return self._send("context_search", body=m.ContextSearch(
            query=query, context=context_of(context), **fields))

    def context_get(self, item_id: str, *, context: Context = None) -> m.ContextItemOut:
        """One item of a context search, exactly."""
        return self._send("context_get", path={"item_id": item_id}, query=query_of(context))

    # -- sessions --------------------------------------------------------------------------

    def append(self, session_key: str, items: list[m.SessionItemIn | dict[str, Any]], *,
               run_id: str | None = None,
               context: Context = None) -> m.SessionAppendResponse:
        """Append turn items (role, content, client_item_id, ...) to a session's lossless
        history. Retried only when every item carries ``client_item_id``."""
        return self._send("append", path={"session_key": session_key}, body=m.SessionAppend(
            items=items, run_id=run_id, context=context_of(context)))

    def complete(self, session_key: str, run_id: str, *, context: Context = None,
                 **fields: Any) -> m.RunCompletionResponse:
        """Close a run (``RunComplete``: prompt_tokens, context_budget_tokens): the platform
        compacts and flushes the session when it is due."""
        return self._send("complete", path={"session_key": session_key, "run_id": run_id},
                          body=m.RunComplete(context=context_of(context), **fields))

    def replay(self, session_key: str, *, budget_tokens: int | None = None,
               context: Context = None) -> m.ReplayResponse:
        """What a runtime sends the model for a session: the latest summary and the newest
        verbatim turns within the budget."""
        return self._send("replay", path={"session_key": session_key},
                          query=query_of(context, budget_tokens=budget_tokens))

    def grep(self, pattern: str, *, all_sessions: bool | None = None,
             roles: list[str] | str | None = None, limit: int | None = None,
             before: str | None = None, context: Context = None) -> m.GrepResponse:
        """Session messages matching ``pattern`` (newest first; ``before``: the next page)."""
        return self._send("grep", query=query_of(
            context, pattern=pattern, all_sessions=all_sessions, roles=roles, limit=limit,
            before=before))

    def describe(self, node_id: str, *, context: Context = None) -> m.SessionNodeOut:
        """One message or summary of a session's history."""
        return self._send("describe", path={"node_id": node_id}, query=query_of(context))

    def expand(self, node_id: str, *, limit: int | None = None, after_seq: int | None = None,
               context: Context = None) -> m.ExpandResponse:
        """The raw messages under a summary, in order (``after_seq``: the next page)."""
        return self._send("expand", path={"node_id": node_id},
                          query=query_of(context, limit=limit, after_seq=after_seq))

    def items(self, session_key: str, *, limit: int | None = None,
              after_seq: int | None = None, before_seq: int | None = None,
              context: Context = None) -> m.SessionItemsResponse:
        """A page of the session's items exactly as written (``raw`` included), in order:
        the newest by default; ``after_seq`` pages forward (``next_after_seq``),
        ``before_seq`` backward (``next_before_seq``). :meth:`iter_items` reads them all."""
        return self._send("items", path={"session_key": session_key}, query=query_of(
            context, limit=limit, after_seq=after_seq, before_seq=before_seq))

    def pop_item(self, session_key: str, *, context: Context = None) -> m.SessionItemPopped:
        """Remove the newest item you wrote in the session and what was derived from it
        (NotFound: none; Conflict ``item_compacted``: a summary covers it). Not retried: a
        repeat would remove the item before it."""
        return self._send("pop_item", path={"session_key": session_key},
                          query=query_of(context))

    def clear_items(self, session_key: str, *,
                    context: Context = None) -> m.SessionItemsCleared:
        """Remove every item you wrote in the session and what was derived from them (an
        otherwise empty session goes too)."""
        return self._send("clear_items", path={"session_key": session_key},
                          query=query_of(context))

    def participants(self, session_key: str) -> m.SessionParticipantsResponse:
        """Who takes part in a session (admin or runtime key)."""
        return self._send("participants", query=query_of(session_key=session_key))

    def add_participant(self, session_key: str, user_id: str) -> m.SessionParticipantAdded:
        return self._send("add_participant", body=m.SessionParticipantIn(
            session_key=session_key, user_id=user_id))

    # -- knowledge and assertions ----------------------------------------------------------

    def knowledge_search(self, query: str, *, limit: int | None = None,
                         context: Context = None) -> m.KnowledgeSearchResponse:
        """Entities and claims of the knowledge graph that match ``query``."""
        return self._send("knowledge_search", body=m.KnowledgeSearch(
            query=query, limit=limit, context=context_of(context)))

    def entity(self, entity_id: str, *, context: Context = None) -> m.KnowledgeEntityResponse:
        return self._send("entity", path={"entity_id": entity_id}, query=query_of(context))

    def neighbors(self, entity_id: str, *, depth: int | None = None, limit: int | None = None,
                  context: Context = None) -> m.KnowledgeNeighborsResponse:
        return self._send("neighbors", path={"entity_id": entity_id},
                          query=query_of(context, depth=depth, limit=limit))

    def explain_claim(self, claim_id: str, *,
                      context: Context = None) -> m.KnowledgeExplainResponse:
        """A claim with its evidence (provenance)."""
        return self._send("explain_claim", path={"claim_id": claim_id},
                          query=query_of(context))

    def as_of(self, at: str, *, query: str | None = None, limit: int | None = None,
              context: Context = None) -> m.AssertionAsOfResponse:
        """The assertions that were true at ``at`` (ISO-8601 with an offset)."""
        return self._send("as_of", query=query_of(context, at=at, query=query, limit=limit))

    # -- feedback --------------------------------------------------------------------------

    def feedback_injected(self, run_id: str, assertion_ids: list[str]) -> m.InjectedResponse:
        """The assertions a run put in the model's context."""
        return self._send("feedback_injected", body=m.InjectedFeedback(
            run_id=run_id, assertion_ids=assertion_ids))

    def feedback_explicit(self, run_id: str, assertion_ids: list[str], kind: str, *,
                          note: str | None = None,
                          context: Context = None) -> m.ExplicitResponse:
        """``kind``: retrieved, helpful or unhelpful."""
        return self._send("feedback_explicit", body=m.ExplicitFeedback(
            run_id=run_id, assertion_ids=assertion_ids, kind=kind, note=note,
            context=context_of(context)))

    def feedback_cited(self, run_id: str, response_text: str) -> m.CitedResponse:
        """The answer a run gave: the platform finds which injected assertions it cites."""
        return self._send("feedback_cited", body=m.CitedFeedback(
            run_id=run_id, response_text=response_text))

    # -- review ----------------------------------------------------------------------------

    def review_queue(self, *, kind: str | None = None, type: str | None = None,
                     audience: str | None = None, origin: str | None = None,
                     limit: int | None = None, cursor: str | None = None,
                     channel_thread_key: str | None = None,
                     group_room_id: str | None = None) -> m.ReviewQueueResponse:
        """What waits for a person's decision (``next_cursor``: the next page)."""
        return self._send("review_queue", query=query_of(
            kind=kind, type=type, audience=audience, origin=origin, limit=limit, cursor=cursor,
            channel_thread_key=channel_thread_key, group_room_id=group_room_id))

    def decide_assertion(self, assertion_id: str, decision: str,
                         **fields: Any) -> m.DecisionResponse:
        """``decision``: approve or reject (``AssertionDecisionIn``: reason_code, note,
        successor_id)."""
        return self._send("decide_assertion", path={"assertion_id": assertion_id},
                          body=m.AssertionDecisionIn(decision=decision, **fields))

    def decide_bulk(self, decision: str, **fields: Any) -> m.DecisionResponse:
        return self._send("decide_bulk", body=m.BulkDecisionIn(decision=decision, **fields))

    def resolve_conflict(self, conflict_id: str, action: str, *,
                         keep_id: str | None = None) -> m.DecisionResponse:
        return self._send("resolve_conflict", path={"conflict_id": conflict_id},
                          body=m.ConflictResolutionIn(action=action, keep_id=keep_id))

    def decide_wiki(self, proposal_id: str, decision: str, *,
                    reason: str | None = None) -> m.DecisionResponse:
        return self._send("decide_wiki", path={"proposal_id": proposal_id},
                          body=m.WikiDecisionIn(decision=decision, reason=reason))

    # -- events and the profile ------------------------------------------------------------

    def events(self, *, after: str | None = None, limit: int | None = None,
               kinds: list[str] | str | None = None,
               context: Context = None) -> m.EventListResponse:
        """Events the caller may see after the cursor ``after`` (``next_cursor``: continue
        from there; :meth:`iter_events` follows it)."""
        return self._send("events", query=query_of(context, after=after, limit=limit,
                                                   kinds=kinds))

    def profile(self, *, user_id: str | None = None) -> m.ProfileResponse:
        """The acting user's profile (``user_id``: the runtime's user)."""
        return self._send("profile", query=query_of(user_id=user_id))

    # -- users and channels (admin; channels also the runtime) -----------------------------

    def users(self) -> m.UsersResponse:
        return self._send("users")

    def set_sharing(self, user_id: str, share: bool) -> m.UserOut:
        return self._send("set_sharing", body=m.SharingIn(user_id=user_id, share=share))

    def channel_members(self, *, channel_key: str | None = None,
                        user_id: str | None = None) -> m.ChannelMembersResponse:
        return self._send("channel_members", query=query_of(channel_key=channel_key,
                                                            user_id=user_id))

    def add_channel_member(self, channel_key: str, user_id: str) -> m.ChannelMemberChange:
        return self._send("add_channel_member", body=m.ChannelMemberIn(
            channel_key=channel_key, user_id=user_id))

    def remove_channel_member(self, channel_key: str, user_id: str) -> m.ChannelMemberChange:
        return self._send("remove_channel_member", query=query_of(channel_key=channel_key,
                                                                  user_id=user_id))

    # -- operations (admin) ----------------------------------------------------------------

    def status(self) -> m.StatusResponse:
        return self._send("status")

    def reembed(self, *, limit: int | None = None) -> m.ReembedResponse:
        return self._send("reembed", body=m.ReembedRequest(limit=limit))

    def retention(self, **fields: Any) -> m.RetentionResponse:
        """One retention sweep (``RetentionRequest``: dry_run, audience_kind, ...)."""
        return self._send("retention", body=m.RetentionRequest(**fields))

    def sync_workspace(self) -> m.WorkspaceSyncResponse:
        return self._send("sync_workspace")

    def erase_user(self, user_id: str) -> m.ErasureResponse:
        """Erase a person: every memory, session item and derived row of theirs."""
        return self._send("erase_user", body=m.ErasureRequest(user_id=user_id))

    def user_profile(self, user_id: str, *, refresh: bool | None = None) -> m.ProfileResponse:
        return self._send("user_profile", query=query_of(user_id=user_id, refresh=refresh))

    def dreams(self, *, limit: int | None = None) -> m.DreamListResponse:
        return self._send("dreams", query=query_of(limit=limit))

    def launch_dream(self, **fields: Any) -> m.DreamLaunchResponse:
        """Start a Dream (``DreamLaunch``: partition or all_eligible, model, dry_run)."""
        return self._send("launch_dream", body=m.DreamLaunch(**fields))

    def dream(self, dream_id: str) -> m.DreamDetailResponse:
        return self._send("dream", path={"dream_id": dream_id})

    def rollback_dream(self, dream_id: str) -> m.DreamRollbackResponse:
        return self._send("rollback_dream", path={"dream_id": dream_id})

    def webhooks(self) -> m.WebhookListResponse:
        return self._send("webhooks")

    def add_webhook(self, url: str, **fields: Any) -> m.WebhookOut:
        return self._send("add_webhook", body=m.WebhookIn(url=url, **fields))

    def remove_webhook(self, webhook_id: str) -> m.WebhookOut:
        return self._send("remove_webhook", path={"webhook_id": webhook_id})

    def webhook_deliveries(self, webhook_id: str, *,
                           limit: int | None = None) -> m.WebhookDeliveriesResponse:
        return self._send("webhook_deliveries", path={"webhook_id": webhook_id},
                          query=query_of(limit=limit))
