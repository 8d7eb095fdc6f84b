"""dsstar: ask a folder of data files a question, get a verified answer (the DS-STAR method)."""

__version__ = "0.1.0"
