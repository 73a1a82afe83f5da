"""Does this text look like a secret? Memories go into every prompt of their scope,
so Lore refuses passwords, PINs and door codes, logins written with their password,
API keys and tokens, wallet recovery phrases, card and bank account numbers, and
identity document numbers, and says why.

The reason names the kind of secret, never the secret itself, so the refusal can be
shown to the model and the user (and logged) safely. Every memory write (the tools,
extraction, import, the CLI and the commands) passes through `records.make_draft`,
which asks `find_secret`.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections import Counter
from collections.abc import Callable
from functools import cache
from importlib import resources

__all__ = ["find_secret", "refusal"]

PASSWORD = "a password or PIN"
CODE = "a door, lock or PIN code"
CARD = "a payment card number"
IBAN = "a bank account number (IBAN)"
IDENTITY = "an identity document number (passport, ID card, social security)"
LOGIN = "a login with its password (name / password)"
KEY = "an API key or token"
PHRASE = "a wallet recovery phrase (BIP-39 seed words)"

_KEY_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY(?: BLOCK)?-----"), "a private key"),
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

# A credential word, then maybe "for the guest network" / "от почты", then maybe a
# connector ("is", ":", "是", "—"), then the value. "pass" also names a ski pass: it counts
# only when its value has a digit. Latin words are fenced by letters, not \b, because
# Chinese characters are word characters too ("PIN码", "wifi密码").
_NOT_LETTER_BEFORE = r"(?<![A-Za-z])"
_NOT_LETTER_AFTER = r"(?![A-Za-z])"
# Words that follow "password is" without being one ("the password is expired").
_PLAIN_WORDS = (
    "a an the my your his her our their is in on at to for of and or not no see same changed"
    " expired wrong correct incorrect weak strong long short saved stored written required"
    " needed reset new old secret hidden lost forgotten unknown empty blank ok fine good bad"
    " manager protected still now also always never too very there here somewhere below"
    " above taped under inside it that this what which set easy hard simple different"
    " useless private personal shared"
).split()
# A value is typed in ASCII: "密码是多少" or "пароль — мой день рождения" give none.
_VALUE = r"(?:(?![\"',;])[!-~]){3,}"
# Written straight after the word, a value must not read as a word: digits, symbols or
# CamelCase ("my password hunter2", "password CoffeeTime99", not "password manager").
_BARE_VALUE = r"(?=[!-~]*(?:\d|[^\w\s]|(?-i:[a-z][A-Z])))(?:(?![\"',;])[!-~]){4,}"
_CREDENTIAL = re.compile(
    r"(?:" + _NOT_LETTER_BEFORE + r"(?:(?P<weak>pass)|pass(?:word|code|phrase)s?|pwd|pw"
    r"|wi-?fi\s+key)" + _NOT_LETTER_AFTER + r"(?:\s+(?:for|to|of|on|at)\s+(?:\S+\s+){0,3}?)?"
    r"|(?:密码|密碼|口令|暗码|パスワード|暗証番号|비밀번호|암호)"
    r"|\bпарол[ьяюе]\w*(?:\s+(?:от|для|к)(?:\s+\S+){1,3}?)?)"
    r"(?:\s*(?:is|was|:|=|：|是|为|為|は|는|은|[—–-]|это|будет)\s*[\"'“«「]?"
    r"(?!(?:" + "|".join(_PLAIN_WORDS) + r")(?:[\s.,;!?]|$))(?P<value>" + _VALUE + r")"
    r"|\s*(?P<bare>" + _BARE_VALUE + r"))",
    re.IGNORECASE,
)

# "PIN 1234 for the bank", "the pin for my card is 0407", "PIN码是 2580", "пин-код 0407",
# "CVV 123". A map pin or "pin at 1200 Main St" has no connector word before the digits.
_PIN = re.compile(
    r"(?:"
    + _NOT_LETTER_BEFORE
    + r"(?:pin(?:\s*code|\s*number)?|cvv2?|cvc2?|csc)"
    + _NOT_LETTER_AFTER
    + r"(?:码|碼)?(?:\s+(?:for|to|of|on)\s+(?:\S+\s+){0,3}?)?"
    r"|\bпин(?:-?код)?(?:\s+(?:от|для|к)?\s*\S+){0,2}?)"
    r"\s*(?:is|was|:|=|：|是|为|[—–-]|это)?\s*(?<![\d.,/-])\d{3,8}(?![\d.,/:-])",
    re.IGNORECASE,
)
# "The door code is 4821", "gate code 1990#", "the code for the front door is 4821",
# "combination to the safe is 12-34-56", "门禁码是 4821", "код домофона 4821".
_LOCKS = (
    r"door|gate|entry|entrance|alarm|garage|lock|locker|safe|building|intercom|keypad"
    r"|padlock|buzzer|lockbox|key\s*box|house|flat|apartment|front\s+door"
)
_DOOR_CODE = re.compile(
    r"(?:\b(?:" + _LOCKS + r")\s+(?:code|combo|combination|pin)\b"
    r"|\b(?:code|combo|combination)\s+(?:for|to|of|on)\s+(?:the\s+|my\s+|our\s+)?(?:\w+\s+)?"
    r"(?:" + _LOCKS + r")\b"
    r"|(?:门禁|门锁|开门|大门|保险箱|保险柜|密码锁)(?:卡)?(?:码|碼|号)?"
    r"|\bкод\w*\s+(?:от\s+|для\s+)?(?:домофон|двер|подъезд|калитк|ворот|сейф|замк|замок"
    r"|сигнализац|квартир|ящик)\w*)"
    r"\s*(?:is|was|:|=|：|是|为|[—–-]|это)?\s*[#*]?\d{2,8}(?:[ -]\d{2,4}){0,3}[#*]?(?!\d)",
    re.IGNORECASE,
)

# An identity word, connectors only, then a number with six or more digits.
_IDENTITY = re.compile(
    r"(?:\bpassport|\bsocial\s+security(?:\s+number)?|\bssn\b|\bdriver'?s?\s+licen[cs]e"
    r"|\bnational\s+(?:id|insurance)|\bid\s+(?:card|number|no\b)|\btax\s+(?:id|number)"
    r"|身份证|身份證|护照|護照|驾照|驾驶证|社保|医保卡"
    r"|\bпаспорт\w*|\bзагранпаспорт\w*|\bснилс|\bинн\b|\bномер\s+паспорта)"
    r"(?:\s*(?:numbers?|no\.?|num|#|№|is|was|:|：|=|[—–-]|是|为|号码|号|碼|码|номер|серия"
    r"|series|card|of\s+\w+))*"
    r"\s*(?P<value>(?:[A-Z]{1,2}\s?)?\d(?:\d| (?=\d)|-(?=\d))*[\dXx])",
    re.IGNORECASE,
)
_RUSSIAN_PASSPORT = re.compile(
    r"\bсери[яи]\s*\d{2}\s?\d{2}\s*,?\s*(?:№|номер|n)\s*\d{6}(?!\d)", re.IGNORECASE
)
_SNILS = re.compile(r"(?<![\d-])\d{3}-\d{3}-\d{3}[ -]\d{2}(?![\d-])")
_SSN = re.compile(r"(?<![\d-])(?!000|666|9\d\d)\d{3}-(?!00)\d{2}-(?!0000)\d{4}(?![\d-])")
_RESIDENT_ID = re.compile(r"(?<![\dA-Za-z])(\d{17}[\dXx])(?![\dA-Za-z])")
_RESIDENT_ID_WEIGHTS = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)

_IBAN = re.compile(
    r"(?<![A-Za-z0-9])[A-Z]{2}\d{2}(?:(?: [A-Z0-9]{4}){2,7}(?: [A-Z0-9]{1,3})?"
    r"|[A-Z0-9]{11,30})(?![A-Za-z0-9])"
)

# 13 to 19 digits, maybe grouped. A "+" in front makes it a phone number.
_CARD = re.compile(r"(?<![\d+-])(?:\d[ -]?){12,18}\d(?![\d-])")
# Payment cards start with 2-6 (Mir, Mastercard, Amex, JCB, Visa, Discover, UnionPay);
# phone numbers with a country or trunk prefix (86…, 0086…, 8 800…) do not.
_CARD_FIRST_DIGITS = "23456"
_NOT_A_CARD = re.compile(
    r"(?:order|invoice|tracking|parcel|订单|单号|快递|заказ|трек|накладн)\w*\W{0,3}\w{0,6}\W{0,3}$",
    re.IGNORECASE,
)
_TOKEN = re.compile(r"[A-Za-z0-9+/_=-]{24,}")

# A password written after a login name and a slash: "my bank login is john / Sunshine2024",
# "账号 amy@mail.com / Tulip2024", "логин от почты anna / Zima2024". The name holds a
# letter ("3 / 4 people" is a fraction), the password reads as one (a digit, a symbol or
# CamelCase), so "login: Income / Expenses" stays a sentence, and the slash stands between
# spaces: "user/admin" and "memory/MEMORY.md" are paths. An e-mail address needs no spaces.
_LOGIN_WORD = (
    r"(?:" + _NOT_LETTER_BEFORE + r"(?:log-?ins?|logons?|sign-?ins?|user-?names?|users?"
    r"|accounts?|credentials?|creds)"
    + _NOT_LETTER_AFTER
    + r"|登录|登陆|登入|账号|帐号|账户|帐户|用户名|\bлогин\w*|\bучётк\w*|\bучетк\w*"
    r"|\bаккаунт\w*|\bвход\w*)"
)
_LOGIN_PAIR = (
    r"(?<![\w/.:@+-])(?=[\w.@+-]*[^\W\d_])[\w.@+-]{2,}\s+/\s+"
    r"(?=[^\s/]*(?:\d|[^\w\s]|(?-i:[a-z][A-Z])))[^\s/]{4,}(?![^\s])"
)
_LOGIN = re.compile(_LOGIN_WORD + r"[^\n/]{0,40}?" + _LOGIN_PAIR, re.IGNORECASE)
_EMAIL_LOGIN = re.compile(
    r"(?<![\w.+-])[\w.+-]+@[\w-]+(?:\.[\w-]+)+\s*/\s*"
    r"(?=[^\s/]*(?:\d|[^\w\s]|(?-i:[a-z][A-Z])))[^\s/]{4,}(?![^\s])"
)

# A key of no known vendor's shape, named as one: "API key for Acme: 8f3kd93jd8s7f6g5",
# "token for the build server is a81bc7f30d2e", "Acme的API密钥是 …", "токен бота — …".
# The value mixes letters and digits and is at least 12 long: "the key is under the mat"
# and "key for room 4821" are not keys, nor is "localhost:8765/api" after a colon with no
# space.
_KEY_WORD = re.compile(
    r"(?:" + _NOT_LETTER_BEFORE + r"(?:(?:api|access|secret|private|client|app|auth|bot)"
    r"[\s_-]?)?(?:keys?|tokens?|secrets?)"
    + _NOT_LETTER_AFTER
    + r"|密钥|秘钥|密匙|令牌|\bтокен\w*|\bключ\w*|\bсекрет\w*)"
    r"[^:=：\n\"'`]{0,40}?"
    r"(?:\s*(?:\bis\b|\bwas\b|:(?=\s|[\"'])|=|：|是|为|為|[—–]|\s-|\bэто\b|\bбудет\b)\s*|\s+)"
    r"[\"'“«「]?(?P<value>[A-Za-z0-9][A-Za-z0-9_\-+/=]{11,})",
    re.IGNORECASE,
)

# Twelve to twenty-four words of the BIP-39 English list in a row (numbered or not). A
# phrase whose checksum holds is one; without it ("milk eggs …" can be BIP-39 words too),
# only when the text calls it a seed, a recovery phrase, a mnemonic or a wallet.
_PHRASE_LENGTHS = (24, 21, 18, 15, 12)
_WORD = re.compile(r"(?<![A-Za-z0-9_])[A-Za-z]+(?![A-Za-z0-9_])")  # "word0" is not "word"
_PHRASE_GAP = re.compile(r"[\s,;.\d()\-:#]*")
_PHRASE_WORDS = re.compile(
    r"seed|recovery|mnemonic|wallet|backup\s+phrase|secret\s+phrase|助记词|助記詞|钱包|錢包"
    r"|种子|種子|恢复短语|сид|мнемоник|кошел[её]к|кошельк|фраз[аыу]\s+восстановлени",
    re.IGNORECASE,
)


def find_secret(text: str) -> str | None:
    """What kind of secret `text` seems to hold ("an API key (sk-…)"), or None."""
    for pattern, reason in _KEY_PATTERNS:
        if pattern.search(text):
            return reason
    for check in _CHECKS:
        found = check(text)
        if found is not None:
            return found
    return None


def refusal(reason: str) -> str:
    return (
        f"refused: this looks like {reason}. Memories are shown to the model in every "
        "reply of this conversation, so Lore never stores passwords, PINs, codes, logins, "
        "API keys, tokens, recovery phrases, card, account or ID numbers; keep them in a "
        "password manager"
    )


def _password(text: str) -> str | None:
    for match in _CREDENTIAL.finditer(text):
        value = match.group("value") or match.group("bare")
        if match.group("weak") and not re.search(r"\d", value):
            continue  # "ski pass was expensive"
        return PASSWORD
    return None


def _pin(text: str) -> str | None:
    return PASSWORD if _PIN.search(text) else None


def _door_code(text: str) -> str | None:
    return CODE if _DOOR_CODE.search(text) else None


def _identity(text: str) -> str | None:
    if _RUSSIAN_PASSPORT.search(text) or _SNILS.search(text) or _SSN.search(text):
        return IDENTITY
    for match in _IDENTITY.finditer(text):
        if sum(c.isdigit() for c in match.group("value")) >= 6:
            return IDENTITY
    for match in _RESIDENT_ID.finditer(text):
        if _resident_id_ok(match.group(1)):
            return IDENTITY
    return None


def _resident_id_ok(number: str) -> bool:
    """A Chinese resident ID: a plausible birth date and the ISO 7064 check character."""
    year, month, day = int(number[6:10]), int(number[10:12]), int(number[12:14])
    if not (1900 <= year <= 2100 and 1 <= month <= 12 and 1 <= day <= 31):
        return False
    total = sum(int(d) * w for d, w in zip(number[:17], _RESIDENT_ID_WEIGHTS, strict=True))
    return "10X98765432"[total % 11] == number[17].upper()


def _iban(text: str) -> str | None:
    for match in _IBAN.finditer(text):
        compact = match.group().replace(" ", "")
        if 15 <= len(compact) <= 34 and _mod97(compact) == 1:
            return IBAN
    return None


def _mod97(iban: str) -> int:
    rearranged = iban[4:] + iban[:4]
    return int("".join(str(int(c, 36)) for c in rearranged)) % 97


def _card(text: str) -> str | None:
    for match in _CARD.finditer(text):
        digits = re.sub(r"\D", "", match.group())
        if _NOT_A_CARD.search(text[max(0, match.start() - 30) : match.start()]):
            continue
        if digits[0] in _CARD_FIRST_DIGITS and len(set(digits)) > 1 and _luhn_ok(digits):
            return CARD
    return None


def _random_token(text: str) -> str | None:
    for match in _TOKEN.finditer(text):
        if _looks_random(match.group()):
            return "a key or token (a long random string)"
    return None


def _login(text: str) -> str | None:
    return LOGIN if _LOGIN.search(text) or _EMAIL_LOGIN.search(text) else None


def _named_key(text: str) -> str | None:
    for match in _KEY_WORD.finditer(text):
        value = match.group("value")
        if re.search(r"\d", value) and re.search(r"[A-Za-z]", value) and "://" not in value:
            return KEY
    return None


def _recovery_phrase(text: str) -> str | None:
    words = _bip39_words()
    named = _PHRASE_WORDS.search(text) is not None
    for run in _word_runs(text, words):
        for length in _PHRASE_LENGTHS:
            if len(run) < length:
                continue
            if named or any(
                _looks_drawn(run[i : i + length]) and _checksum_ok(run[i : i + length], words)
                for i in range(len(run) - length + 1)
            ):
                return PHRASE
    return None


def _word_runs(text: str, words: dict[str, int]) -> list[list[str]]:
    """The runs of list words separated only by spaces, commas or numbering."""
    runs: list[list[str]] = []
    run: list[str] = []
    end = 0
    for match in _WORD.finditer(text):
        word = match.group().lower()
        joined = _PHRASE_GAP.fullmatch(text, end, match.start()) is not None
        if word not in words or not joined:
            if len(run) >= _PHRASE_LENGTHS[-1]:
                runs.append(run)
            run = []
        if word in words:
            run.append(word)
        end = match.end()
    if len(run) >= _PHRASE_LENGTHS[-1]:
        runs.append(run)
    return runs


def _looks_drawn(phrase: list[str]) -> bool:
    """Words drawn at random from 2,048 repeat seldom; a text that repeats words is prose.

    The checksum alone is four to eight bits, so over the windows of a long run of list
    words it would pass by chance; a phrase may repeat one word, not more.
    """
    return len(set(phrase)) >= len(phrase) - 1


def _checksum_ok(phrase: list[str], words: dict[str, int]) -> bool:
    """BIP-39: the last bits of the phrase are the first bits of SHA-256 of the rest."""
    bits = "".join(f"{words[word]:011b}" for word in phrase)
    checksum_bits = len(bits) // 33
    entropy = int(bits[:-checksum_bits], 2).to_bytes((len(bits) - checksum_bits) // 8, "big")
    digest = f"{hashlib.sha256(entropy).digest()[0]:08b}"
    return digest[:checksum_bits] == bits[-checksum_bits:]


@cache
def _bip39_words() -> dict[str, int]:
    text = resources.files("lore").joinpath("wordlists/bip39-english.txt").read_text("utf-8")
    return {word: index for index, word in enumerate(text.split())}


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


# Identity numbers before cards: a resident ID can pass the card checksum too.
_CHECKS: tuple[Callable[[str], str | None], ...] = (
    _identity,
    _iban,
    _door_code,
    _pin,
    _password,
    _card,
    _login,
    _named_key,
    _recovery_phrase,
    _random_token,
)
