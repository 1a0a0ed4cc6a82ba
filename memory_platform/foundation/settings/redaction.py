"""Secrets made fit to show: connection strings and base URLs with their passwords, tokens
and API keys masked (``config show``, logs, backup reports)."""

from __future__ import annotations

import re
from urllib.parse import urlsplit, urlunsplit

MASK = "**********"
# Parameter names whose values are secrets, in a URL's query string or a key=value DSN.
_SECRET_NAME = r"[\w.-]*(?:pass(?:word|wd|phrase)?|pwd|secret|token|api[_-]?key)[\w.-]*"
_QUERY_SECRET = re.compile(rf"(?P<name>(?:^|(?<=[&;])){_SECRET_NAME})=(?P<value>[^&;#]*)",
                           re.IGNORECASE)
_DSN_SECRET = re.compile(
    rf"(?P<name>(?<![\w.-]){_SECRET_NAME})\s*=\s*(?P<value>'(?:[^'\\]|\\.)*'?|[^\s']*)",
    re.IGNORECASE)


def redact_url(url: str) -> str:
    """A connection string fit to show: the password of a URL's user info (an HTTP URL's
    whole user info), every password/secret/token/API-key parameter of its query string,
    and those of a key=value DSN (``host=db password=s3cret``) masked; the rest kept
    readable."""
    if "://" not in url:
        return _DSN_SECRET.sub(lambda m: f"{m.group('name')}={MASK}", url)
    parts = urlsplit(url)
    userinfo, at, hostport = parts.netloc.rpartition("@")
    if at and ":" in userinfo:
        parts = parts._replace(netloc=f"{userinfo.split(':', 1)[0]}:{MASK}@{hostport}")
    elif at and parts.scheme.lower() in ("http", "https"):
        parts = parts._replace(netloc=f"{MASK}@{hostport}")  # a token as the user name
    if parts.query:
        parts = parts._replace(query=_QUERY_SECRET.sub(
            lambda m: f"{m.group('name')}={MASK}", parts.query))
    return urlunsplit(parts)
