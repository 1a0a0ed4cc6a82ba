"""The scripted server's chat route itself (shared test double): the non-streamed default and
the embeddings default it must keep."""

from __future__ import annotations

import openai

from tests.support.openai_server import fake_embedding


def test_non_streamed_chat_and_embeddings_still_answer(openai_server):
    client = openai.OpenAI(api_key="k", base_url=openai_server.base_url, max_retries=0)
    answer = client.chat.completions.create(
        model="any-model", messages=[{"role": "user", "content": "hi"}])
    assert answer.model == "any-model"
    assert answer.choices[0].message.content.startswith("Hello")
    assert answer.choices[0].finish_reason == "stop"
    openai_server.script_chat(content="custom", model="other", stream=False)
    answer = client.chat.completions.create(
        model="any-model", messages=[{"role": "user", "content": "hi"}])
    assert (answer.model, answer.choices[0].message.content) == ("other", "custom")
    vectors = client.embeddings.create(model="e", input=["a"], dimensions=4)
    assert vectors.data[0].embedding == fake_embedding("a", 4)
    assert [r.route for r in openai_server.requests()] == [
        "chat/completions", "chat/completions", "embeddings"]
