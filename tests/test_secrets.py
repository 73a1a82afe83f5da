"""The secret detector, case by case in English, Chinese and Russian: what it refuses and,
as carefully, what it lets through (a memory about a password manager is not a password)."""

from __future__ import annotations

import pytest

from lore.secrets import find_secret

# BIP-39 phrases made for these tests (their checksums hold); no wallet has them.
RECOVERY_12 = "host reason upset hover race busy scheme venue educate design reduce spoon"
RECOVERY_24 = (
    "decorate glow spice attend maid essence custom index scan night improve response"
    " elbow wheat steel retreat enough eye casual thought wonder dash flock desk"
)
SHOPPING = "milk bread butter cheese apple banana tomato onion sugar salad lemon coffee"

SECRETS = [
    # passwords, any arrangement
    "my password is hunter22",
    "my password hunter2",
    "wifi: SSID Home, password CoffeeTime99",
    "the wifi password for the guest network is Zk84mq",
    "gmail password: Tr0ub4dor&3",
    "pw: Secret99",
    "password for the NAS admin 7Gq!x2",
    "the passphrase is correct-horse-battery",
    "my locker pass: 3141",
    "Amy's netflix password = sunflower",
    # PINs and codes
    "PIN 1234 for the bank",
    "PIN is 4821",
    "the pin for my debit card is 0407",
    "CVV 123",
    "The door code is 4821",
    "door code 4821",
    "gate code 1990#",
    "the code for the front door is 4821",
    "alarm code: 7391",
    "combination to the safe is 12-34-56",
    "garage code — 55 21",
    # identity numbers
    "passport number E12345678",
    "Amy's passport: 123456789",
    "driver's license number D1234567",
    "SSN 123-45-6789",
    "my social security number is 078-05-1120",
    "123-45-6789 is Amy's SSN",
    "SSN: 219099999",
    # banking and keys
    "IBAN GB82 WEST 1234 5698 7654 32",
    "pay rent to DE89370400440532013000",
    "visa 4111 1111 1111 1111 exp 12/29",
    "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAA",
    "-----BEGIN PGP PRIVATE KEY BLOCK-----",
    "-----BEGIN RSA PRIVATE KEY-----",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N",
    "my openai key is sk-proj-abcdefghijklmnopqrstuvwx12",
    "aws AKIAIOSFODNN7EXAMPLE",
    "github ghp_" + "aB3d" * 9,
    "slack xoxb-1234567890-abcdefghij",
    "Authorization: Bearer abcdefghijklmnopqrstuvwxyz123456",
    "token Xk9fP2mQ7vL3nR8sT1wY6zB4cD0eF5gH",
    # a login written with its password, without the word "password"
    "my bank login is john / Sunshine2024",
    "amy@mail.com / Tulip2024!",
    "login for the NAS: admin / Kx7!pq",
    "amy@mail.com/Tulip2024",
    # a key of no known vendor's shape, named as a key or token
    "API key for Acme: 8f3kd93jd8s7f6g5a1",
    "token for the build server is a81bc7f30d2e9f",
    "the weather app's api_key=Zq81mXc02Lpw7hTe",
    # a wallet recovery phrase: BIP-39 words whose checksum holds, or named as a seed
    RECOVERY_12,
    RECOVERY_24,
    "1. host 2. reason 3. upset 4. hover 5. race 6. busy 7. scheme 8. venue 9. educate"
    " 10. design 11. reduce 12. spoon",
    "wallet recovery phrase: abandon ability able about above absent absorb abstract absurd"
    " abuse access accident",
    # Chinese
    "我的密码是abc12345",
    "家里wifi密码 83920174",
    "wifi密码是CoffeeTime99",
    "银行卡密码：654321",
    "支付密码 112233",
    "PIN码是 2580",
    "门禁码是 4821",
    "保险箱密码 7391",
    "身份证号 11010519491231002X",
    "我的身份证号码是440300199003071234",
    "11010519491231002X 是爸爸的身份证",
    "护照号 E12345678",
    "信用卡 4111-1111-1111-1111",
    # Russian
    "пароль: qwerty123",
    "пароль от wifi — qwerty123",
    "пароль для входа в банк — Zx81",
    "пароль hunter2",
    "ПИН 1234",
    "пин-код карты 0407",
    "код домофона 4821",
    "код от двери 1234#",
    "код от сейфа: 7391",
    "паспорт 4510 123456",
    "серия 4510 номер 123456",
    "паспорт: серия 45 10 № 123456",
    "номер паспорта 4510123456",
    "СНИЛС 112-233-445 95",
    "мой ИНН 500100732259",
    "IBAN: DE89 3704 0044 0532 0130 00",
    "счёт FR14 2004 1010 0505 0001 3M02 606",
    "银行登录：john / Sunshine2024",
    "账号 amy@mail.com / Tulip2024",
    "Acme的API密钥是 8f3kd93jd8s7f6g5a1",
    "我的钱包助记词：" + RECOVERY_12,
    "логин от банка john / Zima2024",
    "ключ API для Acme: 8f3kd93jd8s7f6g5a1",
    "токен бота — 8f3kd93jd8s7f6g5a1",
    "сид-фраза кошелька: " + RECOVERY_24,
]

