// serve --classroom: send the CSRF token with every state-changing request, show who is logged in, and
// drive the log-in and join forms. Loaded in <head>, before the page's own scripts make any request.
(function () {
  "use strict";
  function csrf() {
    const m = document.cookie.match(/(?:^|;\s*)tritonlab_csrf=([^;]+)/);
    return m ? decodeURIComponent(m[1]) : "";
  }
  const plainFetch = window.fetch.bind(window);
  window.fetch = function (input, init) {
    const opts = Object.assign({}, init || {});
    const method = (opts.method || (input && input.method) || "GET").toUpperCase();
    const url = new URL(typeof input === "string" ? input : input.url, window.location.href);
    if (method !== "GET" && method !== "HEAD" && url.origin === window.location.origin) {
      const headers = new Headers(opts.headers || (input && input.headers) || {});
      headers.set("X-CSRF-Token", csrf());
      opts.headers = headers;
    }
    return plainFetch(input, opts);
  };
  // The page's strings (#tl-strings, i18n.js_strings): the key's text in the page's language, {names} filled.
  let strings = null;
  function tr(key, values, fallback) {
    if (strings === null) {
      const el = document.getElementById("tl-strings");
      try { strings = el ? JSON.parse(el.textContent).strings || {} : {}; } catch (e) { strings = {}; }
    }
    const text = strings["js.classroom." + key] || fallback || key;
    return text.replace(/\{(\w+)\}/g, (m, name) => (values && name in values ? String(values[name]) : m));
  }
  window.TritonClassroom = { csrf: csrf, tr: tr };

  function say(text, ok) {
    const box = document.getElementById("form-message");
    if (box) { box.textContent = text; box.classList.toggle("ok", !!ok); }
  }
  async function postJSON(url, body) {
    const res = await fetch(url, {
      method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body),
      credentials: "same-origin",
    });
    let data = {};
    try { data = await res.json(); } catch (e) { data = {}; }
    return { ok: res.ok, status: res.status, data: data };
  }
  function safeNext(target) {
    return target && target.startsWith("/") && !target.startsWith("//") ? target : "/";
  }

  // The account menu in the top bar is the page's own (templates/base.html); Log out posts, then leaves.
  function userBar() {
    const out = document.getElementById("logout");
    if (!out) return;
    out.addEventListener("click", async () => {
      await postJSON("/api/logout", {});
      window.location.href = "/login";
    });
  }

  document.addEventListener("DOMContentLoaded", () => {
    const login = document.getElementById("login-form");
    if (login) {
      login.addEventListener("submit", async (ev) => {
        ev.preventDefault();
        say("");
        const r = await postJSON("/api/login", {
          username: login.elements.username.value, password: login.elements.password.value,
        });
        if (r.ok) { window.location.href = safeNext(login.dataset.next); }
        else { say(r.data.error || tr("login_failed", { status: r.status }, "Log-in failed ({status})")); }
      });
      return;
    }
    const join = document.getElementById("join-form");
    if (join) {
      join.addEventListener("submit", async (ev) => {
        ev.preventDefault();
        say("");
        const r = await postJSON("/api/join/" + encodeURIComponent(join.dataset.code), {
          username: join.elements.username.value, display_name: join.elements.display_name.value,
          password: join.elements.password.value,
        });
        if (r.ok) { window.location.href = "/"; } else { say(r.data.error || tr("join_failed", { status: r.status }, "Could not join ({status})")); }
      });
      return;
    }
    userBar();
    const naming = document.getElementById("leaderboard-name-form");
    if (naming) {
      naming.addEventListener("submit", async (ev) => {
        ev.preventDefault();
        say("");
        const res = await fetch("/api/leaderboard/name", {
          method: "PUT", headers: { "Content-Type": "application/json" }, credentials: "same-origin",
          body: JSON.stringify({ name: naming.elements.name.value }),
        });
        let data = {};
        try { data = await res.json(); } catch (e) { data = {}; }
        if (!res.ok) { say(data.detail || tr("failed", { status: res.status }, "Failed ({status})")); return; }
        say(data.name ? tr("name_saved", { name: data.name }, "Saved: you appear as {name}.")
                      : tr("name_removed", {}, "You have left the leaderboard."), true);
      });
    }
  });
})();
