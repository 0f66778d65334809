"""The question loop that turns a message into a cited answer (``loop.Agent``)."""
