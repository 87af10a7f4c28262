"""Machine-translation backends, by name. Adding one is a module plus one line here."""

from beirx.models.llm.connection import LOCAL, SERVER
from beirx.registry import Registry

TRANSLATORS = Registry("translator", {
    "hf": "beirx.translate.backends.hf:HFTranslator",
    "ctranslate2": "beirx.translate.backends.ctranslate2:CT2Translator",
    "apertium": "beirx.translate.backends.apertium:ApertiumTranslator",
    "google": "beirx.translate.backends.google:GoogleTranslator",
    "deepl": "beirx.translate.backends.deepl:DeepLTranslator",
    "openai": "beirx.translate.backends.openai:OpenAITranslator",
    "hf-llm": "beirx.translate.backends.hf_llm:HFLLMTranslator",
})

#: The LLM translators by where their LLM runs (``--llm-backend``): the translator names stay, they are recorded in
#: every translation memory key.
TRANSLATOR_FOR_BACKEND = {SERVER: "openai", LOCAL: "hf-llm"}
