// Shared helpers: JSON API calls, small DOM builder, theme switch, language switch, UI strings.
"use strict";
window.TL = (function () {
  // The page's language and the strings the scripts need, rendered by the server from
  // src/tritonlab/locales/<lang>.toml (base.html, #tl-strings). t("js.run.finished", {seconds: "1.2"}).
  const I18N = (function () {
    const node = document.getElementById("tl-strings");
    try {
      return node ? JSON.parse(node.textContent) : {};
    } catch (err) {
      return {};
    }
  })();
  const STRINGS = I18N.strings || {};
  const LANG = I18N.lang || document.documentElement.lang || "en";

  function t(key, values) {
    const text = Object.prototype.hasOwnProperty.call(STRINGS, key) ? STRINGS[key] : key;
    return text.replace(/\{\{|\}\}|\{(\w+)\}/g, function (match, name) {
      if (match === "{{") return "{";
      if (match === "}}") return "}";
      return values && values[name] !== undefined && values[name] !== null ? String(values[name]) : match;
    });
  }

  async function api(method, url, body, options) {
    const init = { method: method, headers: { Accept: "application/json" }, credentials: "same-origin" };
    if (body !== undefined) {
      init.headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    if (options && options.keepalive) init.keepalive = true;
    let response;
    try {
      response = await fetch(url, init);
    } catch (err) {
      return { ok: false, status: 0, data: { error: t("js.common.unreachable") } };
    }
    let data;
    try {
      data = await response.json();
    } catch (err) {
      data = { error: t("js.common.unexpected", { status: response.status }) };
    }
    return { ok: response.ok, status: response.status, data: data };
  }

  function el(tag, attrs, children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (key === "text") node.textContent = value;
      else if (key === "html") node.innerHTML = value; // only ever server-rendered, escaped HTML
      else if (key === "class") node.className = value;
      else node.setAttribute(key, value === true ? "" : value);
    }
    for (const child of [].concat(children || [])) {
      if (child === null || child === undefined) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }

  const THEMES = ["auto", "light", "dark"];
  function currentTheme() {
    return document.documentElement.getAttribute("data-theme") || "auto";
  }
  function applyTheme(theme) {
    if (theme === "auto") document.documentElement.removeAttribute("data-theme");
    else document.documentElement.setAttribute("data-theme", theme);
    try {
      if (theme === "auto") localStorage.removeItem("tritonlab-theme");
      else localStorage.setItem("tritonlab-theme", theme);
    } catch (err) { /* not persisted */ }
    const button = document.getElementById("theme-toggle");
    if (button) {
      button.setAttribute("aria-label", t("js.common.theme", { theme: t("js.common.theme_" + theme) }));
      button.textContent = theme === "light" ? "☀" : theme === "dark" ? "☾" : "◐";
    }
  }

  function progressRefresh() {
    return api("GET", "/api/progress").then(function (r) {
      if (!r.ok) return null;
      document.querySelectorAll("[data-progress=passed]").forEach(function (node) {
        node.textContent = String(r.data.exercises_passed);
      });
      return r.data;
    });
  }

  // A code block that scrolls sideways must be reachable from the keyboard (to scroll it): such blocks
  // become tab stops, the others stay out of the tab order. Re-checked on resize and when <details> open.
  function focusableScrollers() {
    document.querySelectorAll("pre.hl").forEach(function (pre) {
      const scrolls = pre.scrollWidth > pre.clientWidth + 1 || pre.scrollHeight > pre.clientHeight + 1;
      if (scrolls && !pre.hasAttribute("tabindex")) {
        pre.tabIndex = 0;
        pre.dataset.scrollFocus = "true";
      } else if (!scrolls && pre.dataset.scrollFocus) {
        pre.removeAttribute("tabindex");
        delete pre.dataset.scrollFocus;
      }
    });
  }
  let resizeTimer = null;
  window.addEventListener("resize", function () {
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(focusableScrollers, 150);
  });
  document.addEventListener("toggle", focusableScrollers, true);

  document.addEventListener("DOMContentLoaded", function () {
    document.documentElement.classList.add("js");
    focusableScrollers();
    applyTheme(currentTheme());
    const toggle = document.getElementById("theme-toggle");
    if (toggle) {
      toggle.addEventListener("click", function () {
        applyTheme(THEMES[(THEMES.indexOf(currentTheme()) + 1) % THEMES.length]);
      });
    }
    const select = document.getElementById("lang-select");
    if (select) select.addEventListener("change", function () { select.form.submit(); });
  });

  function nonce() {
    const meta = document.querySelector("meta[name=csp-nonce]");
    return meta ? meta.getAttribute("content") : "";
  }

  return { api: api, el: el, nonce: nonce, progressRefresh: progressRefresh, t: t, lang: LANG };
})();
