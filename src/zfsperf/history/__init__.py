"""Performance history: every run in one store (store.py), change points across runs (analysis.py)."""
