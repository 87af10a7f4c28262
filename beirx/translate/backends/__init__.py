"""Machine-translation backends, by name. Adding one is a module plus one line here."""

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
