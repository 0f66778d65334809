from __future__ import annotations

import time

from htmlrag_chat.tokens import ApproxTokenCounter, HFTokenCounter, load_token_counter


def test_local_tokenizer_path_counts_exactly(tiny_tokenizer_dir):
    loaded = load_token_counter(str(tiny_tokenizer_dir))
    assert isinstance(loaded.counter, HFTokenCounter) and loaded.counter.exact
    counter = loaded.counter
    assert counter.count_many(["<p>hello</p>", ""]) == [counter.count("<p>hello</p>"), 0]
    assert counter.count("<p>hello world</p>" * 10) > counter.count("<p>hello world</p>")


def test_unavailable_tokenizer_falls_back_fast_with_a_notice(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    start = time.perf_counter()
    loaded = load_token_counter("meta-llama/Llama-3.1-8B-Instruct")
    assert time.perf_counter() - start < 10
    assert isinstance(loaded.counter, ApproxTokenCounter) and not loaded.counter.exact
    assert "approximation" in loaded.notice and "meta-llama/Llama-3.1-8B-Instruct" in loaded.notice


def test_approx_can_be_asked_for_without_a_notice():
    loaded = load_token_counter("approx")
    assert isinstance(loaded.counter, ApproxTokenCounter) and loaded.notice is None


def test_approximation_rules():
    counter = ApproxTokenCounter()
    assert counter.count("</p><p>") == 5  # "</", "p", "><", "p", ">"
    assert counter.count("internationalization") == 5  # 20 letters / 4
    assert counter.count("1234567") == 3  # digits in threes
    assert counter.count("東京タワー") == 5
