"""Train a tokenizer (BERT-style pre-tokenisation, lower-cased) with the `tokenizers` library: WordPiece sub-words, or
whole words (a word-level vocabulary, as word2vec and the word-similarity benchmarks see text)."""

from collections.abc import Iterable

from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers
from transformers import PreTrainedTokenizerFast

# The order fixes the ids, which MinAttnConfig's defaults assume: [PAD]=0 [UNK]=1 [CLS]=2 [SEP]=3 [MASK]=4.
SPECIAL_TOKENS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
TOKENIZER_MODELS = ("wordpiece", "word")


def continuation_forms(texts: list[str], normalizer, pre_tokenizer) -> list[str]:
    """Every "##c" WordPiece continuation form in `texts`: a character that follows another within a pre-token, with
    the prefix, sorted."""
    chars = set()
    for text in texts:
        for word, _ in pre_tokenizer.pre_tokenize_str(normalizer.normalize_str(text)):
            chars.update(word[1:])
    return [f"##{c}" for c in sorted(chars)]


def check_count(name: str, value, low: int, high: int, why: str = "") -> None:
    """A ValueError unless `value` is an integer (not a bool) in [low, high]; `why` explains the bounds."""
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ValueError(f"{name} must be an integer in [{low}, {high}]{why}, got {value!r}")


def check_texts(texts) -> list[str]:
    """The non-empty texts of `texts`, an iterable of strings in which None (a missing text in a dataset column, see
    `hf_minattn.data.check_text_column`) is skipped; a TypeError for anything else, naming its type."""
    if isinstance(texts, (str, bytes)):
        what = "string" if isinstance(texts, str) else "bytes object"
        raise TypeError(f"texts must be an iterable of strings, not a single {what}")
    try:
        items = iter(texts)
    except TypeError:
        raise TypeError(f"texts must be an iterable of strings, got {type(texts).__name__} {texts!r:.80}") from None
    kept = []
    for text in items:
        if text is not None and not isinstance(text, str):
            raise TypeError(f"texts must hold strings (or None), got an item of type {type(text).__name__}: "
                            f"{text!r:.80}")
        if text is not None and text.strip():
            kept.append(text)
    if not kept:
        raise ValueError("train_tokenizer got no non-empty text to learn a vocabulary from")
    return kept


def check_training_arguments(texts, vocab_size, model_max_length, model, min_frequency=2, lowercase=True,
                             show_progress=True) -> list[str]:
    """The non-empty texts of `texts`, after checking train_tokenizer's arguments (ValueError or TypeError), here
    rather than in the Rust trainer, whose errors (OverflowError, "'str' object is not an instance of 'bool'") name
    no argument."""
    # The upper bound: the WordPiece trainer reserves memory for vocab_size entries before it starts (2**32 asked
    # for 283 GB and aborted the process); 2**24 is far above any vocabulary in use.
    check_count("vocab_size", vocab_size, len(SPECIAL_TOKENS) + 1, 2**24,
                f" (more than the {len(SPECIAL_TOKENS)} special tokens)")
    check_count("min_frequency", min_frequency, 0, 2**64 - 1, " (a count: 64-bit in tokenizers)")
    if isinstance(model_max_length, bool) or not isinstance(model_max_length, int) or model_max_length <= 2:
        raise ValueError(f"model_max_length must be an integer > 2, got {model_max_length!r}")
    if model not in TOKENIZER_MODELS:
        raise ValueError(f"model must be one of {TOKENIZER_MODELS}, got {model!r}")
    for name, value in (("lowercase", lowercase), ("show_progress", show_progress)):
        if not isinstance(value, bool):
            raise TypeError(f"{name} must be True or False, got {value!r}")
    return check_texts(texts)


def learn_vocabulary(texts: list[str], Model, Trainer, normalizer, pre_tokenizer, model: str, **trainer_args) -> dict:
    """{token: id} learned from `texts`: the special tokens first (ids 0-4), then the learned tokens in sorted order,
    so that the same vocabulary always gets the same ids."""
    # WordPiece is trained by the BPE trainer, which numbers the "##c" continuation forms in hash-map order as it
    # meets them, and breaks ties between equally frequent merges by those numbers: two trainings on the same texts
    # could keep different vocabularies (huggingface/tokenizers#1794). Handing the trainer every continuation form
    # in sorted order, as special tokens (which it numbers first, in the order given), makes the numbering, and so
    # the vocabulary, the same at every training. The set is the one the trainer would have made itself; only the
    # order is fixed. The word-level trainer sorts equal counts by the word already.
    continuations = continuation_forms(texts, normalizer, pre_tokenizer) if model == "wordpiece" else []
    trainer = Trainer(special_tokens=SPECIAL_TOKENS + continuations, **trainer_args)
    learner = Tokenizer(Model(unk_token="[UNK]"))
    learner.normalizer, learner.pre_tokenizer = normalizer, pre_tokenizer
    learner.train_from_iterator(texts, trainer=trainer, length=len(texts))
    learned = sorted(token for token in learner.get_vocab() if token not in SPECIAL_TOKENS)
    return {token: i for i, token in enumerate([*SPECIAL_TOKENS, *learned])}


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

    `texts` holds strings; None items (missing texts of a dataset column) and blank ones are skipped.
    """
    texts = check_training_arguments(texts, vocab_size, model_max_length, model, min_frequency, lowercase,
                                     show_progress)
    if model == "wordpiece":
        Model, Trainer = models.WordPiece, trainers.WordPieceTrainer
    else:
        Model, Trainer = models.WordLevel, trainers.WordLevelTrainer
    normalizer, pre_tokenizer = normalizers.BertNormalizer(lowercase=lowercase), pre_tokenizers.BertPreTokenizer()
    vocab = learn_vocabulary(texts, Model, Trainer, normalizer, pre_tokenizer, model, vocab_size=vocab_size,
                             min_frequency=min_frequency, show_progress=show_progress)
    # A fresh tokenizer, so that the continuation forms are plain vocabulary, not special tokens matched in raw text.
    tokenizer = Tokenizer(Model(vocab=vocab, unk_token="[UNK]"))
    tokenizer.normalizer, tokenizer.pre_tokenizer = normalizer, pre_tokenizer
    tokenizer.add_special_tokens(SPECIAL_TOKENS)
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
