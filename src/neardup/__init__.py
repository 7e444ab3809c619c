"""neardup: find near-duplicate documents at scale."""

__version__ = "0.1.0"
