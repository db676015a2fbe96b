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
