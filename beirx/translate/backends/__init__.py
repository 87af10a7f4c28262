"""Machine-translation backends, by name. Adding one is a module plus one line here."""

from beirx.registry import Registry

TRANSLATORS = Registry("translator", {})
