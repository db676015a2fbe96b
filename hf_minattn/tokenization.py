"""Train a tokenizer (BERT-style pre-tokenisation, lower-cased) with the `tokenizers` library: WordPiece sub-words, or
whole words (a word-level vocabulary, as word2vec and the word-similarity benchmarks see text)."""

from collections.abc import Iterable

from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers
from transformers import PreTrainedTokenizerFast

# The order fixes the ids, which MinAttnConfig's defaults assume: [PAD]=0 [UNK]=1 [CLS]=2 [SEP]=3 [MASK]=4.
SPECIAL_TOKENS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
TOKENIZER_MODELS = ("wordpiece", "word")


def train_tokenizer(
    texts: Iterable[str],
    vocab_size: int = 8192,
    min_frequency: int = 2,
    model_max_length: int = 512,
    lowercase: bool = True,
    show_progress: bool = True,
    model: str = "wordpiece",
) -> PreTrainedTokenizerFast:
    """Train a tokenizer on `texts` and return it as a transformers fast tokenizer.

    `model="wordpiece"` learns sub-words (BERT's WordPiece; every word can be spelled). `model="word"` keeps whole
    words seen at least `min_frequency` times (the most frequent ones, up to `vocab_size` entries in all) and maps
    every other word to [UNK]: one vector per word, as in word2vec.

    The result adds [CLS] ... [SEP] around every text, knows its special tokens (so `pipeline("fill-mask")` finds
    [MASK]) and round-trips through `save_pretrained` / `AutoTokenizer.from_pretrained`.
    """
    if isinstance(vocab_size, bool) or not isinstance(vocab_size, int) or vocab_size <= len(SPECIAL_TOKENS):
        raise ValueError(f"vocab_size must be an integer larger than {len(SPECIAL_TOKENS)} (the special tokens), "
                         f"got {vocab_size!r}")
    if isinstance(model_max_length, bool) or not isinstance(model_max_length, int) or model_max_length <= 2:
        raise ValueError(f"model_max_length must be an integer > 2, got {model_max_length!r}")
    if model not in TOKENIZER_MODELS:
        raise ValueError(f"model must be one of {TOKENIZER_MODELS}, got {model!r}")
    if isinstance(texts, str):
        raise TypeError("texts must be an iterable of strings, not a single string")
    texts = [t for t in texts if isinstance(t, str) and t.strip()]
    if not texts:
        raise ValueError("train_tokenizer got no non-empty text to learn a vocabulary from")

    if model == "wordpiece":
        Model, Trainer = models.WordPiece, trainers.WordPieceTrainer
    else:
        Model, Trainer = models.WordLevel, trainers.WordLevelTrainer
    tokenizer = Tokenizer(Model(unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.BertNormalizer(lowercase=lowercase)
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    trainer = Trainer(vocab_size=vocab_size, min_frequency=min_frequency, special_tokens=SPECIAL_TOKENS,
                      show_progress=show_progress)
    tokenizer.train_from_iterator(texts, trainer=trainer, length=len(texts))
    # The trainer numbers tokens in hash-map order: renumber them in sorted order, so that the same vocabulary always
    # gets the same ids. (WordPiece can still keep a slightly different vocabulary from one training to the next,
    # since it breaks ties between equally frequent merges in hash-map order: runs that must be compared exactly
    # should share one saved tokenizer.)
    learned = sorted(token for token in tokenizer.get_vocab() if token not in SPECIAL_TOKENS)
    vocab = {token: i for i, token in enumerate([*SPECIAL_TOKENS, *learned])}
    tokenizer.model = Model(vocab=vocab, unk_token="[UNK]")
    cls_id, sep_id = vocab["[CLS]"], vocab["[SEP]"]
    tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", cls_id), ("[SEP]", sep_id)],
    )
    if model == "wordpiece":
        tokenizer.decoder = decoders.WordPiece(prefix="##")
    return PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        pad_token="[PAD]",
        unk_token="[UNK]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        mask_token="[MASK]",
        model_max_length=model_max_length,
        # MinAttn has no segment embeddings: don't produce token_type_ids.
        model_input_names=["input_ids", "attention_mask"],
    )