ORDINARY = [
    # English
    "my password manager is 1Password",
    "I changed my password yesterday",
    "I use 1Password for all my passwords",
    "the password is expired, reset it tomorrow",
    "password reset emails go to my work address",
    "Password hints are a bad idea",
    "we talked about password security at work",
    "The pin is under the doormat",
    "His PIN was blocked after three tries",
    "I dropped a pin at 1200 Main Street",
    "Our ski pass was expensive this year",
    "the door code changed last week",
    "ask Amy for the gate code",
    "the zip code is 94107",
    "area code 415",
    "promo code SAVE20 gives 20% off",
    "room 4821 at the Hilton",
    "my passport expires on 2027-05-01",
    "renew the passport before March 2027",
    "passport photos cost 15 dollars",
    "I need to renew my driver's license in 2027",
    "ID card photo was bad",
    "Social security office opens at 9",
    "my IBAN is in the banking app",
    "Amy's bank is ING",
    "The wifi network is called Home",
    "Mom's phone is +86 138 1234 5678",
    "call me at 0912-345-678",
    "(415) 555-0134 is the dentist",
    "Office line 8 800 555 35 35 ext 4",
    "order 4111 1111 1111 1112 shipped",
    "Order #1234567890123 arrives Friday",
    "tracking number 9400 1000 0000 0000 0000 00",
    "invoice 2026-0042 was paid",
    "John's birthday is 1990-04-12",
    "the meeting is on 12/02/2026 at 14:30",
    "flight LH 1234 leaves at 07:45",
    "commit 3f2a9c0d1e4b5a6978877665544332211ffeeddcc",
    "John lives in Hualien",
    "Postal code 100-0001 Tokyo",
    "my login is john",
    "my login is john, ask him for the rest",
    "meet 3 / 4 people at the station",
    "the login page is example.com/account/settings",
    "see https://example.com/users/john/Settings2",
    "login: Income / Expenses",
    "the account was opened in 2020 / 2021",
    "the user file is memory/MEMORY.md",
    "set LORE_USER=john and LORE_TIMEZONE=Asia/Taipei",
    'the token "$LORE_TOKEN" goes to localhost:8765/api/memories',
    "the key is under the mat",
    "key for room 4821",
    "the API key is in the vault",
    "token of appreciation for 2024 volunteers",
    SHOPPING,
    "shopping list: " + SHOPPING,
    " ".join(f"word{n}" for n in range(20)),
    "twelve words: abandon ability able about above absent absorb abstract absurd abuse"
    " access accident",
    # Chinese
    "密码忘了怎么办",
    "密码学是他的专业",
    "密码错误3次就会锁定",
    "我用1Password管理所有密码",
    "身份证放在抽屉里",
    "护照下个月过期",
    "明天去办护照",
    "门禁卡丢了，要去物业补办",
    "妈妈的手机 0086 138 1234 5678",
    "他的电话是 138 1234 5678",
    "会议在2026年12月2日下午3点",
    "订单号 202611301234567 已发货",
    "邮编 100080",
    "我的账号是 john",
    "版本 1.2 / 2.0 都能用",
    "购物清单：" + SHOPPING,
    "密钥放在保险柜里",
    # Russian
    "забыл пароль от почты",
    "пароль надо поменять до пятницы",
    "пароль от Gmail и Yandex одинаковый",
    "паспорт надо продлить до 2027 года",
    "позвони маме: +7 916 123-45-67",
    "телефон 8 (495) 123-45-67",
    "встреча 02.12.2026 в 15:00",
    "заказ 1234567890123 доставят в пятницу",
    "код региона 77",
    "почтовый индекс 101000",
    "пин-код от карты поменяла",
    "домофон сломан, звоните в дверь",
    "ИНН организации можно найти на сайте",
    "мой логин john",
    "поезд 7:15 / 8:30 каждый день",
    "токен лежит в 1Password",
    "ключ от дачи у соседки",
    # list words in a row that repeat, as prose and notes do (a drawn phrase seldom does)
    "pool train song coast dinner pool dinner coast garden swim dinner coast mom book"
    " coast mom mom 15",
]


def test_the_tables_are_large_enough_to_mean_something() -> None:
    assert len(SECRETS) >= 60 and len(ORDINARY) >= 60


@pytest.mark.parametrize("text", SECRETS)
def test_a_secret_is_recognised(text: str) -> None:
    assert find_secret(text) is not None


@pytest.mark.parametrize("text", ORDINARY)
def test_ordinary_text_is_not_a_secret(text: str) -> None:
    assert find_secret(text) is None


@pytest.mark.parametrize(
    "text",
    ["11010519491231002Y is a number", "110105194913310021", "GB00 WEST 1234 5698 7654 32"],
)
def test_checksums_decide_identity_and_account_numbers(text: str) -> None:
    assert find_secret(text) is None


def test_the_reason_never_repeats_the_secret() -> None:
    for text in SECRETS:
        reason = find_secret(text) or ""
        assert not any(
            word in reason for word in ("hunter", "4821", "1234", "E1234", "Sunshine", "spoon")
        )


def test_the_bip39_word_list_ships_in_the_package() -> None:
    from importlib import resources

    text = resources.files("lore").joinpath("wordlists/bip39-english.txt").read_text("utf-8")
    words = text.split()
    assert len(words) == len(set(words)) == 2048
    assert (words[0], words[-1]) == ("abandon", "zoo")
