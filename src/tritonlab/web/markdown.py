"""Lesson Markdown -> HTML: markdown-it-py (raw HTML off), Pygments highlighting, figure links, heading anchors.

Everything the learner sees is escaped by markdown-it or Pygments; lessons cannot inject HTML or scripts.
Pygments emits class names only (no inline styles), styled by static/app.css in light and dark themes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from html import escape as html_escape
from urllib.parse import quote

from markdown_it import MarkdownIt
from markdown_it.token import Token
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import get_lexer_by_name
from pygments.util import ClassNotFound

from tritonlab.i18n import t

FIGURE = re.compile(r"^(?:\./)?figures/([A-Za-z0-9][A-Za-z0-9_.-]*)$")
_SLUG_DROP = re.compile(r"[^\w\- ]+")
_LANG_ALIASES = {"console": "console", "shell": "console", "sh": "bash", "text": "text", "": "text"}
_FORMATTER = HtmlFormatter(nowrap=True)


@dataclass
class Rendered:
    html: str
    toc: list[tuple[int, str, str]] = field(default_factory=list)  # (level, anchor, text)
    title: str = ""


def highlight_code(code: str, language: str = "python") -> str:
    """Highlighted HTML for a block of code (escaped; classes only), without the surrounding <pre>."""
    name = _LANG_ALIASES.get(language, language)
    try:
        lexer = get_lexer_by_name(name, stripnl=False)
    except ClassNotFound:
        lexer = get_lexer_by_name("text", stripnl=False)
    return highlight(code, lexer, _FORMATTER)


def numbered_code(
    code: str, language: str = "python", anchor: str = "L", label: str = "", mark: int | None = None
) -> str:
    """Highlighted code with line numbers: the <pre class="hl numbered"> of a learner's file, one
    <span class="line" id="{anchor}{n}"> per line (a link to `#L12` shows that line) whose number is a
    separate span that copying and screen readers skip. Pygments' classes and escaping, as in `highlight_code`.
    The block scrolls sideways, so it is focusable (keyboard users scroll it too); `label` names it. Line
    `mark` (a failure's line) gets the class `mark`."""
    from pygments.token import STANDARD_TYPES

    name = _LANG_ALIASES.get(language, language)
    try:
        lexer = get_lexer_by_name(name, stripnl=False, ensurenl=False)
    except ClassNotFound:
        lexer = get_lexer_by_name("text", stripnl=False, ensurenl=False)
    lines: list[list[str]] = [[]]
    for ttype, value in lexer.get_tokens(code):
        kind = ttype
        while kind not in STANDARD_TYPES:
            kind = kind.parent
        css = STANDARD_TYPES[kind]
        for i, part in enumerate(value.split("\n")):
            if i:
                lines.append([])
            if part:
                text = html_escape(part)
                lines[-1].append(f'<span class="{css}">{text}</span>' if css else text)
    if len(lines) > 1 and not lines[-1] and code.endswith("\n"):
        lines.pop()
    width = len(str(len(lines)))
    out = [
        f'<span class="line{" mark" if n == mark else ""}" id="{anchor}{n}">'
        f'<span class="ln" aria-hidden="true">{n:>{width}}</span>'
        f"{''.join(parts)}</span>"
        for n, parts in enumerate(lines, 1)
    ]
    name = f' aria-label="{html_escape(label)}"' if label else ""
    return f'<pre class="hl numbered" tabindex="0"{name}><code>' + "\n".join(out) + "</code></pre>"


def slugify(text: str) -> str:
    slug = _SLUG_DROP.sub("", text.lower()).strip().replace(" ", "-")
    return re.sub(r"-{2,}", "-", slug) or "section"


def _fence(self: object, tokens: list[Token], idx: int, options: object, env: dict) -> str:
    token = tokens[idx]
    info = token.info.strip().split()
    language = info[0] if info else ""
    lang = env.get("lang", "en")
    label = {"console": t("web.code.shell", lang), "text": t("web.code.output", lang), "": ""}.get(
        language, language
    )
    note = ""
    if "norun" in info[1:]:
        note = t("web.code.norun", lang)
    raises = [i.split("=", 1)[1] for i in info[1:] if i.startswith("raises=")]
    if raises:
        note = t("web.code.raises", lang, error=raises[0])
    code = highlight_code(token.content, language)
    badge = f'<span class="code-lang">{_escape(label)}</span>' if label else ""
    if note:
        badge += f'<span class="code-note">{_escape(note)}</span>'
    return f'<div class="codeblock">{badge}<pre class="hl"><code>{code}</code></pre></div>\n'


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def _parser() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
    md.enable(["table", "strikethrough"])
    md.add_render_rule("fence", _fence)
    md.add_render_rule("code_block", _fence)
    return md


_MD = _parser()


def _rewrite(tokens: list[Token], figure_base: str, rendered: Rendered) -> None:
    used: set[str] = set()
    for i, token in enumerate(tokens):
        if token.type == "heading_open" and i + 1 < len(tokens):
            text = tokens[i + 1].content
            level = int(token.tag[1])
            if level == 1 and not rendered.title:
                rendered.title = text
            anchor = base = slugify(text)
            n = 2
            while anchor in used:
                anchor, n = f"{base}-{n}", n + 1
            used.add(anchor)
            token.attrSet("id", anchor)
            if level in (2, 3):
                rendered.toc.append((level, anchor, text))
        for child in token.children or []:
            if child.type == "image":
                src = str(child.attrGet("src") or "")
                match = FIGURE.match(src)
                if match and figure_base:
                    child.attrSet("src", f"{figure_base}/{quote(match.group(1))}")
                child.attrSet("loading", "lazy")
            elif child.type == "link_open":
                href = str(child.attrGet("href") or "")
                if href.startswith(("http://", "https://")):
                    child.attrSet("rel", "noopener noreferrer")
                    child.attrSet("target", "_blank")


def render_lesson(text: str, figure_base: str = "", lang: str = "en") -> Rendered:
    """Render a lesson. `figure_base` is the URL folder that serves the lesson's figures/; `lang` is the
    page's language, for the labels tritonlab adds to code blocks."""
    rendered = Rendered(html="")
    tokens = _MD.parse(text)
    _rewrite(tokens, figure_base.rstrip("/"), rendered)
    rendered.html = _MD.renderer.render(tokens, _MD.options, {"lang": lang})
    return rendered


def render_inline(text: str) -> str:
    """Short Markdown (quiz prompts, options, hints) -> inline HTML."""
    return _MD.renderInline(text)


def render_block(text: str) -> str:
    """Markdown that may hold paragraphs and code (summaries, explanations) -> HTML."""
    return _MD.render(text)
