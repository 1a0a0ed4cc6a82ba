"""Memory for agent frameworks, over the Python client (each an optional extra):
``langgraph`` (a LangGraph ``BaseStore``) and ``openai_agents`` (an OpenAI Agents SDK
``Session``). Importing one needs its framework installed: ``pip install
'memory-platform[langgraph]'`` or ``'memory-platform[agents]'``."""
