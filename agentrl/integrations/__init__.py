"""Adapters to outside frameworks (RLlib, ...); each module imports its framework lazily."""
