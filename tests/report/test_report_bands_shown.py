"""The frequency-band sentences decide by the means as the report shows them (two decimals): "lowest", "most" and
"as published" never contradict the numbers printed beside them, and bands equal as shown are said to be tied."""

import pytest
from conftest import probe_results

from hf_minattn.probes.report.bands import bands_headline, bands_text

CONTRAST = {"bands": ["top 100", "1000+"], "estimate": -0.07, "low": -0.09, "high": -0.05, "words": [100, 400]}


def _said(top, middle, rare=0.52, contrast=CONTRAST):
    g = {"layers": [0, 1], "adjusted_self_similarity": [0.5, 0.4], "most_context_specific": [("the", 0.1)],
         "adjusted_self_similarity_by_band": {"top 100": [0.9, top], "100-1000": [0.9, middle], "1000+": [0.9, rare]},
         "band_contrast": contrast}
    r = probe_results(geometry=g)
    return bands_headline(r), bands_text(r)


def test_a_band_lower_as_shown_is_lower_though_less_than_one_unit_apart():
    """top 100 = 0.449 (shown 0.45), 100-1000 = 0.441 (shown 0.44): 0.008 apart, which the old test of at least 0.01
    read as "not lower", so the report printed "0.45; 0.44" beside "as published"."""
    headline, text = _said(0.449, 0.441)
    assert "top 100: 0.45; 100-1000: 0.44; 1000+: 0.52: the 100-1000 band has the lowest mean" in text
    assert "though not most: the 100-1000 band is lower still" in text
    assert headline.endswith("words of frequency rank 100-1000 change more still (0.44), so the most frequent words "
                             "do not change most.")
    assert "as published" not in headline + text
    headline, text = _said(0.441, 0.449)  # flipped: the top 100 band alone is lowest as shown
    assert "the top 100 band has the lowest mean (frequent (stop) words vary more with context than the rarest" in text
    assert "as published" in text and headline.endswith(", as published.")


def test_bands_equal_as_shown_are_said_to_be_tied():
    """100-1000 = 0.4449 and 1000+ = 0.4351 both show 0.44: "the 1000+ band has the lowest mean" was said of them."""
    _, text = _said(0.60, 0.4449, 0.4351, contrast=None)
    assert "100-1000: 0.44; 1000+: 0.44: the 100-1000 and 1000+ bands are tied for the lowest mean as shown" in text
    assert "not the stop words, unlike the published result" in text
    _, text = _said(0.60, 0.4451, 0.4351, contrast=None)  # flipped: 0.45 against 0.44
    assert "100-1000: 0.45; 1000+: 0.44: the 1000+ band has the lowest mean" in text


@pytest.mark.parametrize("middle, says, headline_says", [
    (0.4449, "tied for most with the 100-1000 band as shown", "words of frequency rank 100-1000 change as much (0.44 "
             "as shown), so the most frequent words are tied for most."),
    (0.4551, "as published", ", as published."),
])
def test_the_top_band_tied_for_lowest_is_not_called_most_or_as_published(middle, says, headline_says):
    headline, text = _said(0.4351, middle)
    assert says in text and headline.endswith(headline_says), (headline, text)
    assert ("vary most" in text) is False and ("as published" in headline + text) == (says == "as published")


def test_without_a_contrast_the_top_band_needs_a_full_unit_shown_to_be_called_different():
    """Files without the probe's contrast have no interval: a direction is said only where the bands are at least one
    unit of the last decimal shown apart on their own values; the lowest band is still named as shown."""
    headline, text = _said(0.46, 0.441, contrast=None)
    assert headline.startswith("No: at the last layer the most frequent words change less with their sentence")
    assert "not the stop words, unlike the published result" in text
    headline, text = _said(0.449, 0.441, contrast=None)  # printed 0.45 and 0.44, 0.008 apart: no direction claimed
    assert headline.startswith("No clear difference") and "the 100-1000 band has the lowest mean" in text
    headline, _ = _said(0.446, 0.4451, contrast=None)  # both 0.45 as shown
    assert headline.startswith("No clear difference")
