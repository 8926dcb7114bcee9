"""Results -> one self-contained HTML page, for a pull request or a lab notebook.

Per Result: a heading that says what ran where (workload, mode, device, date, kprof version, git
revision), the table with every column the terminal shows at its widest, the notes, and the
plots. Nothing is fetched when the page opens: the style is inline and the plots are embedded
as data URIs, so the file can be attached, mailed or archived as it is. Every piece of text
from a Result is escaped.
"""

from __future__ import annotations

import base64
from html import escape

from kprof.results.schema import Result
from kprof.results.tables import ResultTable, columns

STYLE = """
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2em auto; max-width: 1500px;
       padding: 0 1.5em; color: #1b1b1b; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin: 2.2em 0 0.2em; border-bottom: 1px solid #ccc; }
.meta { color: #555; margin: 0 0 1em; }
.table-wrap { overflow-x: auto; }
table { border-collapse: collapse; font: 13px/1.4 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
caption { caption-side: top; text-align: left; font-weight: bold; padding: 0.3em 0; }
th, td { padding: 0.25em 0.8em; white-space: nowrap; border-bottom: 1px solid #eee; }
th { border-bottom: 2px solid #888; text-align: left; }
.num { text-align: right; }
tr.section-end td { border-bottom: 2px solid #bbb; }
tr.failed td { background: #fdecea; }
.ok { color: #1a7f37; } .fail { color: #b42318; font-weight: bold; } .warn { color: #9a6700; }
.bold { font-weight: bold; }
.lines { color: #444; font-size: 0.92em; margin: 0.6em 0; padding-left: 1.2em; }
.notes li { margin: 0.2em 0; }
.badge { color: #fff; background: #b42318; border-radius: 3px; padding: 0 0.4em; font-size: 0.85em; }
img.plot { max-width: 100%; height: auto; display: block; margin: 1em 0; }
.missing { color: #9a6700; }
"""


def to_html(results: list[Result]) -> str:
    """One HTML page of ``results``: headings, tables, notes and plots, with no external assets."""
    plots, missing = _plotter()
    body = [f'<h1>kprof report: {len(results)} result{"s" if len(results) != 1 else ""}</h1>']
    if missing:
        body.append(f'<p class="missing">{escape(missing)}</p>')
    for i, res in enumerate(results, start=1):
        body.append(_section(res, i, plots))
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
            f"<title>kprof report</title>\n<style>{STYLE}</style>\n</head>\n<body>\n"
            + "\n".join(body) + "\n</body>\n</html>\n")


def _plotter():
    """The picture maker and ``""``, or None and the line that says how to get plots."""
    from kprof.results import plots

    why = plots.unavailable()
    return (None, why) if why else (plots.image, "")


def _section(res: Result, index: int, plots) -> str:
    table = columns(res)
    failed = [m.label for m in res.methods if not m.validation.passed or m.faults]
    badge = f' <span class="badge">{len(failed)} FAIL</span>' if failed else ""
    out = [f'<section id="result-{index}">',
           f"<h2>{escape(str(res.workload.get('name', 'workload')))} — {escape(res.kind)}{badge}</h2>",
           f'<p class="meta">{escape(_meta(res))}</p>']
    if res.partial:
        out.append(f'<p class="fail">partial result: {escape(res.partial)}</p>')
    out.append(_table(table))
    out.append('<ul class="lines">' + "".join(f"<li>{escape(line)}</li>" for line in table.caption_lines()) + "</ul>")
    if res.notes:
        out.append('<ul class="notes">' + "".join(f"<li>note: {escape(n)}</li>" for n in res.notes) + "</ul>")
    if plots is not None:
        data = base64.b64encode(plots([res], "svg")).decode("ascii")
        alt = escape(f"plots of {res.workload.get('name')}")
        out.append(f'<img class="plot" alt="{alt}" src="data:image/svg+xml;base64,{data}">')
    out.append("</section>")
    return "\n".join(out)


def _meta(res: Result) -> str:
    env = res.environment
    device = (env.get("gpu") or {}).get("name") or env.get("execution") or "unknown device"
    revision = res.git_revision or env.get("git_revision")
    parts = [f"mode: {res.mode}", f"device: {device}", f"date: {res.created}",
             f"kprof {res.kprof_version or env.get('kprof') or 'unknown'}",
             f"git {revision}" if revision else "git revision unknown",
             f"{res.protocol.get('rounds')} rounds x {res.protocol.get('observations')} observations"]
    return " · ".join(parts)


def _table(table: ResultTable) -> str:
    cols = table.columns
    title = escape(table.title) + (f' <span class="badge">{escape(table.failed)}</span>' if table.failed else "")
    head = "".join(f'<th class="{"num" if c.numeric else "text"}">{escape(c.header)}</th>' for c in cols)
    rows = []
    for i in range(len(cols[0].cells) if cols else 0):
        cells = [c.cells[i] for c in cols]
        classes = (["failed"] if any(cell.tone == "fail" and col.priority < 3 for cell, col in zip(cells, cols))
                   else []) + (["section-end"] if i in table.section_ends else [])
        tds = "".join(f"<td{_classes('num' if col.numeric else '', cell.tone)}>{escape(cell.text)}</td>"
                      for cell, col in zip(cells, cols))
        rows.append(f"<tr{_classes(*classes)}>{tds}</tr>")
    return (f'<div class="table-wrap"><table>\n<caption>{title}</caption>\n<thead><tr>{head}</tr></thead>\n'
            "<tbody>\n" + "\n".join(rows) + "\n</tbody>\n</table></div>")


def _classes(*names: str) -> str:
    """`` class="a b"`` of the names given, or nothing where there are none."""
    names = [n for n in names if n]
    return f' class="{" ".join(names)}"' if names else ""
