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
  // The server already kept only a path of its own (web/redirects.py); the same narrow rule again here, so
  // that a page rendered by an older server cannot send the browser to `/\\evil.example` either.
  const SAME_ORIGIN_PATH = /^\/(?![\/\\])[A-Za-z0-9._~!$&'()*+,;=:@\/?%#-]*$/;
  function safeNext(target) {
    return typeof target === "string" && target.length <= 2048 && SAME_ORIGIN_PATH.test(target) ? target : "/";
  }

  // A log-in or join answered 503 (the server's password-hashing queue is full: classroom/hash_pool.py) is
  // tried again after its Retry-After, a few times, saying so.
  async function whenNotBusy(send) {
    let r = await send();
    for (let tries = 0; r.status === 503 && tries < 5; tries++) {
      const seconds = Math.min(30, Math.max(1, parseInt(r.data.retry_after, 10) || 2));
      say(tr("busy", { seconds: seconds }, "The server is busy checking passwords; trying again in {seconds} s…"));
      await new Promise((done) => setTimeout(done, seconds * 1000));
      r = await send();
    }
    return r;
  }
  // Joined: the username is the name chosen plus a number (classroom/room.py, Classroom.join); say it before
  // going on, since it is what the learner logs in with next time.
  function joined(form, username) {
    const box = document.createElement("div");
    box.className = "classroom-joined";
    const text = document.createElement("p");
    text.id = "joined-message";
    text.setAttribute("role", "status");
    text.textContent = tr("joined", { username: username },
      "You are in. Your username is {username}: note it, you log in with it and your password.");
    const go = document.createElement("a");
    go.href = "/";
    go.className = "button primary";
    go.id = "joined-continue";
    go.textContent = tr("continue", {}, "Continue");
    box.append(text, go);
    form.replaceWith(box);
    go.focus();
  }

  // The account menu in the top bar is the page's own (templates/base.html); Log out posts, then leaves.
  function userBar() {
    const out = document.getElementById("logout");
    if (!out) return;
    out.addEventListener("click", async () => {
      // ends the session on the server; the answer names the provider's end-session page for an account
      // that logged in through the class's OpenID provider (web/classroom/oidc.py), else /login
      const r = await postJSON("/auth/logout", {});
      window.location.href = r.ok && typeof r.data.redirect === "string" ? r.data.redirect : "/login";
    });
  }

  document.addEventListener("DOMContentLoaded", () => {
    const login = document.getElementById("login-form");
    if (login) {
      login.addEventListener("submit", async (ev) => {
        ev.preventDefault();
        say("");
        const r = await whenNotBusy(() => postJSON("/api/login", {
          username: login.elements.username.value, password: login.elements.password.value,
        }));
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
        const r = await whenNotBusy(() => postJSON("/api/join/" + encodeURIComponent(join.dataset.code), {
          username: join.elements.username.value, display_name: join.elements.display_name.value,
          password: join.elements.password.value,
        }));
        if (r.ok) { joined(join, r.data.username); } else { say(r.data.error || tr("join_failed", { status: r.status }, "Could not join ({status})")); }
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
