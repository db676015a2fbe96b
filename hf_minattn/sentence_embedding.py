"""Make a saved MinAttn folder a sentence encoder for sentence-transformers: `SentenceTransformer(folder)` then
runs the encoder and mean-pools its last hidden states over the real (unpadded) tokens. As for the Auto classes, the
process must know "minattn": `import hf_minattn` first, or `SentenceTransformer(folder, trust_remote_code=True)` to
run the code saved in the folder (docs/interoperability.md).

The files are those sentence-transformers itself writes, in the layout every version since 2 reads: modules.json
(the module list), sentence_bert_config.json (the Transformer module's settings) and 1_Pooling/config.json.
"""

import os

from hf_minattn.record_files import write_json_atomically

POOLING_FOLDER = "1_Pooling"


def write_sentence_transformers_files(folder, hidden_size: int, max_seq_length: int) -> list[str]:
    """Write the three files into `folder` (a save_pretrained folder), each whole or not at all; returns their paths.
    `hidden_size` (the pooled vectors' size) and `max_seq_length` are positive integers: sentence-transformers reads
    the files back without checking them."""
    for name, value in (("hidden_size", hidden_size), ("max_seq_length", max_seq_length)):
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise ValueError(f"write_sentence_transformers_files: {name} must be a positive integer, got {value!r}")
    modules = [
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": POOLING_FOLDER, "type": "sentence_transformers.models.Pooling"},
    ]
    pooling = {"word_embedding_dimension": hidden_size, "pooling_mode_cls_token": False,
               "pooling_mode_mean_tokens": True, "pooling_mode_max_tokens": False,
               "pooling_mode_mean_sqrt_len_tokens": False}
    # The tokenizer does its own lower-casing: sentence-transformers must not do it a second time.
    files = {"modules.json": modules, "sentence_bert_config.json": {"max_seq_length": max_seq_length, "do_lower_case": False},
             os.path.join(POOLING_FOLDER, "config.json"): pooling}
    paths = [os.path.join(folder, name) for name in files]
    for path, content in zip(paths, files.values()):
        write_json_atomically(path, content, indent=2)
    return paths
