"""Credentials anywhere in a text: the rule set, a cheap check every match passes, and where each secret is.

Formats follow gitleaks' rules (vendor key prefixes, JWTs, private key blocks); secret-named values
(``password=...``, ``"api_key": "..."``, ``Pwd=...;``, ``Authorization: ...``, ``--token ...``)
follow the scrubbers of Sentry and Logfire, which judge key names and apply them to messages too.
:func:`may_hold_credential` passes every text a rule could match, with a few scans at C speed;
only such a text is searched with the rules' one combined expression (:func:`credential_spans`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Final, NamedTuple

from .secret_names import names_a_secret

__all__ = [
    "KEY_WORDS",
    "RULES",
    "Rule",
    "credential_spans",
    "holds_format_head",
    "holds_key_word",
    "may_hold_credential",
    "names_a_value_at",
    "value_end",
]

KEY_WORDS: Final = ("key", "token", "auth", "pass", "secret", "pwd", "credential", "cookie", "signature")
"""Every secret name (:func:`names_a_secret`, :func:`~.secret_names.is_secret_key`) holds one of these, case aside."""


def _not_a_slug(secret: str, whole: bool) -> bool:
    # "sk-" then lowercase words joined by hyphens is a name ("sk-learn-style-api"), not a key.
    return re.fullmatch(r"sk-[a-z]+(?:-[a-z]+)+", secret) is None


def _not_a_word(token: str, whole: bool) -> bool:
    # "Bearer authentication", "Basic Configuration" are prose; a whole "Bearer ..." text is a header value.
    return whole or any(c.isdigit() or c in "+/=_-.~" for c in token) or any(c.isupper() for c in token[1:])


class Rule(NamedTuple):
    """One credential format. In ``pattern``, ``(?P<secret>...)`` marks the part hidden (else the
    whole match is); a rule with ``(?P<name>...)`` matches a name, and the value after it is hidden
    when the name is a secret's."""

    name: str
    pattern: str
    check: Callable[[str, bool], bool] | None = None  # (the secret, whether the match is the whole text)


_START: Final = r"(?<![A-Za-z0-9_-])"  # a token starts here, not inside a longer one

RULES: Final = (
    Rule(
        "private key block",
        r"-----BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----[^-]*(?:-(?!----END)[^-]*)*"
        r"(?:-----END[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----)?",  # cut short: hidden to the end
    ),
    # A scheme starts only where a run of scheme characters starts (one tried at every letter is
    # quadratic); the password runs to the last "@" of its token: passwords may hold "@" and "/".
    Rule(
        "URL password",
        r"(?i:(?<![a-z0-9+.-])[a-z][a-z0-9+.-]{0,32}://[^\s:/@\"'<>]{0,256}:)(?P<secret>[^\s\"'<>]{1,256})(?=@)",
    ),
    Rule("OpenAI, Anthropic and other sk- keys", _START + r"sk-[A-Za-z0-9_-]{16,}", _not_a_slug),
    Rule("Stripe key", _START + r"[sr]k_(?:live|test|prod)_[A-Za-z0-9]{10,}"),
    Rule("AWS access key id", r"(?<![A-Za-z0-9])(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}(?![A-Za-z0-9])"),
    Rule("GitHub token", _START + r"(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})"),
    Rule("GitLab token", _START + r"glpat-[A-Za-z0-9_-]{20,}"),
    Rule("Slack token", _START + r"(?:xox[abeprs]-|xapp-)[A-Za-z0-9-]{10,}"),
    Rule("Google API key", _START + r"AIza[A-Za-z0-9_-]{30,}"),
    Rule("JWT", _START + r"eyJ[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*"),
    Rule(
        "Bearer or Basic credentials",
        _START + r"(?:Bearer|Basic)[ \t]+(?P<secret>[A-Za-z0-9._~+/-]{8,}=*)",
        _not_a_word,
    ),
    Rule("secret-named command-line option", r"(?<![A-Za-z0-9_-])--(?P<name>[A-Za-z][A-Za-z0-9_-]{0,63})[ \t]+"),
    # name=value, name: value, "name": "value", \"name\": \"value\" (JSON inside a string), name => value
    Rule(
        "secret-named value",
        r"(?<![A-Za-z0-9_.\\-])(?:\\*[\"'])?(?P<name>-{0,2}[A-Za-z_][A-Za-z0-9_.-]{0,63})(?:\\*[\"'])?"
        r"[ \t]*(?:=(?!=)>?|:(?![:/\\]))[ \t]*",
    ),
)


