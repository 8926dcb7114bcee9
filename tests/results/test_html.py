"""The HTML report: one page that parses, holds every table and its plots inline, fetches nothing,
escapes every text from a Result, and still renders without matplotlib."""

import sys
from html.parser import HTMLParser

import pytest

from kprof.results.html import to_html
from tests.results.test_tables import LONG, chain, widened


class Page(HTMLParser):
    """Tags, attributes and text of a page, and whether every opened element was closed."""

    VOID = {"meta", "img", "br", "hr", "link", "input"}

    def __init__(self, text: str):
        super().__init__()
        self.tags, self.attrs, self.data, self.open = [], [], [], []
        self.feed(text)
        self.close()

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.attrs += [(tag, k, v or "") for k, v in attrs]
        if tag not in self.VOID:
            self.open.append(tag)

    def handle_endtag(self, tag):
        assert self.open and self.open[-1] == tag, f"</{tag}> closes <{self.open[-1] if self.open else None}>"
        self.open.pop()

    def handle_data(self, data):
        self.data.append(data)

    @property
    def text(self) -> str:
        return " ".join(" ".join(self.data).split())


def test_a_page_of_results_parses_with_tables_plots_and_no_external_asset(real_result):
    pytest.importorskip("matplotlib")
    results = [widened(real_result, fail=[LONG[1]]), widened(real_result, workloads=["w-8k", "w-32k"]),
               chain(real_result)]
    text = to_html(results)
    page = Page(text)
    assert not page.open and text.startswith("<!DOCTYPE html>")
    assert page.tags.count("table") == 3 and page.tags.count("section") == 3
    sources = [v for tag, k, v in page.attrs if k in ("src", "href")]
    assert sum(v.startswith("data:image/svg+xml;base64,") for v in sources) == 3
    assert "http://" not in text and "https://" not in text and "<link" not in text and "<script" not in text
    for column in ("method", "valid", "time us", "speedup [95% CI]", "round means us", "GB/s", "TFLOP/s", "drift"):
        assert column in page.text, column
    assert LONG[0] in page.text, "full labels: a page wraps rather than abbreviates"
    assert "FAIL" in page.text and 'class="failed"' in text and 'class="fail"' in text
    for heading in ("cpu-smoke", "device: cpu-interpreter", "date: ", "kprof ", "git "):
        assert heading in page.text, heading
    assert 'class="num"' in text and "marginal us" in page.text


def test_every_text_is_escaped(real_result):
    evil = "evil<script>alert(1)</script>"
    res = widened(real_result, specs=[evil])
    res.notes = ["a note with <b>markup</b> & an ampersand"]
    text = to_html([res])
    assert "<script>" not in text and "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    assert "<b>markup</b>" not in text and "&lt;b&gt;markup&lt;/b&gt; &amp; an ampersand" in text
    assert evil in Page(text).text


def test_without_matplotlib_the_page_has_its_tables_and_says_how_to_get_plots(real_result, monkeypatch):
    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib now fails
    page = Page(to_html([widened(real_result)]))
    assert page.tags.count("table") == 1 and "img" not in page.tags
    assert "pip install 'kprof[plot]'" in page.text
