"""Every sentence of the probe report that the numbers choose: flip the numbers, and the sentence flips.

(heads_text's entropy, head_map_text, head roles, ablation and senses-by-accuracy have theirs in
test_probes_heads.py and test_probes_senses.py.)"""

import copy

from conftest import probe_results

from hf_minattn.probes.report.bands import bands_headline, bands_text
from hf_minattn.probes.report.geometry import geometry_text
from hf_minattn.probes.report.sense import sense_tables, sense_text
from hf_minattn.probes.report.weights import weights_text

GEOMETRY = {"layers": [0, 1, 2], "words_scored": 12, "occurrences_per_word": 6.0,
            "adjusted_self_similarity": [0.5, 0.4, 0.3], "anisotropy": [0.1, 0.2, 0.3],
            "adjusted_intra_similarity": [0.2, 0.15, 0.1], "mev": [0.4, 0.35, 0.3], "adjusted_mev": [0.2, 0.15, 0.1],
            "min_contexts": 3}


def geometry(**changes):
    return geometry_text(probe_results(geometry={**copy.deepcopy(GEOMETRY), **changes}))


def test_geometry_sentence_follows_the_self_similarity_trend():
    falls = geometry()
    assert "falls from 0.50 at layer 0 to 0.30 at layer 2 (lowest 0.30 at layer 2)" in falls
    assert "upper layers are more context-specific, the published trend" in falls
    rises = geometry(adjusted_self_similarity=[0.3, 0.2, 0.5])
    assert "rises from 0.30 at layer 0 to 0.50 at layer 2 (lowest 0.20 at layer 1)" in rises
    assert "upper layers are less context-specific, against the published trend" in rises
    assert "published trend, " not in rises and "more context-specific, the published trend" not in rises
    level = geometry(adjusted_self_similarity=[0.3, 0.2, 0.302])
    assert "goes from 0.30 at layer 0 to 0.30 at layer 2 (lowest 0.20 at layer 1, equal at the precision shown)" in level
    assert "the published trend (upper layers more context-specific) is not shown here" in level


def test_geometry_sentence_follows_the_explained_variance():
    assert "explains 30% of their variance (MEV; 0.10 above the random-words baseline), so a single static vector " \
           "captures only part of a word's contextual vectors" in geometry()
    text = geometry(mev=[0.9, 0.85, 0.8], adjusted_mev=[0.7, 0.65, 0.6])
    assert "explains 80% of their variance (MEV; 0.60 above" in text and "could stand in for most of a word's" in text
    # below the baseline (a negative adjusted MEV) or level with it at the precision shown: said so, not "-0.02 above"
    below = geometry(mev=[0.4, 0.35, 0.3], adjusted_mev=[0.1, 0.05, -0.02])
    assert "(MEV; 0.02 below the random-words baseline)" in below and "above" not in below.split("MEV;")[1]
    assert "(MEV; level with the random-words baseline)" in geometry(adjusted_mev=[0.1, 0.05, 0.004])


def test_bands_sentence_follows_which_band_is_most_context_specific():
    g = {**GEOMETRY, "adjusted_self_similarity_by_band": {"top 100": [0.5, 0.1], "100-1000": [0.5, 0.3],
                                                          "rest": [0.5, 0.4]},
         "most_context_specific": [("the", 0.1), ("of", 0.12)]}
    text = bands_text(probe_results(geometry=g))
    assert "top 100: 0.10; 100-1000: 0.30; rest: 0.40: the top 100 band has the lowest mean" in text
    assert "frequent (stop) words vary most with context, as published" in text and "'the', 'of'" in text
    g["adjusted_self_similarity_by_band"]["rest"] = [0.5, 0.05]
    text = bands_text(probe_results(geometry=g))
    assert "the rest band has the lowest mean (not the stop words, unlike the published result)" in text
    # a file with the probe's bootstrap contrast (top 100 - 1000+): its interval decides, not the means as shown
    g["band_contrast"] = {"bands": ["top 100", "1000+"], "estimate": 0.05, "low": -0.01, "high": 0.11, "words": [9, 80]}
    text = bands_text(probe_results(geometry=g))
    assert "no clear difference; top 100 - 1000+: +0.05 [-0.01, +0.11], 95% bootstrap over the words)" in text
    g["band_contrast"].update(low=0.01)
    assert "(not the stop words, unlike the published result; top 100 - 1000+" in bands_text(probe_results(geometry=g))
    g["band_contrast"].update(estimate=-0.05, low=-0.11, high=-0.01)
    # the interval says top 100 < 1000+, but the rest band's mean is lower still: not "most", not "as published"
    assert "the rest band has the lowest mean (frequent (stop) words vary more with context than the rarest words " \
           "(rank >= 1000), though not most: the rest band is lower still; top" in bands_text(probe_results(geometry=g))
    g["adjusted_self_similarity_by_band"]["rest"] = [0.5, 0.4]
    assert "(frequent (stop) words vary more with context than the rarest words (rank >= 1000), as published; top" \
        in bands_text(probe_results(geometry=g))
    g["adjusted_self_similarity_by_band"] = {"top 100": [0.5, 0.1], "rest": [0.5, None]}
    assert bands_text(probe_results(geometry=g)) == "Too few bands have words to compare frequencies."