def _combined(rules: tuple[Rule, ...]) -> re.Pattern[str]:
    # Each rule's groups renamed after its index: the one expression tells which rule matched.
    parts = []
    for i, rule in enumerate(rules):
        pattern = rule.pattern.replace("(?P<secret>", f"(?P<secret{i}>").replace("(?P<name>", f"(?P<name{i}>")
        parts.append(f"(?P<rule{i}>{pattern})")
    return re.compile("|".join(parts))


_RULES_EXPRESSION: Final = _combined(RULES)
_HAS_SECRET: Final = tuple("(?P<secret>" in rule.pattern for rule in RULES)
_HAS_NAME: Final = tuple("(?P<name>" in rule.pattern for rule in RULES)
_OPTION: Final = next(i for i, rule in enumerate(RULES) if rule.name == "secret-named command-line option")

# Every format rule's match holds one of these. Each expression starts with one literal character,
# which the regex engine finds at C speed (the lookbehinds run only there), and runs only if that
# character is in the text at all (a memchr): one expression of all of them costs several times more.
_DASHED: Final = re.compile(r"-(?:(?<=sk-)|(?<=glpat-)|(?<=xox[abeprs]-)|(?<=xapp-)|----BEGIN)")
_UNDERSCORED: Final = re.compile(
    r"_(?:(?<=gh[pousr]_)|(?<=github_pat_)|(?<=[sr]k_live_)|(?<=[sr]k_test_)|(?<=[sr]k_prod_))"
)
_CAPITAL_A: Final = re.compile(r"A(?:KIA|SIA|BIA|CCA|3T|Iza)")


def holds_format_head(text: str) -> bool:
    """Whether ``text`` (plain or JSON) holds what some format rule's match holds."""
    return (
        "@" in text
        or ("-" in text and _DASHED.search(text) is not None)
        or ("_" in text and _UNDERSCORED.search(text) is not None)
        or ("A" in text and _CAPITAL_A.search(text) is not None)
        or ("J" in text and "eyJ" in text)
        or ("B" in text and ("Bearer" in text or "Basic" in text))
    )


# What follows a key word in the lowercased text when it is in a name before a value: the rest
# of the name, maybe a quote, then "=" or ":" (or, after "--name", a space). In JSON text a quote
# there is escaped (a JSON key's is not: the encoder's pre-check judges those names itself).
_AFTER_KEY_WORD: Final = re.compile(r"""[a-z0-9_.-]*(?:\\*["'])?[ \t]*[=:]""")
_AFTER_KEY_WORD_IN_JSON: Final = re.compile(r"""[a-z0-9_.-]*(?:\\+"|')?[ \t]*[=:]""")
_AFTER_OPTION: Final = re.compile(r"[a-z0-9_-]*[ \t]")
_NAME_CHARACTERS: Final = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_.-")


def may_hold_credential(text: str) -> bool:
    """False only if no rule can match ``text``: the cheap check before the rules."""
    # holds_format_head(), inlined: error messages are redacted near the recursion limit too.
    if (
        "@" in text
        or ("-" in text and _DASHED.search(text) is not None)
        or ("_" in text and _UNDERSCORED.search(text) is not None)
        or ("A" in text and _CAPITAL_A.search(text) is not None)
        or ("J" in text and "eyJ" in text)
        or ("B" in text and ("Bearer" in text or "Basic" in text))
    ):
        return True
    if "=" not in text and ":" not in text and "--" not in text:
        return False
    lowered = text.lower()
    if not holds_key_word(lowered):
        return False
    for word in KEY_WORDS:
        at = lowered.find(word)
        while at >= 0:
            if names_a_value_at(text, lowered, at, word):
                return True
            at = lowered.find(word, at + len(word))
    return False


def holds_key_word(lowered: str) -> bool:
    """Whether a lowercased text holds any of :data:`KEY_WORDS`."""
    # Spelled out as one expression, not any(...): this runs for most captured texts.
    return (
        "key" in lowered
        or "token" in lowered
        or "auth" in lowered
        or "pass" in lowered
        or "secret" in lowered
        or "pwd" in lowered
        or "credential" in lowered
        or "cookie" in lowered
        or "signature" in lowered
    )


def names_a_value_at(text: str, lowered: str, at: int, word: str, in_json: bool = False) -> bool:
    """Whether the key word ``word`` at ``at`` is in a secret's name followed by its value
    (``lowered`` is ``text`` lowercased; ``in_json``: ``text`` is JSON, whose keys are not looked at)."""
    after = at + len(word)
    if (_AFTER_KEY_WORD_IN_JSON if in_json else _AFTER_KEY_WORD).match(lowered, after) is not None:
        option = False
    elif _AFTER_OPTION.match(lowered, after) is not None and "--" in lowered[max(0, at - 66) : at]:
        option = True
    else:
        return False
    if not text.isascii():  # positions in lower() may shift: any name before a value counts
        return True
    start = at
    while start > 0 and lowered[start - 1] in _NAME_CHARACTERS:
        start -= 1
    end = after
    while end < len(lowered) and lowered[end] in _NAME_CHARACTERS:
        end += 1
    # Judged as written: camelCase splits words.
    return (not option or lowered.startswith("--", start)) and names_a_secret(text[start:end])


