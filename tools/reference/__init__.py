"""Reference-value families for tools/make_reference.py: one module each."""
