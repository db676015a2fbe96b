"""The model card names its data in a few words where the Hub shows a title, and says it in full in its text."""

from types import SimpleNamespace

from conftest import tiny_config
from hf_minattn.data import WIKIPEDIA_CORPUS_DESCRIPTION
from hf_minattn.model_card import EMBEDDED_CORPUS_TITLE, CardFacts, dataset_title, validate_model_card, write_model_card


def data_args(dataset_name=None, dataset_config_name=None, train_file=None):
    return SimpleNamespace(dataset_name=dataset_name, dataset_config_name=dataset_config_name, train_file=train_file)


def test_the_dataset_title_is_the_hub_id_the_file_name_or_the_embedded_corpus():
    assert dataset_title(data_args("wikitext", "wikitext-103-raw-v1")) == "wikitext (wikitext-103-raw-v1)"
    assert dataset_title(data_args("wikitext")) == "wikitext"
    assert dataset_title(data_args(train_file="/data/corpus/my.txt")) == "my.txt"
    assert dataset_title(data_args()) == EMBEDDED_CORPUS_TITLE


def test_the_results_name_the_embedded_corpus_briefly_and_the_text_describes_it(tmp_path):
    facts = CardFacts(model_name="minattn-test", config=tiny_config(), num_parameters=1234, dataset_id=None,
                      dataset_config=None, dataset_description=WIKIPEDIA_CORPUS_DESCRIPTION,
                      dataset_title=dataset_title(data_args()), train_summary="100 steps, seed 0",
                      eval_metrics={"eval_loss": 5.0, "eval_perplexity": 148.41, "eval_accuracy": 0.1})
    card = validate_model_card(write_model_card(tmp_path, facts))
    names = {result.dataset_name for result in card.data.eval_results}
    assert names == {EMBEDDED_CORPUS_TITLE} and len(EMBEDDED_CORPUS_TITLE.split()) <= 8
    assert WIKIPEDIA_CORPUS_DESCRIPTION in card.text
    # Time and throughput are not copied into the card: it links the file that holds them.
    assert "[`train_results.json`](train_results.json)" in card.text and "tokens/s" not in card.text
