"""The scripted experts of the game envs, one module per game: ``SPEC`` (the game's settings) and ``oracle``."""
