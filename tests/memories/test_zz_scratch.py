import numpy as np
from memory_platform.access import AccessContext
from memory_platform.memories.store import MemoryWrite, store_memory
from memory_platform.retrieval.search import search_memories
from memory_platform.embeddings import get_provider

def test_scratch(db, instance, hash_settings):
    ctx = AccessContext(instance, user_id="u1")
    base = "The VAT filing for the client is due on the tenth of each month."
    a = store_memory(db, hash_settings, ctx, MemoryWrite(base, source_type="manual", subject_refs={"mandantId": "nord"}))
    b = store_memory(db, hash_settings, ctx, MemoryWrite(base + " Noted in the archive.", source_type="manual", subject_refs={"mandantId": "sued"}))
    p = get_provider(hash_settings)
    q = p.embed_query("VAT filing due date")
    docs = p.embed_documents([base, base + " Noted in the archive."])
    print("numpy cos", docs @ q)
    for row in db.execute("select memory_id, embedding <=> %s::vector, vector_dims(embedding) from agent_memory_chunks where instance_key=%s", (q, instance)):
        print(row)
    for h in search_memories(db, hash_settings, ctx, "VAT filing due date"):
        print(h.memory_id == a.id, h.score, h.vector_score, h.keyword_score)
