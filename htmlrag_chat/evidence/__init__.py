"""Claims and their evidence: the words of the sources that back each sentence of an answer."""
