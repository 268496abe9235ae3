// The terminal panel: streamed output with ANSI colours (SGR), carriage returns, a timer and a queue chip.
"use strict";
(function () {
  const MAX_LINES = 5000;
  // ESC [ params final | ESC ] ... BEL/ST (titles: dropped) | newlines | carriage return
  const TOKEN = /\x1b\[([0-9;?]*)([A-Za-z])|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\r\n|\n|\r/g;
  const PARTIAL = /\x1b(?:\[[0-9;?]*|\][^\x07\x1b]*)?$/;
  const PALETTE = [0, 95, 135, 175, 215, 255];

  function color256(n) {
    if (n < 16) return null; // the 16 basic colours use classes
    if (n >= 232) {
      const g = 8 + (n - 232) * 10;
      return "rgb(" + g + "," + g + "," + g + ")";
    }
    const i = n - 16;
    return "rgb(" + PALETTE[Math.floor(i / 36)] + "," + PALETTE[Math.floor(i / 6) % 6] + "," + PALETTE[i % 6] + ")";
  }

  function freshStyle() {
    return { fg: null, bg: null, fgRgb: null, bgRgb: null, bold: false, dim: false, italic: false, underline: false };
  }

  class Terminal {
    constructor(root) {
      this.root = root;
      this.out = root.querySelector("[data-term=out]");
      this.elapsedNode = root.querySelector("[data-term=elapsed]");
      this.queueNode = root.querySelector("[data-term=queue]");
      this.backendNode = root.querySelector("[data-term=backend]");
      this.titleNode = root.querySelector("[data-term=title]");
      this.stopButton = root.querySelector("[data-term=stop]");
      root.querySelector("[data-term=clear]").addEventListener("click", () => this.clear());
      this.reset();
      this.line = null;
      this.lines = 0;
      this.timer = null;
    }

    reset() {
      this.style = freshStyle();
      this.pending = "";
      this.cr = false;
    }

    clear() {
      this.out.textContent = "";
      this.line = null;
      this.lines = 0;
    }

    newLine() {
      if (this.line) this.line.append("\n");
      this.line = document.createElement("span");
      this.line.className = "term-line";
      this.out.append(this.line);
      this.lines += 1;
      if (this.lines > MAX_LINES) {
        this.out.firstChild.remove();
        this.lines -= 1;
      }
    }

    appendText(text, extraClass) {
      if (!text) return;
      if (!this.line) this.newLine();
      if (this.cr) {
        this.line.textContent = "";
        this.cr = false;
      }
      const s = this.style;
      const classes = [];
      if (s.fg !== null) classes.push("ansi-fg-" + s.fg);
      if (s.bg !== null) classes.push("ansi-bg-" + s.bg);
      if (s.bold) classes.push("ansi-bold");
      if (s.dim) classes.push("ansi-dim");
      if (s.italic) classes.push("ansi-italic");
      if (s.underline) classes.push("ansi-underline");
      if (extraClass) classes.push(extraClass);
      if (!classes.length && !s.fgRgb && !s.bgRgb) {
        this.line.append(text);
        return;
      }
      const span = document.createElement("span");
      span.className = classes.join(" ");
      if (s.fgRgb) span.style.color = s.fgRgb;
      if (s.bgRgb) span.style.backgroundColor = s.bgRgb;
      span.textContent = text;
      this.line.append(span);
    }

    sgr(params) {
      const codes = params === "" ? [0] : params.split(";").map((p) => parseInt(p || "0", 10));
      const s = this.style;
      for (let i = 0; i < codes.length; i++) {
        const c = codes[i];
        if (c === 0) Object.assign(s, freshStyle());
        else if (c === 1) s.bold = true;
        else if (c === 2) s.dim = true;
        else if (c === 3) s.italic = true;
        else if (c === 4) s.underline = true;
        else if (c === 22) { s.bold = false; s.dim = false; }
        else if (c === 23) s.italic = false;
        else if (c === 24) s.underline = false;
        else if (c >= 30 && c <= 37) { s.fg = c - 30; s.fgRgb = null; }
        else if (c >= 90 && c <= 97) { s.fg = c - 90 + 8; s.fgRgb = null; }
        else if (c === 39) { s.fg = null; s.fgRgb = null; }
        else if (c >= 40 && c <= 47) { s.bg = c - 40; s.bgRgb = null; }
        else if (c >= 100 && c <= 107) { s.bg = c - 100 + 8; s.bgRgb = null; }
        else if (c === 49) { s.bg = null; s.bgRgb = null; }
        else if (c === 38 || c === 48) {
          let rgb = null, index = null;
          if (codes[i + 1] === 5) { index = codes[i + 2]; rgb = color256(index); i += 2; }
          else if (codes[i + 1] === 2) { rgb = "rgb(" + codes.slice(i + 2, i + 5).join(",") + ")"; i += 4; }
          const basic = index !== null && index < 16 ? index : null;
          if (c === 38) { s.fg = basic; s.fgRgb = rgb; } else { s.bg = basic; s.bgRgb = rgb; }
        }
      }
    }

    write(text, extraClass) {
      const stick = this.atBottom();
      text = this.pending + text;
      this.pending = "";
      const partial = text.match(PARTIAL);
      if (partial) {
        this.pending = partial[0];
        text = text.slice(0, partial.index);
      }
      let last = 0;
      TOKEN.lastIndex = 0;
      let m;
      while ((m = TOKEN.exec(text)) !== null) {
        this.appendText(text.slice(last, m.index), extraClass);
        last = TOKEN.lastIndex;
        const token = m[0];
        if (token === "\n" || token === "\r\n") { this.cr = false; this.newLine(); }
        else if (token === "\r") this.cr = true;
        else if (m[2] === "m") this.sgr(m[1]);
        else if (m[2] === "K" && this.line) this.line.textContent = "";
      }
      this.appendText(text.slice(last), extraClass);
      if (stick) this.scrollDown();
    }

    writeln(text, extraClass) {
      if (this.line && this.line.textContent !== "") this.newLine();
      this.write(text + "\n", extraClass);
    }

    appendNode(node) {
      if (this.line && this.line.textContent !== "") this.newLine();
      if (!this.line) this.newLine();
      this.line.append(node); // a block element: the next line starts below it without a newline
      this.line = null;
      this.newLine();
      this.scrollDown();
    }

    atBottom() {
      return this.out.scrollHeight - this.out.scrollTop - this.out.clientHeight < 24;
    }

    scrollDown() {
      this.out.scrollTop = this.out.scrollHeight;
    }

    setTitle(text) { this.titleNode.textContent = text; }

    setBackend(backend) {
      this.backendNode.textContent = window.TL.t(backend === "gpu" ? "web.backend.gpu" : "web.backend.interpreter");
    }

    setQueue(position) {
      if (!position) {
        this.queueNode.hidden = true;
        return;
      }
      this.queueNode.hidden = false;
      this.queueNode.textContent = window.TL.t("js.terminal.queued", { position: position });
    }

    startTimer() {
      this.stopTimer();
      const started = performance.now();
      this.elapsedNode.textContent = "0.0 s";
      this.timer = setInterval(() => {
        this.elapsedNode.textContent = ((performance.now() - started) / 1000).toFixed(1) + " s";
      }, 100);
    }

    stopTimer(seconds) {
      if (this.timer) clearInterval(this.timer);
      this.timer = null;
      if (typeof seconds === "number") this.elapsedNode.textContent = seconds.toFixed(2) + " s";
    }
  }

  window.TLTerminal = Terminal;
})();
