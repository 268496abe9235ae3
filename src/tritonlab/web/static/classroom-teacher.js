// The teacher's page: add learners, reset passwords, unlock, disable, open or close the join link.
// (classroom.js already adds the CSRF header to every POST.)
(function () {
  "use strict";
  const tr = window.TritonClassroom.tr;
  const message = document.getElementById("roster-message");
  function say(text, ok) { message.textContent = text; message.classList.toggle("ok", !!ok); }
  async function post(url, body) {
    const res = await fetch(url, {
      method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body || {}),
      credentials: "same-origin",
    });
    let data = {};
    try { data = await res.json(); } catch (e) { data = {}; }
    if (!res.ok) throw new Error(data.error || data.detail || tr("failed", { status: res.status }, "Failed ({status})"));
    return data;
  }
  const form = document.getElementById("add-user-form");
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    try {
      const u = await post("/api/classroom/users", {
        username: form.elements.username.value, display_name: form.elements.display_name.value,
        role: form.elements.role.value,
      });
      say(tr("added", { username: u.username, password: u.password }), true);
      const out = document.createElement("output");
      out.className = "new-password";
      out.dataset.username = u.username;
      out.textContent = u.password;
      out.hidden = true;
      message.appendChild(out);
      form.reset();
    } catch (e) { say(e.message); }
  });
  // Resetting a password or disabling an account ends the person's sessions: asked first, in a dialog (Escape
  // or Cancel changes nothing). Resolves true only for the confirming button.
  function confirmed(action, name) {
    const dialog = document.getElementById("confirm-dialog");
    if (!dialog || !dialog.showModal) return Promise.resolve(window.confirm(tr("confirm_" + action, { username: name })));
    dialog.querySelector("#confirm-title").textContent = tr("confirm_" + action + "_title", { username: name });
    dialog.querySelector("#confirm-text").textContent = tr("confirm_" + action, { username: name });
    dialog.querySelector("#confirm-button").textContent = tr("confirm_" + action + "_button", { username: name });
    dialog.returnValue = "";
    return new Promise((resolve) => {
      dialog.addEventListener("close", () => resolve(dialog.returnValue === "confirm"), { once: true });
      dialog.showModal();
    });
  }
  document.getElementById("roster").addEventListener("click", async (ev) => {
    const button = ev.target.closest("button[data-action]");
    if (!button) return;
    const row = button.closest("tr");
    const id = row.dataset.userId, name = row.dataset.username;
    try {
      const action = button.dataset.action;
      if ((action === "password" || action === "disable") && !(await confirmed(action, name))) {
        button.focus();
        return;
      }
      if (action === "password") {
        const r = await post("/api/classroom/users/" + id + "/password");
        say(tr("new_password", { username: name, password: r.password }), true);
      } else if (action === "unlock") {
        await post("/api/classroom/users/" + id + "/unlock");
        say(tr("unlocked", { username: name }), true);
      } else {
        await post("/api/classroom/users/" + id + "/disabled", { value: action === "disable" });
        window.location.reload();
      }
    } catch (e) { say(e.message); }
  });
  const board = document.getElementById("leaderboard-toggle");
  if (board) {
    board.addEventListener("click", async () => {
      try {
        await post("/api/classroom/leaderboard", { value: board.dataset.on !== "true" });
        window.location.reload();
      } catch (e) { say(e.message); }
    });
  }
  const toggle = document.getElementById("join-toggle");
  if (toggle) {
    toggle.addEventListener("click", async () => {
      try {
        await post("/api/classroom/join", { value: toggle.dataset.open !== "true" });
        window.location.reload();
      } catch (e) { say(e.message); }
    });
  }
})();
