// The lesson workbench: one editor per exercise (autosaved, conflict-aware), Run/Check streamed into the
// terminal over SSE, Stop, hints, reset with confirmation, check results and the solution after a pass, and
// Visualize: a picture of the learner's launch (also of one failing case of a check, from its row).
"use strict";
(function () {
  const { api, el, t } = window.TL;
  const AUTOSAVE_MS = 600;
  const POLL_MS = 3000;
  const terminalRoot = document.getElementById("terminal");
  if (!terminalRoot) return;
  const term = new window.TLTerminal(terminalRoot);
  const workbench = document.querySelector(".workbench");
  const lessonId = workbench ? workbench.dataset.lesson : "";
  const exercises = [];
  let job = null; // the run or check in flight: {id, source, kind, es}

  function basename(where) {
    const parts = String(where || "").split(/[\\/]/);
    return parts[parts.length - 1];
  }

  // ---- jobs: one at a time per page ------------------------------------------------------------------

  function setBusy(busy) {
    document.querySelectorAll("[data-action=run], [data-action=check], [data-example]").forEach((b) => {
      b.disabled = busy;
    });
    term.stopButton.disabled = !busy;
    workbench.setAttribute("aria-busy", busy ? "true" : "false");
  }

  function describeExit(d) {
    const bad = "ansi-fg-1 ansi-bold";
    if (d.stopped) return [t("js.run.stopped", { seconds: d.seconds.toFixed(1) }), "ansi-fg-3 ansi-bold"];
    if (d.timed_out) return [t("js.run.timed_out", { seconds: d.seconds.toFixed(0) }), bad];
    if (d.truncated) return [t("js.run.truncated"), bad];
    if (d.error) return [t("js.run.failed", { seconds: d.seconds.toFixed(2) }), bad];
    if (d.signal) return [t("js.run.signal", { signal: d.signal }), bad];
    if (d.exit_code === 0) return [t("js.run.finished", { seconds: d.seconds.toFixed(2) }), "ansi-fg-2"];
    return [t("js.run.exit_status", { code: d.exit_code, seconds: d.seconds.toFixed(2) }), bad];
  }

  function showError(error) {
    term.writeln(error.type + ": " + error.message, "ansi-fg-1 ansi-bold");
    if (error.where) {
      const where = basename(error.where) + (error.source ? ":  " + error.source : "");
      term.writeln(t("js.run.at", { where: where }), "ansi-fg-1");
    }
    if (error.hint) term.writeln(t("js.run.hint", { hint: error.hint }), "ansi-fg-3");
    if (error.traceback) {
      const details = el("details", { class: "term-traceback" }, [
        el("summary", { text: t("js.run.traceback") }), el("span", { text: error.traceback })]);
      term.appendNode(details);
    }
  }

  // Run and Check are disabled while a job runs, so the button that started it loses focus (and a keyboard
  // or screen-reader user is dropped at the top of the page). When the job ends, focus goes to its result
  // (a check's verdict) or back to the button, unless the learner has moved it somewhere since.
  let returnFocus = null;
  function lostFocus() {
    const at = document.activeElement;
    return !at || at === document.body || at.disabled === true;
  }
  function restoreFocus(kind, source) {
    const back = returnFocus;
    returnFocus = null;
    if (!lostFocus()) return;
    const verdict = kind === "check" && source && source.results ? source.results.querySelector(".verdict, .notice, p") : null;
    for (const target of [verdict, back]) {
      if (!target || !document.contains(target) || target.disabled) continue;
      if (target === verdict) target.tabIndex = -1;
      target.focus({ preventScroll: target !== verdict });
      if (document.activeElement === target) return;
    }
  }

  function startJob(url, body, source) {
    if (job) return Promise.resolve(false);
    const at = document.activeElement;
    returnFocus = at && at !== document.body ? at : null;
    setBusy(true);
    return api("POST", url, body).then((r) => {
      if (!r.ok) {
        setBusy(false);
        if (r.status === 409 && source && source.showConflict) source.showConflict(r.data);
        else term.writeln(t("js.run.could_not_start", { error: r.data.error }), "ansi-fg-1");
        if (source && source.notStarted) source.notStarted(r.status, r.data);
        restoreFocus(source && source.pending, source);
        return false;
      }
      follow(r.data, source);
      return true;
    });
  }

  function follow(info, source) {
    term.clear();
    term.reset();
    term.setQueue(null);
    term.stopTimer();
    term.elapsedNode.textContent = "0.0 s";
    const es = new EventSource(info.events);
    job = { id: info.job, source: source, es: es, kind: source && source.pending };
    const on = (name, handler) => es.addEventListener(name, (e) => handler(JSON.parse(e.data)));
    let queued = false;
    on("begin", (d) => {
      term.setBackend(d.backend);
      term.setTitle(d.command.replace(/^python /, ""));
      term.writeln("$ " + d.command, "term-prompt");
    });
    on("queue", (d) => {
      term.setQueue(d.position);
      if (!queued) term.writeln(t("js.run.waiting", { position: d.position }), "ansi-dim");
      queued = true;
    });
    on("start", () => { term.setQueue(null); term.startTimer(); });
    on("output", (d) => term.write(d.text));
    on("stopping", () => term.writeln(t("js.run.stopping"), "ansi-fg-3"));
    on("exit", (d) => {
      if (d.started === false) return; // stopped while queued: the `cancelled` event says so
      term.stopTimer(d.seconds);
      if (d.error) showError(d.error);
      const [text, cls] = describeExit(d);
      term.writeln(text, cls);
    });
    on("verdict", (d) => {
      term.stopTimer(d.duration_s);
      const failed = d.cases.filter((c) => !c.passed).length;
      const kinds = new Map(d.failures.map((f) => [f.case, f.kind]));
      for (const f of d.failures) {
        if (!d.cases.some((c) => c.name === f.case)) term.writeln("  ✗ " + f.case + ": " + f.message.split("\n")[0], "ansi-fg-1");
      }
      for (const c of d.cases) {
        if (c.passed) term.writeln("  ✓ " + c.name, "ansi-fg-2");
        else term.writeln("  ✗ " + c.name + (kinds.has(c.name) ? "  (" + kindLabel(kinds.get(c.name)) + ")" : ""), "ansi-fg-1");
      }
      if (d.passed) term.writeln(t("js.run.all_pass", { count: d.cases.length }), "ansi-fg-2 ansi-bold");
      else if (d.stopped) term.writeln(t("js.run.check_stopped"), "ansi-fg-3 ansi-bold");
      else {
        term.writeln(t("js.run.some_fail", { failed: failed || d.failures.length, total: d.cases.length }),
          "ansi-fg-1 ansi-bold");
      }
      if (source && source.showVerdict) source.showVerdict(d);
    });
    // A passing GPU check's speed line, timed after its verdict was shown.
    on("speed", (d) => {
      if (d.speed_line) term.writeln(d.speed_line, "ansi-dim");
      if (source && source.showSpeed) source.showSpeed(d);
    });
    // Stopped while waiting for a worker: the run left the queue at once and never started.
    on("cancelled", (d) => {
      term.writeln(t(d.kind === "check" ? "js.run.cancelled_check" : "js.run.cancelled"), "ansi-fg-3 ansi-bold");
      if (source && source.showCancelled) source.showCancelled(d);
    });
    on("error", (d) => term.writeln(t("js.run.error", { message: d.message }), "ansi-fg-1 ansi-bold"));
    es.addEventListener("end", () => finish());
    es.onerror = () => {
      if (es.readyState === EventSource.CLOSED) {
        term.writeln(t("js.run.lost"), "ansi-fg-1");
        finish();
      }
    };
  }

  function finish() {
    if (!job) return;
    const { kind, source } = job;
    job.es.close();
    job = null;
    term.stopTimer();
    term.setQueue(null);
    setBusy(false);
    restoreFocus(kind, source);
  }

  term.stopButton.addEventListener("click", () => {
    if (job) api("POST", "/api/jobs/" + job.id + "/stop");
  });

  // ---- one exercise ------------------------------------------------------------------------------------

  class Exercise {
    constructor(section) {
      this.section = section;
      this.id = section.dataset.exercise;
      this.version = section.dataset.version;
      this.dirty = false;
      this.conflict = null;
      this.saving = null;
      this.timer = null;
      this.suppress = false;
      const q = (role) => section.querySelector("[data-role=" + role + "]");
      this.stateNode = q("save-state");
      this.conflictNode = q("conflict");
      this.hintsNode = q("hints");
      this.hintCount = q("hint-count");
      this.results = document.querySelector("[data-results-for='" + this.id + "']");
      this.vizPanel = document.querySelector("[data-viz-for='" + this.id + "']");
      this.vizBusy = false;
      this.inspectPanel = document.querySelector("[data-inspect-for='" + this.id + "']");
      this.inspectBusy = false;
      this.profilePanel = document.querySelector("[data-profile-for='" + this.id + "']");
      this.profileBusy = false;
      const source = q("source");
      this.editor = window.TritonEditor.create(q("editor"), {
        doc: source.value,
        label: t("js.editor.label", { title: section.querySelector("h2").textContent.trim() }),
        nonce: window.TL.nonce(),
        onChange: () => this.changed(),
        onRun: () => this.start("run"),
        onCheck: () => this.start("check"),
        onSave: () => this.save(),
      });
      this.modeNode = q("editor-mode");
      this.editMode = false;
      this.keyboardModes(q("editor"));
      const act = (name, fn) => section.querySelector("[data-action=" + name + "]").addEventListener("click", fn);
      act("run", () => this.start("run"));
      act("check", () => this.start("check"));
      if (section.querySelector("[data-action=viz]")) act("viz", () => this.visualize());
      if (this.inspectPanel) {
        act("inspect", () => this.inspect());
        this.inspectPanel.querySelector("[data-action=inspect-again]").addEventListener("click", () => this.inspect());
      }
      if (this.profilePanel) {
        act("profile", () => this.profile());
        this.profilePanel.querySelector("[data-action=profile-again]").addEventListener("click", () => this.profile());
      }
      act("hint", () => this.hint());
      act("reset", () => this.confirmReset());
      act("solution", () => this.solution());
      act("load-disk", () => this.loadDisk());
      act("keep-mine", () => this.keepMine());
    }

    url(tail) { return "/api/exercises/" + encodeURIComponent(this.id) + tail; }

    // Tab in the editor is an explicit mode, shown under it. Navigating (the default, and whenever focus
    // arrives from outside): Tab and Shift+Tab move focus past the editor like any other control. Editing
    // (after a click in the editor, or Enter on it): Tab indents; Esc goes back to navigating.
    keyboardModes(host) {
      const content = this.editor.view.contentDOM;
      if (this.modeNode) content.setAttribute("aria-describedby", this.modeNode.id);
      content.tabIndex = 0; // focusable content for the scrolling editor (it is a tab stop either way)
      host.addEventListener("keydown", (e) => {
        if (e.isComposing || e.ctrlKey || e.metaKey || e.altKey) return;
        if (e.key === "Tab" && !this.editMode) {
          e.stopPropagation(); // capture phase: CodeMirror never sees it, and the browser moves focus
        } else if (e.key === "Enter" && !e.shiftKey && !this.editMode && e.target === content) {
          e.preventDefault();
          e.stopPropagation();
          this.setEditMode(true);
        } else if (e.key === "Escape" && this.editMode && e.target === content) {
          this.setEditMode(false); // CodeMirror still gets Escape (it closes its own popups)
        }
      }, true);
      // Text typed or inserted over a selection: Chromium's own contenteditable editing would merge the
      // selected lines and write a style="" attribute (blocked by the page's CSP: a style-src-attr
      // violation) before CodeMirror redraws. Replace the selection through CodeMirror instead.
      host.addEventListener("beforeinput", (e) => {
        const view = this.editor.view;
        if (e.isComposing || e.target !== content || typeof e.data !== "string") return;
        if (e.inputType !== "insertText" && e.inputType !== "insertReplacementText") return;
        if (view.state.selection.ranges.every((r) => r.empty)) return; // plain typing: CodeMirror's way
        e.preventDefault();
        e.stopPropagation();
        const { from, to } = view.state.selection.main;
        const insert = () => view.state.update(view.state.replaceSelection(e.data),
          { userEvent: "input.type", scrollIntoView: true });
        const handlers = view.state.facet(view.constructor.inputHandler); // e.g. closing brackets
        if (!handlers.some((h) => h(view, from, to, e.data, insert))) view.dispatch(insert());
      }, true);
      host.addEventListener("mousedown", () => this.setEditMode(true));
      host.addEventListener("focusout", (e) => {
        if (!e.relatedTarget && !document.hasFocus()) return; // the window lost focus: keep the mode
        if (!host.contains(e.relatedTarget)) this.setEditMode(false);
      });
    }

    setEditMode(on) {
      if (this.editMode === on) return;
      this.editMode = on;
      this.section.dataset.editMode = on ? "edit" : "navigate";
      if (this.modeNode) {
        this.modeNode.dataset.mode = on ? "edit" : "navigate";
        this.modeNode.textContent = t(on ? "js.editor.mode_edit" : "js.editor.mode_navigate");
      }
    }

    setState(text, kind) {
      this.stateNode.textContent = text;
      this.stateNode.dataset.kind = kind || "";
    }

    setText(text) {
      this.suppress = true;
      try { this.editor.setText(text); } finally { this.suppress = false; }
    }

    changed() {
      if (this.suppress) return;
      this.dirty = true;
      if (!this.conflict) this.setState(t("js.editor.editing"), "pending");
      clearTimeout(this.timer);
      this.timer = setTimeout(() => this.save(), AUTOSAVE_MS);
    }

    async save(force) {
      clearTimeout(this.timer);
      if (this.conflict && !force) return false;
      while (this.saving) await this.saving;
      if (!this.dirty && !force) return true;
      const text = this.editor.getText();
      this.setState(t("js.editor.saving"), "pending");
      this.saving = api("PUT", this.url("/code"), { text: text, base_version: this.version, force: !!force });
      const r = await this.saving;
      this.saving = null;
      if (r.ok) {
        this.version = r.data.version;
        this.dirty = this.editor.getText() !== text;
        this.setState(t(this.dirty ? "js.editor.editing" : "js.editor.saved"), this.dirty ? "pending" : "ok");
        if (this.dirty) this.timer = setTimeout(() => this.save(), AUTOSAVE_MS);
        return true;
      }
      if (r.status === 409) { this.showConflict(r.data); return false; }
      this.setState(t("js.editor.not_saved", { error: r.data.error }), "error");
      return false;
    }

    showConflict(data) {
      this.conflict = { text: data.disk_text, version: data.disk_version };
      this.conflictNode.hidden = false;
      this.setState(t("js.editor.conflict"), "error");
    }

    async loadDisk() {
      if (!this.conflict) return;
      const mine = this.editor.getText();
      const r = await api("POST", this.url("/backup"), { text: mine });
      this.setText(this.conflict.text);
      this.version = this.conflict.version;
      this.conflict = null;
      this.dirty = false;
      this.conflictNode.hidden = true;
      this.setState(t(r.ok ? "js.editor.loaded_disk_backup" : "js.editor.loaded_disk"), "ok");
    }

    async keepMine() {
      this.conflict = null;
      this.conflictNode.hidden = true;
      this.dirty = true;
      await this.save(true);
    }

    async poll() {
      if (document.hidden || this.saving || this.conflict || job) return;
      const r = await api("GET", this.url("/code"));
      if (!r.ok || r.data.version === this.version || this.saving) return;
      if (r.data.text === this.editor.getText()) { this.version = r.data.version; this.dirty = false; return; }
      if (this.dirty) { this.showConflict({ disk_text: r.data.text, disk_version: r.data.version }); return; }
      this.setText(r.data.text);
      this.version = r.data.version;
      this.setState(t("js.editor.reloaded"), "ok");
    }

    async start(kind) {
      if (job) return;
      if (this.conflict) { this.conflictNode.scrollIntoView({ block: "nearest" }); return; }
      if (!(await this.save())) return;
      this.pending = kind;
      if (kind === "check") this.results.replaceChildren(el("p", { class: "muted", text: t("js.editor.checking") }));
      await startJob(this.url("/" + kind), undefined, this);
    }

    // The server refused to start the run or check (429: too many in flight; 409: a conflict; …).
    notStarted(status, data) {
      if (this.pending !== "check") return;
      if (status === 409) { this.results.replaceChildren(); return; }
      this.results.replaceChildren(el("p", { class: "notice run-error", role: "alert",
        text: t("js.editor.could_not_check", { error: data.error }) }));
    }

    showCancelled(d) {
      if (d.kind === "check") {
        this.results.replaceChildren(el("p", { class: "muted", text: t("js.editor.check_cancelled") }));
      }
    }

    setVizBusy(busy) {
      this.vizBusy = busy;
      const button = this.section.querySelector("[data-action=viz]");
      if (button) button.disabled = busy;
      this.results.querySelectorAll("[data-viz-case]").forEach((b) => { b.disabled = busy; });
      if (busy) this.vizPanel.setAttribute("aria-busy", "true");
      else this.vizPanel.removeAttribute("aria-busy");
    }

    // Draw the launch of the learner's file (saved first); `which` = {case, seed} redraws one case of a check.
    async visualize(which) {
      if (this.vizBusy || !this.vizPanel) return;
      if (this.conflict) { this.conflictNode.scrollIntoView({ block: "nearest" }); return; }
      if (!(await this.save())) return;
      this.setVizBusy(true);
      const waiting = which ? t("js.viz.drawing_case", { case: which.case, seed: which.seed }) : t("js.viz.drawing");
      this.vizPanel.replaceChildren(el("p", { class: "muted viz-status", role: "status", text: waiting }));
      this.vizPanel.hidden = false;
      const r = await api("POST", this.url("/viz"), which ? { case: which.case, seed: which.seed } : undefined);
      this.setVizBusy(false);
      if (!r.ok) {
        if (r.status === 409) this.showConflict(r.data);
        this.vizPanel.replaceChildren(el("p", { class: "notice viz-error", role: "alert",
          text: t("js.viz.failed", { error: r.data.error }) }));
      } else {
        this.vizPanel.replaceChildren(renderViz(r.data, which));
      }
      this.vizPanel.scrollIntoView({ block: "nearest" });
    }

    // Compile the saved file for a GPU target in the sandbox (POST .../inspect, what `tritonlab inspect` runs)
    // and show the report: resources, layout, occupancy, and the stages in tabs.
    async inspect() {
      if (this.inspectBusy || !this.inspectPanel) return;
      if (this.conflict) { this.conflictNode.scrollIntoView({ block: "nearest" }); return; }
      if (!(await this.save())) return;
      const panel = this.inspectPanel;
      const body = panel.querySelector("[data-role=inspect-body]");
      const target = panel.querySelector("[data-role=inspect-target]").value;
      const buttons = [this.section.querySelector("[data-action=inspect]"), panel.querySelector("[data-action=inspect-again]")];
      this.inspectBusy = true;
      buttons.forEach((b) => { b.disabled = true; });
      panel.hidden = false;
      panel.setAttribute("aria-busy", "true");
      body.replaceChildren(el("p", { class: "muted", role: "status", text: t("js.inspect.compiling", { target: target }) }));
      const r = await api("POST", this.url("/inspect"), { target: target });
      this.inspectBusy = false;
      buttons.forEach((b) => { b.disabled = false; });
      panel.removeAttribute("aria-busy");
      if (!r.ok) {
        if (r.status === 409) this.showConflict(r.data);
        body.replaceChildren(el("p", { class: "notice inspect-error", role: "alert",
          text: t("js.inspect.failed", { error: r.data.error }) }));
      } else {
        body.replaceChildren(renderInspect(r.data, this.id));
      }
      panel.scrollIntoView({ block: "nearest" });
    }

    // Profile the saved file (POST .../profile, what `tritonlab profile` runs): on a GPU each kernel's time
    // and achieved rate against the measured roofs; without one the static view. The report is text only.
    async profile() {
      if (this.profileBusy || !this.profilePanel) return;
      if (this.conflict) { this.conflictNode.scrollIntoView({ block: "nearest" }); return; }
      if (!(await this.save())) return;
      const panel = this.profilePanel;
      const body = panel.querySelector("[data-role=profile-body]");
      const buttons = [this.section.querySelector("[data-action=profile]"), panel.querySelector("[data-action=profile-again]")];
      this.profileBusy = true;
      buttons.forEach((b) => { b.disabled = true; });
      panel.hidden = false;
      panel.setAttribute("aria-busy", "true");
      body.textContent = t("js.profile.running");
      const r = await api("POST", this.url("/profile"), {});
      this.profileBusy = false;
      buttons.forEach((b) => { b.disabled = false; });
      panel.removeAttribute("aria-busy");
      if (!r.ok) {
        if (r.status === 409) this.showConflict(r.data);
        body.textContent = t("js.profile.failed", { error: r.data.error });
      } else {
        body.textContent = r.data.report;
      }
      panel.scrollIntoView({ block: "nearest" });
    }

    async hint() {
      const r = await api("POST", this.url("/hint"));
      const button = this.section.querySelector("[data-action=hint]");
      if (!r.ok) { this.setState(r.data.error, "error"); return; }
      if (r.data.locked) {
        this.setState(t("js.editor.hint_locked", { number: r.data.locked.number, total: r.data.total,
          needed: r.data.locked.needed, failed: r.data.locked.failed }), "pending");
        return;
      }
      if (r.data.text) {
        this.hintsNode.hidden = false;
        const item = el("li", { html: r.data.html }); // server-rendered Markdown (escaped)
        this.hintsNode.append(item);
        this.hintCount.textContent = r.data.number + "/" + r.data.total;
        item.scrollIntoView({ block: "nearest" });
      }
      if (r.data.done) { button.disabled = true; button.title = t("js.editor.all_hints"); }
    }

    confirmReset() {
      const dialog = document.getElementById("reset-dialog");
      dialog.returnValue = "";
      dialog.onclose = () => { if (dialog.returnValue === "reset") this.reset(); };
      dialog.showModal();
    }

    async reset() {
      clearTimeout(this.timer);
      while (this.saving) await this.saving;
      const r = await api("POST", this.url("/reset"));
      if (!r.ok) { this.setState(t("js.editor.reset_failed", { error: r.data.error }), "error"); return; }
      this.setText(r.data.text);
      this.version = r.data.version;
      this.dirty = false;
      this.conflict = null;
      this.conflictNode.hidden = true;
      this.setState(t("js.editor.reset_done"), "ok");
      if (r.data.backup) term.writeln(t("js.editor.reset_backup", { path: r.data.backup }), "ansi-dim");
    }

    async solution() {
      const r = await api("GET", this.url("/solution"));
      if (!r.ok) { this.setState(r.data.error, "error"); return; }
      const dialog = document.getElementById("solution-dialog");
      dialog.querySelector("[data-role=solution-code]").innerHTML = r.data.html;
      dialog.showModal();
    }

    // Put the cursor at the start of `line` (1-based), scrolled into view, and focus the editor.
    goToLine(line) {
      const view = this.editor.view;
      const number = Math.min(Math.max(1, line), view.state.doc.lines);
      const at = view.state.doc.line(number).from;
      view.dispatch({ selection: { anchor: at }, scrollIntoView: true });
      view.focus();
    }

    showVerdict(d) {
      if (d.stopped) {
        this.results.replaceChildren(el("p", { class: "muted", text: t("js.editor.check_stopped") }));
        return;
      }
      const viz = this.section.dataset.viz === "true" ? (name) => this.visualize({ case: name, seed: d.seed }) : null;
      this.results.replaceChildren(renderVerdict(d, viz, (line) => this.goToLine(line)));
      if (d.solution_available) this.section.querySelector("[data-action=solution]").hidden = false;
      if (d.passed) {
        this.section.dataset.passed = "true";
        this.section.querySelector("[data-role=passed-badge]").hidden = false;
        const mark = document.querySelector("[data-mark='" + this.id + "']");
        if (mark) mark.textContent = "✓";
      }
      window.TL.progressRefresh();
    }

    showSpeed(d) {
      const pending = this.results.querySelector("[data-role=speed-pending]");
      const line = d.speed_line ? el("p", { class: "speed small", lang: "en", text: d.speed_line }) : null;
      const plot = speedPlot(d.speed);
      const shown = [line, plot].filter(Boolean);
      if (pending) {
        if (shown.length) pending.replaceWith(...shown);
        else pending.remove();
      } else if (shown.length) {
        const verdict = this.results.querySelector(".verdict");
        if (verdict) verdict.append(...shown);
      }
    }
  }

  // A failure kind for people: in English its id (wrong-result); elsewhere the translated name with the
  // id beside it, as the CLI shows it (tritonlab.i18n.kind_label).
  function kindLabel(kind) {
    const name = t("kind." + kind);
    return name === kind || name === "kind." + kind ? kind : name + " (" + kind + ")";
  }

  // The picture answered by POST /api/exercises/<id>/viz: its alt text describes it (grid, masked lanes,
  // out-of-bounds accesses); a problem (the file does not import, the run failed) is said first.
  function renderViz(d, which) {
    const s = d.summary || {};
    const name = s.case || (which && which.case) || "";
    let command = "tritonlab viz " + d.exercise + " --out picture.png";
    if (which) command += " --case " + JSON.stringify(which.case) + " --seed " + which.seed;
    return el("figure", { class: "viz" }, [
      el("h3", { class: "viz-title", text: name ? t("js.viz.title_case", { case: name }) : t("js.viz.title") }),
      d.problem ? el("p", { class: "notice viz-problem", role: "alert", text: d.problem }) : null,
      d.note ? el("p", { class: "small muted", text: d.note }) : null,
      el("img", { class: "viz-image", src: d.image, alt: d.alt }),
      el("figcaption", { class: "small" }, [
        el("span", { text: t("js.viz.legend") }), " ",
        el("a", { href: d.image, download: d.filename, text: t("js.viz.download") }),
        el("div", { class: "muted" }, [t("js.viz.cli"), el("code", { text: command })]),
      ]),
      d.output ? el("details", { class: "viz-output" }, [el("summary", { text: t("js.viz.output") }),
        el("pre", { text: d.output })]) : null,
    ]);
  }

  // Text from the grader with `inline code` shown as <code>: split on backticks and built as text nodes,
  // never as HTML (messages quote the learner's own names and values).
  function richText(text) {
    return String(text || "").split("`").map((part, i) => (i % 2 ? el("code", { text: part }) : part));
  }

  // "file:line" as a link that moves the editor's cursor to that line (`goTo`) when it names the checked
  // file itself (`file`, the verdict's); a line of another module stays plain code.
  function whereNode(where, goTo, file) {
    const match = /^(.*):(\d+)$/.exec(String(where || ""));
    const label = basename(where);
    if (!match || !goTo || (file && match[1] !== file)) return el("code", { text: label });
    const link = el("a", { href: "#", class: "where-link", "data-line": match[2], text: label,
      title: t("js.feedback.go_to_line", { line: match[2] }) });
    link.addEventListener("click", (e) => { e.preventDefault(); goTo(Number(match[2])); });
    return link;
  }

  // The answer of POST /api/exercises/<id>/inspect: one block per compiled kernel. Every string in it comes
  // from the sandboxed child (kernel names, compiler messages): text nodes only.
  let inspectTabs = 0;
  function renderInspect(d, exerciseId) {
    const data = d.data || {};
    const parts = [];
    if (data.case) parts.push(el("p", { class: "small muted", text: t("js.inspect.case", { case: data.case, target: d.target }) }));
    if (data.import_error) {
      const e = data.import_error;
      parts.push(el("p", { class: "notice inspect-error", role: "alert",
        text: t("js.inspect.import_error", { error: e.type + ": " + e.message + (e.where ? " (" + basename(e.where) + ")" : "") }) }));
    }
    for (const problem of data.problems || []) parts.push(el("p", { class: "notice inspect-problem", text: problem }));
    for (const k of data.kernels || []) parts.push(renderKernel(k, exerciseId));
    return el("div", { class: "inspect-report" }, parts);
  }

  function renderKernel(k, exerciseId) {
    const name = String(k.kernel || "kernel");
    if (k.error) {
      return el("p", { class: "notice inspect-error", role: "alert",
        text: t("js.inspect.compile_error", { name: name, error: k.error + (k.where ? " (" + basename(k.where) + ")" : "") }) });
    }
    const res = k.resources || {};
    const occ = k.occupancy || {};
    const layouts = ((k.layout || {}).blocked || []).map((b) =>
      b.name + ": sizePerThread=[" + (b.sizePerThread || []).join(", ") + "] threadsPerWarp=[" +
      (b.threadsPerWarp || []).join(", ") + "] warpsPerCTA=[" + (b.warpsPerCTA || []).join(", ") + "]");
    const row = (label, value, role) => [el("dt", { text: label }), el("dd", { text: value, "data-inspect": role })];
    const facts = el("dl", { class: "inspect-facts" }, [
      ...row(t("js.inspect.registers"), res.registers === undefined ? "?" : String(res.registers), "registers"),
      ...row(t("js.inspect.spills"), t("js.inspect.spills_value", { stores: res.spill_stores || 0, loads: res.spill_loads || 0 }), "spills"),
      ...row(t("js.inspect.shared"), String(res.shared_memory || 0) + " B", "shared"),
      ...row(t("js.inspect.warps"), String(k.num_warps), "warps"),
      ...row(t("js.inspect.layout"), layouts.join("\n") || "—", "layout"),
      ...row(t("js.inspect.occupancy"), t("js.inspect.occupancy_value", {
        programs: occ.programs_per_sm, warps: occ.warps_per_sm, max: occ.max_warps_per_sm,
        percent: Math.round((occ.occupancy || 0) * 100), limits: (occ.limited_by || []).join(", ") }), "occupancy"),
    ]);
    const stages = Object.keys(k.stages || {});
    const group = "inspect-" + (++inspectTabs);
    const tabs = el("div", { class: "tabs inspect-tabs", role: "tablist", "aria-label": t("js.inspect.stages", { name: name }) });
    const panels = [];
    stages.forEach((stage, i) => {
      const tabId = group + "-tab-" + i, panelId = group + "-panel-" + i;
      const text = String(k.stages[stage]);
      const shown = k.truncated && k.truncated[stage]
        ? text + "\n" + t("js.inspect.truncated", { lines: k.truncated[stage], exercise: exerciseId, stage: stage }) : text;
      tabs.append(el("button", { type: "button", role: "tab", id: tabId, "aria-controls": panelId, "data-stage": stage,
        "aria-selected": i === 0 ? "true" : "false", tabindex: i === 0 ? "0" : "-1", text: stage.toUpperCase() }));
      panels.push(el("pre", { class: "inspect-stage", role: "tabpanel", id: panelId, "aria-labelledby": tabId,
        tabindex: "0", hidden: i !== 0, "data-stage": stage, text: shown }));
    });
    const buttons = Array.from(tabs.children);
    const show = (n, focus) => {
      buttons.forEach((b, j) => {
        b.setAttribute("aria-selected", j === n ? "true" : "false");
        b.tabIndex = j === n ? 0 : -1;
        panels[j].hidden = j !== n;
      });
      if (focus) buttons[n].focus();
    };
    buttons.forEach((b, i) => {
      b.addEventListener("click", () => show(i, false));
      b.addEventListener("keydown", (e) => {
        const step = e.key === "ArrowRight" ? 1 : e.key === "ArrowLeft" ? -1 : 0;
        if (step) { e.preventDefault(); show((i + step + buttons.length) % buttons.length, true); }
      });
    });
    return el("article", { class: "inspect-kernel", "data-kernel": name }, [
      el("h4", { text: t("js.inspect.kernel", { name: name }) }), facts, tabs, ...panels]);
  }

  function renderVerdict(d, onVisualize, goTo) {
    const failed = d.cases.filter((c) => !c.passed).length;
    const head = d.passed
      ? t("js.verdict.all_pass", { count: d.cases.length })
      : t("js.verdict.some_fail", { failed: failed, total: d.cases.length });
    const byCase = new Map();
    for (const f of d.failures) {
      if (!byCase.has(f.case)) byCase.set(f.case, []);
      byCase.get(f.case).push(f);
    }
    // One entry per distinct problem (kind and cause), as the CLI prints it: the first case in full, then
    // how many other cases hit the same one. Each text is in the page's language when the server's catalog
    // knows it, else in English; `message_lang` / `cause_lang` say which (lang="en" on what stayed English).
    const englishLeft = d.failures.some((f) => (f.message_lang || "en") === "en" || (f.cause && (f.cause_lang || "en") === "en"));
    const groups = new Map();
    for (const f of d.failures) {
      // the same advice with other numbers in it (sizes, program counts) is the same problem
      const key = f.kind + "\u0000" + (f.cause || "").replace(/\d+(\.\d+)?/g, "#");
      if (!groups.has(key)) groups.set(key, []);
      groups.get(key).push(f);
    }
    const problems = [...groups.values()].map((same) => {
      const f = same[0];
      const cases = [...new Set(same.map((g) => g.case))];
      const title = cases.length > 1
        ? t("js.feedback.group", { count: cases.length, kind: kindLabel(f.kind) })
        : t("js.feedback.group_one", { case: f.case, kind: kindLabel(f.kind) });
      return el("li", { class: "problem", "data-kind": f.kind, "data-cases": String(cases.length) }, [
        el("div", { class: "problem-title" }, [el("strong", { class: "kind", title: f.kind, text: title })]),
        el("div", { class: "failure-message", lang: f.message_lang || "en" }, richText(f.message)),
        f.cause ? el("div", { class: "failure-cause" }, [el("strong", { text: t("js.verdict.likely_cause") }),
          el("span", { lang: f.cause_lang || "en" }, richText(f.cause))]) : null,
        f.where ? el("div", { class: "failure-where" }, [t("js.verdict.look_at"), whereNode(f.where, goTo, d.file)]) : null,
        cases.length > 1 ? el("div", { class: "small muted problem-cases" },
          t("js.feedback.same_in", { cases: cases.slice(1, 6).join(", ") + (cases.length > 6 ? ", …" : "") })) : null,
      ]);
    });
    // In the table, a failing case names only its problems' kinds: the text is in the list above, once.
    const explain = (list) => [...new Set(list.map((f) => f.kind))].map((kind) =>
      el("span", { class: "kind case-kind", title: kind, text: kindLabel(kind) }));
    const rows = [];
    const names = new Set(d.cases.map((c) => c.name));
    for (const [name, list] of byCase) {
      if (!names.has(name)) {
        rows.push(el("tr", { class: "fail" }, [el("th", { scope: "row", text: name }),
          el("td", { class: "result", text: t("js.verdict.fail") }), el("td", {}, explain(list))]));
      }
    }
    // A failing case's row offers the picture of exactly that case (same name, same seed): only a case that
    // failed on its own, and never when the file as a whole failed (a SyntaxError: a failure named after no
    // case, e.g. "import"), since there is no launch to draw then.
    const fileFailed = d.failures.some((f) => !names.has(f.case));
    const vizButton = (name) => {
      if (!onVisualize || fileFailed || !byCase.has(name)) return null;
      const button = el("button", { type: "button", class: "viz-case", "data-viz-case": name,
        title: t("js.verdict.visualize_title"), text: t("js.verdict.visualize") });
      button.addEventListener("click", () => onVisualize(name));
      return button;
    };
    for (const c of d.cases) {
      rows.push(el("tr", { class: c.passed ? "pass" : "fail" }, [
        el("th", { scope: "row", text: c.name }),
        el("td", { class: "result", text: t(c.passed ? "js.verdict.pass" : "js.verdict.fail") }),
        el("td", {}, c.passed ? [] : [...explain(byCase.get(c.name) || []), vizButton(c.name)]),
      ]));
    }
    const backend = t(d.backend === "gpu" ? "web.backend.gpu" : "web.backend.interpreter");
    const meta = t("js.verdict.meta", { backend: backend, seed: d.seed, seconds: Number(d.duration_s).toFixed(1) });
    const english = window.TL.lang !== "en" && d.failures.length && englishLeft
      ? el("p", { class: "small muted", text: t("js.verdict.english_details") }) : null;
    return el("div", { class: "verdict " + (d.passed ? "pass" : "fail") }, [
      el("p", { class: "verdict-head" }, [el("strong", { text: head }), el("span", { class: "muted", text: " · " + meta })]),
      english,
      problems.length ? el("ul", { class: "problems" }, problems) : null,
      el("table", { class: "cases" }, [
        el("caption", { class: "sr-only", text: t("js.verdict.caption") }),
        el("thead", {}, el("tr", {}, [el("th", { scope: "col", text: t("js.verdict.case") }),
          el("th", { scope: "col", text: t("js.verdict.result") }),
          el("th", { scope: "col", text: t("js.verdict.what") })])),
        el("tbody", {}, rows),
      ]),
      d.notes.length ? el("ul", { class: "notes" }, d.notes.map((n, i) =>
        el("li", { lang: (d.notes_lang || [])[i] || "en" }, richText(n)))) : null,
      d.speed_line ? el("p", { class: "speed small", lang: "en", text: d.speed_line }) : null,
      d.speed_line ? speedPlot(d.speed) : null,
      d.speed_pending ? el("p", { class: "speed small muted", "data-role": "speed-pending", text: t("js.verdict.timing") }) : null,
    ]);
  }

  // ---- the speed of a passing GPU check, against this GPU's measured roofs ---------------------------------

  const SVG = "http://www.w3.org/2000/svg";
  function svg(tag, attrs, children) {
    const node = document.createElementNS(SVG, tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (key === "text") node.textContent = value;
      else node.setAttribute(key, String(value));
    }
    for (const child of [].concat(children || [])) if (child) node.append(child);
    return node;
  }
  function positive(x) { return typeof x === "number" && isFinite(x) && x > 0 ? x : 0; }

  // A small roofline (log-log: FLOP per byte against TFLOP/s) with the learner's point (filled) and the course
  // reference's (hollow) at the case's intensity; a kernel that only moves data (0 FLOP per byte) is drawn
  // against the bandwidth roof alone. Every number comes from the verdict JSON and is drawn as a number.
  function speedPlot(speed) {
    const p = speed && speed.plot;
    if (!p || !positive(p.copy_gbps) || !p.learner || !positive(p.learner.gbps)) return null;
    const W = 300, H = 150, L = 44, R = 10, T = 10, B = 30;
    const mine = p.learner, ref = p.reference && positive(p.reference.gbps) ? p.reference : null;
    const parts = [];
    const dot = (x, y, filled, label) => svg("circle", { cx: x.toFixed(1), cy: y.toFixed(1), r: 4.5,
      class: filled ? "me" : "ref", "data-role": filled ? "plot-learner" : "plot-reference" }, svg("title", { text: label }));
    let caption;
    if (positive(p.intensity) && positive(p.peak_tflops)) {
      const xs = [1 / 32, 1024], ymax = p.peak_tflops * 2, ymin = p.peak_tflops / 8192;
      const X = (v) => L + (Math.log(Math.min(Math.max(v, xs[0]), xs[1]) / xs[0]) / Math.log(xs[1] / xs[0])) * (W - L - R);
      const Y = (v) => T + (1 - Math.log(Math.min(Math.max(v, ymin), ymax) / ymin) / Math.log(ymax / ymin)) * (H - T - B);
      const ridge = (1000 * p.peak_tflops) / p.copy_gbps;
      const roof = [[xs[0], (p.copy_gbps * xs[0]) / 1000], [ridge, p.peak_tflops], [xs[1], p.peak_tflops]];
      parts.push(svg("polyline", { class: "roof", points: roof.map(([x, y]) => X(x).toFixed(1) + "," + Y(y).toFixed(1)).join(" ") }));
      if (ref) parts.push(dot(X(p.intensity), Y(positive(ref.tflops) || ymin), false, t("js.speed.reference")));
      parts.push(dot(X(p.intensity), Y(positive(mine.tflops) || ymin), true, t("js.speed.learner")));
      parts.push(svg("text", { x: L, y: H - 8, class: "axis", text: t("js.speed.x_intensity") }));
      parts.push(svg("text", { x: 4, y: T + 8, class: "axis", text: "TFLOP/s" }));
      caption = t("js.speed.caption_roofline", { roof: Math.round(p.copy_gbps), peak: Math.round(p.peak_tflops) });
    } else {
      const top = Math.max(p.copy_gbps, mine.gbps, ref ? ref.gbps : 0) * 1.05;
      const X = (v) => L + (v / top) * (W - L - R);
      const y = (H - B + T) / 2;
      parts.push(svg("line", { class: "axis-line", x1: L, y1: y, x2: W - R, y2: y }));
      parts.push(svg("line", { class: "roof", x1: X(p.copy_gbps), y1: T, x2: X(p.copy_gbps), y2: H - B }));
      if (ref) parts.push(dot(X(ref.gbps), y, false, t("js.speed.reference")));
      parts.push(dot(X(mine.gbps), y, true, t("js.speed.learner")));
      parts.push(svg("text", { x: L, y: H - 8, class: "axis", text: "GB/s" }));
      caption = t("js.speed.caption_bandwidth", { roof: Math.round(p.copy_gbps) });
    }
    return el("figure", { class: "speed-plot", "data-role": "speed-plot" }, [
      svg("svg", { viewBox: "0 0 " + W + " " + H, width: W, height: H, role: "img", "aria-label": caption }, parts),
      el("figcaption", { class: "small muted", text: caption + " " + t("js.speed.legend") }),
    ]);
  }

  // ---- tabs, examples, shortcuts, lifecycle --------------------------------------------------------------

  function active() {
    return exercises.find((x) => !x.section.hidden) || exercises[0];
  }

  function selectTab(tab, focus) {
    const tabs = Array.from(document.querySelectorAll("[role=tab][id^='tab-']"));
    for (const t of tabs) {
      const on = t === tab;
      t.setAttribute("aria-selected", on ? "true" : "false");
      t.tabIndex = on ? 0 : -1;
      const panel = document.getElementById(t.getAttribute("aria-controls"));
      panel.hidden = !on;
      const results = document.querySelector("[data-results-for='" + panel.dataset.exercise + "']");
      if (results) results.hidden = !on;
      const viz = document.querySelector("[data-viz-for='" + panel.dataset.exercise + "']");
      if (viz) viz.hidden = !on || !viz.hasChildNodes();
      const inspect = document.querySelector("[data-inspect-for='" + panel.dataset.exercise + "']");
      if (inspect) inspect.hidden = !on || !inspect.querySelector(".inspect-report, .inspect-error");
    }
    if (focus) tab.focus();
  }

  document.querySelectorAll("[role=tab][id^='tab-']").forEach((tab, i, all) => {
    tab.addEventListener("click", () => selectTab(tab, false));
    tab.addEventListener("keydown", (e) => {
      const step = e.key === "ArrowRight" ? 1 : e.key === "ArrowLeft" ? -1 : 0;
      if (step) { e.preventDefault(); selectTab(all[(i + step + all.length) % all.length], true); }
    });
  });

  document.querySelectorAll(".exercise").forEach((section) => exercises.push(new Exercise(section)));
  const wanted = location.hash.startsWith("#ex-") ? document.getElementById("tab-" + location.hash.slice(4)) : null;
  if (wanted) selectTab(wanted, false);

  document.querySelectorAll("[data-example]").forEach((button) => {
    button.addEventListener("click", () => {
      const url = "/api/lessons/" + encodeURIComponent(lessonId) + "/examples/" + button.dataset.example + "/run";
      startJob(url, undefined, null);
    });
  });

  document.addEventListener("keydown", (e) => {
    if (e.defaultPrevented || !(e.ctrlKey || e.metaKey)) return;
    const x = active();
    if (!x) return;
    if (e.key === "Enter") { e.preventDefault(); x.start(e.shiftKey ? "check" : "run"); }
    else if (e.key === "s" || e.key === "S") { e.preventDefault(); x.save(); }
  });

  setInterval(() => exercises.forEach((x) => x.poll()), POLL_MS);
  const flush = () => {
    for (const x of exercises) {
      if (x.dirty && !x.conflict && !x.saving) {
        api("PUT", x.url("/code"), { text: x.editor.getText(), base_version: x.version }, { keepalive: true });
      }
    }
  };
  document.addEventListener("visibilitychange", () => {
    if (document.hidden) exercises.forEach((x) => { if (x.dirty) x.save(); });
  });
  window.addEventListener("pagehide", flush);
  window.TLWorkbench = { exercises: exercises, terminal: term };
})();
