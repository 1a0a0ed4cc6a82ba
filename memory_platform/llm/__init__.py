"""Maintenance-model clients: OpenAI-compatible (streamed, strict JSON) and extractive.

Public API: :class:`ModelError`, :class:`Completion`, :class:`JsonRequest`,
:class:`MaintenanceModel`, :func:`parse_model_json`, :class:`OpenAICompatibleModel`,
:class:`ExtractiveModel`, :func:`resolve_model_name`, :func:`set_dreaming_model`,
:func:`model_client`.
"""

from memory_platform.llm.base import Completion, JsonRequest, MaintenanceModel, ModelError
from memory_platform.llm.extractive import ExtractiveModel
from memory_platform.llm.normalize import parse_model_json
from memory_platform.llm.openai_compatible import OpenAICompatibleModel
from memory_platform.llm.resolution import (
    clear_model_cache,
    model_client,
    resolve_model_name,
    set_dreaming_model,
)

__all__ = [
    "Completion",
    "ExtractiveModel",
    "JsonRequest",
    "MaintenanceModel",
    "ModelError",
    "OpenAICompatibleModel",
    "clear_model_cache",
    "model_client",
    "parse_model_json",
    "resolve_model_name",
    "set_dreaming_model",
]