def credential_spans(text: str) -> list[tuple[int, int]]:
    """Where the secrets in ``text`` are, in order, not overlapping (call after :func:`may_hold_credential`)."""
    spans: list[tuple[int, int]] = []
    at = 0
    while (found := _RULES_EXPRESSION.search(text, at)) is not None:
        i = int(found.lastgroup[4:])  # type: ignore[index]  # "rule<i>", the outer group, closes last
        span = _secret_span(text, found, i)
        if span is None:
            at = found.start() + 1
        else:
            spans.append(span)
            at = max(span[1], found.end())
    return spans


def _secret_span(text: str, found: re.Match[str], i: int) -> tuple[int, int] | None:
    if _HAS_NAME[i]:
        name = found[f"name{i}"]
        if not names_a_secret(name):
            return None
        return _value_span(text, found.end(), name, found[0].rstrip().endswith(":"), i == _OPTION)
    whole = found.start() == 0 and found.end() == len(text)
    start, end = found.span(f"secret{i}") if _HAS_SECRET[i] and not whole else found.span()
    check = RULES[i].check
    if check is not None and not check(found[f"secret{i}"] if _HAS_SECRET[i] else found[0], whole):
        return None
    return start, end  # a text that is one credential ("Bearer ...") is hidden whole


_PLAIN_VALUE: Final = re.compile(r"[^\s,;&\"'<>)\]}]{1,1024}")
_SCHEME_AND_VALUE: Final = re.compile(r"(?i:bearer|basic|token|digest|bot|negotiate)[ \t]+[^\s,;\"'<>]{1,1024}")
_NO_SECRET: Final = frozenset({"", "null", "none", "nil", "true", "false", "undefined"})


def _value_span(text: str, at: int, name: str, after_colon: bool, option: bool) -> tuple[int, int] | None:
    """The secret part of the value that starts at ``at`` after a secret's name, or None if it is none."""
    if at >= len(text) or (option and text[at] == "-"):  # "--password --verbose": no value
        return None
    quoted = at
    while quoted < len(text) and text[quoted] == "\\":
        quoted += 1
    if quoted > at and text[quoted : quoted + 1] in ('"', "'"):  # a quoted value in JSON text held in a string
        end = text.find(text[at : quoted + 1], quoted + 1)
        start, end = quoted + 1, end if end >= 0 else len(text)
    elif text[at] in "\"'":
        start, end = at + 1, value_end(text, at) - 1
        if text[end] != text[at]:  # no closing quote: hidden to the end
            end += 1
    elif text[at] in "{[(":  # ODBC's {pass;word}, a tuple, a nested object: taken whole
        start, end = at, value_end(text, at)
    elif after_colon and name.lower().endswith(("cookie", "cookies")):
        start, end = at, len(text) if (eol := text.find("\n", at)) < 0 else eol  # every cookie of the header
    else:
        found = _SCHEME_AND_VALUE.match(text, at) or _PLAIN_VALUE.match(text, at)
        if found is None:
            return None
        start, end = found.span()
    value = text[start:end]
    if value.lower() in _NO_SECRET:
        return None
    if value[:1] in "/~" and name.lower().lstrip("-") == "pwd":  # the shell's working directory, PWD=/home/ann
        return None
    return start, end


_OPENING: Final = "([{<"
_CLOSING: Final = ")]}>"


def value_end(text: str, at: int) -> int:
    """Where the value starting at ``at`` ends: at the first separator outside quotes and
    brackets, which are taken whole wherever they start (``'x'``, ``(a, b)``, ``Token(...)``, ``b'...'``)."""
    n, i, depth, quote = len(text), at, 0, ""
    while i < n:
        ch = text[i]
        if quote:
            if ch == "\\":
                i += 2
                continue
            if ch == quote:
                quote = ""
                if depth == 0:
                    return i + 1
        elif ch in "'\"":
            quote = ch
        elif ch in _OPENING:
            depth += 1
        elif ch in _CLOSING:
            if depth == 0:
                return i  # the end of the object holding the field
            depth -= 1
            if depth == 0:
                return i + 1
        elif depth == 0 and ch in " \t\r\n,;":
            return i
        i += 1
    return n
