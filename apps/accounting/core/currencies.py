"""ISO 4217 alphabetic codes of the currencies in circulation (funds and metals left out), and
each currency's minor unit: money is rounded and shown in it (docs/dates-and-money.md)."""
from decimal import Decimal
from functools import lru_cache

import iso4217
from babel.numbers import get_currency_precision

ISO_4217 = frozenset("""
AED AFN ALL AMD ANG AOA ARS AUD AWG AZN BAM BBD BDT BGN BHD BIF BMD BND BOB BRL BSD BTN BWP
BYN BZD CAD CDF CHF CLP CNY COP CRC CUP CVE CZK DJF DKK DOP DZD EGP ERN ETB EUR FJD FKP GBP
GEL GHS GIP GMD GNF GTQ GYD HKD HNL HTG HUF IDR ILS INR IQD IRR ISK JMD JOD JPY KES KGS KHR
KMF KPW KRW KWD KYD KZT LAK LBP LKR LRD LSL LYD MAD MDL MGA MKD MMK MNT MOP MRU MUR MVR MWK
MXN MYR MZN NAD NGN NIO NOK NPR NZD OMR PAB PEN PGK PHP PKR PLN PYG QAR RON RSD RUB RWF SAR
SBD SCR SDG SEK SGD SHP SLE SOS SRD SSP STN SVC SYP SZL THB TJS TMT TND TOP TRY TTD TWD TZS
UAH UGX USD UYU UZS VES VND VUV WST XAF XCD XCG XOF XPF YER ZAR ZMW ZWG
""".split())


def is_currency(code: str) -> bool:
    return code in ISO_4217


# ---------------------------------------------------------------- minor units (docs/dates-and-money.md)

@lru_cache(maxsize=None)
def minor_digits(currency: str) -> int:
    """Decimal places of the currency's minor unit as ISO 4217 lists it: JPY 0, USD and EUR 2,
    KWD and IQD 3, RSD 2. ISO 4217 wins over babel's CLDR data, which gives 13 codes (IQD, RSD,
    ALL, …) the digits they are paid in cash instead (docs/dates-and-money.md). A code the ISO
    table no longer lists (withdrawn, as ANG and BGN) takes babel's digits; no code at all, 2."""
    if not currency:
        return 2
    try:
        return iso4217.Currency(currency).exponent
    except ValueError:
        return get_currency_precision(currency)


def minor_unit(currency: str) -> Decimal:
    """The smallest amount of the currency as a Decimal quantum: JPY 1, USD 0.01, KWD 0.001."""
    return Decimal(1).scaleb(-minor_digits(currency))
