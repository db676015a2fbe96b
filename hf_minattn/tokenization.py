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


def check_training_arguments(texts, vocab_size, model_max_length, model) -> list[str]:
    """The non-empty texts of `texts`, after checking train_tokenizer's arguments (ValueError or TypeError)."""
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
    return texts


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
    """
    texts = check_training_arguments(texts, vocab_size, model_max_length, model)
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
