"""Secrets never enter memory: they would be retrieved into prompts. This module recognises
them in any text the platform stores.

:func:`find_secret` answers the *kind* of the first secret in a text (never the secret
itself); :func:`refuse_secret` raises :class:`~memory_platform.foundation.errors.CredentialDetected`
(422) naming the field and the kind. Every stored string goes through it: memory content,
titles, metadata keys and values, subject-ref keys and values, the conversation context a
request claims, and what a Dream model proposes.

Before matching, the text is NFKC-normalised (full-width letters become ASCII) and every
invisible character is removed (format characters such as zero-width space, word joiner,
soft hyphen and BOM, and the blank fillers and variation selectors), so ``s\\u200bk-proj-…``
is an OpenAI key like ``sk-proj-…``.

What counts as a secret:

* vendor tokens by their documented prefix (the platform's own ``mpk_`` keys, OpenAI,
  Anthropic, GitHub, GitLab, Hugging Face, npm, PyPI, Slack, Stripe, AWS, Google, Telegram
  and others), JSON web tokens, PEM/PGP/PuTTY private key blocks, bearer and basic
  authorisation headers, URLs with a password;
* environment-style assignments (``DB_PASSWORD=…``, ``export OPENAI_API_KEY=…``): an upper-case
  name ending in a secret word, assigned any value that is not a placeholder (``$VAR``,
  ``${…}``, ``<…>``, ``***``);
* labelled values in English and German prose (``password: Hunter22!``, ``Kennwort ist
  Geheim123``, ``Zugangsdaten: admin / Sommer2024!``, ``PIN 4921``), where the value must look
  like a secret (a digit, a symbol or an inner capital) so that ``the password is required``
  or ``das Passwort ist abgelaufen`` stay ordinary text.

Why a hand detector and not a package (measured for issue 12 over 50 true secrets, in
tests/test_secrets.py, and 10,048 texts of the project's prose: the benchmark corpus, the
demo, the bench corpus and ordinary sentences about passwords; CPU time per 16,000
characters):

* detect-secrets 1.5.0 (Yelp; last release 2024-05), default plugins: 50/50 found, but
  9,743 of 10,048 prose texts flagged (its entropy plugins take ordinary words for keys in
  free text); with those and the keyword plugin off, 0 false positives but 11/50 found
  (none of the env-style, prose, ``mpk_``, OpenAI/Anthropic/Hugging Face/npm forms, nor any
  token with an invisible character). 9-18 ms.
* CredSweeper 1.19.5 (Samsung): 17/50 found, 1 false positive, 28-412 ms, and it brings
  onnxruntime, pandas and some thirty other packages onto the write path.
* this module: 50/50 found, 0 false positives, 5-8 ms.

Measured again for issue 28 (finding 6 of the review of 7c85f33) by
``bench/secret_detectors.py`` on tests/secrets_corpus: 84 credential forms (JSON, connection
strings, command lines, URL queries, German and English prose, vendor tokens, key blocks)
and 321 ordinary sentences: this module 84/84 found, 0/321 false positives, 0.1 ms a text;
detect-secrets 1.5.0 default plugins 83/84 but 319/321 sentences flagged (every commit hash,
UUID and long word run), without its entropy and keyword plugins 22/84 and 0 false
positives, and quadratic on 100,000 characters of ``sk-`` (28 s; this module's worst
adversarial case is 0.05-0.15 s, linear); "this module or detect-secrets" finds nothing
more. The added forms: a quote between label and separator (JSON), ``key=value`` with a
secret word as the key in connection strings, URL queries and configuration (any value but
a placeholder or a code reference such as ``os.environ[...]``), command-line credentials
(``-u user:pw``, ``--password pw``, ``mysql -ppw``, ``sshpass -p``), German and English verbs
("heißt", "ist immer noch", "wie immer:", "is still"), a PIN named with words between, an
SSH2 key block, a URL with an empty user, an unlabelled AWS secret access key (40
random-looking base64 characters), and Cyrillic/Greek look-alike letters.

Both packages are built to scan source files, not sentences, and neither knows the
platform's own tokens; the patterns below are checked by tests instead. They are kept
linear: each starts where a run of its own characters starts, no quantifier nests in
another, an unbounded one never covers the character that must follow it, and a rule is
tried only when its literal hint occurs in the text.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from memory_platform.foundation.errors import CredentialDetected

# Characters that render as nothing but would split a token for a pattern: the format
# characters (Cf: soft hyphen, zero-width space/joiners, word joiner, BOM, bidi marks, tags),
# plus blank fillers, joiners and variation selectors of other categories.
_EXTRA_INVISIBLE = (0x034F, 0x115F, 0x1160, 0x17B4, 0x17B5, 0x180B, 0x180C, 0x180D, 0x180F,
                    0x2800, 0x3164, 0xFFA0, *range(0xFE00, 0xFE10), *range(0xE0100, 0xE01F0))


def _invisible_pattern() -> re.Pattern[str]:
    """One character class of every invisible character, written as ranges (format
    characters exist only in the basic and supplementary multilingual planes and in the
    tags plane)."""
    planes = (*range(0xD800), *range(0xE000, 0x20000), *range(0xE0000, 0xE1000))
    codes = sorted({c for c in planes if unicodedata.category(chr(c)) == "Cf"}
                   | set(_EXTRA_INVISIBLE))
    ranges: list[list[int]] = []
    for code in codes:
        if ranges and ranges[-1][1] == code - 1:
            ranges[-1][1] = code
        else:
            ranges.append([code, code])
    return re.compile("[" + "".join(f"\\U{a:08x}-\\U{b:08x}" for a, b in ranges) + "]")


_INVISIBLE = _invisible_pattern()


# Cyrillic and Greek letters that look like Latin ones ("раssword" with a Cyrillic р and а):
# folded to the Latin letter before matching, like the full-width forms NFKC folds.
_LOOK_ALIKES = str.maketrans(
    "аеорсухіјѕԁӏАВЕКМНОРСТХУІЈЅοαειкνρτυχΑΒΕΖΗΙΚΜΝΟΡΤΥΧ",
    "aeopcyxijsdlABEKMHOPCTXYIJSoaeiknptuxABEZHIKMNOPTYX")


def visible_form(text: str) -> str:
    """``text`` as the patterns see it: NFKC-normalised, with no invisible character and
    Cyrillic/Greek look-alikes of Latin letters folded to them."""
    if text.isascii():
        return text
    return _INVISIBLE.sub("", unicodedata.normalize("NFKC", text)).translate(_LOOK_ALIKES)


@dataclass(frozen=True)
class _Rule:
    """One kind of secret. ``pattern`` is tried only when one of ``hints`` (literal text, of
    the lower-cased text when ``folded``; none: always) occurs, and its match counts only
    when ``accepts`` its ``value`` group."""

    kind: str
    hints: tuple[str, ...]
    pattern: re.Pattern[str]
    folded: bool = False
    accepts: Callable[[str], bool] | None = None

    def found_in(self, text: str, lowered: str) -> bool:
        haystack = lowered if self.folded else text
        if self.hints and not any(hint in haystack for hint in self.hints):
            return False
        if self.accepts is None:
            return self.pattern.search(text) is not None
        return any(self.accepts(m.group("value")) for m in self.pattern.finditer(text))


_PUNCTUATION_TAIL = ".,;!?)]}>"
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
# "${OPENAI_API_KEY}", "$DB_PASSWORD", "<your token>", "{{ secret }}", "%(pw)s", "****"
_PLACEHOLDER = re.compile(r"\$\{|\$[A-Za-z_][A-Za-z0-9_]*$|<|\{\{|%\(|[*xX•.]{4,}$"
                          r"|(?i:none|null|changeme_?here)$")


# "os.environ[...]", "request.headers.get(", "settings.db_password": code that reads a secret
_CODE_REFERENCE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+(?:[\[(]|$)")


def _placeholder(value: str) -> bool:
    return _PLACEHOLDER.match(value) is not None or _CODE_REFERENCE.match(value) is not None


def _looks_secret(value: str) -> bool:
    """Digits, symbols or inner capitals: how passwords and keys look, unlike words."""
    value = value.rstrip(_PUNCTUATION_TAIL)
    if len(value) < 6 or _placeholder(value):
        return False
    return (any(c.isdigit() for c in value) or any(not c.isalnum() for c in value)
            or not value[1:].islower())


def _looks_random(value: str) -> bool:
    """Letters and digits mixed over at least 16 characters: a key, not a word or a number."""
    value = value.rstrip(_PUNCTUATION_TAIL)
    return (len(value) >= 16 and any(c.isdigit() for c in value)
            and any(c.isalpha() for c in value) and not _UUID.fullmatch(value))


_ALNUM_RUN = re.compile(r"[A-Za-z0-9]{16}")


def _generated(value: str) -> bool:
    """A long body, or one with a run of 16 letters and digits: generated, not hyphenated
    words ("learn-pipeline-optimisation")."""
    return len(value) >= 40 or _ALNUM_RUN.search(value) is not None


def _assigned(value: str) -> bool:
    """An assigned value (environment, configuration, JSON, a flag) that is a secret, not a
    reference or a placeholder: in a structured assignment any value counts, words too."""
    value = value.rstrip(_PUNCTUATION_TAIL)
    return len(value) >= 6 and not _placeholder(value)


def _flag_value(value: str) -> bool:
    """A command-line value that looks like a secret, not a path (``mkdir -p /var/…``)."""
    return not value.startswith(("/", ".", "~")) and _looks_secret(value)


def _aws_secret(value: str) -> bool:
    """40 base64 characters that read as random: upper and lower case and digits, at least
    24 distinct characters (a path or a camel-case name has far fewer), few slashes."""
    return (any(c.isupper() for c in value) and any(c.islower() for c in value)
            and any(c.isdigit() for c in value) and len(set(value)) >= 24
            and value.count("/") <= 3)


# A token begins where a run of token characters begins, so each pattern is tried once per
# run, not at every position inside it; no quantifier nests in another or runs unbounded
# before more pattern follows, so matching is linear in the text.
_T = r"(?<![A-Za-z0-9_-])"


def _rule(kind: str, hints: str, pattern: str, *, folded: bool = False,
          accepts: Callable[[str], bool] | None = None) -> _Rule:
    flags = re.IGNORECASE if folded else 0
    return _Rule(kind, tuple(hints.split()), re.compile(pattern, flags), folded, accepts)


_PASSWORD_LABEL = (r"(?P<label>passwor[dt]|passwd|passphrase|kennwort|(?<![A-Za-z])(?:pwd|pw))"
                   r"(?![a-z])")
_SECRET_LABEL = (r"(?P<label>api[\s_-]?(?:key|schlüssel|token)|access[\s_-]?(?:key|token)"
                 r"|auth[\s_-]?token|client[\s_-]?secret|secret[\s_-]?key|secret"
                 r"|(?<![A-Za-z])token)(?![a-z])")
# "<label> [for the build server] is|ist|lautet|:|= <value>"
# "<label>["'] [for the build server] is [still]|ist [immer noch]|heißt|lautet [jetzt]|
# wie immer|:|= <value>"
_LABELLED_VALUE = (r"[\'\"”]?"
                   r"(?:\s{1,4}(?:for|of|to|on|für|vom|von|des|der|die|das|zum|zur)\b"
                   r"[^.:=\n]{0,40}?)?"
                   r"\s{0,4}(?:[:=]"
                   r"|\s(?:is|ist|lautet|heißt|heisst|bleibt|are|sind|was|war|remains)"
                   r"(?:\s(?:immer noch|noch immer|noch|jetzt|nun|weiterhin|wieder|still|now"
                   r"|again))?\b:?"
                   r"|\s(?:wie immer|wie gehabt|as always|as usual)\b\s{0,2}:?)\s{0,4}"
                   r"[\'\"“„‚]?(?P<value>[^\s\'\"”“‘]{6,})")
_ENV_NAME = r"(?<![A-Za-z0-9_])(?:[A-Z0-9]{1,32}_){0,6}"
_ENV_VALUE = r"(?![A-Za-z0-9_])\s{0,4}[:=]\s{0,4}[\'\"]?(?P<value>[^\s\'\"]{6,})"

# In order: the first rule that finds something names the kind. Kinds only: the matched
# secret is never echoed.
_RULES: tuple[_Rule, ...] = (
    _rule("private key", "PRIVATE",
          r"-{4,5} ?BEGIN[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)? ?-{4,5}"),
    _rule("private key", "PuTTY-User-Key-File", r"PuTTY-User-Key-File-\d"),
    _rule("memory-platform API key", "mpk_", _T + r"mpk_[0-9a-fA-F]{12}_[A-Za-z0-9_-]{16}"),
    _rule("Anthropic API key", "sk-ant-", _T + r"sk-ant-[A-Za-z0-9]{2,12}-[A-Za-z0-9_-]{20}"),
    _rule("Stripe key", "_live_ _test_", _T + r"(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16}"),
    _rule("Stripe key", "whsec_", _T + r"whsec_[A-Za-z0-9]{20}"),
    _rule("AWS access key", "AKIA ASIA ABIA ACCA AGPA AIDA AIPA ANPA ANVA AROA APKA ASCA",
          _T + r"(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AIPA|ANPA|ANVA|AROA|APKA|ASCA)[0-9A-Z]{16}"
          r"(?![0-9A-Za-z])"),
    _rule("AWS secret key", "aws", r"aws_?secret_?access_?key\s{0,4}[:=]", folded=True),
    _rule("GitHub token", "ghp_ gho_ ghu_ ghs_ ghr_ github_pat_",
          _T + r"(?:gh[pousr]_[A-Za-z0-9]{30}|github_pat_[A-Za-z0-9_]{30})"),
    _rule("GitLab token", "gl",
          _T + r"(?:glpat|gldt|glrt|glptt|glcbt|glft|glimt|glsoat)-[A-Za-z0-9_-]{20}"),
    _rule("Hugging Face token", "hf_ api_org_", _T + r"(?:hf_|api_org_)[A-Za-z0-9]{30}"),
    _rule("npm token", "npm_", _T + r"npm_[A-Za-z0-9]{36}"),
    _rule("PyPI token", "pypi-AgE", _T + r"pypi-AgE[A-Za-z0-9_-]{40}"),
    _rule("Slack token", "xox xapp-",
          _T + r"(?:xox[abposre]-[A-Za-z0-9-]{10}|xapp-\d-[A-Za-z0-9-]{20})"),
    _rule("Slack webhook", "hooks.slack.com",
          r"hooks\.slack\.com/(?:services|workflows)/T[A-Za-z0-9_]{6}"),
    _rule("Google API key", "AIza", _T + r"AIza[0-9A-Za-z_-]{35}"),
    _rule("Google OAuth secret", "GOCSPX- ya29.",
          _T + r"(?:GOCSPX-[A-Za-z0-9_-]{20}|ya29\.[0-9A-Za-z_-]{20})"),
    _rule("Telegram bot token", ":AA", r"(?<![0-9])[0-9]{8,10}:AA[0-9A-Za-z_-]{30}"),
    _rule("SendGrid key", "SG.", _T + r"SG\.[A-Za-z0-9_-]{16,32}\.[A-Za-z0-9_-]{20}"),
    _rule("vendor API token", "gsk_ xai- r8_ lin_api_ dop_v1_ shp dapi pul- sq0 ntn_ secret_ key-",
          _T + r"(?:gsk_[A-Za-z0-9]{40}|xai-[A-Za-z0-9]{40}|r8_[A-Za-z0-9]{30}"
          r"|lin_api_[A-Za-z0-9]{30}|dop_v1_[a-f0-9]{40}|shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}"
          r"|dapi[a-f0-9]{32}|pul-[a-f0-9]{40}|sq0(?:atp|csp)-[\w-]{20}|ntn_[A-Za-z0-9]{40}"
          r"|secret_[A-Za-z0-9]{43}|key-[0-9a-f]{32}(?![0-9a-f]))"),
    _rule("JSON web token", "eyJ",
          _T + r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8}"),
    _rule("bearer token", "bearer", r"(?<![A-Za-z])bearer\s{1,8}[A-Za-z0-9._~+/-]{20}",
          folded=True),
    _rule("basic authorisation", "basic",
          r"authorization\s{0,4}:\s{0,4}basic\s{1,8}[A-Za-z0-9+/]{12}", folded=True),
    _rule("URL with password", "://",
          r"(?<![a-z0-9+.-])[a-z][a-z0-9+.-]{0,30}://[^\s/:@]{0,256}:[^\s/@]{1,256}@",
          folded=True),
    # "sk-" and an optional project/service prefix before a generated body, which tells an
    # OpenAI key from hyphenated words ("sk-learn-pipeline-…")
    _rule("OpenAI-style API key", "sk-",
          _T + r"sk-(?:proj-|svcacct-|admin-|live-|test-)?(?P<value>[A-Za-z0-9_-]{20,})",
          accepts=_generated),
    # "password": "…" in JSON, dicts and YAML with a quoted key: any value but a placeholder
    _rule("password", "pass pwd kennw",
          r"[\'\"](?:[a-z0-9]{1,32}[_.-]){0,3}(?:passwor[dt]|passwd|passphrase|pass|pwd"
          r"|kennwort)[\'\"]\s{0,4}[:=]\s{0,4}[\'\"](?P<value>[^\'\"\s]{6,})[\'\"]",
          folded=True, accepts=_assigned),
    _rule("API key or secret", "key secret token",
          r"[\'\"](?:[a-z0-9]{1,32}[_.-]){0,3}(?:api[_-]?key|apikey|secret|token"
          r"|access[_-]?key|private[_-]?key|signing[_-]?key)[\'\"]\s{0,4}[:=]\s{0,4}[\'\"]"
          r"(?P<value>[^\'\"\s]{6,})[\'\"]", folded=True, accepts=_assigned),
    # key=value in connection strings, URL queries, config lines and flags:
    # ";Password=…;", ";AccountKey=…", "?user=admin&pass=…", "pwd=…", "--password=…"
    _rule("password", "pass pwd pw= kennw",
          r"(?<![A-Za-z0-9_.-])(?:[a-z0-9]{1,32}[_.-]){0,3}(?:[a-z]{0,12}passwor[dt]"
          r"|[a-z]{0,12}passwd|[a-z]{0,12}pwd|passphrase|pass|pw|kennwort)"
          r"\s{0,2}=\s{0,2}[\'\"]?(?P<value>[^\s\'\";&,]{6,})", folded=True,
          accepts=_assigned),
    _rule("API key or secret", "key secret token sig=",
          r"(?<![A-Za-z0-9_.-])(?:[a-z0-9]{1,32}[_.-]){0,3}(?:accountkey|sharedaccesskey"
          r"|api[_-]?key|apikey|access[_-]?key|secret[_-]?key|client[_-]?secret|secret"
          r"|auth[_-]?token|access[_-]?token|refresh[_-]?token|token|sig)"
          r"\s{0,2}=\s{0,2}[\'\"]?(?P<value>[^\s\'\";&,]{6,})", folded=True,
          accepts=_assigned),
    # command lines: "curl -u admin:pw", "--user ops:pw", "--password pw", "mysql -ppw",
    # "sshpass -p pw"
    _rule("password", "-u --user",
          r"(?<![A-Za-z0-9_-])(?:-u|--user)(?:\s{1,4}|=)[\'\"]?[^\s:\'\"]{1,64}:"
          r"(?P<value>[^\s\'\"@]{6,})", accepts=_assigned),
    _rule("password", "--pass --pwd --token --api --secret --access --auth --client",
          r"(?<![A-Za-z0-9_-])--(?:password|passwd|pass|pwd|token|api-key|apikey|secret"
          r"|access-token|auth-token|client-secret)\s{1,4}[\'\"]?"
          r"(?P<value>[^\s\'\"-][^\s\'\"]{5,})", accepts=_flag_value),
    _rule("password", "mysql mariadb sshpass",
          r"(?<![A-Za-z0-9_-])-p\s{0,4}[\'\"]?(?P<value>[^\s\'\"-][^\s\'\"]{5,})",
          folded=True, accepts=_flag_value),
    # NAME=value, NAME ending in a secret word: DB_PASSWORD=…, export OPENAI_API_KEY=…
    _rule("password", "PASS PWD",
          _ENV_NAME + r"(?:PASSWORD|PASSWD|PASSPHRASE|PASS|PWD)" + _ENV_VALUE,
          accepts=_assigned),
    _rule("API key or secret", "SECRET TOKEN KEY CREDENTIAL",
          _ENV_NAME + r"(?:SECRET|SECRET_KEY|TOKEN|API_?KEY|APIKEY|ACCESS_?KEY|PRIVATE_?KEY"
          r"|AUTH_?KEY|SIGNING_?KEY|ENCRYPTION_?KEY|MASTER_?KEY|CREDENTIALS?)" + _ENV_VALUE,
          accepts=_assigned),
    # labelled values in prose; the value must look like a secret, so "the password is
    # required" and "das Passwort ist abgelaufen" stay ordinary text
    _rule("password", "pass kennw pw", _PASSWORD_LABEL + _LABELLED_VALUE, folded=True,
          accepts=_looks_secret),
    _rule("API key or secret", "api access auth secret token",
          _SECRET_LABEL + _LABELLED_VALUE, folded=True, accepts=_looks_secret),
    # "Zugangsdaten: admin / Sommer2024!", "login: admin:Hunter22!"
    _rule("password", "zugang anmelde login cred",
          r"(?<![A-Za-z])(?:zugangsdaten|anmeldedaten|logindaten|login|credentials|creds"
          r"|zugang)\s{0,4}[:=]\s{0,4}[^\s/:|,]{1,64}\s{0,4}[/:|,]\s{0,4}"
          r"(?P<value>[^\s\'\"]{6,})", folded=True, accepts=_looks_secret),
    # "PIN 4921", "PIN-Code: 0815", "the PIN is 4921"
    _rule("PIN", "PIN Pin",
          r"(?<![A-Za-z])(?:PIN|Pin)(?:-?[Cc]ode)?(?![A-Za-z])"
          r"(?:\s{1,4}(?:for|of|on|der|des|für|vom|von|zur|zum)\b[^.:=\n0-9]{0,40}?"
          r"\s(?:is|ist|lautet)\b:?"
          r"|\s{0,4}(?:[:=]|\s(?:is|ist|lautet)\b:?)?)"
          r"\s{0,4}(?<![0-9])[0-9]{4,8}(?![0-9,:/]|\.[0-9])"),
    # "the prod key is 7f3a9c…": a bare key label needs a random-looking value
    _rule("API key or secret", "key schlüssel",
          r"(?<![A-Za-z])(?:key|schlüssel)(?![a-z])\s{0,4}(?:[:=]|\s(?:is|ist|lautet)\b:?)"
          r"\s{0,4}[\'\"“„]?(?P<value>[A-Za-z0-9+/_=-]{16,})", folded=True,
          accepts=_looks_random),
    # an AWS secret access key on its own: 40 random-looking base64 characters
    _rule("AWS secret key", "",
          r"(?<![A-Za-z0-9/+=])(?P<value>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])",
          accepts=_aws_secret),
)


def find_secret(text: str) -> str | None:
    """The kind of the first secret found in ``text`` (never the secret), or None."""
    text = visible_form(text)
    lowered = text.lower()
    return next((rule.kind for rule in _RULES if rule.found_in(text, lowered)), None)


def assignment_text(key: str, value: str) -> str:
    """A key and its string value as the detector reads them: ``"key": "value"`` (not
    escaped: a JSON text inside the value stays readable), so ``{"password":
    "correcthorse"}`` is an assignment (any value counts) and ``{"note": "password:
    hunter22"}`` still reads as the sentence it holds."""
    return f'"{key}": "{value}"'



def _article(kind: str) -> str:
    """'an' before the kinds spoken with a vowel first (AWS, API, OpenAI), else 'a'."""
    return "an" if kind[0] in "AEIO" else "a"


def refuse_secret(text: str, *, field: str) -> None:
    """Raise CredentialDetected naming ``field`` and the kind when ``text`` holds a secret."""
    kind = find_secret(text)
    if kind:
        raise CredentialDetected(
            f"{field} looks like it contains {_article(kind)} {kind}; secrets are never "
            "stored in memory. Remove the secret and store the rest.",
            details={"field": field, "kind": kind},
        )


def refuse_secret_fields(fields: Mapping[str, str | None]) -> None:
    """:func:`refuse_secret` for each named text that is set (e.g. a request's context)."""
    for field, text in fields.items():
        if text:
            refuse_secret(text, field=field)
