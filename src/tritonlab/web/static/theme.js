// Applies the learner's saved colour theme before the page paints (light, dark, or the system's).
(function () {
  try {
    var theme = localStorage.getItem("tritonlab-theme");
    if (theme === "light" || theme === "dark") document.documentElement.setAttribute("data-theme", theme);
  } catch (e) { /* storage may be off: follow the system */ }
})();
