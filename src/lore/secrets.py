"""Does this text look like a secret? Memories go into every prompt of their scope,
so Lore refuses passwords, API keys, tokens and card numbers, and says why.

The reason names the kind of secret, never the secret itself, so the refusal can be
shown to the model and the user (and logged) safely.
"""

from __future__ import annotations

import math
import re
from collections import Counter

__all__ = ["find_secret", "refusal"]

_KEY_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----"), "a private key"),
    (re.compile(r"\bsk-(?:ant-|proj-)?[A-Za-z0-9_-]{20,}"), "an API key (sk-…)"),
    (re.compile(r"\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}"), "a Stripe key"),
    (re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"), "an AWS access key (AKIA…)"),
    (
        re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})"),
        "a GitHub token",
    ),
    (re.compile(r"\bglpat-[A-Za-z0-9_-]{20,}"), "a GitLab token"),
    (re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}"), "a Slack token"),
    (re.compile(r"\bAIza[0-9A-Za-z_-]{35}\b"), "a Google API key"),
    (
        re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"),
        "a login token (JWT)",
    ),
    (
        re.compile(r"\b(?:bearer|token)\s+[A-Za-z0-9._~+/-]{20,}=*", re.IGNORECASE),
        "an access token",
    ),
)

# "my password is hunter2", "wifi password for guests: x", "PIN: 4821", "密码是 abc123",
# "密码 83920174", "пароль от wifi — qwerty". "pass" and "pin" also name other things
# (a ski pass, a map pin): they count only when a digit follows.
_PASSWORD = re.compile(
    r"(?:\b(?:(?P<weak>pass|pin(?:\s*code)?)|pass(?:word|code|phrase)|pwd|wi-?fi key)\b"
    r"(?:\s+(?:for|to|of|on)\s+(?:\S+\s+){0,3}?)?\s*(?:is|was|:|=|：)"
    r"|(?:密码|密碼|口令|暗码|パスワード|暗証番号|비밀번호|암호)"
    r"(?:\s*(?:是|为|為|は|는|은|:|：|=)|\s*(?=[A-Za-z0-9]))"
    r"|\bпарол[ьяюе]\w*(?:\s+(?:от|для|к)(?:\s+\S+){1,3}?)?\s*(?:[—–:=-]|это|будет)?)"
    # Passwords are typed in ASCII; "密码是多少" or "пароль — мой день" name none.
    r"\s*[\"'“«「]?(?P<value>(?=[^\s\"'”»」。，,]*[A-Za-z0-9])[^\s\"'”»」。，,]{3,})",
    re.IGNORECASE,
)
# 13 to 19 digits, maybe grouped. A "+" in front makes it a phone number.
_CARD = re.compile(r"(?<![\d+-])(?:\d[ -]?){12,18}\d(?![\d-])")
# Payment cards start with 2-6 (Mir, Mastercard, Amex, JCB, Visa, Discover, UnionPay);
# phone numbers with a country or trunk prefix (86…, 0086…, 8 800…) do not.
_CARD_FIRST_DIGITS = "23456"
_TOKEN = re.compile(r"[A-Za-z0-9+/_=-]{24,}")


def find_secret(text: str) -> str | None:
    """What kind of secret `text` seems to hold ("an API key (sk-…)"), or None."""
    for pattern, reason in _KEY_PATTERNS:
        if pattern.search(text):
            return reason
    for match in _PASSWORD.finditer(text):
        if not match.group("weak") or re.search(r"\d", match.group("value")):
            return "a password or PIN"
    for match in _CARD.finditer(text):
        digits = re.sub(r"\D", "", match.group())
        if digits[0] in _CARD_FIRST_DIGITS and len(set(digits)) > 1 and _luhn_ok(digits):
            return "a payment card number"
    for match in _TOKEN.finditer(text):
        if _looks_random(match.group()):
            return "a key or token (a long random string)"
    return None


def refusal(reason: str) -> str:
    return (
        f"refused: this looks like {reason}. Memories are shown to the model in every "
        "reply of this conversation, so Lore never stores passwords, API keys, tokens or "
        "card numbers; keep them in a password manager"
    )


def _luhn_ok(digits: str) -> bool:
    total = 0
    for i, char in enumerate(reversed(digits)):
        n = int(char)
        if i % 2:
            n = n * 2 - 9 if n > 4 else n * 2
        total += n
    return total % 10 == 0


def _looks_random(token: str) -> bool:
    """Mixed letters and digits with high entropy: a key, not a word or a hex hash."""
    body = token.strip("=-_")
    classes = sum(
        (
            any(c.islower() for c in body),
            any(c.isupper() for c in body),
            any(c.isdigit() for c in body),
        )
    )
    if classes < 3 or len(body) < 24:
        return False
    counts = Counter(body)
    entropy = -sum(n / len(body) * math.log2(n / len(body)) for n in counts.values())
    return entropy >= 4.0
