"""Wording shared by the sections: numbers as the tables show them, and whether two numbers differ at the precision
shown (a smaller difference is not one a sentence may claim)."""


def cell(values, i=None, fmt=".2f"):
    """values[i] (or values itself) formatted; "-" where missing."""
    value = values if i is None or values is None else (values[i] if i < len(values) else None)
    return "-" if value is None else format(value, fmt)


def differ(a, b, decimals=2):
    """Whether a and b differ by at least one unit of the last decimal the report shows."""
    return abs(a - b) >= 10.0 ** -decimals - 1e-12


def lower(a, b, decimals=2):
    """a below b, by at least the precision shown."""
    return a < b and differ(a, b, decimals)


def apart(low, high, reference=0.0, decimals=2, most=4) -> int:
    """The decimals at which an interval [low, high] that excludes `reference` prints apart from it: `decimals`, or
    more (up to `most`) where its bound nearest `reference` would print as `reference` itself (so the printed bounds
    show why it excludes it: not "[0.50, 0.60] is above chance 0.50")."""
    near = low if low > reference else high if high < reference else None
    while near is not None and decimals < most and float(f"{near:.{decimals}f}") == float(f"{reference:.{decimals}f}"):
        decimals += 1
    return decimals


def interval_text(estimate, low, high, references=(0.0,), sign="", decimals=2, most=4):
    """"0.12 [0.08, 0.16]": an estimate and its interval at `decimals`, or at more where the interval excludes one of
    `references` but a bound would print as it (`apart`); `sign` "+" signs them."""
    decimals = max(apart(low, high, reference, decimals, most) for reference in references)
    return f"{estimate:{sign}.{decimals}f} [{low:{sign}.{decimals}f}, {high:{sign}.{decimals}f}]"


def signed_interval(estimate, low, high, decimals=2, most=4):
    """"+0.12 [+0.08, +0.16]": `interval_text` signed, kept apart from 0."""
    return interval_text(estimate, low, high, sign="+", decimals=decimals, most=most)



def p_text(p: float, digits: int = 3, alpha: float = 0.05) -> str:
    """A p-value at `digits` significant digits, with more where fewer would print it on the other side of `alpha`
    than it lies (0.049975 as "0.049975", not "0.05"; a p at or above `alpha` never prints below it)."""
    text = f"{p:.{digits}g}"
    while (float(text) < alpha) != (p < alpha) and digits < 17:
        digits += 1
        text = f"{p:.{digits}g}"
    return text


# What a language model's head is scored on, in the words of the head-ablation and logit-lens sections: the masked
# tokens of a masked LM, each next token of a decoder (the `objective` of those results)
PREDICTED = {
    "masked": {"loss": "masked-LM loss", "tokens": "masked tokens", "words": "masked words", "word": "masked-word",
               "head": "masked-word head"},
    "next-token": {"loss": "next-token loss", "tokens": "predicted next tokens", "words": "the next word",
                   "word": "next-word", "head": "output head"},
}


def predicted(part) -> dict:
    """PREDICTED's words for a head-ablation or logit-lens result (older files: masked)."""
    return PREDICTED[getattr(part, "objective", None) or "masked"]
