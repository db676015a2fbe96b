"""hf_minattn: a minimal self-attention encoder native to Hugging Face, with training and probes.

Importing the package registers MinAttn with the Auto classes, and makes every saved checkpoint carry its
modeling code and `auto_map`, so that it also loads where hf_minattn is not installed.
"""

from transformers import (
    AutoConfig,
    AutoModel,
    AutoModelForMaskedLM,
    AutoModelForSequenceClassification,
    AutoModelForTokenClassification,
)

from .configuration_minattn import MinAttnConfig
from .modeling_minattn import (
    MinAttnForMaskedLM,
    MinAttnForSequenceClassification,
    MinAttnForTokenClassification,
    MinAttnModel,
    MinAttnPreTrainedModel,
)
from .tokenization import train_tokenizer

__version__ = "0.1.0"  # the package version: pyproject.toml reads it from here ([tool.setuptools.dynamic])

AutoConfig.register(MinAttnConfig.model_type, MinAttnConfig)
AutoModel.register(MinAttnConfig, MinAttnModel)
AutoModelForMaskedLM.register(MinAttnConfig, MinAttnForMaskedLM)
AutoModelForSequenceClassification.register(MinAttnConfig, MinAttnForSequenceClassification)
AutoModelForTokenClassification.register(MinAttnConfig, MinAttnForTokenClassification)

MinAttnConfig.register_for_auto_class()
MinAttnModel.register_for_auto_class("AutoModel")
MinAttnForMaskedLM.register_for_auto_class("AutoModelForMaskedLM")
MinAttnForSequenceClassification.register_for_auto_class("AutoModelForSequenceClassification")
MinAttnForTokenClassification.register_for_auto_class("AutoModelForTokenClassification")

__all__ = [
    "MinAttnConfig",
    "MinAttnModel",
    "MinAttnForMaskedLM",
    "MinAttnForSequenceClassification",
    "MinAttnForTokenClassification",
    "MinAttnPreTrainedModel",
    "train_tokenizer",
]
