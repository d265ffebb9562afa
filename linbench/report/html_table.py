"""Tables in the HTML report: a ReportTable as ``<table>``, and (label, text) rows."""

from __future__ import annotations

import re
from html import escape

from linbench.report.render import ReportTable

EXPONENT = re.compile(r"\b([sdBH])\^(-?\d+\.\d+)")


def cell(text: str) -> str:
    """A table cell, its exponents raised (``s^1.02`` as s<sup>1.02</sup>)."""
    return EXPONENT.sub(r"\1<sup>\2</sup>", escape(text))


def table_html(table: ReportTable) -> str:
    head = "".join(f"<th>{escape(column)}</th>" for column in table.columns)
    body = "".join("<tr>" + "".join(f"<td>{cell(text)}</td>" for text in row) + "</tr>" for row in table.rows)
    return f"<table><caption>{escape(table.title)}</caption><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def key_values(rows: list[tuple[str, str]], css: str) -> str:
    body = "".join(f"<tr><th>{escape(k)}</th><td>{cell(v)}</td></tr>" for k, v in rows)
    return f'<table class="{css}">{body}</table>'
