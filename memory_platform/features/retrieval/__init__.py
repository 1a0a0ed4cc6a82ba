"""Retrieval: chunk search, assertion search, fusion, feedback ranking, context facade."""
