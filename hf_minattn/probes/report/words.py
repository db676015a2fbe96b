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


def signed_interval(estimate, low, high, decimals=2, most=4):
    """"+0.12 [+0.08, +0.16]": an estimate and its interval, signed, at `decimals`, or at more (up to `most`) where
    the interval excludes 0 but its bound nearest 0 would print as 0 (so the printed bounds show why it excludes 0)."""
    near = min(abs(low), abs(high)) if low > 0 or high < 0 else None
    while near is not None and decimals < most and float(f"{near:.{decimals}f}") == 0:
        decimals += 1
    return f"{estimate:+.{decimals}f} [{low:+.{decimals}f}, {high:+.{decimals}f}]"


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
