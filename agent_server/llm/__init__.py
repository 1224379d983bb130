"""Provider-neutral messages, the model registry, and one module per provider API."""
