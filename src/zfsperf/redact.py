"""Secrets are never recorded or printed: every text zfsperf writes that may carry a store URL, a
libpq connection string or a command line passes through redact() first.

What counts as secret is what libpq treats as one: the password of a URL's user part
(`postgresql://bench:SECRET@host/db`), and the `password` and `sslpassword` parameters, whether in
a URL's query (`?password=SECRET`) or a key/value connection string (`password=SECRET`). Each is
shown as `***`, so the rest (user, host, database, sslmode, ...) stays readable. The ways that
keep a password off the command line altogether are libpq's own: PGPASSWORD, ~/.pgpass (or
PGPASSFILE), PGSERVICE with pg_service.conf, client certificates (sslcert/sslkey in the URL).
"""

from __future__ import annotations

import re
from urllib.parse import unquote, urlsplit

MASK = "***"
_URL_PASSWORD = re.compile(r"(\b[A-Za-z][A-Za-z0-9+.-]*://[^/@:\s?#]*:)([^@\s/?#]*)(@)")
_PARAM = re.compile(r"(?i)(\b(?:ssl)?password\s*=\s*)('(?:[^'\\]|\\.)*'|[^&\s]*)")


def redact(text: str) -> str:
    """text with every URL password and password=... parameter replaced by ***."""
    text = _URL_PASSWORD.sub(lambda m: m.group(1) + MASK + m.group(3), text)
    return _PARAM.sub(lambda m: m.group(1) + MASK, text)


def redact_argv(argv: list[str]) -> list[str]:
    return [redact(a) for a in argv]


def secrets_in(url: str) -> list[str]:
    """The secret values a store URL carries (to scrub them from a driver's error text too)."""
    out = []
    try:
        parts = urlsplit(url)
        if parts.password:
            out += [parts.password, unquote(parts.password)]
    except ValueError:
        pass
    out += [m.group(2).strip("'") for m in _PARAM.finditer(url) if m.group(2)]
    return [s for s in dict.fromkeys(out) if s]


def scrub(text: str, url: str) -> str:
    """A driver's message about url, with the URL's secrets removed wherever they appear."""
    text = redact(text)
    for s in secrets_in(url):
        text = text.replace(s, MASK)
    return text