def test_bands_sentences_say_what_the_contrast_over_words_of_one_piece_adds():
    """The contrast over words of one piece, set beside the contrast over all words, in the headline and the text:
    each combination of their intervals picks its own sentence."""
    g = {**GEOMETRY, "adjusted_self_similarity_by_band": {"top 100": [0.5, 0.1], "1000+": [0.5, 0.3]},
         "most_context_specific": [("the", 0.1)],
         "band_contrast": {"bands": ["top 100", "1000+"], "estimate": -0.2, "low": -0.3, "high": -0.1,
                           "words": [50, 400]}}

    def said(one_piece):
        g["band_contrast"]["one_piece"] = one_piece
        r = probe_results(geometry=g)
        headline, text = bands_headline(r), bands_text(r)
        assert headline.startswith("Yes: the most frequent words") and "as published" in text
        return headline, text

    lower = {"estimate": -0.15, "low": -0.25, "high": -0.05, "words": [48, 120]}
    for sentence in said(lower):
        assert "Among words of one piece only the difference points the same way (-0.15 [-0.25, -0.05] over 48 and " \
               "120 words), so it is not the piece count alone" in sentence
    for sentence in said({**lower, "high": 0.02}):
        assert "Among words of one piece only the difference is not told apart (-0.15 [-0.25, +0.02]" in sentence
        assert "so the piece count may explain it" in sentence
    for sentence in said({**lower, "estimate": 0.1, "low": 0.05, "high": 0.15}):
        assert "Among words of one piece only the difference reverses (+0.10 [+0.05, +0.15]" in sentence
    for sentence in said(None):
        assert "The piece count is not matched: a band has fewer than 2 words of one piece." in sentence
    g["band_contrast"].update(estimate=-0.05, low=-0.1, high=0.01)  # over all words: not told apart
    r = probe_results(geometry={**g, "band_contrast": {**g["band_contrast"], "one_piece": lower}})
    assert bands_headline(r).startswith("No clear difference")
    assert "Among words of one piece only the most frequent words change more with their sentence (-0.15" in \
        bands_headline(r)
    r = probe_results(geometry={**g, "band_contrast": {**g["band_contrast"], "one_piece": {**lower, "high": 0.02}}})
    assert "Among words of one piece only there is no clear difference either (-0.15 [-0.25, +0.02]" in bands_text(r)
    del g["band_contrast"]["one_piece"]  # a file from before piece counts were matched
    assert "piece" not in bands_text(probe_results(geometry=g))


def test_bands_say_as_published_only_where_the_most_frequent_words_are_the_lowest_band():
    """The verdict is the interval of top 100 - 1000+; "change most" and "as published" need the top 100 band below
    the 100-1000 band too."""
    g = {**GEOMETRY, "adjusted_self_similarity_by_band": {"top 100": [0.5, 0.30], "100-1000": [0.5, 0.10],
                                                          "1000+": [0.5, 0.40]},
         "band_contrast": {"bands": ["top 100", "1000+"], "estimate": -0.10, "low": -0.15, "high": -0.05,
                           "words": [80, 300]}, "most_context_specific": [("of", 0.05)]}
    headline, text = bands_headline(probe_results(geometry=g)), bands_text(probe_results(geometry=g))
    assert headline.startswith("Yes: the most frequent words change more with their sentence than the rarest words "
                               "(rank >= 1000) at the last layer")  # no words named that the numbers do not show
    assert headline.endswith("; words of frequency rank 100-1000 change more still (0.10), so the most frequent words "
                             "do not change most.")
    assert "the 100-1000 band has the lowest mean (frequent (stop) words vary more with context than the rarest words " \
           "(rank >= 1000), though not most: the 100-1000 band is lower still;" in text
    assert "as published" not in headline + text and "vary most" not in text
    g["adjusted_self_similarity_by_band"]["100-1000"] = [0.5, 0.35]
    headline, text = bands_headline(probe_results(geometry=g)), bands_text(probe_results(geometry=g))
    assert headline.endswith("95% bootstrap over the words), as published.")
    assert "the top 100 band has the lowest mean (frequent (stop) words vary more with context than the rarest words " \
           "(rank >= 1000), as published;" in text


