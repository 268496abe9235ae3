// The lesson quiz: one question at a time or all at once; each answer is graded by the server at once and
// its explanation shown; when every question is answered the score is saved and shown.
"use strict";
(function () {
  const { api, el, t } = window.TL;
  const section = document.getElementById("quiz");
  if (!section || !section.dataset.attempt) return;
  const attempt = section.dataset.attempt;
  const forms = Array.from(section.querySelectorAll("form.question"));
  const resultNode = section.querySelector("[data-role=result]");
  const again = section.querySelector("[data-role=again]");
  let current = 0;

  function setMode(mode) {
    section.classList.toggle("mode-one", mode === "one");
    section.classList.toggle("mode-all", mode === "all");
    forms.forEach((f, i) => f.classList.toggle("current", i === current));
    forms.forEach((f, i) => {
      const next = f.querySelector("[data-role=next]");
      next.hidden = mode !== "one" || !f.dataset.answered || i === forms.length - 1;
    });
  }

  section.querySelectorAll("input[name=quiz-mode]").forEach((radio) => {
    radio.addEventListener("change", () => setMode(radio.value));
  });

  function responseOf(form) {
    const type = form.dataset.type;
    if (type === "numeric") {
      const value = form.querySelector("input[name=answer]").value.trim();
      return value === "" ? null : value;
    }
    const picked = Array.from(form.querySelectorAll("input[name=answer]:checked")).map((i) => parseInt(i.value, 10));
    if (!picked.length) return null;
    return type === "multiple" ? picked : picked[0];
  }

  function showFeedback(form, d) {
    form.dataset.answered = "true";
    form.querySelectorAll("input").forEach((i) => { i.disabled = true; });
    form.querySelector("button[type=submit]").hidden = true;
    const keyed = new Set(d.keyed);
    form.querySelectorAll(".option").forEach((label) => {
      const index = parseInt(label.dataset.index, 10);
      const picked = label.querySelector("input").checked;
      label.classList.toggle("right", keyed.has(index));
      label.classList.toggle("wrong", picked && !keyed.has(index));
    });
    for (const f of d.feedback) {
      const label = form.querySelector(".option[data-index='" + f.index + "']");
      if (!label) continue;
      const box = label.querySelector(".option-feedback");
      box.innerHTML = f.html; // server-rendered Markdown (escaped)
      box.hidden = false;
    }
    const box = form.querySelector(".feedback");
    const verdict = d.correct ? t("js.quiz.correct")
      : d.score > 0 ? t("js.quiz.partly", { score: Math.round(d.score * 100) }) : t("js.quiz.wrong");
    const parts = [el("p", { class: "verdict-line", text: verdict })];
    if (d.answer !== null && d.answer !== undefined) parts.push(el("p", { text: t("js.quiz.answer", { answer: d.answer }) }));
    if (d.note_html) parts.push(el("div", { class: "explanation", html: d.note_html }));
    else if (d.feedback.length) parts.push(el("p", { class: "small muted", text: t("js.quiz.explanations_above") }));
    box.replaceChildren(...parts);
    box.className = "feedback " + (d.correct ? "ok" : d.score > 0 ? "partial" : "bad");
    box.hidden = false;
    const next = form.querySelector("[data-role=next]");
    next.hidden = !section.classList.contains("mode-one") || forms.indexOf(form) === forms.length - 1;
    if (d.result) showResult(d.result);
    // The Check button is gone now: focus moves to what it answered (read out by a screen reader), so the
    // next Tab reaches Next rather than the top of the page.
    box.tabIndex = -1;
    box.focus();
  }

  function showResult(result) {
    const pct = Math.round(result.score * 100);
    const mark = Math.round(result.pass_mark * 100);
    const verdict = t(result.passed ? "js.quiz.passed" : "js.quiz.not_passed");
    resultNode.replaceChildren(
      el("p", { class: "score", text: t("js.quiz.score", { score: pct, verdict: verdict, pass_mark: mark }) }),
      el("p", { class: "small", text: t("js.quiz.saved") }),
    );
    resultNode.className = "quiz-result " + (result.passed ? "ok" : "bad");
    resultNode.hidden = false;
    again.hidden = false;
    const best = section.querySelector("[data-role=best]");
    if (best) best.textContent = t(result.passed ? "js.quiz.this_attempt_passed" : "js.quiz.this_attempt", { score: pct });
    window.TL.progressRefresh();
  }

  forms.forEach((form, i) => {
    form.addEventListener("submit", async (e) => {
      e.preventDefault();
      const response = responseOf(form);
      const box = form.querySelector(".feedback");
      if (response === null) {
        box.className = "feedback bad";
        box.replaceChildren(el("p", { text: t(form.dataset.type === "numeric" ? "js.quiz.type_number" : "js.quiz.choose") }));
        box.hidden = false;
        return;
      }
      const button = form.querySelector("button[type=submit]");
      button.disabled = true;
      const r = await api("POST", "/api/quiz/" + encodeURIComponent(attempt) + "/answer",
        { question: form.dataset.question, response: response });
      button.disabled = false;
      if (!r.ok) {
        box.className = "feedback bad";
        box.replaceChildren(el("p", { text: r.data.error }));
        box.hidden = false;
        button.focus(); // it was disabled while waiting, which dropped the focus
        return;
      }
      showFeedback(form, r.data);
    });
    form.querySelector("[data-role=next]").addEventListener("click", () => {
      current = Math.min(i + 1, forms.length - 1);
      setMode("one");
      const legend = forms[current].querySelector("legend");
      legend.tabIndex = -1;
      legend.focus();
    });
  });

  again.addEventListener("click", (e) => {
    e.preventDefault();
    location.hash = "quiz";
    location.reload();
  });

  setMode("one");
})();
