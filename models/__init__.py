"""Model adapters: the shared interface, the registry and SOTER itself (``models.soter``)."""