def test_sense_sentence_follows_the_mean_cosine_between_occurrences():
    def sense(first, last, anisotropy=None):
        # 3 occurrences: off-diagonal cosines `first` at layer 0 and `last` at the last layer
        matrix = lambda c: [[1, c, c], [c, 1, c], [c, c, 1]]  # noqa: E731
        geometry = {} if anisotropy is None else {"geometry": {**GEOMETRY, "anisotropy": anisotropy}}
        return sense_text(probe_results(sense={"word": "bank", "sentences": ["a", "b", "c"], "layers": [0, 1, 2],
                                               "similarity": [matrix(first), matrix(0.5), matrix(last)]}, **geometry))

    apart = sense(0.9, 0.4)
    assert "its occurrences are less alike at the last layer than at layer 0 (mean cosine 0.90 at layer 0, 0.40 at " \
           "layer 2; not adjusted for anisotropy" in apart
    assert "no interval: this illustrates; the geometry section" in apart and "Yes" not in apart
    together = sense(0.4, 0.9)
    assert "its occurrences are more alike at the last layer than at layer 0 (mean cosine 0.40" in together
    assert "the block structure shows" in together  # no sense labels: no within/across numbers
    # the raw fall is the anisotropy's: 0.9 - 0.8 and 0.4 - 0.3 leave the same 0.10 above each layer's baseline
    level = sense(0.9, 0.4, anisotropy=[0.8, 0.5, 0.3])
    assert "are about as alike at the last layer as at layer 0 beyond each layer's anisotropy baseline (mean cosine " \
           "minus the anisotropy baseline 0.10 at layer 0, 0.10 at layer 2; raw 0.90 and 0.40, baselines 0.80 and " \
           "0.30)" in level
    assert "less alike at the last layer than at layer 0 beyond each layer's anisotropy baseline (mean cosine minus " \
           "the anisotropy baseline 0.10 at layer 0, -0.10" in sense(0.9, 0.4, anisotropy=[0.8, 0.5, 0.5])


def test_sense_table_shows_the_baseline_where_the_results_have_one():
    m = [[1, 0.6], [0.6, 1]]
    sense = {"word": "bank", "sentences": ["a", "b"], "layers": [0, 1, 2], "similarity": [m, m, m],
             "nearest": [[[], []]] * 3}
    plain = sense_tables(probe_results(sense=sense))[0]
    assert plain["header"] == ["layer", "mean cosine between the occurrences"] and plain["rows"][2] == [2, "0.60"]
    table = sense_tables(probe_results(sense=sense, geometry={**GEOMETRY, "anisotropy": [0.1, 0.2, 0.45]}))[0]
    assert table["header"][2:] == ["anisotropy baseline", "minus baseline"] and table["rows"][2] == [2, "0.60", "0.45",
                                                                                                    "0.15"]


def test_sense_sentence_compares_same_and_cross_sense_pairs_where_the_senses_are_known():
    def sense(within, across):  # sentences 0, 1 of one sense, 2, 3 of the other
        m = [[1, within, across, across], [within, 1, across, across], [across, across, 1, within],
             [across, across, within, 1]]
        return sense_text(probe_results(sense={"word": "bank", "sentences": ["a", "b", "c", "d"], "layers": [0, 1],
                                               "similarity": [m, m], "senses": ["river", "river", "money", "money"]}))

    assert "the occurrences of one sense are closer to each other than to the other sense's (mean cosine 0.86 " \
           "within a sense, 0.70 across; 4 sentences, so no interval)" in sense(0.86, 0.70)
    assert "are no closer to each other than to the other sense's (mean cosine 0.70 within" in sense(0.70, 0.86)


def test_weights_sentence_follows_the_rank_against_initialisation():
    def weights(trained, initial):
        w = {"source": "the model's weights", "head_dim": 8,
             "trained": {"qk_effective_rank": [trained, trained], "ov_effective_rank": [trained, trained]},
             "initial": {"qk_effective_rank": [initial, initial], "ov_effective_rank": [initial, initial]}}
        return weights_text(probe_results(weights=w))

    lower = weights(3.0, 7.0)
    assert "mean effective rank (entropy-based, Roy & Vetterli) QK 3.0, OV 3.0 of at most 8" in lower
    assert "against QK 7.0, OV 7.0 for the same model at random initialisation (its own initial weights): the " \
           "trained circuits' mean rank of both, 3.0 against 7.0, is lower: on average the trained heads use fewer " \
           "directions (4 of 4 head " \
           "circuits lower)" in lower
    higher = weights(7.5, 7.0)
    assert "mean rank of both, 7.5 against 7.0, is not lower: on average the trained heads do not use fewer " \
           "directions (0 of 4" in higher
    assert "heads use fewer directions" not in higher
